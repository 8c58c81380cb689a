/* attention_internal.h: what attention.c, mha.c and tuning.c share. */
#ifndef CLF_ATTENTION_INTERNAL_H
#define CLF_ATTENTION_INTERNAL_H

#include "runtime/internal.h"

/* The kernels of cl/attention.cl for head dimension d_k with the tiles in
 * force (tuning clamped to the device and to the compiled kernels' limits). */
struct clf_attn_kernels {
    cl_kernel fwd, delta, dkdv, dq, mask, append, gather;
    struct clf_attention_tuning tune;
    size_t d_k;
};
clf_status clf_attn_kernels_get(clf_ctx_t *ctx, size_t d_k, struct clf_attn_kernels *out);

#endif
