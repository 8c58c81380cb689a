/* attention.c: launchers of cl/attention.cl: the tiled (flash-style)
 * forward and backward, and the naive forward (scores materialised with
 * batched GEMMs and the softmax op).
 *
 * Q, K, V, O and their gradients are (batch, heads, rows, d_k) operands
 * addressed through struct clf_attention_layout; lse and the backward's delta
 * are (batch·heads, n_q) contiguous. Arguments are checked against the
 * buffers' sizes before anything is enqueued. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_internal.h"
#include "runtime/buffers.h"
#include "runtime/settings.h"

/* The build options of attention.cl. NATIVE_VEC, the device's native
 * vector width in floats (read once, at clf_ctx_init): attn_bwd_fused
 * blocks its rows by it, 16 floats with AVX-512's 32 registers, 8 with
 * AVX2's 16 (see dot8x2 in cl/attention.cl). */
static void options_of(const clf_ctx_t *ctx, char *opts, size_t len, size_t d_k, const struct clf_attention_tuning *t)
{
    snprintf(opts, len, "-DHEAD_DIM=%zu -DTILE_Q=%zu -DTILE_K=%zu -DLANES=%zu -DNATIVE_VEC=%u%s", d_k, t->tile_q,
             t->tile_k, t->lanes, ctx->native_vec_float, t->fast_math ? " -cl-fast-relaxed-math" : "");
}

/* Work-items per group of attn_fwd and attn_bwd_dq: lanes per query row. */
static size_t rows_wg(const struct clf_attention_tuning *t)
{
    return t->tile_q * t->lanes;
}

/* ... and of attn_bwd_dkdv: lanes per key row. */
static size_t keys_wg(const struct clf_attention_tuning *t)
{
    return t->tile_k * t->lanes;
}

/* The forward kernel alone (one lookup instead of seven), or the forward's
 * set when the device wants smaller tiles than the table's. */
static clf_status fwd_kernel_get(clf_ctx_t *ctx, size_t d_k, struct clf_attention_kernels *out)
{
    clf_status st = clf_attention_tuning_get(ctx, d_k, &out->tune);
    if (st != CLF_OK)
        return st;
    char opts[256];
    options_of(ctx, opts, sizeof opts, d_k, &out->tune);
    if ((st = clf_kernel_get(ctx, "attention.cl", opts, "attn_fwd", &out->fwd)) != CLF_OK)
        return st;
    if (clf_kernel_wg_limit(ctx, out->fwd, rows_wg(&out->tune)) < rows_wg(&out->tune))
        return clf_attention_kernels_get(ctx, d_k, CLF_ATTN_FWD, out);
    out->d_k = d_k;
    out->have = 0; /* attn_fwd alone: not a whole set */
    out->ctx = ctx;
    return CLF_OK;
}

/* kv_cache.cl's kernels for d_k: none depends on the tiles. */
static clf_status cache_kernels_get(clf_ctx_t *ctx, size_t d_k, struct clf_attention_kernels *out)
{
    char opts[64];
    snprintf(opts, sizeof opts, "-DHEAD_DIM=%zu", d_k);
    struct { const char *name; cl_kernel *k; } ks[] = {
        {"attn_cache_append", &out->append}, {"attn_cache_gather", &out->gather},
        {"attn_cache_gather4", &out->gather4}, {"attn_cache_move", &out->move},
        {"attn_cache_move4", &out->move4},
    };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        clf_status st = clf_kernel_get(ctx, "kv_cache.cl", opts, ks[i].name, ks[i].k);
        if (st != CLF_OK)
            return st;
    }
    return CLF_OK;
}

