/* acts.c: activation memory, planned for the largest shape seen or
 * reserved (struct clf_model_shape) and reused by every smaller batch
 * (tensors hold `cap` rows; each call takes views of the rows it needs).
 *
 * Every buffer is sized by what it holds: (rows, ·) tensors by the largest
 * batch·len of their side, the attention workspaces by rows (and
 * heads·rows), the source lengths by the largest sentence count. None
 * depends on a length alone, so the plan never multiplies the largest
 * count by the largest length (token-cut batches are many short sentences
 * or few long ones, and that product can be 10-20x the real need).
 *
 * A plan is run twice: once counting bytes and checking each buffer
 * against the device's limits (a refusal names the buffer), then
 * allocating. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acts.h"
#include "runtime/ctx.h"

#define MIB (1024.0 * 1024.0)

struct plan {
    clf_ctx_t *ctx;                  /* NULL: count only, no device */
    const struct clf_model_config *c;
    bool alloc;                      /* false: count and check */
    size_t bytes;                    /* so far */
};

/* Counts one buffer; when checking, refuses it past the device's largest
 * allocation. what/side/layer name it in the message (layer < 0: none). */
static clf_status plan_count(struct plan *p, size_t bytes, const char *side, int layer, const char *what)
{
    p->bytes += bytes;
    if (p->alloc || !p->ctx || bytes <= p->ctx->dev.max_alloc)
        return CLF_OK;
    char name[96];
    if (layer >= 0)
        snprintf(name, sizeof name, "%s layer %d %s", side, layer, what);
    else
        snprintf(name, sizeof name, "%s%s%s", side, *side ? " " : "", what);
    return clf_error_set(p->ctx, CLF_ERR_MEMORY,
                         "model: the %s would take %.1f MiB in one buffer, more than %s allows "
                         "(CL_DEVICE_MAX_MEM_ALLOC_SIZE %.1f MiB): lower the tokens per batch or choose a "
                         "smaller preset",
                         name, bytes / MIB, p->ctx->dev.device_name, p->ctx->dev.max_alloc / MIB);
}

static clf_status tensor(struct plan *p, clf_tensor *t, size_t rows, size_t cols, const char *side, int layer,
                         const char *what)
{
    clf_status st = plan_count(p, rows * (cols ? cols : 1) * sizeof(float), side, layer, what);
    if (st || !p->alloc)
        return st;
    size_t shape[2] = {rows, cols};
    return clf_tensor_init(p->ctx, t, cols ? 2 : 1, shape);
}

static clf_status workspace(struct plan *p, struct clf_mha_workspace *ws, const struct clf_mha_desc *d,
                            const char *side, int layer, const char *what)
{
    size_t largest, bytes = clf_mha_workspace_bytes(d, &largest);
    clf_status st = plan_count(p, largest, side, layer, what);
    if (st)
        return st;
    p->bytes += bytes - largest;
    return p->alloc ? clf_mha_workspace_init(p->ctx, ws, d) : CLF_OK;
}

static void side_free(struct side_acts *s, int layers)
{
    clf_tensor_free(&s->embedded);
    if (s->layers) {
        for (int l = 0; l < layers; l++) {
            struct layer_acts *a = &s->layers[l];
            for (int k = 0; k < NSUB; k++) {
                clf_tensor_free(&a->sub[k].f_out);
                clf_tensor_free(&a->sub[k].resid);
                clf_tensor_free(&a->sub[k].normed);
                clf_tensor_free(&a->sub[k].ln_mean);
                clf_tensor_free(&a->sub[k].ln_rstd);
            }
            clf_tensor_free(&a->hidden);
            if (a->self_ws.cap_q)
                clf_mha_workspace_free(&a->self_ws);
            if (a->cross_ws.cap_q)
                clf_mha_workspace_free(&a->cross_ws);
        }
    }
    free(s->layers);
    clf_tensor_free(&s->final_normed);
    clf_tensor_free(&s->final_mean);
    clf_tensor_free(&s->final_rstd);
    clf_tensor_free(&s->grad.d_stream);
    clf_tensor_free(&s->grad.d_ln_in);
    clf_tensor_free(&s->grad.d_f_out);
    clf_tensor_free(&s->grad.d_f_in);
    memset(s, 0, sizeof *s);
}

