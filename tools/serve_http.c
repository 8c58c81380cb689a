/* serve_http.c: `clformer serve`'s routes over GNU libmicrohttpd, one
 * thread a connection: POST /translate (JSON, or a form through MHD's
 * post processor), GET /languages, /health, /metrics. A /translate cuts
 * each text of q into sentences (clf_text_sentences), submits them all as
 * one request to the queue, waits (noticing a client that hung up, which
 * cancels the request), and joins the translations back with the text's
 * own whitespace between them. Bad input gets 4xx with {"error": ...};
 * 500 only for a failed translation. */
#define _GNU_SOURCE /* POLLRDHUP, open_memstream */
#ifdef CLF_HAVE_MHD /* without it, cmd_serve.c says so */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clformer_json.h"
#include "clformer_text.h"
#include "serve.h"

#define MAX_Q 1024 /* texts in one q array */

struct serve_http {
    struct MHD_Daemon *d;
    struct serve *s;
    atomic_ulong codes[600];
    atomic_long in_flight; /* requests begun and not yet answered */
};

struct field {
    char *v;
    size_t len;
};

/* One connection's request, gathered over the handler's calls. */
struct conn {
    char *body;
    size_t len;
    bool too_big, form;
    struct MHD_PostProcessor *pp;
    struct field q[MAX_Q];
    size_t nq;
    bool q_over;
    struct field source, target, format, api_key;
    double t0;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t body_limit(const struct serve *s) { return s->max_chars * 12 + 65536; }

static bool field_add(struct field *f, const char *data, size_t n)
{
    char *x = realloc(f->v, f->len + n + 1);
    if (!x)
        return false;
    memcpy(x + f->len, data, n);
    f->v = x, f->len += n;
    f->v[f->len] = 0;
    return true;
}

static enum MHD_Result form_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                  const char *content_type, const char *encoding, const char *data, uint64_t off,
                                  size_t size)
{
    (void)kind, (void)filename, (void)content_type, (void)encoding;
    struct conn *c = cls;
    struct field *f = NULL;
    if (!strcmp(key, "q")) {
        if (off == 0) {
            if (c->nq == MAX_Q) {
                c->q_over = true;
                return MHD_YES;
            }
            c->nq++;
        }
        if (c->q_over)
            return MHD_YES;
        f = &c->q[c->nq - 1];
    } else if (!strcmp(key, "source"))
        f = &c->source;
    else if (!strcmp(key, "target"))
        f = &c->target;
    else if (!strcmp(key, "format"))
        f = &c->format;
    else if (!strcmp(key, "api_key"))
        f = &c->api_key;
    else
        return MHD_YES;
    if (!f->v && !field_add(f, "", 0))
        return MHD_NO;
    return size == 0 || field_add(f, data, size) ? MHD_YES : MHD_NO;
}

static void conn_free(struct conn *c)
{
    if (!c)
        return;
    if (c->pp)
        MHD_destroy_post_processor(c->pp);
    for (size_t i = 0; i < c->nq; i++)
        free(c->q[i].v);
    free(c->source.v), free(c->target.v), free(c->format.v), free(c->api_key.v), free(c->body), free(c);
}

static void completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)connection, (void)toe;
    struct serve_http *h = cls;
    if (*con_cls)
        atomic_fetch_sub(&h->in_flight, 1);
    conn_free(*con_cls);
    *con_cls = NULL;
}

/* ------------------------------------------------------------ responses */

struct reply {
    unsigned code;
    char *body; /* malloc'd */
    size_t len;
    const char *type;
    unsigned retry_after; /* seconds; 0: none */
};

