/* bench_train.c: `clformer bench train`: target tokens per second of full
 * training steps (forward, backward, Adam; dropout on) of a preset on
 * B = 128 sentences of 20 tokens, the shape bench/peers/torch_peer.py
 * train measures, and where the device time goes (GEMM, attention, other
 * ops) from one profiled step.
 *
 * The step is the library's (clf_trainer_step_batches, clformer_train.h),
 * the one `clformer train` takes. Under `mpirun -np N` each rank steps on
 * its own B x 20 tokens and the gradients are summed across the ranks
 * before Adam through the trainer's hooks, as `clformer train` sums them
 * (in buckets of --bucket-mb during the backward, default 3; --bucket-mb
 * 0 after it): the figure is the job's target
 * tokens per second, and with --one FILE (this benchmark's --json from one
 * process) its scaling against one rank. Rank 0 prints. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "buckets.h"
#include "cli.h"
#include <clformer/advanced/json.h>
#include "dist.h"

/* One process's run: the library's trainer (clformer_train.h) stepping on
 * one batch of its own, with the sum across the ranks as its hooks. */
struct train_run {
    clf_ctx_t *ctx;
    clf_trainer_t *tr;
    struct clf_model_batch b;
    float *grads;  /* the host copy of the gradients, under mpirun with --bucket-mb 0 */
    struct grad_buckets *buckets;  /* under mpirun: the sum in buckets during the backward */
};

static const struct clf_backward_hook *run_hook(void *user, const struct clf_train_update *u)
{
    struct train_run *r = user;
    (void)u;
    return r->buckets ? grad_buckets_begin(r->buckets) : NULL;
}

/* The gradients summed; the loss and tokens stay each rank's (the figure
 * counts the job's tokens itself). */
static clf_status run_sum(void *user, const struct clf_train_update *u, double *loss, double *tokens)
{
    struct train_run *r = user;
    (void)u, (void)loss, (void)tokens;
    return r->buckets ? grad_buckets_finish(r->buckets) : grads_sum_after(r->ctx, clf_trainer_model(r->tr), r->grads, NULL);
}

static clf_status one_step(clf_ctx_t *ctx, void *arg)
{
    struct train_run *r = arg;
    (void)ctx;
    return clf_trainer_step_batches(r->tr, &r->b, 1, (double)(r->b.batch * r->b.tgt_len), 1e-4f);
}

enum { B = 128, N = 20, TOP = 8 };

/* What bench train measured. */
struct train_record {
    struct measure_device dev;
    char preset[32];
    struct clf_model_config c;
    double seconds, tokens_per_s, peer_tokens_per_s;  /* the last 0 without a peer */
    int ranks;                                        /* tokens_per_s is the job's */
    double sum_seconds;                               /* per step, summing across the ranks */
    double bucket_mb;                                 /* their buckets during the backward (0: after it) */
    double one_tokens_per_s;                          /* --one's figure, 0 without */
    double device_total, device[3];                   /* of the profiled step: gemm, attention, other */
    struct clf_cache_stats cache;
    size_t ntop;
    struct clf_profile_entry top[TOP];                /* its longest kernels */
    struct bench_memory mem;                          /* over the whole benchmark */
};

static void train_json(FILE *f, const void *rec)
{
    const struct train_record *r = rec;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "train");
    measure_device_json(&w, &r->dev);
    cli_json_str(&w, "preset", r->preset);
    cli_json_num(&w, "batch", "%d", B);
    cli_json_num(&w, "len", "%d", N);
    cli_json_num(&w, "seconds_per_step", "%.4f", r->seconds);
    cli_json_num(&w, "tgt_tokens_per_s", "%.1f", r->tokens_per_s);
    if (r->peer_tokens_per_s > 0) {
        cli_json_num(&w, "peer_tgt_tokens_per_s", "%.1f", r->peer_tokens_per_s);
        cli_json_num(&w, "ratio", "%.3f", r->tokens_per_s / r->peer_tokens_per_s);
    }
    cli_json_num(&w, "ranks", "%d", r->ranks);
    if (r->ranks > 1) {
        cli_json_num(&w, "sum_seconds_per_step", "%.4f", r->sum_seconds);
        cli_json_num(&w, "bucket_mb", "%g", r->bucket_mb);
    }
    if (r->one_tokens_per_s > 0) {
        cli_json_num(&w, "one_rank_tgt_tokens_per_s", "%.1f", r->one_tokens_per_s);
        cli_json_num(&w, "scaling", "%.3f", r->tokens_per_s / r->one_tokens_per_s);
    }
    cli_json_obj(&w, "device_seconds");
    cli_json_num(&w, "gemm", "%.4f", r->device[0]);
    cli_json_num(&w, "attention", "%.4f", r->device[1]);
    cli_json_num(&w, "other", "%.4f", r->device[2]);
    cli_json_end(&w);
    bench_memory_json(&w, &r->mem);
    cli_json_end(&w);
}

