/* test_mpi.c: data-parallel training (`mpirun -np 2 clformer train`),
 * built only when CMake found MPI. Two ranks give what one process gives
 * when it accumulates the same batches; a two-rank run resumes exactly;
 * a rank that fails ends the job with a message naming it.
 *
 * Each rank runs PoCL with one thread (POCL_MAX_PTHREAD_COUNT=1) so that
 * two ranks share CI's two cores instead of fighting over them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"
/* (ASAN_OPTIONS: in the sanitizer build, the ranks' leak check is off:
 * Open MPI unloads its plugins before LeakSanitizer runs, so their
 * process-lifetime allocations can be neither attributed nor suppressed;
 * address and UB checks stay on) */
#define MPIRUN "POCL_MAX_PTHREAD_COUNT=1 ASAN_OPTIONS=detect_leaks=0 timeout -k 5 300 " MPIEXEC \
               " --allow-run-as-root --oversubscribe -np 2 "

static char dir[256];

/* 300 lines of random "words", the same on both sides (a copy task as
 * text), as test_train.c writes them. */
static void setup_dir(void)
{
    static const char *words[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"};
    uint64_t rng = 88172645463325252ULL;
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    char s[512], t[512];
    snprintf(s, sizeof s, "%s/src.txt", dir);
    snprintf(t, sizeof t, "%s/tgt.txt", dir);
    FILE *a = fopen(s, "w"), *b = fopen(t, "w");
    cr_assert(a && b);
    for (int i = 0; i < 300; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        int len = 2 + (int)(rng % 5);
        for (int j = 0; j < len; j++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            fprintf(a, "%s%s", j ? " " : "", words[rng % 8]);
            fprintf(b, "%s%s", j ? " " : "", words[rng % 8]);
        }
        fputc('\n', a), fputc('\n', b);
    }
    fclose(a), fclose(b);
}

/* --update-tokens 256 with --max-tokens 256: no batch holds 256 target
 * tokens, so every update is two or more batches and the one-process run
 * and the two-rank run form the same updates (an update takes at least one
 * batch per rank). --lr-scale 0.1: see same_as_one_process. */
#define TRAIN "%s train --src %s/src.txt --tgt %s/tgt.txt --val-src '' --val-tgt '' --preset tiny --vocab 300 " \
              "--max-tokens 256 --update-tokens 256 --warmup 10 --lr-scale 0.1 --dropout 0.1 --seed 3"

/* The loss and tokens of each update record of out's log.jsonl; returns
 * how many. */
static int read_log(const char *out, double *loss, double *tokens, int max)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/log.jsonl", dir, out);
    char *s = tu_slurp(path);
    int n = 0;
    for (char *line = strtok(s, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        char *l = strstr(line, "\"loss\":"), *t = strstr(line, "\"tokens\":");
        if (l && t) {
            loss[n] = atof(l + 7);
            tokens[n++] = atof(t + 9);
        }
    }
    free(s);
    return n;
}

static void run_ok(const char *cmd)
{
    char err[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    int rc = tu_run(cmd, err);
    char *msg = tu_slurp(err);
    cr_assert_eq(rc, 0, "'%s' failed (%d):\n%s", cmd, rc, msg);
    free(msg);
}

/* The same GEMM arithmetic in both runs: OpenBLAS's sgemm gives other
 * last bits with another thread count (Debian's 0.3.21 on an AVX2 Zen 3:
 * 96×K·K×32, one thread against two, differ from K = 86 on), and a rank
 * that Open MPI binds to one core runs one thread where a lone process
 * runs one per core. Measured (20 updates below): the lone process at two
 * threads was 3.6 times the parameters' tolerance from two ranks, at one
 * thread 6% of it, and PoCL's thread count changed nothing. The tiny
 * model's GEMMs are all OpenBLAS's (too small for oneDNN's), so
 * CLF_BLAS_THREADS sets the count; both runs name it rather than trust the
 * binding. */
#define BLAS_ONE "CLF_BLAS_THREADS=1 "

/* Exact equality is not to be had: the two ranks' gradients are summed
 * (g0 + g1) + g2 where one process adds into its buffer op by op, and a
 * parameter that several ops add to (the shared embedding: source,
 * target and output projection) then rounds differently, by ~1e-7
 * relative (observed: the first two updates equal to the last digit
 * logged, the third 1e-6 apart at the default learning rate). At the
 * tiny preset's own peak learning rate (0.056, where its loss still jumps
 * up) such differences grow chaotically, to 5e-3 after 20 updates; at a
 * tenth of it they stayed under 3e-7 for the losses. The tolerances below
 * are 1e-5 relative for the losses, and for the parameters 1e-6 absolute
 * plus 1e-5 relative (observed: at most 3e-7 apart, parameters being
 * ~0.01-1; small ones differ by up to 3e-4 of themselves).
 *
 * One slice is left out: the attention's key biases (the middle third of
 * each in_proj.bias). Adding a constant to every key of a query's scores
 * changes no softmax, so their true gradient is zero and the computed one
 * is rounding noise (~1e-10), which Adam divides by its own root mean
 * square and turns into steps of the learning rate's size: in any two runs
 * that round differently these biases are different random walks (they
 * ended up to 1e-2 apart here). */
Test(mpi, same_as_one_process, .init = setup_dir, .timeout = TU_TIMEOUT(600))
{
    enum { STEPS = 20 };
    char cmd[2048];
    /* one process, without mpirun (which starts no MPI at all), and two
     * ranks, comparing their parameters every 5 updates on the way: both
     * with one BLAS thread a process (see BLAS_ONE above) */
    snprintf(cmd, sizeof cmd, BLAS_ONE TRAIN " --quiet --steps %d --out %s/one", CLI, dir, dir, STEPS, dir);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "CLF_DIST_CHECK=5 " BLAS_ONE MPIRUN TRAIN " --steps %d --out %s/two", CLI, dir, dir,
             STEPS, dir);
    run_ok(cmd);
    char err[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    char *talk = tu_slurp(err);
    cr_assert(strstr(talk, "2 ranks, gradients of"), "no sign of two ranks in:\n%s", talk);
    free(talk);

    double l1[STEPS + 1], t1[STEPS + 1], l2[STEPS + 1], t2[STEPS + 1], worst = 0;
    cr_assert_eq(read_log("one", l1, t1, STEPS + 1), STEPS);
    cr_assert_eq(read_log("two", l2, t2, STEPS + 1), STEPS);
    for (int i = 0; i < STEPS; i++) {
        cr_assert_eq(t1[i], t2[i], "update %d: %.0f target tokens in one process, %.0f over two ranks", i + 1,
                     t1[i], t2[i]);
        double rel = fabs(l1[i] - l2[i]) / fabs(l1[i]);
        worst = fmax(worst, rel);
        cr_assert_leq(rel, 1e-5, "update %d: loss %.6f in one process, %.6f over two ranks", i + 1, l1[i], l2[i]);
    }

    clf_ctx_t *ctx = tu_ctx();
    clf_model_t *a, *b;
    char p[512];
    snprintf(p, sizeof p, "%s/one/ckpt-%d.safetensors", dir, STEPS);
    cr_assert_eq(clf_model_load(ctx, &a, p), CLF_OK, "%s", clf_ctx_error(ctx));
    snprintf(p, sizeof p, "%s/two/ckpt-%d.safetensors", dir, STEPS);
    cr_assert_eq(clf_model_load(ctx, &b, p), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t n = clf_model_numel(a);
    cr_assert_eq(clf_model_numel(b), n);
    float *wa = tu_download(ctx, clf_model_weights(a), n), *wb = tu_download(ctx, clf_model_weights(b), n);
    size_t np, compared = 0, differ = 0;
    const struct clf_param *par = clf_model_params(a, &np);
    double wabs = 0, margin = 0;  /* the largest difference, and its share of the tolerance */
    for (size_t k = 0; k < np; k++) {
        size_t len = par[k].ndim == 2 ? par[k].shape[0] * par[k].shape[1] : par[k].shape[0];
        const float *x = wa + par[k].offset, *y = wb + par[k].offset;
        size_t skip_lo = len, skip_hi = len;  /* the key biases: see above */
        if (strstr(par[k].name, "in_proj.bias"))
            skip_lo = len / 3, skip_hi = 2 * len / 3;
        for (size_t i = 0; i < len; i++) {
            if (i >= skip_lo && i < skip_hi)
                continue;
            compared++;
            differ += x[i] != y[i];
            wabs = fmax(wabs, fabs((double)y[i] - x[i]));
            margin = fmax(margin, fabs((double)y[i] - x[i]) / (1e-6 + 1e-5 * fabs((double)x[i])));
        }
        cr_assert(tu_close(par[k].name, y, x, skip_lo, 1e-6, 1e-5));
        cr_assert(tu_close(par[k].name, y + skip_hi, x + skip_hi, len - skip_hi, 1e-6, 1e-5));
    }
    cr_log_info("two ranks vs one process: losses within %.2g relative; %zu of %zu parameters compared, %zu "
                "differ, by at most %.2g (%.0f%% of the tolerance at worst)", worst, compared, n, differ, wabs, 100 * margin);
    cr_assert_gt(compared, n * 9 / 10);
    free(wa), free(wb);
    clf_model_free(a), clf_model_free(b);
    clf_ctx_free(ctx);
}

/* The gradients summed in buckets while the backward runs give the
 * parameters that summing the whole buffer after it (--bucket-mb 0) gives,
 * bit for bit: per element both are MPI_SUM of the same two floats, a + b.
 * Buckets of 0.02 MB cut the tiny model's 0.2 MB into one per layer (2 + 2)
 * and one for the embeddings;
 * the default 3 MB makes one, started after the whole backward. */
Test(mpi, buckets_give_the_sum_after_the_backward, .init = setup_dir, .timeout = TU_TIMEOUT(600))
{
    enum { STEPS = 12 };
    const char *runs[] = {"whole", "small", "default"}, *flags[] = {"--bucket-mb 0", "--bucket-mb 0.02", ""};
    char cmd[2048], err[512], p[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    double l[3][STEPS + 1], t[3][STEPS + 1];
    float *w[3];
    clf_ctx_t *ctx = tu_ctx();
    for (int r = 0; r < 3; r++) {
        snprintf(cmd, sizeof cmd, MPIRUN TRAIN " --steps %d --out %s/%s %s", CLI, dir, dir, STEPS, dir, runs[r],
                 flags[r]);
        run_ok(cmd);
        static const char said[] = "gradient buckets per update: ";
        char *talk = tu_slurp(err), *k = strstr(talk, said);
        cr_assert_eq(!k, r == 0, "%s: %s", runs[r], talk);
        if (r == 1)
            cr_assert_geq(atoi(k + strlen(said)), 5, "not a bucket per layer and one for the embeddings:\n%s", talk);
        if (r == 2)
            cr_assert_eq(atoi(k + strlen(said)), 1, "3 MB buckets over 0.2 MB of gradients:\n%s", talk);
        free(talk);
        cr_assert_eq(read_log(runs[r], l[r], t[r], STEPS + 1), STEPS);
        clf_model_t *m;
        snprintf(p, sizeof p, "%s/%s/ckpt-%d.safetensors", dir, runs[r], STEPS);
        cr_assert_eq(clf_model_load(ctx, &m, p), CLF_OK, "%s", clf_ctx_error(ctx));
        w[r] = tu_download(ctx, clf_model_weights(m), clf_model_numel(m));
        if (r > 0) {
            for (int i = 0; i < STEPS; i++)
                cr_assert(l[r][i] == l[0][i] && t[r][i] == t[0][i], "%s: update %d: loss %.6f, %.6f without "
                          "buckets", runs[r], i + 1, l[r][i], l[0][i]);
            cr_assert(memcmp(w[r], w[0], clf_model_numel(m) * sizeof(float)) == 0,
                      "%s: the parameters differ from those summed after the backward", runs[r]);
        }
        clf_model_free(m);
    }
    for (int r = 0; r < 3; r++)
        free(w[r]);
    clf_ctx_free(ctx);
}

/* Two ranks, stopped after 10 updates and resumed, log what two ranks log
 * straight through, to the digit. */
Test(mpi, resume_gives_the_same_losses, .init = setup_dir, .timeout = TU_TIMEOUT(600))
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, MPIRUN TRAIN " --quiet --steps 20 --out %s/straight", CLI, dir, dir, dir);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, MPIRUN TRAIN " --quiet --steps 10 --out %s/resumed", CLI, dir, dir, dir);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, MPIRUN TRAIN " --quiet --steps 20 --out %s/resumed --resume", CLI, dir, dir, dir);
    run_ok(cmd);
    double la[21], ta[21], lb[21], tb[21];
    cr_assert_eq(read_log("straight", la, ta, 21), 20);
    cr_assert_eq(read_log("resumed", lb, tb, 21), 20);
    for (int i = 0; i < 20; i++)
        cr_assert(la[i] == lb[i] && ta[i] == tb[i], "update %d: straight loss %.6f (%.0f tokens), resumed %.6f (%.0f)",
                  i + 1, la[i], ta[i], lb[i], tb[i]);
}

