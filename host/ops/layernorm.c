/* layernorm.c: launchers of cl/layernorm.cl: layer norm over the last
 * dimension d of x (rows, d), with gain and bias (d); forward keeps mean
 * and rstd (rows), alone or after a residual sum (with dropout) in the
 * same kernel; backward gives dx (and the residual's dropout'(dx) in the
 * same kernel) and adds into dgain, dbias through a two-stage column sum. */
#include "base/status.h"
#include "ops_internal.h"
#include "runtime/scratch.h"

#define ROW_WG_CAP 256

/* y stands for y, dy or dx; bias for bias, dbias or dgain (NULL: absent) */
static clf_status check(clf_ctx_t *ctx, const char *op, const clf_tensor *y, const clf_tensor *mean,
                        const clf_tensor *rstd, const clf_tensor *x, const clf_tensor *gain, const clf_tensor *bias)
{
    clf_status st;
    if ((st = clf_ops_check(ctx, op, "x", x)) || (st = clf_ops_check(ctx, op, "y/dy/dx", y)) ||
        (st = clf_ops_check(ctx, op, "mean", mean)) || (st = clf_ops_check(ctx, op, "rstd", rstd)) ||
        (st = clf_ops_check(ctx, op, "gain", gain)) ||
        (bias && (st = clf_ops_check(ctx, op, "bias/dgain/dbias", bias))))
        return st;
    size_t d = clf_t_cols(x), rows = clf_tensor_numel(x) / d;
    if (clf_tensor_numel(y) != rows * d || clf_t_cols(y) != d || clf_tensor_numel(mean) != rows ||
        clf_tensor_numel(rstd) != rows || clf_tensor_numel(gain) != d || (bias && clf_tensor_numel(bias) != d)) {
        char sx[96], sy[96], sm[96], sr[96], sg[96], sb[96];
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: shapes do not agree: x %s, y/dy/dx %s, mean %s, rstd %s, gain %s, bias/dgain/dbias %s "
                             "(want y (rows, d), mean and rstd (rows), gain and bias (d))",
                             op, clf_ops_shape(x, sx, 96), clf_ops_shape(y, sy, 96), clf_ops_shape(mean, sm, 96),
                             clf_ops_shape(rstd, sr, 96), clf_ops_shape(gain, sg, 96),
                             clf_ops_shape(bias, sb, 96));
    }
    return CLF_OK;
}

clf_status clf_layernorm_forward(clf_ctx_t *ctx, clf_tensor *y, clf_tensor *mean, clf_tensor *rstd,
                                 const clf_tensor *x, const clf_tensor *gain, const clf_tensor *bias, float eps)
{
    const char *op = "layernorm_forward";
    if (!bias)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: bias is NULL", op);
    clf_status st = check(ctx, op, y, mean, rstd, x, gain, bias);
    if (st)
        return st;
    if (!(eps > 0.0f))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: eps = %g, want > 0", op, (double)eps);
    size_t d = clf_t_cols(x), rows = clf_tensor_numel(x) / d, wg;
    cl_kernel k;
    if ((st = clf_ops_kernel_wg(ctx, "layernorm.cl", "ln_fwd", clf_ops_pow2(d, ROW_WG_CAP), NULL, &k, &wg)))
        return st;
    cl_uint yo = (cl_uint)y->offset, mo = (cl_uint)mean->offset, ro = (cl_uint)rstd->offset,
            xo = (cl_uint)x->offset, go = (cl_uint)gain->offset, bo = (cl_uint)bias->offset, ud = (cl_uint)d;
    struct clf_arg args[] = {CLF_ARG(y->buf),    CLF_ARG(yo), CLF_ARG(mean->buf), CLF_ARG(mo), CLF_ARG(rstd->buf),
                             CLF_ARG(ro),        CLF_ARG(x->buf), CLF_ARG(xo),    CLF_ARG(gain->buf), CLF_ARG(go),
                             CLF_ARG(bias->buf), CLF_ARG(bo), CLF_ARG(ud),        CLF_ARG(eps)};
    if ((st = clf_kernel_set_args(ctx, k, "ln_fwd", args, 14)))
        return st;
    size_t global = rows * wg;
    return clf_kernel_launch(ctx, k, "ln_fwd", 1, &global, &wg);
}

