/* cmd_translate.c: `clformer translate --model CKPT`: source lines on
 * stdin (or --input), detokenised translations on stdout (or --output), by
 * batched beam search with incremental decoding (or greedy with --beam 1
 * --greedy), through the library's translator (clformer_translate.h);
 * here: the flags, the input's lines, the truncation notices, progress
 * and printing.
 *
 * Under mpirun (`mpirun -np N clformer translate --input F`) each rank
 * translates one shard of F's lines on its own device (dist_device) into
 * a shard file (clf_shard_*: written whole and renamed), and rank 0 joins
 * them in order. Shard files rather than MPI messages: a failed job keeps
 * every finished shard, --resume translates only the missing ones, and
 * rank 0 never holds the whole corpus's output; the price is a folder
 * that every rank sees (beside --output, or --work-dir), as MPI jobs on a
 * cluster's shared file system have. Ranks report their progress and how
 * they ended to rank 0 in messages (dist_report), so a rank that fails
 * does not leave the others waiting and rank 0 names it. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <clformer/advanced/files.h>
#include "cli.h"
#include "commands.h"
#include "dist.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer translate --model CKPT [--bpe MODEL] [--beam N] [--alpha A] [--nbest N]\n"
               "                          [--greedy] [--max-extra N] [--max-length N] [--min-length N]\n"
               "                          [--length-penalty paper|hf] [--batch N] [--max-tokens N]\n"
               "                          [--batching rounds|continuous] [--input FILE] [--output FILE] [--device D]\n"
               "                          [--compute-type T] [--quiet]\n"
               "       mpirun -np N clformer translate --input FILE [--output FILE | --work-dir DIR] [--resume] ...\n"
               "  reads source lines (stdin or --input), writes translations to stdout (or --output, written\n"
               "  whole to a temporary name and renamed); --nbest N writes\n"
               "  N lines per source as 'index<TAB>score<TAB>text'. The tokenizer is the checkpoint's: its\n"
               "  BPE model beside it (or --bpe), or an imported model's (`clformer import`; --bpe DIR\n"
               "  names another directory). --min-length N: no EOS before N subwords (0 allows an empty\n"
               "  translation). --length-penalty: paper ((5+|Y|)/6)^alpha, or hf (|Y|^alpha and the rest\n"
               "  of transformers' generate() rules). --max-length N: transformers' max_length, at most\n"
               "  N-1 subwords with EOS whatever the source (0: source length + --max-extra). Sources are\n"
               "  sorted by length and, with --batching continuous, join one decoding as others finish\n"
               "  (at most --batch sentences at once and, with --max-tokens N, N source tokens); with\n"
               "  --batching rounds, cut into batches of at most that, each decoded to its end.\n"
               "  The same translations either way. Defaults: beam 4, alpha 0.6, paper, max-extra 50,\n"
               "  max-length 0, min-length 1, batch 32, max-tokens 0 (no token budget), batching continuous; an imported\n"
               "  model's own instead: its num_beams (1: greedy), length_penalty, hf, max_length and\n"
               "  min_length. --compute-type: CTranslate2's names: default (the checkpoint's stored type, or\n"
               "  float32 where the device cannot run it), auto (the fastest the device runs), float32,\n"
               "  int8 or bfloat16 (CPU devices, with oneDNN), float16 (devices with cl_khr_fp16).\n"
               "  Under mpirun: rank k translates shard k+1 of N (contiguous lines) on its own device (--device\n"
               "  gpu, cpu or a list 0,1: the ranks on a machine take them in turn) into OUT.shard-K-of-N beside\n"
               "  --output (or in --work-dir, a folder every rank sees), and rank 0 writes them out in order and\n"
               "  removes them. A failed job keeps its finished shards: --resume translates only the others.\n");
}

/* The options a user gave (NAN / NULL: not given), over the defaults. */
struct given {
    double beam, alpha, nbest, max_extra, max_length, min_length;
    const char *penalty;
    bool greedy;
};

