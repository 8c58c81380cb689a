/* clformer/advanced/attention.h: scaled dot-product attention (tiled, flash-style,
 * forward and backward; and a naive baseline), the multi-head attention
 * layer, and incremental decoding with a key/value cache. The advanced
 * tier (unstable).
 *
 * Gradient convention (the whole project's): backward ops ADD into
 * parameter gradients (+=) and OVERWRITE activation gradients (dx), unless
 * a function says otherwise (dmem of clf_mha_backward is ADDED to).
 *
 * Masks, combinable, for query row i (position p = i + q_pos_offset among
 * the keys) and key j:
 *   padding     j < key_len[b]
 *   causal      j <= p
 *   restricted  |p - j| <= window   (with causal: p - window <= j <= p)
 * A row that sees no key gives an output of zeros and an lse of
 * CLF_ATTENTION_LSE_EMPTY; its gradients are zero.
 */
#ifndef CLFORMER_ATTENTION_H
#define CLFORMER_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clformer/advanced/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* The log-sum-exp stored for a row that sees no key (a large negative
 * finite value, like the kernels' CLF_NEG_LARGE). */
#define CLF_ATTENTION_LSE_EMPTY (-1.0e30f)

/* Where element (b, h, i, c) of a Q/K/V/O-like operand lives:
 * offset + b*batch_stride + h*head_stride + i*row_stride + c (floats).
 * This lets attention read Q, K, V straight out of a fused projection
 * (B*T, 3*d_model) laid out [q | k | v] with heads contiguous inside each
 * block, and write O as (B*T, d_model) ready for W^O: no transpose copies. */
struct clf_attention_layout {
    cl_mem buf;
    size_t offset, batch_stride, head_stride, row_stride;
};

struct clf_attention_desc {
    size_t batch, heads, n_q, n_k, d_k;
    const clf_tensor *key_len; /* i32 (batch): valid keys per sequence, or NULL for all n_k */
    bool causal;         /* query i sees keys j <= i + q_pos_offset */
    int window;          /* restricted self-attention: |i + q_pos_offset - j| <= window; < 0 = off */
    size_t q_pos_offset; /* position of query row 0 among the keys (incremental decoding) */
    float scale;         /* 0 means 1/sqrt(d_k) */
    /* clf_attention_decode only (the others refuse it): i32, sequence b's
     * key j is in batch row kv_rows[b·kv_rows_stride + j] of k and v (a
     * beam's keys stay in the rows of the hypotheses that computed them);
     * NULL: in row b */
    const clf_tensor *kv_rows;
    size_t kv_rows_stride;
};

/* The largest head dimension the kernels accept. */
#define CLF_ATTENTION_MAX_HEAD_DIM 256

/* Tiled forward: o (layout like q, n_q rows) and one log-sum-exp per query
 * row, lse (batch, heads, n_q) contiguous (numel checked). No n_q×n_k
 * matrix in global memory; key tiles hidden entirely by a mask are skipped
 * (restricted attention costs O(n·r·d)). Natural-log lse of the scaled
 * scores. Enqueues only. Having no workspace, it looks its kernel up on
 * every call (~0.15 ms of host time on PoCL); the MHA layer and decoding
 * cache the kernels in their workspaces. */
clf_status clf_attention_forward(clf_ctx_t *ctx, const struct clf_attention_layout *o, clf_tensor *lse,
                                 const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                 const struct clf_attention_layout *v, const struct clf_attention_desc *d);

/* Decoding's attention: clf_attention_forward for n_q = 1 (one query row
 * per sequence and head, at position q_pos_offset; every mask as there),
 * with the keys split into parts across work-groups (split-K: each part's
 * running max, sum of exponentials and weighted sum of values over its
 * chunk of keys, then a second kernel combines them with the log-sum-exp
 * rescaling) so that short and long key ranges both fill the device. o
 * (layout like q, one row) and lse (batch·heads) as the forward writes them;
 * equal to its results up to the summation order (about 1e-6). The parts
 * and work-groups follow the device (host/attention/decode_attn.c). n_q > 1
 * is CLF_ERR_ARG. Enqueues only; looks its kernels up on every call
 * (decoding caches them in its kv cache). */
clf_status clf_attention_decode(clf_ctx_t *ctx, const struct clf_attention_layout *o, clf_tensor *lse,
                                const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                const struct clf_attention_layout *v, const struct clf_attention_desc *d);

/* Scratch of the backward pass: D_i = rowsum(dO∘O), one float per query
 * row. Size it once for the largest batch·heads·n_q; a backward call with
 * more rows returns CLF_ERR_ARG. */
