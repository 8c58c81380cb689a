/* test_ops_elementwise.c: clf_add, clf_bias_add, clf_bias_backward,
 * clf_column_fill and residual + dropout (forward, backward) against
 * tests/ref_ops.c, the exact dropout masks of the host Philox, determinism
 * and argument checks. */
#include "ops/philox.h"
#include "ops_testutil.h"

/* Philox4x32-10 against Random123's known answers (kat_vectors): the
 * host's copy of the generator is the references' and shares its rounds
 * with the kernels' eight-block form (cl/philox.h), so a slip in them
 * would pass every comparison of device against reference. */
Test(ops_elementwise, philox_known_answers)
{
    static const uint32_t in[3][6] = {{0, 0, 0, 0, 0, 0},
                                      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u}};
    static const uint32_t want[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
    for (int t = 0; t < 3; t++) {
        clf_philox_block b = clf_philox4x32_10(in[t][0], in[t][1], in[t][2], in[t][3], in[t][4], in[t][5]);
        const uint32_t got[4] = {b.w0, b.w1, b.w2, b.w3};
        for (int w = 0; w < 4; w++)
            cr_expect_eq(got[w], want[t][w], "vector %d word %d: %08x, want %08x", t, w, got[w], want[t][w]);
    }
}

Test(ops_elementwise, add_and_alias)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t ns[] = {1, 7, 33, 100, 257 * 64};
    for (int i = 0; i < 5; i++) {
        size_t n = ns[i];
        float *a = ot_rand(n, 1 + i, -2, 2), *b = ot_rand(n, 50 + i, -2, 2), *want = malloc(n * 4);
        for (size_t j = 0; j < n; j++)
            want[j] = a[j] + b[j];
        clf_tensor ta = tu_upload(ctx, a, n), tb = tu_upload(ctx, b, n), ty = tu_upload(ctx, a, n);
        cr_assert_eq(clf_add(ctx, &ty, &ta, &tb), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_expect(ot_check(ctx, "add", &ty, want, n, 0, 0));
        cr_assert_eq(clf_add(ctx, &ta, &ta, &tb), CLF_OK, "%s", clf_ctx_error(ctx));  /* y aliases a */
        cr_expect(ot_check(ctx, "add aliased", &ta, want, n, 0, 0));
        clf_tensor_free(&ta), clf_tensor_free(&tb), clf_tensor_free(&ty);
        free(a), free(b), free(want);
    }
    clf_ctx_free(ctx);
}

Test(ops_elementwise, bias_add_and_backward)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            size_t rows = ot_rows[i], cols = ot_cols[j], n = rows * cols;
            char what[64];
            snprintf(what, sizeof what, "bias rows=%zu cols=%zu", rows, cols);
            float *y = ot_rand(n, i * 5 + j, -1, 1), *b = ot_rand(cols, 99 + j, -1, 1);
            clf_tensor ty = ot_up2(ctx, y, rows, cols), tb = tu_upload(ctx, b, cols);
            ref_bias_add(y, b, rows, cols);
            cr_assert_eq(clf_bias_add(ctx, &ty, &tb), CLF_OK, "%s", clf_ctx_error(ctx));
            cr_expect(ot_check(ctx, what, &ty, y, n, 0, 0));
            /* dbias starts at b: the op adds */
            cr_assert_eq(clf_bias_backward(ctx, &tb, &ty), CLF_OK, "%s", clf_ctx_error(ctx));
            ref_bias_backward(b, y, rows, cols);
            cr_expect(ot_check(ctx, what, &tb, b, cols, 1e-5, 1e-5));
            clf_tensor_free(&ty), clf_tensor_free(&tb);
            free(y), free(b);
        }
    clf_ctx_free(ctx);
}