static void apply(const struct given *g, struct clf_translate_opts *o)
{
    if (!isnan(g->beam)) o->beam = (int)g->beam, o->greedy = false;
    if (!isnan(g->alpha)) o->alpha = (float)g->alpha;
    if (!isnan(g->nbest)) o->nbest = (int)g->nbest;
    if (!isnan(g->max_extra)) o->max_extra = (int)g->max_extra;
    if (!isnan(g->max_length)) o->max_output = g->max_length != 0 ? (int)g->max_length - 1 : 0;
    if (!isnan(g->min_length)) o->min_length = (int)g->min_length;
    if (g->penalty) o->length_penalty = strcmp(g->penalty, "hf") ? CLF_LENGTH_PENALTY_PAPER : CLF_LENGTH_PENALTY_HF;
    if (g->greedy) o->greedy = true;
}


/* One run of the command: what was asked, and how far the job is. */
struct job {
    const char *model, *bpe, *device, *input, *output, *work_dir, *compute;
    struct clf_translate_opts o;
    struct clf_batching b;
    bool quiet, resume;
    int rank, ranks;
    size_t total;       /* the input's lines */
    double t0;
    bool show;          /* a progress line: not --quiet, stderr a terminal */
    size_t *done;       /* rank 0: the sentences each rank has done */
    int *state;         /* rank 0: each rank's DIST_* */
};

/* The whole job's count on one line, on a terminal only. */
static void show(const struct job *j)
{
    if (!j->show)
        return;
    size_t done = 0;
    for (int r = 0; r < j->ranks; r++)
        done += j->done[r];
    double dt = clf_now() - j->t0;
    fprintf(stderr, "\rtranslated %zu/%zu sentences, %.1f sentences/s", done, j->total, done / (dt > 0 ? dt : 1));
}

/* After each batch: rank 0 counts its own and takes in the others'
 * reports; every other rank reports to it. */
static void progress(size_t done, size_t n, void *arg)
{
    (void)n;
    struct job *j = arg;
    if (j->rank > 0) {
        dist_report(done, DIST_RUNNING);
        return;
    }
    j->done[0] = done;
    dist_collect(j->done, j->state);
    show(j);
}

/* Translates lines[first, first + count) on this rank's device and prints
 * them to out (indices, with --nbest, are the input's). Returns 0, or 1
 * having said why. */
static int translate_lines(struct job *j, const struct clf_lines *lines, size_t first, size_t count, FILE *out)
{
    int rc = 1;
    clf_status st;
    clf_ctx_t *ctx = NULL;
    clf_translator_t *t = NULL;
    const size_t nb = (size_t)j->o.nbest;
    int32_t **src = calloc(count ? count : 1, sizeof *src);
    size_t *len = calloc(count ? count : 1, sizeof *len);
    char **text = calloc(count * nb + 1, sizeof *text);
    float *scores = calloc(count * nb + 1, sizeof *scores);
    char devbuf[64];
    if (!src || !len || !text || !scores) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    if (!(ctx = cli_open(dist_device(j->device, devbuf, sizeof devbuf))))
        goto done;
    if ((st = clf_translator_init(ctx, j->model, j->bpe, &t)) != CLF_OK) {
        cli_fail(ctx, st, "loading the model");
        goto done;
    }
    if ((st = clf_translator_compute_set(t, j->compute)) != CLF_OK) {
        cli_fail(ctx, st, "--compute-type");
        goto done;
    }
    if (!j->quiet && j->compute && !strcmp(j->compute, "auto") && j->rank == 0) {
        char why[800];
        clf_compute_auto(clf_ctx_device(ctx), why, sizeof why);
        fprintf(stderr, "clformer translate: --compute-type auto: %s\n", why);
    }
    if (!j->quiet && j->ranks > 1)
        fprintf(stderr, "clformer translate: rank %d of %d: shard %d of %d (lines %zu-%zu) on %s\n", j->rank,
                j->ranks, j->rank + 1, j->ranks, first + 1, first + count, clf_ctx_device(ctx)->device_name);
    const size_t limit = clf_translator_max_source(t);
    for (size_t i = 0; i < count; i++) {
        if ((st = clf_translator_encode(t, lines->line[first + i], &src[i], &len[i])) != CLF_OK) {
            char what[64];
            snprintf(what, sizeof what, "encoding line %zu", first + i + 1);
            cli_fail(ctx, st, what);
            goto done;
        }
        if (len[i] > limit) {
            fprintf(stderr, "clformer translate: line %zu has %zu subwords; the model takes at most %zu: truncated\n",
                    first + i + 1, len[i], limit);
            len[i] = limit;
        }
    }
    if (j->ranks == 1)  /* one process's rate, as before: of the translation, not the loading */
        j->t0 = clf_now();
    if (count && (st = clf_translator_translate_ids(t, (const int32_t *const *)src, len, count, &j->o, j->b, text,
                                                    scores, progress, j)) != CLF_OK) {
        cli_fail_memory(ctx, st, "translating", "--batch, --max-tokens");
        goto done;
    }
    if ((st = clf_translations_write(out, text, scores, count, nb, first)) != CLF_OK) {
        cli_fail(NULL, st, "writing the translations");
        goto done;
    }
    if (!j->quiet && j->ranks == 1) {
        double dt = clf_now() - j->t0;
        const enum clf_compute_type ct = clf_translator_compute(t);
        fprintf(stderr, "%stranslated %zu sentences in %.1f s: %.2f sentences/s (%s, beam %d, %s%s%s)\n",
                j->show ? "\r" : "", count, dt, count / dt, j->o.greedy ? "greedy" : "beam search",
                j->o.greedy ? 1 : j->o.beam, clf_ctx_device(ctx)->device_name, ct != CLF_COMPUTE_FLOAT32 ? ", " : "",
                ct != CLF_COMPUTE_FLOAT32 ? clf_compute_type_str(ct) : "");
    }
    rc = 0;
done:
    if (src)
        for (size_t i = 0; i < count; i++)
            free(src[i]);
    if (text)
        for (size_t i = 0; i < count * nb; i++)
            free(text[i]);
    free(src), free(len), free(text), free(scores);
    clf_translator_free(t);
    clf_ctx_free(ctx);
    return rc;
}

