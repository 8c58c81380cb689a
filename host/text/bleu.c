/* bleu.c: corpus BLEU exactly as sacreBLEU 2.x computes it (metrics/bleu.py,
 * tokenizers/tokenizer_13a.py and tokenizer_re.py), written anew in C.
 *
 * Per sentence: optional Python lower(), rstrip(), then the 13a tokenizer
 * (or none), whitespace split; n-grams of orders 1..4 of the hypothesis are
 * clipped by the maximum count over the references; the reference length
 * is the one closest to the hypothesis length (the shorter on a tie).
 * Corpus: exponential smoothing of zero counts, brevity penalty, and the
 * geometric mean of the four precisions with log(0) taken as -9999999999. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "clformer_text.h"
#include "text/text_internal.h"

#define ORDER 4

/* ------------------------------------------------------------- 13a tokens */

/* The first regexp's class [{-~[-` -&(-+:-@/]: ASCII punctuation except
 * ' - . , and the digits. */
static int punct13a(unsigned char c)
{
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

static int digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* mteval-v13a as sacreBLEU's Tokenizer13a; s is modified, the result is
 * malloc'd (NULL when out of memory). Working on UTF-8 bytes gives the
 * same text as Python's regexps on code points: every class tested is
 * ASCII, and [^0-9] matches the last byte of a multi-byte character
 * exactly when it matches that character. */
static char *tok_13a(char *s)
{
    clf_py_replace(s, "<skipped>", "");
    clf_py_replace(s, "-\n", "");
    for (char *p = s; *p; p++)
        if (*p == '\n') *p = ' ';
    if (strchr(s, '&')) {
        clf_py_replace(s, "&quot;", "\"");
        clf_py_replace(s, "&amp;", "&");
        clf_py_replace(s, "&lt;", "<");
        clf_py_replace(s, "&gt;", ">");
    }
    size_t n = strlen(s);
    unsigned char *a = malloc(3 * n + 8), *b = malloc(6 * n + 16);
    if (!a || !b) {
        free(a);
        free(b);
        return NULL;
    }
    /* f' {line} ' and ([{-~[-` -&(-+:-@/]) -> ' \1 ' */
    size_t k = 0;
    a[k++] = ' ';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (punct13a(c)) {
            a[k++] = ' ';
            a[k++] = c;
            a[k++] = ' ';
        } else {
            a[k++] = c;
        }
    }
    a[k++] = ' ';
    n = k;
    /* ([^0-9])([\.,]) -> '\1 \2 ' */
    k = 0;
    for (size_t i = 0; i < n;) {
        if (i + 1 < n && !digit(a[i]) && (a[i + 1] == '.' || a[i + 1] == ',')) {
            b[k++] = a[i];
            b[k++] = ' ';
            b[k++] = a[i + 1];
            b[k++] = ' ';
            i += 2;
        } else {
            b[k++] = a[i++];
        }
    }
    n = k;
    /* ([\.,])([^0-9]) -> ' \1 \2' */
    unsigned char *c2 = malloc(2 * n + 8);
    if (!c2) {
        free(a);
        free(b);
        return NULL;
    }
    k = 0;
    for (size_t i = 0; i < n;) {
        if (i + 1 < n && (b[i] == '.' || b[i] == ',') && !digit(b[i + 1])) {
            c2[k++] = ' ';
            c2[k++] = b[i];
            c2[k++] = ' ';
            c2[k++] = b[i + 1];
            i += 2;
        } else {
            c2[k++] = b[i++];
        }
    }
    n = k;
    /* ([0-9])(-) -> '\1 \2 ' */
    free(b);
    b = malloc(2 * n + 8);
    if (!b) {
        free(a);
        free(c2);
        return NULL;
    }
    k = 0;
    for (size_t i = 0; i < n;) {
        if (i + 1 < n && digit(c2[i]) && c2[i + 1] == '-') {
            b[k++] = c2[i];
            b[k++] = ' ';
            b[k++] = '-';
            b[k++] = ' ';
            i += 2;
        } else {
            b[k++] = c2[i++];
        }
    }
    b[k] = '\0';
    free(a);
    free(c2);
    return (char *)b;
}

