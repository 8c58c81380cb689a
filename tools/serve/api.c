/* api.c: `clformer serve`'s routes, LibreTranslate's API: POST /translate
 * (JSON, or a form http.c has parsed), GET /languages, /health (and
 * /metrics, metrics.c's), each one line of the table in serve_route. A
 * /translate cuts each text of q into sentences (clf_text_sentences),
 * submits them all as one request to the queue, waits (noticing a client
 * that hung up, which cancels the request), and joins the translations
 * back with the text's own whitespace between them. Bad input gets 4xx
 * with {"error": ...}; 500 only for a failed translation. */
#define _GNU_SOURCE /* open_memstream, strndup */
#ifdef CLF_HAVE_MHD /* without it, cmd_serve.c says so */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <clformer/advanced/json.h>
#include <clformer/text.h>
#include "access.h"
#include "http.h"
#include "serve_libre.h"

/* ------------------------------------------------------------ responses */

/* A reply from what was written to a memory stream. */
bool serve_stream_open(FILE **f, char **buf, size_t *len) { return (*f = open_memstream(buf, len)) != NULL; }

void serve_json_reply(struct reply *r, unsigned code, char *body, size_t len)
{
    *r = (struct reply){.code = code, .body = body, .len = len, .type = "application/json"};
}

void serve_error_reply(struct reply *r, unsigned code, const char *msg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!serve_stream_open(&f, &buf, &len)) {
        *r = (struct reply){.code = 503, .body = strdup("{\"error\":\"out of memory\"}"), .type = "application/json",
                            .retry_after = 1};
        r->len = r->body ? strlen(r->body) : 0;
        return;
    }
    fputs("{\"error\":", f);
    clf_json_write_str(f, msg);
    fputs("}", f);
    fclose(f);
    serve_json_reply(r, code, buf, len);
}


/* ----------------------------------------------------------- the routes */

const char *serve_language_name(const char *code)
{
    static const char *const names[][2] = {
        {"ar", "Arabic"},   {"cs", "Czech"},    {"da", "Danish"},     {"de", "German"},    {"el", "Greek"},
        {"en", "English"},  {"es", "Spanish"},  {"fi", "Finnish"},    {"fr", "French"},    {"hu", "Hungarian"},
        {"it", "Italian"},  {"ja", "Japanese"}, {"ko", "Korean"},     {"nl", "Dutch"},     {"pl", "Polish"},
        {"pt", "Portuguese"}, {"ro", "Romanian"}, {"ru", "Russian"},  {"sv", "Swedish"},   {"tr", "Turkish"},
        {"uk", "Ukrainian"}, {"zh", "Chinese"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(names[i][0], code))
            return names[i][1];
    return code;
}

static void languages(const struct serve *s, struct reply *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!serve_stream_open(&f, &buf, &len))
        return serve_error_reply(r, 503, "out of memory");
    fputc('[', f);
    bool first = true;
    for (size_t i = 0; i < s->n_pairs; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen |= !strcmp(s->pairs[j].source, s->pairs[i].source);
        if (seen)
            continue;
        fprintf(f, "%s{\"code\":", first ? "" : ",");
        first = false;
        clf_json_write_str(f, s->pairs[i].source);
        fputs(",\"name\":", f);
        clf_json_write_str(f, serve_language_name(s->pairs[i].source));
        fputs(",\"targets\":[", f);
        bool t1 = true;
        for (size_t j = i; j < s->n_pairs; j++)
            if (!strcmp(s->pairs[j].source, s->pairs[i].source)) {
                fputs(t1 ? "" : ",", f);
                t1 = false;
                clf_json_write_str(f, s->pairs[j].target);
            }
        fputs("]}", f);
    }
    fputc(']', f);
    fclose(f);
    serve_json_reply(r, 200, buf, len);
}