/* One process: the whole input to stdout or --output. */
static int translate_one(struct job *j, const struct clf_lines *lines)
{
    if (!j->output)
        return translate_lines(j, lines, 0, lines->n, stdout) || fflush(stdout) ? 1 : 0;
    struct clf_file_out o;
    clf_status st;
    if (cli_make_folder_of("translate", j->output))
        return 1;
    if ((st = clf_file_out_open(&o, j->output)) != CLF_OK)
        return cli_fail(NULL, st, "--output");
    int rc = translate_lines(j, lines, 0, lines->n, o.f);
    if ((st = clf_file_out_close(&o, rc == 0)) != CLF_OK && rc == 0)
        rc = cli_fail(NULL, st, "--output");
    return rc;
}

/* Hooks for the tests, as train's CLF_DIST_FAIL_RANK: CLF_DIST_FAIL_RANK=R
 * makes rank R fail instead of writing its shard, having translated it;
 * CLF_DIST_KILL_RANK=R makes it die there (SIGKILL, as a crash or the OOM
 * killer would) once the other shards' files are there (at most 60 s), so
 * that a test sees a rank die after another finished. */
static bool fail_here(const struct job *j, const char *base)
{
    const char *fail = getenv("CLF_DIST_FAIL_RANK"), *kill = getenv("CLF_DIST_KILL_RANK");
    if (kill && *kill && atoi(kill) == j->rank) {
        char path[CLF_PATH_MAX];
        for (int r = 0, waited = 0; r < j->ranks && waited < 3000; r++)
            while (r != j->rank && clf_shard_path(base, r, j->ranks, path, sizeof path) == CLF_OK &&
                   access(path, F_OK) && waited++ < 3000)
                nanosleep(&(struct timespec){0, 20000000}, NULL);
        fprintf(stderr, "clformer translate: CLF_DIST_KILL_RANK=%d: killing rank %d on purpose (a test of the job's "
                        "failure)\n", j->rank, j->rank);
        fflush(stderr);
        raise(SIGKILL);
    }
    if (!fail || !*fail || atoi(fail) != j->rank)
        return false;
    fprintf(stderr, "clformer translate: CLF_DIST_FAIL_RANK=%d: failing shard %d of %d on purpose (a test of the "
                    "job's failure)\n", j->rank, j->rank + 1, j->ranks);
    return true;
}

/* This rank's shard, into its file beside base unless --resume finds it
 * finished. Returns 0, or 1 having said why. */
