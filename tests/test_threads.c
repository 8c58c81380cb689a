/* test_threads.c: the thread-safety clformer_translate.h states: one
 * translator per thread, each on its own context, translating at once.
 * On the imported Marian fixture (relu_separate), 2, 3 and 4 threads each
 * open a context (all at once, after a barrier, the first of them the
 * process's first use of OpenCL), load a translator and translate the
 * same lines over several rounds; every output must be what one
 * translator gives alone, in the main thread, afterwards. And clf_ctx_init from
 * several threads at once, round after round, must open the device the
 * main thread opens. Assertions stay in the main thread (Criterion's are
 * not for other threads): each thread records its status and message. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clformer.h"
#include "testutil.h"

#define FIX CLF_SOURCE_DIR "/tests/fixtures/marian/relu_separate"
#define SRC CLF_SOURCE_DIR "/data/multi30k/test_2016_flickr.en.gz"
#define N_LINES 4
#define MAX_THREADS 4
#define ROUNDS 3

static char model[1024];
static char *src[N_LINES];

static void setup(void)
{
    char imp[600];
    snprintf(imp, sizeof imp, "%s/imp", tu_tmpdir());
    cr_assert_eq(clf_marian_import(FIX, imp), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(model, sizeof model, "%s/model.safetensors", imp);
    struct clf_lines all;
    cr_assert_eq(clf_lines_read(&all, SRC), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_geq(all.n, N_LINES);
    for (size_t i = 0; i < N_LINES; i++)
        cr_assert_not_null(src[i] = strdup(all.line[i]));
    clf_lines_free(&all);
}

static void teardown(void)
{
    for (size_t i = 0; i < N_LINES; i++)
        free(src[i]);
}

/* t's output for the lines, one per line (malloc'd), or NULL with the
 * status in *st. */
static char *translate(clf_translator_t *t, clf_status *st)
{
    struct clf_translate_opts o = clf_translator_opts(t);
    char *out[N_LINES] = {0};
    *st = clf_translator_translate(t, (const char *const *)src, N_LINES, &o,
                                   (struct clf_batching){.sentences = 2}, out, NULL, NULL, NULL);
    if (*st != CLF_OK)
        return NULL;
    size_t len = 1;
    for (size_t i = 0; i < N_LINES; i++)
        len += strlen(out[i]) + 1;
    char *s = malloc(len), *at = s;
    for (size_t i = 0; i < N_LINES; i++) {
        if (s)
            at += sprintf(at, "%s\n", out[i]);
        free(out[i]);
    }
    if (!s)
        *st = CLF_ERR_MEMORY;
    return s;
}

struct job {
    pthread_barrier_t *start;
    char *text[ROUNDS];
    char device[256];
    clf_status st;
    char msg[1024];
};

/* One thread: its own context (opened when every thread is ready), its
 * own translator, ROUNDS translations. */
static void *translate_job(void *arg)
{
    struct job *j = arg;
    clf_ctx_t *ctx = NULL;
    clf_translator_t *t = NULL;
    pthread_barrier_wait(j->start);
    if ((j->st = clf_ctx_init(&ctx, NULL)) != CLF_OK) {
        snprintf(j->msg, sizeof j->msg, "clf_ctx_init: %s", clf_ctx_error(NULL));
        return NULL;
    }
    snprintf(j->device, sizeof j->device, "%s", clf_ctx_device(ctx)->device_name);
    if ((j->st = clf_translator_init(ctx, model, NULL, &t)) != CLF_OK)
        snprintf(j->msg, sizeof j->msg, "clf_translator_init: %s", clf_ctx_error(ctx));
    for (int r = 0; r < ROUNDS && j->st == CLF_OK; r++)
        if (!(j->text[r] = translate(t, &j->st)))
            snprintf(j->msg, sizeof j->msg, "round %d: %s", r, clf_ctx_error(ctx));
    clf_translator_free(t);
    clf_ctx_free(ctx);
    return NULL;
}

/* One translator alone, in the main thread: its output, and the name of
 * the device it ran on. */
