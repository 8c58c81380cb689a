/* libre.c: LibreTranslate's routes past /translate's plain text, over the
 * pieces of serve_libre.h: /detect, /frontend/settings, /suggest,
 * /download_file/NAME, the page at /, and the hooks through which
 * /translate does `source: "auto"`, `format: "html"` and /translate_file
 * (struct serve_job). Shapes and messages follow LibreTranslate's
 * libretranslate/app.py so that its clients and web front ends work. */
#define _GNU_SOURCE
#ifdef CLF_HAVE_MHD
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clformer/advanced/json.h>
#include "http.h"
#include "serve_libre.h"

#define FILES_MAX 64               /* translated files kept at once */
#define FILES_BYTES (16u << 20)    /* and their bytes */
#define FILES_TTL (30 * 60.0)      /* seconds one is kept */

struct serve_libre {
    struct serve_langid *langid; /* NULL: /detect answers 501 with why */
    char langid_err[256];
    struct serve_files *files;
};

bool serve_libre_init(struct serve *s)
{
    struct serve_libre *l = calloc(1, sizeof *l);
    if (!l || !(l->files = serve_files_init(FILES_MAX, FILES_BYTES, FILES_TTL))) {
        free(l);
        fprintf(stderr, "clformer: out of host memory\n");
        return false;
    }
#ifdef CLF_HAVE_TEXTCAT
    const char *codes[2 * SERVE_MAX_PAIRS];
    for (size_t i = 0; i < s->n_pairs; i++)
        codes[2 * i] = s->pairs[i].source, codes[2 * i + 1] = s->pairs[i].target;
    l->langid = serve_langid_init(codes, 2 * s->n_pairs, l->langid_err, sizeof l->langid_err);
    if (!l->langid) /* not fatal: the rest serves; said once here, and in each 501 */
        fprintf(stderr, "clformer serve: /detect and source auto are off: %s\n", l->langid_err);
#else
    snprintf(l->langid_err, sizeof l->langid_err, "this clformer was built without libexttextcat: apt-get install "
             "libexttextcat-dev libexttextcat-data and build again");
#endif
#ifdef CLF_HAVE_LIBXML2
    serve_html_init();
#endif
    s->libre = l;
    return true;
}

void serve_libre_free(struct serve *s)
{
    if (!s->libre)
        return;
#ifdef CLF_HAVE_TEXTCAT
    serve_langid_free(s->libre->langid);
#endif
    serve_files_free(s->libre->files);
    free(s->libre);
    s->libre = NULL;
}

/* ------------------------------------------------------ language guesses */

/* The served guesses for text, best first; 0 with r's 501 where there is
 * no library. */
static size_t guesses(const struct serve *s, const char *text, struct serve_guess *g, struct reply *r)
{
#ifdef CLF_HAVE_TEXTCAT
    if (s->libre->langid)
        return serve_langid_detect(s->libre->langid, text, strlen(text), g);
#else
    (void)text, (void)g;
#endif
    char msg[400];
    snprintf(msg, sizeof msg, "Language detection is not available: %s", s->libre->langid_err);
    serve_error_reply(r, 501, msg);
    return 0;
}

static void write_guess(FILE *f, const struct serve_guess *g)
{
    fprintf(f, "{\"confidence\":%.1f,\"language\":", g->confidence);
    clf_json_write_str(f, g->language);
    fputc('}', f);
}

void serve_detect_reply(const struct serve *s, const char *q, struct reply *r)
{
    struct serve_guess g[SERVE_LANGID_MAX];
    const size_t n = guesses(s, q, g, r);
    if (r->body)
        return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!serve_stream_open(&f, &buf, &len))
        return serve_error_reply(r, 503, "out of memory");
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? "," : "", f);
        write_guess(f, &g[i]);
    }
    fputc(']', f);
    fclose(f);
    serve_json_reply(r, 200, buf, len);
}

/* ------------------------------------------------ /translate's additions */

/* source "auto": the likeliest language served into target, from all texts
 * of q together (LibreTranslate guesses each text of over 40 characters
 * alone, but one request here is one pair of the queue). */
