/* embed.c: launchers of cl/embed.cl: token embeddings scaled and added to
 * sinusoidal or learned positions, with dropout, y (batch·len, d); and the
 * deterministic backward through a host-built index that groups rows by
 * token id (no atomics), kept and rebuilt in place batch after batch. */
#include <stdlib.h>

#include "base/status.h"
#include "ops_internal.h"
#include "runtime/buffers.h"
#include "runtime/scratch.h"

struct clf_embed_index {
    struct clf_upload uids;    /* int32 (nuniq): the distinct ids, ascending */
    struct clf_upload starts;  /* int32 (nuniq + 1): where each id's rows begin in order */
    struct clf_upload order;   /* int32 (n): rows grouped by id, ascending within an id */
    size_t n, nuniq, vocab;
    size_t cap;                /* rows the host arrays below hold */
    int32_t *count;            /* (vocab + 1) */
    int32_t *h_order, *h_uids, *h_starts; /* (cap), (cap), (cap + 1) */
};

#define FLAT_WG 256
#define BWD_WG 64  /* backward: each work-item sums the rows of one id or position */

static clf_status check_desc(clf_ctx_t *ctx, const char *op, const struct clf_embed_desc *desc,
                             const clf_tensor *y, size_t d, const clf_tensor *learned)
{
    if (!desc || desc->batch == 0 || desc->len == 0)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: no descriptor, or batch or len is 0", op);
    size_t rows = desc->batch * desc->len;
    char sy[96], sl[96];
    if (clf_tensor_numel(y) != rows * d || clf_t_cols(y) != d)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: y/dy %s, want (batch·len = %zu·%zu, d = %zu)", op,
                             clf_ops_shape(y, sy, 96), desc->batch, desc->len, d);
    /* with per-row positions, the table must reach pos_end */
    const size_t end = desc->positions ? desc->pos_end : desc->pos_offset + desc->len;
    if (desc->positions && desc->pos_end == 0)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: per-row positions with pos_end 0", op);
    if (learned) {
        if (clf_tensor_numel(learned) % d || clf_t_cols(learned) != d || end > clf_tensor_numel(learned) / d)
            return clf_error_set(ctx, CLF_ERR_ARG,
                                 "%s: learned positions %s, want (max_len, %zu) with positions up to %zu "
                                 "<= max_len",
                                 op, clf_ops_shape(learned, sl, 96), d, end);
    }
    if (end > 0x7fffffffu)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: positions past 2^31", op);
    if (desc->layout != CLF_POS_INTERLEAVED && desc->layout != CLF_POS_HALVES)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: position layout %d, want interleaved (%d) or halves (%d)", op,
                             (int)desc->layout, CLF_POS_INTERLEAVED, CLF_POS_HALVES);
    return CLF_OK;
}

