/* model.c: the Transformer's forward and backward passes over a padded
 * batch, built only from ops and attention layers, and the memory they
 * are planned in (acts.c plans it, optim.c holds Adam's state). A side
 * is a stack of layers, each a run of sublayers (sublayer.c) whose F
 * attends over whole sequences here.
 *
 * Shapes: N_s = batch·src_len rows on the encoder side, N_t = batch·tgt_len
 * on the decoder side, each row d_model wide; logits (N_t, vocab). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "runtime/ctx.h"
#include "runtime/gemm_internal.h"

#define MIB (1024.0 * 1024.0)

/* Drawing the weights a checkpoint's load then overwrote took a sixth of
 * a translate's start-up (model_internal.h). */
clf_status clf_model_alloc(clf_ctx_t *ctx, clf_model_t **out, const struct clf_model_config *c, uint64_t seed, bool draw)
{
    clf_status st;
    float *host = NULL;
    *out = NULL;
    if ((st = clf_model_config_check(c)) != CLF_OK)
        return clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
    clf_model_t *m = calloc(1, sizeof *m);
    if (!m)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    m->ctx = ctx;
    m->cfg = *c;
    m->seed = seed;
    if ((st = clf_model_layout_build(c, &m->lay))) {
        st = clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
        goto fail;
    }
    CLF_TRY(clf_model_weights_fit(ctx, m->lay.numel));
    CLF_TRY(clf_tensor_init(ctx, &m->weights, 1, &m->lay.numel));
    CLF_TRY(clf_model_views_build(ctx, c, &m->lay, &m->weights, &m->w));
    if (draw) {
        host = malloc(m->lay.numel * sizeof *host);
        if (!host) {
            st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for %zu parameters", m->lay.numel);
            goto fail;
        }
        clf_model_weights_init_host(&m->lay, c, host, seed);
        CLF_TRY(clf_tensor_upload(ctx, &m->weights, host));
    }
    free(host);
    *out = m;
    return CLF_OK;
fail:
    free(host);
    clf_model_free(m);
    return st;
}

clf_status clf_model_init(clf_ctx_t *ctx, clf_model_t **out, const struct clf_model_config *c, uint64_t seed)
{
    return clf_model_alloc(ctx, out, c, seed, true);
}

void clf_model_free(clf_model_t *m)
{
    if (!m)
        return;
    clf_gemm_weights_set(m->ctx, m->weights.buf, CLF_GEMM_W_FLOAT32);  /* its packed weights, if any */
    clf_model_acts_free(&m->acts, &m->cfg);
    clf_upload_free(&m->in.src_ids.up);
    clf_upload_free(&m->in.tgt_ids.up);
    clf_upload_free(&m->in.tgt_out.up);
    clf_upload_free(&m->in.src_lens.up);
    free(m->in.lens);
    clf_embed_index_free(m->in.src_ix);
    clf_embed_index_free(m->in.tgt_ix);
    clf_tensor_free(&m->losses.buf);
    clf_model_views_free(&m->w);
    clf_model_views_free(&m->g);
    clf_tensor_free(&m->weights);
    clf_tensor_free(&m->grads);
    clf_model_adam_free(&m->adam);
    clf_model_layout_free(&m->lay);
    free(m->told);
    free(m->told_now);
    free(m);
}

const struct clf_model_config *clf_model_config(const clf_model_t *m) { return &m->cfg; }
size_t clf_model_numel(const clf_model_t *m) { return m->lay.numel; }
clf_tensor *clf_model_weights(clf_model_t *m) { return &m->weights; }
clf_status clf_model_regularization_set(clf_model_t *m, float dropout, float label_smoothing)
{
    struct clf_model_config c = m->cfg;
    c.dropout = dropout;
    c.label_smoothing = label_smoothing;
    clf_status st = clf_model_config_check(&c);
    if (st != CLF_OK)
        return st;
    m->cfg = c;
    return CLF_OK;
}

const struct clf_param *clf_model_params(const clf_model_t *m, size_t *count)
{
    *count = m->lay.nparams;
    return m->lay.params;
}

/* The gradients, made at the first call that needs them (zeroed): a model
 * that only translates never holds them, half its parameters' memory. */
static clf_status grads_ready(clf_model_t *m)
{
    if (m->grads.buf)
        return CLF_OK;
    clf_status st;
    if ((st = clf_tensor_init(m->ctx, &m->grads, 1, &m->lay.numel)) ||
        (st = clf_model_views_build(m->ctx, &m->cfg, &m->lay, &m->grads, &m->g)) ||
        (st = clf_tensor_fill(m->ctx, &m->grads, 0.0f))) {
        clf_model_views_free(&m->g);
        clf_tensor_free(&m->grads);
    }
    return st;
}