Test(ops_elementwise, views_with_offsets)
{
    clf_ctx_t *ctx = tu_ctx();
    size_t rows = 33, cols = 100, off = 17, n = rows * cols + 2 * off;
    float *y = ot_rand(n, 3, -1, 1), *b = ot_rand(cols + off, 4, -1, 1), *want = ot_copy(y, n);
    clf_tensor ty = tu_upload(ctx, y, n), tb = tu_upload(ctx, b, cols + off), vy, vb;
    size_t shy[2] = {rows, cols};
    cr_assert_eq(clf_tensor_view(ctx, &ty, off, 2, shy, &vy), CLF_OK);
    cr_assert_eq(clf_tensor_view(ctx, &tb, off, 1, &cols, &vb), CLF_OK);
    cr_assert_eq(clf_bias_add(ctx, &vy, &vb), CLF_OK, "%s", clf_ctx_error(ctx));
    ref_bias_add(want + off, b + off, rows, cols);
    cr_expect(ot_check(ctx, "bias_add view", &ty, want, n, 0, 0));
    float *bw = ot_copy(b, cols + off);
    cr_assert_eq(clf_bias_backward(ctx, &vb, &vy), CLF_OK, "%s", clf_ctx_error(ctx));
    ref_bias_backward(bw + off, want + off, rows, cols);
    cr_expect(ot_check(ctx, "bias_backward view", &tb, bw, cols + off, 1e-5, 1e-5));
    clf_tensor_free(&ty), clf_tensor_free(&tb);
    free(y), free(b), free(bw), free(want);
    clf_ctx_free(ctx);
}

/* one column of every row set, the rest untouched; on a view with an offset */
Test(ops_elementwise, column_fill)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            size_t rows = ot_rows[i], cols = ot_cols[j], n = rows * cols, col = (i * 7 + j) % cols;
            float *x = ot_rand(n + 3, i * 5 + j, -1, 1), *want = ot_copy(x, n + 3);
            for (size_t r = 0; r < rows; r++)
                want[3 + r * cols + col] = -1e30f;
            clf_tensor t = tu_upload(ctx, x, n + 3), v;
            size_t shape[2] = {rows, cols};
            cr_assert_eq(clf_tensor_view(ctx, &t, 3, 2, shape, &v), CLF_OK, "%s", clf_ctx_error(ctx));
            cr_assert_eq(clf_column_fill(ctx, &v, col, -1e30f), CLF_OK, "%s", clf_ctx_error(ctx));
            char what[64];
            snprintf(what, sizeof what, "column_fill rows=%zu cols=%zu col=%zu", rows, cols, col);
            cr_expect(ot_check(ctx, what, &t, want, n + 3, 0, 0));
            OT_EXPECT_ARG(ctx, clf_column_fill(ctx, &v, cols, 0.0f), "column_fill");
            clf_tensor_free(&t);
            free(x), free(want);
        }
    clf_ctx_free(ctx);
}

