/* queue.c: the translation queue (clformer_serve.h). One mutex guards
 * everything; each pair keeps its waiting sentences in arrival order
 * (a singly linked FIFO of items). The worker encodes new items, picks a
 * round (see the header), translates it without the lock, and hands the
 * outputs back; a request is freed by whichever of its owner and the
 * worker lets go of it last. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "clformer_serve.h"

struct item {
    struct item *next;
    clf_queue_req_t *req;
    size_t at;        /* the sentence's index in its request */
    char *text;       /* until encoded */
    int32_t *ids;     /* after */
    size_t len;
    bool encoded;
    double arrived;   /* seconds, CLOCK_MONOTONIC */
};

struct clf_queue_req {
    clf_queue_t *q;
    size_t n, left;   /* sentences, those not done */
    char **out;
    clf_queue_rc rc;
    char *message;
    double submitted;
    bool gone;        /* freed by its owner while not done */
};

struct pair {
    clf_translator_t *t;
    struct clf_translate_opts o;
    struct item *head, *tail;
    size_t waiting;
};

struct clf_queue {
    pthread_mutex_t mu;
    pthread_cond_t work, done; /* the worker waits on work; requests on done */
    pthread_t worker;
    struct pair *p;
    size_t n_pairs;
    struct clf_queue_opts qo;
    bool closed, stop;
    struct clf_queue_stats st;
};

static double now_s(void)
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

static void item_free(struct item *it)
{
    free(it->text), free(it->ids), free(it);
}

static void req_destroy(clf_queue_req_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->out[i]);
    free(r->out), free(r->message), free(r);
}

/* Under the lock: the first failure of r is the one it reports. */
static void req_fail(clf_queue_req_t *r, clf_queue_rc rc, const char *msg)
{
    if (r->rc != CLF_QUEUE_OK)
        return;
    r->rc = rc;
    r->message = strdup(msg);
}

/* Under the lock: one sentence of r is done (or dropped); the last one
 * finishes r, or frees it when its owner is gone. */
static void req_one_done(clf_queue_t *q, clf_queue_req_t *r)
{
    if (--r->left)
        return;
    if (r->gone) {
        req_destroy(r);
        return;
    }
    static const double bounds[] = CLF_QUEUE_LATENCY_BOUNDS;
    const double lat = now_s() - r->submitted;
    size_t b = 0;
    while (b < CLF_QUEUE_LATENCY_BUCKETS - 1 && lat > bounds[b])
        b++;
    q->st.latency_hist[b]++;
    q->st.latency_sum += lat;
    pthread_cond_broadcast(&q->done);
}

/* Under the lock: unlinks p's items of request `only` (its owner cancels
 * it), or all of them, failing them with rc and msg. */
static void pair_drop(clf_queue_t *q, struct pair *p, const clf_queue_req_t *only, clf_queue_rc rc, const char *msg)
{
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
        p->waiting--, q->st.queued--;
        if (only) {
            q->st.cancelled++;
            it->req->left--; /* its owner is freeing it: clf_queue_req_free */
        } else {
            q->st.failed++;
            req_fail(it->req, rc, msg);
            req_one_done(q, it->req);
        }
        item_free(it);
    }
}

/* Under the lock: encodes every new item (fast next to a search); one
 * that fails fails its request. */
static void encode_new(clf_queue_t *q)
{
    for (size_t k = 0; k < q->n_pairs; k++) {
        struct pair *p = &q->p[k];
        const size_t limit = clf_translator_max_source(p->t);
        for (struct item **link = &p->head, *prev = NULL; *link;) {
            struct item *it = *link;
            if (it->encoded) {
                prev = it, link = &it->next;
                continue;
            }
            if (clf_translator_encode(p->t, it->text, &it->ids, &it->len) == CLF_OK) {
                it->encoded = true;
                free(it->text);
                it->text = NULL;
                if (it->len > limit)
                    it->len = limit;
                prev = it, link = &it->next;
                continue;
            }
            req_fail(it->req, CLF_QUEUE_FAILED, clf_ctx_error(clf_translator_ctx(p->t)));
            *link = it->next;
            if (p->tail == it)
                p->tail = prev;
            p->waiting--, q->st.queued--, q->st.failed++;
            req_one_done(q, it->req);
            item_free(it);
        }
    }
}

