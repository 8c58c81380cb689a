/* test_queue.c: the translation queue (clformer_serve.h) without HTTP, on
 * an imported Marian fixture served as two pairs (its beam defaults, and
 * greedy on a second translator sharing the context): requests from four
 * threads at once get clf_translator_translate's output of the same lines,
 * in order; a request freed before it ran costs its sentences and nothing
 * else; a full queue refuses and recovers; a drain translates what was
 * queued and then refuses new requests; a round the search refuses fails
 * its requests with its message and the next round is served, and the
 * queue's health stays OK (a bad option is no device failure); a hog's
 * 1000 sentences delay another request's one by one sentence at most
 * (round-robin), a waiter is woken once for its request, not for every
 * sentence; an injected device failure (CLF_FAULT_QUEUE) fails a request
 * with its message and the health, an injected stall makes the health
 * STUCK until a drain; a request's alternatives are the translator's
 * n-best. The first, the last two, the hog's and the alternatives' also
 * with continuous batching (sentences joining decodings under way), the
 * first counting its decoding steps; a stream's width remembers the
 * pair's recent longest sentence; the queue keeps its own copy of the
 * caller's array of translators. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clformer.h"
#include "clformer_serve.h"
#include "testutil.h"
#include "translate/queue_internal.h" /* clf_queue_req_ahead, clf_queue_req_wakeups */

#define FIX CLF_SOURCE_DIR "/tests/fixtures/marian/"
#define SRC CLF_SOURCE_DIR "/data/multi30k/test_2016_flickr.en.gz"
#define N_LINES 12

static char model[1024];
static struct clf_lines all, lines; /* lines: all's first N_LINES */
static clf_ctx_t *ctx;
static clf_translator_t *t[2];
static char *want[2][N_LINES]; /* pair 0: beam (the defaults), pair 1: greedy */
static struct clf_translate_opts opts[2];

static void setup(void)
{
    char imp[600];
    snprintf(imp, sizeof imp, "%s/imp", tu_tmpdir());
    cr_assert_eq(clf_marian_import(FIX "relu_separate", imp), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(model, sizeof model, "%s/model.safetensors", imp);
    cr_assert_eq(clf_lines_read(&all, SRC), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_geq(all.n, N_LINES);
    lines = all;
    lines.n = N_LINES;
    ctx = tu_ctx();
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(clf_translator_init(ctx, model, NULL, &t[k]), CLF_OK, "%s", clf_ctx_error(ctx));
        opts[k] = clf_translator_opts(t[k]);
    }
    opts[1].greedy = true, opts[1].nbest = 1;
    for (int k = 0; k < 2; k++)
        cr_assert_eq(clf_translator_translate(t[k], (const char *const *)lines.line, N_LINES, &opts[k],
                                              CLF_BATCHING_DEFAULT, want[k], NULL, NULL, NULL),
                     CLF_OK, "%s", clf_ctx_error(ctx));
}

static void teardown(void)
{
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < N_LINES; i++)
            free(want[k][i]);
        clf_translator_free(t[k]);
    }
    clf_ctx_free(ctx);
    clf_lines_free(&all);
}

struct client {
    clf_queue_t *q;
    int id, errors;
};

/* Three requests, of 1 to 5 lines from a different place each, on
 * alternating pairs; every output checked against its line's. */
