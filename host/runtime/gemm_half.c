/* gemm_half.c: float16 compute's GEMMs, on the device, for devices with
 * cl_khr_fp16 (Intel's CPU runtime, AMD and Intel GPUs; not NVIDIA's
 * OpenCL), against weights converted once to half and kept beside the
 * float32 ones.
 *
 * As gemm_dnnl.c's int8 and bfloat16: the model names its weights buffer
 * (clf_gemm_weights_set, gemm.c), and every clf_gemm / clf_gemm_bias whose
 * B lies in it with alpha 1, beta 0 (the linear layers, the tied output
 * projection) comes here, on either backend: where float32 GEMMs go to the
 * host's BLAS these still run on the device. One call, m×n×k:
 *   B's view (op(B) k×n; stored rows×cols, ld apart) is converted to half
 *   at its first use into a contiguous buffer of its own, kept and found
 *   again by its key (clf_view_key: offset, ld, trans, k, n);
 *   A (m, k) float → A16 (m, k) half (to_half, round to nearest even);
 *   C16 (m, n) = A16 · op(B16) by CLBlast's Hgemm;
 *   C (m, n) float = C16 + bias (from_half_bias, bias optional).
 * Everything is enqueued on the context's queue; nothing waits. */
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "cl_error.h"
#include "ctx.h"
#include "gemm_paths.h"
#include "program.h"
#include "profile.h"
#include "scratch.h"

#define FILE_CL "gemm_half.cl"
#define CONVERT_WG 256

/* One weight view in half. */
struct hview {
    struct clf_view_key key; /* first: clf_view_find */
    cl_mem h;  /* stored rows×cols halves, contiguous (ld = cols) */
};

struct clf_half {
    struct hview *v;
    size_t nv, cap;
};

clf_status clf_gemm_half_supports(const struct clf_device_info *di, char *why, size_t n)
{
    if (clf_device_has_extension(di, "cl_khr_fp16"))
        return CLF_OK;
    snprintf(why, n, "device [%d] '%s' (%s) lacks cl_khr_fp16 (half-precision arithmetic), which float16 runs on",
             di->index, di->device_name, di->platform_name);
    return CLF_ERR_UNSUPPORTED;
}

void clf_gemm_half_free(clf_ctx_t *ctx)
{
    struct clf_half *h = ctx->half;
    if (!h)
        return;
    for (size_t i = 0; i < h->nv; i++)
        clf_buffer_release(h->v[i].h);
    free(h->v);
    free(h);
    ctx->half = NULL;
}

clf_status clf_gemm_half_init(clf_ctx_t *ctx)
{
    clf_gemm_half_free(ctx);
    if (!(ctx->half = calloc(1, sizeof *ctx->half)))
        return clf_error_set(ctx, CLF_ERR_MEMORY, "float16 compute: out of host memory");
    return CLF_OK;
}

/* dst (rows, cols) half = src (rows, cols) float at so, rows ld apart. */
static clf_status to_half(clf_ctx_t *ctx, cl_mem dst, cl_mem src, size_t so, size_t ld, size_t rows, size_t cols)
{
    cl_kernel k;
    clf_status st = clf_kernel_get(ctx, FILE_CL, NULL, "to_half", &k);
    if (st)
        return st;
    const cl_uint o = (cl_uint)so, l = (cl_uint)ld, r = (cl_uint)rows, c = (cl_uint)cols;
    const struct clf_arg args[] = {CLF_ARG(dst), CLF_ARG(src), CLF_ARG(o), CLF_ARG(l), CLF_ARG(r), CLF_ARG(c)};
    if ((st = clf_kernel_set_args(ctx, k, "to_half", args, 6)))
        return st;
    size_t n = rows * cols, local = clf_kernel_wg_limit(ctx, k, CONVERT_WG);
    return clf_kernel_launch(ctx, k, "to_half", 1, &n, &local);
}