static enum MHD_Result send_reply(struct serve_http *h, struct MHD_Connection *connection, struct reply *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(r->body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type);
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    if (r->retry_after) {
        char ra[16];
        snprintf(ra, sizeof ra, "%u", r->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    const enum MHD_Result ok = MHD_queue_response(connection, r->code, resp);
    MHD_destroy_response(resp);
    if (r->code < 600)
        atomic_fetch_add(&h->codes[r->code], 1);
    return ok;
}

/* A reply from what was written to a memory stream. */
static bool stream_open(FILE **f, char **buf, size_t *len) { return (*f = open_memstream(buf, len)) != NULL; }

static void json_reply(struct reply *r, unsigned code, char *body, size_t len)
{
    *r = (struct reply){.code = code, .body = body, .len = len, .type = "application/json"};
}

static void error_reply(struct reply *r, unsigned code, const char *msg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!stream_open(&f, &buf, &len)) {
        *r = (struct reply){.code = 503, .body = strdup("{\"error\":\"out of memory\"}"), .type = "application/json",
                            .retry_after = 1};
        r->len = r->body ? strlen(r->body) : 0;
        return;
    }
    fputs("{\"error\":", f);
    clf_json_write_str(f, msg);
    fputs("}", f);
    fclose(f);
    json_reply(r, code, buf, len);
}

/* ----------------------------------------------------------- the routes */

static const char *language_name(const char *code)
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
    if (!stream_open(&f, &buf, &len))
        return error_reply(r, 503, "out of memory");
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
        clf_json_write_str(f, language_name(s->pairs[i].source));
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
    json_reply(r, 200, buf, len);
}

static void prom_label(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '\\' || *s == '"')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
}

static void histogram(FILE *f, const char *name, const char *help, const double *bounds, size_t nb,
                      const uint64_t *counts, double sum)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < nb; i++) {
        cum += counts[i];
        fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)cum);
    }
    cum += counts[nb];
    fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, (unsigned long long)cum, name, sum,
            name, (unsigned long long)cum);
}

static void metrics(struct serve_http *h, struct reply *r)
{
    struct clf_queue_stats st;
    clf_queue_stats(h->s->q, &st);
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!stream_open(&f, &buf, &len))
        return error_reply(r, 503, "out of memory");
    const struct {
        const char *name, *help;
        unsigned long long v;
        bool gauge;
    } m[] = {
        {"clformer_requests_total", "translation requests accepted by the queue", st.requests, false},
        {"clformer_requests_rejected_total", "translation requests refused because the queue was full", st.rejected,
         false},
        {"clformer_sentences_total", "sentences translated", st.sentences, false},
        {"clformer_sentences_failed_total", "sentences whose translation failed or was drained", st.failed, false},
        {"clformer_sentences_cancelled_total", "sentences dropped because their client left", st.cancelled, false},
        {"clformer_source_tokens_total", "source subwords translated, EOS included", st.source_tokens, false},
        {"clformer_queue_sentences", "sentences waiting", st.queued, true},
        {"clformer_running_sentences", "sentences being translated", st.running, true},
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", m[i].name, m[i].help, m[i].name,
                m[i].gauge ? "gauge" : "counter", m[i].name, m[i].v);
    fputs("# HELP clformer_http_responses_total HTTP responses by status\n"
          "# TYPE clformer_http_responses_total counter\n", f);
    for (unsigned c = 100; c < 600; c++) {
        const unsigned long n = atomic_load(&h->codes[c]);
        if (n)
            fprintf(f, "clformer_http_responses_total{code=\"%u\"} %lu\n", c, n);
    }
    static const double lb[] = CLF_QUEUE_LATENCY_BOUNDS, bb[] = CLF_QUEUE_BATCH_BOUNDS;
    histogram(f, "clformer_batch_sentences", "sentences a batch (one call of the translator)", bb,
              CLF_QUEUE_BATCH_BUCKETS - 1, st.batch_hist, (double)st.batch_sentences);
    histogram(f, "clformer_request_latency_seconds", "seconds from a request's submission to its last sentence",
              lb, CLF_QUEUE_LATENCY_BUCKETS - 1, st.latency_hist, st.latency_sum);
    fputs("# HELP clformer_device_info the OpenCL device serving\n# TYPE clformer_device_info gauge\n"
          "clformer_device_info{device=\"", f);
    prom_label(f, h->s->device);
    fputs("\"} 1\n", f);
    fclose(f);
    *r = (struct reply){.code = 200, .body = buf, .len = len, .type = "text/plain; version=0.0.4"};
}

