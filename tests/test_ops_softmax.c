/* test_ops_softmax.c: softmax (with valid lengths), its backward and
 * log-softmax against tests/ref_ops.c on odd shapes; the backward against
 * central finite differences of the double reference; determinism and
 * argument checks. */
#include "ops_testutil.h"

static void forward_cases(void)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            size_t rows = ot_rows[i], cols = ot_cols[j], n = rows * cols;
            float *x = ot_rand(n, i * 7 + j, -8, 8), *want = malloc(n * 4);
            int32_t *valid = malloc(rows * sizeof *valid);
            for (size_t r = 0; r < rows; r++)  /* includes 0, negative and past the row */
                valid[r] = (int32_t)((r * 37) % (cols + 3)) - 1;
            clf_tensor tx = ot_up2(ctx, x, rows, cols), ty = ot_up2(ctx, NULL, rows, cols);
            clf_tensor tv = tu_upload_ints(ctx, valid, rows);
            char what[96];
            snprintf(what, sizeof what, "softmax rows=%zu cols=%zu", rows, cols);
            cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
            ref_softmax_forward(want, x, rows, cols, NULL);
            cr_expect(ot_check(ctx, what, &ty, want, n, 1e-7, 1e-5));
            cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, &tv), CLF_OK, "%s", clf_ctx_error(ctx));
            ref_softmax_forward(want, x, rows, cols, valid);
            strcat(what, " valid");
            cr_expect(ot_check(ctx, what, &ty, want, n, 1e-7, 1e-5));
            /* in place */
            cr_assert_eq(clf_logsoftmax_forward(ctx, &tx, &tx), CLF_OK, "%s", clf_ctx_error(ctx));
            ref_logsoftmax_forward(want, x, rows, cols);
            snprintf(what, sizeof what, "logsoftmax rows=%zu cols=%zu", rows, cols);
            cr_expect(ot_check(ctx, what, &tx, want, n, 1e-5, 1e-5));
            clf_tensor_free(&tv);
            clf_tensor_free(&tx), clf_tensor_free(&ty);
            free(x), free(want), free(valid);
        }
    clf_ctx_free(ctx);
}

Test(ops_softmax, forward_odd_shapes_and_valid_lengths)
{
    forward_cases();
}

/* GPUs get work-groups of up to 256 items; CPUs 16: run the wide ones here too */
Test(ops_softmax, forward_wide_work_groups)
{
    tu_setting("CLF_OPS_CPU_WG", "256");
    forward_cases();
}

Test(ops_softmax, large_logits_stay_finite)
{
    clf_ctx_t *ctx = tu_ctx();
    size_t rows = 7, cols = 100, n = rows * cols;
    float *x = ot_rand(n, 11, -3000, 3000), *want = malloc(n * 4);
    clf_tensor tx = ot_up2(ctx, x, rows, cols), ty = ot_up2(ctx, NULL, rows, cols);
    cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, NULL), CLF_OK);
    ref_softmax_forward(want, x, rows, cols, NULL);
    cr_expect(ot_check(ctx, "softmax large", &ty, want, n, 1e-7, 1e-5));
    cr_assert_eq(clf_logsoftmax_forward(ctx, &ty, &tx), CLF_OK);
    ref_logsoftmax_forward(want, x, rows, cols);
    cr_expect(ot_check(ctx, "logsoftmax large", &ty, want, n, 1e-3, 1e-6));
    clf_tensor_free(&tx), clf_tensor_free(&ty);
    free(x), free(want);
    clf_ctx_free(ctx);
}

Test(ops_softmax, backward_vs_reference)
{
    tu_setting("CLF_OPS_CPU_WG", "256");  /* the wide work-groups of GPUs */
    clf_ctx_t *ctx = tu_ctx();
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j += 2) {
            size_t rows = ot_rows[i], cols = ot_cols[j], n = rows * cols;
            float *x = ot_rand(n, 3 + i, -4, 4), *dy = ot_rand(n, 30 + j, -1, 1), *y = malloc(n * 4),
                  *want = malloc(n * 4);
            ref_softmax_forward(y, x, rows, cols, NULL);
            ref_softmax_backward(want, y, dy, rows, cols);
            clf_tensor ty = ot_up2(ctx, y, rows, cols), tg = ot_up2(ctx, dy, rows, cols);
            cr_assert_eq(clf_softmax_backward(ctx, &tg, &ty, &tg), CLF_OK, "%s", clf_ctx_error(ctx));  /* dx = dy */
            char what[96];
            snprintf(what, sizeof what, "softmax_backward rows=%zu cols=%zu", rows, cols);
            cr_expect(ot_check(ctx, what, &tg, want, n, 1e-6, 1e-4));
            clf_tensor_free(&ty), clf_tensor_free(&tg);
            free(x), free(dy), free(y), free(want);
        }
    clf_ctx_free(ctx);
}

