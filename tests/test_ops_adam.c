/* test_ops_adam.c: ten Adam steps against tests/ref_ops.c to 1e-6, with and
 * without global-norm clipping and weight decay; the norm in scratch; the
 * paper's learning-rate schedule; argument checks. */
#include "ops_testutil.h"

static void run_case(clf_ctx_t *ctx, size_t n, float clip, float wd, float gscale)
{
    struct clf_adam_desc d = clf_adam_defaults(1e-3f);
    d.clip_norm = clip, d.weight_decay = wd;
    float *p = ot_rand(n, 1, -1, 1), *m = calloc(n, 4), *v = calloc(n, 4);
    clf_tensor tp = tu_upload(ctx, p, n), tm = tu_upload(ctx, m, n), tv = tu_upload(ctx, v, n), tg;
    size_t ns = clf_adam_scratch_size(ctx, n);
    clf_tensor ts = ot_up2(ctx, NULL, 1, ns);
    char what[96];
    for (uint32_t step = 1; step <= 10; step++) {
        float *g = ot_rand(n, 100 + step, -gscale, gscale);
        double norm = 0;
        for (size_t i = 0; i < n; i++)
            norm += (double)g[i] * g[i];
        norm = sqrt(norm);
        d.step = step;
        d.lr = clf_lr_schedule(512, step, 4);
        ref_adam_step(p, m, v, g, n, &d);
        tg = tu_upload(ctx, g, n);
        cr_assert_eq(clf_adam_step(ctx, &tp, &tm, &tv, &tg, &ts, &d), CLF_OK, "%s", clf_ctx_error(ctx));
        if (clip > 0) {
            float *s = tu_download(ctx, &ts, ns);
            cr_expect(fabs(s[0] - norm) <= 1e-5 * norm, "norm %g, want %g", (double)s[0], norm);
            free(s);
        }
        clf_tensor_free(&tg);
        free(g);
    }
    snprintf(what, sizeof what, "adam n=%zu clip=%g wd=%g after 10 steps", n, (double)clip, (double)wd);
    cr_expect(ot_check(ctx, what, &tp, p, n, 1e-6, 0), "%s: params", what);
    cr_expect(ot_check(ctx, what, &tm, m, n, 1e-6, 0), "%s: m", what);
    cr_expect(ot_check(ctx, what, &tv, v, n, 1e-6, 0), "%s: v", what);
    clf_tensor_free(&tp), clf_tensor_free(&tm), clf_tensor_free(&tv), clf_tensor_free(&ts);
    free(p), free(m), free(v);
}

Test(ops_adam, ten_steps_match_reference)
{
    clf_ctx_t *ctx = tu_ctx();
    run_case(ctx, 7, 0, 0, 1);
    run_case(ctx, 1000, 0, 0.01f, 1);
    run_case(ctx, 1000, 1.0f, 0, 1);        /* clipping active: the norm is ~18 */
    run_case(ctx, 100003, 1e6f, 0, 0.01f);  /* clipping inactive, many groups */
    run_case(ctx, 33, 0.5f, 0.1f, 3);
    clf_ctx_free(ctx);
}

Test(ops_adam, wide_work_groups)
{
    /* the norm's work-group widths as on GPUs (with the CPU's contiguous
     * layout; the GPU's grid-stride one runs under CLF_DEVICE_LIMITS=gpu) */
    tu_setting("CLF_OPS_CPU_WG", "256");
    clf_ctx_t *ctx = tu_ctx();
    run_case(ctx, 100003, 1.0f, 0, 0.01f);
    clf_ctx_free(ctx);
}

Test(ops_adam, schedule)
{
    /* d^-0.5 · min(step^-0.5, step·warmup^-1.5) */
    cr_expect_float_eq(clf_lr_schedule(512, 1, 4000), (float)(pow(512, -0.5) * pow(4000, -1.5)), 1e-12);
    cr_expect_float_eq(clf_lr_schedule(512, 4000, 4000), (float)(pow(512, -0.5) * pow(4000, -0.5)), 1e-12);
    cr_expect_float_eq(clf_lr_schedule(256, 16000, 4000), (float)(pow(256, -0.5) / sqrt(16000.0)), 1e-12);
    cr_expect(clf_lr_schedule(512, 3999, 4000) < clf_lr_schedule(512, 4000, 4000));
    cr_expect(clf_lr_schedule(512, 4001, 4000) < clf_lr_schedule(512, 4000, 4000));
    cr_expect(clf_lr_schedule(512, 0, 4000) == clf_lr_schedule(512, 1, 4000));
}

Test(ops_adam, bad_arguments)
{
    clf_ctx_t *ctx = tu_ctx();
    clf_tensor a = ot_up2(ctx, NULL, 1, 10), b = ot_up2(ctx, NULL, 1, 9), s = ot_up2(ctx, NULL, 1, 2);
    struct clf_adam_desc d = clf_adam_defaults(1e-3f);
    OT_EXPECT_ARG(ctx, clf_adam_step(ctx, &a, &a, &b, &a, NULL, &d), "adam_step");
    d.step = 0;
    OT_EXPECT_ARG(ctx, clf_adam_step(ctx, &a, &a, &a, &a, NULL, &d), "adam_step");
    d.step = 1, d.clip_norm = 1;
    OT_EXPECT_ARG(ctx, clf_adam_step(ctx, &a, &a, &a, &a, &s, &d), "adam_step");
    OT_EXPECT_ARG(ctx, clf_adam_step(ctx, &a, &a, &a, &a, NULL, &d), "adam_step");
    clf_tensor_free(&a), clf_tensor_free(&b), clf_tensor_free(&s);
    clf_ctx_free(ctx);
}
