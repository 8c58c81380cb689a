/* http.c: `clformer serve`'s connections over GNU libmicrohttpd, polled
 * (epoll) by a few threads: each connection's request state (struct
 * conn), the body read as it arrives (JSON kept whole up to the body
 * limit, a form through MHD's post processor; a body over the limit gets
 * 413 at once, a declared one before any of it is read, with no
 * `100 Continue`), the handler run on a thread of its own (conns.c), the
 * reply sent, the --log line, and the daemon's start, quiesce and stop.
 * What a request gets is api.c's. */
#define _GNU_SOURCE /* POLLRDHUP, open_memstream */
#ifdef CLF_HAVE_MHD /* without it, cmd_serve.c says so */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <clformer/advanced/clock.h>
#include <clformer/advanced/json.h>
#include "access.h"
#include "http.h"

size_t serve_body_limit(const struct serve *s) { return s->max_chars * 12 + 65536; }

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
    else if (!strcmp(key, "alternatives"))
        f = &c->alternatives;
    else if (!strcmp(key, "file") && filename) {
        f = &c->file;
        if (!c->filename && !(c->filename = strdup(filename)))
            return MHD_NO;
    } else
        return MHD_YES;
    if (off == 0 && f->v) { /* readers differ on which counts (Flask: the first; PHP: the last): 400 */
        c->repeated = f == &c->source ? "source" : f == &c->target ? "target" : f == &c->format ? "format"
                    : f == &c->file ? "file" : f == &c->alternatives ? "alternatives" : "api_key";
        return MHD_YES;
    }
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
    free(c->source.v), free(c->target.v), free(c->format.v), free(c->api_key.v), free(c->alternatives.v);
    free(c->body);
    free(c->file.v), free(c->filename), free(c);
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


static enum MHD_Result send_reply(struct serve_http *h, struct MHD_Connection *connection, struct reply *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(r->body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type);
    serve_cors_headers(h->s, connection, resp);
    if (r->retry_after) {
        char ra[16];
        snprintf(ra, sizeof ra, "%u", r->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (r->attachment[0]) { /* a name of [A-Za-z0-9._-] only (files.c) */
        char cd[128];
        snprintf(cd, sizeof cd, "attachment; filename=\"%s\"", r->attachment);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, cd);
    }
    const enum MHD_Result ok = MHD_queue_response(connection, r->code, resp);
    MHD_destroy_response(resp);
    if (r->code < 600)
        atomic_fetch_add(&h->codes[r->code], 1);
    return ok;
}



bool serve_client_gone(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    /* An end of input alone (POLLRDHUP, a read of 0) is not a hang-up: a
     * client may shutdown(SHUT_WR) once its request is sent and still
     * read the answer. Only a reset or an error says it is gone; one that
     * closed outright is found when its answer cannot be written. */
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR));
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
            li->chars, li->sentences, (clf_now() - c->t0) * 1e3);
    fclose(f);
    (void)h;
    fputs(buf, stderr);
    free(buf);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *connection, const char *url,
                                     const char *method, const char *version, const char *upload,
                                     size_t *upload_size, void **con_cls)
{
    (void)version;
    struct serve_http *h = cls;
    struct conn *c = *con_cls;
    if (!c) {
        if (!(c = calloc(1, sizeof *c)))
            return MHD_NO;
        c->t0 = clf_now();
        atomic_fetch_add(&h->in_flight, 1);
        *con_cls = c;
        serve_conns_phase(h, connection, SERVE_BODY); /* the head is in */
        /* a declared body over the limit: 413 before reading it (and so no
         * `100 Continue`); MHD then closes the connection unread */
        const char *cl = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > serve_body_limit(h->s)) {
            struct reply r;
            char msg[160];
            snprintf(msg, sizeof msg, "Invalid request: the body (Content-Length %.20s) is over %zu bytes "
                     "(--max-chars %zu)", cl, serve_body_limit(h->s), h->s->max_chars);
            serve_error_reply(&r, 413, msg);
            if (h->s->log)
                log_line(h, method, url, c, 413, &(struct log_info){0});
            return r.body ? send_reply(h, connection, &r) : MHD_NO;
        }
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
        if (c->len + *upload_size > serve_body_limit(h->s)) {
            /* past the limit (chunked, or longer than declared): 413 the
             * moment it is, and close; MHD cannot queue a reply mid-body */
            const union MHD_ConnectionInfo *ci = MHD_get_connection_info(connection,
                                                                         MHD_CONNECTION_INFO_CONNECTION_FD);
            char msg[160];
            snprintf(msg, sizeof msg, "Invalid request: the body is over %zu bytes (--max-chars %zu)",
                     serve_body_limit(h->s), h->s->max_chars);
            if (ci)
                serve_send_raw(h, ci->connect_fd, 413, "Content Too Large", msg);
            if (h->s->log)
                log_line(h, method, url, c, 413, &(struct log_info){0});
            return MHD_NO;
        }
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
    struct serve_req rq = {.h = h, .connection = connection, .c = c, .method = method, .url = url};
    if (!serve_conns_done(connection, &rq, &r)) {
        /* the request is whole: its handler runs on a thread of its own
         * (it may wait for the queue), the connection suspended; MHD calls
         * here again once it is done */
        serve_conns_phase(h, connection, SERVE_ANSWER);
        if (serve_conns_run(&rq))
            return MHD_YES;
        serve_route(&rq, &r);
    }
    if (rq.hung_up) {
        if (h->s->log)
            log_line(h, method, url, c, 499, &rq.li);
        return MHD_NO; /* closes the connection */
    }
    if (!r.body)
        return MHD_NO;
    if (h->s->log)
        log_line(h, method, url, c, r.code, &rq.li);
    return send_reply(h, connection, &r);
}

