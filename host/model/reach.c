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
 * output, the causal decoder min(pos + 1, 1 + L·r). */
#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "model_internal.h"

static float uniform(uint32_t *s)
{
    return clf_uniform(s) * 2.0f - 1.0f;
}

clf_status clf_model_reach(clf_model_t *m, enum clf_side side, size_t n, size_t pos, struct clf_reach *out)
{
    clf_ctx_t *ctx = m->ctx;
    const size_t d = (size_t)m->cfg.d_model;
    memset(out, 0, sizeof *out);
    if (side != CLF_SIDE_ENCODER && side != CLF_SIDE_DECODER)
        return clf_error_set(ctx, CLF_ERR_ARG, "reach: side is %d, want CLF_SIDE_ENCODER or CLF_SIDE_DECODER",
                             (int)side);
    const bool dec = side == CLF_SIDE_DECODER;
    if (n < 1 || n > (size_t)m->cfg.max_len || pos >= n)
        return clf_error_set(ctx, CLF_ERR_ARG, "reach: length %zu (want 1..max_len %d) and position %zu (want < length)",
                             n, m->cfg.max_len, pos);
    struct clf_model_shape shape = {1, n, n};
    clf_status st = model_acts_plan(m, &shape);
    if (st != CLF_OK)
        return st;
    struct model_acts *a = &m->acts;
    float *host = malloc(n * d * sizeof *host);
    if (!host)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    uint32_t seed = 0x5eed0000u + (uint32_t)n;
    int32_t len = (int32_t)n;
    if ((st = clf_upload_ints(ctx, &m->in.src_lens.up, &len, 1, &m->in.src_lens.t)) != CLF_OK)
        goto out;
    /* embeddings: the encoder's, which the decoder's cross-attention also reads as its memory */
    clf_tensor enc_in = rows(&a->enc.embedded, n), dec_in = rows(&a->dec.embedded, n), mem = enc_in;
    for (size_t i = 0; i < n * d; i++)
        host[i] = uniform(&seed);
    if ((st = clf_tensor_upload(ctx, &enc_in, host)) != CLF_OK)
        goto out;
    struct side_acts *s = dec ? &a->dec : &a->enc;
    if (dec) {
        for (size_t i = 0; i < n * d; i++)
            host[i] = uniform(&seed);
        if ((st = clf_tensor_upload(ctx, &dec_in, host)) != CLF_OK)
            goto out;
    }
    if ((st = model_side_forward(m, side, 1, n, dec ? &mem : NULL, dec ? n : 0)) != CLF_OK)
        goto out;
    /* a random (not constant: LayerNorm's backward cancels a constant) gradient on one row */
    memset(host, 0, n * d * sizeof *host);
    for (size_t c = 0; c < d; c++)
        host[pos * d + c] = uniform(&seed);
    clf_tensor grad = rows(&s->grad.d_stream, n), dmem = rows(&a->d_mem, n);
    if ((st = clf_tensor_upload(ctx, &grad, host)) != CLF_OK)
        goto out;
    if (dec && (st = clf_tensor_fill(ctx, &dmem, 0.0f)) != CLF_OK)
        goto out;
    if ((st = model_side_backward(m, side, 1, n, dec ? &mem : NULL, dec ? &dmem : NULL, dec ? n : 0)) != CLF_OK)
        goto out;
    if ((st = clf_tensor_download(ctx, &grad, host)) != CLF_OK)
        goto out;
    out->first = n;
    for (size_t i = 0; i < n; i++) {
        bool any = false;
        for (size_t c = 0; c < d && !any; c++)
            any = host[i * d + c] != 0.0f;
        if (any) {
            out->count++;
            if (out->first == n)
                out->first = i;
            out->last = i;
        }
    }
    out->contiguous = out->count > 0 && out->last - out->first + 1 == out->count;
out:
    free(host);
    return st;
}

size_t clf_reach_formula(enum clf_side side, size_t n, size_t pos, int layers, int window)
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
