/* test_ops_embed.c: embeddings with sinusoidal or learned positions and
 * dropout against tests/ref_ops.c; the backward (through the host-built
 * index) against the reference and against central finite differences in
 * double; determinism; bad ids and shapes. Sinusoids in both layouts
 * (interleaved, Marian's halves). */
#include "ops_testutil.h"

static int32_t *make_ids(size_t n, size_t vocab, unsigned seed)
{
    int32_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)  /* repeats on purpose: ids collide */
        ids[i] = (int32_t)((i * 7919u + seed * 31u) % (vocab / 2 + 1));
    return ids;
}

Test(ops_embed, forward_and_backward_vs_reference)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t cases[][4] = {{1, 1, 1, 5}, {2, 7, 3, 11}, {3, 33, 64, 50}, {1, 100, 100, 300}, {4, 25, 512, 97}};
    for (int c = 0; c < 5; c++)
        for (int mode = 0; mode < 3; mode++) {  /* sinusoids interleaved, learned, sinusoids in halves */
            const int learned = mode == 1;
            size_t batch = cases[c][0], len = cases[c][1], d = cases[c][2], vocab = cases[c][3];
            size_t rows = batch * len, max_len = len + 9;
            struct clf_embed_desc desc = {.batch = batch,
                                          .len = len,
                                          .pos_offset = c == 3 ? 900 : 5,
                                          .scale = sqrtf((float)d),
                                          .drop = {c % 2 ? 0.1f : 0.0f, 1234, 5, 6},
                                          .layout = mode == 2 ? CLF_POS_HALVES : CLF_POS_INTERLEAVED};
            if (learned)
                desc.pos_offset = 9;
            int32_t *ids = make_ids(rows, vocab, c);
            char what[128];
            snprintf(what, sizeof what, "embed batch=%zu len=%zu d=%zu mode=%d p=%g offset=%zu", batch, len, d, mode,
                     (double)desc.drop.p, desc.pos_offset);
            /* float sinusoids at positions near 900: the angle carries ~1e-4 */
            ot_embed_case(ctx, what, ids, vocab, d, max_len, learned, &desc, c, c == 3 ? 3e-4 : 2e-5);
            free(ids);
        }
    clf_ctx_free(ctx);
}

/* More distinct ids (and positions) than 65535, NVIDIA's cap on NDRange
 * dimensions 1 and 2: the backward kernels take them in dimension 0. d = 3
 * (a column per work-item) and 4 (four), so that the flattened items end
 * mid-group; learned positions, one sequence of len rows. */
Test(ops_embed, more_distinct_ids_than_a_grid_dimension_holds)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t vocab = 70001, len = 70003; /* the last rows repeat ids */
    int32_t *ids = malloc(len * sizeof *ids);
    for (size_t i = 0; i < len; i++)  /* 7919 is prime: every id once, then repeats */
        ids[i] = (int32_t)(i * 7919u % vocab);
    for (size_t d = 3; d <= 4; d++) {
        struct clf_embed_desc desc = {
            .batch = 1, .len = len, .scale = 2.0f, .drop = {0.1f, 77, 1, 2}, .layout = CLF_POS_INTERLEAVED};
        char what[96];
        snprintf(what, sizeof what, "embed %zu distinct ids, %zu positions, d=%zu", vocab, len, d);
        ot_embed_case(ctx, what, ids, vocab, d, len, true, &desc, d, 2e-5);
    }
    free(ids);
    clf_ctx_free(ctx);
}

/* The reference of Marian's layout (transformers' formula) holds the
 * interleaved table's columns, sines first: for even d, column j < d/2 is
 * interleaved column 2j and column d/2 + i is column 2i + 1. */
