/* bench_allreduce.c: `clformer bench allreduce`: what summing one update's
 * gradients across the ranks of `mpirun -np N clformer train` costs, done
 * as the trainer does it (cli/buckets.h, grads_sum_after): the gradient
 * buffer of a preset's model goes down from the device, is summed in place
 * over every rank (dist_sum_floats, MPI_Allreduce) and goes back up. It
 * prints the bytes summed per update, the time of each part, the summing's
 * bandwidth, and what a ring all-reduce of the same bytes over this many
 * ranks would take on 25 and 100 Gbit/s links (2(N-1)/N of the bytes cross
 * each rank's link), to set beside the figure measured here.
 *
 * Then the backward pass (forward included) of each rank's own batch of
 * B x N tokens, timed alone, with that sum after it, and with the sum in
 * buckets of --bucket-mb MB that start while the backward runs (buckets.h,
 * what `clformer train` does): how much of the sum the overlap hides.
 *
 * Run without mpirun it is one process: nothing is summed, and the record
 * says so. Every rank measures; rank 0 prints. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "buckets.h"
#include "cli.h"
#include "dist.h"

enum { MAX_ROUNDS = 200, B = 128, N = 20 };

/* What bench allreduce measured (rank 0's figures). */
struct allreduce_record {
    struct measure_device dev;
    char preset[32];
    int ranks, local_ranks, rounds;
    size_t params;
    double down, sum, up;  /* median seconds per update of each part */
    double bucket_mb;
    size_t buckets;        /* the backward's gradients were cut into */
    double backward[3];    /* median seconds: the backward alone, with the sum after it, with the sum in buckets */
};

static double ring_seconds(const struct allreduce_record *r, double gbit)
{
    return 2.0 * (r->ranks - 1) / r->ranks * (double)r->params * 4 / (gbit * 1e9 / 8);
}

static void allreduce_json(FILE *f, const void *rec)
{
    const struct allreduce_record *r = rec;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "allreduce");
    measure_device_json(&w, &r->dev);
    cli_json_str(&w, "preset", r->preset);
    cli_json_num(&w, "ranks", "%d", r->ranks);
    cli_json_num(&w, "ranks_on_this_machine", "%d", r->local_ranks);
    cli_json_num(&w, "params", "%zu", r->params);
    cli_json_num(&w, "bytes_per_update", "%zu", r->params * 4);
    cli_json_num(&w, "updates", "%d", r->rounds);
    cli_json_obj(&w, "seconds");
    cli_json_num(&w, "download", "%.6f", r->down);
    cli_json_num(&w, "sum", "%.6f", r->sum);
    cli_json_num(&w, "upload", "%.6f", r->up);
    cli_json_end(&w);
    if (r->ranks > 1) {
        cli_json_num(&w, "sum_gbytes_per_s", "%.3f", (double)r->params * 4 / r->sum / 1e9);
        cli_json_obj(&w, "ring_seconds");
        cli_json_num(&w, "25gbit", "%.6f", ring_seconds(r, 25));
        cli_json_num(&w, "100gbit", "%.6f", ring_seconds(r, 100));
        cli_json_end(&w);
    }
    cli_json_obj(&w, "backward");
    cli_json_num(&w, "batch", "%d", B);
    cli_json_num(&w, "len", "%d", N);
    cli_json_num(&w, "bucket_mb", "%g", r->bucket_mb);
    cli_json_num(&w, "buckets", "%zu", r->buckets);
    cli_json_obj(&w, "seconds");
    cli_json_num(&w, "alone", "%.6f", r->backward[0]);
    cli_json_num(&w, "sum_after", "%.6f", r->backward[1]);
    cli_json_num(&w, "sum_in_buckets", "%.6f", r->backward[2]);
    cli_json_end(&w);
    cli_json_end(&w);
    cli_json_end(&w);
}

static void allreduce_table(FILE *f, const void *rec)
{
    const struct allreduce_record *r = rec;
    fprintf(f, "gradient sum of one update, preset %s: %zu parameters, %.1f MB per update, %d rank%s "
            "(%d on this machine), on %s\n", r->preset, r->params, (double)r->params * 4 / 1e6, r->ranks,
            r->ranks == 1 ? "" : "s", r->local_ranks, r->dev.info.device_name);
    fprintf(f, "  median of %d updates: download %.4f s, sum over the ranks %.4f s, upload %.4f s\n", r->rounds,
            r->down, r->sum, r->up);
    fprintf(f, "  backward (forward included) of %d x %d tokens per rank: alone %.4f s; with the sum after it %.4f s; "
            "with the sum in %zu bucket%s of %g MB during it %.4f s\n", B, N, r->backward[0], r->backward[1],
            r->buckets, r->buckets == 1 ? "" : "s", r->bucket_mb, r->backward[2]);
    if (r->ranks == 1) {
        fprintf(f, "  one process: nothing is summed (run it as mpirun -np N clformer bench allreduce)\n");
        return;
    }
    fprintf(f, "  summing: %.2f GB/s of gradients per rank\n", (double)r->params * 4 / r->sum / 1e9);
    fprintf(f, "  a ring all-reduce of these bytes over %d ranks would take %.4f s on 25 Gbit/s links, "
            "%.4f s on 100 Gbit/s (bandwidth alone)\n", r->ranks, ring_seconds(r, 25), ring_seconds(r, 100));
}