static void train_table(FILE *f, const void *rec)
{
    const struct train_record *r = rec;
    const struct clf_model_config *c = &r->c;
    fprintf(f, "training step, preset %s (%d+%d layers, d_model %d, vocab %d), %d sentences x %d tokens, on %s\n",
            r->preset, c->enc_layers, c->dec_layers, c->d_model, c->vocab, B, N, r->dev.info.device_name);
    fprintf(f, "  %.3f s per step (median), %.1f target tokens/s", r->seconds, r->tokens_per_s);
    if (r->peer_tokens_per_s > 0)
        fprintf(f, "; PyTorch %.1f tokens/s, ratio %.2fx", r->peer_tokens_per_s,
                r->tokens_per_s / r->peer_tokens_per_s);
    if (r->ranks > 1)
        fprintf(f, "\n  %d ranks, each on its own %d x %d tokens: the job's tokens/s; summing the gradients "
                "%.3f s per step (%s)", r->ranks, B, N, r->sum_seconds,
                r->bucket_mb > 0 ? "in buckets during the backward" : "after the backward");
    if (r->one_tokens_per_s > 0)
        fprintf(f, "\n  one rank: %.1f tokens/s; scaling %.2fx (ideal %dx)", r->one_tokens_per_s,
                r->tokens_per_s / r->one_tokens_per_s, r->ranks);
    fprintf(f, "\n  device time of one step: %.3f s\n", r->device_total);
    for (int k = 0; k < 3; k++)
        fprintf(f, "    %-10s %7.3f s  %5.1f%%\n", bench_categories[k], r->device[k],
                100 * r->device[k] / (r->device_total > 0 ? r->device_total : 1));
    fprintf(f, "  memory: %.1f MiB of device buffers at most, %.1f MiB resident at most\n", r->mem.device_peak_mib,
            r->mem.max_rss_mib);
    fprintf(f, "  kernel programs: %u compiled, %u loaded from the disk cache\n", r->cache.programs_built,
            r->cache.programs_loaded);
    fprintf(f, "  longest kernels:\n");
    for (size_t i = 0; i < r->ntop; i++)
        fprintf(f, "    %-32s %5u calls %7.3f s\n", r->top[i].name, r->top[i].calls, r->top[i].seconds);
}

/* --one FILE: the target tokens/s of this benchmark's --json from one
 * process, same preset; 0 (reported) when the file is not that. */
static double one_rank_figure(const char *path, const char *preset)
{
    FILE *f = fopen(path, "r");
    char line[8192], err[128] = "";
    double v = 0, ranks = 1;
    struct clf_json j;
    bool ok = f && fgets(line, sizeof line, f) && clf_json_parse(line, strcspn(line, "\r\n"), &j, err, sizeof err);
    if (ok) {
        const char *bench = clf_json_str(&j, "bench"), *p = clf_json_str(&j, "preset");
        clf_json_num(&j, "ranks", &ranks);
        ok = bench && !strcmp(bench, "train") && p && !strcmp(p, preset) && ranks == 1 &&
             clf_json_num(&j, "tgt_tokens_per_s", &v) && v > 0;
        clf_json_free(&j);
    }
    if (f)
        fclose(f);
    if (!ok)
        fprintf(stderr, "clformer bench train: --one %s: %s%swant the one line of `clformer bench train --preset %s "
                "--json` run by one process\n", path, f ? "" : "cannot read it; ", err[0] ? err : "", preset);
    return ok ? v : 0;
}

const char bench_train_usage[] = "[mpirun -np N] clformer bench train [--preset P] [--peer FILE] "
                                 "[--one FILE] [--bucket-mb MB] [--json] [--device D] [--quick]";