/* Whether s[0..n) is UTF-8 (clf_utf8_validate: RFC 3629, no overlong
 * form, surrogate or code point past U+10FFFF), with its characters in
 * *chars (may be NULL); else r gets a 400 naming the field (q[i] of an
 * array q) and the byte offset of the first bad byte. A NUL passes here:
 * nul_field has refused one already, naming its field. */
static bool utf8_ok(const char *field, size_t index, bool indexed, const char *s, size_t n, size_t *chars,
                    struct reply *r)
{
    const size_t bad = clf_utf8_validate(s, n, CLF_UTF8_ALLOW_NUL, chars);
    if (bad == CLF_UTF8_VALID)
        return true;
    char name[48], msg[160];
    if (indexed)
        snprintf(name, sizeof name, "%s[%zu]", field, index);
    else
        snprintf(name, sizeof name, "%s", field);
    snprintf(msg, sizeof msg, "Invalid request: %s is not valid UTF-8 at byte offset %zu (0x%02X)", name, bad,
             (unsigned char)s[bad]);
    serve_error_reply(r, 400, msg);
    return false;
}

const char *serve_shown(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n == 48 || s[n] < 0x20 || s[n] > 0x7e)
            return "(not shown)";
    return s;
}

/* The request's texts, from the form or from the JSON body. */
struct texts {
    const char *q[MAX_Q];
    size_t q_len[MAX_Q], nq; /* lengths as decoded: a NUL inside shows as a length past strlen */
    bool array;
    const char *source, *target, *format, *api_key;
    size_t source_len, target_len, format_len, api_key_len;
    double alternatives; /* as sent (a number, or a form's or JSON string's digits); 0 when absent */
    bool alternatives_bad; /* not a number */
    struct clf_json j;
    bool has_json;
};

/* t's alternatives from a string s[0..n) (a form's, or JSON's "3" as
 * LibreTranslate's int() reads it); NULL: absent. */
static void alternatives_read(struct texts *t, const char *s, size_t n)
{
    if (!s || !n)
        return;
    char *end = NULL;
    t->alternatives = strtod(s, &end);
    t->alternatives_bad = end != s + n || n > 20;
}

/* Fills t from c; false with the error reply in r. */
static bool texts_read(struct conn *c, struct texts *t, struct reply *r)
{
    if (c->form) {
        if (c->q_over) {
            serve_error_reply(r, 413, "q has more than 1024 texts: send fewer at a time");
            return false;
        }
        if (c->repeated) {
            char msg[128];
            snprintf(msg, sizeof msg, "Invalid request: the form gives %s more than once", c->repeated);
            serve_error_reply(r, 400, msg);
            return false;
        }
        for (size_t i = 0; i < c->nq; i++)
            t->q[i] = c->q[i].v, t->q_len[i] = c->q[i].len;
        t->nq = c->nq, t->array = c->nq > 1;
        t->source = c->source.v, t->target = c->target.v, t->format = c->format.v, t->api_key = c->api_key.v;
        t->source_len = c->source.len, t->target_len = c->target.len, t->format_len = c->format.len;
        t->api_key_len = c->api_key.len;
        alternatives_read(t, c->alternatives.v, c->alternatives.len);
        return true;
    }
    char err[256];
    if (!c->body || !clf_json_parse(c->body, c->len, &t->j, err, sizeof err)) {
        char msg[400];
        snprintf(msg, sizeof msg, "Invalid request: the body is not JSON (%s)", c->body ? err : "it is empty");
        serve_error_reply(r, 400, msg);
        return false;
    }
    t->has_json = true;
    if (t->j.type != CLF_JSON_OBJECT) {
        serve_error_reply(r, 400, "Invalid request: the body must be a JSON object");
        return false;
    }
    const struct clf_json *q = clf_json_get(&t->j, "q");
    if (q && q->type == CLF_JSON_STRING)
        t->q[0] = q->string, t->q_len[0] = q->length, t->nq = 1;
    else if (q && q->type == CLF_JSON_ARRAY) {
        if (q->count > MAX_Q) {
            serve_error_reply(r, 413, "q has more than 1024 texts: send fewer at a time");
            return false;
        }
        for (size_t i = 0; i < q->count; i++) {
            if (q->items[i].type != CLF_JSON_STRING) {
                serve_error_reply(r, 400, "Invalid request: q must be a string or an array of strings");
                return false;
            }
            t->q[i] = q->items[i].string, t->q_len[i] = q->items[i].length;
        }
        t->nq = q->count, t->array = true;
    } else if (q) {
        serve_error_reply(r, 400, "Invalid request: q must be a string or an array of strings");
        return false;
    }
    static const char *const names[] = {"source", "target", "format", "api_key"};
    const char **dst[] = {&t->source, &t->target, &t->format, &t->api_key};
    size_t *dst_len[] = {&t->source_len, &t->target_len, &t->format_len, &t->api_key_len};
    for (size_t i = 0; i < 4; i++) {
        const struct clf_json *v = clf_json_get(&t->j, names[i]);
        if (v && v->type != CLF_JSON_STRING && v->type != CLF_JSON_NULL) {
            char msg[128];
            snprintf(msg, sizeof msg, "Invalid request: %s must be a string", names[i]);
            serve_error_reply(r, 400, msg);
            return false;
        }
        *dst[i] = v && v->type == CLF_JSON_STRING ? v->string : NULL;
        *dst_len[i] = *dst[i] ? v->length : 0;
    }
    const struct clf_json *a = clf_json_get(&t->j, "alternatives");
    if (a && a->type == CLF_JSON_NUMBER)
        t->alternatives = a->number;
    else if (a && a->type == CLF_JSON_STRING)
        alternatives_read(t, a->string, a->length);
    else if (a && a->type != CLF_JSON_NULL)
        t->alternatives_bad = true;
    return true;
}