/* Times `rounds` updates' download, sum and upload of m's gradients. */
static clf_status measure(clf_ctx_t *ctx, clf_model_t *m, float *host, int rounds, struct allreduce_record *r)
{
    static double t[3][MAX_ROUNDS];
    clf_status st = CLF_OK;
    for (int i = 0; i <= rounds && st == CLF_OK; i++) {  /* round 0 warms up */
        double s[3];
        dist_barrier();
        if ((st = grads_sum_after(ctx, m, host, s)) == CLF_OK && i > 0)
            t[0][i - 1] = s[0], t[1][i - 1] = s[1], t[2][i - 1] = s[2];
    }
    if (st == CLF_OK)
        r->down = measure_median(t[0], rounds), r->sum = measure_median(t[1], rounds), r->up = measure_median(t[2], rounds);
    return st;
}

/* One backward pass on a rank's own batch and, as `mode` says, the sum
 * of its gradients across the ranks. */
enum sum_mode { SUM_NONE, SUM_AFTER, SUM_BUCKETS };
struct backward_run {
    clf_model_t *m;
    struct clf_model_batch b;
    float *host;
    struct grad_buckets *buckets;
    enum sum_mode mode;
};

static clf_status backward_sum(clf_ctx_t *ctx, void *arg)
{
    struct backward_run *r = arg;
    struct clf_step_opts o = {true, 1, 1.0f / (float)(r->b.batch * r->b.tgt_len)};
    double loss, tokens;
    clf_status st = clf_model_zero_grad(r->m);
    if (st == CLF_OK)
        st = grads_forward_backward(ctx, r->m, &r->b, &o, r->mode == SUM_BUCKETS ? r->buckets : NULL,
                                    r->mode == SUM_AFTER ? r->host : NULL, &loss, &tokens);
    return st;
}

/* The three ways, each timed (measure_time: the ranks run alike). */
static clf_status measure_backward(clf_ctx_t *ctx, clf_model_t *m, float *host, bool quick,
                                   struct allreduce_record *r)
{
    int32_t *ids = malloc(3 * B * N * sizeof *ids);
    struct backward_run run = {m, {0}, host, grad_buckets_init(ctx, m, (size_t)(r->bucket_mb * 1e6)), SUM_NONE};
    clf_status st = ids && run.buckets ? CLF_OK : CLF_ERR_MEMORY;
    if (st == CLF_OK)
        run.b = bench_batch(clf_model_config(m), ids, B, N);
    for (int mode = SUM_NONE; mode <= SUM_BUCKETS && st == CLF_OK; mode++) {
        run.mode = mode;
        if ((r->backward[mode] = measure_time(ctx, backward_sum, &run, quick ? 0.5 : 5.0)) < 0)
            st = CLF_ERR_OPENCL;
    }
    if (st == CLF_OK)
        r->buckets = grad_buckets_count(run.buckets);
    grad_buckets_free(run.buckets);
    free(ids);
    return st;
}

const char bench_allreduce_usage[] =
    "[mpirun -np N] clformer bench allreduce [--preset P] [--bucket-mb MB] [--json] [--device D] [--quick]";

int bench_allreduce(int argc, char **argv, struct bench_result *out)
{
    const char *preset = "small";
    double bucket_mb = GRAD_BUCKET_MB;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    bool bad = false;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && (cli_opt(argc, argv, &i, "--preset", &preset, &bad) ||
                      cli_opt_number(argc, argv, &i, "--bucket-mb", 1e-6, 1e6, false, &bucket_mb, &bad)))
            continue;
        rest[nrest++] = argv[i];
    }
    struct bench_opts o;
    if (bad || !bench_parse(nrest, rest, &o, bench_allreduce_usage)) {
        free(rest);
        return 2;
    }
    free(rest);
    dist_init(&argc, &argv);
    struct allreduce_record *rec = calloc(1, sizeof *rec);
    char device[64];
    clf_ctx_t *ctx = rec ? cli_open(dist_device(o.device, device, sizeof device)) : NULL;
    clf_model_t *m = NULL;
    float *host = NULL;
    struct clf_model_config c;
    int rc = 1;
    if (!ctx || !bench_model(ctx, preset, &c, &m))
        goto done;
    rec->params = clf_model_numel(m);
    if (!(host = malloc(rec->params * sizeof *host))) {
        fprintf(stderr, "clformer bench allreduce: out of host memory for %zu gradients\n", rec->params);
        goto done;
    }
    rec->ranks = dist_size();
    rec->local_ranks = dist_local_size();
    rec->rounds = o.quick ? 5 : 40;
    snprintf(rec->preset, sizeof rec->preset, "%s", preset);
    rec->bucket_mb = bucket_mb;
    clf_status st = measure(ctx, m, host, rec->rounds, rec);
    if (st != CLF_OK) {
        cli_fail(ctx, st, "moving the gradients");
        goto done;
    }
    if ((st = measure_backward(ctx, m, host, o.quick, rec)) != CLF_OK) {
        cli_fail(ctx, st, "the backward with its sum");
        goto done;
    }
    measure_device_get(ctx, &rec->dev);
    rc = 0;
done:
    dist_fail_if(rc, "bench allreduce failed (its message is above)");
    free(host);
    clf_model_free(m);
    clf_ctx_free(ctx);
    int rank = dist_rank();
    dist_finalize();
    if (rc || rank != 0) {  /* the other ranks hand back no record: rank 0 prints */
        free(rec);
        return rc;
    }
    *out = (struct bench_result){rec, allreduce_json, allreduce_table};
    return 0;
}
