/* test_decode_attn.c: decoding's attention (cl/decode_attn.cl, split-K over
 * the keys) against the double reference and the tiled forward on odd
 * shapes: head sizes of the scalar, float4 and float8 paths, key ranges of
 * 1, 2, 7, 63, 64, 65 and 300 (past one part's CHUNK of 256), self-attention
 * over a cache (causal, with and without a window), cross-attention over
 * padded memory rows of different lengths (one with no key), several query
 * rows per (sequence, head) (beams on one memory; causal positions in
 * turn), parts chosen
 * by the device and forced (one part, several, more parts than keys); with
 * the device's limits, GPU-shaped ones, one-item work-groups and little
 * local memory. Then the decoding step itself against the step through the
 * tiled forward (CLF_DECODE_ATTN=tiled), which it replaced. */
#include "attention/attention_internal.h"
#include "ops_testutil.h"

static const size_t lengths[] = {1, 2, 7, 63, 64, 65, 300};
#define NLEN (sizeof lengths / sizeof lengths[0])

/* Every length in four settings: self over positions 0..n-1 (full and two
 * windows) and cross over memory rows of n, 1, 0 and about n/2 keys. */
static void sweep(clf_ctx_t *ctx, size_t dk, const size_t *parts, size_t nparts, bool vs_tiled)
{
    for (size_t li = 0; li < NLEN; li++) {
        size_t n = lengths[li];
        int32_t kl[3] = {(int32_t)n, 1, (int32_t)(n / 2)};
        const int32_t kl0[3] = {0, (int32_t)n, 3};
        struct ot_dcase cases[] = {
            {2, 3, dk, n, NULL, true, -1, n - 1, 1},  /* self: the newest position sees all */
            {2, 1, dk, n, NULL, true, 3, n - 1, 1},   /* restricted to the last 4 */
            {1, 2, dk, n, NULL, true, 50, n - 1, 1},  /* a window longer than some caches */
            {3, 2, dk, n, kl, false, -1, 0, 1},       /* cross, rows of n, 1 and n/2 keys */
            {3, 1, dk, n, kl0, false, -1, 0, 1},      /* cross, a row with no key */
            {3, 2, dk, n, kl, false, -1, 0, 4},       /* cross, 4 beams of a sentence on its memory */
            {2, 2, dk, n, NULL, true, 2, n - (n < 3 ? n : 3), n < 3 ? n : 3},  /* self, 3 new positions */
        };
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            for (size_t pi = 0; pi < nparts; pi++)
                ot_decode_attn_case(ctx, &cases[ci], parts[pi], vs_tiled);
    }
}

static const size_t head_sizes[] = {3, 12, 40, 64, 256};
static const size_t some_parts[] = {0, 1, 3, 7};

Test(decode_attn, matches_reference_and_tiled, .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = tu_ctx();
    for (size_t i = 0; i < sizeof head_sizes / sizeof head_sizes[0]; i++)
        sweep(ctx, head_sizes[i], some_parts, 4, true);
    clf_ctx_free(ctx);
}

/* A context under CLF_DEVICE_LIMITS=limits, a GPU's shape; the test is
 * skipped on a device that has less than that shape asks for. */
static clf_ctx_t *gpu_shaped_ctx(const char *limits)
{
    struct clf_device_info own = tu_own_device();
    if (own.local_mem < 48 * 1024 || own.max_work_group < 256)
        cr_skip_test("the device has less than the gpu shape asks for");
    tu_setting("CLF_DEVICE_LIMITS", limits);
    return tu_ctx();
}

/* A GPU's limits and type: work-groups of 64, 8 groups per compute unit. */
Test(decode_attn, gpu_limits, .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = gpu_shaped_ctx("gpu");
    const size_t dks[] = {3, 64, 256}, parts[] = {0, 2};
    for (size_t i = 0; i < 3; i++)
        sweep(ctx, dks[i], parts, 2, true);
    clf_ctx_free(ctx);
}

/* One and four work-items per group (CPU devices take their cap from
 * CLF_OPS_CPU_WG): the reductions' edge cases. */
