/* kv_cache.c: the key/value caches of incremental decoding, one query per
 * sequence per step.
 *
 * Self-attention cache: k, v (batch, heads, max_len, d_k); step t projects
 * x (batch, D) through all of w_in into scratch (batch, 3D), appends its
 * keys and values at position t in place, and attends to positions 0..t
 * (causal, q_pos_offset t). Cross-attention: the memory's [K | V]
 * (batch·len_kv, 2D) is projected once; each step projects only Q.
 * scratch holds (batch, 3D) projections, then the attention output
 * (batch, D) ready for W^O. A cache shrinks (clf_kv_cache_keep) when
 * sequences finish: its first rows are the ones kept, its buffers stay.
 * A self cache shared by groups of beams (clf_kv_cache_share) leaves each
 * position's keys and values in the row that computed them: a beam
 * reselection rewrites the table of which row holds each row's positions
 * (ancestry, on the host and uploaded before the next step) instead of
 * copying them; only whole groups that move are copied. */
#include <stdlib.h>
#include <string.h>

#include "attention_internal.h"
#include "runtime/buffers.h"
#include "runtime/settings.h"

clf_status clf_kv_cache_init(clf_ctx_t *ctx, struct clf_kv_cache *c, size_t batch, size_t heads, size_t d_model,
                             size_t max_len, bool self, size_t len_kv)
{
    memset(c, 0, sizeof *c);
    if (!batch || !heads || !d_model || d_model % heads || d_model / heads > CLF_ATTENTION_MAX_HEAD_DIM ||
        (self && !max_len) || (!self && !len_kv))
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "kv_cache_init: batch %zu, heads %zu, d_model %zu, max_len %zu, len_kv %zu, self %d",
                             batch, heads, d_model, max_len, len_kv, self);
    c->batch = batch, c->heads = heads, c->d_model = d_model, c->max_len = max_len, c->self = self;
    c->len_kv = c->kv_used = len_kv;
    c->cap = batch;
    c->group = 1;
    size_t ns = batch * 4 * d_model, nl = batch * heads;
    clf_status st;
    CLF_TRY(clf_tensor_init(ctx, &c->scratch, 1, &ns));
    CLF_TRY(clf_tensor_init(ctx, &c->lse, 1, &nl));
    if (self) {
        size_t shape[4] = {batch, heads, max_len, d_model / heads};
        if ((st = clf_tensor_init(ctx, &c->k, 4, shape)) || (st = clf_tensor_init(ctx, &c->v, 4, shape)) ||
            (st = clf_tensor_init(ctx, &c->spare, 4, shape)))
            goto fail;
    } else {
        size_t shape[2] = {batch * len_kv, 2 * d_model};
        CLF_TRY(clf_tensor_init(ctx, &c->mem_kv, 2, shape));
    }
    return CLF_OK;
fail:
    clf_kv_cache_free(c);
    return st;
}

void clf_kv_cache_free(struct clf_kv_cache *c)
{
    if (!c)
        return;
    clf_tensor_free(&c->k);
    clf_tensor_free(&c->v);
    clf_tensor_free(&c->spare);
    clf_tensor_free(&c->mem_kv);
    clf_tensor_free(&c->scratch);
    clf_tensor_free(&c->lse);
    free(c->kernels);
    clf_upload_free(c->rows);
    free(c->rows);
    clf_upload_free(c->anc_up);
    free(c->anc_up);
    free(c->ancestry), free(c->held), free(c->anc_next);
    memset(c, 0, sizeof *c);
}

static clf_status check_params(clf_ctx_t *ctx, const char *op, const struct clf_mha_params *p, size_t D)
{
    if (!p || clf_tensor_numel(&p->w_in) != D * 3 * D || clf_tensor_numel(&p->b_in) != 3 * D ||
        clf_tensor_numel(&p->w_out) != D * D || clf_tensor_numel(&p->b_out) != D)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: parameters do not match d_model %zu", op, D);
    return CLF_OK;
}

/* Self: every row holds its own positions; no row reads another's. */
static void ancestry_reset(struct clf_kv_cache *c, size_t from, size_t to)
{
    for (size_t b = from; b < to; b++) {
        c->held[b] = 0;
        for (size_t t = 0; t < c->max_len; t++)
            c->ancestry[b * c->max_len + t] = (int32_t)b;
    }
}

