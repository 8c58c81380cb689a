/* queue.c: the translation queue (clformer_serve.h): its life, requests
 * and the worker's rounds (its order, encoding, taking and finishing are
 * queue_order.c's; its counters and health queue_health.c's). One mutex
 * guards the queue (queue_internal.h); a submitted request waits in an
 * incoming list until the worker encodes it without the lock, then its
 * sentences join its pair's order (queue_order.c: schedule). The worker picks a round (see the header) or
 * runs a stream (queue_stream.c), translates without the lock, and hands
 * the outputs back, waking each request once, when it is done. A request
 * is freed by whichever of its owner and the worker lets go of it last. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/status.h"
#include "queue_internal.h"
#include "runtime/settings.h"

static struct timespec at_s(double t)
{
    struct timespec ts = {.tv_sec = (time_t)t};
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    return ts;
}

/* Under the lock: how many of p's first items make a round, and whether
 * the round is full (the budget leaves no room for the next one). A round
 * asks one number of alternatives of all its sentences (the search's
 * nbest is the round's): it ends before a sentence that asks another, as
 * a full one does, so order is kept and nothing waits for it to fill. */
static size_t round_size(const clf_queue_t *q, const struct pair *p, bool *full)
{
    size_t c = 0, tokens = 0;
    *full = false;
    for (const struct item *it = p->head; it; it = it->next) {
        if (c == q->qo.max_batch_sentences || (c && tokens + it->len + 1 > q->qo.max_batch_tokens) ||
            it->req->alts != p->head->req->alts) {
            *full = true;
            break;
        }
        tokens += it->len + 1, c++;
    }
    if (c == q->qo.max_batch_sentences || tokens >= q->qo.max_batch_tokens)
        *full = true;
    return c;
}

/* Under the lock (released while translating): one round of p's. */
static void round_run(clf_queue_t *q, struct worker *w, struct pair *p, size_t c)
{
    clf_translator_t *t = worker_t(w, p);
    /* its sentences all ask for as many alternatives (round_size) */
    const size_t nb = 1 + p->head->req->alts;
    struct clf_translate_opts o = p->o;
    o.nbest = (int)nb;
    struct item **items = malloc(c * sizeof *items);
    const int32_t **src = malloc(c * sizeof *src);
    size_t *len = malloc(c * sizeof *len);
    char **out = calloc(c * nb, sizeof *out);
    if (!items || !src || !len || !out) {
        free(items), free(src), free(len), free(out);
        clf_queue_pair_drop(q, p, NULL, false, CLF_QUEUE_FAILED, "out of host memory for a batch");
        return;
    }
    for (size_t j = 0; j < c; j++) {
        items[j] = clf_queue_take(q, p);
        src[j] = items[j]->ids, len[j] = items[j]->len;
    }
    if (p->head && q->n_workers > 1) /* more for another worker */
        pthread_cond_broadcast(&q->work);
    const struct clf_batching b = {.sentences = c, .tokens = q->qo.max_batch_tokens};
    clf_status s = clf_queue_call_begin(q, w, p);
    if (s == CLF_OK) {
        pthread_mutex_unlock(&q->mu);
        s = clf_translator_translate_ids(t, src, len, c, &o, b, out, NULL, NULL, NULL);
        pthread_mutex_lock(&q->mu);
    }
    clf_queue_call_end(q, w, p, s);
    clf_queue_count_batch(q, w, c);
    const char *msg = s == CLF_OK ? NULL : clf_ctx_error(clf_translator_ctx(t));
    if (s == CLF_OK)
        w->sentences += c;
    for (size_t j = 0; j < c; j++) {
        if (w->out) { /* its device failed: the workers left translate them */
            clf_queue_requeue(q, p, items[j], msg);
            continue;
        }
        clf_queue_req_t *r = items[j]->req;
        for (size_t k = 1; s == CLF_OK && k < nb && !r->gone; k++) /* before finish, which may free r */
            r->alt[items[j]->at * r->alts + k - 1] = out[j * nb + k], out[j * nb + k] = NULL;
        clf_queue_finish(q, items[j], s == CLF_OK ? out[j * nb] : NULL, msg);
        out[j * nb] = NULL;
    }
    for (size_t j = 0; j < c * nb; j++)
        free(out[j]);
    free(items), free(src), free(len), free(out);
}