clf_status clf_embed_forward(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *ids, const clf_tensor *table,
                             const clf_tensor *learned, const struct clf_embed_desc *desc)
{
    const char *op = "embed_forward";
    clf_status st;
    struct clf_drop_args da;
    if ((st = clf_ops_check(ctx, op, "y", y)) || (st = clf_ops_check(ctx, op, "table", table)) ||
        (learned && (st = clf_ops_check(ctx, op, "learned", learned))))
        return st;
    size_t d = clf_t_cols(table);
    if ((st = check_desc(ctx, op, desc, y, d, learned)) || (st = clf_drop_args_make(ctx, op, &desc->drop, &da)) ||
        (st = clf_tensor_check_ints(ctx, op, "ids", ids, desc->batch * desc->len)) ||
        (desc->positions &&
         (st = clf_tensor_check_ints(ctx, op, "positions", desc->positions, desc->batch * desc->len))))
        return st;
    cl_kernel k, ks;
    if ((st = clf_kernel_get(ctx, "embed.cl", NULL, "embed_fwd", &k)) ||
        (!learned && (st = clf_kernel_get(ctx, "embed.cl", NULL, "pos_sinusoid", &ks))))
        return st;
    cl_uint yo = (cl_uint)y->offset, to = (cl_uint)table->offset, vocab = (cl_uint)(clf_tensor_numel(table) / d),
            rows = (cl_uint)(desc->batch * desc->len), ud = (cl_uint)d, len = (cl_uint)desc->len,
            po = (cl_uint)desc->pos_offset, lo = 0, base = 0;
    cl_mem pos = NULL, prow = desc->positions ? desc->positions->buf : NULL;
    cl_int has_prow = desc->positions != NULL;
    if (learned) {
        pos = learned->buf;
        lo = (cl_uint)learned->offset;
    } else {
        /* the sinusoids of this call's positions, once: (len, d) from
         * pos_offset, or (pos_end, d) from 0 for per-row positions */
        cl_uint tlen = prow ? (cl_uint)desc->pos_end : len, tpo = prow ? 0 : po;
        if ((st = clf_scratch_get(ctx, CLF_SCRATCH_WIDE, (size_t)tlen * d * sizeof(float), &pos)))
            return st;
        base = tpo;
        cl_uint half = desc->layout == CLF_POS_HALVES ? (cl_uint)((d + 1) / 2) : 0;
        struct clf_arg as[] = {CLF_ARG(pos), CLF_ARG(tlen), CLF_ARG(ud), CLF_ARG(tpo), CLF_ARG(half)};
        size_t gs = (size_t)tlen * d, ls = clf_kernel_wg_limit(ctx, ks, FLAT_WG);
        if ((st = clf_kernel_set_args(ctx, ks, "pos_sinusoid", as, 5)) ||
            (st = clf_kernel_launch(ctx, ks, "pos_sinusoid", 1, &gs, &ls)))
            return st;
    }
    float scale = desc->scale;
    struct clf_arg args[] = {CLF_ARG(y->buf), CLF_ARG(yo),  CLF_ARG(ids->buf), CLF_ARG(table->buf), CLF_ARG(to),
                             CLF_ARG(vocab),  CLF_ARG(pos), CLF_ARG(lo),  CLF_ARG(base),       CLF_ARG(rows),
                             CLF_ARG(ud),     CLF_ARG(len), CLF_ARG(po),  CLF_ARG(prow),       CLF_ARG(has_prow),
                             CLF_ARG(scale),  CLF_DROP_ARGS(da)};
    size_t global = ((size_t)rows * d + 3) / 4, local = clf_kernel_wg_limit(ctx, k, FLAT_WG);
    if (!(st = clf_kernel_set_args(ctx, k, "embed_fwd", args, sizeof args / sizeof args[0])))
        st = clf_kernel_launch(ctx, k, "embed_fwd", 1, &global, &local);
    return st;
}

clf_status clf_pos_sinusoid_table(clf_ctx_t *ctx, clf_tensor *pos, enum clf_pos_layout layout)
{
    const char *op = "pos_sinusoid_table";
    clf_status st;
    cl_kernel ks;
    if ((st = clf_ops_check(ctx, op, "pos", pos)))
        return st;
    size_t d = clf_t_cols(pos), len = clf_tensor_numel(pos) / (d ? d : 1);
    if (!d || !len || len * d > 0x7fffffffu || pos->offset)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: pos of %zu elements in rows of %zu at offset %zu: want a "
                             "whole (len, d) tensor under 2^31 elements", op, clf_tensor_numel(pos), d,
                             (size_t)pos->offset);
    if (layout != CLF_POS_INTERLEAVED && layout != CLF_POS_HALVES)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: position layout %d, want interleaved (%d) or halves (%d)", op,
                             (int)layout, CLF_POS_INTERLEAVED, CLF_POS_HALVES);
    if ((st = clf_kernel_get(ctx, "embed.cl", NULL, "pos_sinusoid", &ks)))
        return st;
    cl_uint tlen = (cl_uint)len, ud = (cl_uint)d, from = 0;
    cl_uint half = layout == CLF_POS_HALVES ? (cl_uint)((d + 1) / 2) : 0;
    struct clf_arg as[] = {CLF_ARG(pos->buf), CLF_ARG(tlen), CLF_ARG(ud), CLF_ARG(from), CLF_ARG(half)};
    size_t gs = len * d, ls = clf_kernel_wg_limit(ctx, ks, FLAT_WG);
    if ((st = clf_kernel_set_args(ctx, ks, "pos_sinusoid", as, 5)))
        return st;
    return clf_kernel_launch(ctx, ks, "pos_sinusoid", 1, &gs, &ls);
}