clf_status clf_kv_cache_share(clf_ctx_t *ctx, struct clf_kv_cache *c, size_t group)
{
    if (!group || c->cap % group || (c->self ? c->len > 0 : c->key_len.buf != NULL))
        return clf_error_set(ctx, CLF_ERR_ARG, "kv_cache_share: group %zu for a %s cache of %zu rows%s: want a group "
                             "that divides the rows, before any memory is set or position appended",
                             group, c->self ? "self" : "cross", c->cap,
                             (c->self ? c->len > 0 : c->key_len.buf != NULL) ? " (in use)" : "");
    c->group = group;
    if (c->self) {
        if (group == 1 || c->ancestry)
            return CLF_OK;
        const size_t n = c->cap * c->max_len;
        c->ancestry = malloc(n * sizeof *c->ancestry);
        c->anc_next = malloc(n * sizeof *c->anc_next);
        c->held = malloc(c->cap * sizeof *c->held);
        c->anc_up = calloc(1, sizeof *c->anc_up);
        if (!c->ancestry || !c->anc_next || !c->held || !c->anc_up)
            return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        ancestry_reset(c, 0, c->cap);
        return CLF_OK;
    }
    size_t shape[2] = {c->batch / group * c->len_kv, 2 * c->d_model};
    clf_tensor_free(&c->mem_kv);
    return clf_tensor_init(ctx, &c->mem_kv, 2, shape);
}

/* Cross: mem (m·width, d) through [W_K | W_V] into memory rows first..
 * first + m - 1 of the cache, each at stride len_kv (one GEMM when width is
 * len_kv, else one per memory row); key_len remembered as a view. */
static clf_status project_memory(clf_ctx_t *ctx, struct clf_kv_cache *c, const clf_tensor *mem, size_t first,
                                 size_t m, size_t width, const clf_tensor *key_len, const struct clf_mha_params *p)
{
    const size_t D = c->d_model;
    clf_tensor bias;
    size_t s2 = 2 * D;
    clf_status st;
    if ((st = clf_tensor_view(ctx, &p->b_in, D, 1, &s2, &bias)))
        return st;
    struct clf_mat w = {p->w_in.buf, p->w_in.offset + D, 3 * D, false, 0};
    const size_t calls = width == c->len_kv ? 1 : m, rows = width == c->len_kv ? m * width : width;
    for (size_t i = 0; i < calls; i++) {
        struct clf_mat a = {mem->buf, mem->offset + i * width * D, D, false, 0},
                       o = {c->mem_kv.buf, c->mem_kv.offset + (first + i) * c->len_kv * 2 * D, 2 * D, false, 0};
        if ((st = clf_gemm_bias(ctx, rows, 2 * D, D, &a, &w, &bias, &o)))
            return st;
    }
    c->key_len = key_len ? *key_len : (clf_tensor){0};
    c->key_len.owns = false;
    if (width > c->kv_used)
        c->kv_used = width;
    return CLF_OK;
}

clf_status clf_kv_cache_memory_set(clf_ctx_t *ctx, struct clf_kv_cache *c, const clf_tensor *mem, const clf_tensor *key_len,
                                   const struct clf_mha_params *p)
{
    const char *op = "kv_cache_set_memory";
    size_t D = c->d_model, rows = c->batch / c->group * c->len_kv;
    clf_status st;
    if (c->self)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: a self-attention cache has no memory", op);
    if ((st = check_params(ctx, op, p, D)) ||
        (key_len && (st = clf_tensor_check_ints(ctx, op, "key_len", key_len, c->batch / c->group))))
        return st;
    if (!mem || clf_tensor_numel(mem) != rows * D)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: mem has %zu elements, want (%zu, %zu)", op,
                             mem ? clf_tensor_numel(mem) : 0, rows, D);
    return project_memory(ctx, c, mem, 0, c->batch / c->group, c->len_kv, key_len, p);
}

/* The rows that move (src_rows[b] != b) as (to, from) pairs into *pairs,
 * their count into *m; whether they can move in place: no row moved from
 * is itself moved to. `rows` bounds every row index. */
