/* adam.c: launchers of cl/adam.cl: one Adam step over a flat parameter
 * buffer of n floats, with the gradient's global norm (for clipping)
 * reduced on the device in two fixed-order stages into scratch; and the
 * paper's learning-rate schedule on the host.
 * scratch layout: [0] the norm, [1 .. groups] the per-group partials, where
 * groups (adam_groups) follows the device's compute units: the same device
 * always sums in the same order, so results are deterministic per device. */
#include <math.h>

#include "ops_internal.h"
#include "runtime/ctx.h"

#define ADAM_WG 256
/* work-groups of the norm's first stage per compute unit, and their bounds */
#define ADAM_GROUPS_PER_CU 4
#define ADAM_GROUPS_MIN 16
#define ADAM_GROUPS_MAX 1024

static size_t adam_groups(const clf_ctx_t *ctx)
{
    size_t g = (size_t)ctx->dev.compute_units * ADAM_GROUPS_PER_CU;
    return g < ADAM_GROUPS_MIN ? ADAM_GROUPS_MIN : g > ADAM_GROUPS_MAX ? ADAM_GROUPS_MAX : g;
}

struct clf_adam_desc clf_adam_defaults(float lr)
{
    return (struct clf_adam_desc){.lr = lr, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f, .step = 1};
}

size_t clf_adam_scratch_size(clf_ctx_t *ctx, size_t n)
{
    (void)n;
    return adam_groups(ctx) + 1;
}

float clf_lr_schedule(size_t d_model, size_t step, size_t warmup)
{
    double s = step ? (double)step : 1.0;
    double a = 1.0 / sqrt(s), b = warmup ? s * pow((double)warmup, -1.5) : a;
    return (float)(pow((double)(d_model ? d_model : 1), -0.5) * (a < b ? a : b));
}

clf_status clf_adam_step(clf_ctx_t *ctx, clf_tensor *params, clf_tensor *m, clf_tensor *v, const clf_tensor *grads,
                         clf_tensor *scratch, const struct clf_adam_desc *desc)
{
    const char *op = "adam_step";
    clf_status st;
    if ((st = clf_ops_check(ctx, op, "params", params)) || (st = clf_ops_check(ctx, op, "m", m)) ||
        (st = clf_ops_check(ctx, op, "v", v)) || (st = clf_ops_check(ctx, op, "grads", grads)))
        return st;
    if (!desc)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: no descriptor", op);
    size_t n = clf_tensor_numel(params);
    char sp[96], sm[96], sv[96], sg[96];
    if (clf_tensor_numel(m) != n || clf_tensor_numel(v) != n || clf_tensor_numel(grads) != n)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: params %s, m %s, v %s, grads %s differ in size", op,
                             clf_ops_shape(params, sp, 96), clf_ops_shape(m, sm, 96), clf_ops_shape(v, sv, 96),
                             clf_ops_shape(grads, sg, 96));
    if (desc->step < 1 || !(desc->beta1 >= 0 && desc->beta1 < 1) || !(desc->beta2 >= 0 && desc->beta2 < 1) ||
        !(desc->eps >= 0) || !(desc->lr >= 0))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: step %u, lr %g, beta1 %g, beta2 %g, eps %g out of range", op,
                             (unsigned)desc->step, (double)desc->lr, (double)desc->beta1, (double)desc->beta2,
                             (double)desc->eps);
    bool clip = desc->clip_norm > 0.0f;
    if (clip) {
        if ((st = clf_ops_check(ctx, op, "scratch", scratch)))
            return st;
        if (clf_tensor_numel(scratch) < clf_adam_scratch_size(ctx, n))
            return clf_error_set(ctx, CLF_ERR_ARG, "%s: scratch %s holds fewer than %zu floats", op,
                                 clf_ops_shape(scratch, sp, 96), clf_adam_scratch_size(ctx, n));
    }
    cl_uint so = scratch && scratch->buf ? (cl_uint)scratch->offset : 0, un = (cl_uint)n;
    cl_mem sbuf = clip ? scratch->buf : params->buf;  /* any valid buffer when unused */
    if (clip) {
        cl_kernel kp, kn;
        size_t wp, wn;
        const char *layout = ctx->dev.type & CL_DEVICE_TYPE_CPU ? "-DCONTIG=1" : NULL;
        if ((st = clf_ops_kernel_wg(ctx, "adam.cl", "adam_sq_part", ADAM_WG, layout, &kp, &wp)) ||
            (st = clf_ops_kernel_wg(ctx, "adam.cl", "adam_norm", adam_groups(ctx), NULL, &kn, &wn)))
            return st;
        cl_uint po = so + 1, go = (cl_uint)grads->offset, groups = (cl_uint)adam_groups(ctx);
        struct clf_arg ap[] = {CLF_ARG(sbuf), CLF_ARG(po), CLF_ARG(grads->buf), CLF_ARG(go), CLF_ARG(un)};
        struct clf_arg an[] = {CLF_ARG(sbuf), CLF_ARG(so), CLF_ARG(sbuf), CLF_ARG(po), CLF_ARG(groups)};
        size_t gp = groups * wp;
        if ((st = clf_kernel_set_args(ctx, kp, "adam_sq_part", ap, 5)) ||
            (st = clf_kernel_launch(ctx, kp, "adam_sq_part", 1, &gp, &wp)) ||
            (st = clf_kernel_set_args(ctx, kn, "adam_norm", an, 5)) ||
            (st = clf_kernel_launch(ctx, kn, "adam_norm", 1, &wn, &wn)))
            return st;
    }
    cl_kernel k;
    if ((st = clf_kernel_get(ctx, "adam.cl", NULL, "adam_update", &k)))
        return st;
    double bc1 = 1.0 - pow(desc->beta1, desc->step), bc2 = 1.0 - pow(desc->beta2, desc->step);
    float lr_bc1 = (float)(desc->lr / bc1), bc2_sqrt = (float)sqrt(bc2), cl = clip ? desc->clip_norm : 0.0f;
    cl_uint po = (cl_uint)params->offset, mo = (cl_uint)m->offset, vo = (cl_uint)v->offset,
            go = (cl_uint)grads->offset;
    struct clf_arg args[] = {CLF_ARG(params->buf), CLF_ARG(po),          CLF_ARG(m->buf),       CLF_ARG(mo),
                             CLF_ARG(v->buf),      CLF_ARG(vo),          CLF_ARG(grads->buf),   CLF_ARG(go),
                             CLF_ARG(un),          CLF_ARG(sbuf),        CLF_ARG(so),           CLF_ARG(cl),
                             CLF_ARG(lr_bc1),      CLF_ARG(desc->beta1), CLF_ARG(desc->beta2),  CLF_ARG(desc->eps),
                             CLF_ARG(desc->weight_decay), CLF_ARG(bc2_sqrt)};
    if ((st = clf_kernel_set_args(ctx, k, "adam_update", args, 18)))
        return st;
    size_t global = n, local = clf_kernel_wg_limit(ctx, k, ADAM_WG);
    return clf_kernel_launch(ctx, k, "adam_update", 1, &global, &local);
}
