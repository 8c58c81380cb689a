/* decode.c: incremental decoding. The encoder runs once per sentence
 * added; each step then feeds one token per hypothesis through the
 * decoder, whose self-attention keys and values are cached (one new
 * position per step, not the whole prefix) and whose encoder–decoder
 * attention uses keys and values projected once from the memory.
 * Rows: R = batch·beam hypotheses; the beams of a sentence share its
 * memory (one row of each cross cache per sentence, clf_kv_cache_share).
 * When sentences finish, the search keeps only the live rows
 * (clf_decoder_reorder with fewer rows): the caches and the source lengths are
 * gathered into their first rows and every later step runs on views of
 * those rows, so a finished sentence costs nothing more. New sentences
 * join after the live rows (clf_decoder_add: their encoder runs then, their
 * memory goes into the cross caches' free rows) and each row keeps its own
 * position: while they differ, the embedding reads per-row positions and
 * the self caches append at and attend up to each row's own (a padding
 * mask of position + 1 keys instead of the causal one). The buffers are
 * sized for `room` sentences up front. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "runtime/ctx.h"

static clf_status alloc(clf_ctx_t *ctx, clf_tensor *t, size_t rows, size_t cols)
{
    size_t shape[2] = {rows, cols};
    return clf_tensor_init(ctx, t, cols ? 2 : 1, shape);
}

void clf_decoder_free(struct decoder *d)
{
    if (!d->m)
        return;
    for (int l = 0; l < d->m->cfg.dec_layers; l++) {
        if (d->self)
            clf_kv_cache_free(&d->self[l]);
        if (d->cross)
            clf_kv_cache_free(&d->cross[l]);
    }
    free(d->self);
    free(d->cross);
    free(d->lens), free(d->pos), free(d->pos_next);
    clf_upload_free(&d->tok_up);
    clf_upload_free(&d->pos_up);
    clf_upload_free(&d->len_up);
    clf_tensor *ts[] = {&d->pos_table, &d->embedded, &d->f_out,  &d->resid[0], &d->resid[1], &d->normed,
                        &d->ln_mean, &d->ln_rstd, &d->hidden, &d->logits,   &d->logp,     &d->lse,
                        &d->key_len, &d->top_val, &d->eos_logp, &d->top_idx};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clf_tensor_free(ts[i]);
    memset(d, 0, sizeof *d);
}

size_t clf_decoder_bytes(const clf_model_t *m, size_t room, size_t width, size_t beam, size_t max_steps)
{
    const struct clf_model_config *c = &m->cfg;
    const size_t R = room * beam, D = (size_t)c->d_model, H = (size_t)c->heads;
    /* per layer: self k, v and the reorder's spare, its scratch and lse;
     * cross [K | V] and its spare; then the step's activations and logits,
     * and the positions' sinusoids */
    const size_t layer = 3 * R * max_steps * D + R * 4 * D + R * H + 2 * room * width * 2 * D + R * 4 * D + R * H;
    return ((size_t)c->dec_layers * layer + R * (7 * D + (size_t)c->d_ff + 2 * (size_t)c->vocab + 4) +
            max_steps * D) * sizeof(float);
}