static clf_status from_half_bias(clf_ctx_t *ctx, const struct clf_mat *c, cl_mem src, const struct clf_mat *bias,
                                 size_t rows, size_t cols)
{
    cl_kernel k;
    clf_status st = clf_kernel_get(ctx, FILE_CL, NULL, "from_half_bias", &k);
    if (st)
        return st;
    cl_mem bb = bias ? bias->buf : c->buf;  /* unread without a bias */
    const cl_uint o = (cl_uint)c->offset, l = (cl_uint)c->ld, bo = bias ? (cl_uint)bias->offset : 0,
                  has = bias != NULL, r = (cl_uint)rows, n_ = (cl_uint)cols;
    const struct clf_arg args[] = {CLF_ARG(c->buf), CLF_ARG(o),   CLF_ARG(l), CLF_ARG(src), CLF_ARG(bb),
                                   CLF_ARG(bo),     CLF_ARG(has), CLF_ARG(r), CLF_ARG(n_)};
    if ((st = clf_kernel_set_args(ctx, k, "from_half_bias", args, 9)))
        return st;
    size_t n = rows * cols, local = clf_kernel_wg_limit(ctx, k, CONVERT_WG);
    return clf_kernel_launch(ctx, k, "from_half_bias", 1, &n, &local);
}

/* b's view in half: found, or converted now and kept. */
static clf_status view_of(clf_ctx_t *ctx, const struct clf_mat *b, size_t k, size_t n, const struct hview **out)
{
    struct clf_half *h = ctx->half;
    const struct clf_view_key key = clf_view_key_of(b, k, n);
    if ((*out = clf_view_find(h->v, h->nv, sizeof *h->v, key)))
        return CLF_OK;
    struct hview *q = clf_view_room(h->v, h->nv, &h->cap, sizeof *q);
    if (!q)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "float16 GEMM: out of host memory");
    h->v = q;
    const struct clf_mat_extent e = clf_mat_extent(b, k, n, 1);
    struct hview v = {.key = key};
    cl_int err;
    v.h = clf_buffer_create(ctx, CL_MEM_READ_WRITE, e.rows * e.cols * sizeof(cl_half), &err);
    if (err != CL_SUCCESS)
        return clf_error_cl(ctx, err, "clCreateBuffer (float16 weights)", __FILE__, __LINE__);
    clf_status st = to_half(ctx, v.h, b->buf, b->offset, b->ld, e.rows, e.cols);
    if (st) {
        clf_buffer_release(v.h);
        return st;
    }
    h->v[h->nv] = v;
    *out = &h->v[h->nv++];
    return CLF_OK;
}

static const cl_half HALF_ONE = 0x3c00, HALF_ZERO = 0;

clf_status clf_gemm_half(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                         const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c)
{
    const struct hview *v = NULL;
    cl_mem a16, c16;
    clf_status st;
    if ((st = view_of(ctx, b, k, n, &v)) ||
        (st = clf_scratch_get(ctx, CLF_SCRATCH_HALF_A, m * k * sizeof(cl_half), &a16)) ||
        (st = clf_scratch_get(ctx, CLF_SCRATCH_HALF_C, m * n * sizeof(cl_half), &c16)))
        return st;
    double t0 = clf_profile_begin(ctx);
    if ((st = to_half(ctx, a16, a->buf, a->offset, a->ld, m, k)))  /* A untransposed: packed_takes */
        return st;
    const CLBlastTranspose tb = b->trans ? CLBlastTransposeYes : CLBlastTransposeNo;
    const size_t ldb = b->trans ? k : n;
    size_t temp_bytes = 0;
    cl_mem temp = NULL;
    clf_blast_lock();
    CLBlastStatusCode s = CLBlastHGemmTempBufferSize(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, m, n, k, 0, k,
                                                     0, ldb, 0, n, &ctx->queue, &temp_bytes);
    clf_blast_unlock();
    if (s == CLBlastSuccess && temp_bytes > 0 && (st = clf_scratch_get(ctx, CLF_SCRATCH_GEMM, temp_bytes, &temp)))
        return st;
    clf_blast_lock();
    s = CLBlastHgemmWithTempBuffer(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, m, n, k, HALF_ONE, a16, 0, k,
                                   v->h, 0, ldb, HALF_ZERO, c16, 0, n, &ctx->queue, NULL, temp);
    clf_blast_unlock();
    if ((st = clf_blast_status(ctx, s, "float16 gemm", m, n, k, 1)) ||
        (st = from_half_bias(ctx, c, c16, bias, m, n)))
        return st;
    clf_profile_end(ctx, bias ? "gemm + bias (CLBlast float16)" : "gemm (CLBlast float16)", t0);
    return CLF_OK;
}