struct clf_attention_kernels; /* internal: the compiled kernels, cached on first use */
struct clf_attention_workspace {
    clf_tensor delta;  /* (rows) */
    size_t rows;
    struct clf_attention_kernels *kernels; /* internal cache (looking kernels up costs ~0.1 ms each) */
};
clf_status clf_attention_workspace_init(clf_ctx_t *ctx, struct clf_attention_workspace *ws, size_t batch,
                                        size_t heads, size_t n_q);
void clf_attention_workspace_free(struct clf_attention_workspace *ws);

/* Tiled backward (FlashAttention-2 style: probabilities recomputed tile by
 * tile from q, k and lse; one kernel over key tiles for dK and dV, one over
 * query tiles for dQ; deterministic, no atomics). dq, dk, dv are
 * OVERWRITTEN, with layouts like q, k, v (they may point into one fused
 * (B*T, 3d) gradient buffer); o and lse are the forward's outputs. */
clf_status clf_attention_backward(clf_ctx_t *ctx, const struct clf_attention_layout *dq,
                                  const struct clf_attention_layout *dk, const struct clf_attention_layout *dv,
                                  const struct clf_attention_layout *d_o, const struct clf_attention_layout *q,
                                  const struct clf_attention_layout *k, const struct clf_attention_layout *v,
                                  const struct clf_attention_layout *o, const clf_tensor *lse,
                                  struct clf_attention_workspace *ws, const struct clf_attention_desc *d);

/* Scratch of the naive variant: the scores (batch·heads, n_q, n_k) and the
 * probabilities, both materialised. */
struct clf_attention_naive_workspace {
    clf_tensor scores, probs;
    size_t cap;  /* floats in each */
    struct clf_attention_kernels *kernels; /* internal cache */
};
clf_status clf_attention_naive_workspace_init(clf_ctx_t *ctx, struct clf_attention_naive_workspace *ws,
                                              size_t batch, size_t heads, size_t n_q, size_t n_k);
void clf_attention_naive_workspace_free(struct clf_attention_naive_workspace *ws);

/* The naive variant, kept on purpose (benchmark baseline, second opinion in
 * tests): S = scale·Q·Kᵀ with batched GEMMs, masks applied, the softmax op,
 * masked entries zeroed, O = P·V. Forward only. */
clf_status clf_attention_naive_forward(clf_ctx_t *ctx, const struct clf_attention_layout *o,
                                       struct clf_attention_naive_workspace *ws, const struct clf_attention_layout *q,
                                       const struct clf_attention_layout *k, const struct clf_attention_layout *v,
                                       const struct clf_attention_desc *d);

/* Tile parameters in force for a device (see host/attention/tiles.c). A
 * device with no entry in the table runs with its type's generic values;
 * `tuned` says whether a specific entry matched. All are clamped at launch
 * to the device's work-group and local-memory limits (and to what the
 * compiled kernels allow). The environment variables CLF_ATTN_TILE_Q and
 * CLF_ATTN_TILE_K (powers of two; tiles are at least 4 query and 8 key
 * rows whatever asks for less) override the table, for
 * tuning a new device; entry then reads "env". CLF_ATTN_LANES (1, 2, 4 or
 * 8) overrides the lanes likewise, so the GPU form runs on any device.
 * `clformer bench attention` prints what is in force. Kernels are compiled
 * per d_k (-DHEAD_DIM=d_k): multiples of 8·lanes run on float8, of 4·lanes
 * on float4, others scalar. */
struct clf_attention_tuning {
    const char *entry;  /* the table entry that matched */
    bool tuned;
    size_t tile_q;      /* query rows per work-group of the forward and dQ kernels */
    size_t tile_k;      /* key rows per local-memory tile (and per work-group of dK/dV) */
    size_t lanes;       /* work-items per query row in attn_fwd and attn_bwd_dq: 1 on CPUs
                         * (one item per row), more on GPUs (each holds d_k/lanes of the
                         * row; a work-group is tile_q·lanes items); always divides d_k */
    bool fast_math;     /* -cl-fast-relaxed-math */
};
/* The parameters for d_k on ctx's device after clamping. */
clf_status clf_attention_tuning_get(clf_ctx_t *ctx, size_t d_k, struct clf_attention_tuning *out);

/* ------------------------------------------------- multi-head attention */

/* Weights stored (in, out) row-major so that y = x·W. w_in (d, 3d) holds
 * [W_Q | W_K | W_V] column blocks (PyTorch's in_proj_weight, transposed);
 * head h of Q is columns h·d_k .. (h+1)·d_k of the W_Q block. */
struct clf_mha_params {
    clf_tensor w_in /* (d, 3d) */, b_in /* (3d) */, w_out /* (d, d) */, b_out /* (d) */;
};

