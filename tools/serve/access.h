/* access.h: who may call `clformer serve` and how much: the API key (the
 * body's api_key as LibreTranslate reads it, or `Authorization: Bearer`),
 * the CORS origins answered, and the per-client token buckets of
 * --req-limit and --chars-per-minute (access.c). */
#ifndef CLF_SERVE_ACCESS_H
#define CLF_SERVE_ACCESS_H

#include "http.h"

/* With --api-keys: which key the request carries, body_key[0..body_len)
 * first (NULL: none), else the Authorization header's; *which its index
 * in s->keys. False with r filled: 400 when there is none, 403 when it is
 * not one of them (every key compared in full, in constant time). Without
 * keys: true, *which SIZE_MAX. */
bool serve_key_check(const struct serve *s, struct MHD_Connection *connection, const char *body_key,
                     size_t body_len, size_t *which, struct reply *r);

/* Adds the CORS headers resp owes the request's Origin under
 * --cors-origins, and a preflight's (the request names
 * Access-Control-Request-Method) allowed methods, headers and max-age. */
void serve_cors_headers(const struct serve *s, struct MHD_Connection *connection, struct MHD_Response *resp);

/* Charges a request of `texts` texts and `chars` characters to its client:
 * key `which` (SIZE_MAX: none) or else the connection's address (IPv6 by
 * its /64). True when both buckets had it; false with 429 and Retry-After
 * in r, charging nothing. */
bool serve_limits_take(const struct serve *s, struct MHD_Connection *connection, size_t which, size_t texts,
                       size_t chars, struct reply *r);

/* Who sent the request, for the queue's turns (clf_queue_submit_opts):
 * key `which`, else the connection's address (IPv6 by its /64); 0 when
 * neither is known (the request then takes turns as its own). */
uint64_t serve_client_id(const struct serve *s, struct MHD_Connection *connection, size_t which);

#endif