/* The first field of t holding a NUL, or NULL: C strings would read it
 * cut there ("en\0xx" as en), so it is refused, never cut. */
static const char *nul_field(const struct texts *t)
{
    for (size_t i = 0; i < t->nq; i++)
        if (memchr(t->q[i], 0, t->q_len[i]))
            return "q";
    const char *const v[] = {t->source, t->target, t->format, t->api_key};
    const size_t n[] = {t->source_len, t->target_len, t->format_len, t->api_key_len};
    static const char *const names[] = {"source", "target", "format", "api_key"};
    for (size_t i = 0; i < 4; i++)
        if (v[i] && memchr(v[i], 0, n[i]))
            return names[i];
    return NULL;
}

/* Whether every sentence fits pair's model; else r says which does not:
 * the queue would cut it to the model's length without a word. (The
 * queue encodes them again: microseconds a sentence.) */
static bool sentences_fit(const struct serve *s, size_t pair, char *const *sent, size_t total, struct reply *r)
{
    clf_translator_t *tr = s->translators ? s->translators[pair] : NULL;
    if (!tr)
        return true;
    const size_t limit = clf_translator_max_source(tr);
    for (size_t k = 0; k < total; k++) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (clf_tok_encode(clf_translator_tok(tr), CLF_TOK_SOURCE, sent[k], strlen(sent[k]), false, &ids, &n) !=
            CLF_OK) {
            serve_error_reply(r, 503, "out of memory");
            r->retry_after = 1;
            return false;
        }
        free(ids);
        if (n > limit) {
            char msg[300];
            snprintf(msg, sizeof msg, "Invalid request: sentence %zu of the request is %zu subwords long, over "
                     "the limit of %zu of the %s-%s model: cut it into shorter sentences", k + 1, n, limit,
                     s->pairs[pair].source, s->pairs[pair].target);
            serve_error_reply(r, 400, msg);
            return false;
        }
    }
    return true;
}

/* Whether t may be served: no NUL in a field, and a key that opens the
 * server where --api-keys is given (*which: its index, access.c); false
 * with the error reply in r. */