Test(ops_embed, halves_reference_permutes_the_interleaved_columns)
{
    const size_t d = 10;
    for (size_t t = 0; t < 300; t += 7)
        for (size_t i = 0; i < d / 2; i++) {
            cr_assert_float_eq(ref_sinusoid_halves(t, i, d), ref_sinusoid(t, 2 * i, d), 1e-12, "t=%zu i=%zu", t, i);
            cr_assert_float_eq(ref_sinusoid_halves(t, d / 2 + i, d), ref_sinusoid(t, 2 * i + 1, d), 1e-12,
                               "t=%zu i=%zu", t, i);
        }
    /* odd d: the first ⌈d/2⌉ columns are sines */
    cr_assert_float_eq(ref_sinusoid_halves(3, 2, 5), sin(3.0 / pow(10000.0, 4.0 / 5)), 1e-12);
    cr_assert_float_eq(ref_sinusoid_halves(3, 3, 5), cos(3.0), 1e-12);
}

/* L = Σ w ⊙ y in double, y = dropout(table[ids]·scale + learned[t]) */
static double loss_d(const double *table, const double *learned, const float *w, const int32_t *ids, size_t d,
                     const struct clf_embed_desc *desc)
{
    double l = 0;
    for (size_t r = 0; r < desc->batch * desc->len; r++)
        for (size_t j = 0; j < d; j++) {
            size_t t = desc->pos_offset + r % desc->len;
            double y = (table[(size_t)ids[r] * d + j] * desc->scale + learned[t * d + j]) *
                       ref_dropout_factor(&desc->drop, r * d + j);
            l += w[r * d + j] * y;
        }
    return l;
}

Test(ops_embed, backward_vs_finite_differences)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t batch = 2, len = 5, d = 4, vocab = 6, max_len = 8, rows = batch * len;
    struct clf_embed_desc desc = {.batch = batch,
                                  .len = len,
                                  .pos_offset = 2,
                                  .scale = 2.0f,
                                  .drop = {0.25f, 9, 1, 4},
                                  .layout = CLF_POS_INTERLEAVED};
    int32_t ids[10] = {0, 3, 3, 5, 1, 3, 0, 0, 2, 5};
    float *w = ot_rand(rows * d, 1, -1, 1), *table = ot_rand(vocab * d, 2, -1, 1), *pos = ot_rand(max_len * d, 3, -1, 1);
    double tb[24], lp[32];
    float nt[24], nl[32];
    for (size_t i = 0; i < vocab * d; i++)
        tb[i] = table[i];
    for (size_t i = 0; i < max_len * d; i++)
        lp[i] = pos[i];
    const double h = 1e-4;
    for (size_t i = 0; i < vocab * d; i++) {
        tb[i] += h;
        double a = loss_d(tb, lp, w, ids, d, &desc);
        tb[i] -= 2 * h;
        double b = loss_d(tb, lp, w, ids, d, &desc);
        tb[i] += h;
        nt[i] = (float)((a - b) / (2 * h));
    }
    for (size_t i = 0; i < max_len * d; i++) {
        lp[i] += h;
        double a = loss_d(tb, lp, w, ids, d, &desc);
        lp[i] -= 2 * h;
        double b = loss_d(tb, lp, w, ids, d, &desc);
        lp[i] += h;
        nl[i] = (float)((a - b) / (2 * h));
    }
    struct clf_embed_index *ix;
    cr_assert_eq(clf_embed_index_init(ctx, &ix, ids, rows, vocab), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_tensor tw = ot_up2(ctx, w, rows, d), tdt = ot_up2(ctx, NULL, vocab, d), tdl = ot_up2(ctx, NULL, max_len, d);
    cr_assert_eq(clf_embed_backward(ctx, &tdt, &tdl, &tw, ix, &desc), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, "embed dtable vs finite differences", &tdt, nt, vocab * d, 1e-5, 1e-4));
    cr_expect(ot_check(ctx, "embed dlearned vs finite differences", &tdl, nl, max_len * d, 1e-5, 1e-4));
    clf_embed_index_free(ix);
    clf_tensor_free(&tw), clf_tensor_free(&tdt), clf_tensor_free(&tdl);
    free(w), free(table), free(pos);
    clf_ctx_free(ctx);
}

