/* peak.c: launchers of cl/peak.cl, the probes of `clformer bench peak`:
 * float32 multiply-add throughput over enough work-items to fill the
 * device (compute units x work-group size x 8 groups each, so that every
 * unit has groups in turn), and an empty kernel for the launch latency. */
#include "ops_internal.h"

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

clf_status clf_peak_empty(clf_ctx_t *ctx)
{
    cl_kernel k;
    clf_status st = clf_kernel_get(ctx, "peak.cl", NULL, "peak_empty", &k);
    if (st)
        return st;
    size_t one = 1;
    return clf_kernel_launch(ctx, k, "peak_empty", 1, &one, &one);
}