Test(decode_attn, narrow_work_groups, .timeout = TU_TIMEOUT(300))
{
    const char *wgs[] = {"1", "4"};
    const size_t dks[] = {3, 40}, parts[] = {0, 3};
    for (int w = 0; w < 2; w++) {
        tu_setting("CLF_OPS_CPU_WG", wgs[w]);
        clf_ctx_t *ctx = tu_ctx();
        if (!(clf_ctx_device(ctx)->type & CL_DEVICE_TYPE_CPU)) {
            clf_ctx_free(ctx);
            cr_skip_test("CLF_OPS_CPU_WG narrows CPU devices only");
        }
        for (size_t i = 0; i < 2; i++)
            sweep(ctx, dks[i], parts, 2, false);
        clf_ctx_free(ctx);
    }
}

/* 2 KiB of local memory: shorter chunks and narrower groups than the
 * defaults, more parts for the same keys (the tiled forward does not fit:
 * the reference alone judges). */
Test(decode_attn, little_local_memory, .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = gpu_shaped_ctx("gpu,local_mem=2K");
    const size_t parts[] = {0, 1};
    sweep(ctx, 256, parts, 2, false);
    sweep(ctx, 12, parts, 2, false);
    clf_ctx_free(ctx);
}

/* Enough parts to fill the device, never fewer than CHUNK requires, one
 * when the rows alone fill it. */
Test(decode_attn, parts_follow_device_and_keys)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_attention_dec dec = {0};
    dec.chunk = 256;
    struct clf_attention_desc d = {
        .batch = 1, .heads = 1, .n_q = 1, .n_k = 300, .d_k = 64, .causal = true, .window = -1, .q_pos_offset = 299};
    size_t p = clf_attention_decode_parts(ctx, &dec, &d, 0);
    cr_assert_geq(p, 2, "one row of 300 keys in %zu part(s)", p);
    cr_assert_eq(clf_attention_decode_parts(ctx, &dec, &d, 1), 2, "CHUNK 256 needs 2 parts for 300 keys");
    cr_assert_eq(clf_attention_decode_parts(ctx, &dec, &d, 5), 5);
    d.window = 9; /* 10 keys */
    cr_assert_eq(clf_attention_decode_parts(ctx, &dec, &d, 0), 1);
    d.window = -1, d.batch = 4096, d.heads = 8; /* rows enough for any device */
    cr_assert_eq(clf_attention_decode_parts(ctx, &dec, &d, 0), 2);
    d.n_k = 200, d.q_pos_offset = 199;
    cr_assert_eq(clf_attention_decode_parts(ctx, &dec, &d, 0), 1);
    clf_ctx_free(ctx);
}

