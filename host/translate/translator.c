/* translator.c: text in, text out (clformer_translate.h). Sources, n of
 * them, are sorted by subword length (ties by position, so that the
 * batches and their outputs do not depend on qsort), cut into batches by
 * struct clf_batching, searched with clf_model_translate and the n-best
 * hypotheses decoded into out[i·nbest + k] in the sources' own order.
 * Above the model and text layers: a checkpoint, its metadata, its
 * tokenizer and BLEU meet here. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"
#include "base/status.h"
#include "clformer_translate.h"

struct clf_translator {
    clf_ctx_t *ctx;
    clf_model_t *m;
    clf_tok_t *tok;
    struct clf_translate_opts opts;
};

struct by_len {
    size_t len, at;
};

static int by_length(const void *a, const void *b)
{
    const struct by_len *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* The first batch of sorted lengths s[0..n): how many sources it takes. */
static size_t batch_size(const struct by_len *s, size_t n, struct clf_batching b)
{
    size_t c = 1, longest = s[0].len + 1;
    while (c < n && c < b.sentences) {
        size_t l = s[c].len + 1 > longest ? s[c].len + 1 : longest;
        if (b.tokens && (c + 1) * l > b.tokens)
            break;
        longest = l, c++;
    }
    return c;
}

/* translate_ids as one stream (b.continuous): the sources in length order
 * join the decoding as others finish, at most b.sentences at once (and b.tokens
 * source tokens with their EOS, when given). */
struct sorted_stream {
    clf_ctx_t *ctx;
    const clf_tok_t *tok;
    const int32_t *const *src;
    const size_t *len;
    const struct by_len *order;
    size_t n, next, done, nbest, live_tokens, tokens, room;
    char **out;
    float *scores;
    clf_status st;
    clf_translate_progress progress;
    void *arg;
};

static size_t sorted_take(void *user, size_t room, size_t live, const int32_t **src, size_t *len, void **tag)
{
    struct sorted_stream *s = user;
    size_t c = 0;
    if (live && room < s->room / 2)  /* newcomers in groups: each group's encoder is one call */
        return 0;
    while (c < room && s->next < s->n) {
        const struct by_len *o = &s->order[s->next];
        if (s->tokens && (live || c) && s->live_tokens + o->len + 1 > s->tokens)
            break;
        src[c] = s->src[o->at], len[c] = o->len, tag[c] = (void *)(uintptr_t)o->at;
        s->live_tokens += o->len + 1;
        s->next++, c++;
    }
    return c;
}

static void sorted_give(void *user, void *tag, struct clf_hypothesis *h, size_t n)
{
    struct sorted_stream *s = user;
    const size_t at = (size_t)(uintptr_t)tag;
    s->live_tokens -= s->len[at] + 1;
    for (size_t k = 0; k < n && s->st == CLF_OK; k++) {
        const size_t i = at * s->nbest + k;
        if ((s->st = clf_tok_decode(s->tok, CLF_TOK_TARGET, h[k].ids, h[k].n, &s->out[i])) != CLF_OK)
            clf_error_set(s->ctx, s->st, "decoding subwords: %s", clf_ctx_error(NULL));
        else if (s->scores)
            s->scores[i] = h[k].score;
    }
    clf_hypotheses_free(h, n);
    if (s->progress && ++s->done % 32 == 0)
        s->progress(s->done, s->n, s->arg);
}

/* Model m (on ctx) and its tokenizer: the work of both translate calls
 * and of the validation BLEU. */