clf_tensor *clf_model_grads(clf_model_t *m)
{
    (void)grads_ready(m); /* on failure buf stays NULL and the context says why */
    return &m->grads;
}

clf_status clf_model_zero_grad(clf_model_t *m)
{
    return m->grads.buf ? clf_tensor_fill(m->ctx, &m->grads, 0.0f) : grads_ready(m);
}

/* ------------------------------------------------------------ memory */

/* The device memory the model holds besides activations. */
static size_t state_bytes(const clf_model_t *m)
{
    return (m->grads.buf ? 2 : 1) * m->lay.numel * sizeof(float) + clf_model_adam_held(&m->adam);
}

clf_status clf_model_plan(clf_model_t *m, const struct clf_model_shape *want)
{
    memset(&m->last_logits, 0, sizeof m->last_logits);  /* a view the plan may free */
    return clf_model_acts_plan(m->ctx, &m->cfg, &m->acts, want, state_bytes(m));
}

size_t clf_model_activation_bytes(const clf_model_t *m)
{
    return m->acts.bytes;
}

clf_status clf_model_reserve(clf_model_t *m, const struct clf_model_shape *max)
{
    if (!max || !max->batch || !max->src_rows || !max->tgt_rows || max->src_rows < max->batch ||
        max->tgt_rows < max->batch)
        return clf_error_set(m->ctx, CLF_ERR_ARG, "model_reserve: shape of %zu sentences, %zu source and %zu target rows",
                             max ? max->batch : 0, max ? max->src_rows : 0, max ? max->tgt_rows : 0);
    /* training: Adam's moments join the weights and gradients first, so
     * that the check of the whole counts them */
    const struct clf_device_info *d = &m->ctx->dev;
    size_t state = 2 * m->lay.numel * sizeof(float) + clf_model_adam_bytes(m->ctx, m->lay.numel);
    if (!m->adam.m.buf && state > d->global_mem)
        return clf_error_set(m->ctx, CLF_ERR_MEMORY,
                             "model: training %zu parameters takes %.1f MiB (weights, gradients and Adam's two "
                             "moments) before any activation: more than the %.1f MiB of %s; choose a smaller model",
                             m->lay.numel, state / MIB, d->global_mem / MIB, d->device_name);
    clf_status st;
    if ((st = grads_ready(m)) || (st = clf_model_adam_alloc(m->ctx, &m->adam, m->lay.numel)))
        return st;
    return clf_model_plan(m, max);
}

/* ------------------------------------------------------------ helpers */

struct layer_view clf_model_layer_view(clf_model_t *m, enum clf_side side, int l)
{
    struct layer_view v;
    memset(&v, 0, sizeof v);
    /* a model without gradients (it has not trained) leaves the d* NULL */
    if (side == CLF_SIDE_ENCODER) {
        struct enc_layer *w = &m->w.enc[l];
        v.self = &w->attn, v.ffn = &w->ffn;
        v.norm_g[SUB_SELF] = &w->norm1_g, v.norm_b[SUB_SELF] = &w->norm1_b;
        v.norm_g[SUB_FFN] = &w->norm2_g, v.norm_b[SUB_FFN] = &w->norm2_b;
        if (m->g.enc) {
            struct enc_layer *g = &m->g.enc[l];
            v.dself = &g->attn, v.dffn = &g->ffn;
            v.dnorm_g[SUB_SELF] = &g->norm1_g, v.dnorm_b[SUB_SELF] = &g->norm1_b;
            v.dnorm_g[SUB_FFN] = &g->norm2_g, v.dnorm_b[SUB_FFN] = &g->norm2_b;
        }
    } else {
        struct dec_layer *w = &m->w.dec[l];
        v.self = &w->self_attn, v.cross = &w->cross_attn, v.ffn = &w->ffn;
        v.norm_g[SUB_SELF] = &w->norm1_g, v.norm_b[SUB_SELF] = &w->norm1_b;
        v.norm_g[SUB_CROSS] = &w->norm2_g, v.norm_b[SUB_CROSS] = &w->norm2_b;
        v.norm_g[SUB_FFN] = &w->norm3_g, v.norm_b[SUB_FFN] = &w->norm3_b;
        if (m->g.dec) {
            struct dec_layer *g = &m->g.dec[l];
            v.dself = &g->self_attn, v.dcross = &g->cross_attn, v.dffn = &g->ffn;
            v.dnorm_g[SUB_SELF] = &g->norm1_g, v.dnorm_b[SUB_SELF] = &g->norm1_b;
            v.dnorm_g[SUB_CROSS] = &g->norm2_g, v.dnorm_b[SUB_CROSS] = &g->norm2_b;
            v.dnorm_g[SUB_FFN] = &g->norm3_g, v.dnorm_b[SUB_FFN] = &g->norm3_b;
        }
    }
    return v;
}