clf_status clf_decoder_init(struct decoder *d, clf_model_t *m, size_t room, size_t width, size_t beam,
                            size_t max_steps)
{
    clf_ctx_t *ctx = m->ctx;
    const struct clf_model_config *c = &m->cfg;
    const size_t R = room * beam, dm = (size_t)c->d_model;
    clf_status st;
    memset(d, 0, sizeof *d);
    d->m = m;
    d->beam = beam;
    d->max_steps = max_steps;
    d->room = room;
    d->width = width;
    if (max_steps > (size_t)c->max_len || width > (size_t)c->max_len)
        return clf_error_set(ctx, CLF_ERR_ARG, "decoding %zu steps from sources of %zu tokens exceeds the model's "
                             "max_len %d", max_steps, width, c->max_len);
    const size_t bytes = clf_decoder_bytes(m, room, width, beam, max_steps), have = (size_t)ctx->dev.global_mem;
    if (bytes > have)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "decoding %zu sentences at once (beam %zu, sources of up to %zu "
                             "tokens, %zu steps) takes %.1f MiB for the decoder's caches and activations, more than "
                             "the %.1f MiB of %s: translate fewer sentences at once (--batch, --max-tokens, "
                             "--max-batch-tokens) or shorter outputs (--max-length)", room, beam, width, max_steps,
                             bytes / 1048576.0, have / 1048576.0, ctx->dev.device_name);
    d->lens = malloc(room * sizeof *d->lens);
    d->pos = malloc(R * sizeof *d->pos);
    d->pos_next = malloc(R * sizeof *d->pos_next);
    d->self = calloc((size_t)c->dec_layers, sizeof *d->self);
    d->cross = calloc((size_t)c->dec_layers, sizeof *d->cross);
    if (!d->lens || !d->pos || !d->pos_next || !d->self || !d->cross) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    CLF_TRY(clf_tensor_init_dtype(ctx, &d->key_len, CLF_I32, 1, &room));
    for (int l = 0; l < c->dec_layers; l++) {
        CLF_TRY(clf_kv_cache_init(ctx, &d->self[l], R, (size_t)c->heads, dm, max_steps, true, 0));
        CLF_TRY(clf_kv_cache_init(ctx, &d->cross[l], R, (size_t)c->heads, dm, max_steps, false, width));
        CLF_TRY(clf_kv_cache_share(ctx, &d->cross[l], beam));
        CLF_TRY(clf_kv_cache_share(ctx, &d->self[l], beam));  /* beams reselect without copying keys */
        CLF_TRY(clf_kv_cache_keep(ctx, &d->self[l], NULL, 0));  /* empty: clf_decoder_add fills them */
        CLF_TRY(clf_kv_cache_keep(ctx, &d->cross[l], NULL, 0));
    }
    if (c->positions != CLF_POS_LEARNED) {
        CLF_TRY(alloc(ctx, &d->pos_table, max_steps, dm));
        CLF_TRY(clf_pos_sinusoid_table(ctx, &d->pos_table, model_pos_layout(c)));
    }
    CLF_TRY(alloc(ctx, &d->embedded, R, dm));
    CLF_TRY(alloc(ctx, &d->f_out, R, dm));
    CLF_TRY(alloc(ctx, &d->resid[0], R, dm));
    CLF_TRY(alloc(ctx, &d->resid[1], R, dm));
    CLF_TRY(alloc(ctx, &d->normed, R, dm));
    CLF_TRY(alloc(ctx, &d->ln_mean, R, 0));
    CLF_TRY(alloc(ctx, &d->ln_rstd, R, 0));
    CLF_TRY(alloc(ctx, &d->hidden, R, (size_t)c->d_ff));
    CLF_TRY(alloc(ctx, &d->logits, R, (size_t)c->vocab));
    CLF_TRY(alloc(ctx, &d->lse, R, 0));
    return CLF_OK;
fail:
    clf_decoder_free(d);
    return st;
}

