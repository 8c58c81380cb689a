/* ref_attention.h: plain-C double-precision references of attention and
 * of the multi-head attention layer, for the tests. Operands are
 * contiguous: Q (B, H, n_q, d_k), K and V (B, H, n_k, d_k). */
#ifndef CLF_REF_ATTENTION_H
#define CLF_REF_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ref_attn_desc {
    size_t batch, heads, n_q, n_k, d_k;
    const int32_t *key_len; /* (batch) or NULL */
    bool causal;
    int window; /* < 0: off */
    size_t q_pos_offset;
    double scale; /* 0: 1/sqrt(d_k) */
};

/* Whether query row i of sequence b sees key j. */
bool ref_attn_visible(const struct ref_attn_desc *d, size_t b, size_t i, size_t j);

/* o (B, H, n_q, d_k); lse (B, H, n_q) or NULL, -1e30 for a row that sees
 * no key (whose o is zeros). */
void ref_attention_forward(double *o, double *lse, const double *q, const double *k, const double *v,
                           const struct ref_attn_desc *d);

/* Gradients of Σ dO∘O: dq (B,H,n_q,d_k), dk, dv (B,H,n_k,d_k), overwritten. */
void ref_attention_backward(double *dq, double *dk, double *dv, const double *d_o, const double *q,
                            const double *k, const double *v, const struct ref_attn_desc *d);

/* Multi-head attention: y (B·Tq, D) = concat_h(attn(x·Wq+bq, m·Wk+bk,
 * m·Wv+bv))·Wo + bo with m = mem (B·Tkv, D) or x when mem is NULL.
 * w_in (D, 3D) = [Wq | Wk | Wv], b_in (3D), w_out (D, D), b_out (D). */
struct ref_mha_desc {
    size_t batch, heads, d_model, len_q, len_kv;
    const int32_t *key_len;
    bool causal;
    int window;
};
void ref_mha_forward(double *y, const double *x, const double *mem, const double *w_in, const double *b_in,
                     const double *w_out, const double *b_out, const struct ref_mha_desc *d);

/* float ↔ double copies */
double *ref_to_double(const float *x, size_t n);
float *ref_to_float(const double *x, size_t n);

#endif