/* A request answered (or given up): the connection's next request, kept
 * alive, has --header-timeout from now. */
static void request_done(void *cls, struct MHD_Connection *connection, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    serve_conns_phase(cls, connection, SERVE_HEAD);
    completed(cls, connection, con_cls, toe);
}

/* The open-file limit raised to what --max-connections needs (the hard
 * limit at most); *max_conns lowered, with a word, where it cannot be. */
static void fd_limit(unsigned *max_conns)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return;
    const rlim_t want = (rlim_t)*max_conns + 64; /* the models, the device, the log */
    if (rl.rlim_cur < want && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want) {
        const unsigned fit = rl.rlim_cur > 128 ? (unsigned)(rl.rlim_cur - 64) : 64;
        fprintf(stderr, "clformer serve: the open-file limit (%llu, ulimit -n) holds fewer than --max-connections "
                        "%u: serving at most %u connections\n", (unsigned long long)rl.rlim_cur, *max_conns, fit);
        *max_conns = fit;
    }
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
    if (!serve_conns_init(h)) {
        freeaddrinfo(ai);
        free(h);
        fprintf(stderr, "clformer: out of host memory\n");
        return false;
    }
    fd_limit(&s->max_conns);
    /* a few threads poll every socket (epoll where there is one), so idle
     * and slow sockets cost no thread; handlers run on threads of their
     * own (conns.c), the connection suspended meanwhile */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const unsigned pollers = cpus < 2 ? 2 : cpus > 4 ? 4 : (unsigned)cpus;
    /* MHD's timeout counts inactivity (a reader that takes no answer, a
     * pause in a body); the deadlines of head and body are conns.c's */
    const double idle = s->header_timeout > s->body_timeout ? s->header_timeout : s->body_timeout;
    h->d = MHD_start_daemon(flags, (uint16_t)s->port, NULL, NULL, access_handler, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_NOTIFY_COMPLETED, request_done, h, MHD_OPTION_NOTIFY_CONNECTION,
                            serve_conns_notify, h, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)(idle > 0 ? idle + 0.999 : 0), MHD_OPTION_CONNECTION_LIMIT, s->max_conns,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->max_conns_per_ip, MHD_OPTION_THREAD_POOL_SIZE,
                            pollers, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        fprintf(stderr, "clformer serve: cannot listen on %s port %u (in use? another --port, or --port 0 for a "
                        "free one)\n", s->host, s->port);
        serve_conns_free(h);
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
    for (double t0 = clf_now(); atomic_load(&s->http->in_flight) > 0 && clf_now() - t0 < seconds;)
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    serve_conns_wait_jobs(s->http); /* MHD must not stop with a connection suspended */
    MHD_stop_daemon(s->http->d);
    serve_conns_free(s->http);
    free(s->http);
    s->http = NULL;
}
#endif
