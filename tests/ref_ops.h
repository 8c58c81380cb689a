/* ref_ops.h: plain-C references of the ops of clformer_ops.h, for the
 * tests. Float in and out as the device ops; sums in double. The *_d
 * variants run in double throughout, for finite differences. */
#ifndef CLF_REF_OPS_H
#define CLF_REF_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "clformer.h"

/* x rounded to half (float16) and back, to nearest even, subnormals
 * included (|x| ≤ 65504), as vstore_half_rte rounds. */
float ref_half_round(float x);

/* dropout's factor for element i (0 or 1/(1-p)), as the device computes it. */
float ref_dropout_factor(const struct clf_dropout *d, size_t i);

/* y (rows, cols) += bias (cols) */
void ref_bias_add(float *y, const float *bias, size_t rows, size_t cols);
/* dbias (cols) += Σ_r dy (rows, cols) */
void ref_bias_backward(float *dbias, const float *dy, size_t rows, size_t cols);
/* y (n) = x (n) + dropout(sub (n)) */
void ref_residual_forward(float *y, const float *x, const float *sub, size_t n, const struct clf_dropout *d);
/* dsub (n) = dropout'(dy (n)) */
void ref_residual_backward(float *dsub, const float *dy, size_t n, const struct clf_dropout *d);

/* y, x (rows, cols); valid (rows) or NULL */
void ref_softmax_forward(float *y, const float *x, size_t rows, size_t cols, const int32_t *valid);
/* dx, y, dy (rows, cols) */
void ref_softmax_backward(float *dx, const float *y, const float *dy, size_t rows, size_t cols);
/* y, x (rows, cols) */
void ref_logsoftmax_forward(float *y, const float *x, size_t rows, size_t cols);
/* The k largest of each row of x (rows, cols), best first, equal values
 * the lower column first, column skip (>= 0) left out: val, idx (rows, k),
 * idx -1 and val -1e30 past the row; at (rows) = x[row, pick]. */
void ref_topk(float *val, int32_t *idx, float *at, const float *x, size_t rows, size_t cols, size_t k, int skip,
              size_t pick);
/* y, x (cols): one row in double; valid length len */
void ref_softmax_row_d(double *y, const double *x, size_t cols, size_t len);

/* y, x (rows, d); mean, rstd (rows); gain, bias (d) */
void ref_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gain, const float *bias,
                           size_t rows, size_t d, float eps);
/* y, x (d): one row in double */
void ref_layernorm_row_d(double *y, const double *x, const double *gain, const double *bias, size_t d, double eps);

/* y (rows, d), hidden (rows, dff) = dropout(relu(x·W1 + b1)); x (rows, d),
 * w1 (d, dff), b1 (dff), w2 (dff, d), b2 (d). */
void ref_ffn_forward(float *y, float *hidden, const float *x, const float *w1, const float *b1, const float *w2,
                     const float *b2, size_t rows, size_t d, size_t dff, const struct clf_dropout *drop);
/* the same in double, no hidden output */
void ref_ffn_forward_d(double *y, const double *x, const double *w1, const double *b1, const double *w2,
                       const double *b2, size_t rows, size_t d, size_t dff, const struct clf_dropout *drop);
/* act(z) in double, act an enum clf_activation */
double ref_act_d(double z, int act);
/* the FFN with activation act: hidden as the op keeps it (ReLU: after the
 * activation and dropout; SiLU, GELU: x·W1 without b1) */
void ref_ffn_forward_act(float *y, float *hidden, const float *x, const float *w1, const float *b1, const float *w2,
                         const float *b2, size_t rows, size_t d, size_t dff, const struct clf_dropout *drop, int act);
void ref_ffn_forward_d_act(double *y, const double *x, const double *w1, const double *b1, const double *w2,
                           const double *b2, size_t rows, size_t d, size_t dff, const struct clf_dropout *drop,
                           int act);

/* PE(t, j) for model width d, in double */
double ref_sinusoid(size_t t, size_t j, size_t d);
/* the same in Marian's layout (sin in the first ⌈d/2⌉ columns, cos after) */
double ref_sinusoid_halves(size_t t, size_t j, size_t d);
/* y (batch*len, d) = dropout(table[ids]·scale + pos); table (V, d);
 * learned (max_len, d) or NULL; ids (batch*len) */
void ref_embed_forward(float *y, const int32_t *ids, const float *table, const float *learned, size_t d,
                       const struct clf_embed_desc *desc);
/* dtable (V, d) += ; dlearned (max_len, d) += or NULL; dy (batch*len, d) */
void ref_embed_backward(float *dtable, float *dlearned, const float *dy, const int32_t *ids, size_t d,
                        const struct clf_embed_desc *desc);

/* loss of logits (n, V) against targets (n) as PyTorch's
 * CrossEntropyLoss(ignore_index=pad, label_smoothing=eps, reduction='sum');
 * *count receives the non-pad rows; dlogits (n, V) or NULL receives the
 * gradient times grad_scale (zero rows for pads). In double. */
double ref_loss_d(double *dlogits, size_t *count, const double *logits, const int32_t *targets, size_t n, size_t V,
                  const struct clf_loss_desc *desc);

/* one Adam step on n floats, as torch.optim.Adam with clip_grad_norm_ */
void ref_adam_step(float *params, float *m, float *v, const float *grads, size_t n, const struct clf_adam_desc *d);

#endif
