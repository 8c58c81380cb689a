/* ffn.c: the position-wise feed-forward network, x (rows, d) → y (rows, d)
 * through hidden (rows, dff): two clf_gemm products around the fused
 * bias + activation + dropout kernel of cl/ffn.cl; backward through the
 * same GEMMs (transposed operands) and two-stage bias sums. ReLU runs in
 * place in hidden; SiLU and GELU keep hidden = x·W1 for their backward
 * and put the activation in the WIDE scratch (the backward recomputes it
 * there for dW2 before dy·W2ᵀ takes the slot). */
#include <stdio.h>

#include "base/status.h"
#include "ops_internal.h"
#include "runtime/gemm_internal.h"
#include "runtime/scratch.h"

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

static clf_status act_options(clf_ctx_t *ctx, const char *op, enum clf_activation act, char *opts, size_t len)
{
    if (act != CLF_ACT_RELU && act != CLF_ACT_SILU && act != CLF_ACT_GELU)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: activation %d, want relu (%d), silu (%d) or gelu (%d)", op,
                             (int)act, CLF_ACT_RELU, CLF_ACT_SILU, CLF_ACT_GELU);
    snprintf(opts, len, "-DACT=%d", (int)act);
    return CLF_OK;
}

/* Kernel `name` of ffn.cl built for activation act, on nargs args, one
 * work-item per per_item of the n elements (ffn_act 32, ffn_dact_z 4). */
static clf_status launch_quads(clf_ctx_t *ctx, const char *op, enum clf_activation act, const char *name,
                               const struct clf_arg *args, int nargs, cl_uint n, cl_uint per_item)
{
    char opts[32];
    cl_kernel k;
    clf_status st;
    if ((st = act_options(ctx, op, act, opts, sizeof opts)) ||
        (st = clf_kernel_get(ctx, "ffn.cl", opts, name, &k)))
        return st;
    size_t global = (n + per_item - 1) / per_item, local = clf_kernel_wg_limit(ctx, k, FLAT_WG);
    if ((st = clf_kernel_set_args(ctx, k, name, args, nargs)))
        return st;
    return clf_kernel_launch(ctx, k, name, 1, &global, &local);
}

/* a (buffer a at element ao, rows·dff) = dropout(act(hidden + b1)) */
static clf_status act_launch(clf_ctx_t *ctx, const char *op, const struct clf_ffn_params *p, cl_mem a, size_t ao,
                             const clf_tensor *hidden, const struct dims *dm, const struct clf_drop_args *da)
{
    cl_uint uao = (cl_uint)ao, ho = (cl_uint)hidden->offset, bo = (cl_uint)p->b1.offset,
            n = (cl_uint)(dm->rows * dm->dff), dff = (cl_uint)dm->dff;
    struct clf_arg args[] = {CLF_ARG(a),     CLF_ARG(uao), CLF_ARG(hidden->buf), CLF_ARG(ho),
                             CLF_ARG(p->b1.buf), CLF_ARG(bo), CLF_ARG(n), CLF_ARG(dff), CLF_DROP_ARGS(*da)};
    return launch_quads(ctx, op, p->act, "ffn_act", args, 14, n, 32);
}

/* hidden = dh·dropout'·act'(hidden + b1) (SiLU, GELU; dh in tmp) */
static clf_status dact_z_launch(clf_ctx_t *ctx, const char *op, const struct clf_ffn_params *p, clf_tensor *hidden,
                                cl_mem tmp, const struct dims *dm, const struct clf_drop_args *da)
{
    cl_uint ho = (cl_uint)hidden->offset, bo = (cl_uint)p->b1.offset, n = (cl_uint)(dm->rows * dm->dff),
            dff = (cl_uint)dm->dff;
    struct clf_arg args[] = {CLF_ARG(hidden->buf), CLF_ARG(ho), CLF_ARG(tmp), CLF_ARG(p->b1.buf), CLF_ARG(bo),
                             CLF_ARG(n),           CLF_ARG(dff), CLF_DROP_ARGS(*da)};
    return launch_quads(ctx, op, p->act, "ffn_dact_z", args, 13, n, 4);
}

