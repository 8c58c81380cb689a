/* mha.c: the multi-head attention layer, forward and backward, built from
 * clf_gemm, the bias ops and the tiled attention.
 *
 * Shapes (D = d_model, H heads, d_k = D/H, rows = batch·len):
 *   x (B·Tq, D), mem (B·Tkv, D), y (B·Tq, D)
 *   w_in (D, 3D) = [W_Q | W_K | W_V], b_in (3D), w_out (D, D), b_out (D)
 * Self-attention projects x once through all of w_in into qkv (B·Tq, 3D);
 * encoder–decoder attention projects x through the W_Q block into
 * q (B·Tq, D) and mem through the [W_K | W_V] block into kv (B·Tkv, 2D).
 * Attention reads heads straight out of these (head h = columns h·d_k..)
 * and writes attn (B·Tq, D) in the same order, ready for W^O. */
#include <string.h>

#include "attention_internal.h"

static clf_status check_tensor(clf_ctx_t *ctx, const char *op, const char *what, const clf_tensor *t, size_t rows,
                               size_t cols)
{
    if (!t || !t->buf || clf_tensor_numel(t) != rows * cols)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s has %zu elements, want (%zu, %zu)", op, what,
                             t && t->buf ? clf_tensor_numel(t) : 0, rows, cols);
    return CLF_OK;
}

static clf_status check_params(clf_ctx_t *ctx, const char *op, const struct clf_mha_params *p, size_t D)
{
    clf_status st;
    if (!p)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: no parameters", op);
    if ((st = check_tensor(ctx, op, "w_in", &p->w_in, D, 3 * D)) ||
        (st = check_tensor(ctx, op, "b_in", &p->b_in, 1, 3 * D)) ||
        (st = check_tensor(ctx, op, "w_out", &p->w_out, D, D)) || (st = check_tensor(ctx, op, "b_out", &p->b_out, 1, D)))
        return st;
    return CLF_OK;
}

static clf_status check_desc(clf_ctx_t *ctx, const char *op, const struct clf_mha_desc *d)
{
    if (!d || d->batch == 0 || d->heads == 0 || d->d_model == 0 || d->len_q == 0 || d->d_model % d->heads ||
        d->d_model / d->heads > CLF_ATTENTION_MAX_HEAD_DIM || (!d->self && d->len_kv == 0) ||
        (d->self && d->len_kv != d->len_q && d->len_kv != 0))
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: batch %zu, heads %zu, d_model %zu, len_q %zu, len_kv %zu, self %d (heads must "
                             "divide d_model, d_k <= %d, self needs len_kv == len_q)",
                             op, d ? d->batch : 0, d ? d->heads : 0, d ? d->d_model : 0, d ? d->len_q : 0,
                             d ? d->len_kv : 0, d ? d->self : 0, CLF_ATTENTION_MAX_HEAD_DIM);
    return CLF_OK;
}

static size_t kv_len(const struct clf_mha_desc *d) { return d->self ? d->len_q : d->len_kv; }

/* Floats of the qkv (and dqkv) scratch: self (B·Tq, 3D); cross q (B·Tq, D) then kv (B·Tkv, 2D). */
static size_t qkv_floats(size_t cap_q, size_t cap_kv, size_t D, bool self)
{
    return self ? cap_q * 3 * D : cap_q * D + cap_kv * 2 * D;
}

size_t clf_mha_workspace_bytes(const struct clf_mha_desc *max, size_t *largest)
{
    size_t D = max->d_model, cq = max->batch * max->len_q, ckv = max->batch * kv_len(max);
    size_t nqkv = qkv_floats(cq, ckv, D, max->self), nd = cq * D, nl = max->heads * cq;
    if (largest)
        *largest = (nqkv > nd ? nqkv : nd) * sizeof(float);
    /* qkv, dqkv, attn, dattn, lse and the backward's delta (rows·heads) */
    return (2 * nqkv + 2 * nd + 2 * nl) * sizeof(float);
}

