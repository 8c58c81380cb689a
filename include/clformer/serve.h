/* clformer/serve.h: a translation queue over translators, batching
 * sentences across independent requests: what `clformer serve` puts
 * behind HTTP, usable by any program without it.
 *
 * A queue holds one or more translators (clformer/translate.h), one per
 * language pair, and one worker thread that owns them and their
 * context(s): after clf_queue_init only the worker calls the library on
 * them (the library is used from one thread at a time), until
 * clf_queue_free returns. Any number of threads submit requests and wait
 * for them.
 *
 * Workers (clf_queue_init_workers): W workers, one a device, each with its
 * own context and its own copy of every pair's translator (the same
 * checkpoints: sentences are encoded by whichever worker takes them in,
 * and may be decoded by another). The order below is the queue's, not a
 * worker's: whichever worker is free takes the next round, or runs a
 * stream of the pair that waited longest, so two workers may stream the
 * same pair. A translator call that fails as a device fails (see Health)
 * takes its worker out while another one still serves: the sentences it
 * held go back to their pair's order, in their places, for the others
 * (a request sees no failure), and the worker's thread ends. The last
 * worker serving is never taken out: its failed batches fail their
 * requests, as a lone worker's do, and a later call that succeeds clears
 * it. A worker stuck inside a call (clf_queue_health: DEGRADED while
 * another serves) keeps the sentences it holds until the call returns (a
 * hung call's buffers cannot safely be taken back); the others take the
 * rest.
 *
 *     clf_queue_t *q;  clf_queue_req_t *r;
 *     clf_queue_init(ts, 2, NULL, &qo, &q);
 *     clf_queue_submit(q, 0, lines, n, &r);       (CLF_QUEUE_OK, or FULL, CLOSED, INVALID)
 *     clf_queue_wait(r, -1);                      (true once every sentence is done)
 *     clf_queue_req_result(r) == CLF_QUEUE_OK ? clf_queue_req_output(r, i) : clf_queue_req_message(r)
 *     clf_queue_req_free(r);                      (also cancels a request not finished)
 *     clf_queue_drain(q, 10.0); clf_queue_free(q);
 *
 * Order: each pair's waiting sentences are taken round-robin: one from
 * each waiting request in turn, in the requests' order of arrival, so a
 * request of one sentence sent behind one of a thousand waits for one of
 * the thousand, not for all of them. A request that names a client
 * (clf_queue_submit_with) takes its turns as that client's: the client's
 * sentences, request after request in order of arrival, get one turn a
 * round as one request would, so one client's many requests do not crowd
 * out others.
 *
 * Encoding: the worker encodes each request's sentences (the tokenizer,
 * on the host) as it arrives, before any round or step that follows, and
 * without the queue's lock: submitting, waiting and freeing never wait for
 * the tokenizer (a request freed while being encoded waits for that one).
 *
 * Batching: the worker takes the pair whose oldest waiting sentence is
 * oldest and, from that pair's sentences in the order above, as many as
 * hold at most max_batch_tokens source tokens (each sentence's subwords
 * with its EOS; the first always goes) and max_batch_sentences sentences. While those are fewer than the
 * budget allows it waits for more, at most batch_wait_ms after the oldest
 * one arrived. The translator then sorts them by length and cuts them into
 * batches of at most max_batch_tokens padded tokens
 * (clf_translator_translate_ids), so each sentence's output is
 * clf_translator_translate's of the same line with the same options,
 * whatever else shares its batch.
 *
 * With `continuous`, sentences join a decoding under way instead
 * (clf_translator_translate_stream): between decoding steps the worker
 * takes that pair's waiting sentences in the order above while the sentences
 * decoding hold at most max_batch_tokens source tokens and
 * max_batch_sentences sentences, and at most max_batch_tokens / 16 (the
 * decoder is sized for that many up front), and hands each back as soon as it finishes. A stream is as wide
 * as the longest of the pair's first waiting sentences (a power of two, at
 * least 32 subwords): a longer one waits until it ends. It ends when
 * nothing of its pair is left, or when another pair's oldest sentence has
 * waited longer (the worker then turns to it); idle, it waits for the
 * next sentence with its buffers kept. Nothing waits for a batch to fill
 * (batch_wait_ms is the rounds'): the next sentences join at the next step.
 * Outputs are the same as with rounds: each sentence decodes as it would
 * alone.
 *
 * Health (clf_queue_health): whether the worker is stuck inside one
 * translator call, or the last call failed as a dead device fails. For
 * tests, the setting CLF_FAULT_QUEUE (read by clf_queue_init through
 * clf_setting_set or the environment) injects such faults:
 * `fail-after:N` makes every translator call after the first N batches
 * fail with CLF_ERR_OPENCL (a stream stops taking sentences after them and
 * its next call fails), `stall` makes every call hang, holding no lock,
 * until the queue drains. With a worker's index after them
 * (`fail-after:N@W`, `stall@W`) only worker W's calls do so, after its own
 * N batches. */