Test(decode_attn, bad_input_is_refused)
{
    clf_ctx_t *ctx = tu_ctx();
    float z[64] = {0};
    clf_tensor t = tu_upload(ctx, z, 64), l = tu_upload(ctx, z, 2);
    struct clf_attention_layout a = {t.buf, 0, 16, 8, 8};
    struct clf_attention_desc d = {.batch = 2, .heads = 2, .n_q = 2, .n_k = 2, .d_k = 8, .window = -1};
    d.n_q = 65;
    OT_EXPECT_ARG(ctx, clf_attention_decode(ctx, &a, &l, &a, &a, &a, &d), "attention_decode"); /* n_q past 64 */
    d.n_q = 1;
    OT_EXPECT_ARG(ctx, clf_attention_decode(ctx, &a, &l, &a, &a, &a, &d), "attention_decode"); /* lse of 2, not 4 */
    d.n_k = 9;
    OT_EXPECT_ARG(ctx, clf_attention_decode(ctx, &a, &l, &a, &a, &a, &d), "attention_decode"); /* k past t */
    clf_tensor_free(&t), clf_tensor_free(&l);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------ the decoding step */

static clf_tensor rand_up(clf_ctx_t *ctx, size_t n, unsigned long long seed, float lo, float hi)
{
    float *x = ot_rand(n, seed, lo, hi);
    clf_tensor t = tu_upload(ctx, x, n);
    free(x);
    return t;
}

/* T steps of clf_mha_decode_step on two caches fed alike, one through the
 * decode kernels and one through the tiled forward: outputs within 2e-6,
 * and the profile shows which kernels each ran. */
static void step_case(size_t B, size_t H, size_t D, size_t T, bool self, int window, size_t S, const int32_t *kl)
{
    clf_ctx_t *ctx = tu_ctx();
    tu_setting("CLF_DECODE_ATTN", NULL);
    float s = 1.0f / sqrtf((float)D);
    struct clf_mha_params p = {rand_up(ctx, D * 3 * D, 1, -2 * s, 2 * s), rand_up(ctx, 3 * D, 2, -0.5f, 0.5f),
                               rand_up(ctx, D * D, 3, -s, s), rand_up(ctx, D, 4, -0.5f, 0.5f)};
    struct clf_kv_cache c[2];
    clf_tensor mem = {0}, tkl = {0};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(clf_kv_cache_init(ctx, &c[i], B, H, D, T, self, S), CLF_OK, "%s", clf_ctx_error(ctx));
    if (!self) {
        mem = rand_up(ctx, B * S * D, 5, -1, 1);
        if (kl)
            tkl = tu_upload_ints(ctx, kl, B);
        for (int i = 0; i < 2; i++)
            cr_assert_eq(clf_kv_cache_memory_set(ctx, &c[i], &mem, kl ? &tkl : NULL, &p), CLF_OK, "%s",
                         clf_ctx_error(ctx));
    }
    cr_assert_eq(clf_ctx_profile_start(ctx), CLF_OK);
    clf_tensor y[2] = {rand_up(ctx, B * D, 6, 0, 1), rand_up(ctx, B * D, 6, 0, 1)};
    for (size_t t = 0; t < T; t++) {
        clf_tensor x = rand_up(ctx, B * D, 100 + t, -1, 1);
        cr_assert_eq(clf_mha_decode_step(ctx, &y[0], &x, &c[0], &p, window, t), CLF_OK, "%s", clf_ctx_error(ctx));
        tu_setting("CLF_DECODE_ATTN", "tiled");
        cr_assert_eq(clf_mha_decode_step(ctx, &y[1], &x, &c[1], &p, window, t), CLF_OK, "%s", clf_ctx_error(ctx));
        tu_setting("CLF_DECODE_ATTN", NULL);
        float *got = tu_download(ctx, &y[0], B * D), *want = tu_download(ctx, &y[1], B * D);
        char what[128];
        snprintf(what, sizeof what, "decode step self=%d window=%d D=%zu H=%zu step %zu", self, window, D, H, t);
        cr_assert(tu_close(what, got, want, B * D, 2e-6, 2e-6), "%s", what);
        free(got), free(want);
        clf_tensor_free(&x);
    }
    struct clf_profile_entry *prof = NULL;
    size_t nprof = 0;
    cr_assert_eq(clf_ctx_profile_report(ctx, &prof, &nprof), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_expect_eq(tu_profile_calls(prof, nprof, "attn_dec_part"), T, "attn_dec_part ran %u times in %zu steps",
                 tu_profile_calls(prof, nprof, "attn_dec_part"), T);
    cr_expect_eq(tu_profile_calls(prof, nprof, "attn_fwd"), T, "attn_fwd ran %u times in %zu steps",
                 tu_profile_calls(prof, nprof, "attn_fwd"), T);
    free(prof);
    for (int i = 0; i < 2; i++)
        clf_kv_cache_free(&c[i]), clf_tensor_free(&y[i]);
    clf_tensor_free(&mem), clf_tensor_free(&tkl);
    clf_tensor_free(&p.w_in), clf_tensor_free(&p.b_in), clf_tensor_free(&p.w_out), clf_tensor_free(&p.b_out);
    clf_ctx_free(ctx);
}

Test(decode_attn, self_step_matches_tiled, .timeout = TU_TIMEOUT(300))
{
    step_case(3, 2, 16, 70, true, -1, 0, NULL); /* d_k 8, past 64 positions */
    step_case(2, 4, 12, 20, true, 5, 0, NULL);  /* d_k 3, restricted */
}

Test(decode_attn, cross_step_matches_tiled, .timeout = TU_TIMEOUT(300))
{
    const int32_t kl[3] = {65, 1, 30};
    step_case(3, 2, 24, 5, false, -1, 65, kl); /* d_k 12, padded memory rows */
    step_case(2, 1, 40, 3, false, -1, 300, NULL);
}
