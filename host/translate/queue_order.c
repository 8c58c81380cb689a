/* queue_order.c: the translation queue's order (queue.c says how the
 * queue works): each pair's sentences in round-robin order across
 * requests (schedule), what is submitted encoded and put in that order
 * (intake), a sentence taken, finished, failed, requeued or dropped, a
 * request's end, and a worker's call into a translator with its counters
 * and injected faults. Below queue.c (the queue's life, requests, the
 * worker's rounds) and queue_stream.c (continuous batching), which both
 * call it; it calls neither, so the three files form no cycle. Everything
 * here runs under the queue's lock. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/status.h"
#include "queue_internal.h"

void clf_queue_req_destroy(clf_queue_req_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->items[i].ids), free(r->out[i]);
    for (size_t k = 0; r->alt && k < r->n * r->alts; k++)
        free(r->alt[k]);
    pthread_cond_destroy(&r->done);
    free(r->items), free(r->texts), free(r->fault), free(r->out), free(r->alt), free(r->message), free(r);
}

/* Under the lock: the first failure of r is the one it reports. */
void clf_queue_req_fail(clf_queue_req_t *r, clf_queue_rc rc, const char *msg)
{
    if (r->rc != CLF_QUEUE_OK)
        return;
    r->rc = rc;
    r->message = strdup(msg ? msg : "");
}

/* Under the lock: a drain waits for the queue to empty. */
void clf_queue_idle_check(clf_queue_t *q)
{
    if (q->closed && q->st.queued + q->st.running == 0)
        pthread_cond_broadcast(&q->idle);
}

/* Under the lock: `k` sentences of r are done (or dropped); the last one
 * finishes r, waking its waiters, or frees it when its owner is gone. */
void clf_queue_req_done(clf_queue_t *q, clf_queue_req_t *r, size_t k)
{
    if ((r->left -= k))
        return;
    if (r->gone) {
        clf_queue_req_destroy(r);
        return;
    }
    static const double bounds[] = CLF_QUEUE_LATENCY_BOUNDS;
    const double lat = clf_now() - r->submitted;
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
        clf_queue_req_fail(r, CLF_QUEUE_FAILED, msg);
    }
    free(text);
    free(it->ids), it->ids = NULL;
    clf_queue_req_done(q, r, 1);
    clf_queue_idle_check(q);
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
size_t clf_queue_pair_drop(clf_queue_t *q, struct pair *p, clf_queue_req_t *only, bool cancel,
                           clf_queue_rc rc, const char *msg)
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
            clf_queue_req_fail(r, rc, msg);
            clf_queue_req_done(q, r, 1);
        }
    }
    clf_queue_idle_check(q);
    return dropped;
}

void clf_queue_fail_waiting(clf_queue_t *q, struct pair *p, clf_queue_req_t *r, clf_queue_rc rc, const char *msg)
{
    clf_queue_pair_drop(q, p, r, false, rc, msg);
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
                clf_queue_req_fail(r, CLF_QUEUE_FAILED, r->fault ? r->fault : "out of host memory for a message");
            else
                clf_queue_req_fail(r, CLF_QUEUE_CLOSED, "the server is shutting down: the request was not started");
            clf_queue_req_done(q, r, r->n);
        } else
            schedule(q, r);
    }
    clf_queue_idle_check(q);
    if (q->n_workers > 1) /* the others may take some of it */
        pthread_cond_broadcast(&q->work);
    return true;
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
    const double now = clf_now();
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