static bool request_ok(const struct serve *s, struct MHD_Connection *connection, const struct texts *t,
                       size_t *which, struct reply *r)
{
    const char *nul = nul_field(t);
    if (nul) {
        char msg[128];
        snprintf(msg, sizeof msg, "Invalid request: %s holds a NUL character (U+0000)", nul);
        serve_error_reply(r, 400, msg);
        return false;
    }
    return serve_key_check(s, connection, t->api_key, t->api_key_len, which, r);
}

/* The request's alternatives a text (*alts), at most the pair's beam less
 * one (as LibreTranslate caps them at its --alternatives-limit); false
 * with a 400 in r for a value that is not a whole number in range, or for
 * format html (its texts are the markup's pieces). */
static bool alternatives_ok(const struct serve *s, size_t pair, const struct texts *t, const struct serve_job *job,
                            size_t *alts, struct reply *r)
{
    clf_translator_t *tr = s->translators ? s->translators[pair] : NULL;
    const struct clf_translate_opts o = tr ? clf_translator_opts(tr) : clf_translate_opts_default();
    const size_t most = o.greedy || o.beam < 1 ? 0 : (size_t)o.beam - 1;
    char msg[300];
    if (t->alternatives_bad || t->alternatives != t->alternatives || t->alternatives < 0 ||
        t->alternatives != (double)(long long)t->alternatives)
        snprintf(msg, sizeof msg, "Invalid request: alternatives must be a whole number from 0 to %zu", most);
    else if (t->alternatives > (double)most)
        snprintf(msg, sizeof msg, "Invalid request: alternatives must be <= %zu (the %s-%s model's beam of %d%s "
                 "keeps that many after the best)", most, s->pairs[pair].source, s->pairs[pair].target, o.beam,
                 o.greedy ? ", greedy: none" : "");
    else if (t->alternatives > 0 && job->html)
        snprintf(msg, sizeof msg, "Invalid request: alternatives are given for format text only, not html");
    else {
        *alts = job->file ? 0 : (size_t)t->alternatives; /* a file's answer is its URL */
        return true;
    }
    serve_error_reply(r, 400, msg);
    return false;
}

/* "alternatives": each text's, as LibreTranslate gives them (a list; a
 * list of lists for an array q). Alternative j of a text is its sentences'
 * hypotheses j + 1 (the best where a sentence has none), joined with the
 * text's whitespace; one equal to the translation or to an earlier one is
 * left out (LibreTranslate's too), so a text may have fewer. */
static void alternatives_write(FILE *f, const struct texts *t, struct clf_span *const *spans, const size_t *nspan,
                               const clf_queue_req_t *req, size_t alts)
{
    fputs(t->array ? "\"alternatives\":[" : "\"alternatives\":", f);
    for (size_t i = 0, k0 = 0; i < t->nq; k0 += nspan[i], i++) {
        char *seen[1 + CLF_TRANSLATE_BEAM_MAX] = {0};
        size_t n_seen = 0;
        fputs(i ? ",[" : "[", f);
        for (size_t j = 0; j <= alts && j <= CLF_TRANSLATE_BEAM_MAX; j++) { /* j 0: the translation */
            char *one = NULL;
            size_t one_len = 0, end = 0;
            FILE *g = open_memstream(&one, &one_len);
            for (size_t m = 0; g && m < nspan[i]; m++) {
                const char *h = j ? clf_queue_req_alternative(req, k0 + m, j - 1) : "";
                fwrite(t->q[i] + end, 1, spans[i][m].at - end, g);
                fputs(*h ? h : clf_queue_req_output(req, k0 + m), g);
                end = spans[i][m].at + spans[i][m].len;
            }
            if (g) {
                fwrite(t->q[i] + end, 1, t->q_len[i] - end, g);
                fclose(g);
            }
            bool dup = !one;
            for (size_t d = 0; one && d < n_seen; d++)
                dup |= !strcmp(seen[d], one);
            if (j && !dup) {
                fputs(n_seen > 1 ? "," : "", f);
                clf_json_write_str(f, one);
            }
            if (dup)
                free(one);
            else
                seen[n_seen++] = one;
        }
        fputc(']', f);
        for (size_t d = 0; d < n_seen; d++)
            free(seen[d]);
    }
    fputs(t->array ? "]," : ",", f);
}

