/* queue_health.c: what the translation queue (include/clformer/serve.h)
 * says of itself: its counters, each worker's, and its health (a worker
 * stuck in one translator call, or taken out or failing after a failed
 * batch; the queue degraded while some still serve). Readers only, each
 * under the queue's mutex (queue_internal.h) for a consistent view; split
 * from queue.c and queue_order.c, which change the state they read. */
#include <stdio.h>

#include "base/clock.h"
#include "queue_internal.h"

void clf_queue_stats(clf_queue_t *q, struct clf_queue_stats *s)
{
    pthread_mutex_lock(&q->mu);
    *s = q->st;
    pthread_mutex_unlock(&q->mu);
}

size_t clf_queue_pairs(const clf_queue_t *q) { return q->n_pairs; }

size_t clf_queue_workers(const clf_queue_t *q) { return q->n_workers; }

static const char *worker_device(const struct worker *w)
{
    return clf_ctx_device(clf_translator_ctx(w->t[0]))->device_name;
}

void clf_queue_worker_stats(clf_queue_t *q, size_t k, struct clf_queue_worker_stats *s)
{
    *s = (struct clf_queue_worker_stats){0};
    if (k >= q->n_workers)
        return;
    const struct worker *w = &q->w[k];
    pthread_mutex_lock(&q->mu);
    const double now = clf_now();
    *s = (struct clf_queue_worker_stats){.batches = w->batches, .sentences = w->sentences,
                                         .device_failures = w->device_failures,
                                         .busy_s = w->busy_total + (w->busy ? now - w->busy_since : 0),
                                         .up_s = now - q->started, .out = w->out, .failing = w->failing};
    pthread_mutex_unlock(&q->mu);
    snprintf(s->device, sizeof s->device, "%s", worker_device(w));
}

/* Under the lock: worker w's state, with why (where not OK) in msg. */
static clf_queue_health_state worker_health(const clf_queue_t *q, const struct worker *w, double now,
                                            double stuck_s, char *msg, size_t sz)
{
    const double busy = w->busy ? now - w->busy_since : 0;
    if (stuck_s > 0 && busy > stuck_s) {
        snprintf(msg, sz,
                 "the worker has been inside one translator call for %.1f s (the limit is %.1f s), "
                 "%zu sentences running and %zu waiting",
                 busy, stuck_s, q->st.running, q->st.queued);
        return CLF_QUEUE_HEALTH_STUCK;
    }
    if (w->out || w->failing) {
        snprintf(msg, sz, "%s: %.400s", w->out ? "taken out, its last batch failed" : "the last batch failed",
                 w->fail_msg);
        return CLF_QUEUE_HEALTH_FAILED;
    }
    return CLF_QUEUE_HEALTH_OK;
}

clf_queue_health_state clf_queue_health(clf_queue_t *q, double stuck_s, struct clf_queue_health *h)
{
    struct clf_queue_health x = {.state = CLF_QUEUE_HEALTH_OK, .workers = q->n_workers};
    bool stuck = false;
    size_t at = 0;
    pthread_mutex_lock(&q->mu);
    const double now = clf_now();
    for (size_t k = 0; k < q->n_workers; k++) {
        const struct worker *w = &q->w[k];
        const double busy = w->busy ? now - w->busy_since : 0;
        x.busy_s = busy > x.busy_s ? busy : x.busy_s;
        x.device_failures += w->device_failures;
        char why[512];
        const clf_queue_health_state s = worker_health(q, w, now, stuck_s, why, sizeof why);
        if (s == CLF_QUEUE_HEALTH_OK) {
            x.serving++;
            continue;
        }
        stuck |= s == CLF_QUEUE_HEALTH_STUCK;
        if (q->n_workers == 1) /* a lone worker's words, as before workers */
            snprintf(x.message, sizeof x.message, "%s", why);
        else if (at < sizeof x.message) {
            const int m = snprintf(x.message + at, sizeof x.message - at, "%sworker %zu (%s): %s", at ? "; " : "",
                                   k, worker_device(w), why);
            at += m > 0 ? (size_t)m : 0;
        }
    }
    pthread_mutex_unlock(&q->mu);
    x.state = x.serving == x.workers ? CLF_QUEUE_HEALTH_OK
              : x.serving           ? CLF_QUEUE_HEALTH_DEGRADED
              : stuck               ? CLF_QUEUE_HEALTH_STUCK
                                    : CLF_QUEUE_HEALTH_FAILED;
    if (h)
        *h = x;
    return x.state;
}
