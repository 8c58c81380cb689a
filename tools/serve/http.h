/* http.h: what the pieces of `clformer serve`'s HTTP layer share: one
 * connection's request as http.c gathers it (struct conn), the reply a
 * handler fills (struct reply), and the handler's view of the request
 * (struct serve_req). http.c owns connections and bodies, api.c the
 * routes and their JSON, metrics.c /metrics. */
#ifndef CLF_SERVE_HTTP_H
#define CLF_SERVE_HTTP_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "serve.h"

#define MAX_Q 1024 /* texts in one q array */

struct serve_http {
    struct MHD_Daemon *d;
    struct serve *s;
    atomic_ulong codes[600];
    atomic_long in_flight; /* requests begun and not yet answered */
    struct serve_conns *conns; /* conns.c: deadlines, handler threads */
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
    struct field source, target, format, api_key, alternatives;
    struct field file; /* /translate_file's upload */
    char *filename;    /* its name; NULL: no file was sent */
    const char *repeated; /* a form field given twice (not q), by name */
    double t0;
};

struct reply {
    unsigned code;
    char *body; /* malloc'd */
    size_t len;
    const char *type;
    unsigned retry_after; /* seconds; 0: none */
    char attachment[80];  /* a download's file name; "": none */
};

struct log_info {
    size_t chars, sentences;
};

/* A request whose body has been read, as a route's handler sees it. */
struct serve_req {
    struct serve_http *h;
    struct MHD_Connection *connection;
    struct conn *c;
    const char *method, *url;
    struct log_info li; /* what --log adds about it */
    bool hung_up;       /* the client left: no reply, the connection closes */
};

/* A route's handler: fills r (r->body NULL: close without a reply). */
typedef void serve_handler_fn(struct serve_req *rq, struct reply *r);

/* api.c: answers rq from its route's handler (404, 405 where none fits). */
void serve_route(struct serve_req *rq, struct reply *r);
/* metrics.c: GET /metrics, Prometheus' text format. */
void serve_metrics(struct serve_req *rq, struct reply *r);

/* http.c */
size_t serve_body_limit(const struct serve *s);
/* Whether the client of connection has hung up. */
bool serve_client_gone(struct MHD_Connection *connection);

/* conns.c: each connection's deadline and the handler's thread */
enum serve_phase { SERVE_HEAD, SERVE_BODY, SERVE_ANSWER }; /* what the deadline bounds; SERVE_ANSWER: none */
bool serve_conns_init(struct serve_http *h);
void serve_conns_free(struct serve_http *h); /* after MHD_stop_daemon */
void serve_conns_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe);
void serve_conns_phase(struct serve_http *h, struct MHD_Connection *connection, enum serve_phase phase);
/* Runs serve_route(rq) on a thread of its own, the connection suspended
 * until it is done; false (nothing done) if the connection has no guard. */
bool serve_conns_run(struct serve_req *rq);
/* The handler's result once it is done: true with *rq and *r. */
bool serve_conns_done(struct MHD_Connection *connection, struct serve_req *rq, struct reply *r);
/* Waits for every handler to end (before MHD_stop_daemon). */
void serve_conns_wait_jobs(struct serve_http *h);
/* Writes a small JSON error straight to the socket, for the moments MHD
 * cannot queue a reply (mid-body, past a deadline); the connection is
 * closed after it. */
void serve_send_raw(struct serve_http *h, MHD_socket fd, unsigned code, const char *reason, const char *msg);

/* api.c: replies */
bool serve_stream_open(FILE **f, char **buf, size_t *len);
void serve_json_reply(struct reply *r, unsigned code, char *body, size_t len);
void serve_error_reply(struct reply *r, unsigned code, const char *msg);
/* s as a message may show it: short printable ASCII, or not at all. */
const char *serve_shown(const char *s);
/* The English name of a language code (the code itself if unknown). */
const char *serve_language_name(const char *code);

#endif
