/* clformer/advanced/ops.h: the Transformer's device ops, forward and
 * backward. The advanced tier (unstable); contexts and tensors are
 * clformer/advanced/runtime.h's.
 *
 * Every op enqueues work on the context's queue and returns without waiting
 * (clf_embed_index_init and _update, which upload a host index, do not
 * wait either: the index keeps its own copy of what it uploads).
 * Tensors are row-major f32; "rows" is numel / last dimension unless said
 * otherwise. Int32 inputs (ids, targets, valid lengths) are i32 tensors
 * (CLF_I32) read from offset 0 (checked, as is their size). Bad shapes return CLF_ERR_ARG with a message naming
 * the op and the shapes (clf_ctx_error).
 *
 * Gradient convention: backward ops ADD into parameter gradients (+=) and
 * OVERWRITE activation gradients (dx, dh, dsub). Results are deterministic:
 * no atomics, fixed reduction orders (two-stage where a sum spans
 * work-groups), so equal inputs give bit-identical outputs run after run on
 * one device.
 *
 * Some ops need temporary device memory (column-sum partials, the FFN's
 * hidden gradient, per-row losses); they take it from the context's
 * scratch arena, a few grow-only buffers kept from call to call
 * (host/runtime/scratch.c), so a call allocates nothing once the buffers
 * are large enough. The arena is the context's and takes no lock. */
#ifndef CLFORMER_OPS_H
#define CLFORMER_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "clformer/advanced/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* ---------------------------------------------------------------- dropout */

/* Dropout from Philox4x32-10 (cl/philox.h; the host copy is
 * host/ops/philox.h), keyed by seed and counted by (element index, stream,
 * step), so a mask is recomputed in backward instead of stored. Element i of
 * a tensor is kept when u >= p, u = (word >> 8)·2^-24 with word the (i%4)th
 * output of the block at counter {i/4, i/2^34, stream, step}, key
 * {seed low 32, seed high 32}. Kept units are scaled by 1/(1-p) (computed in
 * float). p == 0 (or a NULL descriptor) disables dropout; p must be in [0,1).
 * Use one stream id per tensor use within a step. */
struct clf_dropout {
    float p;
    uint64_t seed;
    uint32_t step;
    uint32_t stream;
};

/* ------------------------------------------------------------ elementwise */

/* y (rows, cols) += bias (cols), in place; cols = bias's numel, which must
 * divide y's numel. */
clf_status clf_bias_add(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *bias);
/* C (m×n, rows contiguous: ld n) = op(A)·op(B) + bias (n floats added to
 * every row), alpha 1: clf_gemm then clf_bias_add, with the same sums; on
 * the host backend one call that adds the bias while C is mapped. */
clf_status clf_gemm_bias(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a, const struct clf_mat *b,
                         const clf_tensor *bias, const struct clf_mat *c);
/* dbias (cols) += column sums of dy (rows, cols), cols = dbias's numel.
 * Two-stage: partial sums over fixed row chunks, then the chunks in order. */
clf_status clf_bias_backward(clf_ctx_t *ctx, clf_tensor *dbias, const clf_tensor *dy);
/* y = a + b elementwise (same numel); y may alias a or b. */
clf_status clf_add(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *a, const clf_tensor *b);

/* x[r, col] = value in every row r of x (rows, cols = last dim): beam
 * search's way to forbid a token (pad, as transformers' bad_words_ids). */
clf_status clf_column_fill(clf_ctx_t *ctx, clf_tensor *x, size_t col, float value);

/* Residual + dropout: y = x + dropout(sub), same numel; y may alias x or
 * sub. The mask is indexed by the element's position in sub. */
clf_status clf_residual_forward(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *x, const clf_tensor *sub,
                                const struct clf_dropout *drop);
/* dsub = dropout'(dy) (dx is dy itself); dsub may alias dy. */
clf_status clf_residual_backward(clf_ctx_t *ctx, clf_tensor *dsub, const clf_tensor *dy,
                                 const struct clf_dropout *drop);

/* ---------------------------------------------------------------- softmax */

/* Softmax over the last dimension; rows = numel / last dim. valid: i32
 * tensor (rows) of per-row valid lengths or NULL; entries j >= valid[r] get
 * probability 0; a row with valid <= 0 gives zeros (lengths past the row are
 * clamped to it). y may alias x. */