void clf_embed_index_free(struct clf_embed_index *ix)
{
    if (!ix)
        return;
    clf_upload_free(&ix->uids);
    clf_upload_free(&ix->starts);
    clf_upload_free(&ix->order);
    free(ix->count), free(ix->h_order), free(ix->h_uids), free(ix->h_starts);
    free(ix);
}

/* Sorts ids into ix's host arrays and uploads them; op names the caller. */
static clf_status index_build(clf_ctx_t *ctx, const char *op, struct clf_embed_index *ix, const int32_t *ids,
                              size_t n)
{
    if (!ix || !ids || n == 0 || n > 0x7fffffffu)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %zu ids", op, n);
    const size_t vocab = ix->vocab;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= vocab)
            return clf_error_set(ctx, CLF_ERR_ARG, "%s: id %d at row %zu is outside [0, %zu)", op, (int)ids[i], i,
                                 vocab);
    if (n > ix->cap) {
        int32_t *o = realloc(ix->h_order, n * sizeof *o);
        if (o)
            ix->h_order = o;
        int32_t *u = realloc(ix->h_uids, n * sizeof *u);
        if (u)
            ix->h_uids = u;
        int32_t *st = realloc(ix->h_starts, (n + 1) * sizeof *st);
        if (st)
            ix->h_starts = st;
        if (!o || !u || !st)
            return clf_error_set(ctx, CLF_ERR_MEMORY, "%s: out of host memory", op);
        ix->cap = n;
    }
    /* counting sort by id: stable, so rows ascend within an id */
    int32_t *count = ix->count, *order = ix->h_order, *uids = ix->h_uids, *starts = ix->h_starts;
    for (size_t v = 0; v <= vocab; v++)
        count[v] = 0;
    for (size_t i = 0; i < n; i++)
        count[ids[i] + 1]++;
    size_t nuniq = 0;
    for (size_t v = 0; v < vocab; v++) {
        if (count[v + 1]) {
            uids[nuniq] = (int32_t)v;
            starts[nuniq++] = count[v];
        }
        count[v + 1] += count[v];
    }
    starts[nuniq] = (int32_t)n;
    for (size_t i = 0; i < n; i++)
        order[count[ids[i]]++] = (int32_t)i;
    clf_status s;
    if ((s = clf_upload_write(ctx, &ix->uids, uids, nuniq * sizeof *uids)) ||
        (s = clf_upload_write(ctx, &ix->starts, starts, (nuniq + 1) * sizeof *starts)) ||
        (s = clf_upload_write(ctx, &ix->order, order, n * sizeof *order)))
        return s;
    ix->n = n, ix->nuniq = nuniq;
    return CLF_OK;
}

clf_status clf_embed_index_update(clf_ctx_t *ctx, struct clf_embed_index *ix, const int32_t *ids, size_t n)
{
    return index_build(ctx, "embed_index_update", ix, ids, n);
}

clf_status clf_embed_index_init(clf_ctx_t *ctx, struct clf_embed_index **ixp, const int32_t *ids, size_t n,
                                size_t vocab)
{
    const char *op = "embed_index_init";
    *ixp = NULL;
    if (!ids || n == 0 || vocab == 0 || vocab > 0x7fffffffu || n > 0x7fffffffu)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %zu ids over a vocabulary of %zu", op, n, vocab);
    struct clf_embed_index *ix = calloc(1, sizeof *ix);
    if (!ix || !(ix->count = malloc((vocab + 1) * sizeof *ix->count))) {
        free(ix);
        return clf_error_set(ctx, CLF_ERR_MEMORY, "%s: out of host memory", op);
    }
    ix->vocab = vocab;
    clf_status st = index_build(ctx, op, ix, ids, n);
    if (st != CLF_OK) {
        clf_embed_index_free(ix);
        return st;
    }
    *ixp = ix;
    return CLF_OK;
}