clf_status clf_attention_kernels_get(clf_ctx_t *ctx, size_t d_k, unsigned need, struct clf_attention_kernels *out)
{
    clf_status st = clf_attention_tuning_get(ctx, d_k, &out->tune);
    if (st != CLF_OK)
        return st;
    out->d_k = d_k;
    out->ctx = ctx;
    out->have = 0;
    out->delta = out->dkdv = out->dq = NULL;
    out->append = out->gather = out->gather4 = out->move = out->move4 = NULL;
    const bool bwd = need & CLF_ATTN_BWD;
    if ((need & CLF_ATTN_CACHE) && (st = cache_kernels_get(ctx, d_k, out)) != CLF_OK)
        return st;
    /* a kernel may allow fewer work-items than the device (registers): shrink
     * the tiles until every kernel fetched accepts its work-group size */
    for (;;) {
        char opts[256];
        options_of(ctx, opts, sizeof opts, d_k, &out->tune);
        struct { const char *file, *name; cl_kernel *k; } ks[] = {
            {"attention.cl", "attn_fwd", &out->fwd},           {"attention.cl", "attn_mask_scores", &out->mask},
            {"attention_bwd.cl", "attn_bwd_delta", &out->delta}, {"attention_bwd.cl", "attn_bwd_dkdv", &out->dkdv},
            {"attention_bwd.cl", "attn_bwd_dq", &out->dq},
        };
        const size_t nks = bwd ? sizeof ks / sizeof ks[0] : 2; /* the first two: attention.cl's */
        for (size_t i = 0; i < nks; i++)
            if ((st = clf_kernel_get(ctx, ks[i].file, opts, ks[i].name, ks[i].k)) != CLF_OK)
                return st;
        size_t wq = rows_wg(&out->tune), wk = keys_wg(&out->tune), lanes = out->tune.lanes;
        out->fused = NULL;
        /* attn_bwd_fused: one work-item per two key rows, query rows eight
         * at a time (the kernel exists where tile_q >= 8) */
        if (bwd && lanes == 1 && out->tune.tile_q >= 8 &&
            (st = clf_kernel_get(ctx, "attention_bwd.cl", opts, "attn_bwd_fused", &out->fused)) != CLF_OK)
            return st;
        size_t lq = clf_kernel_wg_limit(ctx, out->fwd, wq);
        size_t lk = bwd ? clf_kernel_wg_limit(ctx, out->dkdv, wk) : wk;
        if (bwd) {
            size_t lq2 = clf_kernel_wg_limit(ctx, out->dq, wq);
            if (lq2 < lq)
                lq = lq2;
        }
        if (lq >= wq && lk >= wk) {
            out->have = CLF_ATTN_FWD | (need & (CLF_ATTN_BWD | CLF_ATTN_CACHE));
            return CLF_OK;
        }
        /* query and key rows per group the kernels allow; too few: fewer lanes */
        lq /= lanes;
        lk /= lanes;
        if ((lq < CLF_ATTENTION_MIN_TILE_Q || lk < CLF_ATTENTION_MIN_TILE_K) && lanes > 1) {
            out->tune.lanes = lanes / 2;
            continue;
        }
        if (lk < CLF_ATTENTION_MIN_TILE_K || lq < CLF_ATTENTION_MIN_TILE_Q)
            return clf_error_set(ctx, CLF_ERR_UNSUPPORTED,
                                 "attention (d_k %zu): %s allows work-groups of only %zu items for %s, fewer "
                                 "than its smallest tile (%d rows)",
                                 d_k, ctx->dev.device_name, lk < CLF_ATTENTION_MIN_TILE_K ? lk : lq,
                                 lk < CLF_ATTENTION_MIN_TILE_K ? "attn_bwd_dkdv" : "attn_fwd and attn_bwd_dq",
                                 lk < CLF_ATTENTION_MIN_TILE_K ? CLF_ATTENTION_MIN_TILE_K : CLF_ATTENTION_MIN_TILE_Q);
        out->tune.tile_q = lq < out->tune.tile_q ? lq : out->tune.tile_q;
        out->tune.tile_k = lk < out->tune.tile_k ? lk : out->tune.tile_k;
    }
}

clf_status clf_attention_kernels_cached(clf_ctx_t *ctx, struct clf_attention_kernels **slot, size_t d_k,
                                        unsigned need, const struct clf_attention_kernels **out)
{
    need |= CLF_ATTN_FWD;
    const bool same = *slot && (*slot)->d_k == d_k && (*slot)->ctx == ctx;
    if (!same || ((*slot)->have & need) != need) {
        struct clf_attention_kernels ks = {0}; /* decoding's kernels: none yet */
        clf_status st = clf_attention_kernels_get(ctx, d_k, need | (same ? (*slot)->have : 0), &ks);
        if (st != CLF_OK)
            return st;
        if (same)
            ks.dec = (*slot)->dec; /* decode_attn.cl's: tiles of their own */
        if (!*slot && !(*slot = malloc(sizeof **slot)))
            return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        **slot = ks;
    }
    *out = *slot;
    return CLF_OK;
}