/* The number of UTF-8 characters of s[0..n), or SIZE_MAX if it is not
 * UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
 * U+10FFFF). */
static size_t utf8_chars(const unsigned char *s, size_t n)
{
    size_t chars = 0;
    for (size_t i = 0; i < n; chars++) {
        const unsigned char c = s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0 || i + k > n || (k == 2 && c < 0xC2) || (k == 4 && c > 0xF4))
            return SIZE_MAX;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return SIZE_MAX;
        if ((k == 3 && c == 0xE0 && s[i + 1] < 0xA0) || (k == 3 && c == 0xED && s[i + 1] >= 0xA0) ||
            (k == 4 && c == 0xF0 && s[i + 1] < 0x90) || (k == 4 && c == 0xF4 && s[i + 1] >= 0x90))
            return SIZE_MAX;
        i += k;
    }
    return chars;
}

/* s as a message may show it: short printable ASCII, or not at all. */
static const char *shown(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n == 48 || s[n] < 0x20 || s[n] > 0x7e)
            return "(not shown)";
    return s;
}

/* Whether the client of connection has hung up. */
static bool client_gone(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
        return true;
    char b;
    return recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* The request's texts, from the form or from the JSON body. */
struct texts {
    const char *q[MAX_Q];
    size_t nq;
    bool array;
    const char *source, *target, *format, *api_key;
    struct clf_json j;
    bool has_json;
};

/* Fills t from c; false with the error reply in r. */
static bool texts_read(struct conn *c, struct texts *t, struct reply *r)
{
    if (c->form) {
        if (c->q_over) {
            error_reply(r, 413, "q has more than 1024 texts: send fewer at a time");
            return false;
        }
        for (size_t i = 0; i < c->nq; i++)
            t->q[i] = c->q[i].v;
        t->nq = c->nq, t->array = c->nq > 1;
        t->source = c->source.v, t->target = c->target.v, t->format = c->format.v, t->api_key = c->api_key.v;
        return true;
    }
    char err[256];
    if (!c->body || !clf_json_parse(c->body, c->len, &t->j, err, sizeof err)) {
        char msg[400];
        snprintf(msg, sizeof msg, "Invalid request: the body is not JSON (%s)", c->body ? err : "it is empty");
        error_reply(r, 400, msg);
        return false;
    }
    t->has_json = true;
    if (t->j.type != CLF_JSON_OBJECT) {
        error_reply(r, 400, "Invalid request: the body must be a JSON object");
        return false;
    }
    const struct clf_json *q = clf_json_get(&t->j, "q");
    if (q && q->type == CLF_JSON_STRING)
        t->q[0] = q->string, t->nq = 1;
    else if (q && q->type == CLF_JSON_ARRAY) {
        if (q->count > MAX_Q) {
            error_reply(r, 413, "q has more than 1024 texts: send fewer at a time");
            return false;
        }
        for (size_t i = 0; i < q->count; i++) {
            if (q->items[i].type != CLF_JSON_STRING) {
                error_reply(r, 400, "Invalid request: q must be a string or an array of strings");
                return false;
            }
            t->q[i] = q->items[i].string;
        }
        t->nq = q->count, t->array = true;
    } else if (q) {
        error_reply(r, 400, "Invalid request: q must be a string or an array of strings");
        return false;
    }
    static const char *const names[] = {"source", "target", "format", "api_key"};
    const char **dst[] = {&t->source, &t->target, &t->format, &t->api_key};
    for (size_t i = 0; i < 4; i++) {
        const struct clf_json *v = clf_json_get(&t->j, names[i]);
        if (v && v->type != CLF_JSON_STRING && v->type != CLF_JSON_NULL) {
            char msg[128];
            snprintf(msg, sizeof msg, "Invalid request: %s must be a string", names[i]);
            error_reply(r, 400, msg);
            return false;
        }
        *dst[i] = v && v->type == CLF_JSON_STRING ? v->string : NULL;
    }
    return true;
}

struct log_info {
    size_t chars, sentences;
};

static void translate(struct serve_http *h, struct MHD_Connection *connection, struct conn *c, struct reply *r,
                      struct log_info *li, bool *hung_up)
{
    const struct serve *s = h->s;
    struct texts t = {0};
    char **sent = NULL;
    struct clf_span **spans = NULL;
    size_t *nspan = NULL, total = 0;
    clf_queue_req_t *req = NULL;
    if (!texts_read(c, &t, r))
        goto out;
    if (s->keys) {
        bool ok = false;
        for (size_t i = 0; t.api_key && t.api_key[0] && i < s->n_keys && !ok; i++)
            ok = !strcmp(s->keys[i], t.api_key);
        if (!ok) {
            error_reply(r, 403, t.api_key ? "Invalid API key" : "Invalid request: missing api_key parameter");
            goto out;
        }
    }
    const char *missing = !t.nq && !t.array ? "q" : !t.source ? "source" : !t.target ? "target" : NULL;
    if (missing) {
        char msg[64];
        snprintf(msg, sizeof msg, "Invalid request: missing %s parameter", missing);
        error_reply(r, 400, msg);
        goto out;
    }
    if (t.format && strcmp(t.format, "text")) {
        char msg[200];
        snprintf(msg, sizeof msg, "format '%s' is not supported: send format 'text' (html is not translated "
                 "here)", shown(t.format));
        error_reply(r, 400, msg);
        goto out;
    }
    if (utf8_chars((const unsigned char *)t.source, strlen(t.source)) == SIZE_MAX ||
        utf8_chars((const unsigned char *)t.target, strlen(t.target)) == SIZE_MAX) {
        error_reply(r, 400, "Invalid request: source or target is not valid UTF-8");
        goto out;
    }
    for (size_t i = 0; i < t.nq; i++) {
        const size_t n = utf8_chars((const unsigned char *)t.q[i], strlen(t.q[i]));
        if (n == SIZE_MAX) {
            error_reply(r, 400, "Invalid request: q is not valid UTF-8");
            goto out;
        }
        li->chars += n;
    }
    if (li->chars > s->max_chars) {
        char msg[160];
        snprintf(msg, sizeof msg, "Invalid request: request (%zu) exceeds text limit (%zu)", li->chars,
                 s->max_chars);
        error_reply(r, 413, msg);
        goto out;
    }
    size_t pair = s->n_pairs;
    for (size_t i = 0; i < s->n_pairs && pair == s->n_pairs; i++)
        if (!strcmp(s->pairs[i].source, t.source) && !strcmp(s->pairs[i].target, t.target))
            pair = i;
    if (pair == s->n_pairs) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s to %s is not served here (GET /languages lists the pairs)",
                 shown(t.source), shown(t.target));
        error_reply(r, 400, msg);
        goto out;
    }
    spans = calloc(t.nq ? t.nq : 1, sizeof *spans);
    nspan = calloc(t.nq ? t.nq : 1, sizeof *nspan);
    if (!spans || !nspan) {
        error_reply(r, 503, "out of memory");
        r->retry_after = 1;
        goto out;
    }
    for (size_t i = 0; i < t.nq; i++) {
        if (clf_text_sentences(t.q[i], strlen(t.q[i]), &spans[i], &nspan[i]) != CLF_OK) {
            error_reply(r, 503, "out of memory");
            r->retry_after = 1;
            goto out;
        }
        total += nspan[i];
    }
    if (total == 0) {
        error_reply(r, 400, "Invalid request: q is empty: nothing to translate");
        goto out;
    }
    li->sentences = total;
    sent = calloc(total, sizeof *sent);
    for (size_t i = 0, k = 0; sent && i < t.nq; i++)
        for (size_t j = 0; j < nspan[i]; j++, k++)
            if (!(sent[k] = strndup(t.q[i] + spans[i][j].at, spans[i][j].len))) {
                free(sent);
                sent = NULL;
            }
    if (!sent) {
        error_reply(r, 503, "out of memory");
        r->retry_after = 1;
        goto out;
    }
    switch (clf_queue_submit(s->q, pair, (const char *const *)sent, total, &req)) {
    case CLF_QUEUE_OK:
        break;
    case CLF_QUEUE_FULL:
        error_reply(r, 429, "Too many requests: the translation queue is full, try again later");
        r->retry_after = 1;
        goto out;
    case CLF_QUEUE_CLOSED:
        error_reply(r, 503, "The server is shutting down");
        r->retry_after = 5;
        goto out;
    default:
        error_reply(r, 413, clf_ctx_error(NULL));
        goto out;
    }
    while (!clf_queue_wait(req, 100))
        if (client_gone(connection)) {
            *hung_up = true;
            goto out;
        }
    if (clf_queue_req_result(req) != CLF_QUEUE_OK) {
        const bool closed = clf_queue_req_result(req) == CLF_QUEUE_CLOSED;
        char msg[1200];
        snprintf(msg, sizeof msg, "%s%s", closed ? "" : "Translation failed: ", clf_queue_req_message(req));
        error_reply(r, closed ? 503 : 500, msg);
        r->retry_after = closed ? 5 : 0;
        goto out;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!stream_open(&f, &buf, &len)) {
        error_reply(r, 503, "out of memory");
        r->retry_after = 1;
        goto out;
    }
    fputs(t.array ? "{\"translatedText\":[" : "{\"translatedText\":", f);
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
            fputs(t.q[i] + end, g);
            fclose(g);
        }
        fputs(i ? "," : "", f);
        clf_json_write_str(f, one ? one : "");
        free(one);
    }
    fputs(t.array ? "]}" : "}", f);
    fclose(f);
    json_reply(r, 200, buf, len);
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

