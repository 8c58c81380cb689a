/* softmax.c: launchers of cl/softmax.cl: softmax (with optional per-row
 * valid lengths), its backward, and log-softmax (or its log-sum-exp
 * alone), over the last dimension of
 * tensors seen as (rows, cols). One work-group per row. */
#include "base/status.h"
#include "ops_internal.h"
#include "runtime/buffers.h"

#define ROW_WG_CAP 256

static clf_status check_pair(clf_ctx_t *ctx, const char *op, const char *ra, const clf_tensor *a, const char *rb,
                             const clf_tensor *b)
{
    clf_status st;
    if ((st = clf_ops_check(ctx, op, ra, a)) || (st = clf_ops_check(ctx, op, rb, b)))
        return st;
    if (clf_tensor_numel(a) != clf_tensor_numel(b) || clf_t_cols(a) != clf_t_cols(b)) {
        char sa[96], sb[96];
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s %s and %s %s differ in shape", op, ra,
                             clf_ops_shape(a, sa, sizeof sa), rb, clf_ops_shape(b, sb, sizeof sb));
    }
    return CLF_OK;
}

static clf_status launch_rows(clf_ctx_t *ctx, const char *kname, const struct clf_arg *args, int nargs,
                              size_t rows, size_t cols)
{
    cl_kernel k;
    size_t wg;
    clf_status st = clf_ops_kernel_wg(ctx, "softmax.cl", kname, clf_ops_pow2(cols, ROW_WG_CAP), NULL, &k, &wg);
    if (st || (st = clf_kernel_set_args(ctx, k, kname, args, nargs)))
        return st;
    size_t global = rows * wg;
    return clf_kernel_launch(ctx, k, kname, 1, &global, &wg);
}

clf_status clf_softmax_forward(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *x, const clf_tensor *valid)
{
    clf_status st = check_pair(ctx, "softmax_forward", "y", y, "x", x);
    if (st)
        return st;
    size_t cols = clf_t_cols(x), rows = clf_tensor_numel(x) / cols;
    if (valid && (st = clf_tensor_check_ints(ctx, "softmax_forward", "valid", valid, rows)))
        return st;
    cl_mem vbuf = valid ? valid->buf : NULL;
    cl_uint yo = (cl_uint)y->offset, xo = (cl_uint)x->offset, c = (cl_uint)cols;
    cl_int has = valid != NULL;
    struct clf_arg args[] = {CLF_ARG(y->buf), CLF_ARG(yo), CLF_ARG(x->buf), CLF_ARG(xo),
                             CLF_ARG(c),      CLF_ARG(vbuf), CLF_ARG(has)};
    return launch_rows(ctx, "softmax_fwd", args, 7, rows, cols);
}

clf_status clf_softmax_backward(clf_ctx_t *ctx, clf_tensor *dx, const clf_tensor *y, const clf_tensor *dy)
{
    clf_status st;
    if ((st = check_pair(ctx, "softmax_backward", "dx", dx, "y", y)) ||
        (st = check_pair(ctx, "softmax_backward", "dx", dx, "dy", dy)))
        return st;
    size_t cols = clf_t_cols(y), rows = clf_tensor_numel(y) / cols;
    cl_uint dxo = (cl_uint)dx->offset, yo = (cl_uint)y->offset, dyo = (cl_uint)dy->offset, c = (cl_uint)cols;
    struct clf_arg args[] = {CLF_ARG(dx->buf), CLF_ARG(dxo), CLF_ARG(y->buf), CLF_ARG(yo),
                             CLF_ARG(dy->buf), CLF_ARG(dyo), CLF_ARG(c)};
    return launch_rows(ctx, "softmax_bwd", args, 7, rows, cols);
}

clf_status clf_logsoftmax_forward(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *x)
{
    clf_status st = check_pair(ctx, "logsoftmax_forward", "y", y, "x", x);
    if (st)
        return st;
    size_t cols = clf_t_cols(x), rows = clf_tensor_numel(x) / cols;
    cl_uint yo = (cl_uint)y->offset, xo = (cl_uint)x->offset, c = (cl_uint)cols;
    struct clf_arg args[] = {CLF_ARG(y->buf), CLF_ARG(yo), CLF_ARG(x->buf), CLF_ARG(xo), CLF_ARG(c)};
    return launch_rows(ctx, "logsoftmax_fwd", args, 5, rows, cols);
}

clf_status clf_lse_rows(clf_ctx_t *ctx, clf_tensor *lse, const clf_tensor *x)
{
    clf_status st;
    if ((st = clf_ops_check(ctx, "lse_rows", "x", x)) || (st = clf_ops_check(ctx, "lse_rows", "lse", lse)))
        return st;
    size_t cols = clf_t_cols(x), rows = clf_tensor_numel(x) / cols;
    if (clf_tensor_numel(lse) != rows) {
        char sx[96], sl[96];
        return clf_error_set(ctx, CLF_ERR_ARG, "lse_rows: lse %s for x %s: want one per row",
                             clf_ops_shape(lse, sl, sizeof sl), clf_ops_shape(x, sx, sizeof sx));
    }
    cl_uint lo = (cl_uint)lse->offset, xo = (cl_uint)x->offset, c = (cl_uint)cols;
    struct clf_arg args[] = {CLF_ARG(lse->buf), CLF_ARG(lo), CLF_ARG(x->buf), CLF_ARG(xo), CLF_ARG(c)};
    return launch_rows(ctx, "lse_rows", args, 5, rows, cols);
}
