/* test_ops_layernorm.c: layer norm forward against tests/ref_ops.c on odd
 * shapes and both epsilons of the reference implementations; backward (dx,
 * dgain, dbias) against central finite differences of the double
 * reference; += on parameter gradients; determinism; argument checks. The
 * post-norm residual with dropout in one kernel, forward and backward:
 * against the unfused kernels to the bit, the reference and finite
 * differences. */
#include "ops_testutil.h"

static void fd_case(clf_ctx_t *ctx, size_t rows, size_t d, float eps, const struct clf_dropout *drop);

/* dropout of the fused residual cases: none, light, heavy */
static const struct clf_dropout drops[3] = {{0.0f, 0, 0, 0}, {0.1f, 0x123456789abcdefULL, 7, 3}, {0.5f, 99, 1, 5}};

static void forward_cases(void)
{
    clf_ctx_t *ctx = tu_ctx();
    const float epss[] = {1e-6f, 1e-5f};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            size_t rows = ot_rows[i], d = ot_cols[j], n = rows * d;
            float eps = epss[(i + j) % 2];
            float *x = ot_rand(n, i * 5 + j, -3, 5), *g = ot_rand(d, 40 + j, 0.5f, 1.5f),
                  *b = ot_rand(d, 50 + j, -1, 1), *y = malloc(n * 4), *mu = malloc(rows * 4),
                  *rs = malloc(rows * 4);
            ref_layernorm_forward(y, mu, rs, x, g, b, rows, d, eps);
            clf_tensor tx = ot_up2(ctx, x, rows, d), tg = tu_upload(ctx, g, d), tb = tu_upload(ctx, b, d),
                       ty = ot_up2(ctx, NULL, rows, d), tm = tu_upload(ctx, mu, rows), tr = tu_upload(ctx, rs, rows);
            cr_assert_eq(clf_layernorm_forward(ctx, &ty, &tm, &tr, &tx, &tg, &tb, eps), CLF_OK, "%s",
                         clf_ctx_error(ctx));
            char what[96];
            snprintf(what, sizeof what, "layernorm rows=%zu d=%zu", rows, d);
            /* d = 1 normalises to 0 exactly: rstd is then 1/sqrt(eps), large */
            cr_expect(ot_check(ctx, what, &ty, y, n, 1e-5, 1e-4));
            cr_expect(ot_check(ctx, what, &tm, mu, rows, 1e-6, 1e-5));
            cr_expect(ot_check(ctx, what, &tr, rs, rows, 1e-6, 1e-4));
            clf_tensor_free(&tx), clf_tensor_free(&tg), clf_tensor_free(&tb), clf_tensor_free(&ty);
            clf_tensor_free(&tm), clf_tensor_free(&tr);
            free(x), free(g), free(b), free(y), free(mu), free(rs);
        }
    clf_ctx_free(ctx);
}

Test(ops_layernorm, forward_odd_shapes)
{
    forward_cases();
}

/* The post-norm residual in one kernel, with and without dropout: the
 * unfused kernels' results to the bit, forward and backward */
static void residual_cases(void)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 3; k++)  /* p = 0 both as NULL and as a descriptor */
                cr_expect(ot_residual_ln_case(ctx, ot_rows[i], ot_cols[j], (i + j + k) % 2,
                                              k || (i + j) % 2 ? &drops[k] : NULL));
    clf_ctx_free(ctx);
}

Test(ops_layernorm, residual_in_the_same_kernel)
{
    residual_cases();
}

Test(ops_layernorm, residual_backward_vs_finite_differences)
{
    clf_ctx_t *ctx = tu_ctx();
    fd_case(ctx, 1, 7, 1e-5f, &drops[1]);
    fd_case(ctx, 7, 33, 1e-6f, &drops[2]);
    fd_case(ctx, 5, 100, 1e-5f, &drops[1]);
    fd_case(ctx, 3, 64, 1e-5f, &drops[0]);
    clf_ctx_free(ctx);
}

/* GPUs get work-groups of up to 256 items; CPUs 16: run the wide ones here too */
Test(ops_layernorm, forward_and_backward_wide_work_groups)
{
    tu_setting("CLF_OPS_CPU_WG", "256");
    forward_cases();
    residual_cases();
    clf_ctx_t *ctx = tu_ctx();
    fd_case(ctx, 3, 7, 1e-5f, NULL);
    fd_case(ctx, 5, 100, 1e-6f, NULL);
    fd_case(ctx, 7, 33, 1e-6f, &drops[2]);
    clf_ctx_free(ctx);
}

/* L = Σ w ⊙ LN(x), derivatives by central differences in double. With
 * drop, L = Σ w ⊙ LN(x + dropout(sub)) through the fused residual's
 * forward and backward, and sub's derivatives too. */
