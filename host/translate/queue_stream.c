/* queue_stream.c: the translation queue's continuous batching
 * (clformer_serve.h, `continuous`): one stream of the translator
 * (clf_translator_translate_stream) per pair while it has work; between
 * decoding steps the stream takes that pair's next sentences in the
 * queue's round-robin order and hands each back as it finishes. Tags are
 * places in `inflight`, one per sentence the stream may hold. */
#include <stdint.h>
#include <stdlib.h>

#include "base/status.h"
#include "queue_internal.h"

struct flow {
    clf_queue_t *q;
    struct worker *w;
    struct pair *p;
    size_t room, width, live_tokens, taken;
    struct item **inflight; /* (room) the sentences decoding, by tag */
    size_t *free_tag;       /* (room), nfree of them */
    size_t nfree;
};

/* Under the lock: whether another pair waited longer than p's oldest
 * (then p's stream takes no more, ends, and the worker turns to it). */
static bool other_older(const clf_queue_t *q, const struct pair *p)
{
    const double mine = clf_queue_oldest(p);
    for (size_t k = 0; k < q->n_pairs; k++)
        if (&q->p[k] != p && q->p[k].head && clf_queue_oldest(&q->p[k]) < mine)
            return true;
    return false;
}

/* The width is a power of two, at least 64 subwords, at most the
 * translator's limit, that holds the longest of p's first `room` waiting
 * sentences and of its recent ones (clf_queue_recent). The recent ones
 * count because a sentence longer than the width waits for the stream to
 * drain: under steady load, with the width of the first few only (and 32
 * at least), one sentence of 33 subwords emptied a stream of 31, one by
 * one, before a wider one started. 64 holds nearly every sentence of a
 * translation corpus (of Multi30k's test sets, all but a few). The width
 * costs memory (the caches' capacity), not time: attention reads only the
 * keys a sentence has. */
size_t clf_queue_stream_width(const struct pair *p, size_t room, size_t limit)
{
    const size_t *recent = p->recent_longest;
    size_t longest = recent[0] > recent[1] ? recent[0] : recent[1], c = 0;
    for (const struct item *it = p->head; it && c < room; it = it->next, c++)
        longest = it->len > longest ? it->len : longest;
    size_t width = 64;
    while (width < longest)
        width *= 2;
    return width < limit ? width : limit;
}

static size_t flow_take(void *user, size_t room, size_t live, const int32_t **src, size_t *len, void **tag)
{
    struct flow *f = user;
    clf_queue_t *q = f->q;
    struct pair *p = f->p;
    size_t n = 0;
    pthread_mutex_lock(&q->mu);
    clf_queue_busy(f->w, false); /* between steps: back in the queue */
    for (;;) {
        while (clf_queue_intake(q, f->w)) /* what arrived joins the order before anything is taken */
            ;
        while (n < room && f->nfree && p->head && !other_older(q, p) && !clf_queue_fault_due(q, f->w)) {
            const struct item *h = p->head;
            if (h->req->alts) /* its n-best comes from a round (queue.c: worker), after this stream */
                break;
            if (h->len > f->width || ((live || n) && f->live_tokens + h->len + 1 > q->qo.max_batch_tokens))
                break; /* a longer one waits for a stream as wide; the budget is full */
            struct item *it = clf_queue_take(q, p);
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
        clf_queue_count_batch(q, f->w, n);
    }
    if (n || live) { /* decoding again: one step of n + live sentences */
        clf_queue_busy(f->w, true);
        q->st.steps++;
        q->st.step_sentences += n + live;
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

static void flow_give(void *user, void *tag, char *text)
{
    struct flow *f = user;
    clf_queue_t *q = f->q;
    const size_t t = (size_t)(uintptr_t)tag;
    pthread_mutex_lock(&q->mu);
    struct item *it = f->inflight[t];
    f->inflight[t] = NULL;
    f->free_tag[f->nfree++] = t;
    f->live_tokens -= it->len + 1;
    if (text) /* a sentence decoded: the device works */
        f->w->failing = false, f->w->sentences++;
    clf_queue_finish(q, it, text, text ? NULL : clf_ctx_error(clf_translator_ctx(worker_t(f->w, f->p))));
    pthread_mutex_unlock(&q->mu);
}

/* Under the lock (released while decoding): p's stream, room for
 * max_batch_tokens / 16 sentences at most (halved until its decoder takes
 * a quarter of the device's memory or less), as wide as
 * clf_queue_stream_width says, until nothing of p's that fits is left
 * decoding or waiting. */
void clf_queue_flow_run(clf_queue_t *q, struct worker *w, struct pair *p)
{
    clf_translator_t *t = worker_t(w, p);
    /* room for budget/16 sentences: the decoder's buffers are sized for
     * them up front, and most sentences are longer than 16 subwords */
    const size_t limit = clf_translator_max_source(t), fit = q->qo.max_batch_tokens / 16;
    size_t room = q->qo.max_batch_sentences < fit ? q->qo.max_batch_sentences : fit ? fit : 1;
    const size_t width = clf_queue_stream_width(p, room, limit);
    /* and a quarter of the device's memory at most for the decoder */
    const clf_model_t *m = clf_translator_model(t);
    const size_t mem = (size_t)clf_ctx_device(clf_translator_ctx(t))->global_mem / 4;
    while (room > 1 && clf_model_translate_stream_bytes(m, &p->o, room, width) > mem)
        room /= 2;
    struct flow f = {q, w, p, room, width, 0, 0, calloc(room, sizeof *f.inflight), malloc(room * sizeof *f.free_tag), 0};
    if (!f.inflight || !f.free_tag) {
        free(f.inflight), free(f.free_tag);
        clf_queue_fail_waiting(q, p, NULL, CLF_QUEUE_FAILED, "out of host memory for a batch");
        return;
    }
    for (size_t t = 0; t < room; t++)
        f.free_tag[t] = room - 1 - t;
    f.nfree = room;
    clf_status s = clf_queue_call_begin(q, w, p);
    if (s == CLF_OK) {
        pthread_mutex_unlock(&q->mu);
        s = clf_translator_translate_stream(t, &p->o, room, width, flow_take, flow_give, &f);
        pthread_mutex_lock(&q->mu);
    }
    clf_queue_call_end(q, w, p, s);
    if (s != CLF_OK) { /* the sentences still decoding fail with the device's message, or go back to
                        * the queue for the workers left when this one is taken out */
        const char *msg = clf_ctx_error(clf_translator_ctx(t));
        for (size_t k = 0; k < room; k++)
            if (f.inflight[k]) {
                struct item *it = f.inflight[k];
                f.inflight[k] = NULL;
                if (w->out)
                    clf_queue_requeue(q, p, it, msg);
                else
                    clf_queue_finish(q, it, NULL, msg);
            }
        /* refused before it took any: the first waiting request fails, or
         * it would be offered again and again (not when the worker is out:
         * the others may serve it) */
        if (!f.taken && p->head && !w->out)
            clf_queue_fail_waiting(q, p, p->head->req, CLF_QUEUE_FAILED, msg);
    }
    free(f.inflight), free(f.free_tag);
}
