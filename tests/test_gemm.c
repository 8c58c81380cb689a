/* test_gemm.c: clf_gemm and clf_gemm_batched against a plain-C reference
 * on odd shapes, every transpose combination, offsets, padded leading
 * dimensions and batches. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* c is (m, ldc) row-major; a is op(A) with A stored (m,lda) or (k,lda)
 * when transposed; b likewise. Accumulates in double. */
static void ref_gemm(float *c, const float *a, const float *b, size_t m, size_t n, size_t k, float alpha,
                     float beta, bool ta, bool tb, size_t lda, size_t ldb, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double acc = 0;
            for (size_t p = 0; p < k; p++) {
                double x = ta ? a[p * lda + i] : a[i * lda + p];
                double y = tb ? b[j * ldb + p] : b[p * ldb + j];
                acc += x * y;
            }
            c[i * ldc + j] = (float)(alpha * acc + beta * c[i * ldc + j]);
        }
}

struct gcase {
    size_t m, n, k, pad, off, batch;
    bool ta, tb;
};

static void check(clf_ctx_t *ctx, const struct gcase *g)
{
    size_t arows = g->ta ? g->k : g->m, acols = g->ta ? g->m : g->k;
    size_t brows = g->tb ? g->n : g->k, bcols = g->tb ? g->k : g->n;
    size_t lda = acols + g->pad, ldb = bcols + g->pad, ldc = g->n + g->pad;
    size_t sa = arows * lda + 3, sb = brows * ldb + 5, sc = g->m * ldc + 1;  /* odd strides */
    size_t na = g->off + sa * g->batch, nb = g->off + sb * g->batch, nc = g->off + sc * g->batch;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *want = malloc(nc * 4);
    tu_fill(a, na, 1, -1, 1);
    tu_fill(b, nb, 2, -1, 1);
    tu_fill(c, nc, 3, -1, 1);
    memcpy(want, c, nc * 4);
    const float alpha = 0.75f, beta = g->batch % 2 ? 0.5f : 0.0f;
    for (size_t i = 0; i < g->batch; i++)
        ref_gemm(want + g->off + i * sc, a + g->off + i * sa, b + g->off + i * sb, g->m, g->n, g->k, alpha,
                 beta, g->ta, g->tb, lda, ldb, ldc);
    clf_tensor ta = tu_upload(ctx, a, na), tb = tu_upload(ctx, b, nb), tc = tu_upload(ctx, c, nc);
    struct clf_mat ma = {ta.buf, g->off, lda, g->ta, sa}, mb = {tb.buf, g->off, ldb, g->tb, sb},
                   mc = {tc.buf, g->off, ldc, false, sc};
    clf_status st = g->batch == 1 ? clf_gemm(ctx, g->m, g->n, g->k, alpha, &ma, &mb, beta, &mc)
                                  : clf_gemm_batched(ctx, g->m, g->n, g->k, alpha, &ma, &mb, beta, &mc, g->batch);
    cr_assert_eq(st, CLF_OK, "gemm: %s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &tc, nc);
    char what[128];
    snprintf(what, sizeof what, "gemm m=%zu n=%zu k=%zu ta=%d tb=%d pad=%zu off=%zu batch=%zu", g->m, g->n, g->k,
             g->ta, g->tb, g->pad, g->off, g->batch);
    /* Elements outside C (padding, between batches) must be left untouched. */
    cr_assert(tu_close(what, got, want, nc, 1e-5, 1e-4), "%s", what);
    clf_tensor_free(&ta);
    clf_tensor_free(&tb);
    clf_tensor_free(&tc);
    free(a), free(b), free(c), free(want), free(got);
}

static const size_t sizes[] = {1, 7, 33, 100, 257};

Test(gemm, odd_shapes_every_transpose)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 5; i++) {
            struct gcase g = {sizes[i], sizes[(i + 1) % 5], sizes[(i + 2) % 5], 0, 0, 1, t & 1, t & 2};
            check(ctx, &g);
        }
    clf_ctx_free(ctx);
}

Test(gemm, offsets_and_leading_dimensions)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int t = 0; t < 4; t++) {
        struct gcase g = {33, 100, 7, 3, 11, 1, t & 1, t & 2};
        check(ctx, &g);
    }
    clf_ctx_free(ctx);
}

Test(gemm, strided_batches)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int t = 0; t < 4; t++) {
        struct gcase g = {7, 33, 100, 1, 5, (size_t)(3 + t), t & 1, t & 2};
        check(ctx, &g);
    }
    clf_ctx_free(ctx);
}

Test(gemm, bad_leading_dimension_is_refused)
{
    clf_ctx_t *ctx = tu_ctx();
    float x[64] = {0};
    clf_tensor t = tu_upload(ctx, x, 64);
    struct clf_mat a = {t.buf, 0, 2, false, 0}, b = {t.buf, 0, 8, false, 0}, c = {t.buf, 0, 8, false, 0};
    clf_status st = clf_gemm(ctx, 4, 8, 4, 1, &a, &b, 0, &c);  /* lda 2 < k 4 */
    cr_assert_neq(st, CLF_OK);
    cr_assert(strstr(clf_ctx_error(ctx), "CLBlastInvalidLeadDimA"), "message: %s", clf_ctx_error(ctx));
    clf_tensor_free(&t);
    clf_ctx_free(ctx);
}