static void fd_case(clf_ctx_t *ctx, size_t rows, size_t d, float eps, const struct clf_dropout *drop)
{
    size_t n = rows * d;
    float *x = ot_rand(n, 7 + d, -2, 2), *g = ot_rand(d, 8, 0.5f, 1.5f), *b = ot_rand(d, 9, -1, 1),
          *w = ot_rand(n, 10, -1, 1), *dg0 = ot_rand(d, 11, -1, 1), *db0 = ot_rand(d, 12, -1, 1),
          *sub = ot_rand(n, 13, -2, 2);
    float *nx = malloc(n * 4), *ns = calloc(n, 4), *ng = ot_copy(dg0, d), *nb = ot_copy(db0, d);
    double *xd = malloc(d * 8), *gd = malloc(d * 8), *bd = malloc(d * 8), *yd = malloc(d * 8);
    const double h = 1e-5;
    for (size_t r = 0; r < rows; r++) {
        /* perturb each of x[r, j], gain[j], bias[j] (and sub[r, j]); the
         * gain and bias derivatives sum over rows */
        for (int which = 0; which < (drop ? 4 : 3); which++)
            for (size_t j = 0; j < d; j++) {
                double l[2];
                for (int s = 0; s < 2; s++) {
                    double e = s ? -h : h;
                    for (size_t k = 0; k < d; k++) {
                        xd[k] = x[r * d + k] + (which == 0 && k == j ? e : 0);
                        if (drop)
                            xd[k] += ((double)sub[r * d + k] + (which == 3 && k == j ? e : 0)) *
                                     ref_dropout_factor(drop, r * d + k);
                        gd[k] = g[k] + (which == 1 && k == j ? e : 0);
                        bd[k] = b[k] + (which == 2 && k == j ? e : 0);
                    }
                    ref_layernorm_row_d(yd, xd, gd, bd, d, eps);
                    l[s] = 0;
                    for (size_t k = 0; k < d; k++)
                        l[s] += w[r * d + k] * yd[k];
                }
                double dv = (l[0] - l[1]) / (2 * h);
                if (which == 0)
                    nx[r * d + j] = (float)dv;
                else if (which == 1)
                    ng[j] += (float)dv;
                else if (which == 2)
                    nb[j] += (float)dv;
                else
                    ns[r * d + j] = (float)dv;
            }
    }
    clf_tensor tx = ot_up2(ctx, x, rows, d), tg = tu_upload(ctx, g, d), tb = tu_upload(ctx, b, d),
               ty = ot_up2(ctx, NULL, rows, d), tm = ot_up2(ctx, NULL, rows, 1), tr = ot_up2(ctx, NULL, rows, 1),
               tw = ot_up2(ctx, w, rows, d), tdg = tu_upload(ctx, dg0, d), tdb = tu_upload(ctx, db0, d),
               tsub = ot_up2(ctx, sub, rows, d), tsum = ot_up2(ctx, NULL, rows, d), tds = ot_up2(ctx, NULL, rows, d);
    /* dx overwrites dy (aliasing allowed) */
    if (drop) {
        cr_assert_eq(clf_residual_layernorm_forward(ctx, &ty, &tm, &tr, &tsum, &tx, &tsub, &tg, &tb, eps, drop),
                     CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert_eq(clf_residual_layernorm_backward(ctx, &tw, &tds, &tdg, &tdb, &tw, &tsum, &tm, &tr, &tg, drop),
                     CLF_OK, "%s", clf_ctx_error(ctx));
    } else {
        cr_assert_eq(clf_layernorm_forward(ctx, &ty, &tm, &tr, &tx, &tg, &tb, eps), CLF_OK, "%s",
                     clf_ctx_error(ctx));
        cr_assert_eq(clf_layernorm_backward(ctx, &tw, &tdg, &tdb, &tw, &tx, &tm, &tr, &tg), CLF_OK, "%s",
                     clf_ctx_error(ctx));
    }
    char what[128];
    snprintf(what, sizeof what, "%s rows=%zu d=%zu p=%g vs finite differences",
             drop ? "residual_layernorm_backward" : "layernorm_backward", rows, d, drop ? (double)drop->p : 0.0);
    cr_expect(ot_check(ctx, what, &tw, nx, n, 2e-4, 1e-3));
    cr_expect(ot_check(ctx, what, &tdg, ng, d, 2e-4, 1e-3));
    cr_expect(ot_check(ctx, what, &tdb, nb, d, 2e-4, 1e-3));
    if (drop)
        cr_expect(ot_check(ctx, what, &tds, ns, n, 2e-4, 1e-3));
    clf_tensor *ts[] = {&tx, &tg, &tb, &ty, &tm, &tr, &tw, &tdg, &tdb, &tsub, &tsum, &tds};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clf_tensor_free(ts[i]);
    free(x), free(g), free(b), free(w), free(dg0), free(db0), free(sub), free(nx), free(ns), free(ng), free(nb);
    free(xd), free(gd), free(bd), free(yd);
}

Test(ops_layernorm, backward_vs_finite_differences)
{
    clf_ctx_t *ctx = tu_ctx();
    fd_case(ctx, 3, 7, 1e-5f, NULL);
    fd_case(ctx, 33, 64, 1e-6f, NULL);
    fd_case(ctx, 5, 100, 1e-6f, NULL);
    clf_ctx_free(ctx);
}

Test(ops_layernorm, backward_deterministic)
{
    clf_ctx_t *ctx = tu_ctx();
    size_t rows = 1000, d = 512, n = rows * d;
    float *x = ot_rand(n, 1, -1, 1), *g = ot_rand(d, 2, 0.5f, 1.5f), *w = ot_rand(n, 3, -1, 1);
    clf_tensor tx = ot_up2(ctx, x, rows, d), tg = tu_upload(ctx, g, d), tb = tu_upload(ctx, g, d),
               ty = ot_up2(ctx, NULL, rows, d), tm = ot_up2(ctx, NULL, rows, 1), tr = ot_up2(ctx, NULL, rows, 1),
               tw = ot_up2(ctx, w, rows, d);
    float *out[2][3];
    for (int k = 0; k < 2; k++) {
        clf_tensor dg = ot_up2(ctx, NULL, 1, d), db = ot_up2(ctx, NULL, 1, d);
        cr_assert_eq(clf_layernorm_forward(ctx, &ty, &tm, &tr, &tx, &tg, &tb, 1e-6f), CLF_OK);
        cr_assert_eq(clf_layernorm_backward(ctx, &ty, &dg, &db, &tw, &tx, &tm, &tr, &tg), CLF_OK);
        out[k][0] = tu_download(ctx, &ty, n), out[k][1] = tu_download(ctx, &dg, d), out[k][2] = tu_download(ctx, &db, d);
        clf_tensor_free(&dg), clf_tensor_free(&db);
    }
    cr_expect(memcmp(out[0][0], out[1][0], n * 4) == 0, "dx differs between runs");
    cr_expect(memcmp(out[0][1], out[1][1], d * 4) == 0, "dgain differs between runs");
    cr_expect(memcmp(out[0][2], out[1][2], d * 4) == 0, "dbias differs between runs");
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++)
            free(out[k][i]);
    clf_tensor_free(&tx), clf_tensor_free(&tg), clf_tensor_free(&tb), clf_tensor_free(&ty), clf_tensor_free(&tm);
    clf_tensor_free(&tr), clf_tensor_free(&tw);
    free(x), free(g), free(w);
    clf_ctx_free(ctx);
}