clf_status clf_mha_workspace_init(clf_ctx_t *ctx, struct clf_mha_workspace *ws, const struct clf_mha_desc *max)
{
    memset(ws, 0, sizeof *ws);
    clf_status st;
    if ((st = check_desc(ctx, "mha_workspace_init", max)))
        return st;
    size_t D = max->d_model, cq = max->batch * max->len_q, ckv = max->batch * kv_len(max);
    /* room for either use: a self-attention workspace also serves cross calls that fit */
    size_t nqkv = qkv_floats(cq, ckv, D, max->self);
    size_t nd = cq * D, nl = max->batch * max->heads * max->len_q;
    if ((st = clf_tensor_init(ctx, &ws->qkv, 1, &nqkv)) || (st = clf_tensor_init(ctx, &ws->dqkv, 1, &nqkv)) ||
        (st = clf_tensor_init(ctx, &ws->attn, 1, &nd)) || (st = clf_tensor_init(ctx, &ws->dattn, 1, &nd)) ||
        (st = clf_tensor_init(ctx, &ws->lse, 1, &nl)) ||
        (st = clf_attention_workspace_init(ctx, &ws->aws, max->batch, max->heads, max->len_q))) {
        clf_mha_workspace_free(ws);
        return st;
    }
    ws->cap_q = cq;
    ws->cap_kv = ckv;
    ws->d_model = D;
    ws->heads = max->heads;
    return CLF_OK;
}

void clf_mha_workspace_free(struct clf_mha_workspace *ws)
{
    if (!ws)
        return;
    clf_tensor_free(&ws->qkv);
    clf_tensor_free(&ws->dqkv);
    clf_tensor_free(&ws->attn);
    clf_tensor_free(&ws->dattn);
    clf_tensor_free(&ws->lse);
    clf_attention_workspace_free(&ws->aws);
    memset(ws, 0, sizeof *ws);
}

/* The layouts of q, k, v inside a qkv-shaped buffer, and of o in attn. */
struct mha_layouts {
    struct clf_attention_layout q, k, v;
    size_t kv_off; /* cross: where kv starts in qkv */
};

static struct mha_layouts layouts_of(cl_mem qkv, size_t base, const struct clf_mha_desc *d)
{
    size_t D = d->d_model, dk = D / d->heads, Tq = d->len_q, Tk = kv_len(d);
    struct mha_layouts l;
    if (d->self) {
        l.kv_off = 0;
        l.q = (struct clf_attention_layout){qkv, base, Tq * 3 * D, dk, 3 * D};
        l.k = (struct clf_attention_layout){qkv, base + D, Tq * 3 * D, dk, 3 * D};
        l.v = (struct clf_attention_layout){qkv, base + 2 * D, Tq * 3 * D, dk, 3 * D};
    } else {
        l.kv_off = d->batch * Tq * D;
        l.q = (struct clf_attention_layout){qkv, base, Tq * D, dk, D};
        l.k = (struct clf_attention_layout){qkv, base + l.kv_off, Tk * 2 * D, dk, 2 * D};
        l.v = (struct clf_attention_layout){qkv, base + l.kv_off + D, Tk * 2 * D, dk, 2 * D};
    }
    return l;
}

static struct clf_attention_desc attn_desc(const struct clf_mha_desc *d)
{
    return (struct clf_attention_desc){.batch = d->batch,
                                       .heads = d->heads,
                                       .n_q = d->len_q,
                                       .n_k = kv_len(d),
                                       .d_k = d->d_model / d->heads,
                                       .key_len = d->key_len,
                                       .causal = d->causal,
                                       .window = d->window};
}

static struct clf_mat mat(const clf_tensor *t, size_t off, size_t ld, bool trans)
{
    return (struct clf_mat){t->buf, t->offset + off, ld, trans, 0};
}

static clf_status check_ws(clf_ctx_t *ctx, const char *op, const struct clf_mha_workspace *ws,
                           const struct clf_mha_desc *d)
{
    size_t cq = d->batch * d->len_q, ckv = d->batch * kv_len(d);
    if (!ws || !ws->qkv.buf || ws->d_model != d->d_model || cq > ws->cap_q ||
        qkv_floats(cq, ckv, d->d_model, d->self) > clf_tensor_numel(&ws->qkv) ||
        d->batch * d->heads * d->len_q > clf_tensor_numel(&ws->lse))
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: workspace (rows %zu/%zu, d_model %zu) too small for batch %zu, len_q %zu, "
                             "len_kv %zu, d_model %zu",
                             op, ws ? ws->cap_q : 0, ws ? ws->cap_kv : 0, ws ? ws->d_model : 0, d->batch, d->len_q,
                             kv_len(d), d->d_model);
    return CLF_OK;
}

/* A 1-D view of n floats of t from off. */
static clf_status view1(clf_ctx_t *ctx, const clf_tensor *t, size_t off, size_t rows, size_t cols, clf_tensor *v)
{
    size_t shape[2] = {rows, cols};
    return clf_tensor_view(ctx, t, off, 2, shape, v);
}