clf_status clf_ffn_forward(clf_ctx_t *ctx, clf_tensor *y, clf_tensor *hidden, const clf_tensor *x,
                           const struct clf_ffn_params *p, const struct clf_dropout *drop)
{
    const char *op = "ffn_forward";
    struct dims dm = {0}; /* GCC 14 cannot see that check() sets it before any use */
    struct clf_drop_args da;
    clf_status st;
    if ((st = check(ctx, op, y, hidden, x, p, &dm)) || (st = clf_drop_args_make(ctx, op, drop, &da)))
        return st;
    struct clf_mat mx = mat(x, dm.d, false), mw1 = mat(&p->w1, dm.dff, false), mh = mat(hidden, dm.dff, false),
                   mw2 = mat(&p->w2, dm.d, false), my = mat(y, dm.d, false);
    if (p->act == CLF_ACT_RELU && (!drop || drop->p == 0.0f) && clf_gemm_fuses_relu(ctx, &mx, &mw1)) {
        /* no dropout (decoding): the bias and ReLU leave oneDNN's matmul */
        struct clf_mat mb1 = mat(&p->b1, dm.dff, false);
        if ((st = clf_gemm_bias_relu_fused(ctx, dm.rows, dm.dff, dm.d, &mx, &mw1, &mb1, &mh)))
            return st;
        return clf_gemm_bias(ctx, dm.rows, dm.d, dm.dff, &mh, &mw2, &p->b2, &my);
    }
    if ((st = clf_gemm(ctx, dm.rows, dm.dff, dm.d, 1.0f, &mx, &mw1, 0.0f, &mh)))
        return st;
    struct clf_mat ma = mh;
    if (p->act != CLF_ACT_RELU) {
        cl_mem a;
        if ((st = clf_scratch_get(ctx, CLF_SCRATCH_WIDE, dm.rows * dm.dff * sizeof(float), &a)))
            return st;
        ma = (struct clf_mat){a, 0, dm.dff, false, 0};
    }
    if ((st = act_launch(ctx, op, p, ma.buf, ma.offset, hidden, &dm, &da)))
        return st;
    return clf_gemm_bias(ctx, dm.rows, dm.d, dm.dff, &ma, &mw2, &p->b2, &my);
}

clf_status clf_ffn_backward(clf_ctx_t *ctx, clf_tensor *dx, struct clf_ffn_params *grads, const clf_tensor *dy,
                            const clf_tensor *x, clf_tensor *hidden, const struct clf_ffn_params *p,
                            const struct clf_dropout *drop)
{
    const char *op = "ffn_backward";
    struct dims dm = {0}, dg = {0}; /* as in clf_ffn_forward */
    struct clf_drop_args da;
    clf_status st;
    if ((st = check(ctx, op, dy, hidden, x, p, &dm)) || (st = check(ctx, op, dx, hidden, x, grads, &dg)) ||
        (st = clf_drop_args_make(ctx, op, drop, &da)))
        return st;
    size_t rows = dm.rows, d = dm.d, dff = dm.dff;
    struct clf_mat mdy = mat(dy, d, false), mhT = mat(hidden, dff, true), mh = mat(hidden, dff, false),
                   mdw2 = mat(&grads->w2, d, false), mw2T = mat(&p->w2, d, true), mxT = mat(x, d, true),
                   mdw1 = mat(&grads->w1, dff, false), mw1T = mat(&p->w1, dff, true), mdx = mat(dx, d, false);
    cl_mem tmp;
    if ((st = clf_scratch_get(ctx, CLF_SCRATCH_WIDE, rows * dff * sizeof(float), &tmp)))
        return st;
    struct clf_mat mt = {tmp, 0, dff, false, 0}, maT = mhT;
    /* SiLU, GELU: the activation again (hidden keeps x·W1), into tmp */
    if (p->act != CLF_ACT_RELU) {
        if ((st = act_launch(ctx, op, p, tmp, 0, hidden, &dm, &da)))
            return st;
        maT = (struct clf_mat){tmp, 0, dff, true, 0};
    }
    /* dW2 += aᵀ·dy; db2 += Σ dy */
    if ((st = clf_gemm(ctx, dff, d, rows, 1.0f, &maT, &mdy, 1.0f, &mdw2)) ||
        (st = clf_bias_backward(ctx, &grads->b2, dy)))
        return st;
    /* dh = dy·W2ᵀ into tmp, then through dropout and the activation into hidden */
    if ((st = clf_gemm(ctx, rows, dff, d, 1.0f, &mdy, &mw2T, 0.0f, &mt)))
        return st;
    if (p->act != CLF_ACT_RELU) {
        if ((st = dact_z_launch(ctx, op, p, hidden, tmp, &dm, &da)))
            return st;
    } else {
        cl_kernel k;
        if ((st = clf_kernel_get(ctx, "ffn.cl", "-DACT=0", "ffn_dact", &k)))
            return st;
        cl_uint ho = (cl_uint)hidden->offset, n = (cl_uint)(rows * dff);
        struct clf_arg args[] = {CLF_ARG(hidden->buf), CLF_ARG(ho), CLF_ARG(tmp), CLF_ARG(n), CLF_ARG(da.scale)};
        size_t global = n, local = clf_kernel_wg_limit(ctx, k, FLAT_WG);
        if ((st = clf_kernel_set_args(ctx, k, "ffn_dact", args, 5)) ||
            (st = clf_kernel_launch(ctx, k, "ffn_dact", 1, &global, &local)))
            return st;
    }
    /* dW1 += xᵀ·dh; db1 += Σ dh; dx = dh·W1ᵀ */
    if ((st = clf_gemm(ctx, d, dff, rows, 1.0f, &mxT, &mh, 1.0f, &mdw1)) ||
        (st = clf_bias_backward(ctx, &grads->b1, hidden)))
        return st;
    return clf_gemm(ctx, rows, d, dff, 1.0f, &mh, &mw1T, 0.0f, &mdx);
}
