/* attention_internal.h: what attention.c, mha.c and tuning.c share. */
#ifndef CLF_ATTENTION_INTERNAL_H
#define CLF_ATTENTION_INTERNAL_H

#include "runtime/internal.h"

/* The smallest tiles cl/attention.cl handles: attn_bwd_dkdv reads query
 * rows four at a time, attn_fwd its scores eight at a time. */
#define CLF_ATTN_MIN_TILE_Q 4
#define CLF_ATTN_MIN_TILE_K 8

/* The kernels of cl/attention.cl for head dimension d_k with the tiles in
 * force (tuning clamped to the device and to the compiled kernels' limits). */
struct clf_attn_kernels {
    cl_kernel fwd, delta, dkdv, dq, mask, append, gather;
    struct clf_attention_tuning tune;
    size_t d_k;
    const clf_ctx_t *ctx; /* the context they belong to */
};
clf_status clf_attn_kernels_get(clf_ctx_t *ctx, size_t d_k, struct clf_attn_kernels *out);
/* The kernels for d_k from *slot (a workspace's cache, tied to ctx), fetched
 * and stored there when missing or for another d_k. Freed by free(). */
clf_status clf_attn_kernels_cached(clf_ctx_t *ctx, struct clf_attn_kernels **slot, size_t d_k,
                                   const struct clf_attn_kernels **out);
/* clf_attention_forward with the kernels given. */
clf_status clf_attn_forward_with(clf_ctx_t *ctx, const struct clf_attn_kernels *ks, const struct clf_attn_layout *o,
                                 clf_tensor *lse, const struct clf_attn_layout *q, const struct clf_attn_layout *k,
                                 const struct clf_attn_layout *v, const struct clf_attention_desc *d);

#endif