/* self: queries, keys and values from x (len_kv must equal len_q or be 0);
 * otherwise keys and values from mem (encoder–decoder attention). key_len
 * (an i32 tensor, batch) masks padded keys (NULL: none); causal and window as in
 * struct clf_attention_desc. */
struct clf_mha_desc {
    size_t batch, heads, d_model, len_q, len_kv;
    const clf_tensor *key_len; /* i32 (batch) or NULL */
    bool causal;
    int window;
    bool self;
};

/* Activations kept for backward, allocated once for the largest shape and
 * reused by every call with batch·len no larger. */
struct clf_mha_workspace {
    size_t cap_q, cap_kv, d_model, heads; /* rows: batch·len_q and batch·len_kv at most */
    clf_tensor qkv;   /* self: (B·Tq, 3d); cross: q in (B·Tq, d) then kv in (B·Tkv, 2d) */
    clf_tensor attn;  /* (B·Tq, d) heads concatenated: the input of W^O */
    clf_tensor lse;   /* (B·h·Tq) */
    clf_tensor dattn; /* (B·Tq, d) */
    clf_tensor dqkv;  /* like qkv */
    struct clf_attention_workspace aws;
};
/* max: the largest shapes (batch, len_q, len_kv, d_model, heads, self).
 * Only the products count: every buffer is sized by rows, batch·len_q and
 * batch·len_kv (lse and delta by heads·batch·len_q), so a workspace made
 * for batch 1 and len_q R serves any call with batch·len_q <= R. */
clf_status clf_mha_workspace_init(clf_ctx_t *ctx, struct clf_mha_workspace *ws, const struct clf_mha_desc *max);
/* The bytes clf_mha_workspace_init would allocate for max, without
 * allocating; *largest (may be NULL) receives the largest single buffer. */
size_t clf_mha_workspace_bytes(const struct clf_mha_desc *max, size_t *largest);
void clf_mha_workspace_free(struct clf_mha_workspace *ws);

/* y (B·len_q, d) = MHA(x (B·len_q, d), mem (B·len_kv, d) or NULL when self).
 * Keeps in ws what backward needs. */
clf_status clf_mha_forward(clf_ctx_t *ctx, clf_tensor *y, struct clf_mha_workspace *ws, const clf_tensor *x,
                           const clf_tensor *mem, const struct clf_mha_params *p, const struct clf_mha_desc *d);

/* dx OVERWRITTEN; dmem ADDED TO (the encoder output collects gradients from
 * every decoder layer; NULL for self-attention); grads +=. ws must hold
 * the forward of the same x, mem, p and d. */
clf_status clf_mha_backward(clf_ctx_t *ctx, clf_tensor *dx, clf_tensor *dmem, struct clf_mha_params *grads,
                            const clf_tensor *dy, const clf_tensor *x, const clf_tensor *mem,
                            struct clf_mha_workspace *ws, const struct clf_mha_params *p,
                            const struct clf_mha_desc *d);

/* ------------------------------------------------ incremental decoding */

/* Per layer and attention kind. Self-attention: keys and values of every
 * position so far, (batch, heads, max_len, d_k), appended in place by each
 * step. Cross-attention: the memory's keys and values, projected once by
 * clf_kv_cache_memory_set into (batch·len_kv, 2d) = [K | V]. */
struct clf_upload;
struct clf_kv_cache {
    size_t batch, heads, d_model, max_len; /* batch: the rows in use (keep lowers it, add raises it) */
    size_t cap;          /* rows the buffers hold: the batch made */
    bool self;
    clf_tensor k, v;     /* self: (batch, heads, max_len, d_k) each */
    clf_tensor spare;    /* reorder and keep's target, swapped with k and v (self) or mem_kv (cross,
                          * allocated by the first keep) */
    size_t len;          /* self: positions appended so far (a reorder copies only these) */
    clf_tensor mem_kv;   /* cross: (batch·len_kv, 2d) */
    size_t len_kv;       /* cross: memory length (room: each memory row's stride) */
    size_t kv_used;      /* cross: the longest memory added since the cache was last emptied */
    clf_tensor row_len;  /* self: i32 (batch) each row's position + 1 at this step, a view (buf NULL: all at step) */
    size_t group;        /* cross: query rows per memory row; self: rows that reorder among themselves (1;
                          * the beams of a sentence: clf_kv_cache_share) */
    clf_tensor key_len;  /* cross: i32 (batch) valid memory positions, a view (buf NULL: none) */
    clf_tensor scratch;  /* (batch, 3d) projections of the step, then (batch, d) attention output */
    clf_tensor lse;      /* (batch·heads) */
    struct clf_attention_kernels *kernels; /* internal cache */
    struct clf_upload *rows;          /* internal: reorder's row list on the device */
    /* self with group > 1, internal: the row whose k and v hold row b's
     * position t, ancestry[b·max_len + t] (a beam reselection rewrites
     * these instead of copying keys and values), the positions each row
     * holds, keep's scratch, and whether any row reads another's */
    int32_t *ancestry, *held, *anc_next;
    bool indirect, anc_dirty;
    struct clf_upload *anc_up;
    clf_tensor anc;      /* the device's copy, a view of anc_up */
};
/* self: a cache of max_len positions; cross: len_kv is the memory length. */
clf_status clf_kv_cache_init(clf_ctx_t *ctx, struct clf_kv_cache *c, size_t batch, size_t heads, size_t d_model,
                             size_t max_len, bool self, size_t len_kv);