static clf_status translate_ids(clf_ctx_t *ctx, clf_model_t *m, const clf_tok_t *tok, const int32_t *const *src,
                                const size_t *len, size_t n, const struct clf_translate_opts *o,
                                struct clf_batching b, char **out, float *scores, clf_translate_progress progress,
                                void *arg)
{
    const size_t nbest = o->greedy ? 1 : (size_t)(o->nbest > 0 ? o->nbest : 1);
    b.sentences = b.sentences ? b.sentences : 1;
    for (size_t i = 0; i < n * nbest; i++)
        out[i] = NULL;
    if (n == 0)
        return CLF_OK;
    const size_t chunk = b.sentences < n ? b.sentences : n;
    struct by_len *order = malloc(n * sizeof *order);
    const int32_t **csrc = malloc(chunk * sizeof *csrc);
    size_t *clen = malloc(chunk * sizeof *clen);
    struct clf_hypothesis *h = calloc(chunk * nbest, sizeof *h);
    clf_status st = CLF_OK;
    if (!order || !csrc || !clen || !h) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for %zu sources", n);
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (struct by_len){.len = len[i], .at = i};
    qsort(order, n, sizeof *order, by_length);
    if (b.continuous) {
        struct sorted_stream ss = {ctx, tok, src, len, order, n, 0, 0, nbest, 0, b.tokens, chunk, out, scores,
                                   CLF_OK, progress, arg};
        const struct clf_translate_stream in = {sorted_take, sorted_give, &ss, chunk,
                                                order[n - 1].len ? order[n - 1].len : 1};
        if ((st = clf_model_translate_stream(m, o, &in)) == CLF_OK && (st = ss.st) == CLF_OK && progress)
            progress(n, n, arg);
        if (st != CLF_OK)
            goto fail;
        goto out;
    }
    for (size_t at = 0, c; at < n; at += c) {
        c = batch_size(order + at, n - at, b);
        for (size_t j = 0; j < c; j++) {
            csrc[j] = src[order[at + j].at];
            clen[j] = order[at + j].len;
        }
        CLF_TRY(clf_model_translate(m, csrc, clen, c, o, h));
        for (size_t j = 0; j < c && st == CLF_OK; j++)
            for (size_t k = 0; k < nbest && st == CLF_OK; k++) {
                const struct clf_hypothesis *x = &h[j * nbest + k];
                size_t i = order[at + j].at * nbest + k;
                if ((st = clf_tok_decode(tok, CLF_TOK_TARGET, x->ids, x->n, &out[i])) != CLF_OK)
                    clf_error_set(ctx, st, "decoding subwords: %s", clf_ctx_error(NULL));
                else if (scores)
                    scores[i] = x->score;
            }
        clf_hypotheses_free(h, c * nbest);
        if (st != CLF_OK)
            goto fail;
        if (progress)
            progress(at + c, n, arg);
    }
    goto out;
fail:
    for (size_t i = 0; i < n * nbest; i++) {
        free(out[i]);
        out[i] = NULL;
    }
out:
    free(order), free(csrc), free(clen), free(h);
    return st;
}

clf_status clf_ckpt_tok_check(const char *ckpt, const struct clf_ckpt_meta *meta, const clf_tok_t *tok,
                              const struct clf_model_config *cfg, const char *tok_path)
{
    const int model_vocab = cfg->vocab;
    const int vs = clf_tok_vocab_size(tok, CLF_TOK_SOURCE), vt = clf_tok_vocab_size(tok, CLF_TOK_TARGET);
    /* ours: one model whose pieces are the vocabulary; Marian's vocab.json may hold fewer ids than the model */
    const bool fits = clf_tok_spm(tok, CLF_TOK_SOURCE) == clf_tok_spm(tok, CLF_TOK_TARGET) && vs == vt
                          ? vt == model_vocab : vs <= model_vocab && vt <= model_vocab;
    if (!fits)
        return clf_error_set(NULL, CLF_ERR_ARG, "%s has %d pieces but the model %s was trained with %d: pass the "
                             "subword model it was trained with", tok_path, vt > vs ? vt : vs, ckpt, model_vocab);
    const uint64_t got = clf_tok_hash(tok);
    if (meta->has_tokenizer_hash && meta->tokenizer_hash != got)
        return clf_error_set(NULL, CLF_ERR_ARG, "%s (hash %016" PRIx64 ") is not the subword model %s was trained "
                             "with (hash %016" PRIx64 "): pass the one it was trained with",
                             tok_path, got, ckpt, meta->tokenizer_hash);
    const struct clf_tok_ids sp = clf_tok_specials(tok);
    if (sp.pad != cfg->pad_id || sp.eos != cfg->eos_id)
        return clf_error_set(NULL, CLF_ERR_ARG, "%s: the tokenizer in %s has pad %d and eos %d, the model pad %d "
                             "and eos %d: pass the tokenizer the model was made with", ckpt, tok_path, sp.pad,
                             sp.eos, cfg->pad_id, cfg->eos_id);
    return CLF_OK;
}