static void *client(void *arg)
{
    struct client *c = arg;
    for (int k = 0; k < 3; k++) {
        const size_t from = (size_t)(c->id * 3 + k) % N_LINES, n = 1 + (size_t)(c->id + k) % 5;
        const size_t pair = (size_t)(c->id + k) % 2;
        const char *src[5];
        for (size_t i = 0; i < n; i++)
            src[i] = lines.line[(from + i) % N_LINES];
        clf_queue_req_t *r = NULL;
        if (clf_queue_submit(c->q, pair, src, n, &r) != CLF_QUEUE_OK || !clf_queue_wait(r, -1) ||
            clf_queue_req_result(r) != CLF_QUEUE_OK) {
            c->errors++;
            clf_queue_req_free(r);
            continue;
        }
        for (size_t i = 0; i < n; i++)
            if (strcmp(clf_queue_req_output(r, i), want[pair][(from + i) % N_LINES]) != 0)
                c->errors++;
        /* once, when it was done: not for each sentence, nor for other requests' */
        if (clf_queue_req_wakeups(r) > 1)
            c->errors++;
        clf_queue_req_free(r);
    }
    return NULL;
}

static void threads_case(bool continuous)
{
    clf_queue_t *q = NULL;
    const struct clf_queue_opts qo = {.max_batch_tokens = 64, .batch_wait_ms = 20, .continuous = continuous};
    /* the queue copies the array of translators: the caller's may go at once */
    clf_translator_t *ts[2] = {t[0], t[1]};
    cr_assert_eq(clf_queue_init(ts, 2, opts, &qo, &q), CLF_OK, "%s", clf_ctx_error(NULL));
    ts[0] = ts[1] = NULL;
    cr_expect_eq(clf_queue_pairs(q), 2);
    pthread_t th[4];
    struct client c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (struct client){.q = q, .id = i};
        cr_assert_eq(pthread_create(&th[i], NULL, client, &c[i]), 0);
    }
    int errors = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        errors += c[i].errors;
    }
    cr_expect_eq(errors, 0, "%d sentences or requests came back wrong", errors);
    struct clf_queue_stats s;
    clf_queue_stats(q, &s);
    size_t sentences = 0;
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++)
            sentences += 1 + (size_t)(i + k) % 5;
    cr_expect_eq(s.requests, 12);
    cr_expect_eq(s.sentences, sentences);
    cr_expect_eq(s.queued + s.running + s.failed + s.cancelled + s.rejected, 0);
    uint64_t rounds = 0, finished = 0;
    for (int b = 0; b < CLF_QUEUE_BATCH_BUCKETS; b++)
        rounds += s.batch_hist[b];
    for (int b = 0; b < CLF_QUEUE_LATENCY_BUCKETS; b++)
        finished += s.latency_hist[b];
    cr_expect(rounds == s.batches && rounds >= 1 && rounds <= sentences, "%llu rounds", (unsigned long long)rounds);
    cr_expect_eq(finished, 12, "every request's latency is counted once");
    cr_expect_gt(s.source_tokens, sentences);
    /* continuous: each sentence decodes in one step at least, and no step holds more than all of them;
     * rounds count no steps */
    if (continuous)
        cr_expect(s.steps >= 1 && s.step_sentences >= sentences && s.step_sentences <= s.steps * sentences,
                  "%llu steps of %llu sentences in all", (unsigned long long)s.steps,
                  (unsigned long long)s.step_sentences);
    else
        cr_expect(s.steps == 0 && s.step_sentences == 0);
    clf_queue_free(q);
    /* the worker let go of the context: this thread may use it again */
    char *again[1] = {NULL};
    cr_expect_eq(clf_translator_translate(t[0], (const char *const *)lines.line, 1, &opts[0], CLF_BATCHING_DEFAULT,
                                          again, NULL, NULL, NULL), CLF_OK);
    cr_expect_str_eq(again[0], want[0][0]);
    free(again[0]);
}