/* ------------------------------------------------------------- checking */

/* The operand's last element must lie inside its buffer. */
static clf_status check_layout(clf_ctx_t *ctx, const char *op, const char *what, const struct clf_attention_layout *l,
                               size_t batch, size_t heads, size_t rows, size_t d_k)
{
    if (!l || !l->buf)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s has no buffer", op, what);
    if (l->row_stride < d_k && rows > 1)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s row stride %zu is less than d_k %zu", op, what,
                             l->row_stride, d_k);
    size_t last = l->offset + (batch - 1) * l->batch_stride + (heads - 1) * l->head_stride +
                  (rows - 1) * l->row_stride + d_k;
    size_t have = clf_mem_bytes(l->buf) / sizeof(float);
    if (last > have || last > (size_t)1 << 40)
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: %s (batch %zu, heads %zu, rows %zu, d_k %zu; offset %zu, strides %zu/%zu/%zu) "
                             "reaches float %zu of a buffer of %zu",
                             op, what, batch, heads, rows, d_k, l->offset, l->batch_stride, l->head_stride,
                             l->row_stride, last, have);
    return CLF_OK;
}

static clf_status check_desc(clf_ctx_t *ctx, const char *op, const struct clf_attention_desc *d)
{
    if (!d)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: no descriptor", op);
    if (d->batch == 0 || d->heads == 0 || d->n_q == 0 || d->n_k == 0 || d->d_k == 0 ||
        d->d_k > CLF_ATTENTION_MAX_HEAD_DIM)
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: shape batch %zu, heads %zu, n_q %zu, n_k %zu, d_k %zu (each ≥ 1, d_k ≤ %d)", op,
                             d->batch, d->heads, d->n_q, d->n_k, d->d_k, CLF_ATTENTION_MAX_HEAD_DIM);
    /* the kernels run batch·heads times the padded rows in NDRange dimension
     * 0 and index it with int (dimensions 1 and 2 would be capped at 65535
     * on NVIDIA's drivers) */
    size_t rows = (d->n_q > d->n_k ? d->n_q : d->n_k) + 256;
    if (d->n_q + d->q_pos_offset > INT_MAX / 2 || d->n_k > INT_MAX / 2 || d->batch * d->heads > INT_MAX / rows)
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: sizes too large (n_q %zu + offset %zu, n_k %zu, batch·heads %zu): batch·heads·rows "
                             "must stay below 2^31 work-items", op, d->n_q, d->q_pos_offset, d->n_k,
                             d->batch * d->heads);
    if (!(d->scale >= 0) || isinf(d->scale))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: scale %g", op, (double)d->scale);
    clf_status st;
    if (d->key_len && (st = clf_tensor_check_ints(ctx, op, "key_len", d->key_len, d->batch)) != CLF_OK)
        return st;
    return CLF_OK;
}

/* kv_rows (keys in other sequences' rows) is decoding's: only
 * clf_attention_decode reads them; the tiled and naive kernels refuse. */
static clf_status refuse_kv_rows(clf_ctx_t *ctx, const char *op, const struct clf_attention_desc *d)
{
    return d->kv_rows ? clf_error_set(ctx, CLF_ERR_ARG, "%s: kv_rows (keys in other sequences' rows) is "
                                      "decoding's: clf_attention_decode reads them", op)
                      : CLF_OK;
}