/* /translate, and /translate_file through job (libre.c: auto, html, files) */
static void translate(struct serve_http *h, struct MHD_Connection *connection, struct conn *c, struct reply *r,
                      struct log_info *li, bool *hung_up, struct serve_job *job)
{
    const struct serve *s = h->s;
    struct texts t = {0};
    char **sent = NULL;
    struct clf_span **spans = NULL;
    size_t *nspan = NULL, total = 0;
    clf_queue_req_t *req = NULL;
    size_t key = SIZE_MAX; /* which of s->keys */
    size_t alts = 0;       /* alternatives a text */
    if (!texts_read(c, &t, r) || !request_ok(s, connection, &t, &key, r))
        goto out;
    const char *missing = !t.nq && !t.array ? "q" : !t.source ? "source" : !t.target ? "target" : NULL;
    if (missing) {
        char msg[64];
        snprintf(msg, sizeof msg, "Invalid request: missing %s parameter", missing);
        serve_error_reply(r, 400, msg);
        goto out;
    }
    if (!utf8_ok("source", 0, false, t.source, t.source_len, NULL, r) ||
        !utf8_ok("target", 0, false, t.target, t.target_len, NULL, r))
        goto out;
    for (size_t i = 0; i < t.nq; i++) {
        size_t n;
        if (!utf8_ok("q", i, t.array, t.q[i], t.q_len[i], &n, r))
            goto out;
        li->chars += n;
    }
    if (li->chars > s->max_chars) {
        char msg[160];
        snprintf(msg, sizeof msg, "Invalid request: request (%zu) exceeds text limit (%zu)", li->chars,
                 s->max_chars);
        serve_error_reply(r, 413, msg);
        goto out;
    }
    if (!serve_job_begin(job, s, t.q, &t.nq, t.array, &t.source, t.target, t.format, r))
        goto out;
    for (size_t i = 0; i < t.nq; i++) /* the job may have given q new texts (html's); no NUL is left */
        t.q_len[i] = strlen(t.q[i]);
    size_t pair = s->n_pairs;
    for (size_t i = 0; i < s->n_pairs && pair == s->n_pairs; i++)
        if (!strcmp(s->pairs[i].source, t.source) && !strcmp(s->pairs[i].target, t.target))
            pair = i;
    if (pair == s->n_pairs) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s to %s is not served here (GET /languages lists the pairs)",
                 serve_shown(t.source), serve_shown(t.target));
        serve_error_reply(r, 400, msg);
        goto out;
    }
    if (!alternatives_ok(s, pair, &t, job, &alts, r))
        goto out;
    spans = calloc(t.nq ? t.nq : 1, sizeof *spans);
    nspan = calloc(t.nq ? t.nq : 1, sizeof *nspan);
    if (!spans || !nspan) {
        serve_error_reply(r, 503, "out of memory");
        r->retry_after = 1;
        goto out;
    }
    for (size_t i = 0; i < t.nq; i++) {
        if (clf_text_sentences(t.q[i], t.q_len[i], &spans[i], &nspan[i]) != CLF_OK) {
            serve_error_reply(r, 503, "out of memory");
            r->retry_after = 1;
            goto out;
        }
        total += nspan[i];
    }
    if (total == 0) {
        serve_error_reply(r, 400, "Invalid request: q is empty: nothing to translate");
        goto out;
    }
    li->sentences = total;
    if (total > s->max_sentences) {
        char msg[200];
        snprintf(msg, sizeof msg, "Invalid request: %zu sentences, over the limit of %zu a request "
                 "(--max-sentences %zu): send fewer at a time", total, s->max_sentences, s->max_sentences);
        serve_error_reply(r, 413, msg);
        goto out;
    }
    /* every copy is made or the request fails whole; out: frees those
     * made (sent is zeroed: the ones never made are NULL) */
    bool copied = (sent = calloc(total, sizeof *sent)) != NULL;
    for (size_t i = 0, k = 0; copied && i < t.nq; i++)
        for (size_t j = 0; copied && j < nspan[i]; j++, k++)
            copied = k + 1 != s->fail_copy && (sent[k] = strndup(t.q[i] + spans[i][j].at, spans[i][j].len)) != NULL;
    if (!copied) {
        serve_error_reply(r, 503, "out of memory");
        r->retry_after = 1;
        goto out;
    }
    if (!sentences_fit(s, pair, sent, total, r) || !serve_limits_take(s, connection, key, t.nq, li->chars, r))
        goto out;
    /* a client's requests take their turns in the queue together: many
     * requests do not buy one client more turns than another's one */
    const struct clf_queue_submit_opts so = {.client = serve_client_id(s, connection, key), .alternatives = alts};
    switch (clf_queue_submit_with(s->q, pair, (const char *const *)sent, total, &so, &req)) {
    case CLF_QUEUE_OK:
        break;
    case CLF_QUEUE_FULL:
        serve_error_reply(r, 429, "Too many requests: the translation queue is full, try again later");
        r->retry_after = 1;
        goto out;
    case CLF_QUEUE_CLOSED:
        serve_error_reply(r, 503, "The server is shutting down");
        r->retry_after = 5;
        goto out;
    default:
        serve_error_reply(r, 413, clf_ctx_error(NULL));
        goto out;
    }
    while (!clf_queue_wait(req, 100))
        if (serve_client_gone(connection)) {
            *hung_up = true;
            goto out;
        }
    if (clf_queue_req_result(req) != CLF_QUEUE_OK) {
        const bool closed = clf_queue_req_result(req) == CLF_QUEUE_CLOSED;
        char msg[1200];
        snprintf(msg, sizeof msg, "%s%s", closed ? "" : "Translation failed: ", clf_queue_req_message(req));
        serve_error_reply(r, closed ? 503 : 500, msg);
        r->retry_after = closed ? 5 : 0;
        goto out;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!serve_stream_open(&f, &buf, &len)) {
        serve_error_reply(r, 503, "out of memory");
        r->retry_after = 1;
        goto out;
    }
    fputc('{', f);
    if (alts) /* members' order is free: these first, so serve_job_end may close the object */
        alternatives_write(f, &t, spans, nspan, req, alts);
    fputs(t.array ? "\"translatedText\":[" : "\"translatedText\":", f);
    for (size_t i = 0, k = 0; i < t.nq; i++) {
        /* the text's own whitespace between and around its sentences */
        char *one = NULL;
        size_t one_len = 0, end = 0;
        FILE *g = open_memstream(&one, &one_len);
        for (size_t j = 0; g && j < nspan[i]; j++, k++) {
            fwrite(t.q[i] + end, 1, spans[i][j].at - end, g);
            fputs(clf_queue_req_output(req, k), g);
            end = spans[i][j].at + spans[i][j].len;
        }
        if (g) {
            fwrite(t.q[i] + end, 1, t.q_len[i] - end, g);
            fclose(g);
        }
        if (!serve_job_unit(job, i, one)) {
            fputs(i ? "," : "", f);
            clf_json_write_str(f, one ? one : "");
        }
        free(one);
    }
    if (!serve_job_end(job, f, t.array))
        fputs(t.array ? "]}" : "}", f);
    fclose(f);
    serve_json_reply(r, 200, buf, len);
    serve_job_finish(job, connection, r);