void clf_model_acts_free(struct model_acts *a, const struct clf_model_config *c)
{
    side_free(&a->enc, c->enc_layers);
    side_free(&a->dec, c->dec_layers);
    clf_tensor_free(&a->d_mem);
    clf_tensor_free(&a->logits);
    memset(a, 0, sizeof *a);
}

/* One side of n rows: `cross` for the decoder, whose encoder–decoder
 * attention reads src_rows rows of memory. */
static clf_status side_plan(struct plan *p, struct side_acts *s, int layers, bool cross, size_t n, size_t src_rows)
{
    const struct clf_model_config *c = p->c;
    const char *name = cross ? "decoder" : "encoder";
    static const char *sub_names[NSUB] = {"self-attention sublayer", "cross-attention sublayer", "FFN sublayer"};
    size_t d = (size_t)c->d_model, heads = (size_t)c->heads;
    clf_status st;
    s->cap = n;
    if (p->alloc && !(s->layers = calloc((size_t)layers, sizeof *s->layers)))
        return clf_error_set(p->ctx, CLF_ERR_MEMORY, "out of host memory");
    struct layer_acts dummy;
    if ((st = tensor(p, &s->embedded, n, d, name, -1, "embeddings")))
        return st;
    for (int l = 0; l < layers; l++) {
        struct layer_acts *a = p->alloc ? &s->layers[l] : &dummy;
        for (int k = 0; k < NSUB; k++) {
            if (k == SUB_CROSS && !cross)
                continue;
            struct sublayer_acts *u = &a->sub[k];
            if ((st = tensor(p, &u->f_out, n, d, name, l, sub_names[k])) ||
                (st = tensor(p, &u->resid, n, d, name, l, sub_names[k])) ||
                (st = tensor(p, &u->normed, n, d, name, l, sub_names[k])) ||
                (st = tensor(p, &u->ln_mean, n, 0, name, l, sub_names[k])) ||
                (st = tensor(p, &u->ln_rstd, n, 0, name, l, sub_names[k])))
                return st;
        }
        if ((st = tensor(p, &a->hidden, n, (size_t)c->d_ff, name, l, "FFN hidden activations")))
            return st;
        /* attention workspaces are sized by rows: one sequence of n rows */
        struct clf_mha_desc sd = {.batch = 1, .heads = heads, .d_model = d, .len_q = n, .len_kv = n, .causal = cross,
                                  .window = -1, .self = true};
        if ((st = workspace(p, &a->self_ws, &sd, name, l, "self-attention workspace")))
            return st;
        if (cross) {
            struct clf_mha_desc cd = {.batch = 1, .heads = heads, .d_model = d, .len_q = n, .len_kv = src_rows,
                                      .window = -1};
            if ((st = workspace(p, &a->cross_ws, &cd, name, l, "cross-attention workspace")))
                return st;
        }
    }
    if (c->norm == CLF_NORM_PRE && ((st = tensor(p, &s->final_normed, n, d, name, -1, "final norm")) ||
                                    (st = tensor(p, &s->final_mean, n, 0, name, -1, "final norm")) ||
                                    (st = tensor(p, &s->final_rstd, n, 0, name, -1, "final norm"))))
        return st;
    struct sublayer_grads *g = &s->grad;
    if ((st = tensor(p, &g->d_stream, n, d, name, -1, "gradient scratch")) ||
        (st = tensor(p, &g->d_ln_in, n, d, name, -1, "gradient scratch")) ||
        (st = tensor(p, &g->d_f_out, n, d, name, -1, "gradient scratch")) ||
        (st = tensor(p, &g->d_f_in, n, d, name, -1, "gradient scratch")))
        return st;
    return CLF_OK;
}