static clf_status moves_of(clf_ctx_t *ctx, const int32_t *src_rows, size_t n, size_t rows, int32_t **pairs,
                           size_t *m, bool *in_place)
{
    int32_t *p = malloc(2 * (n ? n : 1) * sizeof *p);
    bool *to = calloc(rows ? rows : 1, sizeof *to);
    if (!p || !to) {
        free(p), free(to);
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    }
    size_t k = 0;
    for (size_t b = 0; b < n; b++)
        if (src_rows[b] != (int32_t)b) {
            p[2 * k] = (int32_t)b, p[2 * k + 1] = src_rows[b];
            to[b] = true;
            k++;
        }
    *in_place = true;
    for (size_t i = 0; i < k; i++)
        *in_place &= !to[p[2 * i + 1]];
    free(to);
    *pairs = p, *m = k;
    return CLF_OK;
}

/* new row b = old row src_rows[b] for b < n: a self cache's positions
 * appended so far, or a cross cache's projected memory. Rows that stay
 * are not copied. When no moved row's source is itself overwritten (the
 * sentences that leave make room for the last ones, search.c), the moved
 * rows are copied in place (attn_cache_move); else every row goes through
 * the spare buffer, which then swaps with the cache's (a cross cache's
 * spare is allocated at its first such gather). */
static clf_status gather(clf_ctx_t *ctx, struct clf_kv_cache *c, const int32_t *src_rows, size_t n)
{
    const struct clf_attention_kernels *kp;
    clf_status st = clf_attention_kernels_cached(ctx, &c->kernels, c->d_model / c->heads, CLF_ATTN_CACHE, &kp);
    if (st)
        return st;
    struct clf_attention_kernels ks = *kp;
    /* self: only the positions appended so far: the rest hold nothing yet,
     * and copying them would spread uninitialised values (Oclgrind reports
     * it). cross: a row is len_kv memory positions of [K | V], one "head",
     * of which the first kv_used are copied. */
    size_t dk = c->d_model / c->heads, heads = c->self ? c->heads : 1;
    cl_ulong head_len = c->self ? c->max_len * dk : c->len_kv * 2 * c->d_model;
    cl_ulong used_len = c->self ? c->len * dk : c->kv_used * 2 * c->d_model, row_len = heads * head_len;
    if (!used_len)
        return CLF_OK;
    int32_t *pairs = NULL;
    size_t m = 0;
    bool in_place = false;
    if ((st = moves_of(ctx, src_rows, n, c->cap, &pairs, &m, &in_place)))
        return st;
    if (!m) {  /* every row stays */
        free(pairs);
        return CLF_OK;
    }
    if (!in_place && !c->self && !c->spare.buf &&
        (st = clf_tensor_init(ctx, &c->spare, c->mem_kv.ndim, c->mem_kv.shape)))
        goto done;
    /* the cache keeps its own copy of the list: nothing waits, the host array may go */
    if (!c->rows && !(c->rows = calloc(1, sizeof *c->rows))) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto done;
    }
    if ((st = in_place ? clf_upload_write(ctx, c->rows, pairs, 2 * m * sizeof(int32_t))
                       : clf_upload_write(ctx, c->rows, src_rows, n * sizeof(int32_t))))
        goto done;
    cl_mem rows = c->rows->buf;
    const bool by4 = row_len % 4 == 0 && head_len % 4 == 0 && used_len % 4 == 0;
    cl_kernel kg = in_place ? (by4 ? ks.move4 : ks.move) : (by4 ? ks.gather4 : ks.gather);
    const char *name = in_place ? (by4 ? "attn_cache_move4" : "attn_cache_move")
                                : (by4 ? "attn_cache_gather4" : "attn_cache_gather");
    size_t wg = clf_kernel_wg_limit(ctx, kg, 256);
    size_t g[2] = {heads * used_len / (by4 ? 4 : 1), in_place ? m : n}, l[2] = {wg, 1};
    for (int which = 0; which < (c->self ? 2 : 1) && st == CLF_OK; which++) {
        clf_tensor *t = !c->self ? &c->mem_kv : which ? &c->v : &c->k;
        if (in_place) {
            struct clf_arg args[] = {CLF_ARG(t->buf), CLF_ARG(rows), CLF_ARG(row_len), CLF_ARG(head_len),
                                     CLF_ARG(used_len)};
            if (!(st = clf_kernel_set_args(ctx, kg, name, args, 5)))
                st = clf_kernel_launch(ctx, kg, name, 2, g, l);
            continue;
        }
        struct clf_arg args[] = {CLF_ARG(c->spare.buf), CLF_ARG(t->buf), CLF_ARG(rows),
                                 CLF_ARG(row_len),      CLF_ARG(head_len), CLF_ARG(used_len)};
        if ((st = clf_kernel_set_args(ctx, kg, name, args, 6)) || (st = clf_kernel_launch(ctx, kg, name, 2, g, l)))
            break;
        clf_tensor tmp = *t;
        *t = c->spare;
        c->spare = tmp;
    }