Test(queue, cancels_refuses_when_full_and_drains, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(300))
{
    clf_queue_t *q = NULL;
    /* a budget nothing fills and a wait no test reaches: rounds go only on a drain */
    const struct clf_queue_opts qo = {.max_batch_tokens = 100000, .batch_wait_ms = 600000, .max_queued = 5};
    cr_assert_eq(clf_queue_init(t, 2, opts, &qo, &q), CLF_OK, "%s", clf_ctx_error(NULL));
    const char *const *src = (const char *const *)lines.line;
    clf_queue_req_t *a, *b, *c, *d, *e;
    cr_assert_eq(clf_queue_submit(q, 0, src, 3, &a), CLF_QUEUE_OK);
    cr_expect_eq(clf_queue_submit(q, 1, src, 3, &b), CLF_QUEUE_FULL, "3 + 3 sentences over a limit of 5");
    cr_expect_null(b);
    cr_expect_not(clf_queue_wait(a, 50), "a round waits for its budget or its time");
    clf_queue_req_free(a);
    struct clf_queue_stats s;
    clf_queue_stats(q, &s);
    cr_expect(s.cancelled == 3 && s.queued == 0, "a cancelled request's sentences leave the queue: %llu, %zu",
              (unsigned long long)s.cancelled, s.queued);
    cr_assert_eq(clf_queue_submit(q, 1, src + 4, 2, &c), CLF_QUEUE_OK, "the queue has room again");
    cr_assert_eq(clf_queue_submit(q, 0, src + 6, 3, &d), CLF_QUEUE_OK);
    cr_expect_eq(clf_queue_submit(q, 0, src, 1, &e), CLF_QUEUE_FULL);
    cr_expect_eq(clf_queue_submit(q, 0, src, 6, &e), CLF_QUEUE_INVALID, "more than the queue ever holds");
    cr_expect(strstr(clf_ctx_error(NULL), "(5)"), "%s", clf_ctx_error(NULL));
    cr_expect_eq(clf_queue_submit(q, 2, src, 1, &e), CLF_QUEUE_INVALID, "no pair 2");

    cr_expect(clf_queue_drain(q, TU_TIMEOUT(120)), "the drain translated what was queued");
    cr_assert(clf_queue_wait(c, 0) && clf_queue_wait(d, 0));
    cr_expect_eq(clf_queue_req_result(c), CLF_QUEUE_OK, "%s", clf_queue_req_message(c));
    cr_expect_eq(clf_queue_req_result(d), CLF_QUEUE_OK, "%s", clf_queue_req_message(d));
    for (size_t i = 0; i < 2; i++)
        cr_expect_str_eq(clf_queue_req_output(c, i), want[1][4 + i]);
    for (size_t i = 0; i < 3; i++)
        cr_expect_str_eq(clf_queue_req_output(d, i), want[0][6 + i]);
    cr_expect_eq(clf_queue_submit(q, 0, src, 1, &e), CLF_QUEUE_CLOSED, "a drained queue takes nothing more");
    clf_queue_stats(q, &s);
    cr_expect(s.requests == 3 && s.rejected == 2 && s.sentences == 5 && s.failed == 0,
              "requests %llu rejected %llu sentences %llu failed %llu", (unsigned long long)s.requests,
              (unsigned long long)s.rejected, (unsigned long long)s.sentences, (unsigned long long)s.failed);
    clf_queue_req_free(c), clf_queue_req_free(d);
    clf_queue_free(q);
}

Test(queue, threads_get_the_translators_output_in_order, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    threads_case(false);
}

/* The same with sentences joining decodings under way: the same outputs. */
Test(queue, continuous_threads_get_the_translators_output_in_order, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    threads_case(true);
}

