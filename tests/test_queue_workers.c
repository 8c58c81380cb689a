/* test_queue_workers.c: the translation queue with two workers
 * (clf_queue_init_workers), each on its own context of the same device,
 * each with its own translator of an imported Marian fixture: many
 * one-sentence requests get clf_translator_translate's output, and both
 * workers took batches; a device failure injected into worker 1
 * (CLF_FAULT_QUEUE=fail-after:0@1) takes it out, its sentences go to
 * worker 0, no request fails, and the health is DEGRADED naming worker 1;
 * a failure of both leaves the last one serving its failures as a lone
 * worker does (requests FAILED, health FAILED). Rounds and continuous
 * batching alike. Label host: the queue's logic, once, and under ASan. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clformer.h"
#include "clformer_serve.h"
#include "testutil.h"

#define FIX CLF_SOURCE_DIR "/tests/fixtures/marian/"
#define SRC CLF_SOURCE_DIR "/data/multi30k/test_2016_flickr.en.gz"
#define N_LINES 8
#define N_REQ 24 /* one sentence each, lines reused: rounds of two give each worker many chances */

static struct clf_lines all;
static clf_ctx_t *ctx[2];
static clf_translator_t *t[2]; /* worker w's translator of the one pair */
static char *want[N_LINES];

static void setup(void)
{
    char imp[600], model[700];
    snprintf(imp, sizeof imp, "%s/imp", tu_tmpdir());
    cr_assert_eq(clf_marian_import(FIX "relu_separate", imp), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(model, sizeof model, "%s/model.safetensors", imp);
    cr_assert_eq(clf_lines_read(&all, SRC), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_geq(all.n, N_LINES);
    for (int w = 0; w < 2; w++) { /* two contexts: as two devices would be */
        ctx[w] = tu_ctx();
        cr_assert_eq(clf_translator_init(ctx[w], model, NULL, &t[w]), CLF_OK, "%s", clf_ctx_error(ctx[w]));
    }
    const struct clf_translate_opts o = clf_translator_opts(t[0]);
    cr_assert_eq(clf_translator_translate(t[0], (const char *const *)all.line, N_LINES, &o, CLF_BATCHING_DEFAULT,
                                          want, NULL, NULL, NULL),
                 CLF_OK, "%s", clf_ctx_error(ctx[0]));
}

static void teardown(void)
{
    for (size_t i = 0; i < N_LINES; i++)
        free(want[i]);
    for (int w = 0; w < 2; w++)
        clf_translator_free(t[w]), clf_ctx_free(ctx[w]);
    clf_lines_free(&all);
}

/* N_REQ one-sentence requests at once; true when each finished OK with its
 * line's translation (failures reported), false where any did not. */
static bool serve_all(clf_queue_t *q, clf_queue_rc expect)
{
    clf_queue_req_t *r[N_REQ];
    bool ok = true;
    for (size_t i = 0; i < N_REQ; i++)
        cr_assert_eq(clf_queue_submit(q, 0, (const char *const *)&all.line[i % N_LINES], 1, &r[i]), CLF_QUEUE_OK);
    for (size_t i = 0; i < N_REQ; i++) {
        cr_assert(clf_queue_wait(r[i], -1));
        if (clf_queue_req_result(r[i]) != expect) {
            cr_expect_eq(clf_queue_req_result(r[i]), expect, "request %zu: %s", i, clf_queue_req_message(r[i]));
            ok = false;
        } else if (expect == CLF_QUEUE_OK && strcmp(clf_queue_req_output(r[i], 0), want[i % N_LINES])) {
            cr_expect_str_eq(clf_queue_req_output(r[i], 0), want[i % N_LINES], "request %zu", i);
            ok = false;
        }
        clf_queue_req_free(r[i]);
    }
    return ok;
}

static struct clf_queue_opts qo_of(bool continuous)
{
    /* two sentences a round or a stream: the work is cut in many pieces, for both workers */
    return (struct clf_queue_opts){.max_batch_tokens = 256, .max_batch_sentences = 2, .batch_wait_ms = 1,
                                   .continuous = continuous};
}

static void both_case(bool continuous)
{
    const struct clf_queue_opts qo = qo_of(continuous);
    clf_queue_t *q = NULL;
    cr_assert_eq(clf_queue_init_workers(t, 2, 1, NULL, &qo, &q), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_queue_workers(q), 2);
    /* a worker misses a piece only where it was not scheduled while the
     * other took it: a few passes of N_REQ make it near impossible for one
     * to get none, on a loaded machine too (no timing is asserted) */
    struct clf_queue_worker_stats ws[2];
    for (int pass = 0; pass < 5; pass++) {
        cr_assert(serve_all(q, CLF_QUEUE_OK));
        clf_queue_worker_stats(q, 0, &ws[0]), clf_queue_worker_stats(q, 1, &ws[1]);
        if (ws[0].batches && ws[1].batches)
            break;
    }
    struct clf_queue_stats s;
    clf_queue_stats(q, &s);
    for (int w = 0; w < 2; w++) {
        cr_expect_gt(ws[w].batches, 0, "worker %d took no batch", w);
        cr_expect(ws[w].busy_s > 0 && ws[w].busy_s <= ws[w].up_s, "worker %d busy %g s of %g", w, ws[w].busy_s,
                  ws[w].up_s);
        cr_expect(!ws[w].out && !ws[w].failing && ws[w].device[0]);
    }
    cr_expect_eq(ws[0].sentences + ws[1].sentences, s.sentences);
    cr_expect_eq(ws[0].batches + ws[1].batches, s.batches);
    struct clf_queue_health h;
    cr_expect_eq(clf_queue_health(q, 0, &h), CLF_QUEUE_HEALTH_OK, "%s", h.message);
    cr_expect(h.workers == 2 && h.serving == 2);
    clf_queue_free(q);
}

Test(queue_workers, two_workers_give_one_workers_outputs_and_share_the_work, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    both_case(false);
}

Test(queue_workers, continuous_two_workers_give_one_workers_outputs_and_share_the_work, .init = setup,
     .fini = teardown, .timeout = TU_TIMEOUT(300))
{
    both_case(true);
}

/* fail-after:0@1: worker 1's first call fails as a dead device's. */
static void out_case(bool continuous)
{
    const struct clf_queue_opts qo = qo_of(continuous);
    clf_queue_t *q = NULL;
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", "fail-after:0@2"), CLF_OK);
    cr_expect_eq(clf_queue_init_workers(t, 2, 1, NULL, &qo, &q), CLF_ERR_ARG, "no worker 2");
    cr_expect(strstr(clf_ctx_error(NULL), "CLF_FAULT_QUEUE=fail-after:0@2"), "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", "fail-after:0@1"), CLF_OK);
    const clf_status st = clf_queue_init_workers(t, 2, 1, NULL, &qo, &q);
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", NULL), CLF_OK);
    cr_assert_eq(st, CLF_OK, "%s", clf_ctx_error(NULL));
    /* until worker 1 took a batch (and was taken out): no request fails meanwhile */
    struct clf_queue_worker_stats ws;
    for (int pass = 0; pass < 5; pass++) {
        cr_assert(serve_all(q, CLF_QUEUE_OK));
        clf_queue_worker_stats(q, 1, &ws);
        if (ws.out)
            break;
    }
    cr_assert(ws.out, "worker 1 was never taken out (took %llu batches)", (unsigned long long)ws.batches);
    cr_expect_eq(ws.device_failures, 1);
    cr_expect_eq(ws.sentences, 0);
    struct clf_queue_health h;
    cr_expect_eq(clf_queue_health(q, 0, &h), CLF_QUEUE_HEALTH_DEGRADED, "%s", h.message);
    cr_expect(h.workers == 2 && h.serving == 1, "%zu of %zu serving", h.serving, h.workers);
    cr_expect(strstr(h.message, "worker 1") && strstr(h.message, "CLF_FAULT_QUEUE"), "%s", h.message);
    cr_expect(serve_all(q, CLF_QUEUE_OK), "worker 0 serves on alone");
    struct clf_queue_stats s;
    clf_queue_stats(q, &s);
    cr_expect_eq(s.failed, 0);
    clf_queue_worker_stats(q, 0, &ws);
    cr_expect_eq(ws.sentences, s.sentences);
    clf_queue_free(q);
}

Test(queue_workers, a_failed_worker_is_taken_out_and_the_other_serves, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    out_case(false);
}

Test(queue_workers, continuous_a_failed_worker_is_taken_out_and_the_other_serves, .init = setup,
     .fini = teardown, .timeout = TU_TIMEOUT(300))
{
    out_case(true);
}

/* fail-after:0 (every worker): the first failure takes its worker out, the
 * last one stays and fails its requests with the device's message. */
Test(queue_workers, when_every_worker_fails_the_requests_fail_and_the_health_says_so, .init = setup,
     .fini = teardown, .timeout = TU_TIMEOUT(300))
{
    const struct clf_queue_opts qo = qo_of(false);
    clf_queue_t *q = NULL;
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", "fail-after:0"), CLF_OK);
    const clf_status st = clf_queue_init_workers(t, 2, 1, NULL, &qo, &q);
    cr_assert_eq(clf_setting_set("CLF_FAULT_QUEUE", NULL), CLF_OK);
    cr_assert_eq(st, CLF_OK, "%s", clf_ctx_error(NULL));
    serve_all(q, CLF_QUEUE_FAILED);
    struct clf_queue_health h;
    cr_expect_eq(clf_queue_health(q, 0, &h), CLF_QUEUE_HEALTH_FAILED, "%s", h.message);
    cr_expect_eq(h.serving, 0);
    cr_expect(strstr(h.message, "worker 0") && strstr(h.message, "worker 1"), "%s", h.message);
    struct clf_queue_worker_stats ws[2];
    clf_queue_worker_stats(q, 0, &ws[0]), clf_queue_worker_stats(q, 1, &ws[1]);
    cr_expect(ws[0].out != ws[1].out, "one out, the last one kept: %d %d", ws[0].out, ws[1].out);
    clf_queue_free(q);
}