Test(ops_embed, deterministic)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t batch = 16, len = 64, d = 256, vocab = 1000, rows = batch * len;
    struct clf_embed_desc desc = {
        .batch = batch, .len = len, .scale = 16.0f, .drop = {0.1f, 3, 4, 5}, .layout = CLF_POS_INTERLEAVED};
    int32_t *ids = make_ids(rows, vocab, 7);
    float *dy = ot_rand(rows * d, 8, -1, 1);
    struct clf_embed_index *ix;
    cr_assert_eq(clf_embed_index_init(ctx, &ix, ids, rows, vocab), CLF_OK);
    clf_tensor tdy = ot_up2(ctx, dy, rows, d);
    float *g[2];
    for (int k = 0; k < 2; k++) {
        clf_tensor dt = ot_up2(ctx, NULL, vocab, d);
        cr_assert_eq(clf_embed_backward(ctx, &dt, NULL, &tdy, ix, &desc), CLF_OK);
        g[k] = tu_download(ctx, &dt, vocab * d);
        clf_tensor_free(&dt);
    }
    cr_expect(memcmp(g[0], g[1], vocab * d * 4) == 0, "embed_backward differs between runs");
    clf_embed_index_free(ix);
    clf_tensor_free(&tdy);
    free(ids), free(dy), free(g[0]), free(g[1]);
    clf_ctx_free(ctx);
}

/* An index rebuilt in place for the next batch (larger, then smaller)
 * gives exactly what a fresh index of those ids gives. */
Test(ops_embed, index_updated_in_place_equals_a_fresh_one)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t d = 32, vocab = 300, lens[3] = {5, 33, 7}, batch = 4;
    struct clf_embed_index *kept = NULL;
    for (int k = 0; k < 3; k++) {
        size_t rows = batch * lens[k];
        struct clf_embed_desc desc = {.batch = batch,
                                      .len = lens[k],
                                      .scale = 2.0f,
                                      .drop = {0.1f, 3, (uint32_t)k, 5},
                                      .layout = CLF_POS_INTERLEAVED};
        int32_t *ids = make_ids(rows, vocab, 20 + (unsigned)k);
        float *dy = ot_rand(rows * d, 30 + (unsigned)k, -1, 1);
        struct clf_embed_index *fresh;
        cr_assert_eq(clf_embed_index_init(ctx, &fresh, ids, rows, vocab), CLF_OK, "%s", clf_ctx_error(ctx));
        if (!kept)
            cr_assert_eq(clf_embed_index_init(ctx, &kept, ids, rows, vocab), CLF_OK, "%s", clf_ctx_error(ctx));
        else
            cr_assert_eq(clf_embed_index_update(ctx, kept, ids, rows), CLF_OK, "%s", clf_ctx_error(ctx));
        clf_tensor tdy = ot_up2(ctx, dy, rows, d);
        float *g[2];
        struct clf_embed_index *ixs[2] = {fresh, kept};
        for (int i = 0; i < 2; i++) {
            clf_tensor dt = ot_up2(ctx, NULL, vocab, d);
            cr_assert_eq(clf_embed_backward(ctx, &dt, NULL, &tdy, ixs[i], &desc), CLF_OK, "%s", clf_ctx_error(ctx));
            g[i] = tu_download(ctx, &dt, vocab * d);
            clf_tensor_free(&dt);
        }
        cr_expect(memcmp(g[0], g[1], vocab * d * 4) == 0, "batch %d: the updated index differs from a fresh one", k);
        clf_embed_index_free(fresh);
        clf_tensor_free(&tdy);
        free(ids), free(dy), free(g[0]), free(g[1]);
    }
    int32_t bad[2] = {1, (int32_t)vocab};
    OT_EXPECT_ARG(ctx, clf_embed_index_update(ctx, kept, bad, 2), "embed_index_update");
    clf_embed_index_free(kept);
    clf_ctx_free(ctx);
}

