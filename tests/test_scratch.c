/* test_scratch.c: the context's scratch arena. Ops and GEMMs called on
 * every step create device buffers on their first call only: after one
 * training step and one beam search, repeating them allocates nothing
 * (arena counter), and results stay right. */
#include <clblast_c.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ctx.h"
#include "runtime/scratch.h"
#include "testutil.h"

/* The bytes CLBlast's indirect kernel wants for C = A·Bᵀ at these sizes
 * with A and B at offset `off` (0: the direct kernel, no copies). */
static size_t blast_temp_bytes(clf_ctx_t *ctx, size_t m, size_t n, size_t k, size_t off)
{
    cl_command_queue q = clf_ctx_queue(ctx);
    size_t bytes = 0;
    if (CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, m, n, k, off,
                                   k, off, k, 0, n, &q, &bytes) != CLBlastSuccess)
        return 0;
    return bytes;
}

/* A GEMM large enough for CLBlast's indirect kernel, with offsets and a
 * transpose so that it needs padded copies: they go to the arena's GEMM
 * slot, made once. Where the indirect kernel starts depends on the device
 * (CLBlast's database, or our table): the smallest size that needs copies
 * is used. */
Test(scratch, gemm_temp_buffer_is_kept, .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    /* CLBlast's temporary is what is watched (the host's BLAS needs none) */
    cr_assert_eq(clf_ctx_gemm_set(ctx, CLF_GEMM_CLBLAST), CLF_OK, "%s", clf_ctx_error(ctx));
    static const size_t sizes[][3] = {{301, 257, 263}, {613, 577, 521}, {1031, 1009, 1021}};
    enum { OFF = 3 };
    size_t M = 0, N = 0, K = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && !M; s++)
        if (blast_temp_bytes(ctx, sizes[s][0], sizes[s][1], sizes[s][2], OFF) > 0)
            M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
    if (!M) {
        clf_ctx_free(ctx);
        cr_skip_test("CLBlast runs its direct kernel (no copies) up to 1031x1009x1021 on this device");
    }
    float *a = malloc((OFF + M * K) * 4), *b = malloc((OFF + K * N) * 4);
    tu_fill(a, OFF + M * K, 1, -1, 1);
    tu_fill(b, OFF + K * N, 2, -1, 1);
    clf_tensor ta = tu_upload(ctx, a, OFF + M * K), tb = tu_upload(ctx, b, OFF + K * N);
    size_t nc = M * N;
    clf_tensor tc;
    cr_assert_eq(clf_tensor_init(ctx, &tc, 1, &nc), CLF_OK);
    struct clf_mat ma = {ta.buf, OFF, K, false, 0}, mb = {tb.buf, OFF, K, true, 0}, mc = {tc.buf, 0, N, false, 0};
    unsigned after_first = 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(clf_gemm(ctx, M, N, K, 1.0f, &ma, &mb, 0.0f, &mc), CLF_OK, "%s", clf_ctx_error(ctx));
        if (i == 0)
            after_first = clf_scratch_allocs(ctx);
    }
    cr_assert_gt(ctx->scratch[CLF_SCRATCH_GEMM].bytes, 0, "CLBlast's temporary did not come from the arena");
    cr_assert_eq(clf_scratch_allocs(ctx), after_first, "gemm: %u buffers after the first call, %u after four",
                 after_first, clf_scratch_allocs(ctx));
    /* C = A·Bᵀ with B stored (N, K), checked on every 7th row (the
     * reference in double is the slow part at the larger sizes) */
    float *got = tu_download(ctx, &tc, nc);
    for (size_t i = 0; i < M; i += 7)
        for (size_t j = 0; j < N; j++) {
            double acc = 0;
            for (size_t p = 0; p < K; p++)
                acc += (double)a[OFF + i * K + p] * b[OFF + j * K + p];
            cr_assert(fabs(got[i * N + j] - acc) <= 1e-4 + 1e-4 * fabs(acc), "C[%zu,%zu] = %g, want %g", i, j,
                      got[i * N + j], acc);
        }
    free(got), free(a), free(b);
    clf_tensor_free(&ta), clf_tensor_free(&tb), clf_tensor_free(&tc);
    clf_ctx_free(ctx);
}