static void failed_case(bool continuous)
{
    /* pair 1 asks the search for more beams than it keeps: each of its rounds fails there */
    struct clf_translate_opts o[2] = {opts[0], opts[0]};
    o[1].greedy = false, o[1].beam = CLF_TRANSLATE_BEAM_MAX + 1;
    clf_queue_t *q = NULL;
    const struct clf_queue_opts qo = {.max_batch_tokens = 64, .batch_wait_ms = 1, .continuous = continuous};
    cr_assert_eq(clf_queue_init(t, 2, o, &qo, &q), CLF_OK, "%s", clf_ctx_error(NULL));
    const char *const *src = (const char *const *)lines.line;
    clf_queue_req_t *bad, *good;
    cr_assert_eq(clf_queue_submit(q, 1, src, 3, &bad), CLF_QUEUE_OK);
    cr_assert_eq(clf_queue_submit(q, 0, src + 3, 2, &good), CLF_QUEUE_OK);
    cr_assert(clf_queue_wait(bad, -1) && clf_queue_wait(good, -1));
    cr_expect_eq(clf_queue_req_result(bad), CLF_QUEUE_FAILED);
    cr_expect(strstr(clf_queue_req_message(bad), "beam"), "the search's message: %s", clf_queue_req_message(bad));
    cr_expect_eq(clf_queue_req_result(good), CLF_QUEUE_OK, "%s", clf_queue_req_message(good));
    for (size_t i = 0; i < 2; i++)
        cr_expect_str_eq(clf_queue_req_output(good, i), want[0][3 + i]);
    struct clf_queue_stats s;
    clf_queue_stats(q, &s);
    cr_expect(s.failed == 3 && s.sentences == 2, "failed %llu, translated %llu", (unsigned long long)s.failed,
              (unsigned long long)s.sentences);
    struct clf_queue_health h;
    cr_expect_eq(clf_queue_health(q, 0, &h), CLF_QUEUE_HEALTH_OK, "a request's bad option is no device failure: %s",
                 h.message);
    cr_expect_eq(h.device_failures, 0);
    clf_queue_req_free(bad), clf_queue_req_free(good);
    clf_queue_free(q);
}

Test(queue, a_failed_batch_fails_its_requests_and_the_worker_goes_on, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    failed_case(false);
}

Test(queue, continuous_a_failed_stream_fails_its_requests_and_the_worker_goes_on, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    failed_case(true);
}

/* A hog of 1000 sentences, sent as two requests of one client, then a
 * request of one sentence: taken round-robin, the one waits for one of the
 * hog's (the sentence of the hog's client that ties with it), not for the
 * thousand (first come, first served: 1000), nor for one of each of the
 * client's requests (2). Counted in sentences taken, not in time, so a
 * loaded machine cannot fail it. */
static void hog_case(bool continuous)
{
    clf_queue_t *q = NULL;
    const struct clf_queue_opts qo = {.max_batch_tokens = 64, .batch_wait_ms = 1, .continuous = continuous};
    cr_assert_eq(clf_queue_init(t, 2, opts, &qo, &q), CLF_OK, "%s", clf_ctx_error(NULL));
    const char *hog[500];
    for (size_t i = 0; i < 500; i++)
        hog[i] = lines.line[i % N_LINES];
    const struct clf_queue_submit_opts client = {.client = 7};
    clf_queue_req_t *h1, *h2, *one;
    cr_assert_eq(clf_queue_submit_with(q, 1, hog, 500, &client, &h1), CLF_QUEUE_OK);
    cr_assert_eq(clf_queue_submit_with(q, 1, hog, 500, &client, &h2), CLF_QUEUE_OK);
    cr_assert_eq(clf_queue_submit(q, 1, (const char *const *)lines.line + 5, 1, &one), CLF_QUEUE_OK);
    cr_assert(clf_queue_wait(one, -1));
    cr_expect_eq(clf_queue_req_result(one), CLF_QUEUE_OK, "%s", clf_queue_req_message(one));
    cr_expect_str_eq(clf_queue_req_output(one, 0), want[1][5], "the same output as alone");
    cr_expect_leq(clf_queue_req_ahead(one), 1, "%llu of the hog's sentences went before the one",
                  (unsigned long long)clf_queue_req_ahead(one));
    cr_expect_leq(clf_queue_req_wakeups(one), 1, "woken %u times", clf_queue_req_wakeups(one));
    clf_queue_req_free(one);
    clf_queue_req_free(h1), clf_queue_req_free(h2); /* cancels the hog's rest */
    cr_expect(clf_queue_drain(q, TU_TIMEOUT(120)));
    struct clf_queue_stats s;
    clf_queue_stats(q, &s);
    cr_expect(s.sentences + s.cancelled == 1001 && s.failed == 0 && s.queued + s.running == 0,
              "translated %llu, cancelled %llu, failed %llu", (unsigned long long)s.sentences,
              (unsigned long long)s.cancelled, (unsigned long long)s.failed);
    clf_queue_free(q);
}