/* ' '.join(s.split()) with Python's whitespace, in place. */
static void squeeze_spaces(char *s)
{
    const unsigned char *r = (const unsigned char *)s;
    char *w = s;
    int pending = 0;
    while (*r) {
        const unsigned char *at = r;
        uint32_t c = clf_utf8_next(&r);
        if (clf_py_isspace(c)) {
            pending = w != s;
            continue;
        }
        if (pending) *w++ = ' ';
        pending = 0;
        memmove(w, at, (size_t)(r - at));
        w += r - at;
    }
    *w = '\0';
}

/* The sentence as BLEU sees it: lower(), rstrip(), tokenized, tokens
 * joined by single spaces. malloc'd; NULL when out of memory. */
static char *preprocess(const char *line, const struct clf_bleu_opts *o)
{
    size_t len = strlen(line);
    char *s;
    if (o->lowercase) {
        s = clf_py_lower(line, len);
    } else {
        s = malloc(len + 1);
        if (s) memcpy(s, line, len + 1);
    }
    if (!s) return NULL;
    s[clf_py_rstrip_len(s, strlen(s))] = '\0';
    if (o->tok == CLF_BLEU_TOK_13A) {
        char *t = tok_13a(s);
        free(s);
        s = t;
        if (!s) return NULL;
    }
    squeeze_spaces(s);
    return s;
}

/* Start offsets of the tokens of a squeezed string; returns their count. */
static size_t token_starts(const char *s, size_t *starts)
{
    size_t n = 0;
    if (!*s) return 0;
    starts[n++] = 0;
    for (size_t i = 0; s[i]; i++)
        if (s[i] == ' ') starts[n++] = i + 1;
    return n;
}

/* ------------------------------------------------------------------ BLEU */

static double my_log(double x) { return x == 0.0 ? -9999999999.0 : log(x); }

static void compute(struct clf_bleu_score *s)
{
    s->bp = 1.0;
    if (s->hyp_len < s->ref_len)
        s->bp = s->hyp_len > 0 ? exp(1.0 - (double)s->ref_len / (double)s->hyp_len) : 0.0;
    s->ratio = s->ref_len ? (double)s->hyp_len / (double)s->ref_len : 0.0;
    for (int n = 0; n < ORDER; n++) s->precisions[n] = 0.0;
    s->score = 0.0;
    int any = 0;
    for (int n = 0; n < ORDER; n++) any |= s->counts[n] != 0;
    if (!any) return;
    double smooth = 1.0;
    for (int n = 0; n < ORDER; n++) {
        if (s->totals[n] == 0) break;
        if (s->counts[n] == 0) {
            smooth *= 2;
            s->precisions[n] = 100.0 / (smooth * (double)s->totals[n]);
        } else {
            s->precisions[n] = 100.0 * (double)s->counts[n] / (double)s->totals[n];
        }
    }
    double sum = 0.0;
    for (int n = 0; n < ORDER; n++) sum += my_log(s->precisions[n]);
    s->score = s->bp * exp(sum / ORDER);
}

clf_status clf_bleu_corpus(const char *const *hyps, size_t n, const char *const *const *refs,
                           int nrefs, const struct clf_bleu_opts *opts,
                           struct clf_bleu_score *out)
{
    static const struct clf_bleu_opts defaults = {false, CLF_BLEU_TOK_13A};
    const struct clf_bleu_opts *o = opts ? opts : &defaults;
    clf_status st = CLF_OK;
    struct clf_ngram_map map = {0};
    char **pre = NULL;       /* nrefs + 1 preprocessed strings of a sentence */
    size_t *starts = NULL, starts_cap = 0;

    if (!hyps || !refs || nrefs < 1 || !out)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_bleu_corpus: bad arguments");
    memset(out, 0, sizeof *out);
    pre = calloc((size_t)nrefs + 1, sizeof *pre);
    if (!pre) goto oom;

