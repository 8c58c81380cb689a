/* queue.c: the translation queue (clformer_serve.h): requests, their
 * round-robin order, encoding, rounds (its counters and health are
 * queue_health.c's). One mutex guards the queue
 * (queue_internal.h); a submitted request waits in an incoming list until
 * the worker encodes it without the lock, then its sentences join its
 * pair's order (schedule). The worker picks a round (see the header) or
 * runs a stream (queue_stream.c), translates without the lock, and hands
 * the outputs back, waking each request once, when it is done. A request
 * is freed by whichever of its owner and the worker lets go of it last. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "queue_internal.h"
#include "runtime/settings.h"

double clf_queue_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct timespec at_s(double t)
{
    struct timespec ts = {.tv_sec = (time_t)t};
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    return ts;
}

static void req_destroy(clf_queue_req_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->items[i].ids), free(r->out[i]);
    for (size_t k = 0; r->alt && k < r->n * r->alts; k++)
        free(r->alt[k]);
    pthread_cond_destroy(&r->done);
    free(r->items), free(r->texts), free(r->fault), free(r->out), free(r->alt), free(r->message), free(r);
}

/* Under the lock: the first failure of r is the one it reports. */
static void req_fail(clf_queue_req_t *r, clf_queue_rc rc, const char *msg)
{
    if (r->rc != CLF_QUEUE_OK)
        return;
    r->rc = rc;
    r->message = strdup(msg ? msg : "");
}

/* Under the lock: a drain waits for the queue to empty. */
static void idle_check(clf_queue_t *q)
{
    if (q->closed && q->st.queued + q->st.running == 0)
        pthread_cond_broadcast(&q->idle);
}

/* Under the lock: `k` sentences of r are done (or dropped); the last one
 * finishes r, waking its waiters, or frees it when its owner is gone. */
static void req_done(clf_queue_t *q, clf_queue_req_t *r, size_t k)
{
    if ((r->left -= k))
        return;
    if (r->gone) {
        req_destroy(r);
        return;
    }
    static const double bounds[] = CLF_QUEUE_LATENCY_BOUNDS;
    const double lat = clf_queue_now() - r->submitted;
    size_t b = 0;
    while (b < CLF_QUEUE_LATENCY_BUCKETS - 1 && lat > bounds[b])
        b++;
    q->st.latency_hist[b]++;
    q->st.latency_sum += lat;
    pthread_cond_broadcast(&r->done);
}

/* Under the lock: r no longer has sentences waiting in p. */
static void unlink_waiting(struct pair *p, clf_queue_req_t *r)
{
    *(r->prev_w ? &r->prev_w->next_w : &p->oldest) = r->next_w;
    *(r->next_w ? &r->next_w->prev_w : &p->newest) = r->prev_w;
    r->prev_w = r->next_w = NULL;
}

/* Whether a goes before b in a pair's order. */
static bool precedes(const struct item *a, const struct item *b)
{
    return a->tag < b->tag || (a->tag == b->tag && a->req->seq < b->req->seq);
}

/* Under the lock: r's encoded sentences join its pair's order. Sentence i
 * gets tag from + 1 + i, where `from` is the pair's virtual time (the
 * largest tag taken), or its client's last waiting tag when that is
 * larger; the order is by tag, then by arrival. So each request (or
 * client) with sentences waiting has one in every run of equal tags: the
 * worker, taking in order, takes one of each in turn, in order of arrival
 * (round-robin), and a newcomer goes after at most one sentence of each
 * request already waiting. A newcomer's sentences are merged in one pass
 * (their tags rise), so a request of n costs O(n + waiting). */