clf_status clf_softmax_forward(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *x, const clf_tensor *valid);
/* dx = y·(dy - Σ y·dy) per row; dx may alias dy. */
clf_status clf_softmax_backward(clf_ctx_t *ctx, clf_tensor *dx, const clf_tensor *y, const clf_tensor *dy);
/* log-softmax over the last dimension (decoding uses it on logits); y may
 * alias x. */
clf_status clf_logsoftmax_forward(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *x);
/* lse (rows) = the log-sum-exp of each row of x that clf_logsoftmax_forward
 * subtracts, to the bit. */
clf_status clf_lse_rows(clf_ctx_t *ctx, clf_tensor *lse, const clf_tensor *x);
/* The k (1..64) largest entries of each row of x (rows, cols), best first
 * (equal values: the lower column first): val (rows, k), idx int32
 * (rows, k); column skip (if >= 0) is left out, and a row with fewer than
 * k columns left pads idx with -1. at (rows) = x[row, pick]. With shift
 * (rows, or NULL) the entries are x - shift[row]: log-softmax's values from
 * the logits and clf_lse_rows, as clf_logsoftmax_forward computes them,
 * without writing them. Beam search uses it on log-probabilities: only
 * 2·beam candidates a row reach the host. */
clf_status clf_topk_rows(clf_ctx_t *ctx, clf_tensor *val, clf_tensor *idx, clf_tensor *at, const clf_tensor *x,
                         const clf_tensor *shift, size_t k, int skip, size_t pick);

/* ------------------------------------------------------------- layer norm */

/* Layer norm over the last dimension d: y = (x - mean)·rstd·gain + bias,
 * rstd = 1/sqrt(var + eps), var the biased variance. mean, rstd: (rows),
 * written for the backward pass. gain, bias: (d). */
clf_status clf_layernorm_forward(clf_ctx_t *ctx, clf_tensor *y, clf_tensor *mean, clf_tensor *rstd,
                                 const clf_tensor *x, const clf_tensor *gain, const clf_tensor *bias, float eps);
/* sum = x + dropout(sub) (clf_residual_forward's, mask and sums to the
 * bit), then y = LN(sum) as clf_layernorm_forward: one kernel for a
 * post-norm residual. drop may be NULL (none). y may alias x; sum must not
 * alias y. */
clf_status clf_residual_layernorm_forward(clf_ctx_t *ctx, clf_tensor *y, clf_tensor *mean, clf_tensor *rstd,
                                          clf_tensor *sum, const clf_tensor *x, const clf_tensor *sub,
                                          const clf_tensor *gain, const clf_tensor *bias, float eps,
                                          const struct clf_dropout *drop);
/* dx overwritten (may alias dy); dgain, dbias += (two-stage, deterministic);
 * dgain and dbias may each be NULL. */
clf_status clf_layernorm_backward(clf_ctx_t *ctx, clf_tensor *dx, clf_tensor *dgain, clf_tensor *dbias,
                                  const clf_tensor *dy, const clf_tensor *x, const clf_tensor *mean,
                                  const clf_tensor *rstd, const clf_tensor *gain);
/* The backward of clf_residual_layernorm_forward from dy (y's gradient):
 * dx (x's and sum's gradient) as clf_layernorm_backward of sum, and
 * dsub = dropout'(dx) as clf_residual_backward, both to the bit, in one
 * kernel; dgain, dbias += as there. dx may alias dy; dsub aliases neither. */
clf_status clf_residual_layernorm_backward(clf_ctx_t *ctx, clf_tensor *dx, clf_tensor *dsub, clf_tensor *dgain,
                                           clf_tensor *dbias, const clf_tensor *dy, const clf_tensor *sum,
                                           const clf_tensor *mean, const clf_tensor *rstd, const clf_tensor *gain,
                                           const struct clf_dropout *drop);

/* -------------------------------------------------------------------- FFN */

