/* ffn.c: the position-wise feed-forward network, x (rows, d) → y (rows, d)
 * through hidden (rows, dff): two clf_gemm products around the fused
 * bias + ReLU + dropout kernel of cl/ffn.cl; backward through the same
 * GEMMs (transposed operands) and two-stage bias sums. */
#include "ops_internal.h"

#define FLAT_WG 256

struct dims {
    size_t rows, d, dff;
};

static clf_status check(clf_ctx_t *ctx, const char *op, const clf_tensor *y, const clf_tensor *hidden,
                        const clf_tensor *x, const struct clf_ffn_params *p, struct dims *dm)
{
    clf_status st;
    if (!p)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: no parameters", op);
    if ((st = clf_ops_check(ctx, op, "x", x)) || (st = clf_ops_check(ctx, op, "y/dy", y)) ||
        (st = clf_ops_check(ctx, op, "hidden", hidden)) || (st = clf_ops_check(ctx, op, "w1", &p->w1)) ||
        (st = clf_ops_check(ctx, op, "b1", &p->b1)) || (st = clf_ops_check(ctx, op, "w2", &p->w2)) ||
        (st = clf_ops_check(ctx, op, "b2", &p->b2)))
        return st;
    size_t d = clf_t_cols(x), rows = clf_tensor_numel(x) / d, dff = clf_tensor_numel(&p->b1);
    if (clf_tensor_numel(y) != rows * d || clf_tensor_numel(hidden) != rows * dff ||
        clf_tensor_numel(&p->w1) != d * dff || clf_tensor_numel(&p->w2) != dff * d ||
        clf_tensor_numel(&p->b2) != d) {
        char sx[96], sy[96], sh[96], s1[96], sb1[96], s2[96], sb2[96];
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: shapes do not agree: x %s, y %s, hidden %s, w1 %s, b1 %s, w2 %s, b2 %s "
                             "(want x, y (rows, d), hidden (rows, d_ff), w1 (d, d_ff), b1 (d_ff), w2 (d_ff, d), "
                             "b2 (d))",
                             op, clf_ops_shape(x, sx, 96), clf_ops_shape(y, sy, 96), clf_ops_shape(hidden, sh, 96),
                             clf_ops_shape(&p->w1, s1, 96), clf_ops_shape(&p->b1, sb1, 96),
                             clf_ops_shape(&p->w2, s2, 96), clf_ops_shape(&p->b2, sb2, 96));
    }
    *dm = (struct dims){rows, d, dff};
    return CLF_OK;
}

static struct clf_mat mat(const clf_tensor *t, size_t ld, bool trans)
{
    return (struct clf_mat){t->buf, t->offset, ld, trans, 0};
}

clf_status clf_ffn_forward(clf_ctx_t *ctx, clf_tensor *y, clf_tensor *hidden, const clf_tensor *x,
                           const struct clf_ffn_params *p, const struct clf_dropout *drop)
{
    const char *op = "ffn_forward";
    struct dims dm;
    struct clf_drop_args da;
    clf_status st;
    if ((st = check(ctx, op, y, hidden, x, p, &dm)) || (st = clf_drop_args_make(ctx, op, drop, &da)))
        return st;
    struct clf_mat mx = mat(x, dm.d, false), mw1 = mat(&p->w1, dm.dff, false), mh = mat(hidden, dm.dff, false),
                   mw2 = mat(&p->w2, dm.d, false), my = mat(y, dm.d, false);
    if ((st = clf_gemm(ctx, dm.rows, dm.dff, dm.d, 1.0f, &mx, &mw1, 0.0f, &mh)))
        return st;
    cl_kernel k;
    if ((st = clf_kernel_get(ctx, "ffn.cl", NULL, "ffn_act", &k)))
        return st;
    cl_uint ho = (cl_uint)hidden->offset, bo = (cl_uint)p->b1.offset, n = (cl_uint)(dm.rows * dm.dff),
            dff = (cl_uint)dm.dff;
    struct clf_arg args[] = {CLF_ARG(hidden->buf), CLF_ARG(ho), CLF_ARG(p->b1.buf), CLF_ARG(bo), CLF_ARG(n),
                             CLF_ARG(dff), CLF_DROP_ARGS(da)};
    size_t global = (n + 3) / 4, local = clf_kernel_wg_limit(ctx, k, FLAT_WG);
    if ((st = clf_kernel_set_args(ctx, k, "ffn_act", args, 12)) ||
        (st = clf_kernel_launch(ctx, k, "ffn_act", 1, &global, &local)) ||
        (st = clf_gemm(ctx, dm.rows, dm.d, dm.dff, 1.0f, &mh, &mw2, 0.0f, &my)))
        return st;
    return clf_bias_add(ctx, y, &p->b2);
}