struct sublayer clf_model_sublayer(const clf_model_t *m, const struct layer_view *v, int k)
{
    struct sublayer s;
    memset(&s, 0, sizeof s);
    s.pre = m->cfg.norm == CLF_NORM_PRE;
    s.eps = m->cfg.ln_eps;
    s.norm_g = v->norm_g[k], s.norm_b = v->norm_b[k], s.dnorm_g = v->dnorm_g[k], s.dnorm_b = v->dnorm_b[k];
    if (k == SUB_FFN)
        s.f.ffn = v->ffn, s.f.dffn = v->dffn;
    else if (k == SUB_SELF)
        s.f.attn = v->self, s.f.dattn = v->dself;
    else
        s.f.attn = v->cross, s.f.dattn = v->dcross;
    s.f.window = -1;
    return s;
}

/* Each dropout site gets its own stream: side, layer, sublayer, place. */
static struct clf_dropout drop_at(const clf_model_t *m, const struct clf_step_opts *o, enum clf_side side, int layer,
                                  int sub, int place)
{
    struct clf_dropout d = {o->train ? m->cfg.dropout : 0.0f, m->seed, o->step,
                            (uint32_t)((((int)side * 256 + layer + 1) * 4 + sub) * 4 + place)};
    return d;
}

/* What a side is made of: its layers' parameters and gradients. */
struct side {
    enum clf_side side;
    int layers;
    size_t batch, len, n;    /* n = batch·len rows */
    struct side_acts *acts;
    int window;
    clf_tensor *final_g, *final_b, *dfinal_g, *dfinal_b;  /* pre-norm */
};

static struct clf_mha_desc mha_desc(clf_model_t *m, const struct side *s, int sub, size_t src_len)
{
    struct clf_mha_desc d = {.batch = s->batch, .heads = (size_t)m->cfg.heads, .d_model = (size_t)m->cfg.d_model,
                             .len_q = s->len, .len_kv = s->len, .window = -1, .self = true};
    if (sub == SUB_SELF) {
        d.causal = s->side == CLF_SIDE_DECODER;
        d.window = s->window;
        /* causal already hides the decoder's padding */
        d.key_len = s->side == CLF_SIDE_ENCODER ? &m->in.src_lens.t : NULL;
    } else {
        d.self = false;
        d.len_kv = src_len;
        d.key_len = &m->in.src_lens.t;
    }
    return d;
}

static bool has_sublayer(const struct side *s, int k)
{
    return k != SUB_CROSS || s->side == CLF_SIDE_DECODER;
}

/* Sublayer k of layer l of a side over whole sequences of s->n rows, and
 * its activations (views of those rows) in *acts. The cross-attention
 * reads mem and adds its gradient into dmem. */
static struct sublayer side_sublayer(clf_model_t *m, const struct side *s, const struct layer_view *v, int l, int k,
                                     const clf_tensor *mem, clf_tensor *dmem, size_t src_len,
                                     const struct clf_step_opts *o, struct sublayer_acts *acts)
{
    struct layer_acts *a = &s->acts->layers[l];
    struct sublayer_acts *x = &a->sub[k];
    struct sublayer sl = clf_model_sublayer(m, v, k);
    sl.drop = drop_at(m, o, s->side, l, k, 0);
    sl.f.drop = drop_at(m, o, s->side, l, k, 1);
    if (k == SUB_FFN) {
        sl.f.hidden = rows(&a->hidden, s->n);
    } else {
        sl.f.desc = mha_desc(m, s, k, src_len);
        sl.f.ws = k == SUB_SELF ? &a->self_ws : &a->cross_ws;
        if (k == SUB_CROSS)
            sl.f.mem = mem, sl.f.dmem = dmem;
    }
    *acts = (struct sublayer_acts){rows(&x->f_out, s->n), rows(&x->resid, s->n), rows(&x->normed, s->n),
                                   rows(&x->ln_mean, s->n), rows(&x->ln_rstd, s->n)};
    return sl;
}

/* Sublayer k of layer l's input: the output of the one before it. */
static clf_tensor sublayer_input(clf_model_t *m, const struct side *s, int l, int k)
{
    int prev = k - 1;
    if (prev >= 0 && !has_sublayer(s, prev))
        prev--;
    if (prev < 0)
        return rows(clf_model_layer_out(s->acts, l - 1, m->cfg.norm == CLF_NORM_PRE), s->n);
    return rows(sublayer_out(&s->acts->layers[l].sub[prev], m->cfg.norm == CLF_NORM_PRE), s->n);
}

