/* acts.c: activation memory, planned once for the largest batch shape seen
 * and reused by every smaller one (tensors hold `cap` rows; each call takes
 * views of the rows it needs). */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

static clf_status alloc(clf_ctx_t *ctx, clf_tensor *t, size_t rows, size_t cols)
{
    size_t shape[2] = {rows, cols};
    return clf_tensor_init(ctx, t, cols ? 2 : 1, shape);
}

static void side_free(struct side_acts *s, int layers)
{
    clf_tensor_free(&s->x0);
    if (s->layers) {
        for (int l = 0; l < layers; l++) {
            struct layer_acts *a = &s->layers[l];
            for (int k = 0; k < NSUB; k++) {
                clf_tensor_free(&a->sub[k].s);
                clf_tensor_free(&a->sub[k].r);
                clf_tensor_free(&a->sub[k].n);
                clf_tensor_free(&a->sub[k].mean);
                clf_tensor_free(&a->sub[k].rstd);
            }
            clf_tensor_free(&a->hidden);
            if (a->self_ws.cap_q)
                clf_mha_workspace_free(&a->self_ws);
            if (a->cross_ws.cap_q)
                clf_mha_workspace_free(&a->cross_ws);
        }
    }
    free(s->layers);
    clf_tensor_free(&s->out);
    clf_tensor_free(&s->mean);
    clf_tensor_free(&s->rstd);
    for (int i = 0; i < 4; i++)
        clf_tensor_free(&s->g[i]);
    memset(s, 0, sizeof *s);
}

void model_acts_free(clf_model_t *m)
{
    struct model_acts *a = &m->acts;
    side_free(&a->enc, m->cfg.enc_layers);
    side_free(&a->dec, m->cfg.dec_layers);
    clf_tensor_free(&a->g_mem);
    clf_tensor_free(&a->logits);
    clf_tensor_free(&a->loss);
    cl_mem *ints[] = {&a->src_ids, &a->tgt_ids, &a->tgt_out, &a->src_lens};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (*ints[i])
            clReleaseMemObject(*ints[i]);
        *ints[i] = NULL;
    }
    memset(a, 0, sizeof *a);
}

/* One side: `cross` for the decoder. len/len_kv/batch size the attention
 * workspaces. */
static clf_status side_plan(clf_model_t *m, struct side_acts *s, int layers, bool cross, size_t batch,
                            size_t len, size_t src_len)
{
    const struct clf_model_config *c = &m->cfg;
    clf_ctx_t *ctx = m->ctx;
    size_t n = batch * len, d = (size_t)c->d_model;
    clf_status st;
    s->cap = n;
    s->layers = calloc((size_t)layers, sizeof *s->layers);
    if (!s->layers)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    if ((st = alloc(ctx, &s->x0, n, d)))
        return st;
    for (int l = 0; l < layers; l++) {
        struct layer_acts *a = &s->layers[l];
        for (int k = 0; k < NSUB; k++) {
            if (k == SUB_CROSS && !cross)
                continue;
            struct sub_acts *u = &a->sub[k];
            if ((st = alloc(ctx, &u->s, n, d)) || (st = alloc(ctx, &u->r, n, d)) || (st = alloc(ctx, &u->n, n, d)) ||
                (st = alloc(ctx, &u->mean, n, 0)) || (st = alloc(ctx, &u->rstd, n, 0)))
                return st;
        }
        if ((st = alloc(ctx, &a->hidden, n, (size_t)c->d_ff)))
            return st;
        struct clf_mha_desc sd = {batch, (size_t)c->heads, d, len, len, NULL, cross, -1, true};
        if ((st = clf_mha_workspace_init(ctx, &a->self_ws, &sd)))
            return st;
        if (cross) {
            struct clf_mha_desc cd = {batch, (size_t)c->heads, d, len, src_len, NULL, false, -1, false};
            if ((st = clf_mha_workspace_init(ctx, &a->cross_ws, &cd)))
                return st;
        }
    }
    if (c->norm == CLF_NORM_PRE &&
        ((st = alloc(ctx, &s->out, n, d)) || (st = alloc(ctx, &s->mean, n, 0)) || (st = alloc(ctx, &s->rstd, n, 0))))
        return st;
    for (int i = 0; i < 4; i++)
        if ((st = alloc(ctx, &s->g[i], n, d)))
            return st;
    return CLF_OK;
}

static clf_status int_buffer(clf_ctx_t *ctx, cl_mem *b, size_t n)
{
    cl_int err;
    *b = clCreateBuffer(ctx->context, CL_MEM_READ_ONLY, n * sizeof(int32_t), NULL, &err);
    if (err != CL_SUCCESS)
        return clf_error_cl(ctx, err, "clCreateBuffer(int32)", __FILE__, __LINE__);
    return CLF_OK;
}

clf_status model_acts_plan(clf_model_t *m, size_t batch, size_t src_len, size_t tgt_len)
{
    struct model_acts *a = &m->acts;
    /* The attention workspaces are sized by batch and by lengths: plan for
     * the largest of each seen so far, so that shapes settle quickly. */
    if (batch <= a->cap_batch && src_len <= a->cap_src && tgt_len <= a->cap_tgt)
        return CLF_OK;
    size_t nb = batch > a->cap_batch ? batch : a->cap_batch;
    size_t ns = src_len > a->cap_src ? src_len : a->cap_src;
    size_t nt = tgt_len > a->cap_tgt ? tgt_len : a->cap_tgt;
    model_acts_free(m);
    clf_ctx_t *ctx = m->ctx;
    const struct clf_model_config *c = &m->cfg;
    size_t d = (size_t)c->d_model;
    clf_status st;
    a->cap_batch = nb;
    a->cap_src = ns;
    a->cap_tgt = nt;
    if ((st = side_plan(m, &a->enc, c->enc_layers, false, nb, ns, ns)) ||
        (st = side_plan(m, &a->dec, c->dec_layers, true, nb, nt, ns)) ||
        (st = alloc(ctx, &a->g_mem, nb * ns, d)) || (st = alloc(ctx, &a->logits, nb * nt, (size_t)c->vocab)) ||
        (st = alloc(ctx, &a->loss, 2, 0)) || (st = int_buffer(ctx, &a->src_ids, nb * ns)) ||
        (st = int_buffer(ctx, &a->tgt_ids, nb * nt)) || (st = int_buffer(ctx, &a->tgt_out, nb * nt)) ||
        (st = int_buffer(ctx, &a->src_lens, nb))) {
        model_acts_free(m);
        return st;
    }
    return CLF_OK;
}

clf_tensor *model_layer_out(clf_model_t *m, struct side_acts *s, int l)
{
    if (l < 0)
        return &s->x0;
    struct layer_acts *a = &s->layers[l];
    return m->cfg.norm == CLF_NORM_PRE ? &a->sub[SUB_FFN].r : &a->sub[SUB_FFN].n;
}