static int translate_shard(struct job *j, const struct clf_lines *lines, const char *base)
{
    size_t first, count;
    char path[CLF_PATH_MAX];
    clf_status st;
    bool done = false;
    if ((st = clf_shard_range(lines->n, j->rank, j->ranks, &first, &count)) != CLF_OK ||
        (st = clf_shard_path(base, j->rank, j->ranks, path, sizeof path)) != CLF_OK)
        return cli_fail(NULL, st, "the shard");
    const size_t per = (size_t)j->o.nbest;
    if (j->resume && (st = clf_shard_done(path, count * per, &done)) != CLF_OK)
        return cli_fail(NULL, st, "--resume");
    if (done) {
        if (!j->quiet)
            fprintf(stderr, "clformer translate: rank %d of %d: shard %d of %d (lines %zu-%zu) is finished (%s): "
                            "skipped\n", j->rank, j->ranks, j->rank + 1, j->ranks, first + 1, first + count, path);
        return 0;
    }
    struct clf_file_out o;
    if ((st = clf_file_out_open(&o, path)) != CLF_OK)
        return cli_fail(NULL, st, "the shard's file");
    int rc = translate_lines(j, lines, first, count, o.f);
    if (!rc && fail_here(j, base))
        rc = 1;
    if ((st = clf_file_out_close(&o, rc == 0)) != CLF_OK && rc == 0)
        rc = cli_fail(NULL, st, "the shard's file");
    return rc;
}

/* Rank 0, its own shard done or failed: takes in the others' reports
 * until every rank has ended (a rank killed outright ends the job through
 * mpirun instead), then says which failed, or joins the shards. */