/* The search's defaults as a checkpoint's metadata changes them. */
static struct clf_translate_opts opts_of(const struct clf_ckpt_meta *meta)
{
    struct clf_translate_opts o = clf_translate_opts_default();
    clf_ckpt_meta_translate_opts(meta, &o);
    return o;
}

clf_status clf_translator_defaults(const char *ckpt, struct clf_translate_opts *o)
{
    struct clf_ckpt_meta meta;
    clf_status st = clf_ckpt_meta_read(ckpt, &meta);
    if (st != CLF_OK)
        return st;
    *o = opts_of(&meta);
    return CLF_OK;
}

clf_status clf_translator_init(clf_ctx_t *ctx, const char *ckpt, const char *tokenizer, clf_translator_t **out)
{
    struct clf_ckpt_meta meta;
    char path[CLF_PATH_MAX];
    clf_status st;
    *out = NULL;
    clf_translator_t *t = calloc(1, sizeof *t);
    if (!t)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for a translator");
    t->ctx = ctx;
    if ((st = clf_ckpt_meta_read(ckpt, &meta)) != CLF_OK) {
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
        goto fail;
    }
    t->opts = opts_of(&meta);
    if ((st = clf_ckpt_tok_open(ckpt, &meta, tokenizer, &t->tok, path, sizeof path)) != CLF_OK) {
        clf_error_set(ctx, st, "%s (pass the tokenizer it was trained with)", clf_ctx_error(NULL));
        goto fail;
    }
    CLF_TRY(clf_model_load(ctx, &t->m, ckpt));
    if ((st = clf_ckpt_tok_check(ckpt, &meta, t->tok, clf_model_config(t->m), path)) != CLF_OK) {
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
        goto fail;
    }
    /* the default compute type from the start (the stored type, or packed
     * float32 on a CPU), as a caller that sets none expects: `serve` without
     * --compute-type decoded on unpacked float32 until this */
    CLF_TRY(clf_model_compute_set(t->m, NULL));
    *out = t;
    return CLF_OK;
fail:
    clf_translator_free(t);
    return st;
}

void clf_translator_free(clf_translator_t *t)
{
    if (!t)
        return;
    clf_model_free(t->m);
    clf_tok_free(t->tok);
    free(t);
}

struct clf_translate_opts clf_translator_opts(const clf_translator_t *t) { return t->opts; }

size_t clf_translator_max_source(const clf_translator_t *t)
{
    return (size_t)clf_model_config(t->m)->max_len - 1;
}

const clf_model_t *clf_translator_model(const clf_translator_t *t) { return t->m; }
clf_ctx_t *clf_translator_ctx(const clf_translator_t *t) { return t->ctx; }
clf_status clf_translator_compute_set(clf_translator_t *t, const char *compute_type)
{
    return clf_model_compute_set(t->m, compute_type);
}
enum clf_compute_type clf_translator_compute(const clf_translator_t *t) { return clf_model_compute(t->m); }
const clf_tok_t *clf_translator_tok(const clf_translator_t *t) { return t->tok; }

clf_status clf_translator_encode(clf_translator_t *t, const char *text, int32_t **ids, size_t *n)
{
    clf_status st = clf_tok_encode(t->tok, CLF_TOK_SOURCE, text, strlen(text), false, ids, n);
    return st != CLF_OK ? clf_error_set(t->ctx, st, "%s", clf_ctx_error(NULL)) : CLF_OK;
}

clf_status clf_translator_translate_ids(clf_translator_t *t, const int32_t *const *src, const size_t *len, size_t n,
                                        const struct clf_translate_opts *o, struct clf_batching b, char **out,
                                        float *scores, clf_translate_progress progress, void *arg)
{
    return translate_ids(t->ctx, t->m, t->tok, src, len, n, o, b, out, scores, progress, arg);
}

/* The model's stream, the best hypothesis decoded to text. */
struct text_stream {
    clf_translator_t *t;
    size_t (*take)(void *user, size_t room, size_t live, const int32_t **src, size_t *len, void **tag);
    void (*give)(void *user, void *tag, char *text);
    void *user;
};

static size_t take_ids(void *user, size_t room, size_t live, const int32_t **src, size_t *len, void **tag)
{
    struct text_stream *ts = user;
    return ts->take(ts->user, room, live, src, len, tag);
}