/* Under the lock: how many of p's first items make a round, and whether
 * the round is full (the budget leaves no room for the next one). */
static size_t round_size(const clf_queue_t *q, const struct pair *p, bool *full)
{
    size_t c = 0, tokens = 0;
    *full = false;
    for (const struct item *it = p->head; it; it = it->next) {
        if (c == q->qo.max_batch_sentences || (c && tokens + it->len + 1 > q->qo.max_batch_tokens)) {
            *full = true;
            break;
        }
        tokens += it->len + 1, c++;
    }
    if (c == q->qo.max_batch_sentences || tokens >= q->qo.max_batch_tokens)
        *full = true;
    return c;
}

/* Under the lock: a batch of n sentences (a round, or a stream's newcomers)
 * in the counters. */
static void count_batch(clf_queue_t *q, size_t n)
{
    static const double bounds[] = CLF_QUEUE_BATCH_BOUNDS;
    size_t b = 0;
    while (b < CLF_QUEUE_BATCH_BUCKETS - 1 && (double)n > bounds[b])
        b++;
    q->st.batch_hist[b]++;
    q->st.batches++;
    q->st.batch_sentences += n;
}

/* Continuous batching: one stream of the translator per pair while it has
 * work. Tags are places in `inflight`, one per sentence the stream may
 * hold. */
struct flow {
    clf_queue_t *q;
    struct pair *p;
    size_t room, width, live_tokens, taken;
    struct item **inflight;  /* (room) the sentences decoding, by tag */
    size_t *free_tag;        /* (room), nfree of them */
    size_t nfree;
};

/* Under the lock: whether another pair waited longer than p's oldest
 * (then p's stream takes no more, ends, and the worker turns to it). */
static bool other_older(const clf_queue_t *q, const struct pair *p)
{
    for (size_t k = 0; k < q->n_pairs; k++)
        if (&q->p[k] != p && q->p[k].head && (!p->head || q->p[k].head->arrived < p->head->arrived))
            return true;
    return false;
}