static bool auto_source(struct serve_job *job, const struct serve *s, const char *const *q, size_t nq,
                        const char **source, const char *target, struct reply *r)
{
    size_t total = 0;
    for (size_t i = 0; i < nq; i++)
        total += strlen(q[i]) + 1;
    char *all = malloc(total + 1), *p = all;
    if (!all) {
        serve_error_reply(r, 503, "out of memory");
        return false;
    }
    for (size_t i = 0; i < nq; i++)
        p += sprintf(p, "%s\n", q[i]);
    *p = 0;
    struct serve_guess g[SERVE_LANGID_MAX];
    const size_t n = guesses(s, all, g, r);
    free(all);
    if (r->body)
        return false;
    /* the likeliest language that is served into target */
    for (size_t i = 0; i < n && !job->detected; i++)
        for (size_t k = 0; k < s->n_pairs; k++)
            if (!strcmp(s->pairs[k].source, g[i].language) && !strcmp(s->pairs[k].target, target)) {
                job->guess = g[i];
                job->detected = true;
                break;
            }
    if (!job->detected) {
        char msg[200];
        snprintf(msg, sizeof msg, "auto: no language served into %s was recognized in q "
                 "(GET /languages lists the pairs)", serve_shown(target));
        serve_error_reply(r, 400, msg);
        return false;
    }
    *source = job->guess.language;
    return true;
}

/* format "html": each text's prose nodes take its place in q, one
 * translation a node; false with r's reply (an error, or markup without
 * text answered as it is). */
static bool html_nodes(struct serve_job *job, const char **q, size_t *nq, bool array, struct reply *r)
{
#ifdef CLF_HAVE_LIBXML2
    job->n_docs = *nq;
    if (!(job->docs = calloc(*nq ? *nq : 1, sizeof *job->docs))) {
        serve_error_reply(r, 503, "out of memory");
        return false;
    }
    const char *nodes[MAX_Q];
    size_t n = 0;
    for (size_t i = 0; i < *nq; i++) {
        if (!(job->docs[i] = serve_html_parse(q[i], strlen(q[i])))) {
            serve_error_reply(r, 503, "out of memory");
            return false;
        }
        for (size_t k = 0; k < serve_html_count(job->docs[i]); k++) {
            if (n == MAX_Q) {
                serve_error_reply(r, 413, "q holds more than 1024 HTML text nodes: send fewer at a time");
                return false;
            }
            nodes[n++] = serve_html_text(job->docs[i], k);
        }
    }
    memcpy(q, nodes, n * sizeof *q);
    *nq = n;
    job->html = true;
    if (n == 0) { /* markup alone: nothing to translate, the markup is the answer */
        char *buf = NULL;
        size_t len = 0;
        FILE *f;
        if (!serve_stream_open(&f, &buf, &len)) {
            serve_error_reply(r, 503, "out of memory");
            return false;
        }
        fputs(array ? "{\"translatedText\":[" : "{\"translatedText\":", f);
        serve_job_end(job, f, array);
        fclose(f);
        serve_json_reply(r, 200, buf, len);
        return false; /* r holds the answer: nothing to queue */
    }
#else
    (void)job, (void)q, (void)nq, (void)array;
    serve_error_reply(r, 501, "format html is not available: this clformer was built without libxml2 "
                      "(apt-get install libxml2-dev and build again)");
    return false;
#endif
    return true;
}

bool serve_job_begin(struct serve_job *job, const struct serve *s, const char **q, size_t *nq, bool array,
                     const char **source, const char *target, const char *format, struct reply *r)
{
    job->s = s;
    job->n_texts = *nq;
    if (format && strcmp(format, "text") && strcmp(format, "html")) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s format is not supported (text or html)", serve_shown(format));
        serve_error_reply(r, 400, msg);
        return false;
    }
    /* html first: a guess reads the prose, not the markup */
    if (format && !strcmp(format, "html") && !html_nodes(job, q, nq, array, r))
        return false;
    if (!strcmp(*source, "auto") && !auto_source(job, s, q, *nq, source, target, r))
        return false;
    return true;
}

bool serve_job_unit(struct serve_job *job, size_t i, const char *text)
{
    if (job->file) {
        free(job->file_text);
        job->file_text = strdup(text ? text : "");
        return true;
    }
#ifdef CLF_HAVE_LIBXML2
    if (job->html) {
        for (size_t d = 0; d < job->n_docs; d++) {
            const size_t n = serve_html_count(job->docs[d]);
            if (i < n) {
                job->failed |= !serve_html_set(job->docs[d], i, text ? text : "");
                break;
            }
            i -= n;
        }
        return true;
    }
#else
    (void)i;
#endif
    return false;
}

