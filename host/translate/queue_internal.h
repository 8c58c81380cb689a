/* queue_internal.h: the translation queue's state (clformer_serve.h),
 * shared by queue.c (the queue's life, requests, the worker's rounds),
 * queue_order.c (the round-robin order, encoding, taking and finishing
 * sentences, below the others), queue_stream.c (continuous batching)
 * and queue_health.c (counters and health), and what tests read of a
 * request. One mutex guards everything
 * but a request's texts and ids while the worker encodes them (its state
 * says so). */
#ifndef CLF_QUEUE_INTERNAL_H
#define CLF_QUEUE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "clformer_serve.h"

/* One sentence of a request: in its pair's order while it waits, then the
 * worker's while it is translated. */
struct item {
    struct item *next; /* the pair's order */
    clf_queue_req_t *req;
    size_t at;         /* the sentence's index in its request */
    const char *text;  /* in the request's texts, until encoded */
    int32_t *ids;      /* after, len subwords (cut to the translator's limit) */
    size_t len;
    uint64_t tag;      /* its place in the round-robin (queue_order.c: schedule) */
};

enum req_state {
    REQ_INCOMING, /* submitted, in the queue's incoming list */
    REQ_ENCODING, /* the worker encodes it, without the lock */
    REQ_SCHEDULED /* its sentences are in its pair's order, taken, or done */
};

struct clf_queue_req {
    clf_queue_t *q;
    size_t pair, n, left; /* sentences, those not done */
    size_t waiting;       /* in the pair's order, not yet taken */
    struct item *items;   /* (n) */
    char *texts;          /* the sentences, copied, until encoded */
    bool unencoded;       /* encoding failed (the worker's), with fault: why (NULL: no memory to say) */
    char *fault;
    char **out;           /* (n) */
    size_t alts;          /* hypotheses after the best, a sentence (clf_queue_submit_opts' alternatives) */
    char **alt;           /* (n · alts) sentence i's in alt[i·alts ..]; NULL without */
    clf_queue_rc rc;
    char *message;
    double submitted;
    uint64_t client, seq, last_tag;
    enum req_state state;
    bool gone;            /* freed by its owner while sentences of it run */
    bool freeing;         /* its owner waits for the worker to finish encoding it */
    clf_queue_req_t *next_in;            /* the incoming list */
    clf_queue_req_t *prev_w, *next_w;    /* its pair's requests with sentences waiting */
    pthread_cond_t done;                 /* its waiters wait on it */
    uint64_t taken_before, taken_last;   /* q->taken at submission, after its last sentence's take */
    unsigned wakeups;                    /* times a waiter returned from waiting on done */
};

struct pair {
    struct clf_translate_opts o;       /* (each worker has its translator of the pair: worker_t) */
    struct item *head, *tail;          /* waiting, by (tag, request's arrival) */
    clf_queue_req_t *oldest, *newest;  /* requests with sentences waiting, in order of arrival */
    uint64_t vtime;                    /* the largest tag taken */
    size_t recent_longest[2], recent_n; /* the longest sentence taken among the last recent_n (at most
                                         * CLF_QUEUE_RECENT), and among the CLF_QUEUE_RECENT before */
};

enum queue_fault { FAULT_NONE, FAULT_FAIL_AFTER, FAULT_STALL };

/* One worker: a thread, its context's translators, its health. */
struct worker {
    clf_queue_t *q;
    size_t id;
    pthread_t thread;
    clf_translator_t **t;               /* (n_pairs) pair i's is t[i] */
    bool busy;                          /* inside a translator call, since busy_since */
    double busy_since, busy_total;      /* busy_total: seconds of the calls ended */
    bool failing;                       /* the last call failed as a device fails, with fail_msg */
    bool out;                           /* taken out (clformer_serve.h: Workers) */
    char fail_msg[512];
    uint64_t device_failures, batches, sentences;
};

struct clf_queue {
    pthread_mutex_t mu;
    pthread_cond_t work, idle; /* the worker waits on work; a drain on idle */
    pthread_condattr_t cattr;  /* CLOCK_MONOTONIC, clf_now's, for every condition variable */
    struct worker *w;
    clf_translator_t **ts;              /* the caller's translators, copied: w[k].t points into it */
    size_t n_workers, live;             /* live: not taken out */
    double started;
    struct pair *p;
    size_t n_pairs;
    struct clf_queue_opts qo;
    clf_queue_req_t *in_head, *in_tail; /* submitted, to encode */
    bool closed, refuse, stop;          /* refuse: a drain failed what was not started */
    uint64_t seq, taken;                /* requests accepted, sentences taken */
    struct clf_queue_stats st;
    /* CLF_FAULT_QUEUE */
    enum queue_fault fault;
    uint64_t fault_after;
    size_t fault_worker;                /* SIZE_MAX: every worker */
};