static size_t flow_take(void *user, size_t room, size_t live, const int32_t **src, size_t *len, void **tag)
{
    struct flow *f = user;
    clf_queue_t *q = f->q;
    struct pair *p = f->p;
    size_t n = 0;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        encode_new(q);
        while (n < room && f->nfree && p->head && !other_older(q, p)) {
            struct item *it = p->head;
            if (it->len > f->width || ((live || n) && f->live_tokens + it->len + 1 > q->qo.max_batch_tokens))
                break;  /* a longer one waits for a stream as wide; the budget is full */
            p->head = it->next;
            if (!p->head)
                p->tail = NULL;
            const size_t t = f->free_tag[--f->nfree];
            f->inflight[t] = it;
            src[n] = it->ids, len[n] = it->len, tag[n] = (void *)(uintptr_t)t;
            f->live_tokens += it->len + 1;
            n++;
        }
        /* idle with nothing of this pair's waiting: the stream (and its
         * decoder's buffers) waits for the next sentence, unless the queue
         * stops or drains, or what waits needs another stream */
        if (n || live || p->head || q->stop || q->closed || other_older(q, p))
            break;
        pthread_cond_wait(&q->work, &q->mu);
    }
    if (n) {
        f->taken += n;
        p->waiting -= n, q->st.queued -= n, q->st.running += n;
        count_batch(q, n);
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Under the lock: the sentence in place t is done (text NULL: failed with
 * msg) and leaves the stream. */
static void flow_done(struct flow *f, size_t t, char *text, const char *msg)
{
    clf_queue_t *q = f->q;
    struct item *it = f->inflight[t];
    clf_queue_req_t *r = it->req;
    f->inflight[t] = NULL;
    f->free_tag[f->nfree++] = t;
    f->live_tokens -= it->len + 1;
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
    req_one_done(q, r);
    item_free(it);
}

static void flow_give(void *user, void *tag, char *text)
{
    struct flow *f = user;
    pthread_mutex_lock(&f->q->mu);
    flow_done(f, (size_t)(uintptr_t)tag, text,
              text ? NULL : clf_ctx_error(clf_translator_ctx(f->p->t)));
    pthread_cond_broadcast(&f->q->done);
    pthread_mutex_unlock(&f->q->mu);
}

/* Under the lock (released while decoding): p's stream, room for
 * max_batch_tokens / 16 sentences at most (halved until its decoder takes
 * a quarter of the device's memory or less), as wide as the
 * longest of its first waiting sentences (a power of two, at least 32
 * subwords, at most the translator's limit), until nothing of p's that fits
 * is left decoding or waiting. */
static void flow_run(clf_queue_t *q, struct pair *p)
{
    /* room for budget/16 sentences: the decoder's buffers are sized for
     * them up front, and most sentences are longer than 16 subwords */
    const size_t limit = clf_translator_max_source(p->t), fit = q->qo.max_batch_tokens / 16;
    size_t room = q->qo.max_batch_sentences < fit ? q->qo.max_batch_sentences : fit ? fit : 1;
    size_t longest = 1, c = 0;
    for (const struct item *it = p->head; it && c < room; it = it->next, c++)
        longest = it->len > longest ? it->len : longest;
    size_t width = 32;
    while (width < longest)
        width *= 2;
    width = width < limit ? width : limit;
    /* and a quarter of the device's memory at most for the decoder */
    const clf_model_t *m = clf_translator_model(p->t);
    const size_t mem = (size_t)clf_ctx_device(clf_translator_ctx(p->t))->global_mem / 4;
    while (room > 1 && clf_model_translate_stream_bytes(m, &p->o, room, width) > mem)
        room /= 2;
    struct flow f = {q, p, room, width, 0, 0, calloc(room, sizeof *f.inflight), malloc(room * sizeof *f.free_tag), 0};
    if (!f.inflight || !f.free_tag) {
        free(f.inflight), free(f.free_tag);
        pair_drop(q, p, NULL, CLF_QUEUE_FAILED, "out of host memory for a batch");
        return;
    }
    for (size_t t = 0; t < room; t++)
        f.free_tag[t] = room - 1 - t;
    f.nfree = room;
    pthread_mutex_unlock(&q->mu);
    const clf_status s = clf_translator_translate_stream(p->t, &p->o, room, width, flow_take, flow_give, &f);
    pthread_mutex_lock(&q->mu);
    if (s != CLF_OK) {  /* the sentences still decoding fail with the device's message */
        const char *msg = clf_ctx_error(clf_translator_ctx(p->t));
        for (size_t t = 0; t < room; t++)
            if (f.inflight[t])
                flow_done(&f, t, NULL, msg);
        /* refused before it took any: the oldest fails, or it would be offered again and again */
        for (struct item *it = f.taken ? NULL : p->head; it; it = p->head) {
            p->head = it->next;
            if (!p->head)
                p->tail = NULL;
            p->waiting--, q->st.queued--, q->st.failed++;
            req_fail(it->req, CLF_QUEUE_FAILED, msg);
            clf_queue_req_t *r = it->req;
            const bool last = it->next == NULL || it->next->req != r;
            item_free(it);
            req_one_done(q, r);
            if (last)
                break;
        }
    }
    free(f.inflight), free(f.free_tag);
    pthread_cond_broadcast(&q->done);
}

static void *worker(void *arg)
{
    clf_queue_t *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        encode_new(q);
        struct pair *p = NULL;
        for (size_t k = 0; k < q->n_pairs; k++)
            if (q->p[k].head && (!p || q->p[k].head->arrived < p->head->arrived))
                p = &q->p[k];
        if (!p) {
            if (q->stop)
                break;
            pthread_cond_wait(&q->work, &q->mu);
            continue;
        }
        if (q->qo.continuous) {  /* no wait: the next ones join at the next step */
            flow_run(q, p);
            continue;
        }
        bool full;
        const size_t c = round_size(q, p, &full);
        const double deadline = p->head->arrived + q->qo.batch_wait_ms * 1e-3;
        if (!full && !q->closed && now_s() < deadline) {
            const struct timespec ts = at_s(deadline);
            pthread_cond_timedwait(&q->work, &q->mu, &ts);
            continue;
        }
        struct item **items = malloc(c * sizeof *items);
        const int32_t **src = malloc(c * sizeof *src);
        size_t *len = malloc(c * sizeof *len);
        char **out = calloc(c, sizeof *out);
        if (!items || !src || !len || !out) {
            free(items), free(src), free(len), free(out);
            pair_drop(q, p, NULL, CLF_QUEUE_FAILED, "out of host memory for a batch");
            continue;
        }
        size_t tokens = 0;
        for (size_t j = 0; j < c; j++) {
            struct item *it = p->head;
            p->head = it->next;
            items[j] = it, src[j] = it->ids, len[j] = it->len;
            tokens += it->len + 1;
        }
        if (!p->head)
            p->tail = NULL;
        p->waiting -= c, q->st.queued -= c, q->st.running += c;
        const struct clf_batching b = {.sentences = c, .tokens = q->qo.max_batch_tokens};
        pthread_mutex_unlock(&q->mu);
        const clf_status s = clf_translator_translate_ids(p->t, src, len, c, &p->o, b, out, NULL, NULL, NULL);
        pthread_mutex_lock(&q->mu);
        count_batch(q, c);
        q->st.running -= c;
        if (s == CLF_OK)
            q->st.sentences += c, q->st.source_tokens += tokens;
        else
            q->st.failed += c;
        const char *msg = s == CLF_OK ? NULL : clf_ctx_error(clf_translator_ctx(p->t));
        for (size_t j = 0; j < c; j++) {
            clf_queue_req_t *r = items[j]->req;
            if (s != CLF_OK)
                req_fail(r, CLF_QUEUE_FAILED, msg);
            else if (!r->gone)
                r->out[items[j]->at] = out[j], out[j] = NULL;
            free(out[j]);
            req_one_done(q, r);
            item_free(items[j]);
        }
        free(items), free(src), free(len), free(out);
        pthread_cond_broadcast(&q->done); /* a drain waits on the queue's length */
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

clf_status clf_queue_init(clf_translator_t *const *t, size_t n, const struct clf_translate_opts *opts,
                          const struct clf_queue_opts *qo, clf_queue_t **q)
{
    *q = NULL;
    if (n == 0)
        return clf_error_set(NULL, CLF_ERR_ARG, "a translation queue needs at least one translator");
    clf_queue_t *x = calloc(1, sizeof *x);
    if (!x || !(x->p = calloc(n, sizeof *x->p))) {
        free(x);
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory for a translation queue");
    }
    x->n_pairs = n;
    x->qo = qo ? *qo : (struct clf_queue_opts){0};
    x->qo.max_batch_tokens = x->qo.max_batch_tokens ? x->qo.max_batch_tokens : 4096;
    x->qo.max_batch_sentences = x->qo.max_batch_sentences ? x->qo.max_batch_sentences : 256;
    for (size_t i = 0; i < n; i++) {
        x->p[i] = (struct pair){.t = t[i], .o = opts ? opts[i] : clf_translator_opts(t[i])};
        x->p[i].o.nbest = 1; /* one translation a sentence */
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->work, &ca);
    pthread_cond_init(&x->done, &ca);
    pthread_condattr_destroy(&ca);
    const int e = pthread_create(&x->worker, NULL, worker, x);
    if (e) {
        pthread_mutex_destroy(&x->mu), pthread_cond_destroy(&x->work), pthread_cond_destroy(&x->done);
        free(x->p), free(x);
        return clf_error_set(NULL, CLF_ERR_MEMORY, "cannot start the translation queue's worker: %s", strerror(e));
    }
    *q = x;
    return CLF_OK;
}

void clf_queue_free(clf_queue_t *q)
{
    if (!q)
        return;
    clf_queue_drain(q, 0);
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->worker, NULL);
    pthread_mutex_destroy(&q->mu), pthread_cond_destroy(&q->work), pthread_cond_destroy(&q->done);
    free(q->p), free(q);
}

clf_queue_rc clf_queue_submit(clf_queue_t *q, size_t pair, const char *const *src, size_t n, clf_queue_req_t **r)
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
    clf_queue_req_t *x = calloc(1, sizeof *x);
    struct item **its = calloc(n ? n : 1, sizeof *its);
    bool ok = x && its && (x->out = calloc(n ? n : 1, sizeof *x->out));
    const double t0 = now_s();
    for (size_t i = 0; ok && i < n; i++) {
        ok = (its[i] = calloc(1, sizeof **its)) && (its[i]->text = strdup(src[i]));
        if (ok)
            *its[i] = (struct item){.req = x, .at = i, .text = its[i]->text, .arrived = t0};
    }
    if (!ok) {
        for (size_t i = 0; its && i < n && its[i]; i++)
            item_free(its[i]);
        free(its);
        if (x)
            free(x->out), free(x);
        clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory for a request of %zu sentences", n);
        return CLF_QUEUE_INVALID;
    }
    *x = (struct clf_queue_req){.q = q, .n = n, .left = n, .out = x->out, .submitted = t0};
    pthread_mutex_lock(&q->mu);
    const clf_queue_rc rc = q->closed ? CLF_QUEUE_CLOSED
                            : q->qo.max_queued && q->st.queued + n > q->qo.max_queued ? CLF_QUEUE_FULL
                                                                                       : CLF_QUEUE_OK;
    if (rc == CLF_QUEUE_OK) {
        struct pair *p = &q->p[pair];
        for (size_t i = 0; i < n; i++) {
            if (p->tail)
                p->tail->next = its[i];
            else
                p->head = its[i];
            p->tail = its[i];
        }
        p->waiting += n, q->st.queued += n, q->st.requests++;
        pthread_cond_signal(&q->work);
    } else if (rc == CLF_QUEUE_FULL)
        q->st.rejected++;
    pthread_mutex_unlock(&q->mu);
    if (rc != CLF_QUEUE_OK) {
        for (size_t i = 0; i < n; i++)
            item_free(its[i]);
        req_destroy(x);
        x = NULL;
        clf_error_set(NULL, CLF_ERR_ARG, rc == CLF_QUEUE_FULL ? "the translation queue is full: try again later"
                                                               : "the translation queue is draining");
    }
    free(its);
    *r = x;
    return rc;
}