/* Training steps (FFN, layer norm, loss, embeddings, column sums, GEMMs)
 * and beam search (KV-cache reorder) allocate no scratch after the first. */
Test(scratch, model_steps_allocate_once, .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 9), CLF_OK, "%s", clf_ctx_error(ctx));
    enum { B = 3, S = 6, T = 7 };
    int32_t src[B * S], tin[B * T], tout[B * T];
    for (int i = 0; i < B * S; i++)
        src[i] = i % S == S - 1 ? CLF_EOS_ID : 4 + (i * 7) % 50;
    for (int i = 0; i < B * T; i++) {
        tout[i] = i % T == T - 1 ? CLF_EOS_ID : 4 + (i * 5) % 50;
        tin[i] = i % T == 0 ? CLF_BOS_ID : tout[i - 1];
    }
    struct clf_model_batch batch = {B, S, T, src, tin, tout};
    const int32_t *srcs[B] = {src, src + S, src + 2 * S};
    size_t lens[B] = {S - 1, S - 1, S - 1};
    struct clf_translate_opts o = {3, 0.6f, 5, 1, false, 1, CLF_LENGTH_PENALTY_PAPER, 0};
    struct clf_hypothesis h[B];
    unsigned first = 0;
    for (int step = 1; step <= 3; step++) {
        struct clf_step_opts so = {true, (uint32_t)step, 0.01f};
        double loss, tokens;
        cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
        cr_assert_eq(clf_model_forward_backward(m, &batch, &so, &loss, &tokens), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert_eq(clf_model_adam_step(m, 1e-3f, 1.0f), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert_eq(clf_model_translate(m, srcs, lens, B, &o, h), CLF_OK, "%s", clf_ctx_error(ctx));
        clf_hypotheses_free(h, B);
        if (step == 1)
            first = clf_scratch_allocs(ctx);
    }
    cr_assert_gt(first, 0);
    cr_assert_eq(clf_scratch_allocs(ctx), first, "%u scratch buffers after one step, %u after three", first,
                 clf_scratch_allocs(ctx));
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* clf_memory_stats counts every buffer the library makes: a tensor of
 * 1 MiB and a scratch slot grown to 2 MiB add exactly their bytes to what
 * is held and to the peak, and freeing them takes their bytes back off
 * what is held while the peak stays. */
Test(scratch, device_memory_is_counted, .timeout = TU_TIMEOUT(60))
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_memory_stats a, b, c;
    clf_memory_peak_reset();
    clf_memory_stats(&a);
    cr_assert_eq(a.device_peak_bytes, a.device_bytes, "a reset peak is what is held");
    clf_tensor t;
    cr_assert_eq(clf_tensor_init(ctx, &t, 1, (size_t[]){1 << 18}), CLF_OK, "%s", clf_ctx_error(ctx));
    cl_mem buf;
    cr_assert_eq(clf_scratch_get(ctx, CLF_SCRATCH_WIDE, 2u << 20, &buf), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_memory_stats(&b);
    size_t slot = ctx->scratch[CLF_SCRATCH_WIDE].bytes;  /* the slot may have been larger already */
    cr_assert_geq(slot, 2u << 20);
    cr_assert_geq(b.device_bytes, a.device_bytes + (1u << 20), "the tensor's MiB is held");
    cr_assert_leq(b.device_bytes, a.device_bytes + (1u << 20) + slot);
    cr_assert_eq(b.device_peak_bytes, b.device_bytes);
    clf_tensor_free(&t);
    clf_memory_stats(&c);
    cr_assert_eq(c.device_bytes, b.device_bytes - (1u << 20), "freed, its bytes are no longer held");
    cr_assert_eq(c.device_peak_bytes, b.device_peak_bytes, "the peak stays");
    clf_ctx_free(ctx);
    clf_memory_stats(&c);
    cr_assert_eq(c.device_bytes, 0, "a freed context holds nothing");
}
