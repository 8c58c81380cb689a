/* test_ops_topk.c: the k largest entries of each row (cl/topk.cl) against
 * a plain-C selection, exactly: odd shapes, rows with ties (the lower
 * column first), a skipped column, rows shorter than k, narrow and wide
 * work-groups, and argument checks; the same on log-softmax computed from
 * the logits and their log-sum-exp (clf_lse_rows) as decoding does. */
#include <stdlib.h>

#include "ops_testutil.h"

static void cases(void)
{
    clf_ctx_t *ctx = tu_ctx();
    static const size_t ks[] = {1, 2, 8, 33};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            for (int q = 0; q < 4; q++) {
                size_t rows = ot_rows[i], cols = ot_cols[j], k = ks[q], n = rows * cols;
                float *x = ot_rand(n, i * 31 + j * 7 + q, -4, 4);
                for (size_t e = 0; e < n; e += 3)  /* many ties */
                    x[e] = (float)(int)(x[e]);
                int skip = (q & 1) && cols > 2 ? 2 : -1;
                size_t pick = cols - 1;
                float *wv = malloc(rows * k * 4), *wa = malloc(rows * 4), *gv = malloc(rows * k * 4),
                      *ga = malloc(rows * 4);
                int32_t *wi = malloc(rows * k * 4), *gi = malloc(rows * k * 4);
                ref_topk(wv, wi, wa, x, rows, cols, k, skip, pick);
                clf_tensor tx = ot_up2(ctx, x, rows, cols), tv = ot_up2(ctx, NULL, rows, k), ta = ot_up2(ctx, NULL, rows, 1);
                for (size_t e = 0; e < rows * k; e++)  /* output garbage the kernel must overwrite */
                    gi[e] = -7;
                clf_tensor ti = tu_upload_ints(ctx, gi, rows * k);
                cr_assert_eq(clf_topk_rows(ctx, &tv, &ti, &ta, &tx, NULL, k, skip, pick), CLF_OK, "%s", clf_ctx_error(ctx));
                cr_assert_eq(clf_tensor_download(ctx, &tv, gv), CLF_OK);
                cr_assert_eq(clf_tensor_download(ctx, &ta, ga), CLF_OK);
                cr_assert_eq(clf_tensor_download_i32(ctx, &ti, gi), CLF_OK);
                for (size_t e = 0; e < rows * k; e++) {
                    cr_assert_eq(gi[e], wi[e], "rows %zu cols %zu k %zu skip %d: entry %zu is column %d, want %d", rows,
                                 cols, k, skip, e, gi[e], wi[e]);
                    cr_assert(gv[e] == wv[e], "rows %zu cols %zu k %zu: value %zu is %g, want %g", rows, cols, k, e,
                              gv[e], wv[e]);
                }
                for (size_t r = 0; r < rows; r++)
                    cr_assert(ga[r] == wa[r], "row %zu: picked %g, want %g", r, ga[r], wa[r]);
                cr_expect(ot_topk_shift_case(ctx, x, rows, cols, k, skip, pick));
                clf_tensor_free(&ti);
                clf_tensor_free(&tx), clf_tensor_free(&tv), clf_tensor_free(&ta);
                free(x), free(wv), free(wa), free(gv), free(ga), free(wi), free(gi);
            }
    clf_ctx_free(ctx);
}

Test(ops_topk, odd_shapes_ties_skip_and_short_rows) { cases(); }

Test(ops_topk, wide_work_groups)
{
    tu_setting("CLF_OPS_CPU_WG", "256");  /* the wide work-groups of GPUs */
    cases();
}

Test(ops_topk, bad_arguments_are_refused)
{
    clf_ctx_t *ctx = tu_ctx();
    float x[12] = {0};
    clf_tensor tx = ot_up2(ctx, x, 3, 4), tv = ot_up2(ctx, NULL, 3, 2), ta = ot_up2(ctx, NULL, 3, 1);
    int32_t z[6] = {0};
    clf_tensor ti = tu_upload_ints(ctx, z, 6);
    cr_assert_eq(clf_topk_rows(ctx, &tv, &ti, &ta, &tx, NULL, 3, -1, 0), CLF_ERR_ARG);  /* val holds k = 2 */
    cr_assert_eq(clf_topk_rows(ctx, &tv, &ti, &ta, &tx, NULL, 2, -1, 4), CLF_ERR_ARG);  /* pick past the row */
    cr_assert_eq(clf_topk_rows(ctx, &tv, NULL, &ta, &tx, NULL, 2, -1, 0), CLF_ERR_ARG);
    cr_assert_eq(clf_topk_rows(ctx, &tv, &ti, &ta, &tx, NULL, 2, -1, 0), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_tensor_free(&ti);
    clf_tensor_free(&tx), clf_tensor_free(&tv), clf_tensor_free(&ta);
    clf_ctx_free(ctx);
}
