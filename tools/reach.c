/* reach.c: how far information travels through a stack of self-attention
 * layers, measured rather than assumed: one sequence (batch 1, no padding)
 * of random embeddings (n, d) goes forward through the encoder or the
 * decoder, a random gradient is put on output row `pos` only, and the
 * backward pass runs to the embeddings; the rows of their gradient (n, d)
 * that are not exactly zero are the positions that output can depend on. Masked
 * attention probabilities are exactly zero and every other op works row by
 * row, so the count is exact (full attention could only lose a position to
 * an underflowing exp, which random embeddings of this scale do not
 * reach). The paper's "maximum path length" made visible: with radius r and
 * L layers the encoder reaches min(n, 1 + 2·L·r) positions around a central
 * output, the causal decoder min(pos + 1, 1 + L·r).
 *
 * The layers alone, between the embeddings and the output, are what this
 * study runs: the model's one seam for it is clf_model_side_grad
 * (host/model/side.h). */
#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "base/status.h"
#include "model/side.h"
#include "reach.h"

static float uniform(uint32_t *s)
{
    return clf_uniform(s) * 2.0f - 1.0f;
}

static void fill(float *x, size_t n, uint32_t *seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = uniform(seed);
}

clf_status reach_measure(clf_ctx_t *ctx, clf_model_t *m, enum clf_side side, size_t n, size_t pos, struct reach *out)
{
    const struct clf_model_config *c = clf_model_config(m);
    const size_t d = (size_t)c->d_model;
    memset(out, 0, sizeof *out);
    if (side != CLF_SIDE_ENCODER && side != CLF_SIDE_DECODER)
        return clf_error_set(ctx, CLF_ERR_ARG, "reach: side is %d, want CLF_SIDE_ENCODER or CLF_SIDE_DECODER",
                             (int)side);
    const bool dec = side == CLF_SIDE_DECODER;
    if (n < 1 || n > (size_t)c->max_len || pos >= n)
        return clf_error_set(ctx, CLF_ERR_ARG, "reach: length %zu (want 1..max_len %d) and position %zu (want < length)",
                             n, c->max_len, pos);
    clf_status st = CLF_OK;
    const size_t shape[2] = {n, d};
    clf_tensor x = {0}, mem = {0}, dy = {0}, dx = {0};
    float *host = malloc(n * d * sizeof *host);
    if (!host)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    uint32_t seed = 0x5eed0000u + (uint32_t)n;
    /* the encoder's embeddings, which the decoder's cross-attention also
     * reads as its memory; then the decoder's own */
    fill(host, n * d, &seed);
    CLF_TRY(clf_tensor_init(ctx, &x, 2, shape));
    CLF_TRY(clf_tensor_upload(ctx, &x, host));
    if (dec) {
        mem = x;
        x = (clf_tensor){0};
        fill(host, n * d, &seed);
        CLF_TRY(clf_tensor_init(ctx, &x, 2, shape));
        CLF_TRY(clf_tensor_upload(ctx, &x, host));
    }
    /* a random (not constant: LayerNorm's backward cancels a constant) gradient on one row */
    memset(host, 0, n * d * sizeof *host);
    for (size_t k = 0; k < d; k++)
        host[pos * d + k] = uniform(&seed);
    CLF_TRY(clf_tensor_init(ctx, &dy, 2, shape));
    CLF_TRY(clf_tensor_upload(ctx, &dy, host));
    CLF_TRY(clf_tensor_init(ctx, &dx, 2, shape));
    CLF_TRY(clf_model_side_grad(m, side, &x, dec ? &mem : NULL, &dy, &dx));
    CLF_TRY(clf_tensor_download(ctx, &dx, host));
    out->first = n;
    for (size_t i = 0; i < n; i++) {
        bool any = false;
        for (size_t k = 0; k < d && !any; k++)
            any = host[i * d + k] != 0.0f;
        if (any) {
            out->count++;
            if (out->first == n)
                out->first = i;
            out->last = i;
        }
    }
    out->contiguous = out->count > 0 && out->last - out->first + 1 == out->count;
fail:
    clf_tensor_free(&x);
    clf_tensor_free(&mem);
    clf_tensor_free(&dy);
    clf_tensor_free(&dx);
    free(host);
    return st;
}

size_t reach_formula(enum clf_side side, size_t n, size_t pos, int layers, int window)
{
    if (window < 0)
        return side == CLF_SIDE_DECODER ? pos + 1 : n;
    size_t span = (size_t)layers * (size_t)window;
    if (side == CLF_SIDE_DECODER) {
        size_t lo = pos > span ? pos - span : 0;
        return pos - lo + 1;
    }
    size_t lo = pos > span ? pos - span : 0, hi = pos + span < n - 1 ? pos + span : n - 1;
    return hi - lo + 1;
}
