/* test_mpi_translate.c: `mpirun -np 2 clformer translate`, built only
 * when CMake found MPI (as test_mpi.c). Two ranks, each translating one
 * shard of the input, write what one process writes, byte for byte, to
 * --output and to stdout, and leave no shard behind; a rank that fails
 * ends the job naming itself and its shard, the other rank's finished
 * shard stays, and --resume translates only the missing one; so with a
 * rank killed outright; a shard file of another job is refused. And the
 * library's shard arithmetic.
 *
 * Each rank runs PoCL with one thread and OpenBLAS with one (test_mpi.c
 * says why: the same GEMM arithmetic in one process and in each rank). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clformer_translate.h"
#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"
#define DATA CLF_SOURCE_DIR "/data/multi30k"
#define ONE "POCL_MAX_PTHREAD_COUNT=1 CLF_BLAS_THREADS=1 "
/* (ASAN_OPTIONS: the ranks' leak check is off in the sanitizer build, as
 * test_mpi.c says why; the lone process keeps it) */
#define MPIRUN ONE "ASAN_OPTIONS=detect_leaks=0 timeout -k 5 300 " MPIEXEC " --allow-run-as-root --oversubscribe -np 2 "

static char dir[256];

/* A tiny model trained for two updates (enough to decode
 * deterministically, as test_inputs.c's) and 41 source lines: an odd
 * count, so the shards differ in size (lines 1-21 and 22-41). */
static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    char cmd[2048], err[512];
    snprintf(err, sizeof err, "%s/setup.err", dir);
    snprintf(cmd, sizeof cmd,
             ONE "%s train --src %s/val.en.gz --tgt %s/val.de.gz --val-src '' --val-tgt '' --preset tiny "
                 "--vocab 400 --steps 2 --quiet --out %s/m && zcat %s/val.en.gz | head -n 41 > %s/in.txt",
             CLI, DATA, DATA, dir, DATA, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
}

/* Runs `[launcher] clformer translate --model … --input in.txt ARGS`;
 * returns its status, its stderr in *msg (the caller frees). */
static int translate(const char *launcher, const char *args, char **msg)
{
    char cmd[2048], err[512];
    snprintf(err, sizeof err, "%s/translate.err", dir);
    snprintf(cmd, sizeof cmd, "%s%s translate --model %s/m/ckpt-2.safetensors --input %s/in.txt --greedy %s",
             launcher, CLI, dir, dir, args);
    int rc = tu_run(cmd, err);
    *msg = tu_slurp(err);
    return rc;
}

static char *slurp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return tu_slurp(path);
}

