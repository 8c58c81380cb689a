/* bench_peak.c: `clformer bench peak`, the device's roofs as clpeak
 * measures them: multiply-add throughput (GFLOP/s) from a kernel that
 * holds its values in registers (cl/peak.cl, sized to fill every compute
 * unit) in float32, and in float16 and float64 where the device has
 * cl_khr_fp16 and cl_khr_fp64 (null where not: the figure is there, of no
 * value), float32's set against the CPU's theoretical peak on a CPU
 * device (bench_cpu_theoretical_gflops); copy bandwidth (GB/s: a 64 MiB
 * clEnqueueCopyBuffer, read + write counted, the same roof as bench
 * ops'), STREAM's triad (GB/s: a = b + s·c over 64 MiB each, 2 read + 1
 * written, a kernel of ours: cl/peak.cl), and the launch latency of an
 * empty kernel on one work-item (µs), as the enqueue alone and as
 * enqueue to completion, each the median of many
 * (clf_peak_launch_latency). The figures elsewhere (bench ops' GFLOP/s
 * and GB/s) are read against these. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#define COPY_FLOATS (16u << 20) /* 64 MiB */

#define NTYPES 3  /* enum clf_peak_type: float32, float16, float64 */

/* One precision's FMA probe; gflops NaN where the device lacks it. */
struct fma_figure {
    size_t items;
    unsigned iters;
    double s, gflops;
};

struct peak_record {
    struct measure_device dev;
    struct fma_figure fma[NTYPES];
    double theoretical_gflops;  /* float32, NaN where none can be derived (basis says why) */
    char basis[400];
    double copy_s, gbps, triad_s, triad_gbps, enqueue_us, launch_us;
    int launches;
};

static void peak_json(FILE *f, const void *p)
{
    const struct peak_record *r = p;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "peak");
    measure_device_json(&w, &r->dev);
    cli_json_num(&w, "fma_items", "%zu", r->fma[CLF_PEAK_FLOAT32].items);
    cli_json_num(&w, "fma_iters", "%u", r->fma[CLF_PEAK_FLOAT32].iters);
    cli_json_num(&w, "launches", "%d", r->launches);
    cli_json_arr(&w, "results");
    /* one probe each, named by a string so that the case names stay put
     * whatever the sizes chosen; a precision the device lacks is null */
    for (int t = 0; t < NTYPES; t++) {
        char probe[32];
        snprintf(probe, sizeof probe, "fma %s", clf_peak_type_str((enum clf_peak_type)t));
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "probe", probe);
        cli_json_real(&w, "gflops", r->fma[t].gflops);
        if (t == CLF_PEAK_FLOAT32) {
            cli_json_real(&w, "theoretical_gflops", r->theoretical_gflops);
            cli_json_real(&w, "of_theoretical", r->fma[t].gflops / r->theoretical_gflops);
            cli_json_str(&w, "theoretical_gflops_basis", r->basis);
        }
        cli_json_end(&w);
    }
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "probe", "copy 64MiB");
    cli_json_num(&w, "gbps", "%.2f", r->gbps);
    cli_json_end(&w);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "probe", "triad 64MiB");
    cli_json_num(&w, "gbps", "%.2f", r->triad_gbps);
    cli_json_end(&w);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "probe", "launch enqueue");
    cli_json_num(&w, "us", "%.2f", r->enqueue_us);
    cli_json_end(&w);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "probe", "launch enqueue+finish");
    cli_json_num(&w, "us", "%.2f", r->launch_us);
    cli_json_end(&w);
    cli_json_end(&w);
    cli_json_end(&w);
}

