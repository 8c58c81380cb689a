/* serve.h: `clformer serve`'s pieces: the flags' state (tools/cmd_serve.c) and
 * the HTTP layer over libmicrohttpd (http.c, api.c, metrics.c here). */
#ifndef CLF_SERVE_H
#define CLF_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#include <clformer/advanced.h>

#define SERVE_MAX_PAIRS 16

struct serve_pair {
    char source[16], target[16];
    const char *ckpt;
};

struct serve {
    struct serve_pair pairs[SERVE_MAX_PAIRS];
    size_t n_pairs;
    const char *host;
    unsigned port, bound_port;
    size_t max_chars;
    double drain_seconds;
    double health_stuck_s;      /* --health-stuck-seconds: /health's limit on one translator call (0: none) */
    unsigned max_conns, max_conns_per_ip; /* --max-connections, --max-connections-per-ip (0: none) */
    double header_timeout, body_timeout;  /* seconds for a request's head, for its body (0: none) */
    bool log;
    const char *const *keys; /* --api-keys' lines; NULL: no key needed */
    size_t n_keys;
    const char *cors_origins;   /* "*", a comma-separated list, or NULL: no origin allowed */
    size_t max_sentences;       /* a request's, after cutting its texts */
    double req_limit;           /* requests a minute a client (a batch counts its texts); 0: none */
    double chars_limit;         /* characters a minute a client; 0: none */
    struct serve_limits *limits; /* their buckets (access.c) */
    clf_translator_t *const *translators; /* pair i's: its tokenizer and length limit */
    size_t fail_copy;           /* test hook CLF_SERVE_FAIL_COPY: the copy of a request's sentence N fails */
    char device[256];
    clf_queue_t *q;
    struct serve_http *http;
    struct serve_libre *libre; /* libre.c: /detect's guesser, translated files */
};

/* Starts listening on s->host:s->port (s->bound_port: the port chosen);
 * false with a message on stderr otherwise. */
bool serve_http_start(struct serve *s);
/* access.c: the buckets of --req-limit and --chars-per-minute
 * (s->limits); false with a message on stderr when out of memory. */
bool serve_limits_init(struct serve *s);
void serve_limits_free(struct serve *s);
/* Stops accepting connections; those open keep being served. */
void serve_http_quiesce(struct serve *s);
/* Waits at most `seconds` for the requests begun to be answered, then
 * closes every connection and frees the layer. */
void serve_http_stop(struct serve *s, double seconds);

#endif