clf_status clf_mha_forward(clf_ctx_t *ctx, clf_tensor *y, struct clf_mha_workspace *ws, const clf_tensor *x,
                           const clf_tensor *mem, const struct clf_mha_params *p, const struct clf_mha_desc *d)
{
    const char *op = "mha_forward";
    clf_status st;
    if ((st = check_desc(ctx, op, d)))
        return st;
    size_t B = d->batch, D = d->d_model, Tq = d->len_q, Tk = kv_len(d), H = d->heads, dk = D / H;
    if ((st = check_params(ctx, op, p, D)) || (st = check_tensor(ctx, op, "x", x, B * Tq, D)) ||
        (st = check_tensor(ctx, op, "y", y, B * Tq, D)) || (st = check_ws(ctx, op, ws, d)))
        return st;
    if (!d->self && (st = check_tensor(ctx, op, "mem", mem, B * Tk, D)))
        return st;
    struct mha_layouts l = layouts_of(ws->qkv.buf, ws->qkv.offset, d);
    struct clf_mat mx = mat(x, 0, D, false);
    clf_tensor bias;
    if (d->self) {
        struct clf_mat w = mat(&p->w_in, 0, 3 * D, false), c = mat(&ws->qkv, 0, 3 * D, false);
        if ((st = clf_gemm_bias(ctx, B * Tq, 3 * D, D, &mx, &w, &p->b_in, &c)))
            return st;
    } else {
        struct clf_mat wq = mat(&p->w_in, 0, 3 * D, false), cq = mat(&ws->qkv, 0, D, false);
        struct clf_mat mm = mat(mem, 0, D, false), wkv = mat(&p->w_in, D, 3 * D, false),
                       ckv = mat(&ws->qkv, l.kv_off, 2 * D, false);
        size_t s1 = D, s2 = 2 * D;
        clf_tensor bkv;
        if ((st = clf_tensor_view(ctx, &p->b_in, 0, 1, &s1, &bias)) ||
            (st = clf_tensor_view(ctx, &p->b_in, D, 1, &s2, &bkv)) ||
            (st = clf_gemm_bias(ctx, B * Tq, D, D, &mx, &wq, &bias, &cq)) ||
            (st = clf_gemm_bias(ctx, B * Tk, 2 * D, D, &mm, &wkv, &bkv, &ckv)))
            return st;
    }
    struct clf_attention_layout o = {ws->attn.buf, ws->attn.offset, Tq * D, dk, D};
    struct clf_attention_desc ad = attn_desc(d);
    clf_tensor lse;
    size_t nl = B * H * Tq;
    const struct clf_attention_kernels *ks;
    if ((st = clf_tensor_view(ctx, &ws->lse, 0, 1, &nl, &lse)) ||
        (st = clf_attention_kernels_cached(ctx, &ws->aws.kernels, dk, CLF_ATTN_FWD, &ks)) ||
        (st = clf_attention_forward_with(ctx, ks, &o, &lse, &l.q, &l.k, &l.v, &ad)))
        return st;
    struct clf_mat a = mat(&ws->attn, 0, D, false), wo = mat(&p->w_out, 0, D, false), c = mat(y, 0, D, false);
    return clf_gemm_bias(ctx, B * Tq, D, D, &a, &wo, &p->b_out, &c);
}