#ifndef CLFORMER_SERVE_H
#define CLFORMER_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "clformer/status.h"
#include "clformer/translate.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

typedef struct clf_queue clf_queue_t;
typedef struct clf_queue_req clf_queue_req_t;

/* What submitting a request or running it came to. */
typedef enum clf_queue_rc {
    CLF_QUEUE_OK = 0,
    CLF_QUEUE_FULL,    /* submit: the queue holds max_queued sentences; try again later */
    CLF_QUEUE_CLOSED,  /* submit: the queue is draining; a request: drained before it ran */
    CLF_QUEUE_INVALID, /* submit: a bad argument (no such pair, more sentences than max_queued) */
    CLF_QUEUE_FAILED,  /* a request: encoding or translating one of its batches failed */
} clf_queue_rc;

struct clf_queue_opts {
    size_t max_batch_tokens;    /* source tokens a batch (see above); 0: 4096 */
    size_t max_batch_sentences; /* 0: 256 */
    unsigned batch_wait_ms;     /* the longest a sentence waits for its batch to fill */
    size_t max_queued;          /* sentences waiting, not yet running; 0: no limit */
    bool continuous;            /* sentences join a decoding under way (see above); false: rounds */
};

/* The latency histogram's upper bounds in seconds (the last bucket has
 * none) and the batch size histogram's in sentences. */
#define CLF_QUEUE_LATENCY_BUCKETS 12
#define CLF_QUEUE_LATENCY_BOUNDS {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
#define CLF_QUEUE_BATCH_BUCKETS 10
#define CLF_QUEUE_BATCH_BOUNDS {1, 2, 4, 8, 16, 32, 64, 128, 256}

/* Counters since clf_queue_init, for a service's metrics. Histograms
 * count each observation in the first bucket whose bound holds it. */
struct clf_queue_stats {
    uint64_t requests;         /* accepted */
    uint64_t rejected;         /* refused as FULL */
    uint64_t sentences;        /* translated */
    uint64_t failed;           /* sentences failed (FAILED or CLOSED) */
    uint64_t cancelled;        /* sentences dropped unstarted because their request was freed */
    uint64_t source_tokens;    /* of the sentences translated, with EOS */
    uint64_t batches;          /* worker rounds (each one call of the translator) */
    size_t queued;             /* sentences waiting now */
    size_t running;            /* sentences being translated now */
    uint64_t batch_hist[CLF_QUEUE_BATCH_BUCKETS]; /* sentences a round */
    uint64_t batch_sentences;  /* over batch_hist's */
    uint64_t latency_hist[CLF_QUEUE_LATENCY_BUCKETS]; /* submit to done, each finished request */
    double latency_sum;        /* seconds, over latency_hist's */
    uint64_t steps;            /* decoding steps of continuous batching (streams) */
    uint64_t step_sentences;   /* sentences decoding, summed over those steps: over steps, the
                                * batch's mean occupancy */
};

/* What clf_queue_health found. */
typedef enum clf_queue_health_state {
    CLF_QUEUE_HEALTH_OK = 0,
    CLF_QUEUE_HEALTH_STUCK,  /* the worker has been inside one translator call (a round, a stream's
                              * step) longer than the caller allows, with sentences waiting on it */
    CLF_QUEUE_HEALTH_FAILED, /* the last translator call failed as a device fails (an OpenCL, CLBlast,
                              * kernel build or memory error), not a request's bad option; a later call
                              * that succeeds clears it */
    CLF_QUEUE_HEALTH_DEGRADED, /* several workers: at least one serves (neither STUCK nor FAILED nor out),
                                * and at least one does not */
} clf_queue_health_state;

struct clf_queue_health {
    clf_queue_health_state state;
    double busy_s;             /* how long the worker has been inside its current translator call; 0: in none */
    uint64_t device_failures;  /* translator calls that failed as a device fails, since clf_queue_init */
    char message[512];         /* why, where not OK: the device's message, or how long the call took;
                                * DEGRADED: each worker not serving, with why */
    size_t workers, serving;   /* the queue's workers; those serving (neither STUCK nor FAILED nor out) */
};

/* One worker's counters and state (clf_queue_worker_stats). */
struct clf_queue_worker_stats {
    uint64_t batches;          /* rounds, or a stream's takes of newcomers, as clf_queue_stats' */
    uint64_t sentences;        /* translated by this worker */
    uint64_t device_failures;  /* its translator calls that failed as a device fails */
    double busy_s;             /* seconds inside translator calls, decoding (a stream idle between steps
                                * is not busy): over the seconds since clf_queue_init, its utilisation */
    double up_s;               /* seconds since clf_queue_init */
    bool out;                  /* taken out: its device failed while another worker served */
    bool failing;              /* its last call failed as a device fails */
    char device[256];          /* its context's device name */
};