int bench_train(int argc, char **argv, struct bench_result *out)
{
    const char *preset = "small", *peer = NULL, *one = NULL;
    double bucket_mb = GRAD_BUCKET_MB;
    /* our own options first, then the common ones */
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    bool bad = false;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && (cli_opt(argc, argv, &i, "--preset", &preset, &bad) || cli_opt(argc, argv, &i, "--peer", &peer, &bad) ||
                      cli_opt(argc, argv, &i, "--one", &one, &bad) ||
                      cli_opt_number(argc, argv, &i, "--bucket-mb", 0, 1e6, false, &bucket_mb, &bad)))
            continue;
        rest[nrest++] = argv[i];
    }
    struct bench_opts o;
    if (bad || !bench_parse(nrest, rest, &o, bench_train_usage)) {
        free(rest);
        return 2;
    }
    free(rest);
    double one_figure = 0;
    if (one && !(one_figure = one_rank_figure(one, preset)))
        return 2;
    dist_init(&argc, &argv);
    int rc = 1;
    struct clf_model_config c;
    struct clf_profile_entry *prof = NULL;
    size_t nprof = 0;
    struct bench_memory mem;
    bench_memory_begin(&mem);  /* before the context: its buffers count too */
    struct train_record *rec = calloc(1, sizeof *rec);
    int32_t *ids = malloc(3 * B * N * sizeof *ids);
    char device[64];
    clf_ctx_t *ctx = rec && ids ? cli_open(dist_device(o.device, device, sizeof device)) : NULL;
    struct train_run r = {.ctx = ctx};
    clf_model_t *m = NULL;
    clf_status st;
    if (!rec || !ids)
        fprintf(stderr, "clformer: out of host memory\n");
    if (!ctx || !bench_config(preset, &c))
        goto done;
    /* bench_model's model (seed 1), no clipping */
    struct clf_train_opts to = {.config = &c, .seed = 1, .rank = dist_rank(), .ranks = dist_size()};
    if (dist_size() > 1)
        to.hooks = (struct clf_train_hooks){.user = &r, .backward = run_hook, .reduce = run_sum};
    if ((st = clf_trainer_init(&r.tr, ctx, &to)) != CLF_OK) {
        cli_fail_memory(ctx, st, "creating the model", "--preset");
        goto done;
    }
    m = clf_trainer_model(r.tr);
    if (dist_size() > 1 && bucket_mb > 0 && !(r.buckets = grad_buckets_init(ctx, m, (size_t)(bucket_mb * 1e6))))
        goto done;
    if (dist_size() > 1 && !r.buckets && !(r.grads = malloc(clf_model_numel(m) * sizeof *r.grads))) {
        fprintf(stderr, "clformer: out of host memory for the gradients\n");
        goto done;
    }
    r.b = bench_batch(&c, ids, B, N);
    double t = measure_time(ctx, one_step, &r, o.quick ? 1.0 : 10.0);
    if (t < 0) {
        cli_fail(ctx, CLF_ERR_OPENCL, "training step");
        goto done;
    }
    double summed = dist_sum_seconds();
    long steps = clf_trainer_state(r.tr)->step;
    /* one more step, profiled */
    if ((st = clf_ctx_profile_start(ctx)) || (st = one_step(ctx, &r)) ||
        (st = clf_ctx_profile_report(ctx, &prof, &nprof))) {
        cli_fail(ctx, st, "profiling a step");
        goto done;
    }
    measure_device_get(ctx, &rec->dev);
    snprintf(rec->preset, sizeof rec->preset, "%s", preset);
    rec->c = c;
    rec->seconds = t;
    rec->ranks = dist_size();
    rec->tokens_per_s = (double)rec->ranks * B * N / t;
    rec->sum_seconds = steps ? summed / steps : 0;
    rec->bucket_mb = r.buckets ? bucket_mb : 0;
    rec->one_tokens_per_s = one_figure;
    rec->peer_tokens_per_s = bench_peer_figure(peer, "train_step", NULL, NULL, 0, "tgt_tokens_per_s");
    for (size_t i = 0; i < nprof; i++) {
        rec->device_total += prof[i].seconds;
        rec->device[bench_category(prof[i].name)] += prof[i].seconds;
    }
    bench_memory_end(&mem);
    rec->mem = mem;
    clf_ctx_cache_stats(ctx, &rec->cache);
    for (size_t i = 0; i < nprof && i < TOP; i++)
        rec->top[rec->ntop++] = prof[i];
    rc = 0;
done:
    dist_fail_if(rc, "bench train failed (its message is above)");
    if (!rc && dist_rank() == 0) {  /* the other ranks hand back no record */
        *out = (struct bench_result){rec, train_json, train_table};
        rec = NULL;
    }
    dist_finalize();
    free(rec);
    free(prof);
    free(ids);
    free(r.grads);
    grad_buckets_free(r.buckets);
    clf_trainer_free(r.tr);
    clf_ctx_free(ctx);
    return rc;
}