static int finish_job(struct job *j, const struct clf_lines *lines, const char *base, int own_rc)
{
    j->state[0] = own_rc ? DIST_FAILED : DIST_FINISHED;
    for (int ended_before = 0;;) {
        int ended = 0;
        size_t done = 0;
        for (int r = 0; r < j->ranks; r++)
            ended += j->state[r] != DIST_RUNNING, done += j->done[r];
        /* not on a terminal (a batch job's log): a line as each shard ends */
        if (ended > ended_before && !j->show && !j->quiet)
            fprintf(stderr, "clformer translate: %zu/%zu sentences, %d of %d shards ended\n", done, j->total, ended,
                    j->ranks);
        ended_before = ended;
        if (ended == j->ranks)
            break;
        if (dist_collect(j->done, j->state))
            show(j);
        else  /* not MPI's blocking receive: Open MPI's spins, taking a core from a rank at work */
            nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    if (j->show)
        fputc('\n', stderr);
    int failed = 0;
    for (int r = 0; r < j->ranks; r++)
        if (j->state[r] == DIST_FAILED) {
            size_t first = 0, count = 0;
            char where[64] = "";
            if (clf_shard_range(lines->n, r, j->ranks, &first, &count) == CLF_OK && count)
                snprintf(where, sizeof where, " (lines %zu-%zu)", first + 1, first + count);
            fprintf(stderr, "clformer translate: rank %d of %d failed on shard %d of %d%s; its message is above\n", r,
                    j->ranks, r + 1, j->ranks, where);
            failed++;
        }
    if (failed) {
        fprintf(stderr, "clformer translate: %d of %d shards failed; the finished ones (%d) are kept beside %s: run "
                        "the same command with --resume to translate only the rest\n", failed, j->ranks,
                j->ranks - failed, base);
        return 1;
    }
    clf_status st;
    const size_t per = (size_t)j->o.nbest;
    if (!j->output) {
        if ((st = clf_shards_join(base, j->ranks, lines->n, per, stdout)) != CLF_OK || fflush(stdout))
            return cli_fail(NULL, st ? st : CLF_ERR_IO, "writing the shards out");
    } else if ((st = clf_shards_join_file(base, j->ranks, lines->n, per, j->output)) != CLF_OK) {
        return cli_fail(NULL, st, "writing the shards out");
    }
    if ((st = clf_shards_remove(base, j->ranks)) != CLF_OK)
        cli_fail(NULL, st, "removing the shards");  /* the output is whole: said, not failed */
    if (!j->quiet) {
        double dt = clf_now() - j->t0;
        fprintf(stderr, "translated %zu sentences over %d ranks in %.1f s", lines->n, j->ranks, dt);
        if (j->resume)  /* some were finished before: no rate */
            fprintf(stderr, ", resuming the shards not finished before\n");
        else
            fprintf(stderr, ": %.2f sentences/s\n", lines->n / (dt > 0 ? dt : 1));
    }
    return 0;
}

/* Under mpirun: every rank its shard, then rank 0 the job's outcome. Every
 * rank reaches its report whatever fails, so that rank 0 never waits for
 * one that gave up. */
static int translate_sharded(struct job *j, const struct clf_lines *lines, int read_rc)
{
    char base[CLF_PATH_MAX];
    int rc = read_rc;
    const char *name = j->output ? j->output : "translation";
    if (j->work_dir) {
        const char *slash = strrchr(name, '/');
        snprintf(base, sizeof base, "%s/%s", j->work_dir, slash ? slash + 1 : name);
        if (!rc && clf_mkdir_p(j->work_dir)) {
            fprintf(stderr, "clformer translate: cannot create --work-dir %s: %s\n", j->work_dir, strerror(errno));
            rc = 1;
        }
    } else {
        snprintf(base, sizeof base, "%s", name);
        if (!rc)
            rc = cli_make_folder_of("translate", j->output);
    }
    int other = 0;
    if (!rc && j->resume && j->rank == 0 && clf_shards_other(base, j->ranks, &other) == CLF_OK && other)
        fprintf(stderr, "clformer translate: --resume: %s.shard-K-of-%d are another job's, of %d ranks; this one has "
                        "%d and resumes only its own (run with -np %d to resume those)\n", base, other, other,
                j->ranks, other);
    if (!rc)
        rc = translate_shard(j, lines, base);
    size_t first = 0, count = 0;
    clf_shard_range(lines->n, j->rank, j->ranks, &first, &count);
    if (j->rank > 0) {
        dist_report(rc ? 0 : count, rc ? DIST_FAILED : DIST_FINISHED);
        return rc;
    }
    j->done[0] = rc ? 0 : count;
    return finish_job(j, lines, base, rc);
}

static int run(struct job *j)
{
    struct clf_lines lines = {0};
    clf_status st;
    int rc = 0;
    if ((st = clf_lines_read(&lines, j->input)) != CLF_OK) {
        rc = cli_fail(NULL, st, "reading the input");
    } else if (lines.n == 0) {  /* under mpirun every rank fails, rank 0 alone saying why */
        if (j->rank == 0)
            fprintf(stderr, "clformer translate: the input (%s) is empty: nothing to translate\n",
                    strcmp(j->input, "-") ? j->input : "stdin");
        rc = 1;
    }
    j->total = lines.n;
    j->done = calloc((size_t)j->ranks, sizeof *j->done);
    j->state = calloc((size_t)j->ranks, sizeof *j->state);  /* DIST_RUNNING: 0 */
    if (!j->done || !j->state) {
        fprintf(stderr, "clformer: out of host memory\n");
        rc = 1;
        if (j->ranks > 1)
            dist_abort("out of host memory");  /* rank 0 could not count the others */
    }
    j->t0 = clf_now();
    if (j->ranks > 1)
        rc = translate_sharded(j, &lines, rc);
    else if (!rc)
        rc = translate_one(j, &lines);
    free(j->done), free(j->state);
    clf_lines_free(&lines);
    return rc;
}

int clf_cmd_translate(int argc, char **argv)
{
    const char *model = NULL, *bpe = NULL, *device = NULL, *input = "-", *compute = NULL, *output = NULL,
               *work_dir = NULL;
    struct clf_translate_opts o = clf_translate_opts_default();
    struct given g = {NAN, NAN, NAN, NAN, NAN, NAN, NULL, false};
    long batch = 32, max_tokens = 0;
    const char *batching = NULL;
    bool quiet = false, resume = false, bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "--model", &model, &bad) || cli_opt(argc, argv, &i, "--bpe", &bpe, &bad) ||
            cli_opt(argc, argv, &i, "--device", &device, &bad) || cli_opt(argc, argv, &i, "--input", &input, &bad) ||
            cli_opt(argc, argv, &i, "--length-penalty", &g.penalty, &bad) ||
            cli_opt(argc, argv, &i, "--compute-type", &compute, &bad) ||
            cli_opt(argc, argv, &i, "--output", &output, &bad) || cli_opt(argc, argv, &i, "--work-dir", &work_dir, &bad))
            continue;
