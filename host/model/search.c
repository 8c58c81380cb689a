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
 * while the searches keep their own state by sentence, in slots a
 * finished sentence hands on. New sentences may join between steps
 * (clf_model_translate_stream): each counts its own steps, and decodes
 * exactly as it would alone. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "base/status.h"
#include "decode.h"
#include "runtime/settings.h"

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
    bool eos_skipped;      /* device: this step's k best leave EOS out (eos holds it) */
    float *logp;           /* host: (rows, V) */
    float *val, *eos;      /* device: (rows, k) best first, (rows) */
    int32_t *idx;          /* device: (rows, k), -1 past the vocabulary */
};

static bool scores_init(struct scores *s, size_t rows, size_t V, size_t k, int32_t eos_id)
{
    const char *e = clf_setting_get("CLF_SEARCH");
    *s = (struct scores){e && !strcmp(e, "host"), V, k, eos_id, false, NULL, NULL, NULL, NULL};
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

/* Runs a decoder step and brings its scores over; EOS is left out of the
 * k best unless eos_ok (then a row whose sentence may end takes EOS from
 * scores_eos: see row_candidates). */
static clf_status scores_step(struct decoder *d, struct scores *s, const int32_t *tokens, bool eos_ok)
{
    clf_status st = clf_decoder_step(d, tokens, s->host ? s->logp : NULL);
    s->eos_skipped = !eos_ok;
    if (st == CLF_OK && !s->host)
        st = clf_decoder_topk(d, s->k, eos_ok ? -1 : s->eos_id, s->val, s->idx, s->eos);
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

/* Decoder row sr's device candidates in id order, as the host path offers
 * them, so that equal scores resolve alike; with base added. A sentence
 * that may end while the step left EOS out for others (they joined later)
 * gets EOS's own log-probability among them: the k best without EOS and
 * EOS hold every candidate the k best with it would. */
static int row_candidates(const struct scores *sc, size_t sr, double base, int beam, bool eos_ok, struct cand *row)
{
    int nr = 0;
    for (size_t j = 0; j <= sc->k; j++) {
        int32_t v;
        float lp;
        if (j < sc->k) {
            v = sc->idx[sr * sc->k + j];
            lp = sc->val[sr * sc->k + j];
        } else if (eos_ok && sc->eos_skipped) {
            v = sc->eos_id;
            lp = sc->eos[sr];
        } else {
            break;
        }
        if (v < 0)
            continue;
        int p = nr++;
        while (p > 0 && row[p - 1].token > v) {
            row[p] = row[p - 1];
            p--;
        }
        row[p] = (struct cand){base + lp, beam, v};
    }
    return nr;
}

struct sentence {
    size_t max_len;           /* tokens including EOS */
    size_t t;                 /* its steps so far: the position its rows decode next */
    bool done;
    void *tag;                /* the stream's */
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

/* A search over the sentences in the decoder, greedy (beam 1) or beam:
 * per slot (a sentence while it decodes) its state and the running
 * histories and scores of its hypotheses (rows slot·beam + k); the live
 * slots in decoder row order (live[j]: rows j·beam + k); each step's
 * candidates. */
struct search {
    struct decoder d;
    const struct clf_translate_opts *o;
    const struct clf_translate_stream *in;
    bool greedy;
    size_t room, beam, V, max_steps, width;
    int32_t *tokens;          /* (decoder rows): the tokens fed at this step */
    int32_t *hist, *newhist;  /* (room·beam, max_steps): each row's tokens so far */
    int32_t *reorder;         /* (decoder rows): the decoder row each new row continues */
    double *cum, *newcum;     /* (room·beam): running log-probabilities, NEG_INF for an empty row */
    struct scores sc;
    struct sentence *sent;    /* (room) by slot */
    struct cand *cands;       /* (2·beam) */
    int32_t *live;            /* (alive): the slots the decoder holds, in row order */
    size_t alive;
    int32_t *free_slot;       /* (room): slots free, nfree of them */
    size_t nfree;
    const int32_t **new_src;  /* (room): take's sources, lengths and tags */
    size_t *new_len;
    void **new_tag;
    int32_t *padded;          /* (room, width + 1): them with EOS, padded, for the encoder */
};

static clf_status search_init(struct search *b, clf_model_t *m)
{
    const size_t beam = b->beam, R = b->room * beam, room = b->room, steps = b->max_steps;
    clf_status st = clf_decoder_init(&b->d, m, room, b->width + 1, beam, steps);  /* first: it checks the sizes */
    if (st)
        return st;
    b->tokens = malloc(R * sizeof *b->tokens);
    b->hist = calloc(R * steps, sizeof *b->hist);
    b->newhist = b->greedy ? NULL : calloc(R * steps, sizeof *b->newhist);
    b->reorder = malloc(R * sizeof *b->reorder);
    b->cum = malloc(R * sizeof *b->cum);
    b->newcum = malloc(R * sizeof *b->newcum);
    bool sc_ok = scores_init(&b->sc, R, b->V, b->greedy ? 1 : 2 * beam, m->cfg.eos_id);
    b->sent = calloc(room, sizeof *b->sent);
    b->cands = malloc(2 * beam * sizeof *b->cands);
    b->live = malloc(room * sizeof *b->live);
    b->free_slot = malloc(room * sizeof *b->free_slot);
    b->new_src = malloc(room * sizeof *b->new_src);
    b->new_len = malloc(room * sizeof *b->new_len);
    b->new_tag = malloc(room * sizeof *b->new_tag);
    b->padded = malloc(room * (b->width + 1) * sizeof *b->padded);
    if (!b->tokens || !b->hist || (!b->greedy && !b->newhist) || !b->reorder || !b->cum || !b->newcum || !sc_ok ||
        !b->sent || !b->cands || !b->live || !b->free_slot || !b->new_src || !b->new_len || !b->new_tag ||
        !b->padded)
        return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    for (size_t i = 0; i < room; i++) {
        if (!(b->sent[i].fin = calloc(beam, sizeof *b->sent[i].fin)))
            return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
        b->free_slot[i] = (int32_t)(room - 1 - i);  /* slot 0 first */
    }
    b->nfree = room;
    return CLF_OK;
}

static void search_free(struct search *b)
{
    if (b->sent)
        for (size_t i = 0; i < b->room; i++)
            if (b->sent[i].fin) {
                clf_hypotheses_free(b->sent[i].fin, b->beam);
                free(b->sent[i].fin);
            }
    clf_decoder_free(&b->d);
    scores_free(&b->sc);
    free(b->tokens), free(b->hist), free(b->newhist), free(b->reorder), free(b->cum), free(b->newcum);
    free(b->sent), free(b->cands), free(b->live), free(b->free_slot);
    free(b->new_src), free(b->new_len), free(b->new_tag), free(b->padded);
}

/* The sentences the stream gives now (up to the free slots) join the
 * decoder: each takes a slot and beam rows after the live ones, and its
 * first step feeds the start id. */
static clf_status search_take(struct search *b)
{
    clf_model_t *m = b->d.m;
    const size_t n = b->nfree ? b->in->take(b->in->user, b->nfree, b->alive, b->new_src, b->new_len, b->new_tag)
                              : 0;
    if (!n)
        return CLF_OK;
    if (n > b->nfree)
        return clf_error_set(m->ctx, CLF_ERR_ARG, "translate stream: %zu sentences given for %zu free places", n,
                             b->nfree);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (b->new_len[i] > b->width)
            return clf_error_set(m->ctx, CLF_ERR_ARG, "translate stream: a source of %zu tokens, more than the %zu "
                                 "it announced", b->new_len[i], b->width);
        w = b->new_len[i] + 1 > w ? b->new_len[i] + 1 : w;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t t = 0; t < w; t++)
            b->padded[i * w + t] = t < b->new_len[i] ? b->new_src[i][t] : t == b->new_len[i] ? m->cfg.eos_id
                                                                                              : m->cfg.pad_id;
        for (size_t t = 0; t < b->new_len[i]; t++)
            if (b->new_src[i][t] < 0 || b->new_src[i][t] >= m->cfg.vocab)
                return clf_error_set(m->ctx, CLF_ERR_ARG, "source %zu: id %d outside the vocabulary (%d)", i,
                                     (int)b->new_src[i][t], m->cfg.vocab);
    }
    const size_t row0 = b->d.rows;
    clf_status st = clf_decoder_add(&b->d, b->padded, n, w);
    if (st)
        return st;
    for (size_t i = 0; i < n; i++) {
        const size_t slot = (size_t)b->free_slot[--b->nfree];
        struct sentence *s = &b->sent[slot];
        s->max_len = sentence_limit(b->o, b->new_len[i], b->max_steps);
        s->t = 0, s->done = false, s->tag = b->new_tag[i], s->nfin = 0;
        for (size_t k = 0; k < b->beam; k++) {
            b->cum[slot * b->beam + k] = k ? NEG_INF : 0.0;  /* at first one hypothesis per sentence */
            b->tokens[row0 + i * b->beam + k] = m->cfg.decoder_start_id;
        }
        b->live[b->alive++] = (int32_t)slot;
    }
    return CLF_OK;
}

/* Greedy: the sentence in slot i, decoder row j, takes its most probable
 * token (the lowest id among equals; EOS only from min_length on), and is
 * done at EOS or the length limit. */
static void greedy_sentence(struct search *b, size_t i, size_t j)
{
    struct sentence *s = &b->sent[i];
    const struct scores *sc = &b->sc;
    const size_t t = s->t, V = b->V, eos = (size_t)sc->eos_id, pad = (size_t)b->d.m->cfg.pad_id;
    const bool eos_ok = t >= (size_t)b->o->min_length;
    size_t best = eos;
    float lpbest = scores_eos(sc, j);
    if (t + 1 < s->max_len && sc->host) {
        const float *lp = sc->logp + j * V;
        best = eos_ok ? eos : pad;  /* a start that is not EOS when EOS may not win */
        for (size_t v = 0; v < V; v++)
            if ((eos_ok || v != eos) && (lp[v] > lp[best] || (lp[v] == lp[best] && v < best)))
                best = v;
        lpbest = lp[best];
    } else if (t + 1 < s->max_len) {
        struct cand row[2];
        int nr = row_candidates(sc, j, 0.0, 0, eos_ok, row), at = 0;
        for (int c = 1; c < nr; c++)  /* in id order: a larger value wins, an equal one does not */
            if (row[c].score > row[at].score)
                at = c;
        if (nr) {
            best = (size_t)row[at].token;
            lpbest = (float)row[at].score;
        }
    }
    b->cum[i] += t + 1 >= s->max_len && b->o->length_penalty == CLF_LENGTH_PENALTY_HF ? 0.0 : lpbest;
    if (best == eos) {
        s->fin[0] = (struct clf_hypothesis){malloc((t ? t : 1) * sizeof(int32_t)), t, 0, (float)b->cum[i]};
        if (s->fin[0].ids)
            memcpy(s->fin[0].ids, b->hist + i * b->max_steps, t * sizeof(int32_t));
        s->fin[0].score = (float)(b->cum[i] / length_penalty(t + 1, b->o));
        s->nfin = 1;
        s->done = true;
        return;
    }
    b->hist[i * b->max_steps + t] = (int32_t)best;
    b->tokens[j] = (int32_t)best;
    b->reorder[j] = (int32_t)j;
}

/* Sentence base/beam's 2·beam best continuations at its step t over all
 * its hypotheses, best first, into b->cands; returns their count. Its
 * scores are in decoder rows from sbase on. */
static int search_candidates(struct search *b, size_t base, size_t sbase, size_t t, bool last)
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
        struct cand row[2 * CLF_TRANSLATE_BEAM_MAX + 1];
        const int nr = row_candidates(sc, sr, b->cum[r], k, eos_ok, row);
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

/* Beam search: the sentence in slot i, decoder rows j·beam + k, at its
 * step t: the beam best candidates become its new hypotheses (an EOS among
 * them finishes one); it is done when beam hypotheses have finished, none
 * continues, or it is out of room. */
static void search_sentence(struct search *b, size_t i, size_t j)
{
    struct sentence *s = &b->sent[i];
    const int beam = (int)b->beam;
    const size_t base = i * b->beam, sbase = j * b->beam, steps = b->max_steps, t = s->t;
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
    else {  /* commit its new beam */
        memcpy(b->hist + base * steps, b->newhist + base * steps, b->beam * steps * sizeof *b->hist);
        memcpy(b->cum + base, b->newcum + base, b->beam * sizeof *b->cum);
    }
}

/* Slot i's sentence is done: its nbest hypotheses go to the stream (the
 * rest are freed) and the slot is free again. */
static void search_give(struct search *b, size_t i)
{
    struct sentence *s = &b->sent[i];
    const size_t nbest = b->greedy ? 1 : (size_t)b->o->nbest;
    struct clf_hypothesis h[CLF_TRANSLATE_BEAM_MAX];
    for (size_t k = 0; k < nbest; k++) {
        if ((int)k < s->nfin) {
            h[k] = s->fin[k];
            s->fin[k].ids = NULL;
        } else {
            h[k] = (struct clf_hypothesis){NULL, 0, (float)NEG_INF, (float)NEG_INF};
        }
    }
    clf_hypotheses_free(s->fin, b->beam);
    s->nfin = 0;
    b->in->give(b->in->user, s->tag, h, nbest);
    b->free_slot[b->nfree++] = (int32_t)i;
}

/* One decoder step for every sentence in it; the caches follow the
 * hypotheses that survived, and the sentences that finished leave the
 * decoder's rows and go to the stream: the last live sentences move into
 * the places they leave, so the caches copy only those rows, in place
 * (clf_kv_cache_keep), rather than every row after the first to leave. */
static clf_status search_step(struct search *b)
{
    bool eos_ok = true;  /* for every row: else the step leaves EOS out and rows that may end add it */
    for (size_t j = 0; j < b->alive; j++)
        eos_ok &= b->sent[b->live[j]].t >= (size_t)b->o->min_length;
    clf_status st = scores_step(&b->d, &b->sc, b->tokens, eos_ok);
    if (st)
        return st;
    const size_t beam = b->beam, alive = b->alive;
    size_t kept = 0;
    for (size_t j = 0; j < alive; j++) {
        const size_t i = (size_t)b->live[j];
        if (b->greedy)
            greedy_sentence(b, i, j);
        else
            search_sentence(b, i, j);
        b->sent[i].t++;
        if (b->sent[i].done) {
            search_give(b, i);
            b->live[j] = -1;
        } else {
            kept++;
        }
    }
    /* a place j < kept left empty takes the last live sentence, from at or
     * after kept: there are as many of those as empty places before kept */
    size_t last = alive;
    for (size_t j = 0; j < kept; j++) {
        if (b->live[j] >= 0)
            continue;
        while (b->live[--last] < 0)
            ;
        for (size_t k = 0; k < beam; k++) {
            b->reorder[j * beam + k] = b->reorder[last * beam + k];
            b->tokens[j * beam + k] = b->tokens[last * beam + k];
        }
        b->live[j] = b->live[last];
    }
    b->alive = kept;
    return kept < alive || (kept && beam > 1) ? clf_decoder_reorder(&b->d, b->reorder, kept * beam) : CLF_OK;
}

static clf_status check_opts(clf_model_t *m, const struct clf_translate_opts *o)
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
    return CLF_OK;
}