static void schedule(clf_queue_t *q, clf_queue_req_t *r)
{
    struct pair *p = &q->p[r->pair];
    uint64_t from = p->vtime;
    if (r->client)
        for (const clf_queue_req_t *o = p->oldest; o; o = o->next_w)
            if (o->client == r->client && o->last_tag > from)
                from = o->last_tag;
    for (size_t i = 0; i < r->n; i++)
        r->items[i].tag = from + 1 + i;
    /* behind everything (the common case, and a hog's): no walk */
    struct item **link = p->tail && precedes(p->tail, &r->items[0]) ? &p->tail->next : &p->head;
    for (size_t i = 0; i < r->n; i++) {
        struct item *it = &r->items[i];
        while (*link && precedes(*link, it))
            link = &(*link)->next;
        it->next = *link;
        *link = it;
        if (!it->next)
            p->tail = it;
        link = &it->next;
    }
    r->last_tag = from + r->n;
    r->waiting = r->n;
    r->prev_w = p->newest, r->next_w = NULL;
    *(p->newest ? &p->newest->next_w : &p->oldest) = r;
    p->newest = r;
}

double clf_queue_oldest(const struct pair *p) { return p->oldest ? p->oldest->submitted : HUGE_VAL; }

void clf_queue_recent(struct pair *p, size_t len)
{
    if (p->recent_n++ == CLF_QUEUE_RECENT) /* a new block begins; the one before it is remembered */
        p->recent_longest[1] = p->recent_longest[0], p->recent_longest[0] = 0, p->recent_n = 1;
    p->recent_longest[0] = len > p->recent_longest[0] ? len : p->recent_longest[0];
}

struct item *clf_queue_take(clf_queue_t *q, struct pair *p)
{
    struct item *it = p->head;
    p->head = it->next;
    if (!p->head)
        p->tail = NULL;
    it->next = NULL;
    p->vtime = it->tag > p->vtime ? it->tag : p->vtime;
    clf_queue_recent(p, it->len);
    clf_queue_req_t *r = it->req;
    q->taken++;
    if (--r->waiting == 0) {
        unlink_waiting(p, r);
        r->taken_last = q->taken;
    }
    q->st.queued--, q->st.running++;
    return it;
}

void clf_queue_finish(clf_queue_t *q, struct item *it, char *text, const char *msg)
{
    clf_queue_req_t *r = it->req;
    q->st.running--;
    if (text) {
        q->st.sentences++, q->st.source_tokens += it->len + 1;
        if (!r->gone)
            r->out[it->at] = text, text = NULL;
    } else {
        q->st.failed++;
        req_fail(r, CLF_QUEUE_FAILED, msg);
    }
    free(text);
    free(it->ids), it->ids = NULL;
    req_done(q, r, 1);
    idle_check(q);
}

void clf_queue_requeue(clf_queue_t *q, struct pair *p, struct item *it, const char *msg)
{
    if (q->refuse) { /* a drain failed what was not started: this is not started either */
        clf_queue_finish(q, it, NULL, msg);
        return;
    }
    clf_queue_req_t *r = it->req;
    struct item **link = &p->head;
    while (*link && precedes(*link, it))
        link = &(*link)->next;
    it->next = *link;
    *link = it;
    if (!it->next)
        p->tail = it;
    if (r->waiting++ == 0) { /* back among the requests waiting, in its place by arrival */
        clf_queue_req_t *o = p->newest;
        while (o && o->seq > r->seq)
            o = o->prev_w;
        r->prev_w = o, r->next_w = o ? o->next_w : p->oldest;
        *(o ? &o->next_w : &p->oldest) = r;
        *(r->next_w ? &r->next_w->prev_w : &p->newest) = r;
    }
    q->st.running--, q->st.queued++;
    pthread_cond_broadcast(&q->work); /* for the workers still serving */
}

/* Under the lock: unlinks p's waiting sentences of request `only` (NULL:
 * of every request); fails them with rc and msg, or, when its owner
 * cancels (cancel), drops them; how many. */
static size_t pair_drop(clf_queue_t *q, struct pair *p, clf_queue_req_t *only, bool cancel, clf_queue_rc rc,
                        const char *msg)
{
    size_t dropped = 0;
    struct item **link = &p->head, *prev = NULL;
    while (*link) {
        struct item *it = *link;
        if (only && it->req != only) {
            prev = it, link = &it->next;
            continue;
        }
        *link = it->next;
        if (p->tail == it)
            p->tail = prev;
        clf_queue_req_t *r = it->req;
        q->st.queued--, dropped++;
        free(it->ids), it->ids = NULL;
        if (--r->waiting == 0)
            unlink_waiting(p, r);
        if (cancel) {
            q->st.cancelled++;
            r->left--; /* its owner is freeing it: clf_queue_req_free */
        } else {
            q->st.failed++;
            req_fail(r, rc, msg);
            req_done(q, r, 1);
        }
    }
    idle_check(q);
    return dropped;
}

