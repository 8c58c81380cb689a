/* langid.c: language identification for /detect and `source: "auto"`,
 * through libexttextcat (LibreOffice's n-gram text categorizer after
 * Cavnar and Trenkle, a C library kept in Debian with language models for
 * about 160 languages in libexttextcat-data).
 *
 * Why it and not CLD2 (libcld2-dev): CLD2 is better on very short texts,
 * but it is a C++ API over tables frozen since 2015 (Debian packages a
 * 2015 git snapshot), and it always chooses among all of its languages;
 * textcat is plain C, still maintained (LibreOffice ships it), and is
 * given exactly the languages served, one model each, so a guess can never
 * name a language the server cannot translate.
 *
 * textcat scores a text by "out-of-place" distance to each language's
 * n-gram ranks (lower is closer), not by probability; one handle a
 * language gives every served language its distance (a handle of many
 * keeps only those within 3% of the best). The confidence reported is a
 * softmax of the relative gaps d/d_best - 1 at the scale of textcat's own
 * 3% "cannot tell apart" threshold, in percent as LibreTranslate reports it:
 * a clear winner gets near 100, two languages textcat cannot tell apart
 * about 50 each. */
#define _GNU_SOURCE /* mkstemp's header, on older glibc */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve_libre.h"

#ifdef CLF_HAVE_TEXTCAT
#include <textcat.h>

#ifndef CLF_TEXTCAT_DIR
#define CLF_TEXTCAT_DIR "/usr/share/libexttextcat"
#endif

struct serve_langid {
    pthread_mutex_t lock; /* a handle keeps per-call state */
    size_t n;
    char code[SERVE_LANGID_MAX][16];
    void *tc[SERVE_LANGID_MAX];
    candidate_t *cand[SERVE_LANGID_MAX]; /* textcat's own output array, one a handle */
};

/* The model file of a served code: its own, or the script textcat names. */
static bool model_of(const char *code, char *path, size_t size)
{
    static const char *const alias[][2] = {{"zh", "zh-Hans"}, {"zt", "zh-Hant"}, {"sr", "sr-Latn"}, {"pb", "pt"},
                                           {"no", "nb"}};
    const char *name = code;
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
        if (!strcmp(code, alias[i][0]))
            name = alias[i][1];
    snprintf(path, size, "%s/%s.lm", CLF_TEXTCAT_DIR, name);
    return access(path, R_OK) == 0;
}

/* A textcat handle knowing one model: textcat reads its models from a
 * configuration file, so one is written to a temporary file and removed. */
static void *handle_of(const char *model)
{
    char conf[] = "/tmp/clformer-textcat-XXXXXX";
    const int fd = mkstemp(conf);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(conf);
        return NULL;
    }
    fprintf(f, "%s x\n", model);
    const bool ok = fclose(f) == 0;
    void *tc = ok ? special_textcat_Init(conf, "") : NULL;
    unlink(conf);
    if (tc) {
        textcat_SetProperty(tc, TCPROP_UTF8AWARE, TC_TRUE);
        textcat_SetProperty(tc, TCPROP_MINIMUM_DOCUMENT_SIZE, 1); /* short texts get a guess, not SHORT */
    }
    return tc;
}

struct serve_langid *serve_langid_init(const char *const *codes, size_t n, char *err, size_t errlen)
{
    struct serve_langid *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    for (size_t i = 0; i < n && l->n < SERVE_LANGID_MAX; i++) {
        bool seen = false;
        for (size_t j = 0; j < l->n; j++)
            seen |= !strcmp(l->code[j], codes[i]);
        char path[512];
        if (seen || strlen(codes[i]) >= sizeof l->code[0])
            continue;
        if (!model_of(codes[i], path, sizeof path))
            continue; /* a language textcat has no model of is never guessed */
        if (!(l->tc[l->n] = handle_of(path)) || !(l->cand[l->n] = textcat_GetClassifyFullOutput(l->tc[l->n]))) {
            snprintf(err, errlen, "libexttextcat could not load %s", path);
            serve_langid_free(l);
            return NULL;
        }
        strcpy(l->code[l->n++], codes[i]);
    }
    if (!l->n) {
        char names[128] = "";
        for (size_t i = 0, at = 0; i < n && at + 20 < sizeof names; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%.16s", i ? ", " : "", codes[i]);
        snprintf(err, errlen, "libexttextcat has no model in %s for any language served (%s; "
                 "libexttextcat-data installs about 160)", CLF_TEXTCAT_DIR, names);
        serve_langid_free(l);
        return NULL;
    }
    return l;
}

size_t serve_langid_detect(struct serve_langid *l, const char *text, size_t len, struct serve_guess *out)
{
    double d[SERVE_LANGID_MAX], best = INFINITY;
    size_t k = 0;
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->n; i++) {
        /* textcat reads at most a few hundred bytes usefully; cap the work */
        const int got = textcat_ClassifyFull(l->tc[i], text, len < 4096 ? len : 4096, l->cand[i]);
        if (got >= 1) {
            d[k] = l->cand[i][0].score > 0 ? l->cand[i][0].score : 1;
            best = fmin(best, d[k]);
            strcpy(out[k].language, l->code[i]);
            k++;
        }
    }
    pthread_mutex_unlock(&l->lock);
    double sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += out[i].confidence = exp(-(d[i] / best - 1) / 0.03);
    for (size_t i = 0; i < k; i++)
        out[i].confidence = round(1000 * out[i].confidence / sum) / 10;
    for (size_t i = 1; i < k; i++) /* best first: a handful of entries */
        for (size_t j = i; j > 0 && out[j].confidence > out[j - 1].confidence; j--) {
            const struct serve_guess t = out[j];
            out[j] = out[j - 1], out[j - 1] = t;
        }
    return k;
}

void serve_langid_free(struct serve_langid *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n + 1 && i < SERVE_LANGID_MAX; i++)
        if (l->tc[i]) {
            if (l->cand[i])
                textcat_ReleaseClassifyFullOutput(l->tc[i], l->cand[i]);
            textcat_Done(l->tc[i]);
        }
    pthread_mutex_destroy(&l->lock);
    free(l);
}
#endif