/* ------------------------------------------------------------ forward */

static clf_status side_forward(clf_model_t *m, const struct side *s, const clf_tensor *mem, size_t src_len,
                               const struct clf_step_opts *o)
{
    clf_status st = CLF_OK;
    clf_tensor u = rows(&s->acts->embedded, s->n), out;
    for (int l = 0; l < s->layers; l++) {
        struct layer_view v = clf_model_layer_view(m, s->side, l);
        for (int k = 0; k < NSUB; k++) {
            if (!has_sublayer(s, k))
                continue;
            struct sublayer_acts a;
            struct sublayer sl = side_sublayer(m, s, &v, l, k, mem, NULL, src_len, o, &a);
            CLF_TRY(clf_sublayer_forward(m->ctx, &sl, &a, &u, &out));
            u = out;
        }
    }
    if (m->cfg.norm == CLF_NORM_PRE) {
        struct side_acts *a = s->acts;
        clf_tensor normed = rows(&a->final_normed, s->n), mean = rows(&a->final_mean, s->n),
                   rstd = rows(&a->final_rstd, s->n);
        CLF_TRY(clf_layernorm_forward(m->ctx, &normed, &mean, &rstd, &u, s->final_g, s->final_b, m->cfg.ln_eps));
    }
fail:
    return st;
}

static clf_tensor side_output(clf_model_t *m, const struct side *s)
{
    if (m->cfg.norm == CLF_NORM_PRE)
        return rows(&s->acts->final_normed, s->n);
    return rows(clf_model_layer_out(s->acts, s->layers - 1, m->cfg.norm == CLF_NORM_PRE), s->n);
}

/* ------------------------------------------------------------ backward */

/* A backward with a hook starts with no parameter told. */
static clf_status hook_begin(clf_model_t *m)
{
    if (!m->hook)
        return CLF_OK;
    const size_t n = m->lay.nparams;
    if (!m->told && (!(m->told = calloc(n, sizeof *m->told)) || !(m->told_now = malloc(n * sizeof *m->told_now))))
        return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    memset(m->told, 0, n * sizeof *m->told);
    return CLF_OK;
}

/* Tells the hook (when set) that the gradients of the parameters named
 * `prefix`... (every one not yet told, for NULL) are final. */
static clf_status grads_final(clf_model_t *m, const char *prefix)
{
    if (!m->hook)
        return CLF_OK;
    size_t n = 0, len = prefix ? strlen(prefix) : 0;
    for (size_t i = 0; i < m->lay.nparams; i++)
        if (!m->told[i] && (!prefix || !strncmp(m->lay.params[i].name, prefix, len)))
            m->told[i] = true, m->told_now[n++] = i;
    return n ? m->hook->fn(m->hook->user, m->told_now, n) : CLF_OK;
}

/* Layer l of a side (-1: its final norm, pre-norm) is done. */
static clf_status layer_grads_final(clf_model_t *m, enum clf_side side, int l)
{
    char prefix[64];
    const char *name = side == CLF_SIDE_DECODER ? "decoder" : "encoder";
    if (l < 0)
        snprintf(prefix, sizeof prefix, "%s.norm.", name);
    else
        snprintf(prefix, sizeof prefix, "%s.layers.%d.", name, l);
    return grads_final(m, prefix);
}

/* On entry grad.d_stream holds the gradient at the side's output; on exit,
 * the gradient at its embeddings. */
static clf_status side_backward(clf_model_t *m, const struct side *s, const clf_tensor *mem, clf_tensor *dmem,
                                size_t src_len, const struct clf_step_opts *o)
{
    clf_status st = CLF_OK;
    const struct sublayer_grads *g0 = &s->acts->grad;
    struct sublayer_grads g = {rows(&g0->d_stream, s->n), rows(&g0->d_ln_in, s->n), rows(&g0->d_f_out, s->n),
                               rows(&g0->d_f_in, s->n)};
    if (m->cfg.norm == CLF_NORM_PRE) {
        clf_tensor last = rows(clf_model_layer_out(s->acts, s->layers - 1, m->cfg.norm == CLF_NORM_PRE), s->n);
        clf_tensor mean = rows(&s->acts->final_mean, s->n), rstd = rows(&s->acts->final_rstd, s->n);
        CLF_TRY(clf_layernorm_backward(m->ctx, &g.d_ln_in, s->dfinal_g, s->dfinal_b, &g.d_stream, &last, &mean, &rstd,
                                       s->final_g));
        CLF_TRY(clf_tensor_copy(m->ctx, &g.d_stream, &g.d_ln_in));
        CLF_TRY(layer_grads_final(m, s->side, -1));
    }
    for (int l = s->layers - 1; l >= 0; l--) {
        struct layer_view v = clf_model_layer_view(m, s->side, l);
        for (int k = NSUB - 1; k >= 0; k--) {
            if (!has_sublayer(s, k))
                continue;
            struct sublayer_acts a;
            struct sublayer sl = side_sublayer(m, s, &v, l, k, mem, dmem, src_len, o, &a);
            clf_tensor u = sublayer_input(m, s, l, k);
            CLF_TRY(clf_sublayer_backward(m->ctx, &sl, &a, &u, &g));
        }
        CLF_TRY(layer_grads_final(m, s->side, l));
    }
fail:
    return st;
}

