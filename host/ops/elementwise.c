/* elementwise.c: launchers of cl/elementwise.cl: add, bias add (alone or
 * after a GEMM: fused into it on the host backend or a model's weights of
 * another type, gemm.c) and its backward (a
 * two-stage column sum), residual + dropout and its backward,
 * and one column set to a value. All flat over numel; bias works on
 * (rows, cols) with cols = bias's numel. */
#include "base/status.h"
#include "ops_internal.h"
#include "runtime/gemm_internal.h"

#define FLAT_WG 256

/* Launches kname over n work-items (elements, or groups of 32 for the
 * dropout kernels). */
static clf_status launch_flat(clf_ctx_t *ctx, const char *kname, const struct clf_arg *args, int nargs, size_t n)
{
    cl_kernel k;
    clf_status st = clf_kernel_get(ctx, "elementwise.cl", NULL, kname, &k);
    if (st)
        return st;
    if ((st = clf_kernel_set_args(ctx, k, kname, args, nargs)))
        return st;
    size_t local = clf_kernel_wg_limit(ctx, k, FLAT_WG);
    return clf_kernel_launch(ctx, k, kname, 1, &n, &local);
}

static clf_status check_same(clf_ctx_t *ctx, const char *op, const char *ra, const clf_tensor *a, const char *rb,
                             const clf_tensor *b)
{
    if (clf_tensor_numel(a) != clf_tensor_numel(b)) {
        char sa[96], sb[96];
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s %s and %s %s differ in size", op, ra,
                             clf_ops_shape(a, sa, sizeof sa), rb, clf_ops_shape(b, sb, sizeof sb));
    }
    return CLF_OK;
}

clf_status clf_add(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *a, const clf_tensor *b)
{
    const char *op = "add";
    clf_status st;
    if ((st = clf_ops_check(ctx, op, "y", y)) || (st = clf_ops_check(ctx, op, "a", a)) ||
        (st = clf_ops_check(ctx, op, "b", b)) || (st = check_same(ctx, op, "y", y, "a", a)) ||
        (st = check_same(ctx, op, "y", y, "b", b)))
        return st;
    cl_uint yo = (cl_uint)y->offset, ao = (cl_uint)a->offset, bo = (cl_uint)b->offset,
            n = (cl_uint)clf_tensor_numel(y);
    struct clf_arg args[] = {CLF_ARG(y->buf), CLF_ARG(yo), CLF_ARG(a->buf), CLF_ARG(ao),
                             CLF_ARG(b->buf), CLF_ARG(bo), CLF_ARG(n)};
    return launch_flat(ctx, "add", args, 7, n);
}

/* A bias (cols) and the rows of y it runs along (bias_add) or sums
 * (bias_backward): cols divides y's row length. *n is y's elements. */
static clf_status check_bias(clf_ctx_t *ctx, const char *op, const char *bname, const clf_tensor *bias,
                             const char *yname, const clf_tensor *y, size_t *n, size_t *cols)
{
    *n = clf_tensor_numel(y), *cols = clf_tensor_numel(bias);
    if (*n % *cols || clf_t_cols(y) % *cols) {
        char sy[96], sb[96];
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s %s does not match the rows of %s %s", op, bname,
                             clf_ops_shape(bias, sb, sizeof sb), yname, clf_ops_shape(y, sy, sizeof sy));
    }
    return CLF_OK;
}

clf_status clf_bias_add(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *bias)
{
    const char *op = "bias_add";
    clf_status st;
    if ((st = clf_ops_check(ctx, op, "y", y)) || (st = clf_ops_check(ctx, op, "bias", bias)))
        return st;
    size_t n, cols;
    if ((st = check_bias(ctx, op, "bias", bias, "y", y, &n, &cols)))
        return st;
    cl_uint yo = (cl_uint)y->offset, bo = (cl_uint)bias->offset, un = (cl_uint)n, uc = (cl_uint)cols;
    struct clf_arg args[] = {CLF_ARG(y->buf), CLF_ARG(yo), CLF_ARG(bias->buf), CLF_ARG(bo), CLF_ARG(un),
                             CLF_ARG(uc)};
    return launch_flat(ctx, "bias_add", args, 6, n);
}

