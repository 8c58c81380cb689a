/* test_ops_loss.c: output projection + label-smoothed cross-entropy: eps 0
 * against plain cross-entropy, eps > 0 against (1-eps)·nll + eps·mean(-log p)
 * (tests/ref_ops.c), pads ignored; dh and dtable against the reference and
 * central finite differences in double; evaluation mode; a bias on the
 * logits and its gradient; determinism;
 * argument checks. */
#include "ops_testutil.h"
#include "ref_attention.h"

struct lcase {
    size_t N, V, d;
    float eps;
};

static int32_t *make_targets(size_t N, size_t V, int32_t pad)
{
    int32_t *t = malloc(N * sizeof *t);
    for (size_t r = 0; r < N; r++)
        t[r] = r % 5 == 3 ? pad : (int32_t)((r * 31 + 7) % V);
    return t;
}

/* Each of the n cases against the reference (ot_loss_case_bias), with a
 * bias on the logits when bias, on a context opened here: after the
 * caller's CLF_OPS_CPU_WG, which the context reads. */
static void check_cases(const struct lcase *cases, size_t n, bool bias)
{
    clf_ctx_t *ctx = tu_ctx();
    for (size_t i = 0; i < n; i++) {
        const struct lcase *c = &cases[i];
        int32_t *tg = make_targets(c->N, c->V, 1);
        ot_loss_case_bias(ctx, c->N, c->V, c->d, c->eps, tg, bias);
        free(tg);
    }
    clf_ctx_free(ctx);
}

Test(ops_loss, against_reference_odd_shapes)
{
    const struct lcase cases[] = {{1, 3, 1, 0.0f},    {7, 64, 3, 0.1f},   {33, 100, 64, 0.0f},
                                  {100, 512, 33, 0.1f}, {257, 100, 7, 0.3f}, {7, 1000, 16, 0.1f}};
    check_cases(cases, sizeof cases / sizeof cases[0], false);
}

/* a bias on the logits (Marian's final_logits_bias): forward and dbias */
Test(ops_loss, logits_bias)
{
    const struct lcase cases[] = {{1, 3, 1, 0.0f}, {7, 64, 3, 0.1f}, {33, 100, 64, 0.0f}, {257, 100, 7, 0.3f}};
    check_cases(cases, sizeof cases / sizeof cases[0], true);
}

/* GPUs get work-groups of up to 256 items; CPUs 1 (PoCL) or 16: run the
 * wide ones here too */
Test(ops_loss, wide_work_groups)
{
    tu_setting("CLF_OPS_CPU_WG", "256");
    const struct lcase cases[] = {{7, 64, 3, 0.1f}, {100, 512, 33, 0.1f}, {257, 100, 7, 0.3f}, {7, 1000, 16, 0.0f}};
    check_cases(cases, sizeof cases / sizeof cases[0], false);
}

/* The 16-item groups of CPUs other than PoCL's (the wide shape, narrow) */
Test(ops_loss, sixteen_item_work_groups)
{
    tu_setting("CLF_OPS_CPU_WG", "16");
    const struct lcase cases[] = {{7, 64, 3, 0.1f}, {33, 45, 7, 0.3f}, {7, 1000, 16, 0.0f}};
    check_cases(cases, sizeof cases / sizeof cases[0], false);
}

/* The CPU shape (WG 1: one work-item per row in float8 vectors, online
 * log-sum-exp) on row lengths that take its blocks of 32, its vectors of 8
 * and its scalar tail alone and together: 3 (scalars), 8 (one vector), 64
 * (blocks), 45 (32 + 8 + 5), 1000 (31 blocks + a vector), 1031 (32 blocks +
 * 7 scalars). On a GPU CLF_OPS_CPU_WG does not apply and this runs the
 * device's own shape. */
Test(ops_loss, one_item_per_row)
{
    tu_setting("CLF_OPS_CPU_WG", "1");
    const struct lcase cases[] = {{1, 3, 1, 0.0f},  {9, 8, 5, 0.1f},      {7, 64, 3, 0.1f},  {33, 45, 7, 0.3f},
                                  {100, 512, 33, 0.1f}, {7, 1000, 16, 0.0f}, {5, 1031, 4, 0.1f}};
    check_cases(cases, sizeof cases / sizeof cases[0], false);
}

