/* attention_internal.h: what attention.c, decode_attn.c, kv_cache.c, mha.c
 * and tiles.c share. */
#ifndef CLF_ATTENTION_INTERNAL_H
#define CLF_ATTENTION_INTERNAL_H

#include <math.h>

#include "clformer.h"
#include "runtime/ctx.h"
#include "runtime/program.h"

/* The smallest tiles cl/attention.cl handles: attn_bwd_dkdv reads query
 * rows four at a time, attn_fwd its scores eight at a time. */
#define CLF_ATTENTION_MIN_TILE_Q 4
#define CLF_ATTENTION_MIN_TILE_K 8

/* The kernels of cl/decode_attn.cl for head dimension d_k (decode_attn.c):
 * part is NULL until they are fetched. */
struct clf_attention_dec {
    cl_kernel part, combine;
    size_t wg;     /* attn_dec_part's work-group (its WG) */
    size_t chunk;  /* the most keys one part takes (its CHUNK) */
    size_t d_k;
    const clf_ctx_t *ctx;
};

/* Which of the attention kernels a caller needs: each set is a program of
 * its own, built on first need (a translation never compiles the
 * backward). The forward's (attention.cl: attn_fwd, attn_mask_scores)
 * come with every set. */
enum {
    CLF_ATTN_FWD = 1,   /* attention.cl */
    CLF_ATTN_BWD = 2,   /* attention_bwd.cl: delta, dkdv, dq, fused */
    CLF_ATTN_CACHE = 4, /* kv_cache.cl: append, gather(4), move(4) */
};

/* The kernels of cl/attention.cl and of the sets in `have` for head
 * dimension d_k with the tiles in force (tuning clamped to the device and
 * to the compiled kernels' limits: the forward's, and the backward's once
 * it is fetched), and beside them decoding's (fetched on its first step). */
struct clf_attention_kernels {
    cl_kernel fwd, delta, dkdv, dq, mask, append, gather, gather4, move, move4;
    cl_kernel fused; /* attn_bwd_fused (lanes 1 only), or NULL */
    struct clf_attention_tuning tune;
    size_t d_k;
    unsigned have; /* CLF_ATTN_* sets fetched */
    const clf_ctx_t *ctx; /* the context they belong to */
    struct clf_attention_dec dec;
};
clf_status clf_attention_kernels_get(clf_ctx_t *ctx, size_t d_k, unsigned need, struct clf_attention_kernels *out);
/* Whether the backward is attn_bwd_fused by default (where it exists and
 * fits: CLF_ATTN_BWD=fused or split overrides): only where the device
 * vectorises inside a work-item, a native float vector wider than 1 (PoCL,
 * Intel's CPU runtime). Where it vectorises across work-items (GPUs, Mesa's
 * llvmpipe: width 1) an item's two key rows of K, V, dK and dV (8·d_k
 * floats) are registers it does not have, and llvmpipe took 200 s to
 * compile the kernel at d_k 128 (the split ones 55 s). */
static inline bool clf_attention_fused_by_default(const clf_ctx_t *ctx)
{
    return ctx->native_vec_float > 1;
}
/* The kernels for d_k from *slot (a workspace's cache, tied to ctx), fetched
 * and stored there when missing, for another d_k or short of a set in
 * `need` (CLF_ATTN_*). A set fetched later may shrink the tiles (a GPU's
 * backward kernels may allow fewer work-items than its forward): the
 * forward then runs on the smaller tiles too. Freed by free(). */
clf_status clf_attention_kernels_cached(clf_ctx_t *ctx, struct clf_attention_kernels **slot, size_t d_k,
                                        unsigned need, const struct clf_attention_kernels **out);
/* clf_attention_forward with the kernels given. */
clf_status clf_attention_forward_with(clf_ctx_t *ctx, const struct clf_attention_kernels *ks,
                                      const struct clf_attention_layout *o, clf_tensor *lse,
                                      const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                      const struct clf_attention_layout *v, const struct clf_attention_desc *d);

/* The checks of every forward (attention.c): the descriptor's shape and
 * sizes, and each operand's last element inside its buffer (q and o n_q
 * rows, k and v n_k), each refusal naming op and the operand. */
clf_status clf_attention_check_operands(clf_ctx_t *ctx, const char *op, const struct clf_attention_layout *o,
                                        const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                        const struct clf_attention_layout *v, const struct clf_attention_desc *d);

/* What the launchers pass every kernel of attention.cl and decode_attn.cl. */
static inline float scale_of(const struct clf_attention_desc *d)
{
    return d->scale > 0 ? d->scale : (float)(1.0 / sqrt((double)d->d_k));
}

/* Kernel arguments of one layout: buffer, offset and three strides. */
struct lay {
    cl_mem buf;
    cl_ulong off, bs, hs, rs;
};
static inline struct lay lay_of(const struct clf_attention_layout *l)
{
    return (struct lay){l->buf, l->offset, l->batch_stride, l->head_stride, l->row_stride};
}
#define LAY_ARGS(x) CLF_ARG((x).buf), CLF_ARG((x).off), CLF_ARG((x).bs), CLF_ARG((x).hs), CLF_ARG((x).rs)

/* The mask arguments shared by every kernel. */
struct mask_args {
    cl_mem key_len;
    cl_int has_key_len, heads, n_q, n_k, causal, window, qoff;
    cl_float scale;
};
static inline struct mask_args mask_of(const struct clf_attention_desc *d)
{
    return (struct mask_args){d->key_len ? d->key_len->buf : NULL, d->key_len != NULL, (cl_int)d->heads,
                              (cl_int)d->n_q,  (cl_int)d->n_k,     d->causal,
                              d->window < 0 ? -1 : d->window,      (cl_int)d->q_pos_offset,
                              scale_of(d)};
}
#define MASK_ARGS(m)                                                                                       \
    CLF_ARG((m).key_len), CLF_ARG((m).has_key_len), CLF_ARG((m).heads), CLF_ARG((m).n_q), CLF_ARG((m).n_k), \
        CLF_ARG((m).causal), CLF_ARG((m).window), CLF_ARG((m).qoff), CLF_ARG((m).scale)

/* clf_attention_decode with decoding's kernels cached in *dec (NULL: looked
 * up for this call) and `parts` parts per (sequence, head) (0: chosen from
 * the device and the keys; raised to what the kernel's CHUNK requires;
 * tests force it to reach every path of the combination). */
clf_status clf_attention_decode_with(clf_ctx_t *ctx, struct clf_attention_dec *dec, size_t parts,
                                     const struct clf_attention_layout *o, clf_tensor *lse,
                                     const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                     const struct clf_attention_layout *v, const struct clf_attention_desc *d);
/* The parts clf_attention_decode_with would run for d with kernels dec when
 * asked for `parts` (0: its own choice). */
size_t clf_attention_decode_parts(const clf_ctx_t *ctx, const struct clf_attention_dec *dec,
                                  const struct clf_attention_desc *d, size_t parts);
/* Decoding's attention (clf_mha_decode_step): the decode kernels, cached in
 * ks (the step's attention kernels for d->d_k), or the tiled forward with
 * n_q = 1 when the environment sets CLF_DECODE_ATTN=tiled (the path before
 * them: a reference for tests and measurements). */
clf_status clf_attention_decode_step(clf_ctx_t *ctx, struct clf_attention_kernels *ks,
                                     const struct clf_attention_layout *o, clf_tensor *lse,
                                     const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                     const struct clf_attention_layout *v, const struct clf_attention_desc *d);

#endif