clf_status clf_decoder_add(struct decoder *d, const int32_t *src, size_t n, size_t src_len)
{
    clf_model_t *m = d->m;
    clf_ctx_t *ctx = m->ctx;
    const struct clf_model_config *c = &m->cfg;
    const size_t live = d->rows / d->beam, nr = n * d->beam;
    clf_status st = CLF_OK;
    if (!n || live + n > d->room || !src_len || src_len > d->width)
        return clf_error_set(ctx, CLF_ERR_ARG, "clf_decoder_add: %zu sentences of %zu tokens beside %zu: room for %zu "
                             "of at most %zu", n, src_len, live, d->room, d->width);
    /* the encoder, once per sentence */
    struct clf_step_opts eval = {false, 0, 0.0f};
    clf_tensor mem;
    struct clf_model_shape shape = {n, n * src_len, 0};  /* the encoder only */
    CLF_TRY(clf_model_plan(m, &shape));
    CLF_TRY(clf_model_encode(m, src, n, src_len, &eval, &mem));
    for (size_t b = 0; b < n; b++) {
        int32_t k = 0;
        while ((size_t)k < src_len && src[b * src_len + k] != c->pad_id)
            k++;
        d->lens[live + b] = k;
    }
    clf_tensor kl = rows(&d->key_len, live + n);
    CLF_TRY(clf_tensor_upload_i32(ctx, &kl, d->lens));
    for (int l = 0; l < c->dec_layers; l++) {
        struct layer_view v = clf_model_layer_view(m, CLF_SIDE_DECODER, l);
        CLF_TRY(clf_kv_cache_add(ctx, &d->self[l], nr, NULL, 0, NULL, NULL));
        CLF_TRY(clf_kv_cache_add(ctx, &d->cross[l], nr, &mem, src_len, &d->key_len, v.cross));
    }
    for (size_t r = d->rows; r < d->rows + nr; r++)
        d->pos[r] = 0;
    d->rows += nr;
fail:
    return st;
}

/* logits (R, V) = h (R, d) · Eᵀ (+ the logits bias): the output
 * projection, tied to the target embeddings (training's is in the loss op,
 * with its backward). */
static clf_status output_projection(clf_model_t *m, clf_tensor *logits, const clf_tensor *h)
{
    size_t dm = (size_t)m->cfg.d_model, V = (size_t)m->cfg.vocab, R = clf_tensor_numel(h) / dm;
    struct clf_mat a = {h->buf, h->offset, dm, false, 0}, e = {m->w.embed.buf, m->w.embed.offset, dm, true, 0},
                   o = {logits->buf, logits->offset, V, false, 0};
    if (m->cfg.logits_bias != CLF_LOGITS_BIAS_NONE)
        return clf_gemm_bias(m->ctx, R, V, dm, &a, &e, &m->w.logits_bias, &o);
    return clf_gemm(m->ctx, R, V, dm, 1.0f, &a, &e, 0.0f, &o);
}

/* Sublayer k of decoder layer l at position `step`: attention over the
 * layer's caches, no dropout. */
static struct sublayer step_sublayer(struct decoder *d, const struct layer_view *v, int l, int k, size_t step)
{
    struct sublayer sl = clf_model_sublayer(d->m, v, k);
    if (k == SUB_FFN) {
        sl.f.hidden = rows(&d->hidden, d->rows);
    } else {
        sl.f.cache = k == SUB_SELF ? &d->self[l] : &d->cross[l];
        sl.f.window = k == SUB_SELF ? d->m->cfg.dec_window : -1;
        sl.f.step = step;
    }
    return sl;
}

/* Before a step: the rows' positions on the device when they differ (rows
 * that joined later), else every self cache attends causally from `step`;
 * *step is the largest position. */
static clf_status step_positions(struct decoder *d, size_t *step, bool *ragged, clf_tensor *pos)
{
    clf_ctx_t *ctx = d->m->ctx;
    const size_t R = d->rows;
    size_t top = (size_t)d->pos[0];
    *ragged = false;
    for (size_t r = 1; r < R; r++) {
        *ragged |= d->pos[r] != d->pos[0];
        top = (size_t)d->pos[r] > top ? (size_t)d->pos[r] : top;
    }
    *step = top;
    if (top >= d->max_steps)
        return clf_error_set(ctx, CLF_ERR_ARG, "decoding step %zu past the planned %zu", top, d->max_steps);
    clf_tensor len = {0};
    if (*ragged) {
        if (d->m->cfg.dec_window >= 0)
            return clf_error_set(ctx, CLF_ERR_UNSUPPORTED, "sentences joining a decoding under way need the "
                                 "decoder's self-attention unrestricted (dec_window %d)", d->m->cfg.dec_window);
        for (size_t r = 0; r < R; r++)
            d->pos_next[r] = d->pos[r] + 1;
        clf_status st;
        if ((st = clf_upload_ints(ctx, &d->pos_up, d->pos, R, pos)) ||
            (st = clf_upload_ints(ctx, &d->len_up, d->pos_next, R, &len)))
            return st;
    }
    for (int l = 0; l < d->m->cfg.dec_layers; l++)
        clf_kv_cache_rows_at(&d->self[l], *ragged ? &len : NULL);
    return CLF_OK;
}