size_t clf_model_translate_stream_bytes(const clf_model_t *m, const struct clf_translate_opts *o, size_t room,
                                        size_t width)
{
    const size_t beam = o->greedy ? 1 : (size_t)(o->beam > 0 ? o->beam : 1);
    return clf_decoder_bytes(m, room, width + 1, beam, sentence_limit(o, width, (size_t)m->cfg.max_len));
}

clf_status clf_model_translate_stream(clf_model_t *m, const struct clf_translate_opts *o,
                                      const struct clf_translate_stream *in)
{
    clf_status st = check_opts(m, o);
    if (st)
        return st;
    if (!in || !in->take || !in->give || !in->room || !in->width || in->width + 1 > (size_t)m->cfg.max_len)
        return clf_error_set(m->ctx, CLF_ERR_ARG, "translate stream: room %zu, width %zu: want take and give, room "
                             ">= 1 and 1 <= width < the model's max_len %d", in ? in->room : 0,
                             in ? in->width : 0, m->cfg.max_len);
    struct search b = {.o = o, .in = in, .greedy = o->greedy, .room = in->room,
                       .beam = o->greedy ? 1 : (size_t)o->beam, .V = (size_t)m->cfg.vocab, .width = in->width,
                       .max_steps = sentence_limit(o, in->width, (size_t)m->cfg.max_len)};
    st = search_init(&b, m);
    while (st == CLF_OK) {
        if ((st = search_take(&b)) || !b.alive)
            break;
        st = search_step(&b);
    }
    search_free(&b);
    return st;
}

