/* chrf.c: corpus chrF exactly as sacreBLEU 2.x's default CHRF (metrics/chrf.py):
 * character n-grams of orders 1..6 of the sentence with all whitespace
 * removed, counted in code points; no word n-grams; beta 2; precision and
 * recall averaged over the orders where both sides have n-grams
 * ("effective order", not eps smoothing). With several references each
 * sentence keeps the statistics of the reference with the best sentence F. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "clformer_text.h"
#include "text/text_internal.h"

#define CHAR_ORDER 6
#define BETA 2

/* Per order: hypothesis n-grams (0 when the reference has none), reference
 * n-grams, matches. */
struct chrf_stats {
    long v[CHAR_ORDER][3];
};

static double f_score(const struct chrf_stats *s)
{
    const double eps = 1e-16, factor = BETA * BETA;
    double avg_prec = 0.0, avg_rec = 0.0;
    int eff = 0;
    for (int i = 0; i < CHAR_ORDER; i++) {
        long n_hyp = s->v[i][0], n_ref = s->v[i][1], n_match = s->v[i][2];
        double prec = n_hyp > 0 ? (double)n_match / (double)n_hyp : eps;
        double rec = n_ref > 0 ? (double)n_match / (double)n_ref : eps;
        if (n_hyp > 0 && n_ref > 0) {
            avg_prec += prec;
            avg_rec += rec;
            eff++;
        }
    }
    if (eff == 0) {
        avg_prec = avg_rec = 0.0;
    } else {
        avg_prec /= eff;
        avg_rec /= eff;
    }
    if (avg_prec + avg_rec != 0.0) {
        double score = (1 + factor) * avg_prec * avg_rec;
        score /= factor * avg_prec + avg_rec;
        return 100 * score;
    }
    return 0.0;
}

/* The sentence without whitespace (lowercased when asked), and the byte
 * offset of each code point (cps + 1 entries). */
struct chars {
    char *s;
    size_t *at;
    size_t n;
};

static int chars_make(struct chars *c, const char *line, bool lowercase)
{
    size_t len = strlen(line);
    c->s = lowercase ? clf_py_lower(line, len) : malloc(len + 1);
    if (!c->s) return 0;
    if (!lowercase) memcpy(c->s, line, len + 1);
    len = strlen(c->s);
    c->at = malloc((len + 1) * sizeof *c->at);
    if (!c->at) return 0;
    const unsigned char *r = (const unsigned char *)c->s;
    char *w = c->s;
    c->n = 0;
    while (*r) {
        const unsigned char *p = r;
        uint32_t cp = clf_utf8_next(&r);
        if (clf_py_isspace(cp)) continue;
        c->at[c->n++] = (size_t)(w - c->s);
        memmove(w, p, (size_t)(r - p));
        w += r - p;
    }
    c->at[c->n] = (size_t)(w - c->s);
    *w = '\0';
    return 1;
}

static void chars_free(struct chars *c)
{
    free(c->s);
    free(c->at);
    c->s = NULL;
    c->at = NULL;
}

static int sentence_stats(struct clf_ngram_map *m, const struct chars *h, const struct chars *r,
                          struct chrf_stats *out)
{
    for (int k = 1; k <= CHAR_ORDER; k++) {
        long nh = h->n >= (size_t)k ? (long)(h->n - k + 1) : 0;
        long nr = r->n >= (size_t)k ? (long)(r->n - k + 1) : 0;
        long match = 0;
        if (!clf_ngram_map_reset(m, (size_t)(nr + nh))) return 0;  /* the hypothesis adds keys too */
        for (long i = 0; i < nr; i++)
            clf_ngram_map_get(m, r->s + r->at[i], (uint32_t)(r->at[i + k] - r->at[i]))->a++;
        for (long i = 0; i < nh && nr > 0; i++) {
            struct clf_ngram_slot *sl =
                clf_ngram_map_get(m, h->s + h->at[i], (uint32_t)(h->at[i + k] - h->at[i]));
            if (sl->a > 0) {
                sl->a--;
                match++;
            }
        }
        out->v[k - 1][0] = nr > 0 ? nh : 0;
        out->v[k - 1][1] = nr;
        out->v[k - 1][2] = match;
    }
    return 1;
}

clf_status clf_chrf_corpus(const char *const *hyps, size_t n, const char *const *const *refs,
                           int nrefs, bool lowercase, double *score)
{
    clf_status st = CLF_OK;
    struct clf_ngram_map map = {0};
    struct chars h = {0}, r = {0};
    struct chrf_stats total;

    if (!hyps || !refs || nrefs < 1 || !score)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_chrf_corpus: bad arguments");
    memset(&total, 0, sizeof total);
    for (size_t i = 0; i < n; i++) {
        if (!chars_make(&h, hyps[i], lowercase)) goto oom;
        struct chrf_stats best, cur;
        double best_f = -1.0;
        memset(&best, 0, sizeof best);
        for (int k = 0; k < nrefs; k++) {
            if (!chars_make(&r, refs[k][i], lowercase)) goto oom;
            if (!sentence_stats(&map, &h, &r, &cur)) goto oom;
            double f = f_score(&cur);
            if (f > best_f) {
                best_f = f;
                best = cur;
            }
            chars_free(&r);
        }
        for (int k = 0; k < CHAR_ORDER; k++)
            for (int j = 0; j < 3; j++) total.v[k][j] += best.v[k][j];
        chars_free(&h);
    }
    *score = f_score(&total);
    goto done;
oom:
    st = clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory computing chrF");
done:
    chars_free(&h);
    chars_free(&r);
    clf_ngram_map_free(&map);
    return st;
}

void clf_chrf_signature(bool lowercase, int nrefs, char *buf, size_t len)
{
    snprintf(buf, len, "nrefs:%d|case:%s|eff:yes|nc:6|nw:0|space:no|version:%s", nrefs,
             lowercase ? "lc" : "mixed", CLF_SACREBLEU_VERSION);
}