Test(queue, a_hogs_thousand_sentences_delay_another_request_by_one, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    hog_case(false);
}

Test(queue, continuous_a_hogs_thousand_sentences_delay_another_request_by_one, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    hog_case(true);
}

/* CLF_FAULT_QUEUE=fail-after:1: the first batch runs, the next call fails
 * as a dead device would: its request FAILED with the device's message,
 * the health FAILED with it. A bad value is refused, naming the setting. */
static void fault_case(bool continuous)
{
    clf_queue_t *q = NULL;
    const struct clf_queue_opts qo = {.max_batch_tokens = 64, .batch_wait_ms = 1, .continuous = continuous};
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", "fail-after:x"), CLF_OK);
    cr_expect_eq(clf_queue_init(t, 2, opts, &qo, &q), CLF_ERR_ARG);
    cr_expect(strstr(clf_ctx_error(NULL), "CLF_FAULT_QUEUE=fail-after:x"), "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", "fail-after:1"), CLF_OK);
    cr_assert_eq(clf_queue_init(t, 2, opts, &qo, &q), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", NULL), CLF_OK);
    struct clf_queue_health h;
    cr_expect_eq(clf_queue_health(q, 0, &h), CLF_QUEUE_HEALTH_OK, "%s", h.message);
    const char *const *src = (const char *const *)lines.line;
    clf_queue_req_t *a, *b;
    cr_assert_eq(clf_queue_submit(q, 1, src, 1, &a), CLF_QUEUE_OK);
    cr_assert(clf_queue_wait(a, -1));
    cr_expect_eq(clf_queue_req_result(a), CLF_QUEUE_OK, "the first batch runs: %s", clf_queue_req_message(a));
    cr_expect_str_eq(clf_queue_req_output(a, 0), want[1][0]);
    cr_expect_eq(clf_queue_health(q, 0, &h), CLF_QUEUE_HEALTH_OK, "%s", h.message);
    cr_assert_eq(clf_queue_submit(q, 1, src + 1, 2, &b), CLF_QUEUE_OK);
    cr_assert(clf_queue_wait(b, -1));
    cr_expect_eq(clf_queue_req_result(b), CLF_QUEUE_FAILED);
    cr_expect(strstr(clf_queue_req_message(b), "the device failed") &&
                  strstr(clf_queue_req_message(b), "CLF_FAULT_QUEUE"),
              "the device's message: %s", clf_queue_req_message(b));
    cr_expect_eq(clf_queue_health(q, 0, &h), CLF_QUEUE_HEALTH_FAILED);
    cr_expect(strstr(h.message, "CLF_ERR_OPENCL") && strstr(h.message, "the device failed"), "%s", h.message);
    cr_expect_geq(h.device_failures, 1);
    struct clf_queue_stats s;
    clf_queue_stats(q, &s);
    cr_expect(s.sentences == 1 && s.failed == 2, "translated %llu, failed %llu", (unsigned long long)s.sentences,
              (unsigned long long)s.failed);
    clf_queue_req_free(a), clf_queue_req_free(b);
    clf_queue_free(q);
}

Test(queue, an_injected_device_failure_fails_the_request_and_the_health, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    fault_case(false);
}

Test(queue, continuous_an_injected_device_failure_fails_the_request_and_the_health, .init = setup,
     .fini = teardown, .timeout = TU_TIMEOUT(300))
{
    fault_case(true);
}