clf_status clf_attention_check_operands(clf_ctx_t *ctx, const char *op, const struct clf_attention_layout *o,
                                        const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                        const struct clf_attention_layout *v, const struct clf_attention_desc *d)
{
    clf_status st;
    if ((st = check_desc(ctx, op, d)) || (st = check_layout(ctx, op, "q", q, d->batch, d->heads, d->n_q, d->d_k)) ||
        (st = check_layout(ctx, op, "k", k, d->batch, d->heads, d->n_k, d->d_k)) ||
        (st = check_layout(ctx, op, "v", v, d->batch, d->heads, d->n_k, d->d_k)) ||
        (st = check_layout(ctx, op, "o", o, d->batch, d->heads, d->n_q, d->d_k)))
        return st;
    if (d->kv_rows && (d->n_q != 1 || d->kv_rows_stride < d->n_k ||
                       clf_tensor_numel(d->kv_rows) < (d->batch - 1) * d->kv_rows_stride + d->n_k ||
                       (st = clf_tensor_check_ints(ctx, op, "kv_rows", d->kv_rows, clf_tensor_numel(d->kv_rows)))))
        return st ? st : clf_error_set(ctx, CLF_ERR_ARG, "%s: kv_rows of %zu entries at a stride of %zu for %zu "
                                       "sequences of %zu keys and %zu query rows: want one query row and a stride "
                                       "of at least n_k", op, clf_tensor_numel(d->kv_rows), d->kv_rows_stride,
                                       d->batch, d->n_k, d->n_q);
    return CLF_OK;
}

/* ------------------------------------------------------------- forward */

clf_status clf_attention_forward_with(clf_ctx_t *ctx, const struct clf_attention_kernels *kp,
                                      const struct clf_attention_layout *o, clf_tensor *lse,
                                      const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                      const struct clf_attention_layout *v, const struct clf_attention_desc *d)
{
    const char *op = "attention_forward";
    clf_status st;
    if ((st = refuse_kv_rows(ctx, op, d)) || (st = clf_attention_check_operands(ctx, op, o, q, k, v, d)))
        return st;
    size_t rows = d->batch * d->heads * d->n_q;
    if (!lse || !lse->buf || clf_tensor_numel(lse) != rows)
        return clf_error_set(ctx, CLF_ERR_ARG, "attention_forward: lse has %zu elements, want batch·heads·n_q = %zu",
                             lse && lse->buf ? clf_tensor_numel(lse) : 0, rows);
    struct clf_attention_kernels ks;
    if (kp && kp->d_k == d->d_k && kp->ctx == ctx)
        ks = *kp;
    else if ((st = fwd_kernel_get(ctx, d->d_k, &ks)) != CLF_OK)
        return st;
    struct lay lo = lay_of(o), lq = lay_of(q), lk = lay_of(k), lv = lay_of(v);
    struct mask_args m = mask_of(d);
    cl_ulong lse_off = lse->offset;
    struct clf_arg args[] = {LAY_ARGS(lo), CLF_ARG(lse->buf), CLF_ARG(lse_off), LAY_ARGS(lq), LAY_ARGS(lk),
                             LAY_ARGS(lv), MASK_ARGS(m)};
    if ((st = clf_kernel_set_args(ctx, ks.fwd, "attn_fwd", args, sizeof args / sizeof args[0])))
        return st;
    size_t tq = ks.tune.tile_q;
    size_t global = (d->n_q + tq - 1) / tq * rows_wg(&ks.tune) * d->batch * d->heads, local = rows_wg(&ks.tune);
    return clf_kernel_launch(ctx, ks.fwd, "attn_fwd", 1, &global, &local);
}

clf_status clf_attention_forward(clf_ctx_t *ctx, const struct clf_attention_layout *o, clf_tensor *lse,
                                 const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                 const struct clf_attention_layout *v, const struct clf_attention_desc *d)
{
    return clf_attention_forward_with(ctx, NULL, o, lse, q, k, v, d);
}

/* ------------------------------------------------------------ backward */

clf_status clf_attention_workspace_init(clf_ctx_t *ctx, struct clf_attention_workspace *ws, size_t batch,
                                        size_t heads, size_t n_q)
{
    memset(ws, 0, sizeof *ws);
    size_t rows = batch * heads * n_q;
    if (rows == 0)
        return clf_error_set(ctx, CLF_ERR_ARG, "attention_workspace_init: batch %zu, heads %zu, n_q %zu", batch,
                             heads, n_q);
    clf_status st = clf_tensor_init(ctx, &ws->delta, 1, &rows);
    if (st == CLF_OK)
        ws->rows = rows;
    return st;
}

void clf_attention_workspace_free(struct clf_attention_workspace *ws)
{
    if (!ws)
        return;
    clf_tensor_free(&ws->delta);
    free(ws->kernels);
    ws->kernels = NULL;
    ws->rows = 0;
}