static void *worker(void *arg)
{
    struct worker *w = arg;
    clf_queue_t *q = w->q;
    pthread_mutex_lock(&q->mu);
    while (!w->out) {
        if (clf_queue_intake(q, w)) /* everything submitted is in the order before a round is picked */
            continue;
        struct pair *p = NULL;
        for (size_t k = 0; k < q->n_pairs; k++)
            if (q->p[k].head && (!p || clf_queue_oldest(&q->p[k]) < clf_queue_oldest(p)))
                p = &q->p[k];
        if (!p) {
            if (q->stop)
                break;
            pthread_cond_wait(&q->work, &q->mu);
            continue;
        }
        if (q->qo.continuous && !p->head->req->alts) { /* no wait: the next ones join at the next step */
            clf_queue_flow_run(q, w, p);
            continue;
        }
        bool full;
        const size_t c = round_size(q, p, &full);
        const double deadline = clf_queue_oldest(p) + q->qo.batch_wait_ms * 1e-3;
        if (!full && !q->closed && clf_now() < deadline) {
            const struct timespec ts = at_s(deadline);
            pthread_cond_timedwait(&q->work, &q->mu, &ts);
            continue;
        }
        round_run(q, w, p, c);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* CLF_FAULT_QUEUE (clformer_serve.h), once per queue. */
static clf_status fault_read(clf_queue_t *x)
{
    const char *f = clf_setting_get("CLF_FAULT_QUEUE");
    if (!f || !*f)
        return CLF_OK;
    char *end = NULL;
    const char *at = strchr(f, '@');
    const size_t head = at ? (size_t)(at - f) : strlen(f);
    x->fault_worker = SIZE_MAX;
    bool ok = true;
    if (at) /* @W: worker W's calls only */
        ok = at[1] >= '0' && at[1] <= '9' && (errno = 0, x->fault_worker = strtoull(at + 1, &end, 10), !*end && !errno) &&
             x->fault_worker < x->n_workers;
    if (ok && head == 5 && !strncmp(f, "stall", 5))
        x->fault = FAULT_STALL;
    else if (ok && head > 11 && !strncmp(f, "fail-after:", 11) && f[11] >= '0' && f[11] <= '9' &&
             (errno = 0, x->fault_after = strtoull(f + 11, &end, 10), end == f + head && !errno))
        x->fault = FAULT_FAIL_AFTER;
    else
        return clf_error_set(NULL, CLF_ERR_ARG,
                             "CLF_FAULT_QUEUE=%s: expected fail-after:N (translator calls fail as a dead device's "
                             "after N batches) or stall (they hang until the queue drains), each optionally with "
                             "@W, a worker's index below %zu (only that worker's calls)",
                             f, x->n_workers);
    return CLF_OK;
}

clf_status clf_queue_init(clf_translator_t *const *t, size_t n, const struct clf_translate_opts *opts,
                          const struct clf_queue_opts *qo, clf_queue_t **q)
{
    return clf_queue_init_workers(t, 1, n, opts, qo, q);
}

/* Stops the workers started (the first `started` of q's) and frees q. */
static void queue_destroy(clf_queue_t *q, size_t started)
{
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
    for (size_t k = 0; k < started; k++)
        pthread_join(q->w[k].thread, NULL);
    pthread_mutex_destroy(&q->mu), pthread_cond_destroy(&q->work), pthread_cond_destroy(&q->idle);
    pthread_condattr_destroy(&q->cattr);
    free(q->p), free(q->w), free(q->ts), free(q);
}

clf_status clf_queue_init_workers(clf_translator_t *const *t, size_t workers, size_t n,
                                  const struct clf_translate_opts *opts, const struct clf_queue_opts *qo,
                                  clf_queue_t **q)
{
    *q = NULL;
    if (n == 0)
        return clf_error_set(NULL, CLF_ERR_ARG, "a translation queue needs at least one translator");
    if (workers == 0)
        return clf_error_set(NULL, CLF_ERR_ARG, "a translation queue needs at least one worker");
    clf_queue_t *x = calloc(1, sizeof *x);
    /* the translators' array is copied: a caller's array on its stack, or
     * one it frees after this call, must not be read by the workers */
    if (!x || !(x->p = calloc(n, sizeof *x->p)) || !(x->w = calloc(workers, sizeof *x->w)) ||
        !(x->ts = malloc(workers * n * sizeof *x->ts))) {
        if (x)
            free(x->p), free(x->w);
        free(x);
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory for a translation queue");
    }
    x->n_workers = x->live = workers;
    const clf_status fs = fault_read(x);
    if (fs != CLF_OK) {
        free(x->p), free(x->w), free(x->ts), free(x);
        return fs;
    }
    x->started = clf_now();
    memcpy(x->ts, t, workers * n * sizeof *x->ts);
    for (size_t k = 0; k < workers; k++)
        x->w[k] = (struct worker){.q = x, .id = k, .t = x->ts + k * n};
    x->n_pairs = n;
    x->qo = qo ? *qo : (struct clf_queue_opts){0};
    x->qo.max_batch_tokens = x->qo.max_batch_tokens ? x->qo.max_batch_tokens : 4096;
    x->qo.max_batch_sentences = x->qo.max_batch_sentences ? x->qo.max_batch_sentences : 256;
    for (size_t i = 0; i < n; i++) {
        x->p[i] = (struct pair){.o = opts ? opts[i] : clf_translator_opts(t[i])};
        x->p[i].o.nbest = 1; /* one translation a sentence */
    }
    pthread_condattr_init(&x->cattr);
    pthread_condattr_setclock(&x->cattr, CLOCK_MONOTONIC);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->work, &x->cattr);
    pthread_cond_init(&x->idle, &x->cattr);
    for (size_t k = 0; k < workers; k++) {
        const int e = pthread_create(&x->w[k].thread, NULL, worker, &x->w[k]);
        if (e) {
            queue_destroy(x, k);
            return clf_error_set(NULL, CLF_ERR_MEMORY, "cannot start the translation queue's worker %zu: %s", k,
                                 strerror(e));
        }
    }
    *q = x;
    return CLF_OK;
}

void clf_queue_free(clf_queue_t *q)
{
    if (!q)
        return;
    clf_queue_drain(q, 0);
    queue_destroy(q, q->n_workers);
}

clf_queue_rc clf_queue_submit(clf_queue_t *q, size_t pair, const char *const *src, size_t n, clf_queue_req_t **r)
{
    return clf_queue_submit_with(q, pair, src, n, NULL, r);
}

clf_queue_rc clf_queue_submit_with(clf_queue_t *q, size_t pair, const char *const *src, size_t n,
                                   const struct clf_queue_submit_opts *so, clf_queue_req_t **r)
{
    *r = NULL;
    if (pair >= q->n_pairs) {
        clf_error_set(NULL, CLF_ERR_ARG, "no language pair %zu: the queue has %zu", pair, q->n_pairs);
        return CLF_QUEUE_INVALID;
    }
    if (q->qo.max_queued && n > q->qo.max_queued) {
        clf_error_set(NULL, CLF_ERR_ARG, "%zu sentences are more than the queue holds (%zu): send fewer at a time",
                      n, q->qo.max_queued);
        return CLF_QUEUE_INVALID;
    }
    const size_t alts = so ? so->alternatives : 0;
    const struct clf_translate_opts *po = &q->p[pair].o;
    const size_t most = po->greedy || po->beam < 1 ? 0 : (size_t)po->beam - 1;
    if (alts > most) {
        clf_error_set(NULL, CLF_ERR_ARG, "%zu alternatives are more than the search keeps: at most %zu (beam %d%s)",
                      alts, most, po->beam, po->greedy ? ", greedy: none" : "");
        return CLF_QUEUE_INVALID;
    }
    size_t bytes = 1;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(src[i]) + 1;
    char **alt = alts && n ? calloc(n * alts, sizeof *alt) : NULL;
    clf_queue_req_t *x = calloc(1, sizeof *x);
    struct item *items = calloc(n ? n : 1, sizeof *items);
    char **out = calloc(n ? n : 1, sizeof *out), *texts = malloc(bytes);
    if (!x || !items || !out || !texts || (alts && n && !alt)) {
        free(x), free(items), free(out), free(texts), free(alt);
        clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory for a request of %zu sentences", n);
        return CLF_QUEUE_INVALID;
    }
    const double t0 = clf_now();
    *x = (struct clf_queue_req){.q = q, .pair = pair, .n = n, .left = n, .items = items, .texts = texts,
                                .out = out, .alts = alt ? alts : 0, .alt = alt, .submitted = t0,
                                .client = so ? so->client : 0};
    for (size_t i = 0, at = 0; i < n; i++) {
        const size_t len = strlen(src[i]) + 1;
        memcpy(texts + at, src[i], len);
        items[i] = (struct item){.req = x, .at = i, .text = texts + at};
        at += len;
    }
    pthread_cond_init(&x->done, &q->cattr);
    pthread_mutex_lock(&q->mu);
    const clf_queue_rc rc = q->closed ? CLF_QUEUE_CLOSED
                            : q->qo.max_queued && q->st.queued + n > q->qo.max_queued ? CLF_QUEUE_FULL
                                                                                       : CLF_QUEUE_OK;
    if (rc == CLF_QUEUE_OK) {
        x->seq = ++q->seq, x->taken_before = q->taken;
        q->st.requests++;
        if (n) { /* to the worker, which encodes it before it picks its next round or step */
            *(q->in_tail ? &q->in_tail->next_in : &q->in_head) = x;
            q->in_tail = x;
            q->st.queued += n;
            pthread_cond_broadcast(&q->work); /* any free worker */
        } else
            x->state = REQ_SCHEDULED; /* done at once */
    } else if (rc == CLF_QUEUE_FULL)
        q->st.rejected++;
    pthread_mutex_unlock(&q->mu);
    if (rc != CLF_QUEUE_OK) {
        clf_queue_req_destroy(x);
        clf_error_set(NULL, CLF_ERR_ARG, rc == CLF_QUEUE_FULL ? "the translation queue is full: try again later"
                                                               : "the translation queue is draining");
        return rc;
    }
    *r = x;
    return rc;
}

bool clf_queue_wait(clf_queue_req_t *r, long timeout_ms)
{
    clf_queue_t *q = r->q;
    const struct timespec ts = at_s(clf_now() + (timeout_ms > 0 ? timeout_ms : 0) * 1e-3);
    pthread_mutex_lock(&q->mu);
    while (r->left) {
        if (timeout_ms < 0)
            pthread_cond_wait(&r->done, &q->mu);
        else if (pthread_cond_timedwait(&r->done, &q->mu, &ts) == ETIMEDOUT)
            break;
        r->wakeups++;
    }
    const bool done = r->left == 0;
    pthread_mutex_unlock(&q->mu);
    return done;
}

clf_queue_rc clf_queue_req_result(const clf_queue_req_t *r) { return r->rc; }

const char *clf_queue_req_message(const clf_queue_req_t *r) { return r->message ? r->message : ""; }

const char *clf_queue_req_output(const clf_queue_req_t *r, size_t i)
{
    return i < r->n && r->out[i] ? r->out[i] : "";
}

const char *clf_queue_req_alternative(const clf_queue_req_t *r, size_t i, size_t j)
{
    return i < r->n && j < r->alts && r->alt[i * r->alts + j] ? r->alt[i * r->alts + j] : "";
}

void clf_queue_req_free(clf_queue_req_t *r)
{
    if (!r)
        return;
    clf_queue_t *q = r->q;
    pthread_mutex_lock(&q->mu);
    while (r->state == REQ_ENCODING) { /* the worker has its sentences for a moment */
        r->freeing = true;
        pthread_cond_wait(&r->done, &q->mu);
    }
    if (r->state == REQ_INCOMING) { /* never reached the worker */
        clf_queue_req_t **link = &q->in_head, *prev = NULL;
        while (*link != r)
            prev = *link, link = &(*link)->next_in;
        *link = r->next_in;
        if (q->in_tail == r)
            q->in_tail = prev;
        q->st.queued -= r->left, q->st.cancelled += r->left;
        r->left = 0;
    } else if (r->waiting)
        clf_queue_pair_drop(q, &q->p[r->pair], r, true, CLF_QUEUE_CLOSED, NULL);
    const bool mine = r->left == 0;
    r->gone = !mine; /* its running sentences' worker frees it */
    clf_queue_idle_check(q);
    pthread_mutex_unlock(&q->mu);
    if (mine)
        clf_queue_req_destroy(r);
}

bool clf_queue_drain(clf_queue_t *q, double seconds)
{
    const struct timespec ts = at_s(clf_now() + (seconds > 0 ? seconds : 0));
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->work); /* rounds waiting to fill go now; a stall ends */
    while (q->st.queued + q->st.running && pthread_cond_timedwait(&q->idle, &q->mu, &ts) != ETIMEDOUT)
        ;
    const bool all = q->st.queued + q->st.running == 0;
    /* what was not started fails: what waits here, and what the worker encodes now when it is back */
    q->refuse = true;
    static const char closing[] = "the server is shutting down: the request was not started";
    for (clf_queue_req_t *r = q->in_head, *next; r; r = next) {
        next = r->next_in;
        r->next_in = NULL;
        r->state = REQ_SCHEDULED;
        q->st.queued -= r->n, q->st.failed += r->n;
        clf_queue_req_fail(r, CLF_QUEUE_CLOSED, closing);
        clf_queue_req_done(q, r, r->n);
    }
    q->in_head = q->in_tail = NULL;
    for (size_t k = 0; k < q->n_pairs; k++)
        clf_queue_pair_drop(q, &q->p[k], NULL, false, CLF_QUEUE_CLOSED, closing);
    pthread_mutex_unlock(&q->mu);
    return all;
}

uint64_t clf_queue_req_ahead(const clf_queue_req_t *r) { return r->taken_last - r->taken_before - r->n; }

unsigned clf_queue_req_wakeups(const clf_queue_req_t *r) { return r->wakeups; }