/* L(x) = Σ w·softmax(x) per row, in double; dL/dx by central differences
 * against the device's backward of the device's forward. */
Test(ops_softmax, backward_vs_finite_differences)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t rows = 3, cols = 7, n = rows * cols;
    float *x = ot_rand(n, 21, -2, 2), *w = ot_rand(n, 22, -1, 1), *num = malloc(n * 4);
    double xd[7], yd[7];
    const double h = 1e-5;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++) {
            double l[2];
            for (int s = 0; s < 2; s++) {
                for (size_t k = 0; k < cols; k++)
                    xd[k] = x[r * cols + k] + (k == j ? (s ? -h : h) : 0);
                ref_softmax_row_d(yd, xd, cols, cols);
                l[s] = 0;
                for (size_t k = 0; k < cols; k++)
                    l[s] += w[r * cols + k] * yd[k];
            }
            num[r * cols + j] = (float)((l[0] - l[1]) / (2 * h));
        }
    clf_tensor tx = ot_up2(ctx, x, rows, cols), ty = ot_up2(ctx, NULL, rows, cols), tw = ot_up2(ctx, w, rows, cols),
               tdx = ot_up2(ctx, NULL, rows, cols);
    cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, NULL), CLF_OK);
    cr_assert_eq(clf_softmax_backward(ctx, &tdx, &ty, &tw), CLF_OK);
    cr_expect(ot_check(ctx, "softmax_backward vs finite differences", &tdx, num, n, 1e-5, 1e-4));
    clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&tw), clf_tensor_free(&tdx);
    free(x), free(w), free(num);
    clf_ctx_free(ctx);
}

Test(ops_softmax, deterministic)
{
    clf_ctx_t *ctx = tu_ctx();
    size_t rows = 100, cols = 512, n = rows * cols;
    float *x = ot_rand(n, 5, -5, 5);
    clf_tensor tx = ot_up2(ctx, x, rows, cols), ty = ot_up2(ctx, NULL, rows, cols);
    float *g[2];
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, NULL), CLF_OK);
        cr_assert_eq(clf_softmax_backward(ctx, &ty, &ty, &tx), CLF_OK);
        g[k] = tu_download(ctx, &ty, n);
    }
    cr_expect(memcmp(g[0], g[1], n * 4) == 0, "softmax differs between two runs");
    clf_tensor_free(&tx), clf_tensor_free(&ty);
    free(x), free(g[0]), free(g[1]);
    clf_ctx_free(ctx);
}

Test(ops_softmax, bad_arguments)
{
    clf_ctx_t *ctx = tu_ctx();
    clf_tensor a = ot_up2(ctx, NULL, 7, 3), b = ot_up2(ctx, NULL, 3, 7);
    OT_EXPECT_ARG(ctx, clf_softmax_forward(ctx, &a, &b, NULL), "softmax_forward");
    /* valid lengths: one int per row (7), from the buffer's start */
    int32_t v[7] = {1, 2, 3, 3, 2, 1, 0};
    clf_tensor v6 = tu_upload_ints(ctx, v, 6), v7 = tu_upload_ints(ctx, v, 7), v7o;
    size_t six = 6;
    cr_assert_eq(clf_softmax_forward(ctx, &a, &a, &v7), CLF_OK, "%s", clf_ctx_error(ctx));
    OT_EXPECT_ARG(ctx, clf_softmax_forward(ctx, &a, &a, &v6), "softmax_forward");
    cr_assert_eq(clf_tensor_view(ctx, &v7, 1, 1, &six, &v7o), CLF_OK);
    OT_EXPECT_ARG(ctx, clf_softmax_forward(ctx, &a, &a, &v7o), "softmax_forward");
    OT_EXPECT_ARG(ctx, clf_softmax_forward(ctx, &a, &a, &b), "softmax_forward");
    clf_ctx_finish(ctx);
    clf_tensor_free(&v6), clf_tensor_free(&v7);
    OT_EXPECT_ARG(ctx, clf_softmax_backward(ctx, &a, &a, &b), "softmax_backward");
    OT_EXPECT_ARG(ctx, clf_logsoftmax_forward(ctx, &a, &b), "logsoftmax_forward");
    clf_tensor_free(&a), clf_tensor_free(&b);
    clf_ctx_free(ctx);
}