/* ------------------------------------------------------------ the step */

static clf_status check_batch(clf_model_t *m, const struct clf_model_batch *b)
{
    const struct clf_model_config *c = &m->cfg;
    if (!b->batch || !b->src_len || !b->tgt_len || !b->src || !b->tgt_in || !b->tgt_out)
        return clf_error_set(m->ctx, CLF_ERR_ARG, "model: empty batch (%zu × %zu source, %zu target)", b->batch,
                             b->src_len, b->tgt_len);
    if (b->src_len > (size_t)c->max_len || b->tgt_len > (size_t)c->max_len)
        return clf_error_set(m->ctx, CLF_ERR_ARG,
                             "model: sequences of %zu (source) and %zu (target) tokens exceed max_len %d: "
                             "filter long sentences or raise max_len",
                             b->src_len, b->tgt_len, c->max_len);
    const int32_t *arrays[] = {b->src, b->tgt_in, b->tgt_out};
    const size_t lens[] = {b->src_len, b->tgt_len, b->tgt_len};
    const char *names[] = {"source", "target input", "target output"};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < b->batch * lens[a]; i++)
            if (arrays[a][i] < 0 || arrays[a][i] >= c->vocab)
                return clf_error_set(m->ctx, CLF_ERR_ARG,
                                     "model: %s id %d at sentence %zu, position %zu is outside the vocabulary "
                                     "(%d): does the tokenizer match the model?",
                                     names[a], (int)arrays[a][i], i / lens[a], i % lens[a], c->vocab);
    return CLF_OK;
}

/* Uploads without waiting for the device (see struct clf_upload). */
static clf_status write_ints(clf_model_t *m, struct model_ints *u, const int32_t *x, size_t n)
{
    return clf_upload_ints(m->ctx, &u->up, x, n, &u->t);
}

static struct side make_side(clf_model_t *m, enum clf_side side, size_t batch, size_t len)
{
    const bool dec = side == CLF_SIDE_DECODER;
    struct side s = {side, dec ? m->cfg.dec_layers : m->cfg.enc_layers, batch, len, batch * len,
                     dec ? &m->acts.dec : &m->acts.enc, dec ? m->cfg.dec_window : m->cfg.enc_window,
                     NULL, NULL, NULL, NULL};
    if (m->cfg.norm == CLF_NORM_PRE) {
        s.final_g = dec ? &m->w.dec_norm_g : &m->w.enc_norm_g;
        s.final_b = dec ? &m->w.dec_norm_b : &m->w.enc_norm_b;
        s.dfinal_g = dec ? &m->g.dec_norm_g : &m->g.enc_norm_g;
        s.dfinal_b = dec ? &m->g.dec_norm_b : &m->g.enc_norm_b;
    }
    return s;
}

/* Uploads the source ids and lengths and runs the embeddings and the
 * encoder; *mem is a view of its output (batch·src_len, d). The activations
 * must have been planned for this shape. */