clf_status clf_attention_backward(clf_ctx_t *ctx, const struct clf_attention_layout *dq,
                                  const struct clf_attention_layout *dk, const struct clf_attention_layout *dv,
                                  const struct clf_attention_layout *d_o, const struct clf_attention_layout *q,
                                  const struct clf_attention_layout *k, const struct clf_attention_layout *v,
                                  const struct clf_attention_layout *o, const clf_tensor *lse,
                                  struct clf_attention_workspace *ws, const struct clf_attention_desc *d)
{
    const char *op = "attention_backward";
    clf_status st;
    if ((st = check_desc(ctx, op, d)) || (st = refuse_kv_rows(ctx, op, d)))
        return st;
    size_t B = d->batch, H = d->heads, nq = d->n_q, nk = d->n_k, dk_ = d->d_k;
    if ((st = check_layout(ctx, op, "q", q, B, H, nq, dk_)) || (st = check_layout(ctx, op, "k", k, B, H, nk, dk_)) ||
        (st = check_layout(ctx, op, "v", v, B, H, nk, dk_)) || (st = check_layout(ctx, op, "o", o, B, H, nq, dk_)) ||
        (st = check_layout(ctx, op, "d_o", d_o, B, H, nq, dk_)) ||
        (st = check_layout(ctx, op, "dq", dq, B, H, nq, dk_)) ||
        (st = check_layout(ctx, op, "dk", dk, B, H, nk, dk_)) || (st = check_layout(ctx, op, "dv", dv, B, H, nk, dk_)))
        return st;
    size_t rows = B * H * nq;
    if (!lse || !lse->buf || clf_tensor_numel(lse) != rows)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: lse has %zu elements, want batch·heads·n_q = %zu", op,
                             lse && lse->buf ? clf_tensor_numel(lse) : 0, rows);
    if (!ws || !ws->delta.buf || ws->rows < rows)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: workspace holds %zu rows, need batch·heads·n_q = %zu", op,
                             ws ? ws->rows : 0, rows);
    const struct clf_attention_kernels *kp;
    if ((st = clf_attention_kernels_cached(ctx, &ws->kernels, dk_, CLF_ATTN_BWD, &kp)) != CLF_OK)
        return st;
    struct clf_attention_kernels ks = *kp;
    struct lay ldq = lay_of(dq), ldk = lay_of(dk), ldv = lay_of(dv), ldo = lay_of(d_o), lq = lay_of(q),
               lk = lay_of(k), lv = lay_of(v), lo = lay_of(o);
    struct mask_args m = mask_of(d);
    cl_ulong lse_off = lse->offset;
    cl_mem delta = ws->delta.buf;
    cl_int heads = (cl_int)H, n_q = (cl_int)nq;

    struct clf_arg a0[] = {CLF_ARG(delta), LAY_ARGS(ldo), LAY_ARGS(lo), CLF_ARG(heads), CLF_ARG(n_q)};
    if ((st = clf_kernel_set_args(ctx, ks.delta, "attn_bwd_delta", a0, sizeof a0 / sizeof a0[0])))
        return st;
    size_t wg = clf_kernel_wg_limit(ctx, ks.delta, 64);
    size_t g0 = (nq + wg - 1) / wg * wg * B * H;
    if ((st = clf_kernel_launch(ctx, ks.delta, "attn_bwd_delta", 1, &g0, &wg)))
        return st;

    /* FlashAttention-2's order (attn_bwd_fused) where a row is one work-item
     * (CPUs), the query tile holds eight rows and the tiles fit local
     * memory: one group of tile_k / 2 items per (b, h), which is plenty of
     * groups for a CPU's cores (fwd+bwd 3.0-3.6× the forward at n = 1024 on
     * PoCL and Intel's runtime in sittings of 2026-12-03 and 12-04, against
     * 4.1-4.9× split; 3.0× on PoCL on 12-05 with two key rows per item); the
     * split kernels otherwise (GPUs' lanes, or CLF_ATTN_BWD=split); by
     * default only where clf_attention_fused_by_default says,
     * CLF_ATTN_BWD=fused runs it anyway. */
    const char *mode = clf_setting_get("CLF_ATTN_BWD");
    const bool want_fused = mode && !strcmp(mode, "fused") ? true
                            : mode && !strcmp(mode, "split") ? false
                                                             : clf_attention_fused_by_default(ctx);
    size_t tk = ks.tune.tile_k, tq = ks.tune.tile_q, wk = keys_wg(&ks.tune), wf = tk / 2;
    size_t fused_bytes = ((2 * tq + tk) * dk_ + tq * tk + 2 * tq) * sizeof(float);
    if (ks.fused && want_fused && fused_bytes + 512 <= ctx->max_local_mem &&
        clf_kernel_wg_limit(ctx, ks.fused, wf) >= wf) {
        struct clf_arg af[] = {LAY_ARGS(ldq), LAY_ARGS(ldk), LAY_ARGS(ldv), LAY_ARGS(ldo), LAY_ARGS(lq),
                               LAY_ARGS(lk), LAY_ARGS(lv), CLF_ARG(lse->buf), CLF_ARG(lse_off), CLF_ARG(delta),
                               MASK_ARGS(m)};
        if ((st = clf_kernel_set_args(ctx, ks.fused, "attn_bwd_fused", af, sizeof af / sizeof af[0])))
            return st;
        size_t gf = wf * B * H;
        return clf_kernel_launch(ctx, ks.fused, "attn_bwd_fused", 1, &gf, &wf);
    }

    struct clf_arg a1[] = {LAY_ARGS(ldk), LAY_ARGS(ldv), LAY_ARGS(ldo), LAY_ARGS(lq), LAY_ARGS(lk), LAY_ARGS(lv),
                           CLF_ARG(lse->buf), CLF_ARG(lse_off), CLF_ARG(delta), MASK_ARGS(m)};
    if ((st = clf_kernel_set_args(ctx, ks.dkdv, "attn_bwd_dkdv", a1, sizeof a1 / sizeof a1[0])))
        return st;
    size_t g1 = (nk + tk - 1) / tk * wk * B * H;
    if ((st = clf_kernel_launch(ctx, ks.dkdv, "attn_bwd_dkdv", 1, &g1, &wk)))
        return st;

    struct clf_arg a2[] = {LAY_ARGS(ldq), LAY_ARGS(ldo), LAY_ARGS(lq), LAY_ARGS(lk), LAY_ARGS(lv),
                           CLF_ARG(lse->buf), CLF_ARG(lse_off), CLF_ARG(delta), MASK_ARGS(m)};
    if ((st = clf_kernel_set_args(ctx, ks.dq, "attn_bwd_dq", a2, sizeof a2 / sizeof a2[0])))
        return st;
    size_t wq = rows_wg(&ks.tune), g2 = (nq + tq - 1) / tq * wq * B * H;
    return clf_kernel_launch(ctx, ks.dq, "attn_bwd_dq", 1, &g2, &wq);
}