static void peak_table(FILE *f, const void *p)
{
    const struct peak_record *r = p;
    static const char *const vec[NTYPES] = {"float8", "half8", "double4"},
                             *ext[NTYPES] = {"", "cl_khr_fp16", "cl_khr_fp64"};
    fprintf(f, "peaks of %s\n", r->dev.info.device_name);
    for (int t = 0; t < NTYPES; t++) {
        const struct fma_figure *x = &r->fma[t];
        if (isnan(x->gflops))
            fprintf(f, "  %-7s FMA      %10s          (the device lacks %s)\n",
                    clf_peak_type_str((enum clf_peak_type)t), "null", ext[t]);
        else
            fprintf(f, "  %-7s FMA      %10.2f GFLOP/s  (%zu items x %u rounds of 8 %s mad)\n",
                    clf_peak_type_str((enum clf_peak_type)t), x->gflops, x->items, x->iters, vec[t]);
    }
    if (isnan(r->theoretical_gflops))
        fprintf(f, "  float32 theory   %10s          (%s)\n", "null", r->basis);
    else
        fprintf(f, "  float32 theory   %10.2f GFLOP/s  float32 FMA at %.1f%% of it (%s)\n", r->theoretical_gflops,
                100 * r->fma[CLF_PEAK_FLOAT32].gflops / r->theoretical_gflops, r->basis);
    fprintf(f, "  copy 64 MiB      %10.2f GB/s     (read + write)\n", r->gbps);
    fprintf(f, "  triad 64 MiB     %10.2f GB/s     (a = b + s*c: 2 read + 1 written)\n", r->triad_gbps);
    fprintf(f, "  launch, enqueue  %10.2f us       (empty kernel, median of %d)\n", r->enqueue_us, r->launches);
    fprintf(f, "  launch, to end   %10.2f us       (enqueue + finish, median of %d)\n", r->launch_us, r->launches);
}

struct fma_arg {
    enum clf_peak_type type;
    clf_tensor *out;
    unsigned iters;
};
static clf_status run_fma(clf_ctx_t *ctx, void *a)
{
    struct fma_arg *f = a;
    return clf_peak_fma(ctx, f->type, f->out, f->iters);
}

struct copy_arg {
    clf_tensor *dst, *src;
};
static clf_status run_copy(clf_ctx_t *ctx, void *a)
{
    struct copy_arg *c = a;
    return clf_tensor_copy(ctx, c->dst, c->src);
}

/* The FMA probe of one precision: rounds raised until one run takes
 * about `target` seconds (a short kernel is mostly launch), then timed. */
static clf_status fma_probe(clf_ctx_t *ctx, enum clf_peak_type type, struct fma_figure *r, double target,
                            double min_s)
{
    clf_tensor out = {0};
    clf_status st = clf_peak_fma_items(ctx, type, &r->items);
    if (st || (st = clf_tensor_init(ctx, &out, 1, (size_t[]){r->items})))
        return st;
    struct fma_arg a = {type, &out, 64};
    double t = 0;
    for (;;) {
        t = measure_time(ctx, run_fma, &a, 0);
        if (t < 0) {
            st = CLF_ERR_OPENCL;
            break;
        }
        if (t >= target / 4 || a.iters >= (1u << 22))
            break;
        a.iters *= 4;
    }
    if (st == CLF_OK && t < target && a.iters < (1u << 22) && t > 0) {
        double scale = target / t;
        a.iters = (unsigned)(a.iters * (scale < 64 ? scale : 64));
    }
    if (st == CLF_OK && (t = measure_time(ctx, run_fma, &a, min_s)) < 0)
        st = CLF_ERR_OPENCL;
    if (st == CLF_OK) {
        r->iters = a.iters;
        r->s = t;
        r->gflops = (double)clf_peak_fma_flop(type) * a.iters * (double)r->items / t * 1e-9;
    }
    clf_tensor_free(&out);
    return st;
}

static clf_status copy_probe(clf_ctx_t *ctx, struct peak_record *r, double min_s)
{
    clf_tensor x = {0}, y = {0};
    size_t n = COPY_FLOATS;
    clf_status st;
    if ((st = clf_tensor_init(ctx, &x, 1, &n)) || (st = clf_tensor_init(ctx, &y, 1, &n)) ||
        (st = clf_tensor_fill(ctx, &x, 1.0f)))
        goto done;
    struct copy_arg a = {&y, &x};
    double t = measure_time(ctx, run_copy, &a, min_s);
    if (t < 0) {
        st = CLF_ERR_OPENCL;
        goto done;
    }
    r->copy_s = t;
    r->gbps = 2.0 * n * sizeof(float) / t * 1e-9;
done:
    clf_tensor_free(&x);
    clf_tensor_free(&y);
    return st;
}

struct triad_arg {
    clf_tensor *a, *b, *c;
};
static clf_status run_triad(clf_ctx_t *ctx, void *p)
{
    struct triad_arg *t = p;
    return clf_peak_triad(ctx, t->a, t->b, t->c, 3.0f);
}

