/* access.c: who may call `clformer serve` and how much (access.h): the API
 * key, the CORS headers, and the token buckets of --req-limit and
 * --chars-per-minute, one pair a key and one pair a client address in a
 * table of fixed size (the least recently seen address leaves first), so
 * memory stays bounded whatever the number of addresses. */
#define _GNU_SOURCE
#ifdef CLF_HAVE_MHD /* without it, cmd_serve.c says so */
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <clformer/advanced/clock.h>
#include "access.h"

/* ------------------------------------------------------------ API keys */

/* Whether given[0..n) is key, in a time that depends on n only: a reply's
 * time must not tell how many leading bytes of a guess were right. */
static bool key_equal(const char *key, const char *given, size_t n)
{
    const size_t klen = strlen(key);
    unsigned char diff = (unsigned char)(klen != n);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)given[i] ^ (unsigned char)key[i % (klen + 1)];
    return diff == 0;
}

bool serve_key_check(const struct serve *s, struct MHD_Connection *connection, const char *body_key,
                     size_t body_len, size_t *which, struct reply *r)
{
    *which = SIZE_MAX;
    if (!s->keys)
        return true;
    const char *key = body_key;
    size_t n = body_len;
    if (!key || !n) {
        /* LibreTranslate's own clients send api_key; other clients and
         * proxies send `Authorization: Bearer KEY` (LibreTranslate's CORS
         * allows the header and its /metrics reads a token so) */
        key = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (key && !strncasecmp(key, "Bearer ", 7))
            for (key += 7; *key == ' ';)
                key++;
        n = key ? strlen(key) : 0;
    }
    if (!n) {
        serve_error_reply(r, 400, "Invalid request: missing api_key: send it as api_key, or as the header "
                                  "Authorization: Bearer KEY");
        return false;
    }
    for (size_t i = 0; i < s->n_keys; i++) /* all of them, found or not */
        if (key_equal(s->keys[i], key, n))
            *which = i;
    if (*which == SIZE_MAX) {
        serve_error_reply(r, 403, "Invalid API key");
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- CORS */

/* Whether origin is one of --cors-origins' comma-separated list. */
static bool origin_listed(const char *list, const char *origin)
{
    const size_t n = strlen(origin);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t k = strcspn(p, ",");
        while (k && p[k - 1] == ' ')
            k--;
        if (k && k == n && !memcmp(p, origin, n))
            return true;
        p += strcspn(p, ",");
    }
    return false;
}

void serve_cors_headers(const struct serve *s, struct MHD_Connection *connection, struct MHD_Response *resp)
{
    const char *origin = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Origin");
    if (s->cors_origins && !strcmp(s->cors_origins, "*"))
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    else if (s->cors_origins) {
        MHD_add_response_header(resp, "Vary", "Origin"); /* caches keep one answer an origin */
        if (origin && origin_listed(s->cors_origins, origin))
            MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
    }
    if (MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Access-Control-Request-Method")) {
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Content-Type, Authorization");
        MHD_add_response_header(resp, "Access-Control-Max-Age", "86400");
    }
}

/* ---------------------------------------------------------- the buckets */

#define IP_SLOTS 4096 /* addresses remembered: about 200 KB */
#define IP_WAYS 8     /* slots an address may take */

/* Tokens left of both limits, as of t (seconds, clf_now). */
struct bucket {
    double req, chars, t;
};

struct client {
    unsigned char addr[16]; /* IPv4 as ::ffff:a.b.c.d; IPv6 its /64 */
    bool used;
    double seen; /* its last request */
    struct bucket b;
};

struct serve_limits {
    pthread_mutex_t lock;
    struct bucket *keys; /* one a key of s->keys */
    struct client ip[IP_SLOTS];
};

bool serve_limits_init(struct serve *s)
{
    if (s->req_limit <= 0 && s->chars_limit <= 0)
        return true;
    struct serve_limits *l = calloc(1, sizeof *l);
    if (!l || (s->n_keys && !(l->keys = calloc(s->n_keys, sizeof *l->keys)))) {
        free(l);
        fprintf(stderr, "clformer serve: out of host memory for the rate limits\n");
        return false;
    }
    pthread_mutex_init(&l->lock, NULL);
    const double now = clf_now();
    for (size_t i = 0; i < s->n_keys; i++)
        l->keys[i] = (struct bucket){s->req_limit, s->chars_limit, now};
    s->limits = l;
    return true;
}

void serve_limits_free(struct serve *s)
{
    if (!s->limits)
        return;
    pthread_mutex_destroy(&s->limits->lock);
    free(s->limits->keys);
    free(s->limits);
    s->limits = NULL;
}

/* b refilled to now: each limit is its count a minute, at most that many
 * held (a client idle for a minute may spend a minute's worth at once). */
static void refill(const struct serve *s, struct bucket *b, double now)
{
    const double dt = now > b->t ? now - b->t : 0;
    b->req = fmin(s->req_limit, b->req + dt * s->req_limit / 60);
    b->chars = fmin(s->chars_limit, b->chars + dt * s->chars_limit / 60);
    b->t = now;
}

static bool bucket_full(const struct serve *s, const struct bucket *b)
{
    return b->req >= s->req_limit && b->chars >= s->chars_limit;
}

/* The connection's client address as 16 bytes; false when MHD has none. */
static bool client_addr(struct MHD_Connection *connection, unsigned char out[16])
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return false;
    memset(out, 0, 16);
    if (ci->client_addr->sa_family == AF_INET) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, 4);
        return true;
    }
    if (ci->client_addr->sa_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr.s6_addr;
        static const unsigned char v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        /* one IPv6 client holds a /64: counting its addresses apart would
         * give it 2^64 buckets */
        memcpy(out, a, memcmp(a, v4, 12) ? 8 : 16);
        return true;
    }
    return false;
}