static void log_line(const struct serve_http *h, const char *method, const char *url, const struct conn *c,
                     unsigned code, const struct log_info *li)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    fprintf(f, "{\"time\":%.3f,\"method\":", (double)wall.tv_sec + wall.tv_nsec * 1e-9);
    clf_json_write_str(f, method);
    fputs(",\"path\":", f);
    clf_json_write_str(f, url);
    fprintf(f, ",\"status\":%u,\"bytes\":%zu,\"chars\":%zu,\"sentences\":%zu,\"latency_ms\":%.1f}\n", code, c->len,
            li->chars, li->sentences, (now_s() - c->t0) * 1e3);
    fclose(f);
    (void)h;
    fputs(buf, stderr);
    free(buf);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    struct serve_http *h = cls;
    struct conn *c = *con_cls;
    if (!c) {
        if (!(c = calloc(1, sizeof *c)))
            return MHD_NO;
        c->t0 = now_s();
        atomic_fetch_add(&h->in_flight, 1);
        const char *type = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!strcmp(method, "POST") && type &&
            (!strncasecmp(type, MHD_HTTP_POST_ENCODING_FORM_URLENCODED,
                          strlen(MHD_HTTP_POST_ENCODING_FORM_URLENCODED)) ||
             !strncasecmp(type, MHD_HTTP_POST_ENCODING_MULTIPART_FORMDATA,
                          strlen(MHD_HTTP_POST_ENCODING_MULTIPART_FORMDATA)))) {
            c->form = true;
            c->pp = MHD_create_post_processor(connection, 16384, form_field, c);
        }
        *con_cls = c;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!c->too_big && c->len + *upload_size > body_limit(h->s))
            c->too_big = true;
        if (!c->too_big) {
            if (c->form) {
                c->len += *upload_size;
                if (c->pp && MHD_post_process(c->pp, upload, *upload_size) != MHD_YES)
                    c->pp = (MHD_destroy_post_processor(c->pp), NULL); /* a malformed form: 400 below */
            } else {
                char *x = realloc(c->body, c->len + *upload_size + 1);
                if (!x)
                    c->too_big = true;
                else {
                    memcpy(x + c->len, upload, *upload_size);
                    c->body = x, c->len += *upload_size;
                    c->body[c->len] = 0;
                }
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    struct reply r = {0};
    struct log_info li = {0};
    bool hung_up = false;
    const bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (!strcmp(url, "/translate")) {
        const char *type = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (strcmp(method, "POST"))
            error_reply(&r, 405, "Method not allowed: POST /translate");
        else if (c->too_big) {
            char msg[160];
            snprintf(msg, sizeof msg, "Invalid request: the body is over %zu bytes (--max-chars %zu)",
                     body_limit(h->s), h->s->max_chars);
            error_reply(&r, 413, msg);
        } else if (c->form && !c->pp)
            error_reply(&r, 400, "Invalid request: the form is malformed");
        else if (!c->form && type && strncasecmp(type, "application/json", 16) && strncasecmp(type, "text/plain", 10)) {
            char msg[200];
            snprintf(msg, sizeof msg, "Invalid request: Content-Type '%s' is not supported: send "
                     "application/json or a form", shown(type));
            error_reply(&r, 400, msg);
        } else {
            if (c->pp) {
                MHD_destroy_post_processor(c->pp); /* flushes its last field */
                c->pp = NULL;
            }
            translate(h, connection, c, &r, &li, &hung_up);
        }
    } else if (!strcmp(url, "/languages") || !strcmp(url, "/health") || !strcmp(url, "/metrics")) {
        if (!get)
            error_reply(&r, 405, "Method not allowed: use GET");
        else if (!strcmp(url, "/languages"))
            languages(h->s, &r);
        else if (!strcmp(url, "/metrics"))
            metrics(h, &r);
        else
            json_reply(&r, 200, strdup("{\"status\":\"ok\"}"), 15);
    } else
        error_reply(&r, 404, "Not Found");
    if (hung_up) {
        if (h->s->log)
            log_line(h, method, url, c, 499, &li);
        return MHD_NO; /* closes the connection */
    }
    if (!r.body)
        return MHD_NO;
    if (h->s->log)
        log_line(h, method, url, c, r.code, &li);
    return send_reply(h, connection, &r);
}

bool serve_http_start(struct serve *s)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
    char port[8];
    snprintf(port, sizeof port, "%u", s->port);
    const int e = getaddrinfo(s->host, port, &hints, &ai);
    if (e) {
        fprintf(stderr, "clformer serve: --host %s: %s\n", s->host, gai_strerror(e));
        return false;
    }
    struct serve_http *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        fprintf(stderr, "clformer: out of host memory\n");
        return false;
    }
    h->s = s;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, (uint16_t)s->port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned)512, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        fprintf(stderr, "clformer serve: cannot listen on %s port %u (in use? another --port, or --port 0 for a "
                        "free one)\n", s->host, s->port);
        free(h);
        return false;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    s->bound_port = di ? di->port : s->port;
    s->http = h;
    return true;
}

void serve_http_quiesce(struct serve *s)
{
    const MHD_socket fd = MHD_quiesce_daemon(s->http->d);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}

void serve_http_stop(struct serve *s, double seconds)
{
    if (!s->http)
        return;
    /* the answers of the requests the drain finished are still being sent */
    for (double t0 = now_s(); atomic_load(&s->http->in_flight) > 0 && now_s() - t0 < seconds;)
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    MHD_stop_daemon(s->http->d);
    free(s->http);
    s->http = NULL;
}
#endif
