/* topk.c: launcher of cl/topk.cl: the k largest entries of each row of x
 * (rows, cols), best first, for beam search on the device. */
#include <stdio.h>

#include "ops_internal.h"
#include "runtime/buffers.h"
#include "runtime/ctx.h"
#include "runtime/settings.h"

/* k is a compile-time constant of the kernel (registers per item); these
 * bound the programs built and the local memory a group takes */
#define TOPK_MAX 64
#define TOPK_LOCAL_BYTES 16384

/* On a CPU a group's items run as SIMD lanes (Intel's runtime) or one
 * after another (PoCL), and each item's insertion into its sorted list
 * branches on the data, so lanes diverge: there one item takes a row,
 * unless ROWS_WG was set on purpose (a tuning file, CLF_OPS_CPU_WG: the
 * tests' wide groups). Measured on Intel's CPU runtime (bench translate,
 * small preset, beam 4, busy machine): groups of 16 spent 22 ms a step in
 * topk_rows, one item per row under 1 ms. */
static bool one_item_per_row(clf_ctx_t *ctx)
{
    if (!(ctx->dev.type & CL_DEVICE_TYPE_CPU))
        return false;
    struct clf_params_found f;
    clf_params_in_force(ctx, &f);
    enum clf_param_source s = clf_param_origin(&f, "ROWS_WG")->source;
    return s != CLF_PARAM_FROM_FILE && s != CLF_PARAM_FROM_SETTING;
}

clf_status clf_topk_rows(clf_ctx_t *ctx, clf_tensor *val, clf_tensor *idx, clf_tensor *at, const clf_tensor *x,
                         const clf_tensor *shift, size_t k, int skip, size_t pick)
{
    clf_status st;
    if ((st = clf_ops_check(ctx, "topk_rows", "x", x)) || (st = clf_ops_check(ctx, "topk_rows", "val", val)) ||
        (st = clf_ops_check(ctx, "topk_rows", "at", at)) ||
        (shift && (st = clf_ops_check(ctx, "topk_rows", "shift", shift))))
        return st;
    size_t cols = clf_t_cols(x), rows = clf_tensor_numel(x) / cols;
    if (shift && clf_tensor_numel(shift) != rows)
        return clf_error_set(ctx, CLF_ERR_ARG, "topk_rows: shift of %zu for %zu rows: want one per row",
                             clf_tensor_numel(shift), rows);
    if (k < 1 || k > TOPK_MAX || clf_tensor_numel(val) != rows * k || clf_tensor_numel(at) != rows || !idx ||
        pick >= cols || skip >= (int)cols)
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "topk_rows: k %zu (want 1..%d), val of %zu (want rows %zu · k), at of %zu (want %zu), "
                             "pick %zu and skip %d (want < cols %zu), idx %s",
                             k, TOPK_MAX, clf_tensor_numel(val), rows, clf_tensor_numel(at), rows, pick, skip, cols,
                             idx ? "given" : "missing");
    if ((st = clf_tensor_check_ints(ctx, "topk_rows", "idx", idx, rows * k)))
        return st;
    size_t want = clf_ops_pow2(cols, TOPK_LOCAL_BYTES / (k * 8));
    if (one_item_per_row(ctx))
        want = 1;
    char opts[32];
    snprintf(opts, sizeof opts, "-DK=%zu", k);
    cl_kernel kern;
    size_t wg;
    if ((st = clf_ops_kernel_wg(ctx, "topk.cl", "topk_rows", want, opts, &kern, &wg)))
        return st;
    cl_uint vo = (cl_uint)val->offset, ao = (cl_uint)at->offset, xo = (cl_uint)x->offset, c = (cl_uint)cols,
            p = (cl_uint)pick;
    cl_int sk = skip, has_shift = shift != NULL;
    cl_mem sbuf = shift ? shift->buf : NULL;
    cl_uint so = shift ? (cl_uint)shift->offset : 0;
    struct clf_arg args[] = {CLF_ARG(val->buf), CLF_ARG(vo), CLF_ARG(idx->buf), CLF_ARG(at->buf), CLF_ARG(ao),
                             CLF_ARG(x->buf),   CLF_ARG(xo), CLF_ARG(c),         CLF_ARG(sk),      CLF_ARG(p),
                             CLF_ARG(sbuf),     CLF_ARG(so), CLF_ARG(has_shift)};
    if ((st = clf_kernel_set_args(ctx, kern, "topk_rows", args, 13)))
        return st;
    size_t global = rows * wg;
    return clf_kernel_launch(ctx, kern, "topk_rows", 1, &global, &wg);
}
