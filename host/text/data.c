/* data.c: parallel data. Two line-aligned files -> subword ids of the pairs
 * worth keeping -> batches of similar length, shuffled deterministically
 * from (seed, epoch) -> padded id arrays.
 *
 * Each side is encoded with one SentencePiece model (ours) or with its own
 * side of a tokenizer (clf_corpus_encode_tok: Marian's source.spm and
 * target.spm through vocab.json), always without eos: the batch adds it.
 *
 * Batch arrays: src (n, src_len) = ids + eos, tgt_in (n, tgt_len) =
 * bos + ids, tgt_out (n, tgt_len) = ids + eos, padded with CLF_SPM_PAD
 * (or the ids a model brings: clf_batch_fill_ids). */
#include <stdlib.h>
#include <string.h>

#include "base/rand.h"
#include "base/status.h"
#include "clformer_text.h"
#include "text/text_internal.h"

clf_status clf_corpus_load(struct clf_corpus **out, const char *src_path, const char *tgt_path)
{
    clf_status st;
    struct clf_corpus *c = NULL;
    if (!out || !src_path || !tgt_path)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_corpus_load: NULL argument");
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (!c) return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory");
    CLF_TRY(clf_lines_read(&c->src, src_path));
    CLF_TRY(clf_lines_read(&c->tgt, tgt_path));
    if (c->src.n == 0 || c->tgt.n == 0) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: empty file",
                           c->src.n == 0 ? src_path : tgt_path);
        goto fail;
    }
    if (c->src.n != c->tgt.n) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT,
                           "line counts differ: %s has %zu lines, %s has %zu lines", src_path,
                           c->src.n, tgt_path, c->tgt.n);
        goto fail;
    }
    *out = c;
    return CLF_OK;
fail:
    clf_corpus_free(c);
    return st;
}

static void encoded_free(struct clf_corpus *c)
{
    free(c->pair_line);
    free(c->src_ids);
    free(c->tgt_ids);
    free(c->src_off);
    free(c->tgt_off);
    c->pair_line = c->src_off = c->tgt_off = NULL;
    c->src_ids = c->tgt_ids = NULL;
    c->n_pairs = 0;
}

void clf_corpus_free(struct clf_corpus *c)
{
    if (!c) return;
    clf_lines_free(&c->src);
    clf_lines_free(&c->tgt);
    encoded_free(c);
    free(c);
}

/* Appends ids to a growing array. */
static int append(int32_t **arr, size_t *len, size_t *cap, const int32_t *ids, size_t n)
{
    if (*len + n > *cap) {
        size_t want = *cap ? *cap : 1 << 16;
        while (want < *len + n) want *= 2;
        int32_t *p = realloc(*arr, want * sizeof *p);
        if (!p) return 0;
        *arr = p;
        *cap = want;
    }
    if (n) memcpy(*arr + *len, ids, n * sizeof *ids);
    *len += n;
    return 1;
}

/* How a side's text becomes ids: one SentencePiece model for both sides
 * (ours), or a tokenizer with a model per side (clf_tok_*). */
struct encoder {
    const clf_spm_t *spm;
    const clf_tok_t *tok;
};

static clf_status encode_side(const struct encoder *e, enum clf_tok_side side, const char *text, int32_t **ids,
                              size_t *n)
{
    if (e->tok)
        return clf_tok_encode(e->tok, side, text, strlen(text), false, ids, n);
    return clf_spm_encode(e->spm, text, strlen(text), ids, n);
}