/* Worker w's translator of pair p. */
static inline clf_translator_t *worker_t(const struct worker *w, const struct pair *p)
{
    return w->t[p - w->q->p];
}

/* queue_order.c, under the lock: a request's end and its failures, for
 * queue.c too (submit, free, drain). req_destroy frees r; req_fail
 * records r's first failure; req_done counts k of r's sentences done (the
 * last wakes r's waiters, or frees r when its owner let go); idle_check
 * wakes a drain once the queue is empty; pair_drop unlinks p's waiting
 * sentences of request `only` (NULL: of every request), failing them with
 * rc and msg, or dropping them when their owner cancels; how many. */
void clf_queue_req_destroy(clf_queue_req_t *r);
void clf_queue_req_fail(clf_queue_req_t *r, clf_queue_rc rc, const char *msg);
void clf_queue_req_done(clf_queue_t *q, clf_queue_req_t *r, size_t k);
void clf_queue_idle_check(clf_queue_t *q);
size_t clf_queue_pair_drop(clf_queue_t *q, struct pair *p, clf_queue_req_t *only, bool cancel, clf_queue_rc rc,
                           const char *msg);
/* Under the lock: encodes what was submitted (releasing the lock while it
 * does), and puts it in its pairs' order; false when there was nothing. */
bool clf_queue_intake(clf_queue_t *q, struct worker *w);
/* Under the lock: when p's oldest waiting sentence arrived; HUGE_VAL when
 * none waits. */
double clf_queue_oldest(const struct pair *p);
/* Under the lock: a sentence of len subwords of p was taken: the longest
 * of the last CLF_QUEUE_RECENT to 2·CLF_QUEUE_RECENT taken is remembered. */
#define CLF_QUEUE_RECENT 512
void clf_queue_recent(struct pair *p, size_t len);
/* Under the lock: how wide (in source subwords) p's next stream is, with
 * room for `room` sentences and the translator's limit (queue_stream.c). */
size_t clf_queue_stream_width(const struct pair *p, size_t room, size_t limit);
/* Under the lock: takes p's next sentence (p has one) for translating. */
struct item *clf_queue_take(clf_queue_t *q, struct pair *p);
/* Under the lock: a taken sentence is done, translated (text, which this
 * takes) or failed (text NULL, with msg). */
void clf_queue_finish(clf_queue_t *q, struct item *it, char *text, const char *msg);
/* Under the lock: fails what waits of request r in p (r NULL: of every
 * request) with rc and msg. */
void clf_queue_fail_waiting(clf_queue_t *q, struct pair *p, clf_queue_req_t *r, clf_queue_rc rc, const char *msg);
/* Under the lock: a batch of n sentences (a round, a stream's newcomers)
 * of worker w in the counters. */
void clf_queue_count_batch(clf_queue_t *q, struct worker *w, size_t n);
/* Under the lock: worker w goes into a translator call for p (stalls
 * there under CLF_FAULT_QUEUE=stall); CLF_OK, or the injected failure
 * (CLF_FAULT_QUEUE=fail-after:N, with p's context's message). */
clf_status clf_queue_call_begin(clf_queue_t *q, struct worker *w, struct pair *p);
/* Under the lock: whether CLF_FAULT_QUEUE=fail-after:N's batches ran (for w). */
bool clf_queue_fault_due(const clf_queue_t *q, const struct worker *w);
/* Under the lock: w is out of the call, which returned s (its message in
 * p's context); a device's failure takes w out while another worker
 * serves (w->out: what it holds goes back, clf_queue_requeue). */
void clf_queue_call_end(clf_queue_t *q, struct worker *w, struct pair *p, clf_status s);
/* Under the lock: whether w is busy (inside a call, decoding), counting its busy time. */
void clf_queue_busy(struct worker *w, bool busy);
/* Under the lock: a taken sentence of p goes back to p's order, in its
 * place, for another worker (its worker was taken out); during a drain's
 * refusal it fails instead. */
void clf_queue_requeue(clf_queue_t *q, struct pair *p, struct item *it, const char *msg);
/* Under the lock (released while decoding): p's continuous stream on w
 * (queue_stream.c). */
void clf_queue_flow_run(clf_queue_t *q, struct worker *w, struct pair *p);

/* For tests, once r is done: how many sentences of other requests were
 * taken between r's submission and its last sentence's take, and how many
 * times a waiter of r was woken (returned from its condition variable). */
uint64_t clf_queue_req_ahead(const clf_queue_req_t *r);
unsigned clf_queue_req_wakeups(const clf_queue_req_t *r);

#endif