Test(ops_layernorm, bad_arguments)
{
    clf_ctx_t *ctx = tu_ctx();
    clf_tensor x = ot_up2(ctx, NULL, 7, 3), y = ot_up2(ctx, NULL, 7, 3), m = ot_up2(ctx, NULL, 1, 7),
               r = ot_up2(ctx, NULL, 1, 7), g = ot_up2(ctx, NULL, 1, 3), bad = ot_up2(ctx, NULL, 1, 4);
    OT_EXPECT_ARG(ctx, clf_layernorm_forward(ctx, &y, &m, &r, &x, &bad, &g, 1e-6f), "layernorm_forward");
    OT_EXPECT_ARG(ctx, clf_layernorm_forward(ctx, &y, &bad, &r, &x, &g, &g, 1e-6f), "layernorm_forward");
    OT_EXPECT_ARG(ctx, clf_layernorm_forward(ctx, &y, &m, &r, &x, &g, &g, 0.0f), "layernorm_forward");
    OT_EXPECT_ARG(ctx, clf_layernorm_backward(ctx, &y, &bad, NULL, &y, &x, &m, &r, &g), "layernorm_backward");
    OT_EXPECT_ARG(ctx, clf_layernorm_backward(ctx, &bad, NULL, NULL, &y, &x, &m, &r, &g), "layernorm_backward");
    const struct clf_dropout p1 = {1.0f, 0, 0, 0};
    OT_EXPECT_ARG(ctx, clf_residual_layernorm_forward(ctx, &y, &m, &r, &y, &x, &x, &g, &g, 1e-6f, &p1),
                  "residual_layernorm_forward");
    OT_EXPECT_ARG(ctx, clf_residual_layernorm_backward(ctx, &y, &bad, NULL, NULL, &y, &x, &m, &r, &g, NULL),
                  "residual_layernorm_backward");
    OT_EXPECT_ARG(ctx, clf_residual_layernorm_backward(ctx, &y, NULL, NULL, NULL, &y, &x, &m, &r, &g, NULL),
                  "residual_layernorm_backward");
    OT_EXPECT_ARG(ctx, clf_residual_layernorm_backward(ctx, &y, &x, NULL, NULL, &y, &x, &m, &r, &g, &p1),
                  "residual_layernorm_backward");
    clf_tensor_free(&x), clf_tensor_free(&y), clf_tensor_free(&m), clf_tensor_free(&r), clf_tensor_free(&g);
    clf_tensor_free(&bad);
    clf_ctx_free(ctx);
}
