/* search.c: greedy decoding and beam search (the paper's beam 4, length
 * penalty ((5 + |Y|) / 6)^α with α = 0.6, at most source length + 50
 * tokens; or transformers' generate() rules, enum clf_length_penalty, for
 * imported models), on the host over the log-probabilities each decoder step
 * returns. Scores accumulate in double so that ranking by running sum
 * agrees with ranking by each step's log-probability. EOS is no candidate
 * before min_length tokens (1 by default: no empty output), as with
 * CTranslate2's min_decoding_length: the other tokens keep their
 * log-probabilities (no renormalisation). The ids (start, EOS, pad) are
 * the model config's. Finished sentences leave the decoder's batch: its
 * rows are the live sentences' (slot j of the live list: rows j·beam + k),
 * while the searches keep their own state by sentence. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

#define NEG_INF (-HUGE_VAL)

struct clf_translate_opts clf_translate_opts_default(void)
{
    return (struct clf_translate_opts){.beam = 4, .alpha = 0.6f, .length_penalty = CLF_LENGTH_PENALTY_PAPER,
                                       .max_extra = 50, .max_output = 0, .nbest = 1, .greedy = false,
                                       .min_length = 1};
}

void clf_hypotheses_free(struct clf_hypothesis *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(h[i].ids);
        h[i].ids = NULL;
        h[i].n = 0;
    }
}

/* len counts EOS (enum clf_length_penalty). */
static double length_penalty(size_t len, const struct clf_translate_opts *o)
{
    if (o->length_penalty == CLF_LENGTH_PENALTY_HF)
        return pow((double)len, o->alpha);
    return pow((5.0 + (double)len) / 6.0, o->alpha);
}

/* A sentence's most tokens, EOS included. */
static size_t sentence_limit(const struct clf_translate_opts *o, size_t src_len, size_t max_steps)
{
    size_t l = o->max_output > 0 ? (size_t)o->max_output : src_len + 1 + (size_t)o->max_extra;
    return l < max_steps ? l : max_steps;
}

/* Builds the padded source batch (ids + EOS). */
static clf_status make_sources(clf_model_t *m, const int32_t *const *src, const size_t *src_len, size_t batch,
                               int32_t **out, size_t *width)
{
    size_t w = 0;
    for (size_t i = 0; i < batch; i++)
        if (src_len[i] + 1 > w)
            w = src_len[i] + 1;
    if (w > (size_t)m->cfg.max_len)
        return clf_error_set(m->ctx, CLF_ERR_ARG,
                             "a source of %zu tokens (with EOS) exceeds the model's max_len %d: split the line",
                             w, m->cfg.max_len);
    int32_t *s = malloc(batch * w * sizeof *s);
    if (!s)
        return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    for (size_t i = 0; i < batch * w; i++)
        s[i] = m->cfg.pad_id;
    for (size_t i = 0; i < batch; i++) {
        for (size_t t = 0; t < src_len[i]; t++) {
            if (src[i][t] < 0 || src[i][t] >= m->cfg.vocab) {
                free(s);
                return clf_error_set(m->ctx, CLF_ERR_ARG, "source %zu: id %d outside the vocabulary (%d)", i,
                                     (int)src[i][t], m->cfg.vocab);
            }
            s[i * w + t] = src[i][t];
        }
        s[i * w + src_len[i]] = m->cfg.eos_id;
    }
    *out = s;
    *width = w;
    return CLF_OK;
}

struct cand {
    double score;
    int32_t beam, token;
};

/* One step's log-probabilities on the host: the k best of each row and
 * EOS's, selected on the device (the default), or every one of them
 * (CLF_SEARCH=host: the reference the device path is tested against). A
 * row's k best (by log-probability, then id) hold every candidate it can
 * place among a sentence's k best, and the host offers them in id order as
 * the full scan does, so both paths rank the same candidates alike. The
 * one exception: two log-probabilities of one row that differ but whose
 * sums with the row's score round to the same double, at the k-th place,
 * where the scan keeps the lower id and the device the larger value. */