void clf_kv_cache_free(struct clf_kv_cache *c);
/* Every `group` consecutive rows are the beams of one sentence; batch must
 * be a multiple of group. Cross, before clf_kv_cache_memory_set: the group
 * shares one memory row, held and read once: batch/group memory rows,
 * key_len of batch/group entries; the step attends with n_q = group query
 * rows per memory row. Self, while empty: rows reorder within their group
 * (or whole groups move): a reordering copies no keys or values within a
 * group but records which row holds each row's positions (the attention
 * reads them there, clf_attention_desc's kv_rows); groups that move are
 * copied. */
clf_status clf_kv_cache_share(clf_ctx_t *ctx, struct clf_kv_cache *c, size_t group);
/* Cross only: projects mem (batch/group·len_kv, d) through [W_K | W_V]
 * once; key_len (i32, batch/group) or NULL is remembered as a view (its
 * buffer is not owned and must outlive the cache's use). */
clf_status clf_kv_cache_memory_set(clf_ctx_t *ctx, struct clf_kv_cache *c, const clf_tensor *mem,
                                   const clf_tensor *key_len, const struct clf_mha_params *p);
/* Self or cross: the cache keeps n <= batch rows (n = 0 empties it), new row b taking old row
 * src_rows[b] (host array of n entries, each < batch), and its batch
 * becomes n: the rows of finished sequences leave, so that the next steps
 * run on the live ones only (decoding compacts its batch this way; a self
 * cache's rows may be reordered at the same time). Buffers keep their size.
 * A cross cache's key_len is the caller's tensor: its first n/group entries
 * must follow the rows kept before the next step; with group > 1 the rows
 * kept come in whole groups, each from one old group (its memory row). */
clf_status clf_kv_cache_keep(clf_ctx_t *ctx, struct clf_kv_cache *c, const int32_t *src_rows, size_t n);
/* Self or cross: n more rows after the batch in use, up to cap (decoding
 * takes new sentences between steps). Self: mem NULL; the new rows hold
 * no position yet (row_len says which are valid). Cross: n a multiple of
 * group; mem (n/group·width, d), width <= len_kv, is projected through
 * [W_K | W_V] into the new memory rows (one GEMM when width is len_kv, else
 * one per memory row); key_len (i32, at least (batch + n)/group; the
 * caller's, remembered as a view) holds every memory row's length. */
clf_status clf_kv_cache_add(clf_ctx_t *ctx, struct clf_kv_cache *c, size_t n, const clf_tensor *mem, size_t width,
                            const clf_tensor *key_len, const struct clf_mha_params *p);
/* Self only: rows at positions of their own (decoding sentences that
 * joined at different steps): row_len (i32, >= batch entries, a view that
 * must outlive the steps) holds each row's position + 1 for the next
 * clf_mha_decode_step, whose `step` is then the largest position. NULL:
 * every row at `step`. Not with a restricted window. */
void clf_kv_cache_rows_at(struct clf_kv_cache *c, const clf_tensor *row_len);
/* Self only: beam reselection: new row b takes old row src_rows[b] (host
 * array of n = batch entries, each < batch) for every cached position;
 * with group > 1, from a row of its own group. */
clf_status clf_kv_cache_reorder(clf_ctx_t *ctx, struct clf_kv_cache *c, const int32_t *src_rows, size_t n);

/* One decoding step: y (batch, d) = MHA of x (batch, d), the query at
 * position `step` (steps must come in order 0, 1, 2, ... for a self cache).
 * Its attention is clf_attention_decode's (CLF_DECODE_ATTN=tiled in the
 * environment runs the tiled forward with n_q = 1 instead, the path before
 * it, for comparisons; both write c->lse). Self: appends this position's keys and values to the
 * cache and attends to positions 0..step (window < 0 for all, else the
 * restricted window), i.e. causal. Cross: attends to the memory. */
clf_status clf_mha_decode_step(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *x, struct clf_kv_cache *c,
                               const struct clf_mha_params *p, int window, size_t step);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