static char *alone(char *device, size_t len)
{
    clf_ctx_t *ctx = tu_ctx();
    clf_translator_t *t = NULL;
    cr_assert_eq(clf_translator_init(ctx, model, NULL, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_status st;
    char *want = translate(t, &st);
    cr_assert_not_null(want, "%s: %s", clf_status_str(st), clf_ctx_error(ctx));
    snprintf(device, len, "%s", clf_ctx_device(ctx)->device_name);
    clf_translator_free(t);
    clf_ctx_free(ctx);
    return want;
}

/* The threads come first, so that the first of them query OpenCL for the
 * first time in the process (Criterion runs each test in a new one). */
Test(threads, translators_on_their_own_contexts_at_once, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    struct job jobs[MAX_THREADS + 1][MAX_THREADS] = {0};
    for (int n = 2; n <= MAX_THREADS; n++) {
        pthread_barrier_t start;
        cr_assert_eq(pthread_barrier_init(&start, NULL, (unsigned)n), 0);
        pthread_t th[MAX_THREADS];
        for (int i = 0; i < n; i++) {
            jobs[n][i].start = &start;
            cr_assert_eq(pthread_create(&th[i], NULL, translate_job, &jobs[n][i]), 0);
        }
        for (int i = 0; i < n; i++)
            cr_assert_eq(pthread_join(th[i], NULL), 0);
        pthread_barrier_destroy(&start);
    }
    char device[256];
    char *want = alone(device, sizeof device);
    for (int n = 2; n <= MAX_THREADS; n++)
        for (int i = 0; i < n; i++) {
            struct job *j = &jobs[n][i];
            cr_expect_eq(j->st, CLF_OK, "%d threads, thread %d: %s: %s", n, i, clf_status_str(j->st), j->msg);
            if (j->st == CLF_OK)
                cr_expect_str_eq(j->device, device, "%d threads, thread %d opened another device", n, i);
            for (int r = 0; r < ROUNDS; r++) {
                if (j->text[r])
                    cr_expect_str_eq(j->text[r], want, "%d threads, thread %d, round %d", n, i, r);
                free(j->text[r]);
            }
        }
    free(want);
}

struct open_job {
    pthread_barrier_t *start;
    char device[ROUNDS][256];
    clf_status st[ROUNDS];
    char msg[1024];
};

/* Opens and frees a context ROUNDS times, each after a barrier that every
 * thread waits at, so that the opens overlap. */
static void *open_job(void *arg)
{
    struct open_job *j = arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(j->start);
        clf_ctx_t *ctx = NULL;
        if ((j->st[r] = clf_ctx_init(&ctx, NULL)) != CLF_OK) {
            if (!j->msg[0])
                snprintf(j->msg, sizeof j->msg, "round %d: %s", r, clf_ctx_error(NULL));
            continue;
        }
        snprintf(j->device[r], sizeof j->device[r], "%s", clf_ctx_device(ctx)->device_name);
        clf_ctx_free(ctx);
    }
    return NULL;
}

Test(threads, contexts_open_at_once, .timeout = TU_TIMEOUT(120))
{
    pthread_barrier_t start;
    cr_assert_eq(pthread_barrier_init(&start, NULL, MAX_THREADS), 0);
    struct open_job jobs[MAX_THREADS] = {0};
    pthread_t th[MAX_THREADS];
    for (int i = 0; i < MAX_THREADS; i++) {
        jobs[i].start = &start;
        cr_assert_eq(pthread_create(&th[i], NULL, open_job, &jobs[i]), 0);
    }
    for (int i = 0; i < MAX_THREADS; i++)
        cr_assert_eq(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    clf_ctx_t *ctx = tu_ctx();  /* after the threads, as above */
    char device[256];
    snprintf(device, sizeof device, "%s", clf_ctx_device(ctx)->device_name);
    clf_ctx_free(ctx);
    for (int i = 0; i < MAX_THREADS; i++)
        for (int r = 0; r < ROUNDS; r++) {
            cr_expect_eq(jobs[i].st[r], CLF_OK, "thread %d, round %d: %s (%s)", i, r, clf_status_str(jobs[i].st[r]),
                         jobs[i].msg);
            if (jobs[i].st[r] == CLF_OK)
                cr_expect_str_eq(jobs[i].device[r], device, "thread %d, round %d opened another device", i, r);
        }
}