Test(ops_embed, bad_arguments)
{
    clf_ctx_t *ctx = tu_ctx();
    int32_t ids[4] = {0, 1, 7, 2};
    struct clf_embed_index *ix = NULL;
    OT_EXPECT_ARG(ctx, clf_embed_index_init(ctx, &ix, ids, 4, 5), "embed_index_init");
    cr_expect_null(ix);
    ids[2] = 3;
    cr_assert_eq(clf_embed_index_init(ctx, &ix, ids, 4, 5), CLF_OK);
    clf_tensor tids = tu_upload_ints(ctx, ids, 4);
    clf_tensor table = ot_up2(ctx, NULL, 5, 3), y = ot_up2(ctx, NULL, 4, 3), ybad = ot_up2(ctx, NULL, 4, 2),
               learned = ot_up2(ctx, NULL, 3, 3);
    struct clf_embed_desc desc = {.batch = 2, .len = 2, .scale = 1.0f, .layout = CLF_POS_INTERLEAVED},
                          desc3 = {.batch = 1, .len = 3, .scale = 1.0f, .layout = CLF_POS_INTERLEAVED};
    OT_EXPECT_ARG(ctx, clf_embed_forward(ctx, &ybad, &tids, &table, NULL, &desc), "embed_forward");
    desc.pos_offset = 2;  /* 2 + 2 > max_len 3 */
    OT_EXPECT_ARG(ctx, clf_embed_forward(ctx, &y, &tids, &table, &learned, &desc), "embed_forward");
    desc.pos_offset = 0;
    /* ids must be int32 and cover batch·len rows */
    clf_tensor fids = ot_up2(ctx, NULL, 4, 1), short_ids = tu_upload_ints(ctx, ids, 3);
    OT_EXPECT_ARG(ctx, clf_embed_forward(ctx, &y, &fids, &table, NULL, &desc), "embed_forward");
    OT_EXPECT_ARG(ctx, clf_embed_forward(ctx, &y, &short_ids, &table, NULL, &desc), "embed_forward");
    OT_EXPECT_ARG(ctx, clf_embed_forward(ctx, &y, NULL, &table, NULL, &desc), "embed_forward");
    clf_tensor_free(&fids), clf_tensor_free(&short_ids);
    OT_EXPECT_ARG(ctx, clf_embed_backward(ctx, &table, NULL, &ybad, ix, &desc), "embed_backward");
    OT_EXPECT_ARG(ctx, clf_embed_backward(ctx, &y, NULL, &y, ix, &desc), "embed_backward");
    clf_tensor y3 = ot_up2(ctx, NULL, 3, 3);
    OT_EXPECT_ARG(ctx, clf_embed_backward(ctx, &table, NULL, &y3, ix, &desc3), "embed_backward");
    clf_embed_index_free(ix);
    clf_tensor_free(&tids);
    clf_tensor_free(&table), clf_tensor_free(&y), clf_tensor_free(&ybad), clf_tensor_free(&learned);
    clf_tensor_free(&y3);
    clf_ctx_free(ctx);
}

/* Per-row positions (decoding's rows at steps of their own) equal each row
 * embedded alone at its position through pos_offset, bit for bit: sinusoids
 * in both layouts and learned, d with and without a multiple of 4. The
 * sinusoids as a table (clf_pos_sinusoid_table, as decoding passes them)
 * give the same bits, and are the reference's. */