struct scores {
    bool host;
    size_t V, k;
    int32_t eos_id;        /* the model's */
    float *logp;           /* host: (rows, V) */
    float *val, *eos;      /* device: (rows, k) best first, (rows) */
    int32_t *idx;          /* device: (rows, k), -1 past the vocabulary */
};

static bool scores_init(struct scores *s, size_t rows, size_t V, size_t k, int32_t eos_id)
{
    const char *e = clf_setting_get("CLF_SEARCH");
    *s = (struct scores){e && !strcmp(e, "host"), V, k, eos_id, NULL, NULL, NULL, NULL};
    if (s->host)
        return (s->logp = malloc(rows * V * sizeof *s->logp)) != NULL;
    s->val = malloc(rows * k * sizeof *s->val);
    s->eos = malloc(rows * sizeof *s->eos);
    s->idx = malloc(rows * k * sizeof *s->idx);
    return s->val && s->eos && s->idx;
}

static void scores_free(struct scores *s)
{
    free(s->logp), free(s->val), free(s->eos), free(s->idx);
}

/* Runs decoder step t and brings its scores over; EOS is no candidate
 * among the k best unless eos_ok. */
static clf_status scores_step(struct decoder *d, struct scores *s, const int32_t *tokens, size_t t, bool eos_ok)
{
    clf_status st = decoder_step(d, tokens, t, s->host ? s->logp : NULL);
    if (st == CLF_OK && !s->host)
        st = decoder_topk(d, s->k, eos_ok ? -1 : s->eos_id, s->val, s->idx, s->eos);
    return st;
}

static float scores_eos(const struct scores *s, size_t row)
{
    return s->host ? s->logp[row * s->V + (size_t)s->eos_id] : s->eos[row];
}

/* Keeps the k best of a stream of candidates in `best` (sorted, best
 * first); ties keep the earlier one (lower beam, then lower token). */
static void offer(struct cand *best, int *n, int k, struct cand c)
{
    if (*n == k && !(c.score > best[k - 1].score))
        return;
    int i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && c.score > best[i - 1].score) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = c;
}

struct sentence {
    size_t max_len;           /* tokens including EOS */
    bool done;
    struct clf_hypothesis *fin;  /* up to beam finished, best first */
    int nfin;
};

static void finish(struct sentence *s, int beam, const int32_t *ids, size_t n, double logprob,
                   const struct clf_translate_opts *o)
{
    double score = logprob / length_penalty(n + 1, o);
    if (s->nfin == beam && !(score > s->fin[beam - 1].score))
        return;
    int i = s->nfin < beam ? s->nfin++ : beam - 1;
    free(s->fin[i].ids);
    while (i > 0 && score > s->fin[i - 1].score) {
        s->fin[i] = s->fin[i - 1];
        i--;
    }
    struct clf_hypothesis h = {malloc((n ? n : 1) * sizeof *ids), n, (float)score, (float)logprob};
    if (h.ids)
        memcpy(h.ids, ids, n * sizeof *ids);
    s->fin[i] = h;
}

/* Greedy decoding: the most probable token at every step (the lowest id
 * among equals; EOS only from step min_length on), until EOS or the length
 * limit. live[j] is the sentence in decoder row j. */