/* Everything for shape `max`; a decoder of 0 rows is left out (encoding only). */
static clf_status plan_all(struct plan *p, struct model_acts *a, const struct clf_model_shape *max)
{
    const struct clf_model_config *c = p->c;
    size_t d = (size_t)c->d_model;
    clf_status st;
    if ((st = side_plan(p, &a->enc, c->enc_layers, false, max->src_rows, max->src_rows)) ||
        (st = tensor(p, &a->d_mem, max->src_rows, d, "", -1, "encoder output's gradient")))
        return st;
    if (!max->tgt_rows)
        return CLF_OK;
    if ((st = side_plan(p, &a->dec, c->dec_layers, true, max->tgt_rows, max->src_rows)) ||
        (st = tensor(p, &a->logits, max->tgt_rows, (size_t)c->vocab, "", -1, "logits")))
        return st;
    return CLF_OK;
}

void clf_model_shape_add(struct clf_model_shape *max, size_t batch, size_t src_len, size_t tgt_len)
{
    if (batch > max->batch)
        max->batch = batch;
    if (batch * src_len > max->src_rows)
        max->src_rows = batch * src_len;
    if (batch * tgt_len > max->tgt_rows)
        max->tgt_rows = batch * tgt_len;
}

size_t clf_model_config_activation_bytes(const struct clf_model_config *c, const struct clf_model_shape *max)
{
    struct model_acts a;
    struct plan p = {NULL, c, false, 0};
    memset(&a, 0, sizeof a);
    if (!max->batch || !max->src_rows)
        return 0;
    clf_status st = plan_all(&p, &a, max);
    assert(st == CLF_OK);  /* without a device (p.ctx NULL) no buffer is refused */
    (void)st;
    return p.bytes;
}

clf_status clf_model_acts_plan(clf_ctx_t *ctx, const struct clf_model_config *c, struct model_acts *a,
                               const struct clf_model_shape *want, size_t state)
{
    /* each field its own maximum: what the batches really need */
    struct clf_model_shape cap = a->cap;
    if (want->batch > cap.batch)
        cap.batch = want->batch;
    if (want->src_rows > cap.src_rows)
        cap.src_rows = want->src_rows;
    if (want->tgt_rows > cap.tgt_rows)
        cap.tgt_rows = want->tgt_rows;
    if (!memcmp(&cap, &a->cap, sizeof cap) && a->bytes)
        return CLF_OK;
    /* count and check every buffer before allocating any */
    struct model_acts dry;
    memset(&dry, 0, sizeof dry);
    struct plan p = {ctx, c, false, 0};
    clf_status st = plan_all(&p, &dry, &cap);
    if (st)
        return st;
    if (p.bytes + state > ctx->dev.global_mem)
        return clf_error_set(ctx, CLF_ERR_MEMORY,
                             "model: activations for batches of up to %zu source and %zu target rows (%zu "
                             "sentences) take %.1f MiB, and the parameters, gradients and optimizer %.1f MiB: "
                             "more than the %.1f MiB of %s; lower the tokens per batch or choose a smaller preset",
                             cap.src_rows, cap.tgt_rows, cap.batch, p.bytes / MIB, state / MIB,
                             ctx->dev.global_mem / MIB, ctx->dev.device_name);
    clf_model_acts_free(a, c);
    p = (struct plan){ctx, c, true, 0};
    if ((st = plan_all(&p, a, &cap))) {
        clf_model_acts_free(a, c);
        return st;
    }
    a->cap = cap;
    a->bytes = p.bytes;
    return CLF_OK;
}

clf_tensor *clf_model_layer_out(struct side_acts *s, int l, bool pre)
{
    if (l < 0)
        return &s->embedded;
    return sublayer_out(&s->layers[l].sub[SUB_FFN], pre);
}