clf_status clf_residual_layernorm_forward(clf_ctx_t *ctx, clf_tensor *y, clf_tensor *mean, clf_tensor *rstd,
                                          clf_tensor *sum, const clf_tensor *x, const clf_tensor *sub,
                                          const clf_tensor *gain, const clf_tensor *bias, float eps,
                                          const struct clf_dropout *drop)
{
    const char *op = "residual_layernorm_forward";
    if (!bias || !sum || !sub)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: bias, sum or sub is NULL", op);
    clf_status st = check(ctx, op, y, mean, rstd, x, gain, bias);
    if (st || (st = clf_ops_check(ctx, op, "sum", sum)) || (st = clf_ops_check(ctx, op, "sub", sub)))
        return st;
    size_t d = clf_t_cols(x), rows = clf_tensor_numel(x) / d, wg;
    if (clf_tensor_numel(sum) != rows * d || clf_tensor_numel(sub) != rows * d) {
        char sx[96], ss[96], sf[96];
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: x %s, sum %s and sub %s differ in size", op,
                             clf_ops_shape(x, sx, 96), clf_ops_shape(sum, ss, 96), clf_ops_shape(sub, sf, 96));
    }
    if (!(eps > 0.0f))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: eps = %g, want > 0", op, (double)eps);
    struct clf_drop_args da;
    if ((st = clf_drop_args_make(ctx, op, drop, &da)))
        return st;
    cl_kernel k;
    if ((st = clf_ops_kernel_wg(ctx, "layernorm.cl", "ln_res_fwd", clf_ops_pow2(d, ROW_WG_CAP), NULL, &k, &wg)))
        return st;
    cl_uint yo = (cl_uint)y->offset, mo = (cl_uint)mean->offset, ro = (cl_uint)rstd->offset,
            so = (cl_uint)sum->offset, xo = (cl_uint)x->offset, fo = (cl_uint)sub->offset, go = (cl_uint)gain->offset,
            bo = (cl_uint)bias->offset, ud = (cl_uint)d;
    struct clf_arg args[] = {CLF_ARG(y->buf),    CLF_ARG(yo), CLF_ARG(mean->buf), CLF_ARG(mo), CLF_ARG(rstd->buf),
                             CLF_ARG(ro),        CLF_ARG(sum->buf), CLF_ARG(so),  CLF_ARG(x->buf), CLF_ARG(xo),
                             CLF_ARG(sub->buf),  CLF_ARG(fo), CLF_ARG(gain->buf), CLF_ARG(go), CLF_ARG(bias->buf),
                             CLF_ARG(bo),        CLF_ARG(ud), CLF_ARG(eps),       CLF_DROP_ARGS(da)};
    if ((st = clf_kernel_set_args(ctx, k, "ln_res_fwd", args, 24)))
        return st;
    size_t global = rows * wg;
    return clf_kernel_launch(ctx, k, "ln_res_fwd", 1, &global, &wg);
}