/* clf_model_translate as a stream: every source at the first take, each
 * sentence's hypotheses into out at its index. */
struct batch_stream {
    const int32_t *const *src;
    const size_t *len;
    size_t n;
    bool given;
    struct clf_hypothesis *out;
    size_t nbest;
};

static size_t batch_take(void *user, size_t room, size_t live, const int32_t **src, size_t *len, void **tag)
{
    struct batch_stream *bs = user;
    (void)live;
    if (bs->given)
        return 0;
    bs->given = true;
    for (size_t i = 0; i < bs->n && i < room; i++)
        src[i] = bs->src[i], len[i] = bs->len[i], tag[i] = (void *)(uintptr_t)i;
    return bs->n < room ? bs->n : room;
}

static void batch_give(void *user, void *tag, struct clf_hypothesis *h, size_t n)
{
    struct batch_stream *bs = user;
    const size_t i = (size_t)(uintptr_t)tag;
    for (size_t k = 0; k < n; k++)
        bs->out[i * bs->nbest + k] = h[k];
}

clf_status clf_model_translate(clf_model_t *m, const int32_t *const *src, const size_t *src_len, size_t batch,
                               const struct clf_translate_opts *o, struct clf_hypothesis *out)
{
    clf_status st = check_opts(m, o);
    if (st)
        return st;
    const size_t nbest = o->greedy ? 1 : (size_t)o->nbest;
    size_t width = 1;
    for (size_t i = 0; i < batch; i++)
        width = src_len[i] > width ? src_len[i] : width;
    if (width + 1 > (size_t)m->cfg.max_len)
        return clf_error_set(m->ctx, CLF_ERR_ARG,
                             "a source of %zu tokens (with EOS) exceeds the model's max_len %d: split the line",
                             width + 1, m->cfg.max_len);
    for (size_t i = 0; i < batch * nbest; i++)
        out[i] = (struct clf_hypothesis){NULL, 0, (float)NEG_INF, (float)NEG_INF};
    if (!batch)
        return CLF_OK;
    struct batch_stream bs = {src, src_len, batch, false, out, nbest};
    const struct clf_translate_stream in = {batch_take, batch_give, &bs, batch, width};
    st = clf_model_translate_stream(m, o, &in);
    if (st != CLF_OK)
        clf_hypotheses_free(out, batch * nbest);
    return st;
}
