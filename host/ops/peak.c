/* peak.c: launchers of cl/peak.cl, the probes of `clformer bench peak`:
 * float32 multiply-add throughput over enough work-items to fill the
 * device (compute units x work-group size x 8 groups each, so that every
 * unit has groups in turn), STREAM's triad for the bandwidth a kernel
 * reaches, and an empty kernel for the launch latency. */
#include "ops_internal.h"
#include "runtime/ctx.h"

#define PEAK_WG 256
#define PEAK_GROUPS_PER_UNIT 8

static clf_status fma_kernel(clf_ctx_t *ctx, cl_kernel *k, size_t *wg)
{
    clf_status st = clf_kernel_get(ctx, "peak.cl", NULL, "peak_fma", k);
    if (st == CLF_OK)
        *wg = clf_kernel_wg_limit(ctx, *k, PEAK_WG);
    return st;
}

clf_status clf_peak_fma_items(clf_ctx_t *ctx, size_t *items)
{
    cl_kernel k;
    size_t wg;
    clf_status st = fma_kernel(ctx, &k, &wg);
    if (st == CLF_OK)
        *items = (size_t)(ctx->dev.compute_units ? ctx->dev.compute_units : 1) * wg * PEAK_GROUPS_PER_UNIT;
    return st;
}

clf_status clf_peak_fma(clf_ctx_t *ctx, clf_tensor *out, unsigned iters)
{
    clf_status st = clf_ops_check(ctx, "peak_fma", "out", out);
    if (st)
        return st;
    cl_kernel k;
    size_t wg, n = clf_tensor_numel(out);
    if ((st = fma_kernel(ctx, &k, &wg)))
        return st;
    if (out->offset != 0 || n % wg)
        return clf_error_set(ctx, CLF_ERR_ARG, "peak_fma: out wants a whole tensor of a multiple of %zu items "
                             "(clf_peak_fma_items), not %zu at offset %zu", wg, n, out->offset);
    /* m just under 1 and k small keep every chain finite however long */
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