clf_status clf_model_encode(clf_model_t *m, const int32_t *src, size_t batch, size_t src_len,
                            const struct clf_step_opts *o, clf_tensor *mem)
{
    clf_status st;
    struct model_acts *a = &m->acts;
    struct side enc = make_side(m, CLF_SIDE_ENCODER, batch, src_len);
    if (batch > m->in.lens_cap) {  /* kept: a batch costs no allocation */
        int32_t *p = realloc(m->in.lens, batch * sizeof *p);
        if (!p)
            return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory for %zu source lengths", batch);
        m->in.lens = p, m->in.lens_cap = batch;
    }
    int32_t *lens = m->in.lens;
    for (size_t i = 0; i < batch; i++) {
        size_t n = 0;
        while (n < src_len && src[i * src_len + n] != m->cfg.pad_id)
            n++;
        lens[i] = (int32_t)n;
    }
    CLF_TRY(write_ints(m, &m->in.src_ids, src, enc.n));
    CLF_TRY(write_ints(m, &m->in.src_lens, lens, batch));
    struct clf_embed_desc desc = {.batch = batch, .len = src_len, .scale = sqrtf((float)m->cfg.d_model),
                                  .drop = drop_at(m, o, CLF_SIDE_ENCODER, -1, 0, 2),
                                  .layout = model_pos_layout(&m->cfg)};
    clf_tensor embedded = rows(&a->enc.embedded, enc.n);
    CLF_TRY(clf_embed_forward(m->ctx, &embedded, &m->in.src_ids.t, &m->w.src_embed,
                          m->cfg.positions == CLF_POS_LEARNED ? &m->w.pos : NULL, &desc));
    CLF_TRY(side_forward(m, &enc, NULL, 0, o));
    *mem = side_output(m, &enc);
fail:
    return st;
}

clf_status clf_model_side_grad(clf_model_t *m, enum clf_side side, const clf_tensor *x, const clf_tensor *mem,
                               const clf_tensor *dy, clf_tensor *dx)
{
    clf_ctx_t *ctx = m->ctx;
    const size_t d = (size_t)m->cfg.d_model;
    const bool dec = side == CLF_SIDE_DECODER;
    if (side != CLF_SIDE_ENCODER && !dec)
        return clf_error_set(ctx, CLF_ERR_ARG, "side_grad: side is %d, want CLF_SIDE_ENCODER or CLF_SIDE_DECODER",
                             (int)side);
    if (!x || !dy || !dx || (dec && !mem))
        return clf_error_set(ctx, CLF_ERR_ARG, "side_grad: NULL tensor (the decoder's mem too)");
    const size_t n = x->shape[0], n_mem = dec ? mem->shape[0] : n;
    const clf_tensor *ts[] = {x, dy, dx, dec ? mem : x};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        if (ts[i]->ndim != 2 || ts[i]->shape[1] != d || ts[i]->shape[0] != (i == 3 ? n_mem : n))
            return clf_error_set(ctx, CLF_ERR_ARG,
                                 "side_grad: x, dy and dx must be (n, %zu) with n = %zu rows, the decoder's mem "
                                 "(n_mem, %zu)", d, n, d);
    if (n < 1 || n > (size_t)m->cfg.max_len || n_mem > (size_t)m->cfg.max_len)
        return clf_error_set(ctx, CLF_ERR_ARG, "side_grad: %zu rows (memory %zu), want 1..max_len %d", n, n_mem,
                             m->cfg.max_len);
    struct clf_model_shape shape = {1, n_mem, dec ? n : 0};
    clf_status st;
    if ((st = grads_ready(m)) || (st = clf_model_plan(m, &shape)))
        return st;
    struct model_acts *a = &m->acts;
    struct side s = make_side(m, side, 1, n);
    struct clf_step_opts o = {false, 0, 0.0f};
    /* one sequence, no padding: the attention's key length is every row of
     * its keys (the encoder's own, or the decoder's memory) */
    int32_t len = (int32_t)n_mem;
    clf_tensor in = rows(&s.acts->embedded, n), grad = rows(&s.acts->grad.d_stream, n), dmem = rows(&a->d_mem, n_mem);
    CLF_TRY(clf_upload_ints(ctx, &m->in.src_lens.up, &len, 1, &m->in.src_lens.t));
    CLF_TRY(clf_tensor_copy(ctx, &in, x));
    CLF_TRY(side_forward(m, &s, dec ? mem : NULL, dec ? n_mem : 0, &o));
    CLF_TRY(clf_tensor_copy(ctx, &grad, dy));
    if (dec)
        CLF_TRY(clf_tensor_fill(ctx, &dmem, 0.0f));
    CLF_TRY(side_backward(m, &s, dec ? mem : NULL, dec ? &dmem : NULL, dec ? n_mem : 0, &o));
    CLF_TRY(clf_tensor_copy(ctx, dx, &grad));
fail:
    return st;
}

/* The next (loss, tokens) pair of the pending ones, a view of 2 floats;
 * the list grows (its pairs copied on the device) when full. */