out:
    clf_queue_req_free(req);
    if (sent)
        for (size_t k = 0; k < total; k++)
            free(sent[k]);
    free(sent);
    for (size_t i = 0; spans && i < t.nq; i++)
        free(spans[i]);
    free(spans), free(nspan);
    if (t.has_json)
        clf_json_free(&t.j);
}

/* The checks every POST body passes (size, form, Content-Type); false with
 * the error reply in r. */
static bool body_ok(struct serve_req *rq, struct reply *r)
{
    struct serve_http *h = rq->h;
    struct conn *c = rq->c;
    const char *type = MHD_lookup_connection_value(rq->connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (c->too_big) {
        char msg[160];
        snprintf(msg, sizeof msg, "Invalid request: the body is over %zu bytes (--max-chars %zu)",
                 serve_body_limit(h->s), h->s->max_chars);
        serve_error_reply(r, 413, msg);
    } else if (c->form && !c->pp)
        serve_error_reply(r, 400, "Invalid request: the form is malformed");
    else if (!c->form && type && strncasecmp(type, "application/json", 16) && strncasecmp(type, "text/plain", 10)) {
        char msg[200];
        snprintf(msg, sizeof msg, "Invalid request: Content-Type '%s' is not supported: send "
                 "application/json or a form", serve_shown(type));
        serve_error_reply(r, 400, msg);
    } else {
        if (c->pp) {
            MHD_destroy_post_processor(c->pp); /* flushes its last field */
            c->pp = NULL;
        }
        return true;
    }
    return false;
}

static void api_translate(struct serve_req *rq, struct reply *r)
{
    struct serve_job job = {0};
    if (body_ok(rq, r))
        translate(rq->h, rq->connection, rq->c, r, &rq->li, &rq->hung_up, &job);
    serve_job_free(&job);
}

/* LibreTranslate's /translate_file: a text file in a multipart form,
 * translated as one text; its translation kept for /download_file. */
static void api_translate_file(struct serve_req *rq, struct reply *r)
{
    struct conn *c = rq->c;
    struct serve_job job = {.file = true};
    const char *ext = c->filename ? strrchr(c->filename, '.') : NULL;
    if (!body_ok(rq, r))
        ;
    else if (!c->form || !c->filename)
        serve_error_reply(r, 400, "Invalid request: missing file parameter (send a multipart form)");
    else if (!ext || strcasecmp(ext, ".txt"))
        serve_error_reply(r, 400, "Invalid request: file format not supported (.txt only)");
    else if (c->nq)
        serve_error_reply(r, 400, "Invalid request: send a file or q, not both");
    else {
        /* the file is the form's one text */
        c->q[0] = c->file.v ? c->file : (struct field){.v = strdup("")};
        c->file = (struct field){0};
        c->nq = 1;
        job.filename = c->filename;
        if (c->q[0].v)
            translate(rq->h, rq->connection, c, r, &rq->li, &rq->hung_up, &job);
        else
            serve_error_reply(r, 503, "out of memory");
    }
    serve_job_free(&job);
}

static void api_detect(struct serve_req *rq, struct reply *r)
{
    struct texts t = {0};
    size_t key, chars;
    if (body_ok(rq, r) && texts_read(rq->c, &t, r) && request_ok(rq->h->s, rq->connection, &t, &key, r)) {
        if (!t.nq || !t.q[0][0])
            serve_error_reply(r, 400, "Invalid request: missing q parameter");
        else if (t.array)
            serve_error_reply(r, 400, "Invalid request: q must be a string");
        /* the same buckets as /translate's: guessing costs little, but a
         * flood of it is still a flood (LibreTranslate limits both) */
        else if (utf8_ok("q", 0, false, t.q[0], strlen(t.q[0]), &chars, r) &&
                 serve_limits_take(rq->h->s, rq->connection, key, 1, chars, r))
            serve_detect_reply(rq->h->s, t.q[0], r);
    }
    if (t.has_json)
        clf_json_free(&t.j);
}

/* With --api-keys, /metrics wants a key too (Authorization: Bearer, as
 * Prometheus sends one): request counts and the device are the operator's
 * business, and a key already exists, where a second flag would be one
 * more secret to hand out. */
static void api_metrics(struct serve_req *rq, struct reply *r)
{
    size_t key;
    if (serve_key_check(rq->h->s, rq->connection, NULL, 0, &key, r))
        serve_metrics(rq, r);
}

static void api_languages(struct serve_req *rq, struct reply *r) { languages(rq->h->s, r); }

/* Ready while a worker of the queue serves (clf_queue_health): 200
 * {"status": "degraded", "error": which do not, "workers": W, "serving":
 * S} while some of several devices' workers do not; 503 with
 * {"status": "stuck" or "failed", "error": why} when it has been inside one
 * call longer than --health-stuck-seconds (default 120: a first call
 * compiles kernels, and a full round on a slow CPU takes seconds, so a hung
 * device shows within two minutes) or its last batch failed as a device
 * fails. */
static void api_health(struct serve_req *rq, struct reply *r)
{
    struct clf_queue_health hs;
    const clf_queue_health_state st = clf_queue_health(rq->h->s->q, rq->h->s->health_stuck_s, &hs);
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (st == CLF_QUEUE_HEALTH_OK) {
        serve_json_reply(r, 200, strdup("{\"status\":\"ok\"}"), 15);
        return;
    }
    if (!serve_stream_open(&f, &buf, &len)) {
        serve_error_reply(r, 503, hs.message);
        return;
    }
    fprintf(f, "{\"status\":\"%s\",\"error\":",
            st == CLF_QUEUE_HEALTH_STUCK ? "stuck" : st == CLF_QUEUE_HEALTH_DEGRADED ? "degraded" : "failed");
    clf_json_write_str(f, hs.message);
    fprintf(f, ",\"workers\":%zu,\"serving\":%zu}", hs.workers, hs.serving);
    fclose(f);
    /* degraded: a device's worker is out or stuck, another serves: still ready */
    serve_json_reply(r, st == CLF_QUEUE_HEALTH_DEGRADED ? 200 : 503, buf, len);
}

/* The routes: one line each. "GET" also answers HEAD. */
static const struct route {
    const char *path, *method;
    serve_handler_fn *fn;
} routes[] = {
    {"/translate", "POST", api_translate},
    {"/languages", "GET", api_languages},
    {"/health", "GET", api_health},
    {"/metrics", "GET", api_metrics},
    {"/detect", "POST", api_detect},
    {"/translate_file", "POST", api_translate_file},
    {"/download_file/", "GET", serve_api_download}, /* a prefix: /download_file/NAME */
    {"/frontend/settings", "GET", serve_api_settings},
    {"/suggest", "POST", serve_api_suggest},
    {"/", "GET", serve_api_page},
};

void serve_route(struct serve_req *rq, struct reply *r)
{
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        const struct route *rt = &routes[i];
        const size_t n = strlen(rt->path);
        if (n > 1 && rt->path[n - 1] == '/' ? strncmp(rq->url, rt->path, n) : strcmp(rq->url, rt->path))
            continue;
        const bool get = !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD");
        if (!strcmp(rq->method, "OPTIONS")) /* a CORS preflight: http.c adds access.c's headers */
            serve_json_reply(r, 204, strdup(""), 0);
        else if (!strcmp(rt->method, "GET") ? get : !strcmp(rq->method, rt->method))
            rt->fn(rq, r);
        else if (!strcmp(rt->method, "GET"))
            serve_error_reply(r, 405, "Method not allowed: use GET");
        else {
            char msg[128];
            snprintf(msg, sizeof msg, "Method not allowed: %s %s", rt->method, rt->path);
            serve_error_reply(r, 405, msg);
        }
        return;
    }
    serve_error_reply(r, 404, "Not Found");
}
#endif