/* A rank that fails (CLF_DIST_FAIL_RANK=1: rank 1 fails at update 3, a
 * hook for this test) ends the whole job, naming itself and the duty,
 * instead of leaving rank 0 waiting for its gradients. */
Test(mpi, a_failing_rank_ends_the_job, .init = setup_dir, .timeout = TU_TIMEOUT(300))
{
    char cmd[2048], err[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "CLF_DIST_FAIL_RANK=1 " MPIRUN TRAIN " --quiet --steps 20 --out %s/fail", CLI, dir,
             dir, dir);
    double t0 = clf_now();
    int rc = tu_run(cmd, err);
    double took = clf_now() - t0;
    char *msg = tu_slurp(err);
    cr_assert_neq(rc, 0, "the job succeeded:\n%s", msg);
    cr_assert_neq(rc, 124, "the job hung until timeout killed it:\n%s", msg);
    cr_assert(strstr(msg, "rank 1 of 2: training step failed"), "no message naming rank 1 in:\n%s", msg);
    cr_assert(strstr(msg, "CLF_DIST_FAIL_RANK=1: failing at update 3"), "no cause in:\n%s", msg);
    cr_log_info("a failing rank ended the job in %.1f s", took);
    free(msg);
}

/* bench allreduce over two ranks: rank 0 alone prints, one record, of two
 * ranks summing the tiny preset's gradients (4 bytes each) in a measured,
 * non-zero time, and of the backward timed with and without the sum in
 * buckets; run plainly it is one process that sums nothing. */