done:
    free(pairs);
    return st;
}

/* src_rows: n entries, each a row of the cache */
static clf_status check_rows(clf_ctx_t *ctx, const char *op, const struct clf_kv_cache *c, const int32_t *src_rows,
                             size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (src_rows[i] < 0 || (size_t)src_rows[i] >= c->batch)
            return clf_error_set(ctx, CLF_ERR_ARG, "%s: source row %d at %zu outside 0..%zu", op, src_rows[i], i,
                                 c->batch - 1);
    return CLF_OK;
}

clf_status clf_kv_cache_reorder(clf_ctx_t *ctx, struct clf_kv_cache *c, const int32_t *src_rows, size_t n)
{
    const char *op = "kv_cache_reorder";
    if (!c->self)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: only self-attention caches are reordered", op);
    if (n != c->batch || !src_rows)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %zu rows for a cache of batch %zu", op, n, c->batch);
    return clf_kv_cache_keep(ctx, c, src_rows, n);  /* every row kept: keep's reordering */
}

/* Self with groups: new row b continues old row src_rows[b] of old group
 * mrows[b / g]. The groups that move are copied whole (gather); within a
 * group no key moves: row b's positions are read where its ancestors
 * computed them, those rows moved with the group. Under CLF_DECODE_ATTN=
 * tiled (whose kernel reads every row's own) the rows are copied instead. */
static clf_status keep_groups(clf_ctx_t *ctx, struct clf_kv_cache *c, const int32_t *src_rows, const int32_t *mrows,
                              size_t n)
{
    const size_t g = c->group, L = c->max_len;
    const char *e = clf_setting_get("CLF_DECODE_ATTN");
    const bool copy = e && !strcmp(e, "tiled");
    int32_t *phys = malloc(2 * n * sizeof *phys), *held = phys + n;
    if (!phys)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    bool indirect = false;
    for (size_t b = 0; b < n; b++) {
        const size_t p = (size_t)src_rows[b], from = (size_t)mrows[b / g] * g, to = b / g * g;
        phys[b] = copy ? (int32_t)p : (int32_t)(from + b % g);  /* the old row whose keys row b's place takes */
        held[b] = c->held[p];
        int32_t *next = c->anc_next + b * L;
        for (size_t t = 0; t < (size_t)held[b]; t++) {
            next[t] = copy ? (int32_t)b : c->ancestry[p * L + t] - (int32_t)from + (int32_t)to;
            indirect |= next[t] != (int32_t)b;
        }
        for (size_t t = (size_t)held[b]; t < L; t++)
            next[t] = (int32_t)b;
    }
    clf_status st = gather(ctx, c, phys, n);
    if (st == CLF_OK) {
        memcpy(c->ancestry, c->anc_next, n * L * sizeof *c->ancestry);
        memcpy(c->held, held, n * sizeof *held);
        c->indirect = indirect;
        c->anc_dirty = true;
    }
    free(phys);
    return st;
}

clf_status clf_kv_cache_keep(clf_ctx_t *ctx, struct clf_kv_cache *c, const int32_t *src_rows, size_t n)
{
    const char *op = "kv_cache_keep";
    if (n > c->batch || (n && !src_rows))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %zu rows for a cache of batch %zu, want 0..%zu", op, n,
                             c->batch, c->batch);
    if (n == 0) {  /* emptied: new rows come through clf_kv_cache_add */
        c->batch = 0, c->len = 0, c->kv_used = 0;
        return CLF_OK;
    }
    clf_status st = check_rows(ctx, op, c, src_rows, n);
    if (st)
        return st;
    const size_t g = c->group, m = n / g;
    int32_t *mrows = NULL;  /* each new group's old group */
    if (g > 1) {  /* whole groups, each from one old group */
        if (n % g)
            return clf_error_set(ctx, CLF_ERR_ARG, "%s: %zu rows: want whole groups of %zu", op, n, g);
        if (!(mrows = malloc((m ? m : 1) * sizeof *mrows)))
            return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        for (size_t s = 0; s < m && st == CLF_OK; s++) {
            mrows[s] = src_rows[s * g] / (int32_t)g;
            for (size_t i = 0; i < g && st == CLF_OK; i++)
                if (src_rows[s * g + i] / (int32_t)g != mrows[s])
                    st = clf_error_set(ctx, CLF_ERR_ARG, "%s: row %zu continues row %d, of another group of %zu "
                                       "than row %zu's (rows come in groups)", op, s * g + i, src_rows[s * g + i], g,
                                       s * g);
        }
    }
    if (st == CLF_OK && g == 1)
        st = gather(ctx, c, src_rows, n);
    else if (st == CLF_OK)  /* a self cache's beams, or a cross cache's memory rows */
        st = c->self ? keep_groups(ctx, c, src_rows, mrows, n) : gather(ctx, c, mrows, m);
    free(mrows);
    if (st)
        return st;
    c->batch = n;
    c->lse.shape[0] = n * c->heads;  /* the attention writes one lse per row in use and checks that count */
    return CLF_OK;
}