static clf_status encode_pairs(struct clf_corpus *c, const struct encoder *e, int max_len,
                               struct clf_corpus_summary *summary)
{
    clf_status st = CLF_OK;
    struct clf_corpus_summary sum;
    size_t src_cap = 0, tgt_cap = 0, src_n = 0, tgt_n = 0;
    int32_t *s_ids = NULL, *t_ids = NULL;
    encoded_free(c);
    memset(&sum, 0, sizeof sum);
    size_t n = c->src.n;
    sum.lines = n;
    c->pair_line = malloc((n ? n : 1) * sizeof *c->pair_line);
    c->src_off = malloc((n + 1) * sizeof *c->src_off);
    c->tgt_off = malloc((n + 1) * sizeof *c->tgt_off);
    if (!c->pair_line || !c->src_off || !c->tgt_off) goto oom;
    c->src_off[0] = c->tgt_off[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t ns, nt;
        const char *s = c->src.line[i], *t = c->tgt.line[i];
        CLF_TRY(encode_side(e, CLF_TOK_SOURCE, s, &s_ids, &ns));
        CLF_TRY(encode_side(e, CLF_TOK_TARGET, t, &t_ids, &nt));
        if (ns == 0 || nt == 0) {
            sum.skipped_empty++;
        } else if (max_len > 0 && (ns > (size_t)max_len || nt > (size_t)max_len)) {
            sum.skipped_long++;
        } else {
            if (!append(&c->src_ids, &src_n, &src_cap, s_ids, ns)) goto oom;
            if (!append(&c->tgt_ids, &tgt_n, &tgt_cap, t_ids, nt)) goto oom;
            c->pair_line[c->n_pairs] = i;
            c->n_pairs++;
            c->src_off[c->n_pairs] = src_n;
            c->tgt_off[c->n_pairs] = tgt_n;
            if ((int)ns > sum.max_src_len) sum.max_src_len = (int)ns;
            if ((int)nt > sum.max_tgt_len) sum.max_tgt_len = (int)nt;
        }
        free(s_ids);
        free(t_ids);
        s_ids = t_ids = NULL;
    }
    sum.kept = c->n_pairs;
    sum.src_tokens = src_n;
    sum.tgt_tokens = tgt_n;
    if (summary) *summary = sum;
    return CLF_OK;
oom:
    st = clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory encoding the corpus");
fail:
    free(s_ids);
    free(t_ids);
    encoded_free(c);
    return st;
}

clf_status clf_corpus_encode(struct clf_corpus *c, const clf_spm_t *spm, int max_len,
                             struct clf_corpus_summary *summary)
{
    if (!c || !spm || max_len < 0)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_corpus_encode: bad arguments");
    const struct encoder e = {spm, NULL};
    return encode_pairs(c, &e, max_len, summary);
}

clf_status clf_corpus_encode_tok(struct clf_corpus *c, const clf_tok_t *tok, int max_len,
                                 struct clf_corpus_summary *summary)
{
    if (!c || !tok || max_len < 0)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_corpus_encode_tok: bad arguments");
    const struct encoder e = {NULL, tok};
    return encode_pairs(c, &e, max_len, summary);
}

/* ----------------------------------------------------------------- batches */