static void bench_allreduce(const char *launcher, int ranks)
{
    char cmd[2048], err[512], out[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    snprintf(out, sizeof out, "%s/allreduce.json", dir);
    snprintf(cmd, sizeof cmd, "%s%s bench allreduce --preset tiny --quick --json > %s", launcher, CLI, out);
    int rc = tu_run(cmd, err);
    char *msg = tu_slurp(err), *s = tu_slurp(out);
    cr_assert_eq(rc, 0, "'%s' failed (%d):\n%s", cmd, rc, msg);
    char *nl = strchr(s, '\n');
    cr_assert(nl && !nl[1], "not one line of JSON (only rank 0 prints):\n%s", s);
    char *r = strstr(s, "\"ranks\": "), *p = strstr(s, "\"params\": "), *b = strstr(s, "\"bytes_per_update\": "),
         *t = strstr(s, "\"sum\": ");
    cr_assert(r && p && b && t, "fields missing in:\n%s", s);
    cr_assert_eq(atoi(r + 9), ranks, "%s", s);
    cr_assert_gt(atol(p + 10), 0);
    cr_assert_eq(atol(b + 20), 4 * atol(p + 10), "%s", s);
    if (ranks > 1)
        cr_assert_gt(atof(t + 7), 0, "no time spent summing over two ranks:\n%s", s);
    /* the backward timed alone, with the sum after it, with it in buckets */
    char *nb = strstr(s, "\"buckets\": "), *ta = strstr(s, "\"alone\": "), *tw = strstr(s, "\"sum_after\": "),
         *tb = strstr(s, "\"sum_in_buckets\": ");
    cr_assert(nb && ta && tw && tb, "backward fields missing in:\n%s", s);
    cr_assert_geq(atoi(nb + 11), 1, "%s", s);
    cr_assert(atof(ta + 9) > 0 && atof(tw + 13) > 0 && atof(tb + 18) > 0, "%s", s);
    free(msg);
    free(s);
}

Test(mpi, bench_allreduce_sums_over_the_ranks, .init = setup_dir, .timeout = TU_TIMEOUT(300))
{
    bench_allreduce(MPIRUN, 2);
    bench_allreduce("", 1);
}

/* bench train over two ranks, each on its own batch, with the gradients
 * summed: rank 0 alone prints the job's figure and its scaling against a
 * one-process run of the same preset (--one). */
Test(mpi, bench_train_scales_against_one_rank, .init = setup_dir, .timeout = TU_TIMEOUT(600))
{
    char cmd[2048], one[512], two[512];
    snprintf(one, sizeof one, "%s/one.json", dir);
    snprintf(two, sizeof two, "%s/two.json", dir);
    snprintf(cmd, sizeof cmd, "POCL_MAX_PTHREAD_COUNT=1 %s bench train --preset tiny --quick --json > %s", CLI, one);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, MPIRUN "%s bench train --preset tiny --quick --json --one %s > %s", CLI, one, two);
    run_ok(cmd);
    char *s = tu_slurp(two), *nl = strchr(s, '\n');
    cr_assert(nl && !nl[1], "not one line of JSON (only rank 0 prints):\n%s", s);
    char *r = strstr(s, "\"ranks\": "), *sc = strstr(s, "\"scaling\": "), *sum = strstr(s, "\"sum_seconds_per_step\": ");
    cr_assert(r && sc && sum, "fields missing in:\n%s", s);
    cr_assert_eq(atoi(r + 9), 2, "%s", s);
    cr_assert_gt(atof(sc + 11), 0, "%s", s);
    cr_assert_gt(atof(sum + 24), 0, "no time spent summing:\n%s", s);
    cr_log_info("two ranks against one: %s", sc);
    free(s);
}