clf_status clf_gemm_bias(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a, const struct clf_mat *b,
                         const clf_tensor *bias, const struct clf_mat *c)
{
    const char *op = "gemm_bias";
    clf_status st;
    if ((st = clf_ops_check(ctx, op, "bias", bias)))
        return st;
    if (clf_tensor_numel(bias) != n || c->ld != n) {
        char sb[96];
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: bias %s and C's ld %zu for n = %zu: want n of each (C's rows "
                             "contiguous)", op, clf_ops_shape(bias, sb, sizeof sb), c->ld, n);
    }
    if (clf_gemm_fuses_bias(ctx, a, b)) {
        struct clf_mat row = {bias->buf, bias->offset, n, false, 0};
        return clf_gemm_bias_fused(ctx, m, n, k, a, b, &row, c);
    }
    clf_tensor y = {.buf = c->buf, .offset = c->offset, .ndim = 2, .shape = {m, n}};
    if ((st = clf_gemm(ctx, m, n, k, 1.0f, a, b, 0.0f, c)))
        return st;
    return clf_bias_add(ctx, &y, bias);
}

clf_status clf_bias_backward(clf_ctx_t *ctx, clf_tensor *dbias, const clf_tensor *dy)
{
    const char *op = "bias_backward";
    clf_status st;
    if ((st = clf_ops_check(ctx, op, "dbias", dbias)) || (st = clf_ops_check(ctx, op, "dy", dy)))
        return st;
    size_t n, cols;
    if ((st = check_bias(ctx, op, "dbias", dbias, "dy", dy, &n, &cols)))
        return st;
    return clf_ops_colsum(ctx, op, dbias->buf, dbias->offset, dy->buf, dy->offset, n / cols, cols);
}

clf_status clf_residual_forward(clf_ctx_t *ctx, clf_tensor *y, const clf_tensor *x, const clf_tensor *sub,
                                const struct clf_dropout *drop)
{
    const char *op = "residual_forward";
    clf_status st;
    struct clf_drop_args d;
    if ((st = clf_ops_check(ctx, op, "y", y)) || (st = clf_ops_check(ctx, op, "x", x)) ||
        (st = clf_ops_check(ctx, op, "sub", sub)) || (st = check_same(ctx, op, "y", y, "x", x)) ||
        (st = check_same(ctx, op, "y", y, "sub", sub)) || (st = clf_drop_args_make(ctx, op, drop, &d)))
        return st;
    cl_uint yo = (cl_uint)y->offset, xo = (cl_uint)x->offset, so = (cl_uint)sub->offset,
            n = (cl_uint)clf_tensor_numel(y);
    struct clf_arg args[] = {CLF_ARG(y->buf), CLF_ARG(yo), CLF_ARG(x->buf), CLF_ARG(xo), CLF_ARG(sub->buf),
                             CLF_ARG(so),     CLF_ARG(n),  CLF_DROP_ARGS(d)};
    return launch_flat(ctx, "residual", args, 13, (n + 31) / 32);
}

clf_status clf_residual_backward(clf_ctx_t *ctx, clf_tensor *dsub, const clf_tensor *dy,
                                 const struct clf_dropout *drop)
{
    const char *op = "residual_backward";
    clf_status st;
    struct clf_drop_args d;
    if ((st = clf_ops_check(ctx, op, "dsub", dsub)) || (st = clf_ops_check(ctx, op, "dy", dy)) ||
        (st = check_same(ctx, op, "dsub", dsub, "dy", dy)) || (st = clf_drop_args_make(ctx, op, drop, &d)))
        return st;
    cl_uint yo = (cl_uint)dsub->offset, xo = (cl_uint)dy->offset, n = (cl_uint)clf_tensor_numel(dy);
    struct clf_arg args[] = {CLF_ARG(dsub->buf), CLF_ARG(yo), CLF_ARG(dy->buf), CLF_ARG(xo), CLF_ARG(n),
                             CLF_DROP_ARGS(d)};
    return launch_flat(ctx, "dropout", args, 11, (n + 31) / 32);
}

clf_status clf_column_fill(clf_ctx_t *ctx, clf_tensor *x, size_t col, float value)
{
    const char *op = "column_fill";
    clf_status st;
    if ((st = clf_ops_check(ctx, op, "x", x)))
        return st;
    size_t cols = clf_t_cols(x), rows = clf_tensor_numel(x) / cols;
    if (col >= cols) {
        char sx[96];
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: column %zu of x %s, which has %zu", op, col,
                             clf_ops_shape(x, sx, sizeof sx), cols);
    }
    cl_uint xo = (cl_uint)x->offset, ur = (cl_uint)rows, uc = (cl_uint)cols, ucol = (cl_uint)col;
    struct clf_arg args[] = {CLF_ARG(x->buf), CLF_ARG(xo), CLF_ARG(ur), CLF_ARG(uc), CLF_ARG(ucol), CLF_ARG(value)};
    return launch_flat(ctx, "column_fill", args, 6, rows);
}