void clf_queue_fail_waiting(clf_queue_t *q, struct pair *p, clf_queue_req_t *r, clf_queue_rc rc, const char *msg)
{
    pair_drop(q, p, r, false, rc, msg);
}

/* Encodes r's sentences (the worker, without the lock: r is REQ_ENCODING,
 * which keeps its owner away); a failure sets r->unencoded and r->fault. */
static void encode(clf_queue_t *q, struct worker *w, clf_queue_req_t *r)
{
    clf_translator_t *t = worker_t(w, &q->p[r->pair]);
    const size_t limit = clf_translator_max_source(t);
    for (size_t i = 0; i < r->n; i++) {
        struct item *it = &r->items[i];
        if (clf_translator_encode(t, it->text, &it->ids, &it->len) != CLF_OK) {
            const char *e = clf_ctx_error(clf_translator_ctx(t));
            r->unencoded = true;
            const size_t sz = strlen(e) + 64;
            if ((r->fault = malloc(sz)))
                snprintf(r->fault, sz, "encoding sentence %zu: %s", i + 1, e);
            return;
        }
        if (it->len > limit)
            it->len = limit;
        it->text = NULL;
    }
    free(r->texts), r->texts = NULL;
}

bool clf_queue_intake(clf_queue_t *q, struct worker *w)
{
    clf_queue_req_t *batch = q->in_head;
    if (!batch)
        return false;
    q->in_head = q->in_tail = NULL;
    for (clf_queue_req_t *r = batch; r; r = r->next_in)
        r->state = REQ_ENCODING;
    pthread_mutex_unlock(&q->mu);
    for (clf_queue_req_t *r = batch; r; r = r->next_in)
        encode(q, w, r);
    pthread_mutex_lock(&q->mu);
    for (clf_queue_req_t *r = batch, *next; r; r = next) {
        next = r->next_in;
        r->next_in = NULL;
        r->state = REQ_SCHEDULED;
        if (r->freeing) /* its owner waits to cancel it: it does so from its pair's order */
            pthread_cond_broadcast(&r->done);
        if (r->unencoded || q->refuse) {
            /* one sentence that cannot be encoded fails its whole request at once */
            q->st.queued -= r->n, q->st.failed += r->n;
            if (r->unencoded)
                req_fail(r, CLF_QUEUE_FAILED, r->fault ? r->fault : "out of host memory for a message");
            else
                req_fail(r, CLF_QUEUE_CLOSED, "the server is shutting down: the request was not started");
            req_done(q, r, r->n);
        } else
            schedule(q, r);
    }
    idle_check(q);
    if (q->n_workers > 1) /* the others may take some of it */
        pthread_cond_broadcast(&q->work);
    return true;
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

void clf_queue_count_batch(clf_queue_t *q, struct worker *w, size_t n)
{
    w->batches++;
    static const double bounds[] = CLF_QUEUE_BATCH_BOUNDS;
    size_t b = 0;
    while (b < CLF_QUEUE_BATCH_BUCKETS - 1 && (double)n > bounds[b])
        b++;
    q->st.batch_hist[b]++;
    q->st.batches++;
    q->st.batch_sentences += n;
}

/* Whether CLF_FAULT_QUEUE's fault is w's (no @W: every worker's). */
static bool fault_mine(const clf_queue_t *q, const struct worker *w)
{
    return q->fault_worker == SIZE_MAX || q->fault_worker == w->id;
}

bool clf_queue_fault_due(const clf_queue_t *q, const struct worker *w)
{
    /* fail-after:N counts the queue's batches, fail-after:N@W worker W's */
    const uint64_t done = q->fault_worker == SIZE_MAX ? q->st.batches : w->batches;
    return q->fault == FAULT_FAIL_AFTER && fault_mine(q, w) && done >= q->fault_after;
}

void clf_queue_busy(struct worker *w, bool busy)
{
    const double now = clf_queue_now();
    if (w->busy)
        w->busy_total += now - w->busy_since;
    w->busy = busy, w->busy_since = now;
}

clf_status clf_queue_call_begin(clf_queue_t *q, struct worker *w, struct pair *p)
{
    clf_queue_busy(w, true);
    while (q->fault == FAULT_STALL && fault_mine(q, w) && !q->closed && !q->stop) /* a hung device */
        pthread_cond_wait(&q->work, &q->mu);
    if (clf_queue_fault_due(q, w))
        return clf_error_set(clf_translator_ctx(worker_t(w, p)), CLF_ERR_OPENCL,
                             "the device failed (injected: CLF_FAULT_QUEUE=fail-after:%llu, after %llu batches)",
                             (unsigned long long)q->fault_after,
                             (unsigned long long)(q->fault_worker == SIZE_MAX ? q->st.batches : w->batches));
    return CLF_OK;
}

void clf_queue_call_end(clf_queue_t *q, struct worker *w, struct pair *p, clf_status s)
{
    clf_queue_busy(w, false);
    /* a request's bad option (CLF_ERR_ARG, UNSUPPORTED) or input is not the device's failure */
    const bool device = s == CLF_ERR_OPENCL || s == CLF_ERR_NO_DEVICE || s == CLF_ERR_BUILD ||
                        s == CLF_ERR_BLAS || s == CLF_ERR_MEMORY;
    if (s == CLF_OK)
        w->failing = false;
    else if (device) {
        w->failing = true, w->device_failures++;
        snprintf(w->fail_msg, sizeof w->fail_msg, "%s: %s", clf_status_str(s),
                 clf_ctx_error(clf_translator_ctx(worker_t(w, p))));
        if (q->live > 1) /* the others serve: this one's device is not to be trusted again */
            w->out = true, q->live--;
    }
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
        pair_drop(q, p, NULL, false, CLF_QUEUE_FAILED, "out of host memory for a batch");
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
        if (!full && !q->closed && clf_queue_now() < deadline) {
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
    free(q->p), free(q->w), free(q);
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
    if (!x || !(x->p = calloc(n, sizeof *x->p)) || !(x->w = calloc(workers, sizeof *x->w))) {
        if (x)
            free(x->p);
        free(x);
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory for a translation queue");
    }
    x->n_workers = x->live = workers;
    const clf_status fs = fault_read(x);
    if (fs != CLF_OK) {
        free(x->p), free(x->w), free(x);
        return fs;
    }
    x->started = clf_queue_now();
    for (size_t k = 0; k < workers; k++)
        x->w[k] = (struct worker){.q = x, .id = k, .t = (clf_translator_t **)t + k * n};
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
    const double t0 = clf_queue_now();
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
        req_destroy(x);
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
    const struct timespec ts = at_s(clf_queue_now() + (timeout_ms > 0 ? timeout_ms : 0) * 1e-3);
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
        pair_drop(q, &q->p[r->pair], r, true, CLF_QUEUE_CLOSED, NULL);
    const bool mine = r->left == 0;
    r->gone = !mine; /* its running sentences' worker frees it */
    idle_check(q);
    pthread_mutex_unlock(&q->mu);
    if (mine)
        req_destroy(r);
}

bool clf_queue_drain(clf_queue_t *q, double seconds)
{
    const struct timespec ts = at_s(clf_queue_now() + (seconds > 0 ? seconds : 0));
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
        req_fail(r, CLF_QUEUE_CLOSED, closing);
        req_done(q, r, r->n);
    }
    q->in_head = q->in_tail = NULL;
    for (size_t k = 0; k < q->n_pairs; k++)
        pair_drop(q, &q->p[k], NULL, false, CLF_QUEUE_CLOSED, closing);
    pthread_mutex_unlock(&q->mu);
    return all;
}

uint64_t clf_queue_req_ahead(const clf_queue_req_t *r) { return r->taken_last - r->taken_before - r->n; }

unsigned clf_queue_req_wakeups(const clf_queue_req_t *r) { return r->wakeups; }