static clf_status greedy(struct decoder *d, const size_t *max_len, size_t batch, size_t max_steps,
                         const struct clf_translate_opts *o, struct clf_hypothesis *out)
{
    clf_model_t *m = d->m;
    const size_t V = (size_t)m->cfg.vocab, eos = (size_t)m->cfg.eos_id, pad = (size_t)m->cfg.pad_id;
    int32_t *tokens = malloc(batch * sizeof *tokens), *live = malloc(batch * sizeof *live),
            *src_row = malloc(batch * sizeof *src_row);
    struct scores sc;
    bool sc_ok = scores_init(&sc, batch, V, 1, m->cfg.eos_id);
    double *sum = calloc(batch, sizeof *sum);
    clf_status st = CLF_OK;
    for (size_t i = 0; i < batch; i++) {
        out[i] = (struct clf_hypothesis){malloc(max_steps * sizeof(int32_t)), 0, 0, 0};
        if (!out[i].ids)
            st = CLF_ERR_MEMORY;
    }
    if (!tokens || !live || !src_row || !sc_ok || !sum || st != CLF_OK) {
        st = clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    for (size_t i = 0; i < batch; i++) {
        tokens[i] = m->cfg.decoder_start_id;
        live[i] = (int32_t)i;
    }
    size_t alive = batch;
    for (size_t t = 0; t < max_steps && alive; t++) {
        const bool eos_ok = t >= (size_t)o->min_length;
        CLF_TRY(scores_step(d, &sc, tokens, t, eos_ok));
        size_t kept = 0;  /* rows j that go on become rows kept, in order */
        for (size_t j = 0; j < alive; j++) {
            const size_t i = (size_t)live[j];
            size_t best = eos;
            float lpbest = scores_eos(&sc, j);
            if (t + 1 < max_len[i] && sc.host) {
                const float *lp = sc.logp + j * V;
                best = eos_ok ? eos : pad;  /* a start that is not EOS when EOS may not win */
                for (size_t v = 0; v < V; v++)
                    if ((eos_ok || v != eos) && (lp[v] > lp[best] || (lp[v] == lp[best] && v < best)))
                        best = v;
                lpbest = lp[best];
            } else if (t + 1 < max_len[i] && sc.idx[j] >= 0) {
                best = (size_t)sc.idx[j];
                lpbest = sc.val[j];
            }
            sum[i] += t + 1 >= max_len[i] && o->length_penalty == CLF_LENGTH_PENALTY_HF ? 0.0 : lpbest;
            if (best == eos) {
                out[i].logprob = (float)sum[i];
                out[i].score = (float)(sum[i] / length_penalty(out[i].n + 1, o));
                continue;
            }
            out[i].ids[out[i].n++] = (int32_t)best;
            tokens[kept] = (int32_t)best;
            live[kept] = (int32_t)i;
            src_row[kept++] = (int32_t)j;
        }
        if (kept && kept < alive && (st = decoder_reorder(d, src_row, kept)))
            goto fail;
        alive = kept;
    }
fail:
    if (st != CLF_OK)
        clf_hypotheses_free(out, batch);
    scores_free(&sc);
    free(tokens), free(live), free(src_row), free(sum);
    return st;
}

/* A beam search over `batch` sentences of `beam` hypotheses each: the
 * running histories and scores (rows r = sentence·beam + k), the finished
 * hypotheses per sentence, and each step's candidates. The decoder holds
 * the live sentences only: live[j] is the sentence in its rows j·beam + k,
 * which tokens, reorder and the scores follow. */
struct beam_search {
    struct decoder d;
    const struct clf_translate_opts *o;
    size_t batch, beam, R, V, max_steps;
    int32_t *tokens;          /* (decoder rows): the tokens fed at this step */
    int32_t *hist, *newhist;  /* (R, max_steps): each row's tokens so far */
    int32_t *reorder;         /* (decoder rows): the decoder row each new row continues */
    double *cum, *newcum;     /* (R): running log-probabilities, NEG_INF for an empty row */
    struct scores sc;
    struct sentence *sent;    /* (batch) */
    struct cand *cands;       /* (2·beam) */
    int32_t *live;            /* (alive): the sentences the decoder holds, in row order */
    size_t alive;
};

static clf_status search_init(struct beam_search *b, clf_model_t *m, const size_t *src_len)
{
    const size_t beam = b->beam, R = b->R, batch = b->batch, steps = b->max_steps;
    b->tokens = malloc(R * sizeof *b->tokens);
    b->hist = calloc(R * steps, sizeof *b->hist);
    b->newhist = calloc(R * steps, sizeof *b->newhist);
    b->reorder = malloc(R * sizeof *b->reorder);
    b->cum = malloc(R * sizeof *b->cum);
    b->newcum = malloc(R * sizeof *b->newcum);
    bool sc_ok = scores_init(&b->sc, R, b->V, 2 * beam, m->cfg.eos_id);
    b->sent = calloc(batch, sizeof *b->sent);
    b->cands = malloc(2 * beam * sizeof *b->cands);
    b->live = malloc(batch * sizeof *b->live);
    if (!b->tokens || !b->hist || !b->newhist || !b->reorder || !b->cum || !b->newcum || !sc_ok || !b->sent ||
        !b->cands || !b->live)
        return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    for (size_t i = 0; i < batch; i++) {
        b->sent[i].max_len = sentence_limit(b->o, src_len[i], steps);
        if (!(b->sent[i].fin = calloc(beam, sizeof *b->sent[i].fin)))
            return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    }
    for (size_t r = 0; r < R; r++) {
        b->tokens[r] = m->cfg.decoder_start_id;
        b->cum[r] = r % beam ? NEG_INF : 0.0;  /* at first only one hypothesis per sentence */
    }
    for (size_t i = 0; i < batch; i++)
        b->live[i] = (int32_t)i;
    b->alive = batch;
    return CLF_OK;
}

static void search_free(struct beam_search *b)
{
    if (b->sent)
        for (size_t i = 0; i < b->batch; i++)
            if (b->sent[i].fin) {
                clf_hypotheses_free(b->sent[i].fin, b->beam);
                free(b->sent[i].fin);
            }
    decoder_free(&b->d);
    scores_free(&b->sc);
    free(b->tokens), free(b->hist), free(b->newhist), free(b->reorder), free(b->cum), free(b->newcum);
    free(b->sent), free(b->cands), free(b->live);
}

/* Sentence base/beam's 2·beam best continuations at step t over all its
 * hypotheses, best first, into b->cands; returns their count. Its scores
 * are in decoder rows from sbase on. */
static int search_candidates(struct beam_search *b, size_t base, size_t sbase, size_t t, bool last)
{
    const struct scores *sc = &b->sc;
    const int beam = (int)b->beam;
    const bool eos_ok = t >= (size_t)b->o->min_length;
    int nc = 0;
    for (int k = 0; k < beam; k++) {
        size_t r = base + (size_t)k, sr = sbase + (size_t)k;
        if (b->cum[r] == NEG_INF)
            continue;
        if (last) {  /* out of room: every hypothesis ends here (HF: EOS forced, log-probability 0) */
            const double lp = b->o->length_penalty == CLF_LENGTH_PENALTY_HF ? 0.0 : scores_eos(sc, sr);
            offer(b->cands, &nc, 2 * beam, (struct cand){b->cum[r] + lp, k, sc->eos_id});
            continue;
        }
        if (sc->host) {
            const float *lp = sc->logp + sr * b->V;
            for (size_t v = 0; v < b->V; v++)
                if (eos_ok || v != (size_t)sc->eos_id)
                    offer(b->cands, &nc, 2 * beam, (struct cand){b->cum[r] + lp[v], k, (int32_t)v});
            continue;
        }
        /* the row's best, offered in id order as the host path offers them, so
         * that equal scores resolve alike */
        struct cand row[64];
        int nr = 0;
        for (size_t j = 0; j < sc->k; j++) {
            int32_t v = sc->idx[sr * sc->k + j];
            if (v < 0)
                continue;
            int p = nr++;
            while (p > 0 && row[p - 1].token > v) {
                row[p] = row[p - 1];
                p--;
            }
            row[p] = (struct cand){b->cum[r] + sc->val[sr * sc->k + j], k, v};
        }
        for (int j = 0; j < nr; j++)
            offer(b->cands, &nc, 2 * beam, row[j]);
    }
    return nc;
}

/* Whether sentence s, with beam finished hypotheses, need look no further
 * at step t, whose best candidate sums best (enum clf_length_penalty). */
static bool search_enough(const struct clf_translate_opts *o, const struct sentence *s, int beam, double best,
                          size_t t)
{
    if (s->nfin < beam)
        return false;
    if (o->length_penalty != CLF_LENGTH_PENALTY_HF)
        return true;
    /* in float, as the finished scores are kept: the step's best may be the
     * EOS that just finished, whose score then equals the bound (transformers
     * stops there) */
    return s->fin[beam - 1].score >= (float)(best / length_penalty(t + 1, o));
}

/* Sentence i, in decoder rows j·beam + k, at step t: the beam best
 * candidates become its new hypotheses (an EOS among them finishes one);
 * it is done when beam hypotheses have finished, none continues, or it is
 * out of room. */
static void search_sentence(struct beam_search *b, size_t i, size_t j, size_t t)
{
    struct sentence *s = &b->sent[i];
    const int beam = (int)b->beam;
    const size_t base = i * b->beam, sbase = j * b->beam, steps = b->max_steps;
    for (int k = 0; k < beam; k++)
        b->reorder[sbase + (size_t)k] = (int32_t)(sbase + (size_t)k);
    const bool last = t + 1 >= s->max_len;
    const int nc = search_candidates(b, base, sbase, t, last);
    int kept = 0;
    for (int c = 0; c < nc && kept < beam; c++) {
        const struct cand *x = &b->cands[c];
        size_t from = base + (size_t)x->beam;
        if (x->token == b->sc.eos_id) {
            if (c < beam)  /* an ending counts only among the beam best */
                finish(s, beam, b->hist + from * steps, t, x->score, b->o);
            continue;
        }
        size_t to = base + (size_t)kept, sto = sbase + (size_t)kept++;
        memcpy(b->newhist + to * steps, b->hist + from * steps, t * sizeof *b->hist);
        b->newhist[to * steps + t] = x->token;
        b->newcum[to] = x->score;
        b->reorder[sto] = (int32_t)(sbase + (size_t)x->beam);
        b->tokens[sto] = x->token;
    }
    for (int k = kept; k < beam; k++) {
        b->newcum[base + (size_t)k] = NEG_INF;
        b->tokens[sbase + (size_t)k] = b->d.m->cfg.pad_id;
    }
    if (kept == 0 || last || search_enough(b->o, s, beam, nc ? b->cands[0].score : NEG_INF, t))
        s->done = true;
}

/* One decoder step for every sentence still running; the caches follow
 * the hypotheses that survived, and the sentences that finished leave the
 * decoder's rows (the others move up, in order). */
static clf_status search_step(struct beam_search *b, size_t t)
{
    clf_status st = scores_step(&b->d, &b->sc, b->tokens, t, t >= (size_t)b->o->min_length);
    if (st)
        return st;
    const size_t beam = b->beam, alive = b->alive;
    size_t kept = 0;
    for (size_t j = 0; j < alive; j++) {
        const size_t i = (size_t)b->live[j];
        search_sentence(b, i, j, t);
        if (b->sent[i].done)
            continue;
        size_t base = i * beam;  /* commit its new beam */
        memcpy(b->hist + base * b->max_steps, b->newhist + base * b->max_steps, beam * b->max_steps * sizeof *b->hist);
        memcpy(b->cum + base, b->newcum + base, beam * sizeof *b->cum);
        /* slot kept <= j: moving its rows up overwrites only rows already read */
        for (size_t k = 0; k < beam; k++) {
            b->reorder[kept * beam + k] = b->reorder[j * beam + k];
            b->tokens[kept * beam + k] = b->tokens[j * beam + k];
        }
        b->live[kept++] = (int32_t)i;
    }
    b->alive = kept;
    return kept && (kept < alive || beam > 1) ? decoder_reorder(&b->d, b->reorder, kept * beam) : CLF_OK;
}

/* The nbest finished hypotheses of each sentence into out, handed over. */
static void search_collect(struct beam_search *b, struct clf_hypothesis *out)
{
    const size_t nbest = (size_t)b->o->nbest;
    for (size_t i = 0; i < b->batch; i++)
        for (size_t k = 0; k < nbest; k++) {
            struct clf_hypothesis *h = &out[i * nbest + k];
            if ((int)k < b->sent[i].nfin) {
                *h = b->sent[i].fin[k];
                b->sent[i].fin[k].ids = NULL;
            } else {
                *h = (struct clf_hypothesis){NULL, 0, (float)NEG_INF, (float)NEG_INF};
            }
        }
}

/* Greedy decoding of the whole batch (decoder d already holds it). */
static clf_status greedy_all(struct decoder *d, const size_t *src_len, size_t batch, size_t max_steps,
                             const struct clf_translate_opts *o, struct clf_hypothesis *out)
{
    size_t *lim = malloc(batch * sizeof *lim);
    if (!lim)
        return clf_error_set(d->m->ctx, CLF_ERR_MEMORY, "out of host memory");
    for (size_t i = 0; i < batch; i++)
        lim[i] = sentence_limit(o, src_len[i], max_steps);
    clf_status st = greedy(d, lim, batch, max_steps, o, out);
    free(lim);
    return st;
}

clf_status clf_model_translate(clf_model_t *m, const int32_t *const *src, const size_t *src_len, size_t batch,
                               const struct clf_translate_opts *o, struct clf_hypothesis *out)
{
    const int beam = o->greedy ? 1 : o->beam;
    if (beam < 1 || beam > CLF_TRANSLATE_BEAM_MAX || o->nbest < 1 || o->nbest > beam || o->max_extra < 1 ||
        o->min_length < 0 || o->max_output < 0 ||
        (o->length_penalty != CLF_LENGTH_PENALTY_PAPER && o->length_penalty != CLF_LENGTH_PENALTY_HF))
        return clf_error_set(m->ctx, CLF_ERR_ARG, "translate: beam %d, nbest %d, max_extra %d, max_output %d, "
                             "min_length %d, length_penalty %d: want 1 <= beam <= %d, 1 <= nbest <= beam, "
                             "max_extra >= 1, max_output >= 0, min_length >= 0, length_penalty paper (0) or hf (1)",
                             o->beam, o->nbest, o->max_extra, o->max_output, o->min_length, o->length_penalty,
                             CLF_TRANSLATE_BEAM_MAX);
    int32_t *srcb = NULL;
    size_t width = 0, max_steps = 0;
    clf_status st = make_sources(m, src, src_len, batch, &srcb, &width);
    if (st != CLF_OK)
        return st;
    for (size_t i = 0; i < batch; i++) {
        size_t l = sentence_limit(o, src_len[i], (size_t)m->cfg.max_len);
        max_steps = l > max_steps ? l : max_steps;
    }
    struct beam_search b = {.o = o, .batch = batch, .beam = (size_t)beam, .R = batch * (size_t)beam,
                            .V = (size_t)m->cfg.vocab, .max_steps = max_steps};
    if ((st = decoder_init(&b.d, m, srcb, batch, width, (size_t)beam, max_steps)))
        goto out;
    if (o->greedy) {
        st = greedy_all(&b.d, src_len, batch, max_steps, o, out);
        goto out;
    }
    if ((st = search_init(&b, m, src_len)))
        goto out;
    for (size_t t = 0; t < max_steps && b.alive && !st; t++)
        st = search_step(&b, t);
    if (!st)
        search_collect(&b, out);
out:
    search_free(&b);
    free(srcb);
    return st;
}