clf_status clf_kv_cache_add(clf_ctx_t *ctx, struct clf_kv_cache *c, size_t n, const clf_tensor *mem, size_t width,
                            const clf_tensor *key_len, const struct clf_mha_params *p)
{
    const char *op = "kv_cache_add";
    const size_t g = c->group, D = c->d_model;
    clf_status st;
    if (!n || c->batch + n > c->cap || n % g || (c->self != !mem))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %zu rows after %zu in use, room for %zu, group %zu, %s: want "
                             "whole groups within the room, memory for a cross cache only", op, n, c->batch, c->cap,
                             g, mem ? "with memory" : "no memory");
    if (c->self) {
        if (c->ancestry) {  /* the new rows hold no position yet */
            ancestry_reset(c, c->batch, c->batch + n);
            c->anc_dirty = true;
        }
        c->batch += n;
        c->lse.shape[0] = c->batch * c->heads;
        return CLF_OK;
    }
    const size_t first = c->batch / g, m = n / g;
    if (!width || width > c->len_kv || clf_tensor_numel(mem) != m * width * D)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: mem has %zu elements for %zu memory rows of %zu positions: want "
                             "(%zu·%zu, %zu), at most %zu positions", op, clf_tensor_numel(mem), m, width, m, width,
                             D, c->len_kv);
    if ((st = check_params(ctx, op, p, D)) ||
        (key_len && (st = clf_tensor_check_ints(ctx, op, "key_len", key_len, first + m))))
        return st;
    if ((st = project_memory(ctx, c, mem, first, m, width, key_len, p)))
        return st;
    c->batch += n;
    c->lse.shape[0] = c->batch * c->heads;
    return CLF_OK;
}

void clf_kv_cache_rows_at(struct clf_kv_cache *c, const clf_tensor *row_len)
{
    c->row_len = row_len ? *row_len : (clf_tensor){0};
    c->row_len.owns = false;
}