clf_status clf_embed_backward(clf_ctx_t *ctx, clf_tensor *dtable, clf_tensor *dlearned, const clf_tensor *dy,
                              const struct clf_embed_index *ix, const struct clf_embed_desc *desc)
{
    const char *op = "embed_backward";
    clf_status st;
    struct clf_drop_args da;
    if ((st = clf_ops_check(ctx, op, "dy", dy)) || (dtable && (st = clf_ops_check(ctx, op, "dtable", dtable))) ||
        (dlearned && (st = clf_ops_check(ctx, op, "dlearned", dlearned))))
        return st;
    if (!ix)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: no index", op);
    size_t d = clf_t_cols(dy);
    if ((st = check_desc(ctx, op, desc, dy, d, dlearned)) || (st = clf_drop_args_make(ctx, op, &desc->drop, &da)))
        return st;
    char s1[96], s2[96];
    if (ix->n != desc->batch * desc->len)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: the index holds %zu rows, dy %s has %zu", op, ix->n,
                             clf_ops_shape(dy, s1, 96), desc->batch * desc->len);
    if (dtable && (clf_tensor_numel(dtable) != ix->vocab * d || clf_t_cols(dtable) != d))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: dtable %s, want (vocab %zu, d %zu) as dy %s", op,
                             clf_ops_shape(dtable, s1, 96), ix->vocab, d, clf_ops_shape(dy, s2, 96));
    cl_uint dyo = (cl_uint)dy->offset, ud = (cl_uint)d;
    /* four columns per work-item when rows are whole Philox blocks; the
     * (row, columns) items of either kernel all in dimension 0 (embed.cl) */
    const char *quad = d % 4 == 0 ? "-DQUAD=1" : NULL;
    size_t cols = d % 4 == 0 ? d / 4 : d;
    if (dtable) {
        cl_kernel k;
        if ((st = clf_kernel_get(ctx, "embed.cl", quad, "embed_bwd_table", &k)))
            return st;
        cl_uint to = (cl_uint)dtable->offset, nu = (cl_uint)ix->nuniq;
        float scale = desc->scale;
        struct clf_arg args[] = {CLF_ARG(dtable->buf), CLF_ARG(to),        CLF_ARG(dy->buf),   CLF_ARG(dyo),
                                 CLF_ARG(ix->uids.buf), CLF_ARG(ix->starts.buf), CLF_ARG(ix->order.buf), CLF_ARG(nu),
                                 CLF_ARG(ud),          CLF_ARG(scale),     CLF_DROP_ARGS(da)};
        size_t g = ix->nuniq * cols, l = clf_kernel_wg_limit(ctx, k, BWD_WG);
        if ((st = clf_kernel_set_args(ctx, k, "embed_bwd_table", args, 16)) ||
            (st = clf_kernel_launch(ctx, k, "embed_bwd_table", 1, &g, &l)))
            return st;
    }
    if (dlearned) {
        cl_kernel k;
        if ((st = clf_kernel_get(ctx, "embed.cl", quad, "embed_bwd_pos", &k)))
            return st;
        cl_uint lo = (cl_uint)dlearned->offset, b = (cl_uint)desc->batch, len = (cl_uint)desc->len,
                po = (cl_uint)desc->pos_offset;
        struct clf_arg args[] = {CLF_ARG(dlearned->buf), CLF_ARG(lo), CLF_ARG(dy->buf), CLF_ARG(dyo), CLF_ARG(b),
                                 CLF_ARG(len), CLF_ARG(ud), CLF_ARG(po), CLF_DROP_ARGS(da)};
        size_t g = desc->len * cols, l = clf_kernel_wg_limit(ctx, k, BWD_WG);
        if ((st = clf_kernel_set_args(ctx, k, "embed_bwd_pos", args, 14)) ||
            (st = clf_kernel_launch(ctx, k, "embed_bwd_pos", 1, &g, &l)))
            return st;
    }
    return CLF_OK;
}