/* layer norm's backward; with dsub, the residual's too (ln_bwd_drop) */
static clf_status ln_backward(clf_ctx_t *ctx, const char *op, clf_tensor *dx, clf_tensor *dsub, clf_tensor *dgain,
                              clf_tensor *dbias, const clf_tensor *dy, const clf_tensor *x, const clf_tensor *mean,
                              const clf_tensor *rstd, const clf_tensor *gain, const struct clf_dropout *drop)
{
    clf_status st;
    struct clf_drop_args da;
    if ((st = check(ctx, op, dy, mean, rstd, x, gain, dbias)) || (st = check(ctx, op, dx, mean, rstd, x, gain, dgain)) ||
        (dsub && (st = check(ctx, op, dsub, mean, rstd, x, gain, NULL))) ||
        (st = clf_drop_args_make(ctx, op, drop, &da)))
        return st;
    size_t d = clf_t_cols(x), rows = clf_tensor_numel(x) / d, wg;
    cl_uint dxo = (cl_uint)dx->offset, dyo = (cl_uint)dy->offset, xo = (cl_uint)x->offset,
            mo = (cl_uint)mean->offset, ro = (cl_uint)rstd->offset, go = (cl_uint)gain->offset, ud = (cl_uint)d;
    /* parameter gradients first: dx may alias dy */
    if (dgain || dbias) {
        cl_kernel kp;
        if ((st = clf_kernel_get(ctx, "layernorm.cl", NULL, "ln_param_part", &kp)))
            return st;
        size_t nchunks, chunk = clf_ops_colsum_chunk(rows, &nchunks);
        cl_mem part, partb;
        if ((st = clf_scratch_get(ctx, CLF_SCRATCH_PART, nchunks * d * sizeof(float), &part)) ||
            (st = clf_scratch_get(ctx, CLF_SCRATCH_PART2, nchunks * d * sizeof(float), &partb)))
            return st;
        cl_uint r = (cl_uint)rows, ch = (cl_uint)chunk;
        struct clf_arg ap[] = {CLF_ARG(part), CLF_ARG(partb), CLF_ARG(dy->buf), CLF_ARG(dyo), CLF_ARG(x->buf),
                               CLF_ARG(xo), CLF_ARG(mean->buf), CLF_ARG(mo), CLF_ARG(rstd->buf), CLF_ARG(ro),
                               CLF_ARG(r), CLF_ARG(ud), CLF_ARG(ch)};
        size_t gp[2] = {d, nchunks}, lp[2] = {clf_kernel_wg_limit(ctx, kp, 64), 1};
        if (!(st = clf_kernel_set_args(ctx, kp, "ln_param_part", ap, 13)) &&
            !(st = clf_kernel_launch(ctx, kp, "ln_param_part", 2, gp, lp)) && dgain)
            st = clf_ops_colsum_final(ctx, dgain->buf, dgain->offset, part, d, nchunks);
        if (!st && dbias)
            st = clf_ops_colsum_final(ctx, dbias->buf, dbias->offset, partb, d, nchunks);
        if (st)
            return st;
    }
    const char *kname = dsub ? "ln_bwd_drop" : "ln_bwd";
    cl_kernel k;
    if ((st = clf_ops_kernel_wg(ctx, "layernorm.cl", kname, clf_ops_pow2(d, ROW_WG_CAP), NULL, &k, &wg)))
        return st;
    /* ln_bwd_drop takes ln_bwd's arguments, then dsub's and dropout's */
    cl_mem dsb = dsub ? dsub->buf : NULL;
    cl_uint dso = dsub ? (cl_uint)dsub->offset : 0;
    struct clf_arg args[] = {CLF_ARG(dx->buf),   CLF_ARG(dxo), CLF_ARG(dy->buf),   CLF_ARG(dyo), CLF_ARG(x->buf),
                             CLF_ARG(xo),        CLF_ARG(mean->buf), CLF_ARG(mo), CLF_ARG(rstd->buf), CLF_ARG(ro),
                             CLF_ARG(gain->buf), CLF_ARG(go),  CLF_ARG(ud),       CLF_ARG(dsb),       CLF_ARG(dso),
                             CLF_DROP_ARGS(da)};
    if ((st = clf_kernel_set_args(ctx, k, kname, args, dsub ? 21 : 13)))
        return st;
    size_t global = rows * wg;
    return clf_kernel_launch(ctx, k, kname, 1, &global, &wg);
}

clf_status clf_layernorm_backward(clf_ctx_t *ctx, clf_tensor *dx, clf_tensor *dgain, clf_tensor *dbias,
                                  const clf_tensor *dy, const clf_tensor *x, const clf_tensor *mean,
                                  const clf_tensor *rstd, const clf_tensor *gain)
{
    return ln_backward(ctx, "layernorm_backward", dx, NULL, dgain, dbias, dy, x, mean, rstd, gain, NULL);
}

clf_status clf_residual_layernorm_backward(clf_ctx_t *ctx, clf_tensor *dx, clf_tensor *dsub, clf_tensor *dgain,
                                           clf_tensor *dbias, const clf_tensor *dy, const clf_tensor *sum,
                                           const clf_tensor *mean, const clf_tensor *rstd, const clf_tensor *gain,
                                           const struct clf_dropout *drop)
{
    const char *op = "residual_layernorm_backward";
    if (!dsub)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: dsub is NULL", op);
    return ln_backward(ctx, op, dx, dsub, dgain, dbias, dy, sum, mean, rstd, gain, drop);
}