static clf_status loss_slot(clf_model_t *m, clf_tensor *out)
{
    struct model_losses *l = &m->losses;
    clf_ctx_t *ctx = m->ctx;
    clf_status st = CLF_OK;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16, n = 2 * cap;
        clf_tensor t;
        if ((st = clf_tensor_init(ctx, &t, 1, &n)))
            return st;
        if (l->n) {
            size_t used = 2 * l->n;
            clf_tensor from, to;
            if ((st = clf_tensor_view(ctx, &l->buf, 0, 1, &used, &from)) ||
                (st = clf_tensor_view(ctx, &t, 0, 1, &used, &to)) || (st = clf_tensor_copy(ctx, &to, &from))) {
                clf_tensor_free(&t);
                return st;
            }
        }
        clf_tensor_free(&l->buf);
        l->buf = t;
        l->cap = cap;
    }
    size_t two = 2;
    return clf_tensor_view(ctx, &l->buf, 2 * l->n, 1, &two, out);
}

/* The ids of a batch and, when training, the embeddings' backward index,
 * built here on the host where the ids are: nothing is read back later. */
static clf_status upload_batch(clf_model_t *m, const struct clf_model_batch *b, bool backward)
{
    clf_ctx_t *ctx = m->ctx;
    const size_t V = (size_t)m->cfg.vocab, ns = b->batch * b->src_len, nt = b->batch * b->tgt_len;
    struct model_inputs *in = &m->in;
    clf_status st;
    if ((st = write_ints(m, &in->tgt_ids, b->tgt_in, nt)) || (st = write_ints(m, &in->tgt_out, b->tgt_out, nt)))
        return st;
    if (!backward)
        return CLF_OK;
    if ((st = in->tgt_ix ? clf_embed_index_update(ctx, in->tgt_ix, b->tgt_in, nt)
                         : clf_embed_index_init(ctx, &in->tgt_ix, b->tgt_in, nt, V)))
        return st;
    return in->src_ix ? clf_embed_index_update(ctx, in->src_ix, b->src, ns)
                      : clf_embed_index_init(ctx, &in->src_ix, b->src, ns, V);
}

/* The forward on one batch and its loss, and with `backward` the backward
 * after it, adding o->grad_scale times the loss's gradients into the
 * model's: clf_model_forward and clf_model_accumulate. */
static clf_status run_batch(clf_model_t *m, const struct clf_model_batch *b, const struct clf_step_opts *o,
                            bool backward)
{
    clf_status st;
    clf_ctx_t *ctx = m->ctx;
    const struct clf_model_config *c = &m->cfg;
    struct clf_model_shape shape = {b->batch, b->batch * b->src_len, b->batch * b->tgt_len};
    if ((st = check_batch(m, b)) || (st = clf_model_plan(m, &shape)))
        return st;
    struct model_acts *a = &m->acts;
    struct side enc = make_side(m, CLF_SIDE_ENCODER, b->batch, b->src_len),
                dec = make_side(m, CLF_SIDE_DECODER, b->batch, b->tgt_len);

    clf_tensor loss;
    CLF_TRY(loss_slot(m, &loss));
    CLF_TRY(upload_batch(m, b, backward));
    const float scale = sqrtf((float)c->d_model);
    const clf_tensor *learned = c->positions == CLF_POS_LEARNED ? &m->w.pos : NULL;
    struct clf_embed_desc src_desc = {.batch = b->batch, .len = b->src_len, .scale = scale,
                                      .drop = drop_at(m, o, CLF_SIDE_ENCODER, -1, 0, 2),
                                      .layout = model_pos_layout(c)};
    struct clf_embed_desc tgt_desc = {.batch = b->batch, .len = b->tgt_len, .scale = scale,
                                      .drop = drop_at(m, o, CLF_SIDE_DECODER, -1, 0, 2),
                                      .layout = model_pos_layout(c)};
    clf_tensor tgt_embedded = rows(&a->dec.embedded, dec.n);
    clf_tensor mem;
    CLF_TRY(clf_model_encode(m, b->src, b->batch, b->src_len, o, &mem));
    CLF_TRY(clf_embed_forward(ctx, &tgt_embedded, &m->in.tgt_ids.t, &m->w.embed, learned, &tgt_desc));
    CLF_TRY(side_forward(m, &dec, &mem, b->src_len, o));
    clf_tensor h = side_output(m, &dec);

    clf_tensor logits = rows(&a->logits, dec.n), dh = rows(&a->dec.grad.d_stream, dec.n);
    struct clf_loss_desc ld = {.smoothing = c->label_smoothing, .pad_id = c->pad_id, .grad_scale = o->grad_scale};
    if (c->logits_bias != CLF_LOGITS_BIAS_NONE)
        ld.bias = &m->w.logits_bias;
    if (backward && c->logits_bias == CLF_LOGITS_BIAS_TRAINED)
        ld.dbias = &m->g.logits_bias;
    CLF_TRY(clf_loss_forward_backward(ctx, &loss, backward ? &dh : NULL, backward ? &m->g.embed : NULL, &logits, &h,
                                  &m->w.embed, &m->in.tgt_out.t, &ld));
    /* forward only, the loss leaves the logits in place */
    if (backward)
        memset(&m->last_logits, 0, sizeof m->last_logits);
    else
        m->last_logits = logits;

    if (backward) {
        CLF_TRY(hook_begin(m));
        CLF_TRY(grads_final(m, "logits."));
        clf_tensor dmem = rows(&a->d_mem, enc.n), denc = rows(&a->enc.grad.d_stream, enc.n),
                   ddec = rows(&a->dec.grad.d_stream, dec.n);
        clf_tensor *dlearned = learned ? &m->g.pos : NULL;
        CLF_TRY(clf_tensor_fill(ctx, &dmem, 0.0f));
        CLF_TRY(side_backward(m, &dec, &mem, &dmem, b->src_len, o));
        CLF_TRY(clf_embed_backward(ctx, &m->g.embed, dlearned, &ddec, m->in.tgt_ix, &tgt_desc));
        /* the target embedding is the output projection too, and also the
         * source's when shared */
        if (!c->share_embeddings)
            CLF_TRY(grads_final(m, "embed."));
        CLF_TRY(clf_tensor_copy(ctx, &denc, &dmem));
        CLF_TRY(side_backward(m, &enc, NULL, NULL, 0, o));
        CLF_TRY(clf_embed_backward(ctx, &m->g.src_embed, dlearned, &denc, m->in.src_ix, &src_desc));
        CLF_TRY(grads_final(m, NULL));
    }
    m->losses.n++;
fail:
    if (backward)
        m->hook = NULL;
    return st;
}