bool serve_job_end(struct serve_job *job, FILE *f, bool array)
{
    if (!job->html && !job->detected)
        return false;
#ifdef CLF_HAVE_LIBXML2
    for (size_t d = 0; job->html && d < job->n_docs; d++) {
        size_t len;
        char *html = serve_html_dump(job->docs[d], &len);
        job->failed |= !html;
        fputs(d ? "," : "", f);
        clf_json_write_str(f, html ? html : "");
        free(html);
    }
#endif
    fputs(array ? "]" : "", f);
    if (job->detected) {
        /* LibreTranslate: one guess a text in an array */
        fputs(",\"detectedLanguage\":", f);
        fputs(array ? "[" : "", f);
        for (size_t i = 0; i < (array ? job->n_texts : 1); i++) {
            fputs(i ? "," : "", f);
            write_guess(f, &job->guess);
        }
        fputs(array ? "]" : "", f);
    }
    fputc('}', f);
    return true;
}

void serve_job_finish(struct serve_job *job, struct MHD_Connection *connection, struct reply *r)
{
    if (job->failed) {
        free(r->body);
        serve_error_reply(r, 503, "out of memory");
        return;
    }
    if (!job->file || r->code != 200)
        return;
    char *name = serve_files_put(job->s->libre->files, job->filename, job->file_text ? job->file_text : "",
                                 job->file_text ? strlen(job->file_text) : 0);
    free(r->body);
    r->body = NULL;
    if (!name)
        return serve_error_reply(r, 503, "out of memory");
    const char *host = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!serve_stream_open(&f, &buf, &len)) {
        free(name);
        return serve_error_reply(r, 503, "out of memory");
    }
    char url[512];
    /* an absolute URL as LibreTranslate's url_for(_external=True) gives */
    snprintf(url, sizeof url, "http://%s/download_file/%s", host && strlen(host) < 256 && !strpbrk(host, "/\\\"<> ")
             ? host : "localhost", name);
    fputs("{\"translatedFileUrl\":", f);
    clf_json_write_str(f, url);
    fputc('}', f);
    fclose(f);
    free(name);
    serve_json_reply(r, 200, buf, len);
}

void serve_job_free(struct serve_job *job)
{
#ifdef CLF_HAVE_LIBXML2
    for (size_t d = 0; job->docs && d < job->n_docs; d++)
        serve_html_free(job->docs[d]);
    free(job->docs);
#endif
    free(job->file_text);
}

/* ------------------------------------------------------------- routes */

void serve_api_settings(struct serve_req *rq, struct reply *r)
{
    const struct serve *s = rq->h->s;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!serve_stream_open(&f, &buf, &len))
        return serve_error_reply(r, 503, "out of memory");
    fprintf(f, "{\"charLimit\":%zu,\"frontendTimeout\":500,\"apiKeys\":%s,\"keyRequired\":%s,"
               "\"suggestions\":false,\"filesTranslation\":true,\"supportedFilesFormat\":[\".txt\"],"
               "\"language\":{\"source\":{\"code\":", s->max_chars, s->keys ? "true" : "false",
            s->keys ? "true" : "false");
    clf_json_write_str(f, s->n_pairs ? s->pairs[0].source : "");
    fputs(",\"name\":", f);
    clf_json_write_str(f, serve_language_name(s->n_pairs ? s->pairs[0].source : ""));
    fputs("},\"target\":{\"code\":", f);
    clf_json_write_str(f, s->n_pairs ? s->pairs[0].target : "");
    fputs(",\"name\":", f);
    clf_json_write_str(f, serve_language_name(s->n_pairs ? s->pairs[0].target : ""));
    fputs("}}}", f);
    fclose(f);
    serve_json_reply(r, 200, buf, len);
}

void serve_api_suggest(struct serve_req *rq, struct reply *r)
{
    (void)rq; /* LibreTranslate's answer when it runs without --suggestions */
    serve_error_reply(r, 403, "Suggestions are disabled on this server.");
}

void serve_api_download(struct serve_req *rq, struct reply *r)
{
    const char *name = rq->url + strlen("/download_file/");
    size_t len = 0;
    char *data = serve_files_get(rq->h->s->libre->files, name, &len);
    if (!data)
        return serve_error_reply(r, 404, "Not Found: no such file (translated files are kept 30 minutes)");
    const char *dot = strchr(name, '.'); /* the client's own name after the random part */
    *r = (struct reply){.code = 200, .body = data, .len = len, .type = "text/plain; charset=utf-8"};
    snprintf(r->attachment, sizeof r->attachment, "%s", dot ? dot + 1 : "file.txt");
}

void serve_api_page(struct serve_req *rq, struct reply *r)
{
    (void)rq;
    char *page = malloc(serve_page_html_len);
    if (!page)
        return serve_error_reply(r, 503, "out of memory");
    memcpy(page, serve_page_html, serve_page_html_len);
    *r = (struct reply){.code = 200, .body = page, .len = serve_page_html_len, .type = "text/html; charset=utf-8"};
}
#endif
