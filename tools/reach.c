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
 * (clformer/advanced/runtime.h). */
#include <stdlib.h>
#include <string.h>

#include <clformer/advanced/rand.h>
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
    /* clf_model_side_grad refuses a bad side or a length past max_len with
     * its message on ctx; an empty sequence or a row past its end is this
     * study's own refusal, without one (a program over the library records
     * no message on ctx; compare-attention, the one caller, passes
     * neither). */
    if (n < 1 || pos >= n)
        return CLF_ERR_ARG;
    const bool dec = side == CLF_SIDE_DECODER;
    clf_status st = CLF_OK;
    const size_t shape[2] = {n, d};
    clf_tensor x = {0}, mem = {0}, dy = {0}, dx = {0};
    float *host = malloc(n * d * sizeof *host);
    if (!host)
        return CLF_ERR_MEMORY;
    uint32_t seed = 0x5eed0000u + (uint32_t)n;
    /* the encoder's embeddings, which the decoder's cross-attention also
     * reads as its memory; then the decoder's own */
    fill(host, n * d, &seed);
    if ((st = clf_tensor_init(ctx, &x, 2, shape)) || (st = clf_tensor_upload(ctx, &x, host)))
        goto fail;
    if (dec) {
        mem = x;
        x = (clf_tensor){0};
        fill(host, n * d, &seed);
        if ((st = clf_tensor_init(ctx, &x, 2, shape)) || (st = clf_tensor_upload(ctx, &x, host)))
            goto fail;
    }
    /* a random (not constant: LayerNorm's backward cancels a constant) gradient on one row */
    memset(host, 0, n * d * sizeof *host);
    for (size_t k = 0; k < d; k++)
        host[pos * d + k] = uniform(&seed);
    if ((st = clf_tensor_init(ctx, &dy, 2, shape)) || (st = clf_tensor_upload(ctx, &dy, host)) ||
        (st = clf_tensor_init(ctx, &dx, 2, shape)) ||
        (st = clf_model_side_grad(m, side, &x, dec ? &mem : NULL, &dy, &dx)) ||
        (st = clf_tensor_download(ctx, &dx, host)))
        goto fail;
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
