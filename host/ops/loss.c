/* loss.c: the output projection and label-smoothed cross-entropy: logits
 * (N, V) = h (N, d)·Eᵀ (+ bias) through clf_gemm, then cl/loss.cl turns
 * them in place into dlogits while summing the loss, then dh = dlogits·E,
 * dE += dlogitsᵀ·h through clf_gemm and dbias += Σ_rows dlogits. No second
 * copy of the logits. loss_rows runs one group of wr items per row: wr 1
 * (ROWS_WG 1, PoCL's CPU device) compiles its one-item float8 shape, wider
 * its tree shape. */
#include "base/status.h"
#include "ops_internal.h"
#include "runtime/buffers.h"
#include "runtime/scratch.h"

#define ROW_WG_CAP 256

clf_status clf_loss_forward_backward(clf_ctx_t *ctx, clf_tensor *loss, clf_tensor *dh, clf_tensor *dtable,
                                     clf_tensor *logits, const clf_tensor *h, const clf_tensor *table,
                                     const clf_tensor *targets, const struct clf_loss_desc *desc)
{
    const char *op = "loss_forward_backward";
    clf_status st;
    if ((st = clf_ops_check(ctx, op, "loss", loss)) || (st = clf_ops_check(ctx, op, "logits", logits)) ||
        (st = clf_ops_check(ctx, op, "h", h)) || (st = clf_ops_check(ctx, op, "table", table)) ||
        (dh && (st = clf_ops_check(ctx, op, "dh", dh))) || (dtable && (st = clf_ops_check(ctx, op, "dtable", dtable))))
        return st;
    if (!desc || !targets)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: no descriptor or no targets", op);
    if ((desc->bias && (st = clf_ops_check(ctx, op, "bias", desc->bias))) ||
        (desc->dbias && (st = clf_ops_check(ctx, op, "dbias", desc->dbias))))
        return st;
    if ((st = clf_tensor_check_ints(ctx, op, "targets", targets, clf_tensor_numel(h) / clf_t_cols(h))))
        return st;
    if (!(desc->smoothing >= 0.0f && desc->smoothing <= 1.0f))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: smoothing %g, want 0..1", op, (double)desc->smoothing);
    size_t d = clf_t_cols(h), N = clf_tensor_numel(h) / d, V = clf_tensor_numel(table) / d;
    char sl[96], sh[96], st_[96], sdh[96], sdt[96], sg[96];
    if (clf_t_cols(table) != d || clf_tensor_numel(logits) != N * V || clf_tensor_numel(loss) != 2 ||
        (dh && clf_tensor_numel(dh) != N * d) || (dtable && clf_tensor_numel(dtable) != V * d))
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: shapes do not agree: h %s, table %s, logits %s, loss %s, dh %s, dtable %s "
                             "(want h, dh (N, d), table, dtable (V, d), logits (N, V), loss (2))",
                             op, clf_ops_shape(h, sh, 96), clf_ops_shape(table, st_, 96),
                             clf_ops_shape(logits, sg, 96), clf_ops_shape(loss, sl, 96), clf_ops_shape(dh, sdh, 96),
                             clf_ops_shape(dtable, sdt, 96));
    if ((desc->bias && clf_tensor_numel(desc->bias) != V) || (desc->dbias && clf_tensor_numel(desc->dbias) != V))
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: bias %s, dbias %s, want (V = %zu)", op,
                             clf_ops_shape(desc->bias, sdh, 96), clf_ops_shape(desc->dbias, sdt, 96), V);
    if (desc->dbias && !desc->bias)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: dbias without a bias", op);
    struct clf_mat mh = {h->buf, h->offset, d, false, 0}, mE = {table->buf, table->offset, d, false, 0},
                   mET = {table->buf, table->offset, d, true, 0}, ml = {logits->buf, logits->offset, V, false, 0},
                   mlT = {logits->buf, logits->offset, V, true, 0};
    if ((st = clf_gemm(ctx, N, V, d, 1.0f, &mh, &mET, 0.0f, &ml)) ||
        (desc->bias && (st = clf_bias_add(ctx, logits, desc->bias))))
        return st;
    cl_kernel kr, ks;
    size_t wr, ws;
    if ((st = clf_ops_kernel_wg(ctx, "loss.cl", "loss_rows", clf_ops_pow2(V, ROW_WG_CAP), NULL, &kr, &wr)) ||
        (st = clf_ops_kernel_wg(ctx, "loss.cl", "loss_sum", clf_ops_pow2(N, ROW_WG_CAP), NULL, &ks, &ws)))
        return st;
    cl_mem part;
    if ((st = clf_scratch_get(ctx, CLF_SCRATCH_PART, 2 * N * sizeof(float), &part)))
        return st;
    cl_uint lo = (cl_uint)logits->offset, uV = (cl_uint)V, oo = (cl_uint)loss->offset, uN = (cl_uint)N;
    cl_int pad = desc->pad_id, grad = dh || dtable || desc->dbias;
    float eps = desc->smoothing, gs = desc->grad_scale;
    struct clf_arg ar[] = {CLF_ARG(logits->buf), CLF_ARG(lo),  CLF_ARG(part), CLF_ARG(targets->buf), CLF_ARG(uV),
                           CLF_ARG(pad),         CLF_ARG(eps), CLF_ARG(gs),   CLF_ARG(grad)};
    struct clf_arg as[] = {CLF_ARG(loss->buf), CLF_ARG(oo), CLF_ARG(part), CLF_ARG(uN)};
    size_t gr = N * wr;
    if (!(st = clf_kernel_set_args(ctx, kr, "loss_rows", ar, 9)) &&
        !(st = clf_kernel_launch(ctx, kr, "loss_rows", 1, &gr, &wr)) &&
        !(st = clf_kernel_set_args(ctx, ks, "loss_sum", as, 4)))
        st = clf_kernel_launch(ctx, ks, "loss_sum", 1, &ws, &ws);
    if (st)
        return st;
    if (dh) {
        struct clf_mat mdh = {dh->buf, dh->offset, d, false, 0};
        if ((st = clf_gemm(ctx, N, d, V, 1.0f, &ml, &mE, 0.0f, &mdh)))
            return st;
    }
    if (dtable) {
        struct clf_mat mdt = {dtable->buf, dtable->offset, d, false, 0};
        if ((st = clf_gemm(ctx, V, d, N, 1.0f, &mlT, &mh, 1.0f, &mdt)))
            return st;
    }
    if (desc->dbias)
        return clf_bias_backward(ctx, desc->dbias, logits);
    return CLF_OK;
}