clf_status clf_model_forward(clf_model_t *m, const struct clf_model_batch *b)
{
    const struct clf_step_opts eval = {false, 0, 0.0f};
    return run_batch(m, b, &eval, false);
}

clf_status clf_model_accumulate(clf_model_t *m, const struct clf_model_batch *b, const struct clf_step_opts *o)
{
    if (o->grad_scale == 0)
        return clf_error_set(m->ctx, CLF_ERR_ARG,
                             "model_accumulate: grad_scale is %g, want a nonzero scale (a forward alone is "
                             "clf_model_forward)",
                             (double)o->grad_scale);
    if (m->compute != CLF_COMPUTE_FLOAT32)  /* the forward's GEMMs would not be the backward's */
        return clf_error_set(m->ctx, CLF_ERR_UNSUPPORTED,
                             "model_accumulate: the model computes in %s; training computes in float32 "
                             "(clf_model_compute_set(m, \"float32\") first)",
                             clf_compute_type_str((enum clf_compute_type)m->compute));
    /* float32 packed for decoding (clf_model_compute_set): the update
     * makes the packed copies stale, and training's GEMMs run unpacked */
    clf_status st;
    if ((st = clf_gemm_weights_set(m->ctx, m->weights.buf, CLF_GEMM_W_FLOAT32)) || (st = grads_ready(m)))
        return st;
    return run_batch(m, b, o, true);
}

void clf_model_backward_hook(clf_model_t *m, const struct clf_backward_hook *hook) { m->hook = hook; }

clf_status clf_model_loss_take(clf_model_t *m, double *loss_sum, double *tokens)
{
    struct model_losses *l = &m->losses;
    *loss_sum = 0, *tokens = 0;
    if (!l->n)
        return CLF_OK;
    float *pairs = malloc(2 * l->n * sizeof *pairs);
    if (!pairs)
        return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    size_t n = 2 * l->n;
    clf_tensor v;
    clf_status st = clf_tensor_view(m->ctx, &l->buf, 0, 1, &n, &v);
    if (st == CLF_OK && (st = clf_tensor_download(m->ctx, &v, pairs)) == CLF_OK) {
        /* batch after batch in double, as callers summed the single results */
        for (size_t i = 0; i < l->n; i++)
            *loss_sum += pairs[2 * i], *tokens += pairs[2 * i + 1];
    }
    l->n = 0;
    free(pairs);
    return st;
}

clf_status clf_model_forward_backward(clf_model_t *m, const struct clf_model_batch *b, const struct clf_step_opts *o,
                                      double *loss_sum, double *tokens)
{
    clf_status st = clf_model_accumulate(m, b, o);
    if (st != CLF_OK)
        return st;
    return clf_model_loss_take(m, loss_sum, tokens);
}

const clf_tensor *clf_model_logits(const clf_model_t *m)
{
    return m->last_logits.buf ? &m->last_logits : NULL;
}
