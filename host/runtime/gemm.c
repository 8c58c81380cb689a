/* gemm.c: row-major SGEMM through CLBlast, single and strided-batched, with
 * CLBlast's status codes mapped to clf_status and named in the message.
 * Single GEMMs hand CLBlast the context's scratch buffer for its padded
 * and transposed copies (CLBlast would otherwise create and free one per
 * call); CLBlast 1.5 has no such variant of the batched GEMM. */
#include <clblast_c.h>

#include "internal.h"

static const char *blast_name(CLBlastStatusCode s)
{
    switch (s) {
#define E(x) case x: return #x
    E(CLBlastNotImplemented); E(CLBlastInvalidMatrixA); E(CLBlastInvalidMatrixB);
    E(CLBlastInvalidMatrixC); E(CLBlastInvalidVectorX); E(CLBlastInvalidVectorY);
    E(CLBlastInvalidDimension); E(CLBlastInvalidLeadDimA); E(CLBlastInvalidLeadDimB);
    E(CLBlastInvalidLeadDimC); E(CLBlastInvalidIncrementX); E(CLBlastInvalidIncrementY);
    E(CLBlastInsufficientMemoryA); E(CLBlastInsufficientMemoryB); E(CLBlastInsufficientMemoryC);
    E(CLBlastInsufficientMemoryX); E(CLBlastInsufficientMemoryY); E(CLBlastInsufficientMemoryTemp);
    E(CLBlastInvalidBatchCount); E(CLBlastInvalidOverrideKernel); E(CLBlastMissingOverrideParameter);
    E(CLBlastInvalidLocalMemUsage); E(CLBlastNoHalfPrecision); E(CLBlastNoDoublePrecision);
    E(CLBlastInvalidVectorScalar); E(CLBlastInsufficientMemoryScalar); E(CLBlastDatabaseError);
    E(CLBlastUnknownError); E(CLBlastUnexpectedError);
#undef E
    default: return clf_cl_error_str((cl_int)s);  /* codes shared with OpenCL */
    }
}

static clf_status blast_status(clf_ctx_t *ctx, CLBlastStatusCode s, const char *what, size_t m,
                               size_t n, size_t k, size_t batch)
{
    if (s == CLBlastSuccess)
        return CLF_OK;
    clf_status st = s <= -1007 && s >= -1024 ? CLF_ERR_ARG
                    : s == CLBlastTempBufferAllocFailure || s == CLBlastOpenCLOutOfHostMemory
                        ? CLF_ERR_MEMORY
                        : CLF_ERR_BLAS;
    return clf_error_set(ctx, st, "%s (m=%zu n=%zu k=%zu batch=%zu) failed in CLBlast: %s (%d)", what, m,
                         n, k, batch, blast_name(s), (int)s);
}

static CLBlastTranspose tr(const struct clf_mat *x)
{
    return x->trans ? CLBlastTransposeYes : CLBlastTransposeNo;
}

clf_status clf_gemm(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha, const struct clf_mat *a,
                    const struct clf_mat *b, float beta, const struct clf_mat *c)
{
    if (m == 0 || n == 0)
        return CLF_OK;
    /* the bytes CLBlast's indirect kernel needs for copies (0: none, or
     * the direct kernel); if CLBlast cannot say, it allocates its own */
    size_t temp_bytes = 0;
    cl_mem temp = NULL;
    CLBlastStatusCode s = CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, tr(a), tr(b), m, n, k, a->offset,
                                                     a->ld, b->offset, b->ld, c->offset, c->ld, &ctx->queue,
                                                     &temp_bytes);
    if (s == CLBlastSuccess && temp_bytes > 0) {
        clf_status st = clf_scratch_get(ctx, CLF_SCRATCH_GEMM, temp_bytes, &temp);
        if (st != CLF_OK)
            return st;
    }
    double t0 = clf_profile_begin(ctx);
    s = CLBlastSgemmWithTempBuffer(CLBlastLayoutRowMajor, tr(a), tr(b), m, n, k, alpha, a->buf, a->offset, a->ld,
                                   b->buf, b->offset, b->ld, beta, c->buf, c->offset, c->ld, &ctx->queue, NULL,
                                   temp);
    /* CLBlast may enqueue several kernels (padding, transposes) and reports
     * only one event: while profiling, time the whole call instead */
    static const char *names[4] = {"gemm NN (CLBlast)", "gemm NT (CLBlast)", "gemm TN (CLBlast)", "gemm TT (CLBlast)"};
    if (s == CLBlastSuccess)
        clf_profile_end(ctx, names[2 * a->trans + b->trans], t0);
    return blast_status(ctx, s, "gemm", m, n, k, 1);
}

clf_status clf_gemm_batched(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha,
                            const struct clf_mat *a, const struct clf_mat *b, float beta,
                            const struct clf_mat *c, size_t batch)
{
    if (m == 0 || n == 0 || batch == 0)
        return CLF_OK;
    if (batch == 1)
        return clf_gemm(ctx, m, n, k, alpha, a, b, beta, c);
    double t0 = clf_profile_begin(ctx);
    CLBlastStatusCode s = CLBlastSgemmStridedBatched(
        CLBlastLayoutRowMajor, tr(a), tr(b), m, n, k, alpha, a->buf, a->offset, a->ld, a->stride, b->buf,
        b->offset, b->ld, b->stride, beta, c->buf, c->offset, c->ld, c->stride, batch, &ctx->queue, NULL);
    if (s == CLBlastSuccess)
        clf_profile_end(ctx, "batched gemm (CLBlast)", t0);
    return blast_status(ctx, s, "batched gemm", m, n, k, batch);
}
