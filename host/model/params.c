/* params.c: the model's parameters: their names and shapes (the checkpoint
 * order), their place in one flat buffer, views into it, and the
 * initialisation the reference implementations use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "model_internal.h"

#define ALIGN 16  /* floats: every tensor starts 64-byte aligned */

static clf_status add(clf_model_t *m, size_t *cap, const char *name, size_t rows, size_t cols)
{
    if (m->nparams == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        struct clf_param *g = realloc(m->params, *cap * sizeof *g);
        if (!g)
            return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
        m->params = g;
    }
    struct clf_param *p = &m->params[m->nparams++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->offset = m->numel;
    p->ndim = cols ? 2 : 1;
    p->shape[0] = rows;
    p->shape[1] = cols;
    size_t n = rows * (cols ? cols : 1);
    m->numel += (n + ALIGN - 1) / ALIGN * ALIGN;
    return CLF_OK;
}

/* prefix[.name].weight (wrows, wcols; wcols 0: a vector) and
 * prefix[.name].bias (blen): a linear layer's or a layer norm's pair. */
static clf_status add_pair(clf_model_t *m, size_t *cap, const char *prefix, const char *name, size_t wrows,
                           size_t wcols, size_t blen)
{
    char n[96];
    clf_status st;
    const char *dot = name ? "." : "";
    snprintf(n, sizeof n, "%s%s%s.weight", prefix, dot, name ? name : "");
    if ((st = add(m, cap, n, wrows, wcols)))
        return st;
    snprintf(n, sizeof n, "%s%s%s.bias", prefix, dot, name ? name : "");
    return add(m, cap, n, blen, 0);
}

static clf_status add_mha(clf_model_t *m, size_t *cap, const char *prefix)
{
    size_t d = (size_t)m->cfg.d_model;
    clf_status st = add_pair(m, cap, prefix, "in_proj", d, 3 * d, 3 * d);
    return st ? st : add_pair(m, cap, prefix, "out_proj", d, d, d);
}

static clf_status add_norm(clf_model_t *m, size_t *cap, const char *prefix)
{
    size_t d = (size_t)m->cfg.d_model;
    return add_pair(m, cap, prefix, NULL, d, 0, d);
}

static clf_status add_ffn(clf_model_t *m, size_t *cap, const char *prefix)
{
    size_t d = (size_t)m->cfg.d_model, f = (size_t)m->cfg.d_ff;
    clf_status st = add_pair(m, cap, prefix, "linear1", d, f, f);
    return st ? st : add_pair(m, cap, prefix, "linear2", f, d, d);
}

/* The weights and their gradients are one buffer each: both must fit the
 * device (training adds Adam's two moments, counted when activations are
 * planned), each within its largest allocation. */
static clf_status params_fit(clf_model_t *m)
{
    const struct clf_device_info *d = &m->ctx->dev;
    const double mib = 1024.0 * 1024.0, one = (double)m->numel * sizeof(float);
    if (one <= (double)d->max_alloc && 2 * one <= (double)d->global_mem)
        return CLF_OK;
    return clf_error_set(m->ctx, CLF_ERR_MEMORY,
                         "model: %zu parameters take %.1f MiB, twice with their gradients (and four times when "
                         "training, with Adam's moments): more than %s holds (%.1f MiB, %.1f MiB in one "
                         "allocation); choose a smaller model (--preset, --layers, --d-model, --d-ff, --vocab)",
                         m->numel, one / mib, d->device_name, d->global_mem / mib, d->max_alloc / mib);
}

/* The parts of a layer in checkpoint order: side.layers.l.name. */
struct layer_part {
    const char *name;
    clf_status (*add)(clf_model_t *m, size_t *cap, const char *prefix);
};
static const struct layer_part enc_parts[] = {
    {"self_attn", add_mha}, {"norm1", add_norm}, {"ffn", add_ffn}, {"norm2", add_norm}};
static const struct layer_part dec_parts[] = {{"self_attn", add_mha}, {"norm1", add_norm}, {"cross_attn", add_mha},
                                              {"norm2", add_norm},    {"ffn", add_ffn},    {"norm3", add_norm}};

static clf_status add_part(clf_model_t *m, size_t *cap, const char *side, int l, const struct layer_part *part)
{
    char p[96];
    snprintf(p, sizeof p, "%s.layers.%d.%s", side, l, part->name);
    return part->add(m, cap, p);
}

clf_status model_params_layout(clf_model_t *m)
{
    const struct clf_model_config *c = &m->cfg;
    size_t cap = 0;
    clf_status st;
    CLF_TRY(add(m, &cap, "embed.weight", (size_t)c->vocab, (size_t)c->d_model));
    if (!c->share_embeddings)
        CLF_TRY(add(m, &cap, "src_embed.weight", (size_t)c->vocab, (size_t)c->d_model));
    if (c->positions == CLF_POS_LEARNED)
        CLF_TRY(add(m, &cap, "pos.weight", (size_t)c->max_len, (size_t)c->d_model));
    for (int l = 0; l < c->enc_layers; l++)
        for (size_t i = 0; i < sizeof enc_parts / sizeof enc_parts[0]; i++)
            CLF_TRY(add_part(m, &cap, "encoder", l, &enc_parts[i]));
    for (int l = 0; l < c->dec_layers; l++)
        for (size_t i = 0; i < sizeof dec_parts / sizeof dec_parts[0]; i++)
            CLF_TRY(add_part(m, &cap, "decoder", l, &dec_parts[i]));
    if (c->norm == CLF_NORM_PRE) {
        CLF_TRY(add_norm(m, &cap, "encoder.norm"));
        CLF_TRY(add_norm(m, &cap, "decoder.norm"));
    }
    if (c->logits_bias != CLF_LOGITS_BIAS_NONE)  /* last: the others keep their offsets */
        CLF_TRY(add(m, &cap, "logits.bias", (size_t)c->vocab, 0));
    return m->ctx ? params_fit(m) : CLF_OK;  /* no device: the layout alone (import) */
fail:
    return st;
}

const struct clf_param *model_param_find(const clf_model_t *m, const char *name)
{
    for (size_t i = 0; i < m->nparams; i++)
        if (!strcmp(m->params[i].name, name))
            return &m->params[i];
    return NULL;
}

/* Views are built in the same order as the layout, so a cursor walks it. */
struct cursor {
    clf_model_t *m;
    clf_tensor *flat;
    size_t i;
    clf_status st;
};

static clf_tensor next(struct cursor *c)
{
    clf_tensor t = {0};
    if (c->st != CLF_OK)
        return t;
    const struct clf_param *p = &c->m->params[c->i++];
    size_t shape[2] = {p->shape[0], p->shape[1]};
    c->st = clf_tensor_view(c->m->ctx, c->flat, p->offset, p->ndim, shape, &t);
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
    f->act = (enum clf_activation)c->m->cfg.activation;
}

clf_status model_views_build(clf_model_t *m, clf_tensor *flat, struct model_views *v)
{
    const struct clf_model_config *c = &m->cfg;
    memset(v, 0, sizeof *v);
    v->enc = calloc((size_t)c->enc_layers, sizeof *v->enc);
    v->dec = calloc((size_t)c->dec_layers, sizeof *v->dec);
    if (!v->enc || !v->dec)
        return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    struct cursor cur = {m, flat, 0, CLF_OK};
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
    if (cur.st == CLF_OK && cur.i != m->nparams)
        return clf_error_set(m->ctx, CLF_ERR_ARG, "model views: %zu of %zu parameters placed", cur.i, m->nparams);
    return cur.st;
}

void model_views_free(clf_model_t *m, struct model_views *v)
{
    (void)m;
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

void model_params_init_host(const clf_model_t *m, float *w, uint64_t seed)
{
    const double d = m->cfg.d_model;
    memset(w, 0, m->numel * sizeof *w);
    for (size_t i = 0; i < m->nparams; i++) {
        const struct clf_param *p = &m->params[i];
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
            size_t row = strcmp(p->name, "pos.weight") ? (size_t)m->cfg.pad_id : 0;
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
