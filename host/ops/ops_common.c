/* ops_common.c: helpers shared by the op launchers (see ops_internal.h):
 * tensor checks, dropout arguments, row work-group sizes and the
 * two-stage column sum. Temporaries come from the context's scratch arena
 * (clf_scratch_get, host/runtime/scratch.c). */
#include <stdio.h>
#include <stdlib.h>

#include "ops_internal.h"
#include "runtime/ctx.h"
#include "runtime/scratch.h"

const char *clf_ops_shape(const clf_tensor *t, char *buf, size_t len)
{
    if (!t || t->ndim < 1 || t->ndim > CLF_MAX_DIMS) {
        snprintf(buf, len, "(none)");
        return buf;
    }
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < t->ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%zu", i ? ", " : "(", t->shape[i]);
    if (n < len)
        snprintf(buf + n, len - n, ")");
    return buf;
}

clf_status clf_ops_check(clf_ctx_t *ctx, const char *op, const char *role, const clf_tensor *t)
{
    if (!t || !t->buf || t->ndim < 1 || t->ndim > CLF_MAX_DIMS)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s is not a tensor", op, role);
    if (t->dtype != CLF_F32)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s is not an f32 tensor", op, role);
    size_t n = clf_tensor_numel(t);
    if (n == 0 || t->offset + n > 0xffffffffu) {
        char s[96];
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s %s at offset %zu: empty or past 32-bit indexing", op, role,
                             clf_ops_shape(t, s, sizeof s), t->offset);
    }
    return CLF_OK;
}

clf_status clf_drop_args_make(clf_ctx_t *ctx, const char *op, const struct clf_dropout *d, struct clf_drop_args *out)
{
    struct clf_drop_args a = {0.0f, 1.0f, 0, 0, 0, 0};
    if (d && d->p != 0.0f) {
        if (!(d->p > 0.0f && d->p < 1.0f))
            return clf_error_set(ctx, CLF_ERR_ARG, "%s: dropout p = %g, want 0 <= p < 1", op, (double)d->p);
        a.p = d->p;
        a.scale = 1.0f / (1.0f - d->p);
        a.seed_lo = (cl_uint)(d->seed & 0xffffffffu);
        a.seed_hi = (cl_uint)(d->seed >> 32);
        a.stream = d->stream;
        a.step = d->step;
    }
    *out = a;
    return CLF_OK;
}

size_t clf_ops_pow2(size_t n, size_t cap)
{
    size_t w = 32 < cap ? 32 : cap;
    while (w < n && w < cap)
        w *= 2;
    return w;
}

clf_status clf_ops_kernel_wg(clf_ctx_t *ctx, const char *file, const char *kname, size_t want, const char *extra,
                             cl_kernel *k, size_t *wg)
{
    /* ROWS_WG: 1 on PoCL's CPU device and 16 on other CPUs, whose
     * work-items loop between barriers, none on GPUs
     * (host/runtime/tuning_table.c); the tuning file's, or on CPUs
     * CLF_OPS_CPU_WG's (tests run the wide groups of GPUs with it) */
    struct clf_params_found f;
    clf_params_in_force(ctx, &f);
    size_t cap = f.values.kernels.rows_wg;
    if (cap && want > cap)
        want = cap;
    size_t w = 1;
    while (w * 2 <= want && w * 2 <= ctx->max_wg && w * 2 * sizeof(float) * 4 <= ctx->max_local_mem)
        w *= 2;
    for (;;) {
        char opts[512];
        snprintf(opts, sizeof opts, "-DWG=%zu %s", w, extra ? extra : "");
        clf_status st = clf_kernel_get(ctx, file, opts, kname, k);
        if (st)
            return st;
        size_t lim = clf_kernel_wg_limit(ctx, *k, w);
        if (lim == w) {
            *wg = w;
            return CLF_OK;
        }
        w = lim;  /* the compiled kernel allows less: rebuild for that size */
    }
}

/* At most this many row chunks: the second stage reads them all per column. */
#define COLSUM_MAX_CHUNKS 64
#define COLSUM_MIN_CHUNK 16

size_t clf_ops_colsum_chunk(size_t rows, size_t *nchunks)
{
    size_t chunk = (rows + COLSUM_MAX_CHUNKS - 1) / COLSUM_MAX_CHUNKS;
    if (chunk < COLSUM_MIN_CHUNK)
        chunk = COLSUM_MIN_CHUNK;
    *nchunks = (rows + chunk - 1) / chunk;
    return chunk;
}

clf_status clf_ops_colsum_final(clf_ctx_t *ctx, cl_mem out, size_t out_off, cl_mem part, size_t cols,
                                size_t nchunks)
{
    cl_kernel kf;
    clf_status st = clf_kernel_get(ctx, "elementwise.cl", NULL, "colsum_final", &kf);
    if (st)
        return st;
    cl_uint oo = (cl_uint)out_off, c = (cl_uint)cols, nc = (cl_uint)nchunks;
    size_t gf[1] = {cols}, lf[1] = {clf_kernel_wg_limit(ctx, kf, 64)};
    struct clf_arg af[] = {CLF_ARG(out), CLF_ARG(oo), CLF_ARG(part), CLF_ARG(c), CLF_ARG(nc)};
    if ((st = clf_kernel_set_args(ctx, kf, "colsum_final", af, 5)))
        return st;
    return clf_kernel_launch(ctx, kf, "colsum_final", 1, gf, lf);
}

clf_status clf_ops_colsum(clf_ctx_t *ctx, const char *op, cl_mem out, size_t out_off, cl_mem in, size_t in_off,
                          size_t rows, size_t cols)
{
    cl_kernel kp;
    clf_status st;
    const bool by4 = cols % 4 == 0;  /* four columns per work-item, the same sums */
    const char *name = by4 ? "colsum_part4" : "colsum_part";
    if ((st = clf_kernel_get(ctx, "elementwise.cl", NULL, name, &kp)))
        return st;
    size_t nchunks, chunk = clf_ops_colsum_chunk(rows, &nchunks);
    cl_mem part;
    (void)op;
    if ((st = clf_scratch_get(ctx, CLF_SCRATCH_PART, nchunks * cols * sizeof(float), &part)))
        return st;
    cl_uint io = (cl_uint)in_off, r = (cl_uint)rows, c = (cl_uint)cols, ch = (cl_uint)chunk;
    size_t gp[2] = {by4 ? cols / 4 : cols, nchunks}, lp[2] = {clf_kernel_wg_limit(ctx, kp, 64), 1};
    struct clf_arg ap[] = {CLF_ARG(part), CLF_ARG(in), CLF_ARG(io), CLF_ARG(r), CLF_ARG(c), CLF_ARG(ch)};
    if (!(st = clf_kernel_set_args(ctx, kp, name, ap, 6)) && !(st = clf_kernel_launch(ctx, kp, name, 2, gp, lp)))
        st = clf_ops_colsum_final(ctx, out, out_off, part, cols, nchunks);
    return st;
}