/* --------------------------------------------------------------- naive */

clf_status clf_attention_naive_workspace_init(clf_ctx_t *ctx, struct clf_attention_naive_workspace *ws,
                                              size_t batch, size_t heads, size_t n_q, size_t n_k)
{
    memset(ws, 0, sizeof *ws);
    size_t n = batch * heads * n_q * n_k;
    if (n == 0)
        return clf_error_set(ctx, CLF_ERR_ARG, "attention_naive_workspace_init: batch %zu, heads %zu, n_q %zu, n_k %zu",
                             batch, heads, n_q, n_k);
    clf_status st = clf_tensor_init(ctx, &ws->scores, 1, &n);
    if (st == CLF_OK && (st = clf_tensor_init(ctx, &ws->probs, 1, &n)) != CLF_OK)
        clf_tensor_free(&ws->scores);
    if (st == CLF_OK)
        ws->cap = n;
    return st;
}

void clf_attention_naive_workspace_free(struct clf_attention_naive_workspace *ws)
{
    if (!ws)
        return;
    clf_tensor_free(&ws->scores);
    clf_tensor_free(&ws->probs);
    free(ws->kernels);
    ws->kernels = NULL;
    ws->cap = 0;
}

static clf_status mask_scores(clf_ctx_t *ctx, cl_kernel k, const clf_tensor *t, const struct clf_attention_desc *d,
                              float value)
{
    struct mask_args m = mask_of(d);
    cl_mem s = t->buf;
    cl_ulong off = t->offset;
    cl_float val = value;
    struct clf_arg args[] = {CLF_ARG(s), CLF_ARG(off), CLF_ARG(m.key_len), CLF_ARG(m.has_key_len), CLF_ARG(m.heads),
                             CLF_ARG(m.n_q), CLF_ARG(m.n_k), CLF_ARG(m.causal), CLF_ARG(m.window), CLF_ARG(m.qoff),
                             CLF_ARG(val)};
    clf_status st = clf_kernel_set_args(ctx, k, "attn_mask_scores", args, sizeof args / sizeof args[0]);
    if (st)
        return st;
    size_t wg = clf_kernel_wg_limit(ctx, k, 64);
    size_t g[2] = {(d->n_k + wg - 1) / wg * wg * d->batch * d->heads, d->n_q}, l[2] = {wg, 1};
    return clf_kernel_launch(ctx, k, "attn_mask_scores", 2, g, l);
}

