/* ops_cases.c: op checks that more than one test executable runs (the op's
 * own test on many shapes, test_kernels_small on the tiny ones Oclgrind
 * can afford), so that each is written once. */
#include "ops_testutil.h"
#include "ref_attention.h"

double *ot_logits_d(const double *h, const double *table, size_t N, size_t V, size_t d)
{
    double *x = malloc(N * V * sizeof *x);
    for (size_t r = 0; r < N; r++)
        for (size_t v = 0; v < V; v++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += h[r * d + k] * table[v * d + k];
            x[r * V + v] = s;
        }
    return x;
}

void ot_loss_case(clf_ctx_t *ctx, size_t N, size_t V, size_t d, float eps, const int32_t *tg)
{
    ot_loss_case_bias(ctx, N, V, d, eps, tg, false);
}

void ot_loss_case_bias(clf_ctx_t *ctx, size_t N, size_t V, size_t d, float eps, const int32_t *tg, bool with_bias)
{
    struct clf_loss_desc desc = {eps, 1, 0.5f, NULL, NULL};
    float *h = ot_rand(N * d, N, -1, 1), *table = ot_rand(V * d, V, -1, 1), *dt0 = ot_rand(V * d, 3, -1, 1),
          *b = ot_rand(V, 5, -1, 1), *db = ot_rand(V, 6, -1, 1);
    double *hd = ref_to_double(h, N * d), *td = ref_to_double(table, V * d), *x = ot_logits_d(hd, td, N, V, d),
           *dl = malloc(N * V * sizeof *dl);
    if (with_bias)
        for (size_t r = 0; r < N; r++)
            for (size_t v = 0; v < V; v++)
                x[r * V + v] += b[v];
    size_t count;
    double want = ref_loss_d(dl, &count, x, tg, N, V, &desc);
    if (eps == 0.0f) {  /* plain cross-entropy, written out independently */
        double ce = 0;
        for (size_t r = 0; r < N; r++) {
            if (tg[r] == desc.pad_id)
                continue;
            double s = 0;
            for (size_t v = 0; v < V; v++)
                s += exp(x[r * V + v]);
            ce += log(s) - x[r * V + tg[r]];
        }
        cr_expect(fabs(ce - want) <= 1e-9 * (1 + fabs(ce)), "ref eps=0 %g vs plain CE %g", want, ce);
    }
    float *wdh = malloc(N * d * 4), *wdt = ot_copy(dt0, V * d);
    for (size_t r = 0; r < N; r++)
        for (size_t k = 0; k < d; k++) {
            double s = 0;
            for (size_t v = 0; v < V; v++)
                s += dl[r * V + v] * td[v * d + k];
            wdh[r * d + k] = (float)s;
        }
    for (size_t v = 0; v < V; v++)
        for (size_t k = 0; k < d; k++) {
            double s = 0;
            for (size_t r = 0; r < N; r++)
                s += dl[r * V + v] * hd[r * d + k];
            wdt[v * d + k] += (float)s;
        }
    float *wdb = ot_copy(db, V);
    for (size_t v = 0; v < V; v++) {
        double s = 0;
        for (size_t r = 0; r < N; r++)
            s += dl[r * V + v];
        wdb[v] += (float)s;
    }
    clf_tensor ttg = tu_upload_ints(ctx, tg, N);
    clf_tensor th = ot_up2(ctx, h, N, d), tt = ot_up2(ctx, table, V, d), tl = ot_up2(ctx, NULL, N, V),
               tloss = ot_up2(ctx, NULL, 1, 2), tdh = ot_up2(ctx, NULL, N, d), tdt = ot_up2(ctx, dt0, V, d),
               tb = ot_up2(ctx, b, 1, V), tdb = ot_up2(ctx, db, 1, V);
    if (with_bias)
        desc.bias = &tb;
    char what[96];
    snprintf(what, sizeof what, "loss N=%zu V=%zu d=%zu eps=%g bias=%d", N, V, d, (double)eps, (int)with_bias);
    /* evaluation first: loss only, logits kept */
    cr_assert_eq(clf_loss_forward_backward(ctx, &tloss, NULL, NULL, &tl, &th, &tt, &ttg, &desc), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    float lw[2] = {(float)want, (float)count}, *xf = ref_to_float(x, N * V);
    cr_expect(ot_check(ctx, what, &tloss, lw, 2, 1e-4, 1e-5), "%s: evaluation", what);
    cr_expect(ot_check(ctx, what, &tl, xf, N * V, 1e-5, 1e-5), "%s: logits kept", what);
    if (with_bias)
        desc.dbias = &tdb;
    cr_assert_eq(clf_loss_forward_backward(ctx, &tloss, &tdh, &tdt, &tl, &th, &tt, &ttg, &desc), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, what, &tloss, lw, 2, 1e-4, 1e-5));
    cr_expect(ot_check(ctx, what, &tdh, wdh, N * d, 1e-5, 1e-4), "%s: dh", what);
    cr_expect(ot_check(ctx, what, &tdt, wdt, V * d, 1e-5, 1e-4), "%s: dtable", what);
    if (with_bias)
        cr_expect(ot_check(ctx, what, &tdb, wdb, V, 1e-5, 1e-4), "%s: dbias", what);
    clf_tensor_free(&tb), clf_tensor_free(&tdb), free(b), free(db), free(wdb);
    clf_tensor_free(&ttg);
    clf_tensor_free(&th), clf_tensor_free(&tt), clf_tensor_free(&tl), clf_tensor_free(&tloss);
    clf_tensor_free(&tdh), clf_tensor_free(&tdt);
    free(h), free(table), free(dt0), free(hd), free(td), free(x), free(dl), free(wdh), free(wdt), free(xf);
}