uint64_t serve_client_id(const struct serve *s, struct MHD_Connection *connection, size_t which)
{
    (void)s;
    unsigned char addr[16];
    if (which != SIZE_MAX)
        return (uint64_t)which + 1; /* keys and addresses apart: an address's id is at least 2^32 */
    if (!client_addr(connection, addr))
        return 0;
    uint64_t h = 14695981039346656037ull; /* FNV-1a, 64 bits */
    for (size_t i = 0; i < 16; i++)
        h = (h ^ addr[i]) * 1099511628211ull;
    return h | 1ull << 32;
}

/* Under the lock: addr's bucket, taking the slot of an unused, full or
 * else least recently seen address among its ways. */
static struct bucket *ip_bucket(const struct serve *s, struct serve_limits *l, const unsigned char addr[16],
                                double now)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < 16; i++)
        h = (h ^ addr[i]) * 16777619u;
    struct client *c = NULL, *victim = NULL;
    for (size_t w = 0; w < IP_WAYS; w++)
        if ((c = &l->ip[(h + w) % IP_SLOTS])->used && !memcmp(c->addr, addr, 16)) {
            c->seen = now;
            return &c->b;
        }
    for (size_t w = 0; w < IP_WAYS; w++) {
        c = &l->ip[(h + w) % IP_SLOTS];
        if (c->used)
            refill(s, &c->b, now);
        if (!c->used || bucket_full(s, &c->b)) { /* one that forgets nothing */
            victim = c;
            break;
        }
        if (!victim || c->seen < victim->seen)
            victim = c;
    }
    memcpy(victim->addr, addr, 16);
    victim->used = true;
    victim->seen = now;
    victim->b = (struct bucket){s->req_limit, s->chars_limit, now};
    return &victim->b;
}

bool serve_limits_take(const struct serve *s, struct MHD_Connection *connection, size_t which, size_t texts,
                       size_t chars, struct reply *r)
{
    struct serve_limits *l = s->limits;
    unsigned char addr[16];
    if (!l || (which == SIZE_MAX && !client_addr(connection, addr)))
        return true;
    /* a request past a whole minute's worth waits for a full bucket
     * rather than never passing; a batch costs its texts (LibreTranslate) */
    const double req = s->req_limit > 0 ? fmin((double)(texts ? texts : 1), s->req_limit) : 0;
    const double ch = s->chars_limit > 0 ? fmin((double)chars, s->chars_limit) : 0;
    const double now = clf_now();
    pthread_mutex_lock(&l->lock);
    struct bucket *b = which != SIZE_MAX ? &l->keys[which] : ip_bucket(s, l, addr, now);
    refill(s, b, now);
    const double wait_req = req > b->req ? (req - b->req) * 60 / s->req_limit : 0;
    const double wait_ch = ch > b->chars ? (ch - b->chars) * 60 / s->chars_limit : 0;
    if (wait_req <= 0 && wait_ch <= 0)
        b->req -= req, b->chars -= ch;
    pthread_mutex_unlock(&l->lock);
    if (wait_req <= 0 && wait_ch <= 0)
        return true;
    char msg[300];
    const bool by_req = wait_req >= wait_ch;
    const unsigned after = (unsigned)ceil(fmax(wait_req, wait_ch));
    snprintf(msg, sizeof msg, "Slowdown: too many %s from this %s: %g a minute (%s %g); try again in %u s",
             by_req ? "requests (a batch counts its texts)" : "characters", which != SIZE_MAX ? "API key" : "address",
             by_req ? s->req_limit : s->chars_limit, by_req ? "--req-limit" : "--chars-per-minute",
             by_req ? s->req_limit : s->chars_limit, after ? after : 1);
    serve_error_reply(r, 429, msg);
    r->retry_after = after ? after : 1;
    return false;
}
#endif