clf_status clf_ffn_backward(clf_ctx_t *ctx, clf_tensor *dx, struct clf_ffn_params *grads, const clf_tensor *dy,
                            const clf_tensor *x, clf_tensor *hidden, const struct clf_ffn_params *p,
                            const struct clf_dropout *drop)
{
    const char *op = "ffn_backward";
    struct dims dm, dg;
    struct clf_drop_args da;
    clf_status st;
    if ((st = check(ctx, op, dy, hidden, x, p, &dm)) || (st = check(ctx, op, dx, hidden, x, grads, &dg)) ||
        (st = clf_drop_args_make(ctx, op, drop, &da)))
        return st;
    size_t rows = dm.rows, d = dm.d, dff = dm.dff;
    struct clf_mat mdy = mat(dy, d, false), mhT = mat(hidden, dff, true), mh = mat(hidden, dff, false),
                   mdw2 = mat(&grads->w2, d, false), mw2T = mat(&p->w2, d, true), mxT = mat(x, d, true),
                   mdw1 = mat(&grads->w1, dff, false), mw1T = mat(&p->w1, dff, true), mdx = mat(dx, d, false);
    /* dW2 += hiddenᵀ·dy; db2 += Σ dy */
    if ((st = clf_gemm(ctx, dff, d, rows, 1.0f, &mhT, &mdy, 1.0f, &mdw2)) ||
        (st = clf_bias_backward(ctx, &grads->b2, dy)))
        return st;
    /* dh = dy·W2ᵀ into a temporary, then through dropout and ReLU into hidden */
    cl_mem tmp;
    if ((st = clf_scratch_get(ctx, CLF_SCRATCH_WIDE, rows * dff * sizeof(float), &tmp)))
        return st;
    struct clf_mat mt = {tmp, 0, dff, false, 0};
    cl_kernel k;
    if (!(st = clf_gemm(ctx, rows, dff, d, 1.0f, &mdy, &mw2T, 0.0f, &mt)) &&
        !(st = clf_kernel_get(ctx, "ffn.cl", NULL, "ffn_dact", &k))) {
        cl_uint ho = (cl_uint)hidden->offset, n = (cl_uint)(rows * dff);
        struct clf_arg args[] = {CLF_ARG(hidden->buf), CLF_ARG(ho), CLF_ARG(tmp), CLF_ARG(n), CLF_ARG(da.scale)};
        size_t global = n, local = clf_kernel_wg_limit(ctx, k, FLAT_WG);
        if (!(st = clf_kernel_set_args(ctx, k, "ffn_dact", args, 5)))
            st = clf_kernel_launch(ctx, k, "ffn_dact", 1, &global, &local);
    }
    if (st)
        return st;
    /* dW1 += xᵀ·dh; db1 += Σ dh; dx = dh·W1ᵀ */
    if ((st = clf_gemm(ctx, d, dff, rows, 1.0f, &mxT, &mh, 1.0f, &mdw1)) ||
        (st = clf_bias_backward(ctx, &grads->b1, hidden)))
        return st;
    return clf_gemm(ctx, rows, d, dff, 1.0f, &mh, &mw1T, 0.0f, &mdx);
}