clf_status clf_mha_backward(clf_ctx_t *ctx, clf_tensor *dx, clf_tensor *dmem, struct clf_mha_params *grads,
                            const clf_tensor *dy, const clf_tensor *x, const clf_tensor *mem,
                            struct clf_mha_workspace *ws, const struct clf_mha_params *p,
                            const struct clf_mha_desc *d)
{
    const char *op = "mha_backward";
    clf_status st;
    if ((st = check_desc(ctx, op, d)))
        return st;
    size_t B = d->batch, D = d->d_model, Tq = d->len_q, Tk = kv_len(d), H = d->heads, dk = D / H;
    size_t rq = B * Tq, rk = B * Tk;
    if ((st = check_params(ctx, op, p, D)) || (st = check_params(ctx, op, grads, D)) ||
        (st = check_tensor(ctx, op, "x", x, rq, D)) || (st = check_tensor(ctx, op, "dx", dx, rq, D)) ||
        (st = check_tensor(ctx, op, "dy", dy, rq, D)) || (st = check_ws(ctx, op, ws, d)))
        return st;
    if (!d->self && ((st = check_tensor(ctx, op, "mem", mem, rk, D)) ||
                     (dmem && (st = check_tensor(ctx, op, "dmem", dmem, rk, D)))))
        return st;
    /* output projection: W^O and b^O gradients, then d(attn) */
    struct clf_mat a_t = mat(&ws->attn, 0, D, true), mdy = mat(dy, 0, D, false), gwo = mat(&grads->w_out, 0, D, false);
    struct clf_mat wo_t = mat(&p->w_out, 0, D, true), da = mat(&ws->dattn, 0, D, false);
    if ((st = clf_gemm(ctx, D, D, rq, 1.0f, &a_t, &mdy, 1.0f, &gwo)) ||
        (st = clf_bias_backward(ctx, &grads->b_out, dy)) || (st = clf_gemm(ctx, rq, D, D, 1.0f, &mdy, &wo_t, 0.0f, &da)))
        return st;
    /* attention */
    struct mha_layouts l = layouts_of(ws->qkv.buf, ws->qkv.offset, d);
    struct mha_layouts g = layouts_of(ws->dqkv.buf, ws->dqkv.offset, d);
    struct clf_attention_layout o = {ws->attn.buf, ws->attn.offset, Tq * D, dk, D};
    struct clf_attention_layout dout = {ws->dattn.buf, ws->dattn.offset, Tq * D, dk, D};
    struct clf_attention_desc ad = attn_desc(d);
    clf_tensor lse;
    size_t nl = B * H * Tq;
    if ((st = clf_tensor_view(ctx, &ws->lse, 0, 1, &nl, &lse)) ||
        (st = clf_attention_backward(ctx, &g.q, &g.k, &g.v, &dout, &l.q, &l.k, &l.v, &o, &lse, &ws->aws, &ad)))
        return st;
    /* input projections */
    struct clf_mat x_t = mat(x, 0, D, true), mdx = mat(dx, 0, D, false);
    clf_tensor proj, gb;
    if (d->self) {
        struct clf_mat dq = mat(&ws->dqkv, 0, 3 * D, false), gw = mat(&grads->w_in, 0, 3 * D, false),
                       w_t = mat(&p->w_in, 0, 3 * D, true);
        if ((st = clf_gemm(ctx, D, 3 * D, rq, 1.0f, &x_t, &dq, 1.0f, &gw)) ||
            (st = view1(ctx, &ws->dqkv, 0, rq, 3 * D, &proj)) || (st = clf_bias_backward(ctx, &grads->b_in, &proj)) ||
            (st = clf_gemm(ctx, rq, D, 3 * D, 1.0f, &dq, &w_t, 0.0f, &mdx)))
            return st;
        return CLF_OK;
    }
    size_t s1 = D, s2 = 2 * D;
    struct clf_mat dq = mat(&ws->dqkv, 0, D, false), dkv = mat(&ws->dqkv, g.kv_off, 2 * D, false);
    struct clf_mat gwq = mat(&grads->w_in, 0, 3 * D, false), gwkv = mat(&grads->w_in, D, 3 * D, false);
    struct clf_mat wq_t = mat(&p->w_in, 0, 3 * D, true), wkv_t = mat(&p->w_in, D, 3 * D, true);
    struct clf_mat m_t = mat(mem, 0, D, true);
    if ((st = clf_gemm(ctx, D, D, rq, 1.0f, &x_t, &dq, 1.0f, &gwq)) ||
        (st = clf_gemm(ctx, D, 2 * D, rk, 1.0f, &m_t, &dkv, 1.0f, &gwkv)) ||
        (st = view1(ctx, &ws->dqkv, 0, rq, D, &proj)) ||
        (st = clf_tensor_view(ctx, &grads->b_in, 0, 1, &s1, &gb)) || (st = clf_bias_backward(ctx, &gb, &proj)) ||
        (st = view1(ctx, &ws->dqkv, g.kv_off, rk, 2 * D, &proj)) ||
        (st = clf_tensor_view(ctx, &grads->b_in, D, 1, &s2, &gb)) || (st = clf_bias_backward(ctx, &gb, &proj)) ||
        (st = clf_gemm(ctx, rq, D, D, 1.0f, &dq, &wq_t, 0.0f, &mdx)))
        return st;
    if (dmem) {
        struct clf_mat mdm = mat(dmem, 0, D, false);
        if ((st = clf_gemm(ctx, rk, D, 2 * D, 1.0f, &dkv, &wkv_t, 1.0f, &mdm)))
            return st;
    }
    return CLF_OK;
}