Test(ops_elementwise, residual_dropout_exact_masks)
{
    clf_ctx_t *ctx = tu_ctx();
    const float ps[] = {0.0f, 0.1f, 0.5f};
    size_t n = 257 * 100;
    float *x = ot_rand(n, 5, -1, 1), *sub = ot_rand(n, 6, 0.5f, 1.5f), *want = malloc(n * 4);
    clf_tensor tx = tu_upload(ctx, x, n), ts = tu_upload(ctx, sub, n), ty = tu_upload(ctx, x, n);
    for (int k = 0; k < 3; k++) {
        struct clf_dropout d = {ps[k], 0x123456789abcdefULL, 7, 3};
        cr_assert_eq(clf_residual_forward(ctx, &ty, &tx, &ts, &d), CLF_OK, "%s", clf_ctx_error(ctx));
        ref_residual_forward(want, x, sub, n, &d);
        float *got = tu_download(ctx, &ty, n);
        size_t dropped = 0;
        for (size_t i = 0; i < n; i++) {
            bool ref_drop = ref_dropout_factor(&d, i) == 0.0f;
            dropped += ref_drop;
            cr_assert_eq(got[i] == x[i], ref_drop, "residual p=%g: element %zu mask differs", (double)d.p, i);
        }
        cr_expect(tu_close("residual", got, want, n, 1e-6, 1e-6));
        double frac = (double)dropped / n;
        cr_expect(fabs(frac - d.p) < 0.01, "dropped fraction %g for p=%g", frac, (double)d.p);
        free(got);
        /* backward: dsub = dropout'(dy), here in place */
        clf_tensor tg = tu_upload(ctx, sub, n);
        cr_assert_eq(clf_residual_backward(ctx, &tg, &tg, &d), CLF_OK, "%s", clf_ctx_error(ctx));
        ref_residual_backward(want, sub, n, &d);
        cr_expect(ot_check(ctx, "residual_backward", &tg, want, n, 0, 1e-7));
        clf_tensor_free(&tg);
    }
    /* another stream or step gives another mask */
    struct clf_dropout a = {0.5f, 1, 1, 1}, b = a, c = a;
    b.stream = 2, c.step = 2;
    size_t same_b = 0, same_c = 0;
    for (size_t i = 0; i < 1000; i++)
        same_b += ref_dropout_factor(&a, i) == ref_dropout_factor(&b, i),
        same_c += ref_dropout_factor(&a, i) == ref_dropout_factor(&c, i);
    cr_expect(same_b < 600 && same_c < 600, "masks of other streams/steps agree too often: %zu %zu", same_b, same_c);
    clf_tensor_free(&tx), clf_tensor_free(&ts), clf_tensor_free(&ty);
    free(x), free(sub), free(want);
    clf_ctx_free(ctx);
}

Test(ops_elementwise, deterministic_column_sums)
{
    clf_ctx_t *ctx = tu_ctx();
    size_t rows = 2048, cols = 100;
    float *dy = ot_rand(rows * cols, 8, -1, 1);
    clf_tensor tdy = ot_up2(ctx, dy, rows, cols), b1 = ot_up2(ctx, NULL, 1, cols), b2 = ot_up2(ctx, NULL, 1, cols);
    cr_assert_eq(clf_bias_backward(ctx, &b1, &tdy), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_bias_backward(ctx, &b2, &tdy), CLF_OK, "%s", clf_ctx_error(ctx));
    float *g1 = tu_download(ctx, &b1, cols), *g2 = tu_download(ctx, &b2, cols);
    cr_expect(memcmp(g1, g2, cols * 4) == 0, "bias_backward differs between two runs");
    clf_tensor_free(&tdy), clf_tensor_free(&b1), clf_tensor_free(&b2);
    free(dy), free(g1), free(g2);
    clf_ctx_free(ctx);
}

Test(ops_elementwise, bad_arguments)
{
    clf_ctx_t *ctx = tu_ctx();
    clf_tensor a = ot_up2(ctx, NULL, 7, 3), b = ot_up2(ctx, NULL, 1, 4), c = ot_up2(ctx, NULL, 3, 7);
    OT_EXPECT_ARG(ctx, clf_bias_add(ctx, &a, &b), "bias_add");
    OT_EXPECT_ARG(ctx, clf_bias_backward(ctx, &b, &a), "bias_backward");
    OT_EXPECT_ARG(ctx, clf_add(ctx, &a, &a, &b), "add");
    OT_EXPECT_ARG(ctx, clf_residual_forward(ctx, &a, &a, &b, NULL), "residual_forward");
    struct clf_dropout bad = {1.0f, 0, 0, 0};
    OT_EXPECT_ARG(ctx, clf_residual_forward(ctx, &a, &a, &c, &bad), "residual_forward");
    OT_EXPECT_ARG(ctx, clf_residual_backward(ctx, &a, &b, NULL), "residual_backward");
    clf_tensor none = {0};
    OT_EXPECT_ARG(ctx, clf_add(ctx, &none, &a, &a), "add");
    clf_tensor_free(&a), clf_tensor_free(&b), clf_tensor_free(&c);
    clf_ctx_free(ctx);
}