clf_status clf_decoder_step(struct decoder *d, const int32_t *tokens, float *logp)
{
    clf_model_t *m = d->m;
    clf_ctx_t *ctx = m->ctx;
    const struct clf_model_config *c = &m->cfg;
    const struct clf_dropout none = {0.0f, 0, 0, 0};
    const size_t R = d->rows;  /* the live rows: views of the first R of every buffer */
    clf_status st = CLF_OK;
    if (!R)
        return clf_error_set(ctx, CLF_ERR_ARG, "decoding step with no sentence");
    size_t step;
    bool ragged;
    clf_tensor tok, posv, emb = rows(&d->embedded, R), normed = rows(&d->normed, R),
               mean = rows(&d->ln_mean, R), rstd = rows(&d->ln_rstd, R), logits = rows(&d->logits, R);
    if ((st = step_positions(d, &step, &ragged, &posv)) ||
        (st = clf_upload_ints(ctx, &d->tok_up, tokens, R, &tok)) != CLF_OK)  /* no wait for the device */
        return st;
    struct clf_embed_desc ed = {.batch = R, .len = 1, .pos_offset = step, .scale = sqrtf((float)c->d_model),
                                .drop = none, .layout = model_pos_layout(c)};
    if (ragged)
        ed.positions = &posv, ed.pos_end = step + 1;
    /* the positions' table: learned, or the sinusoids clf_decoder_init computed */
    CLF_TRY(clf_embed_forward(ctx, &emb, &tok, &m->w.embed,
                              c->positions == CLF_POS_LEARNED ? &m->w.pos : &d->pos_table, &ed));
    clf_tensor u = emb, out;
    int next = 0;
    for (int l = 0; l < c->dec_layers; l++) {
        struct layer_view v = clf_model_layer_view(m, CLF_SIDE_DECODER, l);
        for (int k = 0; k < NSUB; k++) {
            struct sublayer_acts a = {rows(&d->f_out, R), rows(&d->resid[next], R), normed, mean, rstd};
            struct sublayer sl = step_sublayer(d, &v, l, k, step);
            next ^= 1;
            CLF_TRY(clf_sublayer_forward(ctx, &sl, &a, &u, &out));
            u = out;
        }
    }
    if (c->norm == CLF_NORM_PRE) {
        CLF_TRY(clf_layernorm_forward(ctx, &normed, &mean, &rstd, &u, &m->w.dec_norm_g, &m->w.dec_norm_b,
                                      c->ln_eps));
        u = normed;
    }
    CLF_TRY(output_projection(m, &logits, &u));
    for (size_t r = 0; r < R; r++)
        d->pos[r]++;
    d->logp_ready = logp || c->forbid_pad;
    if (!d->logp_ready) {  /* top-k subtracts the log-sum-exp from the few logits it reads */
        clf_tensor lse = rows(&d->lse, R);
        CLF_TRY(clf_lse_rows(ctx, &lse, &logits));
        return st;
    }
    /* allocated at the first step that writes it */
    if (!d->logp.buf)
        CLF_TRY(alloc(ctx, &d->logp, d->room * d->beam, (size_t)c->vocab));
    clf_tensor lp = rows(&d->logp, R);
    CLF_TRY(clf_logsoftmax_forward(ctx, &lp, &logits));
    /* as transformers' bad_words_ids: after the log-softmax, no renormalising */
    if (c->forbid_pad)
        CLF_TRY(clf_column_fill(ctx, &lp, (size_t)c->pad_id, CLF_FORBIDDEN_LOGP));
    if (logp)
        CLF_TRY(clf_tensor_download(ctx, &lp, logp));
fail:
    return st;
}