    for (size_t i = 0; i < n; i++) {
        size_t most = 0, keys = 0;
        for (int r = 0; r <= nrefs; r++) {
            pre[r] = preprocess(r < nrefs ? refs[r][i] : hyps[i], o);
            if (!pre[r]) goto oom;
            size_t len = strlen(pre[r]);
            if (len + 1 > most) most = len + 1;
            keys += ORDER * (len + 1);
        }
        if (most > starts_cap) {
            free(starts);
            starts_cap = most;
            starts = malloc(starts_cap * sizeof *starts);
            if (!starts) goto oom;
        }
        if (!clf_ngram_map_reset(&map, keys)) goto oom;

        /* a: the largest count over the references; c: this reference's
         * count, valid while b == the reference's number + 1. */
        long ref_len = -1, hyp_len;
        size_t hl = token_starts(pre[nrefs], starts);
        hyp_len = (long)hl;
        for (int r = 0; r < nrefs; r++) {
            const char *s = pre[r];
            size_t nt = token_starts(s, starts);
            long len = (long)nt, diff = labs(hyp_len - len);
            if (ref_len < 0 || diff < labs(hyp_len - ref_len) ||
                (diff == labs(hyp_len - ref_len) && len < ref_len))
                ref_len = len;
            for (size_t t = 0; t < nt; t++)
                for (size_t k = 1; k <= ORDER && t + k <= nt; k++) {
                    size_t end = t + k < nt ? starts[t + k] - 1 : strlen(s + starts[t]) + starts[t];
                    struct clf_ngram_slot *sl =
                        clf_ngram_map_get(&map, s + starts[t], (uint32_t)(end - starts[t]));
                    if (sl->b != r + 1) {
                        sl->b = r + 1;
                        sl->c = 0;
                    }
                    if (++sl->c > sl->a) sl->a = sl->c;
                }
        }
        const char *h = pre[nrefs];
        token_starts(h, starts);
        for (size_t t = 0; t < hl; t++)
            for (size_t k = 1; k <= ORDER && t + k <= hl; k++) {
                size_t end = t + k < hl ? starts[t + k] - 1 : strlen(h + starts[t]) + starts[t];
                struct clf_ngram_slot *sl =
                    clf_ngram_map_get(&map, h + starts[t], (uint32_t)(end - starts[t]));
                /* slots of hypothesis counts: b reset to a large marker */
                if (sl->b >= 0) {
                    sl->b = -1;
                    sl->c = 0;
                }
                out->totals[k - 1]++;
                if (++sl->c <= sl->a) out->counts[k - 1]++;
            }
        out->hyp_len += hyp_len;
        out->ref_len += ref_len;
        for (int r = 0; r <= nrefs; r++) {
            free(pre[r]);
            pre[r] = NULL;
        }
    }
    compute(out);
    goto done;
oom:
    st = clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory computing BLEU");
done:
    if (pre)
        for (int r = 0; r <= nrefs; r++) free(pre[r]);
    free(pre);
    free(starts);
    clf_ngram_map_free(&map);
    return st;
}

void clf_bleu_signature(const struct clf_bleu_opts *opts, int nrefs, char *buf, size_t len)
{
    bool lc = opts && opts->lowercase;
    bool none = opts && opts->tok == CLF_BLEU_TOK_NONE;
    snprintf(buf, len, "nrefs:%d|case:%s|eff:no|tok:%s|smooth:exp|version:%s", nrefs,
             lc ? "lc" : "mixed", none ? "none" : "13a", CLF_SACREBLEU_VERSION);
}

void clf_bleu_verbose(const struct clf_bleu_score *s, char *buf, size_t len)
{
    snprintf(buf, len, "%.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %ld ref_len = %ld)",
             s->precisions[0], s->precisions[1], s->precisions[2], s->precisions[3], s->bp,
             s->ratio, s->hyp_len, s->ref_len);
}