/* Position-wise FFN: y = dropout(act(x·W1 + b1))·W2 + b2, x (rows, d),
 * y (rows, d). Weights stored (in, out) row-major so y = x·W. Both products
 * go through clf_gemm; bias + activation + dropout are fused in one kernel.
 * act: ReLU (the paper's), SiLU alias swish (z·σ(z)) or GELU in its exact
 * erf form (z·Φ(z), PyTorch's and transformers' "gelu").
 * hidden (rows, d_ff) keeps what backward needs and nothing more: with ReLU
 * the activation after ReLU AND dropout (scaled; a unit's gradient passes
 * iff it is > 0), so no mask or pre-dropout copy is stored; with SiLU and
 * GELU the pre-activation x·W1 without b1 (the activation goes through a
 * temporary, and the backward recomputes it there). */
enum clf_activation { CLF_ACT_RELU = 0, CLF_ACT_SILU = 1, CLF_ACT_GELU = 2 };
struct clf_ffn_params {
    clf_tensor w1 /* (d, d_ff) */, b1 /* (d_ff) */, w2 /* (d_ff, d) */, b2 /* (d) */;
    enum clf_activation act;  /* read from the weights' struct; a gradients' struct ignores it */
};
clf_status clf_ffn_forward(clf_ctx_t *ctx, clf_tensor *y, clf_tensor *hidden, const clf_tensor *x,
                           const struct clf_ffn_params *p, const struct clf_dropout *drop);
/* dx overwritten; grads->w1, b1, w2, b2 += ; hidden (as forward left it) is
 * overwritten with the gradient of the pre-activation. Uses one temporary
 * of (rows, d_ff) (as the forward does with SiLU and GELU). drop must be
 * the forward's. */
clf_status clf_ffn_backward(clf_ctx_t *ctx, clf_tensor *dx, struct clf_ffn_params *grads, const clf_tensor *dy,
                            const clf_tensor *x, clf_tensor *hidden, const struct clf_ffn_params *p,
                            const struct clf_dropout *drop);

/* ------------------------------------------------------------- embeddings */

/* y[r] = dropout(table[ids[r]]·scale + pos(t)), t = pos_offset + r % len.
 * pos is the sinusoidal table when learned is NULL, computed in float once
 * per call into a (len, d) temporary, in one of two layouts: interleaved
 * (the paper's: PE(t,2i) = sin(t/10000^(2i/d)), PE(t,2i+1) = cos(...)) or
 * halves (Marian's, transformers' MarianSinusoidalPositionalEmbedding:
 * with h = ⌈d/2⌉, PE(t,i) = sin(t/10000^(2i/d)) for i < h and
 * PE(t,h+i) = cos(t/10000^(2i/d))); else learned (max_len, d) with
 * pos_offset + len <= max_len (layout ignored).
 * With `positions` (i32 (batch·len), forward only) row r is at position
 * positions[r] instead, each below pos_end (<= max_len when learned):
 * decoding's rows at steps of their own.
 * An id outside [0, V) yields NaN in its row (the ids stay on the device). */
enum clf_pos_layout { CLF_POS_INTERLEAVED = 0, CLF_POS_HALVES = 1 };
struct clf_embed_desc {
    size_t batch, len, pos_offset;
    const clf_tensor *positions;  /* NULL: pos_offset + r % len */
    size_t pos_end;               /* with positions: every one is below it */
    float scale;
    struct clf_dropout drop;
    enum clf_pos_layout layout;
};
clf_status clf_embed_forward(clf_ctx_t *ctx, clf_tensor *y /* (batch*len, d) */, const clf_tensor *ids /* i32 (batch*len) */,
                             const clf_tensor *table /* (V, d) */, const clf_tensor *learned /* (max_len, d) or NULL */,
                             const struct clf_embed_desc *desc);
/* pos (len, d) = the sinusoids of positions 0..len-1 in `layout`, the
 * values clf_embed_forward computes at each call without a learned table:
 * passed to it as one, a decoder that asks for the same positions step
 * after step computes them once. */
clf_status clf_pos_sinusoid_table(clf_ctx_t *ctx, clf_tensor *pos, enum clf_pos_layout layout);

/* The backward pass's index, built on the host from the ids (build it
 * when the ids are uploaded: nothing is read back from the device): rows
 * grouped by token id (ids ascending, rows ascending within an id).
 * Opaque; init and update check every id is in [0, vocab). update rebuilds
 * it for new ids in the same index's buffers (grown when n is larger), for
 * the next batch. */