static bool exists(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* One process's translation, into one.txt. */
static char *one_process(void)
{
    char args[1024], *msg;
    snprintf(args, sizeof args, "--quiet --output %s/one.txt", dir);
    int rc = translate(ONE, args, &msg);
    cr_assert_eq(rc, 0, "one process failed (%d):\n%s", rc, msg);
    free(msg);
    char *one = slurp("one.txt");
    cr_assert_eq(count_lines(one), 41, "one process wrote %zu lines, not 41", count_lines(one));
    return one;
}

Test(mpi_translate, two_ranks_write_what_one_process_writes, .init = setup, .timeout = TU_TIMEOUT(300))
{
    char *one = one_process(), args[1024], *msg;

    /* --output: the shards beside it, joined and removed */
    snprintf(args, sizeof args, "--output %s/two.txt", dir);
    int rc = translate(MPIRUN, args, &msg);
    cr_assert_eq(rc, 0, "two ranks failed (%d):\n%s", rc, msg);
    cr_assert(strstr(msg, "rank 1 of 2: shard 2 of 2 (lines 22-41)"), "no sign of rank 1's shard in:\n%s", msg);
    cr_assert(strstr(msg, "41/41 sentences, 2 of 2 shards ended"), "no job progress in:\n%s", msg);
    cr_assert(strstr(msg, "translated 41 sentences over 2 ranks"), "no job summary in:\n%s", msg);
    free(msg);
    char *two = slurp("two.txt");
    cr_assert_str_eq(two, one, "two ranks' output differs from one process's");
    cr_assert(!exists("two.txt.shard-1-of-2") && !exists("two.txt.shard-2-of-2"), "shards left behind");

    /* stdout, the shards in --work-dir */
    snprintf(args, sizeof args, "--quiet --work-dir %s/work > %s/three.txt", dir, dir);
    rc = translate(MPIRUN, args, &msg);
    cr_assert_eq(rc, 0, "two ranks to stdout failed (%d):\n%s", rc, msg);
    free(msg);
    char *three = slurp("three.txt");
    cr_assert_str_eq(three, one, "two ranks' stdout differs from one process's output");
    cr_assert(!exists("work/translation.shard-1-of-2") && !exists("work/translation.shard-2-of-2"),
              "shards left in --work-dir");
    free(one), free(two), free(three);
}

/* CLF_DIST_FAIL_RANK=1: rank 1 translates its shard and fails instead of
 * writing it (the hook train has too). */
Test(mpi_translate, a_failed_rank_keeps_the_finished_shard_and_resume_ends_the_job, .init = setup,
     .timeout = TU_TIMEOUT(300))
{
    char *one = one_process(), args[1024], *msg;
    snprintf(args, sizeof args, "--output %s/out.txt", dir);
    int rc = translate("CLF_DIST_FAIL_RANK=1 " MPIRUN, args, &msg);
    cr_assert_neq(rc, 0, "the job succeeded:\n%s", msg);
    cr_assert_neq(rc, 124, "the job hung until timeout killed it:\n%s", msg);
    cr_assert(strstr(msg, "CLF_DIST_FAIL_RANK=1: failing shard 2 of 2"), "no cause in:\n%s", msg);
    cr_assert(strstr(msg, "rank 1 of 2 failed on shard 2 of 2 (lines 22-41)"), "no message naming rank 1 and its "
              "shard in:\n%s", msg);
    cr_assert(strstr(msg, "--resume"), "no hint of --resume in:\n%s", msg);
    free(msg);
    cr_assert(!exists("out.txt"), "a failed job wrote its output");
    cr_assert(!exists("out.txt.shard-2-of-2"), "the failed rank left a shard");
    cr_assert(exists("out.txt.shard-1-of-2"), "rank 0's finished shard was lost");
    char *kept = slurp("out.txt.shard-1-of-2");
    cr_assert_eq(count_lines(kept), 21);
    cr_assert(!strncmp(kept, one, strlen(kept)), "rank 0's shard is not the first 21 lines of one process's");
    free(kept);

    /* a shard of another job (3 lines where 20 belong) is refused, naming it */
    char path[512];
    snprintf(path, sizeof path, "%s/out.txt.shard-2-of-2", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("a\nb\nc\n", f);
    fclose(f);
    snprintf(args, sizeof args, "--output %s/out.txt --resume", dir);
    rc = translate(MPIRUN, args, &msg);
    cr_assert(rc != 0 && rc != 124, "a foreign shard was taken (%d):\n%s", rc, msg);
    cr_assert(strstr(msg, "out.txt.shard-2-of-2 holds 3 lines where this job's shard has 20"), "%s", msg);
    free(msg);
    unlink(path);

    /* --resume: rank 0 skips its shard, rank 1 translates its own */
    rc = translate(MPIRUN, args, &msg);
    cr_assert_eq(rc, 0, "--resume failed (%d):\n%s", rc, msg);
    cr_assert(strstr(msg, "rank 0 of 2: shard 1 of 2 (lines 1-21) is finished"), "rank 0 did not skip:\n%s", msg);
    cr_assert(strstr(msg, "rank 1 of 2: shard 2 of 2 (lines 22-41) on "), "rank 1 did not translate:\n%s", msg);
    free(msg);
    char *out = slurp("out.txt");
    cr_assert_str_eq(out, one, "the resumed job's output differs from one process's");
    cr_assert(!exists("out.txt.shard-1-of-2") && !exists("out.txt.shard-2-of-2"), "shards left behind");
    free(out), free(one);
}

/* CLF_DIST_KILL_RANK=1: rank 1, its shard translated, waits for rank 0's
 * shard file and dies of SIGKILL before writing its own, as a crash
 * would: mpirun ends the job naming the rank, rank 0's shard stays, and
 * --resume ends the job, removing the dead writer's temporary too. */
Test(mpi_translate, a_killed_rank_keeps_the_finished_shard_and_resume_ends_the_job, .init = setup,
     .timeout = TU_TIMEOUT(300))
{
    char *one = one_process(), args[1024], *msg;
    snprintf(args, sizeof args, "--output %s/out.txt", dir);
    int rc = translate("CLF_DIST_KILL_RANK=1 " MPIRUN, args, &msg);
    cr_assert(rc != 0 && rc != 124, "the job succeeded or hung (%d):\n%s", rc, msg);
    cr_assert(strstr(msg, "process rank 1") && strstr(msg, "signal 9"), "no message naming rank 1 in:\n%s", msg);
    free(msg);
    cr_assert(!exists("out.txt") && !exists("out.txt.shard-2-of-2"), "the killed rank's output is there");
    cr_assert(exists("out.txt.shard-1-of-2"), "rank 0's finished shard was lost");

    snprintf(args, sizeof args, "--output %s/out.txt --resume", dir);
    rc = translate(MPIRUN, args, &msg);
    cr_assert_eq(rc, 0, "--resume failed (%d):\n%s", rc, msg);
    cr_assert(strstr(msg, "rank 0 of 2: shard 1 of 2 (lines 1-21) is finished"), "rank 0 did not skip:\n%s", msg);
    free(msg);
    char *out = slurp("out.txt");
    cr_assert_str_eq(out, one, "the resumed job's output differs from one process's");
    char cmd[1024], err[512];
    snprintf(err, sizeof err, "%s/ls.err", dir);
    snprintf(cmd, sizeof cmd, "! ls %s | grep -q shard", dir);
    cr_assert_eq(tu_run(cmd, err), 0, "a shard or a temporary is left in %s", dir);
    free(out), free(one);
}

/* The shards' lines: contiguous, in order, covering every line once,
 * sizes differing by at most one; and their names. */
Test(mpi_translate, shard_ranges_and_names)
{
    const size_t totals[] = {0, 1, 2, 7, 41, 1000};
    for (size_t t = 0; t < sizeof totals / sizeof *totals; t++)
        for (int n = 1; n <= 9; n++) {
            size_t next = 0, lo = (size_t)-1, hi = 0;
            for (int k = 0; k < n; k++) {
                size_t first, count;
                cr_assert_eq(clf_shard_range(totals[t], k, n, &first, &count), CLF_OK);
                cr_assert_eq(first, next, "total %zu, shard %d of %d starts at %zu, not %zu", totals[t], k, n, first,
                             next);
                next = first + count;
                lo = count < lo ? count : lo, hi = count > hi ? count : hi;
            }
            cr_assert_eq(next, totals[t], "total %zu over %d shards covers %zu", totals[t], n, next);
            cr_assert_leq(hi - lo, 1);
        }
    size_t first, count;
    cr_assert_eq(clf_shard_range(10, 2, 2, &first, &count), CLF_ERR_ARG);
    cr_assert_eq(clf_shard_range(10, 0, 0, &first, &count), CLF_ERR_ARG);
    char name[64];
    cr_assert_eq(clf_shard_path("out/x.de", 1, 4, name, sizeof name), CLF_OK);
    cr_assert_str_eq(name, "out/x.de.shard-2-of-4");
    cr_assert_eq(clf_shard_path("out/x.de", 1, 4, name, 10), CLF_ERR_ARG);

    /* another job's shards: of 3 where this one has 2; names that only
     * look alike are not */
    char base[512], path[600];
    snprintf(base, sizeof base, "%s/o.txt", tu_tmpdir());
    int other = -1;
    cr_assert_eq(clf_shards_other(base, 2, &other), CLF_OK);
    cr_assert_eq(other, 0);
    const char *names[] = {"shard-1-of-2", "shard-2-of-3x", "shard-2-of-3.tmp.1.0", "shard-4-of-3"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s.%s", base, names[i]);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fclose(f);
    }
    cr_assert_eq(clf_shards_other(base, 2, &other), CLF_OK);
    cr_assert_eq(other, 0, "took a name that only looks like a shard's for one (%d)", other);
    snprintf(path, sizeof path, "%s.shard-2-of-3", base);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(clf_shards_other(base, 2, &other), CLF_OK);
    cr_assert_eq(other, 3);
    cr_assert_eq(clf_shards_other(base, 3, &other), CLF_OK);
    cr_assert_eq(other, 2);
}