/* CLF_FAULT_QUEUE=stall: the worker hangs inside its call, without the
 * lock: the health turns STUCK (polled until it does, within the test's
 * limit: no bound on how soon), submitting still answers, and a drain ends
 * the stall and translates what was taken. */
Test(queue, an_injected_stall_is_stuck_until_a_drain, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(300))
{
    clf_queue_t *q = NULL;
    const struct clf_queue_opts qo = {.max_batch_tokens = 64, .batch_wait_ms = 1};
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", "stall"), CLF_OK);
    cr_assert_eq(clf_queue_init(t, 2, opts, &qo, &q), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", NULL), CLF_OK);
    const char *const *src = (const char *const *)lines.line;
    clf_queue_req_t *a, *b;
    cr_assert_eq(clf_queue_submit(q, 1, src, 1, &a), CLF_QUEUE_OK);
    struct clf_queue_health h;
    while (clf_queue_health(q, 0.01, &h) != CLF_QUEUE_HEALTH_STUCK)
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    cr_expect(strstr(h.message, "inside one translator call") && h.busy_s > 0.01, "%s", h.message);
    cr_expect_eq(clf_queue_submit(q, 1, src + 1, 1, &b), CLF_QUEUE_OK, "the lock is free while it hangs");
    cr_expect(clf_queue_drain(q, TU_TIMEOUT(120)), "the drain ends the stall; what was taken is translated");
    cr_assert(clf_queue_wait(a, 0) && clf_queue_wait(b, 0));
    cr_expect_eq(clf_queue_req_result(a), CLF_QUEUE_OK, "%s", clf_queue_req_message(a));
    cr_expect_eq(clf_queue_req_result(b), CLF_QUEUE_OK, "%s", clf_queue_req_message(b));
    cr_expect_str_eq(clf_queue_req_output(a, 0), want[1][0]);
    cr_expect_str_eq(clf_queue_req_output(b, 0), want[1][1]);
    cr_expect_eq(clf_queue_health(q, 0.01, &h), CLF_QUEUE_HEALTH_OK, "%s", h.message);
    clf_queue_req_free(a), clf_queue_req_free(b);
    clf_queue_free(q);
}

/* Alternatives (clf_queue_submit_opts): a request's sentences come with
 * clf_translator_translate's n-best of them (nbest 1 + alternatives), best
 * first, while plain requests queued around it get their translations as
 * before; more than the beam keeps (or any on a greedy pair) is INVALID,
 * naming the limit. With continuous batching such sentences go through
 * rounds beside the stream. */
static void alternatives_case(bool continuous)
{
    enum { K = 4, ALTS = 2 };
    struct clf_translate_opts o = opts[0];
    o.nbest = 1 + ALTS;
    char *ref[K * (1 + ALTS)] = {0};
    cr_assert_eq(clf_translator_translate(t[0], (const char *const *)lines.line, K, &o, CLF_BATCHING_DEFAULT, ref,
                                          NULL, NULL, NULL),
                 CLF_OK, "%s", clf_ctx_error(ctx));
    clf_queue_t *q = NULL;
    const struct clf_queue_opts qo = {.max_batch_tokens = 64, .batch_wait_ms = 1, .continuous = continuous};
    cr_assert_eq(clf_queue_init(t, 2, opts, &qo, &q), CLF_OK, "%s", clf_ctx_error(NULL));
    const char *const *src = (const char *const *)lines.line;
    const struct clf_queue_submit_opts so = {.alternatives = ALTS}, over = {.alternatives = (size_t)opts[0].beam},
                                       greedy = {.alternatives = 1};
    clf_queue_req_t *a, *b, *c, *x = NULL;
    cr_expect_eq(clf_queue_submit_with(q, 0, src, K, &over, &x), CLF_QUEUE_INVALID);
    cr_expect(strstr(clf_ctx_error(NULL), "at most"), "%s", clf_ctx_error(NULL));
    cr_expect_eq(clf_queue_submit_with(q, 1, src, K, &greedy, &x), CLF_QUEUE_INVALID, "greedy keeps one");
    cr_assert_eq(clf_queue_submit(q, 0, src, K, &a), CLF_QUEUE_OK);
    cr_assert_eq(clf_queue_submit_with(q, 0, src, K, &so, &b), CLF_QUEUE_OK);
    cr_assert_eq(clf_queue_submit(q, 0, src + K, 2, &c), CLF_QUEUE_OK);
    cr_assert(clf_queue_wait(a, -1) && clf_queue_wait(b, -1) && clf_queue_wait(c, -1));
    cr_expect(clf_queue_req_result(a) == CLF_QUEUE_OK && clf_queue_req_result(b) == CLF_QUEUE_OK &&
              clf_queue_req_result(c) == CLF_QUEUE_OK, "%s %s %s", clf_queue_req_message(a),
              clf_queue_req_message(b), clf_queue_req_message(c));
    for (size_t i = 0; i < K; i++) {
        cr_expect_str_eq(clf_queue_req_output(a, i), want[0][i]);
        cr_expect_str_eq(clf_queue_req_alternative(a, i, 0), "", "a plain request has none");
        cr_expect_str_eq(clf_queue_req_output(b, i), ref[i * (1 + ALTS)]);
        for (size_t j = 0; j < ALTS; j++)
            cr_expect_str_eq(clf_queue_req_alternative(b, i, j), ref[i * (1 + ALTS) + 1 + j], "line %zu, %zu", i, j);
        cr_expect_str_eq(clf_queue_req_alternative(b, i, ALTS), "", "past the request's alternatives");
    }
    for (size_t i = 0; i < 2; i++)
        cr_expect_str_eq(clf_queue_req_output(c, i), want[0][K + i]);
    clf_queue_req_free(a), clf_queue_req_free(b), clf_queue_req_free(c);
    clf_queue_free(q);
    for (size_t i = 0; i < K * (1 + ALTS); i++)
        free(ref[i]);
}

Test(queue, alternatives_come_from_the_n_best, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(300))
{
    alternatives_case(false);
}

Test(queue, continuous_alternatives_come_from_the_n_best, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    alternatives_case(true);
}

/* A stream's width holds its first waiting sentences and the pair's
 * recent ones (the last 512 to 1024 taken), 64 subwords at least, at most
 * the translator's limit. */
Test(queue, a_streams_width_remembers_the_recent_longest)
{
    struct pair p = {0};
    struct item a = {.len = 20}, b = {.len = 70, .next = NULL};
    cr_expect_eq(clf_queue_stream_width(&p, 8, 256), 64, "nothing seen or waiting: the least width");
    p.head = &a, a.next = &b;
    cr_expect_eq(clf_queue_stream_width(&p, 8, 256), 128, "a waiting sentence of 70");
    cr_expect_eq(clf_queue_stream_width(&p, 1, 256), 64, "only the first `room` waiting count");
    cr_expect_eq(clf_queue_stream_width(&p, 8, 100), 100, "the translator's limit caps it");
    p.head = NULL;
    clf_queue_recent(&p, 70);
    cr_expect_eq(clf_queue_stream_width(&p, 8, 256), 128, "a sentence of 70 taken: the next streams hold one");
    for (int i = 0; i < CLF_QUEUE_RECENT; i++)
        clf_queue_recent(&p, 10);
    cr_expect_eq(clf_queue_stream_width(&p, 8, 256), 128, "still among the last %d", 2 * CLF_QUEUE_RECENT);
    for (int i = 0; i < CLF_QUEUE_RECENT; i++)
        clf_queue_recent(&p, 10);
    cr_expect_eq(clf_queue_stream_width(&p, 8, 256), 64, "forgotten after %d shorter ones", 2 * CLF_QUEUE_RECENT);
}
