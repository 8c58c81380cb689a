/* peak.c: launchers of cl/peak.cl, the probes of `clformer bench peak`:
 * multiply-add throughput (float32, and float16 and float64 where the
 * device has cl_khr_fp16 and cl_khr_fp64) over enough work-items to fill
 * the device (compute units x work-group size x 8 groups each, so that
 * every unit has groups in turn), STREAM's triad for the bandwidth a
 * kernel reaches, and an empty kernel for the launch latency, which
 * clf_peak_launch_latency measures (bench peak and bench translate's
 * prediction of its host share both read it). */
#include <stdlib.h>

#include "base/clock.h"
#include "ops_internal.h"
#include "runtime/ctx.h"

#define PEAK_WG 256
#define PEAK_GROUPS_PER_UNIT 8

/* Each precision's build options, the extension it needs ("" none) and
 * its lanes a vector (cl/peak.cl's PEAK_W). */
static const struct {
    const char *name, *options, *extension;
    unsigned lanes;
} types[] = {
    [CLF_PEAK_FLOAT32] = {"float32", NULL, "", 8},
    [CLF_PEAK_FLOAT16] = {"float16", "-DPEAK_FP16", "cl_khr_fp16", 8},
    [CLF_PEAK_FLOAT64] = {"float64", "-DPEAK_FP64", "cl_khr_fp64", 4},
};

static bool type_ok(enum clf_peak_type t) { return (unsigned)t < sizeof types / sizeof types[0]; }

const char *clf_peak_type_str(enum clf_peak_type t) { return type_ok(t) ? types[t].name : "unknown"; }

unsigned clf_peak_fma_flop(enum clf_peak_type t) { return type_ok(t) ? 8 * 2 * types[t].lanes : 0; }

bool clf_peak_fma_supported(clf_ctx_t *ctx, enum clf_peak_type t)
{
    return type_ok(t) && (!types[t].extension[0] || clf_device_has_extension(&ctx->dev, types[t].extension));
}

/* The kernel of precision t, built only where the device has its
 * extension: a kernel that enables cl_khr_fp16 would not build elsewhere. */
static clf_status fma_kernel(clf_ctx_t *ctx, enum clf_peak_type t, cl_kernel *k, size_t *wg)
{
    if (!type_ok(t))
        return clf_error_set(ctx, CLF_ERR_ARG, "peak_fma: no precision %d", (int)t);
    if (!clf_peak_fma_supported(ctx, t))
        return clf_error_set(ctx, CLF_ERR_UNSUPPORTED, "peak_fma: device '%s' lacks %s, which %s runs on",
                             ctx->dev.device_name, types[t].extension, types[t].name);
    clf_status st = clf_kernel_get(ctx, "peak.cl", types[t].options, "peak_fma", k);
    if (st == CLF_OK)
        *wg = clf_kernel_wg_limit(ctx, *k, PEAK_WG);
    return st;
}

clf_status clf_peak_fma_items(clf_ctx_t *ctx, enum clf_peak_type t, size_t *items)
{
    cl_kernel k;
    size_t wg;
    clf_status st = fma_kernel(ctx, t, &k, &wg);
    if (st == CLF_OK)
        *items = (size_t)(ctx->dev.compute_units ? ctx->dev.compute_units : 1) * wg * PEAK_GROUPS_PER_UNIT;
    return st;
}

clf_status clf_peak_fma(clf_ctx_t *ctx, enum clf_peak_type t, clf_tensor *out, unsigned iters)
{
    clf_status st = clf_ops_check(ctx, "peak_fma", "out", out);
    if (st)
        return st;
    cl_kernel k;
    size_t wg, n = clf_tensor_numel(out);
    if ((st = fma_kernel(ctx, t, &k, &wg)))
        return st;
    if (out->offset != 0 || n % wg)
        return clf_error_set(ctx, CLF_ERR_ARG, "peak_fma: out wants a whole tensor of a multiple of %zu items "
                             "(clf_peak_fma_items), not %zu at offset %zu", wg, n, out->offset);
    /* m just under 1 and k small keep every chain finite however long
     * (half's 0.999 is 0.99902: the same) */
    float m = 0.999f, add = 0.001f;
    cl_uint it = iters;
    struct clf_arg args[] = {CLF_ARG(out->buf), CLF_ARG(m), CLF_ARG(add), CLF_ARG(it)};
    if ((st = clf_kernel_set_args(ctx, k, "peak_fma", args, 4)))
        return st;
    return clf_kernel_launch(ctx, k, "peak_fma", 1, &n, &wg);
}

clf_status clf_peak_triad(clf_ctx_t *ctx, clf_tensor *a, const clf_tensor *b, const clf_tensor *c, float s)
{
    clf_status st;
    if ((st = clf_ops_check(ctx, "peak_triad", "a", a)) || (st = clf_ops_check(ctx, "peak_triad", "b", b)) ||
        (st = clf_ops_check(ctx, "peak_triad", "c", c)))
        return st;
    size_t n = clf_tensor_numel(a);
    if (clf_tensor_numel(b) != n || clf_tensor_numel(c) != n || n % 4 || a->offset || b->offset || c->offset)
        return clf_error_set(ctx, CLF_ERR_ARG, "peak_triad: a, b and c want one size, a multiple of 4 (%zu, %zu, "
                             "%zu) and whole tensors", n, clf_tensor_numel(b), clf_tensor_numel(c));
    cl_kernel k;
    if ((st = clf_kernel_get(ctx, "peak.cl", NULL, "peak_triad", &k)))
        return st;
    size_t items = n / 4, wg = clf_kernel_wg_limit(ctx, k, PEAK_WG);
    cl_uint n4 = (cl_uint)items;
    struct clf_arg args[] = {CLF_ARG(a->buf), CLF_ARG(b->buf), CLF_ARG(c->buf), CLF_ARG(s), CLF_ARG(n4)};
    if ((st = clf_kernel_set_args(ctx, k, "peak_triad", args, 5)))
        return st;
    return clf_kernel_launch(ctx, k, "peak_triad", 1, &items, &wg);
}

clf_status clf_peak_empty(clf_ctx_t *ctx)
{
    cl_kernel k;
    clf_status st = clf_kernel_get(ctx, "peak.cl", NULL, "peak_empty", &k);
    if (st)
        return st;
    size_t one = 1;
    return clf_kernel_launch(ctx, k, "peak_empty", 1, &one, &one);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

clf_status clf_peak_launch_latency(clf_ctx_t *ctx, int n, double *enqueue_us, double *finish_us)
{
    if (n < 1)
        return clf_error_set(ctx, CLF_ERR_ARG, "clf_peak_launch_latency: %d launches (want >= 1)", n);
    double *enq = malloc(2 * (size_t)n * sizeof *enq), *all = enq + n;
    clf_status st = enq ? clf_ctx_finish(ctx) : clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    for (int i = -8; st == CLF_OK && i < n; i++) {  /* 8 first to build and warm, left out */
        double t0 = clf_now();
        st = clf_peak_empty(ctx);
        double t1 = clf_now();
        if (st == CLF_OK)
            st = clf_ctx_finish(ctx);
        double t2 = clf_now();
        if (i >= 0)
            enq[i] = 1e6 * (t1 - t0), all[i] = 1e6 * (t2 - t0);
    }
    if (st == CLF_OK) {
        qsort(enq, (size_t)n, sizeof *enq, cmp_double);
        qsort(all, (size_t)n, sizeof *all, cmp_double);
        *enqueue_us = enq[n / 2];
        *finish_us = all[n / 2];
    }
    free(enq);
    return st;
}