/* dh and dtable against central differences of the double loss */
Test(ops_loss, backward_vs_finite_differences)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t N = 6, V = 7, d = 3;
    struct clf_loss_desc desc = {.smoothing = 0.1f, .grad_scale = 1.0f};
    float *h = ot_rand(N * d, 1, -1, 1), *table = ot_rand(V * d, 2, -1, 1), nh[18], nt[21];
    int32_t tg[6] = {3, 0, 6, 1, 0, 2};  /* two pad rows (pad_id 0) */
    double *hd = ref_to_double(h, N * d), *td = ref_to_double(table, V * d);
    const double e = 1e-6;
    size_t cnt;
    for (int which = 0; which < 2; which++) {
        double *p = which ? td : hd;
        size_t n = which ? V * d : N * d;
        for (size_t i = 0; i < n; i++) {
            double l[2];
            for (int s = 0; s < 2; s++) {
                p[i] += s ? -e : e;
                double *x = ot_logits_d(hd, td, N, V, d);
                l[s] = ref_loss_d(NULL, &cnt, x, tg, N, V, &desc);
                free(x);
                p[i] -= s ? -e : e;
            }
            (which ? nt : nh)[i] = (float)((l[0] - l[1]) / (2 * e));
        }
    }
    clf_tensor ttg = tu_upload_ints(ctx, tg, N);
    clf_tensor th = ot_up2(ctx, h, N, d), tt = ot_up2(ctx, table, V, d), tl = ot_up2(ctx, NULL, N, V),
               tloss = ot_up2(ctx, NULL, 1, 2), tdh = ot_up2(ctx, NULL, N, d), tdt = ot_up2(ctx, NULL, V, d);
    cr_assert_eq(clf_loss_forward_backward(ctx, &tloss, &tdh, &tdt, &tl, &th, &tt, &ttg, &desc), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, "loss dh vs finite differences", &tdh, nh, N * d, 1e-5, 1e-4));
    cr_expect(ot_check(ctx, "loss dtable vs finite differences", &tdt, nt, V * d, 1e-5, 1e-4));
    float *got = tu_download(ctx, &tloss, 2);
    cr_expect_eq(got[1], 4.0f, "count of non-pad rows %g, want 4", (double)got[1]);
    free(got);
    clf_tensor_free(&ttg);
    clf_tensor_free(&th), clf_tensor_free(&tt), clf_tensor_free(&tl), clf_tensor_free(&tloss);
    clf_tensor_free(&tdh), clf_tensor_free(&tdt);
    free(h), free(table), free(hd), free(td);
    clf_ctx_free(ctx);
}

Test(ops_loss, deterministic)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t N = 256, V = 1000, d = 64;
    struct clf_loss_desc desc = {.smoothing = 0.1f, .pad_id = 1, .grad_scale = 1.0f};
    float *h = ot_rand(N * d, 1, -1, 1), *table = ot_rand(V * d, 2, -1, 1);
    int32_t *tg = make_targets(N, V, desc.pad_id);
    clf_tensor ttg = tu_upload_ints(ctx, tg, N);
    clf_tensor th = ot_up2(ctx, h, N, d), tt = ot_up2(ctx, table, V, d), tl = ot_up2(ctx, NULL, N, V),
               tloss = ot_up2(ctx, NULL, 1, 2), tdh = ot_up2(ctx, NULL, N, d);
    float *out[2][2];
    for (int k = 0; k < 2; k++) {
        clf_tensor tdt = ot_up2(ctx, NULL, V, d);
        cr_assert_eq(clf_loss_forward_backward(ctx, &tloss, &tdh, &tdt, &tl, &th, &tt, &ttg, &desc), CLF_OK);
        out[k][0] = tu_download(ctx, &tloss, 2), out[k][1] = tu_download(ctx, &tdt, V * d);
        clf_tensor_free(&tdt);
    }
    cr_expect(memcmp(out[0][0], out[1][0], 2 * 4) == 0, "loss differs between runs");
    cr_expect(memcmp(out[0][1], out[1][1], V * d * 4) == 0, "dtable differs between runs");
    for (int k = 0; k < 2; k++)
        free(out[k][0]), free(out[k][1]);
    clf_tensor_free(&ttg);
    clf_tensor_free(&th), clf_tensor_free(&tt), clf_tensor_free(&tl), clf_tensor_free(&tloss), clf_tensor_free(&tdh);
    free(h), free(table), free(tg);
    clf_ctx_free(ctx);
}

Test(ops_loss, bad_target_gives_nan_and_bad_shapes_give_arg)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t N = 3, V = 5, d = 2;
    int32_t tg[3] = {1, 9, 2};
    struct clf_loss_desc desc = {.smoothing = 0.1f, .grad_scale = 1.0f};
    clf_tensor ttg = tu_upload_ints(ctx, tg, N);
    clf_tensor th = ot_up2(ctx, NULL, N, d), tt = ot_up2(ctx, NULL, V, d), tl = ot_up2(ctx, NULL, N, V),
               tloss = ot_up2(ctx, NULL, 1, 2), bad = ot_up2(ctx, NULL, N, V + 1);
    cr_assert_eq(clf_loss_forward_backward(ctx, &tloss, NULL, NULL, &tl, &th, &tt, &ttg, &desc), CLF_OK);
    float *got = tu_download(ctx, &tloss, 2);
    cr_expect(isnan(got[0]), "a target past V gives loss %g, want NaN", (double)got[0]);
    free(got);
    OT_EXPECT_ARG(ctx, clf_loss_forward_backward(ctx, &tloss, NULL, NULL, &bad, &th, &tt, &ttg, &desc),
                  "loss_forward_backward");
    OT_EXPECT_ARG(ctx, clf_loss_forward_backward(ctx, &tloss, &bad, NULL, &tl, &th, &tt, &ttg, &desc),
                  "loss_forward_backward");
    OT_EXPECT_ARG(ctx, clf_loss_forward_backward(ctx, &tl, NULL, NULL, &tl, &th, &tt, &ttg, &desc),
                  "loss_forward_backward");
    clf_tensor_free(&ttg);
    clf_tensor_free(&th), clf_tensor_free(&tt), clf_tensor_free(&tl), clf_tensor_free(&tloss), clf_tensor_free(&bad);
    clf_ctx_free(ctx);
}