struct clf_embed_index;
clf_status clf_embed_index_init(clf_ctx_t *ctx, struct clf_embed_index **ix, const int32_t *ids, size_t n,
                                size_t vocab);
clf_status clf_embed_index_update(clf_ctx_t *ctx, struct clf_embed_index *ix, const int32_t *ids, size_t n);
void clf_embed_index_free(struct clf_embed_index *ix);
/* dtable (V, d) += scale·dropout'(dy) summed per id, one work-group column
 * per distinct id, rows in the index's order; dlearned (max_len, d) +=
 * dropout'(dy) summed over the batch (or NULL). dy (batch*len, d). */
clf_status clf_embed_backward(clf_ctx_t *ctx, clf_tensor *dtable, clf_tensor *dlearned, const clf_tensor *dy,
                              const struct clf_embed_index *ix, const struct clf_embed_desc *desc);

/* ------------------------------------------------------------------- loss */

/* Output projection + label-smoothed cross-entropy, matching PyTorch's
 * CrossEntropyLoss(ignore_index=pad_id, label_smoothing=eps, reduction='sum')
 * on h·Eᵀ (+ bias): per non-pad row (1-eps)·nll + eps·mean_over_V(-log p).
 * h (N, d), table E (V, d), targets int32 (N). logits (N, V) is scratch: it
 * holds the logits, then is overwritten in place by dlogits·grad_scale.
 * loss (2) receives [sum of losses, count of non-pad rows] on the device.
 * dh (N, d) overwritten and dtable (V, d) += , both scaled by grad_scale;
 * either may be NULL (with both NULL: evaluation, loss only, and logits
 * keeps the logits). The sums run in a fixed order. A target
 * outside [0, V) that is not pad_id makes the loss NaN. */
struct clf_loss_desc {
    float smoothing;
    int32_t pad_id;
    float grad_scale;
    const clf_tensor *bias;  /* (V) added to every row of logits (Marian's final_logits_bias), or NULL */
    clf_tensor *dbias;       /* (V) += Σ_rows dlogits·grad_scale, or NULL (none, or the bias is frozen) */
};
clf_status clf_loss_forward_backward(clf_ctx_t *ctx, clf_tensor *loss, clf_tensor *dh, clf_tensor *dtable,
                                     clf_tensor *logits, const clf_tensor *h, const clf_tensor *table,
                                     const clf_tensor *targets /* i32 (N) */, const struct clf_loss_desc *desc);

/* ------------------------------------------------------------------- Adam */

/* Adam as PyTorch's torch.optim.Adam (bias correction, L2 weight decay added
 * to the gradient) over one flat buffer of n floats. Optional global-norm
 * clipping (clip_norm > 0) as torch.nn.utils.clip_grad_norm_: the norm is
 * computed on the device (fixed-order two-stage sum) and the factor
 * min(1, clip_norm/(norm + 1e-6)) applied inside the update, with no host
 * round trip. grads are left unchanged. scratch: at least
 * clf_adam_scratch_size(ctx, n) floats (it grows with the device's compute
 * units); after the step scratch[0] holds the
 * gradient norm before clipping when clip_norm > 0. */
struct clf_adam_desc {
    float lr, beta1, beta2, eps, clip_norm, weight_decay /* 0 */;
    uint32_t step /* 1-based */;
};
/* The paper's settings: beta1 0.9, beta2 0.98, eps 1e-9, no clipping, no
 * weight decay, step 1; lr as given. */
struct clf_adam_desc clf_adam_defaults(float lr);
size_t clf_adam_scratch_size(clf_ctx_t *ctx, size_t n);
clf_status clf_adam_step(clf_ctx_t *ctx, clf_tensor *params, clf_tensor *m, clf_tensor *v, const clf_tensor *grads,
                         clf_tensor *scratch, const struct clf_adam_desc *desc);
/* The paper's schedule: d_model^-0.5 · min(step^-0.5, step·warmup^-1.5),
 * step ≥ 1 (step 0 is treated as 1; warmup 0 as no warm-up). Host function. */
float clf_lr_schedule(size_t d_model, size_t step, size_t warmup);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