#define NUM(name, field, lo, hi, integer)                                              \
        if (cli_opt_number(argc, argv, &i, name, lo, hi, integer, &x, &bad)) {         \
            field = x;                                                                 \
            continue;                                                                  \
        }
        double x = 0;
        NUM("--beam", g.beam, INT_MIN, INT_MAX, true) NUM("--alpha", g.alpha, -1e30, 1e30, false)
        NUM("--nbest", g.nbest, INT_MIN, INT_MAX, true) NUM("--max-extra", g.max_extra, INT_MIN, INT_MAX, true)
        NUM("--max-length", g.max_length, INT_MIN, INT_MAX, true)
        NUM("--min-length", g.min_length, INT_MIN, INT_MAX, true) NUM("--batch", batch, -1e15, 1e15, true)
        NUM("--max-tokens", max_tokens, -1e15, 1e15, true)
#undef NUM
        if (cli_opt(argc, argv, &i, "--batching", &batching, &bad)) {
            if (strcmp(batching, "rounds") && strcmp(batching, "continuous")) {
                fprintf(stderr, "clformer translate: --batching %s: want rounds or continuous\n", batching);
                bad = true;
            }
            continue;
        }
        if (!strcmp(argv[i], "--greedy")) g.greedy = true;
        else if (!strcmp(argv[i], "--quiet")) quiet = true;
        else if (!strcmp(argv[i], "--resume")) resume = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else { fprintf(stderr, "clformer translate: unknown option '%s'\n", argv[i]); bad = true; }
    }
    if (!bad && !model) {
        fprintf(stderr, "clformer translate: --model CKPT is required\n");
        bad = true;
    }
    if (!bad && g.penalty && strcmp(g.penalty, "hf") && strcmp(g.penalty, "paper")) {
        fprintf(stderr, "clformer translate: --length-penalty wants paper or hf, not '%s'\n", g.penalty);
        bad = true;
    }
    enum clf_compute_type ct;
    if (!bad && compute && strcmp(compute, "default") && strcmp(compute, "auto") && !clf_compute_type_parse(compute, &ct)) {
        fprintf(stderr, "clformer translate: --compute-type %s: choose default, auto, float32, int8, bfloat16 or "
                        "float16\n", compute);
        bad = true;
    }
    clf_status st;
    if (!bad && (st = clf_translator_defaults(model, &o)) != CLF_OK)  /* an imported model's own; ours have none */
        return cli_fail(NULL, st, "reading the checkpoint");
    if (!bad)
        apply(&g, &o);
    if (!bad && (o.beam < 1 || o.beam > CLF_TRANSLATE_BEAM_MAX || o.nbest < 1 || o.nbest > o.beam || batch < 1 ||
                 max_tokens < 0 || o.max_extra < 1 || o.min_length < 0 || o.max_output < 0 || g.max_length == 1)) {
        fprintf(stderr, "clformer translate: want 1 <= --beam <= %d, 1 <= --nbest <= --beam, --batch >= 1, "
                        "--max-tokens >= 0, --max-extra >= 1, --max-length 0 or >= 2, --min-length >= 0\n",
                CLF_TRANSLATE_BEAM_MAX);
        bad = true;
    }
    if (bad) {
        usage(stderr);
        return 2;
    }
    if (o.greedy)
        o.nbest = 1;

    dist_init(&argc, &argv);
    struct job j = {.model = model, .bpe = bpe, .device = device, .input = input, .output = output,
                    .work_dir = work_dir, .compute = compute, .o = o, .quiet = quiet, .resume = resume,
                    .rank = dist_rank(), .ranks = dist_size(), .show = !quiet && isatty(2)};
    j.b = (struct clf_batching){.sentences = (size_t)batch, .tokens = (size_t)max_tokens,
                                .continuous = !batching || !strcmp(batching, "continuous")};
    /* refused alike on every rank, before any rank waits for another */
    const char *refusal = NULL;
    if (j.ranks > 1 && !strcmp(input, "-"))
        refusal = "under mpirun, --input FILE is required (only rank 0 has stdin)";
    else if (j.ranks > 1 && !output && !work_dir)
        refusal = "under mpirun, the output to stdout wants --work-dir DIR, a folder every rank sees, for the shards";
    else if (j.ranks == 1 && (resume || work_dir))
        refusal = "--resume and --work-dir are for a job of several ranks (mpirun -np N): one process writes no shards";
    int rc = 2;
    if (refusal) {
        if (j.rank == 0)
            fprintf(stderr, "clformer translate: %s\n", refusal);
    } else {
        rc = run(&j);
    }
    dist_barrier_idle();  /* the ranks done early wait here while rank 0 joins, not spinning in MPI_Finalize */
    dist_finalize();
    return rc;
}