static void give_text(void *user, void *tag, struct clf_hypothesis *h, size_t n)
{
    struct text_stream *ts = user;
    char *text = NULL;
    if (clf_tok_decode(ts->t->tok, CLF_TOK_TARGET, h[0].ids, h[0].n, &text) != CLF_OK) {
        clf_error_set(ts->t->ctx, CLF_ERR_ARG, "decoding subwords: %s", clf_ctx_error(NULL));
        text = NULL;
    }
    clf_hypotheses_free(h, n);
    ts->give(ts->user, tag, text);
}

clf_status clf_translator_translate_stream(clf_translator_t *t, const struct clf_translate_opts *o, size_t room,
                                           size_t width,
                                           size_t (*take)(void *user, size_t room, size_t live, const int32_t **src,
                                                          size_t *len, void **tag),
                                           void (*give)(void *user, void *tag, char *text), void *user)
{
    struct clf_translate_opts one = *o;
    one.nbest = 1;
    struct text_stream ts = {t, take, give, user};
    const struct clf_translate_stream in = {take_ids, give_text, &ts, room, width};
    return clf_model_translate_stream(t->m, &one, &in);
}

clf_status clf_translator_translate(clf_translator_t *t, const char *const *src, size_t n,
                                    const struct clf_translate_opts *o, struct clf_batching b, char **out,
                                    float *scores, clf_translate_progress progress, void *arg)
{
    int32_t **ids = calloc(n ? n : 1, sizeof *ids);
    size_t *len = calloc(n ? n : 1, sizeof *len);
    const size_t limit = clf_translator_max_source(t);
    clf_status st = CLF_OK;
    if (!ids || !len) {
        st = clf_error_set(t->ctx, CLF_ERR_MEMORY, "out of host memory for %zu sources", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if ((st = clf_tok_encode(t->tok, CLF_TOK_SOURCE, src[i], strlen(src[i]), false, &ids[i], &len[i])) !=
            CLF_OK) {
            clf_error_set(t->ctx, st, "encoding source %zu: %s", i, clf_ctx_error(NULL));
            goto out;
        }
        if (len[i] > limit)
            len[i] = limit;
    }
    st = translate_ids(t->ctx, t->m, t->tok, (const int32_t *const *)ids, len, n, o, b, out, scores, progress, arg);
out:
    if (ids)
        for (size_t i = 0; i < n; i++)
            free(ids[i]);
    free(ids), free(len);
    return st;
}

clf_status clf_translate_bleu(clf_ctx_t *ctx, clf_model_t *m, const clf_tok_t *tok, const struct clf_corpus *c,
                              size_t max_tokens, double *bleu)
{
    const size_t n = c->n_pairs;
    const int32_t **src = calloc(n ? n : 1, sizeof *src);
    size_t *len = calloc(n ? n : 1, sizeof *len);
    char **hyp = calloc(n ? n : 1, sizeof *hyp);
    const char **refs = malloc((n ? n : 1) * sizeof *refs);
    clf_status st = CLF_OK;
    if (!src || !len || !hyp || !refs) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for %zu validation pairs", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        src[i] = c->src_ids + c->src_off[i];
        len[i] = c->src_off[i + 1] - c->src_off[i];
        refs[i] = c->tgt.line[c->pair_line[i]];
    }
    struct clf_translate_opts o = clf_translate_opts_default();
    o.greedy = true;
    const struct clf_batching b = {.sentences = 128, .tokens = max_tokens};
    if ((st = translate_ids(ctx, m, tok, src, len, n, &o, b, hyp, NULL, NULL, NULL)) != CLF_OK)
        goto out;
    const struct clf_bleu_opts bo = {.lowercase = false, .tok = CLF_BLEU_TOK_13A};
    struct clf_bleu_score s;
    const char *const *r1[1] = {refs};
    if ((st = clf_bleu_corpus((const char *const *)hyp, n, r1, 1, &bo, &s)) != CLF_OK) {
        clf_error_set(ctx, st, "validation BLEU: %s", clf_ctx_error(NULL));
        goto out;
    }
    *bleu = s.score;
out:
    if (hyp)
        for (size_t i = 0; i < n; i++)
            free(hyp[i]);
    free(src), free(len), free(hyp), free(refs);
    return st;
}