/* STREAM's triad over three 64 MiB tensors: 12 bytes an element. A wrong
 * result (a kernel that wrote nothing would be fast) is said here and
 * leaves triad_gbps -1. */
static clf_status triad_probe(clf_ctx_t *ctx, struct peak_record *r, double min_s)
{
    clf_tensor a = {0}, b = {0}, c = {0}, one;
    size_t n = COPY_FLOATS;
    float first = 0;
    clf_status st;
    if ((st = clf_tensor_init(ctx, &a, 1, &n)) || (st = clf_tensor_init(ctx, &b, 1, &n)) ||
        (st = clf_tensor_init(ctx, &c, 1, &n)) || (st = clf_tensor_fill(ctx, &b, 1.0f)) ||
        (st = clf_tensor_fill(ctx, &c, 2.0f)))
        goto done;
    struct triad_arg t = {&a, &b, &c};
    double s = measure_time(ctx, run_triad, &t, min_s);
    if (s < 0) {
        st = CLF_ERR_OPENCL;
        goto done;
    }
    if ((st = clf_tensor_view(ctx, &a, 0, 1, (size_t[]){1}, &one)) || (st = clf_tensor_download(ctx, &one, &first)))
        goto done;
    if (first != 7.0f) {
        fprintf(stderr, "clformer bench peak: the triad wrote %g where 1 + 3*2 = 7 was due\n", first);
        r->triad_gbps = -1;
        st = CLF_ERR_OPENCL;
        goto done;
    }
    r->triad_s = s;
    r->triad_gbps = 3.0 * n * sizeof(float) / s * 1e-9;
done:
    clf_tensor_free(&a);
    clf_tensor_free(&b);
    clf_tensor_free(&c);
    return st;
}

const char bench_peak_usage[] = "clformer bench peak [--json] [--device D] [--quick]";

int bench_peak(int argc, char **argv, struct bench_result *out)
{
    struct bench_opts o;
    if (!bench_parse(argc, argv, &o, bench_peak_usage))
        return 2;
    struct peak_record *rec = calloc(1, sizeof *rec);
    clf_ctx_t *ctx = rec ? cli_open(o.device) : NULL;
    if (!ctx) {
        free(rec);
        return 1;
    }
    measure_device_get(ctx, &rec->dev);
    const double min_s = o.quick ? 0.1 : 0.5;
    clf_status st = CLF_OK;
    int rc = 0;
    for (int t = 0; t < NTYPES && rc == 0; t++) {
        rec->fma[t].gflops = NAN;  /* null unless measured */
        if (clf_peak_fma_supported(ctx, (enum clf_peak_type)t) &&
            (st = fma_probe(ctx, (enum clf_peak_type)t, &rec->fma[t], o.quick ? 0.02 : 0.05, min_s))) {
            char what[64];
            snprintf(what, sizeof what, "bench peak: the %s FMA probe", clf_peak_type_str((enum clf_peak_type)t));
            rc = cli_fail(ctx, st, what);
        }
    }
    if (rec->dev.info.type & CL_DEVICE_TYPE_CPU) {
        rec->theoretical_gflops =
            bench_cpu_theoretical_gflops(rec->dev.info.compute_units, rec->dev.clock_mhz, rec->basis, sizeof rec->basis);
    } else {
        rec->theoretical_gflops = NAN;
        snprintf(rec->basis, sizeof rec->basis, "not a CPU: compute units x clock give no peak without the lanes "
                                                "a unit, which OpenCL does not say");
    }
    if (rc == 0 && (st = copy_probe(ctx, rec, min_s)))
        rc = cli_fail_memory(ctx, st, "bench peak: the copy probe", "--device");
    if (rc == 0 && (st = triad_probe(ctx, rec, min_s)))
        rc = rec->triad_gbps < 0 ? 1 : cli_fail_memory(ctx, st, "bench peak: the triad probe", "--device");
    rec->launches = o.quick ? 200 : 1000;
    if (rc == 0 && (st = clf_peak_launch_latency(ctx, rec->launches, &rec->enqueue_us, &rec->launch_us)))
        rc = cli_fail(ctx, st, "bench peak: the launch probe");
    clf_ctx_free(ctx);
    if (rc) {
        free(rec);
        return rc;
    }
    *out = (struct bench_result){rec, peak_json, peak_table};
    return 0;
}