bool clf_queue_wait(clf_queue_req_t *r, long timeout_ms)
{
    clf_queue_t *q = r->q;
    const struct timespec ts = at_s(now_s() + (timeout_ms > 0 ? timeout_ms : 0) * 1e-3);
    pthread_mutex_lock(&q->mu);
    while (r->left) {
        if (timeout_ms < 0)
            pthread_cond_wait(&q->done, &q->mu);
        else if (pthread_cond_timedwait(&q->done, &q->mu, &ts) == ETIMEDOUT)
            break;
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

void clf_queue_req_free(clf_queue_req_t *r)
{
    if (!r)
        return;
    clf_queue_t *q = r->q;
    pthread_mutex_lock(&q->mu);
    for (size_t k = 0; k < q->n_pairs && r->left; k++)
        pair_drop(q, &q->p[k], r, CLF_QUEUE_CLOSED, NULL);
    const bool mine = r->left == 0;
    r->gone = !mine; /* its running sentences' worker frees it */
    pthread_cond_broadcast(&q->done); /* a drain waits on the queue's length */
    pthread_mutex_unlock(&q->mu);
    if (mine)
        req_destroy(r);
}

bool clf_queue_drain(clf_queue_t *q, double seconds)
{
    const struct timespec ts = at_s(now_s() + (seconds > 0 ? seconds : 0));
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_signal(&q->work); /* rounds waiting to fill go now */
    while (q->st.queued + q->st.running &&
           pthread_cond_timedwait(&q->done, &q->mu, &ts) != ETIMEDOUT)
        ;
    const bool all = q->st.queued + q->st.running == 0;
    for (size_t k = 0; k < q->n_pairs; k++)
        pair_drop(q, &q->p[k], NULL, CLF_QUEUE_CLOSED, "the server is shutting down: the request was not started");
    pthread_mutex_unlock(&q->mu);
    return all;
}

void clf_queue_stats(clf_queue_t *q, struct clf_queue_stats *s)
{
    pthread_mutex_lock(&q->mu);
    *s = q->st;
    pthread_mutex_unlock(&q->mu);
}

size_t clf_queue_pairs(const clf_queue_t *q) { return q->n_pairs; }
