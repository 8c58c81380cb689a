/* test_scratch.c: the context's scratch arena. Ops and GEMMs called on
 * every step create device buffers on their first call only: after one
 * training step and one beam search, repeating them allocates nothing
 * (arena counter), and results stay right. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "testutil.h"

/* A GEMM large enough for CLBlast's indirect kernel, with offsets and a
 * transpose so that it needs padded copies: they go to the arena's GEMM
 * slot, made once. */
Test(scratch, gemm_temp_buffer_is_kept)
{
    clf_ctx_t *ctx = tu_ctx();
    /* CLBlast's temporary is what is watched (the host's BLAS needs none) */
    cr_assert_eq(clf_ctx_gemm_set(ctx, CLF_GEMM_CLBLAST), CLF_OK, "%s", clf_ctx_error(ctx));
    enum { M = 301, N = 257, K = 263, OFF = 3 };
    float *a = malloc((OFF + M * K) * 4), *b = malloc((OFF + K * N) * 4), *want = malloc(M * N * 4);
    tu_fill(a, OFF + M * K, 1, -1, 1);
    tu_fill(b, OFF + K * N, 2, -1, 1);
    for (size_t i = 0; i < M; i++)  /* C = A·Bᵀ with B stored (N, K) */
        for (size_t j = 0; j < N; j++) {
            double acc = 0;
            for (size_t p = 0; p < K; p++)
                acc += (double)a[OFF + i * K + p] * b[OFF + j * K + p];
            want[i * N + j] = (float)acc;
        }
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
    cr_assert_gt(ctx->scratch[CLF_SCRATCH_GEMM].bytes, 0, "CLBlast asked for no temporary buffer");
    cr_assert_eq(clf_scratch_allocs(ctx), after_first, "gemm: %u buffers after the first call, %u after four",
                 after_first, clf_scratch_allocs(ctx));
    float *got = tu_download(ctx, &tc, nc);
    cr_assert(tu_close("gemm with the arena's temp buffer", got, want, nc, 1e-4, 1e-4));
    free(got), free(a), free(b), free(want);
    clf_tensor_free(&ta), clf_tensor_free(&tb), clf_tensor_free(&tc);
    clf_ctx_free(ctx);
}

/* Training steps (FFN, layer norm, loss, embeddings, column sums, GEMMs)
 * and beam search (KV-cache reorder) allocate no scratch after the first. */
Test(scratch, model_steps_allocate_once, .timeout = 120)
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
    struct clf_translate_opts o = {3, 0.6f, 5, 1, false};
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