clf_status clf_mha_decode_step(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *x, struct clf_kv_cache *c,
                               const struct clf_mha_params *p, int window, size_t step)
{
    const char *op = "mha_decode_step";
    size_t B = c->batch, D = c->d_model, H = c->heads, dk = D / H;
    clf_status st;
    if ((st = check_params(ctx, op, p, D)))
        return st;
    if (!x || !y || clf_tensor_numel(x) != B * D || clf_tensor_numel(y) != B * D)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: x %zu and y %zu elements, want (%zu, %zu)", op,
                             x ? clf_tensor_numel(x) : 0, y ? clf_tensor_numel(y) : 0, B, D);
    if (c->self && step >= c->max_len)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: step %zu past the cache's %zu positions", op, step, c->max_len);
    const bool ragged = c->self && c->row_len.buf;  /* rows at positions of their own, the largest `step` */
    if (ragged && window >= 0)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: rows at positions of their own with a restricted window (%d)",
                             op, window);
    const struct clf_attention_kernels *kp;
    if ((st = clf_attention_kernels_cached(ctx, &c->kernels, dk, CLF_ATTN_CACHE, &kp)))
        return st;
    struct clf_attention_kernels ks = *kp;
    const size_t s = c->scratch.offset, o_off = s + 3 * B * D;
    struct clf_mat mx = {x->buf, x->offset, D, false, 0};
    struct clf_attention_layout q, k, v;
    struct clf_attention_desc ad = {.batch = B, .heads = H, .n_q = 1, .d_k = dk, .window = -1};
    clf_tensor bias;
    if (c->self) {
        struct clf_mat w = {p->w_in.buf, p->w_in.offset, 3 * D, false, 0}, o = {c->scratch.buf, s, 3 * D, false, 0};
        if ((st = clf_gemm_bias(ctx, B, 3 * D, D, &mx, &w, &p->b_in, &o)))
            return st;
        cl_ulong k_off = s + D, v_off = s + 2 * D, rs = 3 * D;
        cl_int heads = (cl_int)H, max_len = (cl_int)c->max_len, pos = (cl_int)step, has_rl = ragged;
        struct clf_arg args[] = {CLF_ARG(c->k.buf), CLF_ARG(c->v.buf), CLF_ARG(c->scratch.buf), CLF_ARG(k_off),
                                 CLF_ARG(v_off),    CLF_ARG(rs),       CLF_ARG(heads),         CLF_ARG(max_len),
                                 CLF_ARG(pos),      CLF_ARG(c->row_len.buf), CLF_ARG(has_rl)};
        size_t wg = clf_kernel_wg_limit(ctx, ks.append, 64);
        size_t g[2] = {dk % 4 ? D : D / 4, B}, l[2] = {wg, 1};  /* four floats per item where d_k allows */
        if ((st = clf_kernel_set_args(ctx, ks.append, "attn_cache_append", args, 11)) ||
            (st = clf_kernel_launch(ctx, ks.append, "attn_cache_append", 2, g, l)))
            return st;
        if (step + 1 > c->len)
            c->len = step + 1;
        if (c->ancestry)  /* every row appended its position */
            for (size_t b = 0; b < B; b++)
                c->held[b]++;
        if (c->indirect && c->anc_dirty) {
            if ((st = clf_upload_ints(ctx, c->anc_up, c->ancestry, B * c->max_len, &c->anc)))
                return st;
            c->anc_dirty = false;
        }
        size_t cs = H * c->max_len * dk;
        q = (struct clf_attention_layout){c->scratch.buf, s, 3 * D, dk, 3 * D};
        k = (struct clf_attention_layout){c->k.buf, c->k.offset, cs, c->max_len * dk, dk};
        v = (struct clf_attention_layout){c->v.buf, c->v.offset, cs, c->max_len * dk, dk};
        ad.n_k = step + 1;
        if (c->indirect) {  /* a beam's keys in its ancestors' rows */
            ad.kv_rows = &c->anc;
            ad.kv_rows_stride = c->max_len;
        }
        if (ragged) {  /* row b sees its own positions 0..row_len[b] - 1: padding's mask, not causal */
            ad.key_len = &c->row_len;
        } else {
            ad.causal = true;
            ad.window = window;
            ad.q_pos_offset = step;
        }
    } else {
        if (!c->len_kv)
            return clf_error_set(ctx, CLF_ERR_ARG, "%s: cross cache has no memory", op);
        struct clf_mat w = {p->w_in.buf, p->w_in.offset, 3 * D, false, 0}, o = {c->scratch.buf, s, D, false, 0};
        size_t s1 = D;
        if ((st = clf_tensor_view(ctx, &p->b_in, 0, 1, &s1, &bias)) ||
            (st = clf_gemm_bias(ctx, B, D, D, &mx, &w, &bias, &o)))
            return st;
        /* the group's query rows are one memory row's n_q rows */
        const size_t g = c->group;
        q = (struct clf_attention_layout){c->scratch.buf, s, g * D, dk, D};
        k = (struct clf_attention_layout){c->mem_kv.buf, c->mem_kv.offset, c->len_kv * 2 * D, dk, 2 * D};
        v = (struct clf_attention_layout){c->mem_kv.buf, c->mem_kv.offset + D, c->len_kv * 2 * D, dk, 2 * D};
        ad.batch = B / g;
        ad.n_q = g;
        ad.n_k = c->kv_used;
        ad.key_len = c->key_len.buf ? &c->key_len : NULL;
    }
    struct clf_attention_layout o = {c->scratch.buf, o_off, ad.n_q * D, dk, D};
    if ((st = clf_attention_decode_step(ctx, c->kernels, &o, &c->lse, &q, &k, &v, &ad)))
        return st;
    struct clf_mat a = {c->scratch.buf, o_off, D, false, 0}, wo = {p->w_out.buf, p->w_out.offset, D, false, 0},
                   yc = {y->buf, y->offset, D, false, 0};
    return clf_gemm_bias(ctx, B, D, D, &a, &wo, &p->b_out, &yc);
}