/* Options of one request. */
struct clf_queue_submit_opts {
    uint64_t client; /* who sent it (a hash of its API key or address): the request takes its turns as this
                      * client's (see "Order" above); 0: as its own */
    size_t alternatives; /* hypotheses after the best kept a sentence (clf_queue_req_alternative), at most
                          * the pair's beam less 1 (more: INVALID; greedy: 0). Such a request's sentences are
                          * decoded in rounds of sentences that ask the same (with `continuous` too: a
                          * stream gives the best only), so they batch with fewer others; 0: the best only */
};

/* A queue over n translators (pair i is t[i]); opts[i] are pair i's
 * generation options (opts NULL: each translator's clf_translator_opts),
 * their nbest ignored: the best hypothesis only, and as many more as a
 * request asks for (clf_queue_submit_opts' alternatives).
 * The array t is copied (the caller may free it on return); the
 * translators stay the caller's, to free after clf_queue_free. */
clf_status clf_queue_init(clf_translator_t *const *t, size_t n, const struct clf_translate_opts *opts,
                          const struct clf_queue_opts *qo, clf_queue_t **q);
/* The same with `workers` workers (see "Workers" above): t[w * n + i] is
 * worker w's translator of pair i, on worker w's own context; every
 * worker's pair i is the same checkpoint. opts as clf_queue_init's (NULL:
 * worker 0's translators' options). clf_queue_init is this with one. */
clf_status clf_queue_init_workers(clf_translator_t *const *t, size_t workers, size_t n,
                                  const struct clf_translate_opts *opts, const struct clf_queue_opts *qo,
                                  clf_queue_t **q);
/* Drains (clf_queue_drain(q, 0): sentences not started fail CLOSED),
 * stops the worker and frees the queue. Free every request first. */
void clf_queue_free(clf_queue_t *q);

/* Submits n sentences src[0..n) (copied) for pair `pair`: CLF_QUEUE_OK
 * with *r, to wait for and free; FULL, CLOSED or INVALID (the message in
 * clf_ctx_error(NULL)) with *r NULL. n may be 0 (done at once). */
clf_queue_rc clf_queue_submit(clf_queue_t *q, size_t pair, const char *const *src, size_t n, clf_queue_req_t **r);
/* The same with options (so NULL: clf_queue_submit's). */
clf_queue_rc clf_queue_submit_with(clf_queue_t *q, size_t pair, const char *const *src, size_t n,
                                   const struct clf_queue_submit_opts *so, clf_queue_req_t **r);
/* Waits at most timeout_ms (< 0: no limit) for every sentence of r to be
 * done: true once they are. A waiter is woken once, when r is done, not
 * by other requests' sentences. */
bool clf_queue_wait(clf_queue_req_t *r, long timeout_ms);
/* Once done: CLF_QUEUE_OK, FAILED or CLOSED; its message where not OK. */
clf_queue_rc clf_queue_req_result(const clf_queue_req_t *r);
const char *clf_queue_req_message(const clf_queue_req_t *r);
/* Sentence i's translation (the request's; valid until it is freed). */
const char *clf_queue_req_output(const clf_queue_req_t *r, size_t i);
/* Sentence i's hypothesis j + 1 (j < the request's alternatives), next
 * best after the translation; "" where the search found no other. */
const char *clf_queue_req_alternative(const clf_queue_req_t *r, size_t i, size_t j);
/* Frees r; a request not done is cancelled: its sentences not yet
 * started are dropped, those running are finished and thrown away. */
void clf_queue_req_free(clf_queue_req_t *r);

/* Stops accepting requests (submit: CLOSED), then waits at most `seconds`
 * for the sentences queued and running to be done; those not started by
 * then fail CLOSED. True when everything queued was translated. */
bool clf_queue_drain(clf_queue_t *q, double seconds);
void clf_queue_stats(clf_queue_t *q, struct clf_queue_stats *s);
size_t clf_queue_pairs(const clf_queue_t *q);
size_t clf_queue_workers(const clf_queue_t *q);
/* Worker w's counters and state (w < clf_queue_workers). */
void clf_queue_worker_stats(clf_queue_t *q, size_t w, struct clf_queue_worker_stats *s);
/* Whether the worker serves: STUCK when it has been inside one translator
 * call longer than stuck_s seconds (stuck_s <= 0: never; a first call
 * compiles kernels, and a full round on a slow device takes seconds, so
 * allow for both), else FAILED while the last call failed as a device
 * fails, else OK. With several workers, each is judged so (one taken out
 * counts as FAILED): OK when all serve, DEGRADED when some do and some do
 * not, else STUCK when one is, else FAILED; h->busy_s is the longest
 * call, device_failures the sum. The details in *h (h may be NULL). For a
 * readiness check: cheap, it only takes the queue's lock. */
clf_queue_health_state clf_queue_health(clf_queue_t *q, double stuck_s, struct clf_queue_health *h);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