static void shuffle(size_t *a, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(clf_splitmix64(rng) % i);
        size_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* Sorting key: padded source, then target length; the sort is made stable
 * over the shuffled order by the position as the last key. */
struct keyed {
    uint32_t src, tgt;
    size_t pos, pair;
};

static int cmp_keyed(const void *x, const void *y)
{
    const struct keyed *a = x, *b = y;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    if (a->tgt != b->tgt) return a->tgt < b->tgt ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

clf_status clf_batches_make(const struct clf_corpus *c, size_t max_tokens, uint64_t seed,
                            uint64_t epoch, struct clf_batches *out)
{
    struct keyed *k = NULL;
    size_t *order = NULL;
    struct clf_batch *batch = NULL;
    if (!c || !out || max_tokens < 1)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_batches_make: bad arguments");
    memset(out, 0, sizeof *out);
    size_t n = c->n_pairs;
    if (n == 0) return clf_error_set(NULL, CLF_ERR_ARG, "clf_batches_make: no encoded pairs");
    uint64_t rng = seed ^ (0xd1b54a32d192ed03ULL * (epoch + 1));
    order = malloc(n * sizeof *order);
    k = malloc(n * sizeof *k);
    if (!order || !k) goto oom;
    for (size_t i = 0; i < n; i++) order[i] = i;
    shuffle(order, n, &rng);
    for (size_t i = 0; i < n; i++) {
        size_t p = order[i];
        k[i].src = (uint32_t)(c->src_off[p + 1] - c->src_off[p] + 1);
        k[i].tgt = (uint32_t)(c->tgt_off[p + 1] - c->tgt_off[p] + 1);
        k[i].pos = i;
        k[i].pair = p;
    }
    qsort(k, n, sizeof *k, cmp_keyed);
    for (size_t i = 0; i < n; i++) order[i] = k[i].pair;

    /* Greedy cut: grow a batch while n * max(src_len, tgt_len) fits. */
    batch = malloc(n * sizeof *batch);
    if (!batch) goto oom;
    size_t nb = 0;
    for (size_t i = 0; i < n;) {
        struct clf_batch *b = &batch[nb++];
        b->pairs = order + i;
        b->n = 0;
        b->src_len = b->tgt_len = 0;
        while (i < n) {
            int s = (int)k[i].src, t = (int)k[i].tgt;
            int ms = s > b->src_len ? s : b->src_len, mt = t > b->tgt_len ? t : b->tgt_len;
            size_t widest = (size_t)(ms > mt ? ms : mt);
            if (b->n > 0 && (b->n + 1) * widest > max_tokens) break;
            b->src_len = ms;
            b->tgt_len = mt;
            b->n++;
            i++;
        }
    }
    /* Shuffle the batch order (Fisher-Yates on the structs). */
    for (size_t i = nb; i > 1; i--) {
        size_t j = (size_t)(clf_splitmix64(&rng) % i);
        struct clf_batch t = batch[i - 1];
        batch[i - 1] = batch[j];
        batch[j] = t;
    }
    free(k);
    out->n = nb;
    out->batch = batch;
    out->storage = order;
    return CLF_OK;
oom:
    free(k);
    free(order);
    free(batch);
    return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory making batches");
}

void clf_batches_free(struct clf_batches *b)
{
    if (!b) return;
    free(b->batch);
    free(b->storage);
    memset(b, 0, sizeof *b);
}

clf_status clf_batch_fill(const struct clf_corpus *c, const struct clf_batch *b, int32_t *src,
                          int32_t *tgt_in, int32_t *tgt_out)
{
    const struct clf_batch_ids ours = {CLF_SPM_PAD, CLF_SPM_EOS, CLF_SPM_BOS};
    return clf_batch_fill_ids(c, b, &ours, src, tgt_in, tgt_out);
}

clf_status clf_batch_fill_ids(const struct clf_corpus *c, const struct clf_batch *b, const struct clf_batch_ids *ids,
                              int32_t *src, int32_t *tgt_in, int32_t *tgt_out)
{
    if (!c || !b || !ids || !src || !tgt_in || !tgt_out)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_batch_fill: NULL argument");
    size_t S = (size_t)b->src_len, T = (size_t)b->tgt_len;
    for (size_t r = 0; r < b->n; r++) {
        size_t p = b->pairs[r];
        if (p >= c->n_pairs) return clf_error_set(NULL, CLF_ERR_ARG, "batch names pair %zu of %zu", p, c->n_pairs);
        size_t ns = c->src_off[p + 1] - c->src_off[p], nt = c->tgt_off[p + 1] - c->tgt_off[p];
        if (ns + 1 > S || nt + 1 > T)
            return clf_error_set(NULL, CLF_ERR_ARG, "pair %zu does not fit its batch", p);
        int32_t *s = src + r * S, *ti = tgt_in + r * T, *to = tgt_out + r * T;
        const int32_t *si = c->src_ids + c->src_off[p], *tt = c->tgt_ids + c->tgt_off[p];
        memcpy(s, si, ns * sizeof *s);
        s[ns] = ids->eos;
        for (size_t j = ns + 1; j < S; j++) s[j] = ids->pad;
        ti[0] = ids->start;
        memcpy(ti + 1, tt, nt * sizeof *ti);
        memcpy(to, tt, nt * sizeof *to);
        to[nt] = ids->eos;
        for (size_t j = nt + 1; j < T; j++) ti[j] = to[j] = ids->pad;
    }
    return CLF_OK;
}
