/* serve_libre.h: the parts of LibreTranslate's API past /translate's plain
 * text, each standing alone so the routes (api.c) only call them:
 * language identification (langid.c, libexttextcat), HTML text nodes
 * (html.c, libxml2), translated files kept for download (files.c) and the
 * web page at / (page.html, embedded at build time). Each
 * library is optional at build time: without it the route answers 501. */
#ifndef CLF_SERVE_LIBRE_H
#define CLF_SERVE_LIBRE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ---- langid.c (CLF_HAVE_TEXTCAT) */
#define SERVE_LANGID_MAX 32
struct serve_langid;
struct serve_guess {
    char language[16];
    double confidence; /* percent, as LibreTranslate reports it */
};
/* The languages of codes that textcat has a model of; NULL with a message
 * in err when none has one or a model fails to load. */
struct serve_langid *serve_langid_init(const char *const *codes, size_t n, char *err, size_t errlen);
/* Every known language's guess for text[0..len), best first (out holds
 * SERVE_LANGID_MAX); the count, 0 where textcat cannot tell. */
size_t serve_langid_detect(struct serve_langid *l, const char *text, size_t len, struct serve_guess *out);
void serve_langid_free(struct serve_langid *l);

/* ---- html.c (CLF_HAVE_LIBXML2) */
struct serve_html;
/* Once, before the threads: libxml2's own globals (its rule for threads). */
void serve_html_init(void);
/* An HTML fragment's tree; NULL when out of memory. Error-tolerant as
 * browsers are: any bytes parse. */
struct serve_html *serve_html_parse(const char *html, size_t len);
/* Its text nodes to translate (prose outside script/style, not blank). */
size_t serve_html_count(const struct serve_html *h);
const char *serve_html_text(const struct serve_html *h, size_t i);
bool serve_html_set(struct serve_html *h, size_t i, const char *text);
/* The fragment written back (malloc'd, NUL-ended, *len bytes). */
char *serve_html_dump(const struct serve_html *h, size_t *len);
void serve_html_free(struct serve_html *h);

/* ---- files.c: /translate_file's results, in memory, bounded and expiring */
struct serve_files;
struct serve_files *serve_files_init(size_t max_files, size_t max_bytes, double ttl_seconds);
/* Keeps a copy of data under a new unguessable name "<32 hex>.<filename>"
 * (filename cut to a safe set of characters); the name, malloc'd, or NULL
 * when out of memory or the one file is over max_bytes. The oldest files
 * make room. */
char *serve_files_put(struct serve_files *f, const char *filename, const char *data, size_t len);
/* A copy of a kept file (malloc'd, *len bytes); NULL if unknown or expired. */
char *serve_files_get(struct serve_files *f, const char *name, size_t *len);
void serve_files_free(struct serve_files *f);

/* ---- libre.c: the routes, and /translate's hooks */
struct serve;
struct serve_req;
struct reply;
struct MHD_Connection;
/* The state of these routes, in s->libre: a language guesser over the
 * languages served (its absence is not fatal: /detect and auto then answer
 * 501 saying why) and the store of translated files. */
bool serve_libre_init(struct serve *s);
void serve_libre_free(struct serve *s);
void serve_api_settings(struct serve_req *rq, struct reply *r);
void serve_api_suggest(struct serve_req *rq, struct reply *r);
void serve_api_download(struct serve_req *rq, struct reply *r); /* GET /download_file/NAME */
void serve_api_page(struct serve_req *rq, struct reply *r);
/* /detect's answer for q (after the route has read q and checked the key). */
void serve_detect_reply(const struct serve *s, const char *q, struct reply *r);

/* What /translate does past plain text, carried through its steps:
 * serve_job_begin after the request is read and the key checked (it
 * checks format, resolves source "auto" and puts html texts' nodes in q's
 * place; false with r's reply: an error, or html without text answered
 * as it is); serve_job_unit for each text of q translated (true: taken, not
 * to be written as a translatedText); serve_job_end after the last (true:
 * it wrote the JSON's end: the html, "]", detectedLanguage and "}");
 * serve_job_finish once the reply is made (/translate_file's reply replaces
 * the JSON); serve_job_free always. */
struct serve_job {
    const struct serve *s;
    bool file;            /* /translate_file: q[0] is the file's text */
    const char *filename; /* its name as the client sent it */
    bool html, detected, failed;
    size_t n_texts; /* texts of q as sent */
    struct serve_guess guess;
    struct serve_html **docs;
    size_t n_docs;
    char *file_text;
};
bool serve_job_begin(struct serve_job *job, const struct serve *s, const char **q, size_t *nq, bool array,
                     const char **source, const char *target, const char *format, struct reply *r);
bool serve_job_unit(struct serve_job *job, size_t i, const char *text);
bool serve_job_end(struct serve_job *job, FILE *f, bool array);
void serve_job_finish(struct serve_job *job, struct MHD_Connection *connection, struct reply *r);
void serve_job_free(struct serve_job *job);

/* ---- the web page, generated from page.html into the build's
 * serve_page.c by cmake/embed_page.cmake */
extern const char serve_page_html[];
extern const size_t serve_page_html_len;

#endif