clf_status clf_attention_naive_forward(clf_ctx_t *ctx, const struct clf_attention_layout *o,
                                       struct clf_attention_naive_workspace *ws, const struct clf_attention_layout *q,
                                       const struct clf_attention_layout *k, const struct clf_attention_layout *v,
                                       const struct clf_attention_desc *d)
{
    const char *op = "attention_naive_forward";
    clf_status st;
    if ((st = refuse_kv_rows(ctx, op, d)) || (st = clf_attention_check_operands(ctx, op, o, q, k, v, d)))
        return st;
    size_t B = d->batch, H = d->heads, nq = d->n_q, nk = d->n_k, per = nq * nk;
    if (!ws || ws->cap < B * H * per)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: workspace holds %zu scores, need %zu", op, ws ? ws->cap : 0,
                             B * H * per);
    const struct clf_attention_kernels *kp;
    if ((st = clf_attention_kernels_cached(ctx, &ws->kernels, d->d_k, CLF_ATTN_FWD, &kp)) != CLF_OK)
        return st;
    struct clf_attention_kernels ks = *kp;
    /* S[b,h] = scale·Q[b,h]·K[b,h]ᵀ: one batched GEMM over the heads of each sequence */
    for (size_t b = 0; b < B; b++) {
        struct clf_mat a = {q->buf, q->offset + b * q->batch_stride, q->row_stride, false, q->head_stride};
        struct clf_mat bt = {k->buf, k->offset + b * k->batch_stride, k->row_stride, true, k->head_stride};
        struct clf_mat c = {ws->scores.buf, ws->scores.offset + b * H * per, nk, false, per};
        if ((st = clf_gemm_batched(ctx, nq, nk, d->d_k, scale_of(d), &a, &bt, 0.0f, &c, H)))
            return st;
    }
    if ((st = mask_scores(ctx, ks.mask, &ws->scores, d, CLF_ATTENTION_LSE_EMPTY)))
        return st;
    clf_tensor s, p;
    size_t shape[2] = {B * H * nq, nk};
    if ((st = clf_tensor_view(ctx, &ws->scores, 0, 2, shape, &s)) ||
        (st = clf_tensor_view(ctx, &ws->probs, 0, 2, shape, &p)) || (st = clf_softmax_forward(ctx, &p, &s, NULL)))
        return st;
    /* a row that sees no key came out uniform: zero every hidden entry */
    if ((st = mask_scores(ctx, ks.mask, &ws->probs, d, 0.0f)))
        return st;
    for (size_t b = 0; b < B; b++) {
        struct clf_mat a = {ws->probs.buf, ws->probs.offset + b * H * per, nk, false, per};
        struct clf_mat bv = {v->buf, v->offset + b * v->batch_stride, v->row_stride, false, v->head_stride};
        struct clf_mat c = {o->buf, o->offset + b * o->batch_stride, o->row_stride, false, o->head_stride};
        if ((st = clf_gemm_batched(ctx, nq, d->d_k, nk, 1.0f, &a, &bv, 0.0f, &c, H)))
            return st;
    }
    return CLF_OK;
}