clf_status clf_decoder_topk(struct decoder *d, size_t k, int skip, float *val, int32_t *idx, float *eos)
{
    clf_ctx_t *ctx = d->m->ctx;
    clf_status st = CLF_OK;
    if (d->topk != k) {  /* one search asks for one k: allocated once */
        clf_tensor_free(&d->top_val);
        clf_tensor_free(&d->eos_logp);
        clf_tensor_free(&d->top_idx);
        d->topk = 0;
        const size_t R = d->room * d->beam;
        size_t shape[2] = {R, k};
        CLF_TRY(alloc(ctx, &d->top_val, R, k));
        CLF_TRY(alloc(ctx, &d->eos_logp, R, 0));
        CLF_TRY(clf_tensor_init_dtype(ctx, &d->top_idx, CLF_I32, 2, shape));
        d->topk = k;
    }
    const size_t R = d->rows;
    clf_tensor tv = rows(&d->top_val, R), ti = rows(&d->top_idx, R), te = rows(&d->eos_logp, R),
               lp = rows(&d->logp, R), logits = rows(&d->logits, R), lse = rows(&d->lse, R);
    if (d->logp_ready)
        CLF_TRY(clf_topk_rows(ctx, &tv, &ti, &te, &lp, NULL, k, skip, (size_t)d->m->cfg.eos_id));
    else
        CLF_TRY(clf_topk_rows(ctx, &tv, &ti, &te, &logits, &lse, k, skip, (size_t)d->m->cfg.eos_id));
    /* one wait for the three: the last read's, on the in-order queue */
    CLF_TRY(clf_tensor_read_enqueue(ctx, &ti, idx));
    CLF_TRY(clf_tensor_read_enqueue(ctx, &te, eos));
    CLF_TRY(clf_tensor_download(ctx, &tv, val));
fail:
    return st;
}

clf_status clf_decoder_reorder(struct decoder *d, const int32_t *src_rows, size_t n)
{
    clf_ctx_t *ctx = d->m->ctx;
    const int layers = d->m->cfg.dec_layers;
    clf_status st = CLF_OK;
    if (n > d->rows)
        return clf_error_set(ctx, CLF_ERR_ARG, "clf_decoder_reorder: %zu rows of %zu", n, d->rows);
    size_t top = 0;  /* the positions follow (src_rows checked by the caches below) */
    for (size_t r = 0; r < n; r++) {
        d->pos_next[r] = src_rows[r] >= 0 && (size_t)src_rows[r] < d->rows ? d->pos[src_rows[r]] : 0;
        top = (size_t)d->pos_next[r] > top ? (size_t)d->pos_next[r] : top;
    }
    for (int l = 0; l < layers && st == CLF_OK; l++) {
        /* the rows kept hold `top` positions at most: the gather copies those
         * (a row that decoded longest may just have left) */
        d->self[l].len = top < d->self[l].len ? top : d->self[l].len;
        st = clf_kv_cache_keep(ctx, &d->self[l], src_rows, n);
    }
    if (st)
        return st;
    memcpy(d->pos, d->pos_next, n * sizeof *d->pos);
    if (n == d->rows)
        return st;
    /* sentences leave: their memory rows and lengths follow (rows come in
     * whole beams of one sentence, which clf_kv_cache_keep checks) */
    const size_t ns = n / d->beam;
    int32_t *lens = malloc((ns ? ns : 1) * sizeof *lens);
    if (!lens)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    for (size_t s = 0; s < ns; s++)
        lens[s] = d->lens[src_rows[s * d->beam] / (int32_t)d->beam];
    memcpy(d->lens, lens, ns * sizeof *lens);
    free(lens);
    for (int l = 0; l < layers && st == CLF_OK; l++)
        st = clf_kv_cache_keep(ctx, &d->cross[l], src_rows, n);
    if (st == CLF_OK && ns) {
        clf_tensor kl = rows(&d->key_len, ns);
        st = clf_tensor_upload_i32(ctx, &kl, d->lens);
    }
    if (st == CLF_OK)
        d->rows = n;
    return st;
}
