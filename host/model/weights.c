/* weights.c: the model's weights: their names and shapes (the checkpoint
 * order) and their place in one flat buffer, laid out from a config alone
 * (no context, no device: import lays a Marian model out with it), views
 * into such a buffer, and the initialisation the reference
 * implementations use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "base/status.h"
#include "weights.h"

#define ALIGN 16  /* floats: every tensor starts 64-byte aligned */

/* A layout being built: its config, and the room its table has. */
struct builder {
    const struct clf_model_config *c;
    struct model_layout *l;
    size_t cap;
};

static clf_status add(struct builder *b, const char *name, size_t rows, size_t cols)
{
    struct model_layout *l = b->l;
    if (l->nparams == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        struct clf_param *g = realloc(l->params, b->cap * sizeof *g);
        if (!g)
            return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory");
        l->params = g;
    }
    struct clf_param *p = &l->params[l->nparams++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->offset = l->numel;
    p->ndim = cols ? 2 : 1;
    p->shape[0] = rows;
    p->shape[1] = cols;
    size_t n = rows * (cols ? cols : 1);
    l->numel += (n + ALIGN - 1) / ALIGN * ALIGN;
    return CLF_OK;
}

/* prefix[.name].weight (wrows, wcols; wcols 0: a vector) and
 * prefix[.name].bias (blen): a linear layer's or a layer norm's pair. */
static clf_status add_pair(struct builder *b, const char *prefix, const char *name, size_t wrows, size_t wcols,
                           size_t blen)
{
    char n[96];
    clf_status st;
    const char *dot = name ? "." : "";
    snprintf(n, sizeof n, "%s%s%s.weight", prefix, dot, name ? name : "");
    if ((st = add(b, n, wrows, wcols)))
        return st;
    snprintf(n, sizeof n, "%s%s%s.bias", prefix, dot, name ? name : "");
    return add(b, n, blen, 0);
}

static clf_status add_mha(struct builder *b, const char *prefix)
{
    size_t d = (size_t)b->c->d_model;
    clf_status st = add_pair(b, prefix, "in_proj", d, 3 * d, 3 * d);
    return st ? st : add_pair(b, prefix, "out_proj", d, d, d);
}

static clf_status add_norm(struct builder *b, const char *prefix)
{
    size_t d = (size_t)b->c->d_model;
    return add_pair(b, prefix, NULL, d, 0, d);
}

static clf_status add_ffn(struct builder *b, const char *prefix)
{
    size_t d = (size_t)b->c->d_model, f = (size_t)b->c->d_ff;
    clf_status st = add_pair(b, prefix, "linear1", d, f, f);
    return st ? st : add_pair(b, prefix, "linear2", f, d, d);
}

/* The weights and their gradients are one buffer each: both must fit the
 * device (training adds Adam's two moments, counted when activations are
 * planned), each within its largest allocation. */
clf_status clf_model_weights_fit(clf_ctx_t *ctx, size_t numel)
{
    const struct clf_device_info *d = clf_ctx_device(ctx);
    const double mib = 1024.0 * 1024.0, one = (double)numel * sizeof(float);
    if (one <= (double)d->max_alloc && 2 * one <= (double)d->global_mem)
        return CLF_OK;
    return clf_error_set(ctx, CLF_ERR_MEMORY,
                         "model: %zu parameters take %.1f MiB, twice with their gradients (and four times when "
                         "training, with Adam's moments): more than %s holds (%.1f MiB, %.1f MiB in one "
                         "allocation); choose a smaller model",
                         numel, one / mib, d->device_name, d->global_mem / mib, d->max_alloc / mib);
}

/* The parts of a layer in checkpoint order: side.layers.l.name. */
struct layer_part {
    const char *name;
    clf_status (*add)(struct builder *b, const char *prefix);
};
static const struct layer_part enc_parts[] = {
    {"self_attn", add_mha}, {"norm1", add_norm}, {"ffn", add_ffn}, {"norm2", add_norm}};
static const struct layer_part dec_parts[] = {{"self_attn", add_mha}, {"norm1", add_norm}, {"cross_attn", add_mha},
                                              {"norm2", add_norm},    {"ffn", add_ffn},    {"norm3", add_norm}};

static clf_status add_part(struct builder *b, const char *side, int l, const struct layer_part *part)
{
    char p[96];
    snprintf(p, sizeof p, "%s.layers.%d.%s", side, l, part->name);
    return part->add(b, p);
}

clf_status clf_model_layout_build(const struct clf_model_config *c, struct model_layout *l)
{
    struct builder b = {c, l, 0};
    clf_status st;
    memset(l, 0, sizeof *l);
    CLF_TRY(add(&b, "embed.weight", (size_t)c->vocab, (size_t)c->d_model));
    if (!c->share_embeddings)
        CLF_TRY(add(&b, "src_embed.weight", (size_t)c->vocab, (size_t)c->d_model));
    if (c->positions == CLF_POS_LEARNED)
        CLF_TRY(add(&b, "pos.weight", (size_t)c->max_len, (size_t)c->d_model));
    for (int i = 0; i < c->enc_layers; i++)
        for (size_t k = 0; k < sizeof enc_parts / sizeof enc_parts[0]; k++)
            CLF_TRY(add_part(&b, "encoder", i, &enc_parts[k]));
    for (int i = 0; i < c->dec_layers; i++)
        for (size_t k = 0; k < sizeof dec_parts / sizeof dec_parts[0]; k++)
            CLF_TRY(add_part(&b, "decoder", i, &dec_parts[k]));
    if (c->norm == CLF_NORM_PRE) {
        CLF_TRY(add_norm(&b, "encoder.norm"));
        CLF_TRY(add_norm(&b, "decoder.norm"));
    }
    if (c->logits_bias != CLF_LOGITS_BIAS_NONE)  /* last: the others keep their offsets */
        CLF_TRY(add(&b, "logits.bias", (size_t)c->vocab, 0));
    return CLF_OK;
fail:
    clf_model_layout_free(l);
    return st;
}

void clf_model_layout_free(struct model_layout *l)
{
    free(l->params);
    memset(l, 0, sizeof *l);
}

const struct clf_param *clf_model_layout_find(const struct model_layout *l, const char *name)
{
    for (size_t i = 0; i < l->nparams; i++)
        if (!strcmp(l->params[i].name, name))
            return &l->params[i];
    return NULL;
}

/* Views are built in the same order as the layout, so a cursor walks it. */
struct cursor {
    clf_ctx_t *ctx;
    const struct clf_model_config *c;
    const struct model_layout *l;
    clf_tensor *flat;
    size_t i;
    clf_status st;
};

static clf_tensor next(struct cursor *c)
{
    clf_tensor t = {0};
    if (c->st != CLF_OK)
        return t;
    const struct clf_param *p = &c->l->params[c->i++];
    size_t shape[2] = {p->shape[0], p->shape[1]};
    c->st = clf_tensor_view(c->ctx, c->flat, p->offset, p->ndim, shape, &t);
    return t;
}

static void next_mha(struct cursor *c, struct clf_mha_params *a)
{
    a->w_in = next(c);
    a->b_in = next(c);
    a->w_out = next(c);
    a->b_out = next(c);
}

static void next_ffn(struct cursor *c, struct clf_ffn_params *f)
{
    f->w1 = next(c);
    f->b1 = next(c);
    f->w2 = next(c);
    f->b2 = next(c);
    f->act = (enum clf_activation)c->c->activation;
}

clf_status clf_model_views_build(clf_ctx_t *ctx, const struct clf_model_config *c, const struct model_layout *lay,
                                 clf_tensor *flat, struct model_views *v)
{
    memset(v, 0, sizeof *v);
    v->enc = calloc((size_t)c->enc_layers, sizeof *v->enc);
    v->dec = calloc((size_t)c->dec_layers, sizeof *v->dec);
    if (!v->enc || !v->dec)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    struct cursor cur = {ctx, c, lay, flat, 0, CLF_OK};
    v->embed = next(&cur);
    v->src_embed = c->share_embeddings ? v->embed : next(&cur);
    if (c->positions == CLF_POS_LEARNED)
        v->pos = next(&cur);
    for (int l = 0; l < c->enc_layers; l++) {
        struct enc_layer *e = &v->enc[l];
        next_mha(&cur, &e->attn);
        e->norm1_g = next(&cur);
        e->norm1_b = next(&cur);
        next_ffn(&cur, &e->ffn);
        e->norm2_g = next(&cur);
        e->norm2_b = next(&cur);
    }
    for (int l = 0; l < c->dec_layers; l++) {
        struct dec_layer *e = &v->dec[l];
        next_mha(&cur, &e->self_attn);
        e->norm1_g = next(&cur);
        e->norm1_b = next(&cur);
        next_mha(&cur, &e->cross_attn);
        e->norm2_g = next(&cur);
        e->norm2_b = next(&cur);
        next_ffn(&cur, &e->ffn);
        e->norm3_g = next(&cur);
        e->norm3_b = next(&cur);
    }
    if (c->norm == CLF_NORM_PRE) {
        v->enc_norm_g = next(&cur);
        v->enc_norm_b = next(&cur);
        v->dec_norm_g = next(&cur);
        v->dec_norm_b = next(&cur);
    }
    if (c->logits_bias != CLF_LOGITS_BIAS_NONE)
        v->logits_bias = next(&cur);
    if (cur.st == CLF_OK && cur.i != lay->nparams)
        return clf_error_set(ctx, CLF_ERR_ARG, "model views: %zu of %zu parameters placed", cur.i, lay->nparams);
    return cur.st;
}

void clf_model_views_free(struct model_views *v)
{
    free(v->enc);
    free(v->dec);
    memset(v, 0, sizeof *v);
}

/* The model's init depends only on the seed (base/rand.h's splitmix64). */
static double uniform(uint64_t *s)
{
    return ((clf_splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);  /* (0, 1) */
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

void clf_model_weights_init_host(const struct model_layout *l, const struct clf_model_config *c, float *w, uint64_t seed)
{
    const double d = c->d_model;
    memset(w, 0, l->numel * sizeof *w);
    for (size_t i = 0; i < l->nparams; i++) {
        const struct clf_param *p = &l->params[i];
        uint64_t s = seed ^ (0x51ed270b27f2ccd1ULL * (i + 1));  /* one stream per tensor */
        float *x = w + p->offset;
        size_t n = p->shape[0] * (p->ndim == 2 ? p->shape[1] : 1);
        if (ends_with(p->name, "embed.weight") || !strcmp(p->name, "pos.weight")) {
            const double sigma = 1.0 / sqrt(d);  /* N(0, d^-0.5) */
            for (size_t j = 0; j < n; j++) {
                double u1 = uniform(&s), u2 = uniform(&s);
                x[j] = (float)(sigma * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
            }
            /* the padding row stays zero, as fairseq does (and a learned
             * table's row 0, as it always has: a seed gives the same model) */
            size_t row = strcmp(p->name, "pos.weight") ? (size_t)c->pad_id : 0;
            memset(x + row * p->shape[1], 0, p->shape[1] * sizeof *x);
        } else if (p->ndim == 2) {  /* Xavier-uniform */
            const double bound = sqrt(6.0 / (double)(p->shape[0] + p->shape[1]));
            for (size_t j = 0; j < n; j++)
                x[j] = (float)((2 * uniform(&s) - 1) * bound);
        } else if (strstr(p->name, "norm") && ends_with(p->name, ".weight")) {
            for (size_t j = 0; j < n; j++)
                x[j] = 1.0f;
        } /* biases stay zero */
    }
}