Test(ops_embed, rows_at_positions_of_their_own_equal_each_row_alone)
{
    clf_ctx_t *ctx = tu_ctx();
    enum { R = 7, MAXPOS = 40 };
    const int32_t pos[R] = {0, 39, 3, 3, 17, 0, 8}, ids[R] = {4, 1, 0, 9, 4, 2, 7};
    const size_t vocab = 11, ds[] = {3, 5, 8, 64};
    for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++)
        for (int mode = 0; mode < 3; mode++) {
            const size_t d = ds[di];
            float *table = ot_rand(vocab * d, 5, -1, 1), *learned = ot_rand(MAXPOS * d, 6, -1, 1);
            clf_tensor tt = tu_upload(ctx, table, vocab * d), tl = tu_upload(ctx, learned, MAXPOS * d),
                       ti = tu_upload_ints(ctx, ids, R), tp = tu_upload_ints(ctx, pos, R), ty = tu_upload(ctx, table, R * d);
            size_t sh[2] = {vocab, d}, shl[2] = {MAXPOS, d}, shy[2] = {R, d};
            tt.ndim = tl.ndim = ty.ndim = 2;
            memcpy(tt.shape, sh, sizeof sh), memcpy(tl.shape, shl, sizeof shl), memcpy(ty.shape, shy, sizeof shy);
            struct clf_embed_desc desc = {.batch = R, .len = 1, .positions = &tp, .pos_end = MAXPOS,
                                          .scale = 1.5f, .layout = mode == 2 ? CLF_POS_HALVES : CLF_POS_INTERLEAVED};
            const clf_tensor *lp = mode == 1 ? &tl : NULL;
            cr_assert_eq(clf_embed_forward(ctx, &ty, &ti, &tt, lp, &desc), CLF_OK, "%s", clf_ctx_error(ctx));
            float *all = tu_download(ctx, &ty, R * d);
            for (size_t r = 0; r < R; r++) {
                clf_tensor one = tu_upload_ints(ctx, &ids[r], 1), y1 = tu_upload(ctx, table, d);
                size_t sh1[2] = {1, d};
                y1.ndim = 2, memcpy(y1.shape, sh1, sizeof sh1);
                struct clf_embed_desc d1 = {.batch = 1, .len = 1, .pos_offset = (size_t)pos[r], .scale = 1.5f,
                                            .layout = desc.layout};
                cr_assert_eq(clf_embed_forward(ctx, &y1, &one, &tt, lp, &d1), CLF_OK, "%s", clf_ctx_error(ctx));
                float *alone = tu_download(ctx, &y1, d);
                cr_assert(!memcmp(alone, all + r * d, d * sizeof(float)), "d=%zu mode=%d row %zu at %d differs", d,
                          mode, r, pos[r]);
                free(alone);
                clf_tensor_free(&one), clf_tensor_free(&y1);
            }
            if (mode != 1) {  /* the sinusoids as a table, once: the same bits as each call's, near the reference */
                clf_tensor tab = tu_upload(ctx, learned, MAXPOS * d), ty2 = tu_upload(ctx, table, R * d);
                tab.ndim = ty2.ndim = 2;
                memcpy(tab.shape, shl, sizeof shl), memcpy(ty2.shape, shy, sizeof shy);
                cr_assert_eq(clf_pos_sinusoid_table(ctx, &tab, desc.layout), CLF_OK, "%s", clf_ctx_error(ctx));
                cr_assert_eq(clf_embed_forward(ctx, &ty2, &ti, &tt, &tab, &desc), CLF_OK, "%s", clf_ctx_error(ctx));
                float *via = tu_download(ctx, &ty2, R * d), *pe = tu_download(ctx, &tab, MAXPOS * d);
                cr_assert(!memcmp(via, all, R * d * sizeof(float)), "d=%zu mode=%d: the table's embedding differs", d,
                          mode);
                for (size_t t = 0; t < MAXPOS; t++)
                    for (size_t i = 0; i < d; i++) {
                        double want = mode == 2 ? ref_sinusoid_halves(t, i, d) : ref_sinusoid(t, i, d);
                        cr_assert_float_eq(pe[t * d + i], want, 2e-5, "d=%zu mode=%d PE(%zu, %zu)", d, mode, t, i);
                    }
                cr_assert_eq(clf_pos_sinusoid_table(ctx, &tab, (enum clf_pos_layout)7), CLF_ERR_ARG);
                free(via), free(pe);
                clf_tensor_free(&tab), clf_tensor_free(&ty2);
            }
            if (mode == 1) {  /* a learned table must reach pos_end */
                desc.pos_end = MAXPOS + 1;
                cr_assert_eq(clf_embed_forward(ctx, &ty, &ti, &tt, lp, &desc), CLF_ERR_ARG);
            }
            free(all), free(table), free(learned);
            clf_tensor_free(&tt), clf_tensor_free(&tl), clf_tensor_free(&ti), clf_tensor_free(&tp),
                clf_tensor_free(&ty);
        }
    clf_ctx_free(ctx);
}
