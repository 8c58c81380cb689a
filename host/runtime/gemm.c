/* gemm.c: row-major SGEMM, single and strided-batched: the argument checks
 * both backends share and the dispatch, which calls the paths below it
 * (host BLAS in gemm_host.c, CLBlast here, a model's weights in another
 * type in gemm_dnnl.c and gemm_half.c; what they share is gemm_common.c's,
 * and none of them calls back into this file). Single GEMMs hand CLBlast the
 * context's scratch buffer for its padded and transposed copies (CLBlast
 * would otherwise create and free one per call); CLBlast 1.5 has no such
 * variant of the batched GEMM. */
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "gemm_internal.h"
#include "gemm_paths.h"
#include "profile.h"
#include "scratch.h"
#include "settings.h"

static CLBlastTranspose tr(const struct clf_mat *x)
{
    return x->trans ? CLBlastTransposeYes : CLBlastTransposeNo;
}

/* One operand: a buffer, a leading dimension that covers its stored row,
 * and every float of every matrix inside the buffer. */
static clf_status operand_check(clf_ctx_t *ctx, const char *call, char name, const struct clf_mat *x, size_t r,
                                size_t c, size_t batch)
{
    char low = (char)(name - 'A' + 'a');
    if (!x->buf)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %c has no buffer", call, name);
    struct clf_mat_extent e = clf_mat_extent(x, r, c, batch);
    if (x->ld < e.cols)
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: ld%c = %zu is less than %zu, the row length of %c as stored (%zu×%zu%s)", call, low,
                             x->ld, e.cols, name, e.rows, e.cols, x->trans ? ", transposed" : "");
    size_t bytes = 0;
    cl_int err = clGetMemObjectInfo(x->buf, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    if (err != CL_SUCCESS)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %c's buffer: clGetMemObjectInfo: %s", call, name,
                             clf_cl_error_str(err));
    if (e.end > bytes / sizeof(float))
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "%s: %c runs past its buffer: %zu×%zu%s at offset %zu, ld%c %zu, stride %zu "
                             "needs %zu floats, the buffer holds %zu",
                             call, name, e.rows, e.cols, batch > 1 ? " per matrix" : "", x->offset, low, x->ld,
                             batch > 1 ? x->stride : 0, e.end, bytes / sizeof(float));
    return CLF_OK;
}

/* What both backends refuse, before either runs (CLBlast's own checks stay
 * behind these, for what they cover and these do not). */
static clf_status gemm_check(clf_ctx_t *ctx, const char *what, size_t m, size_t n, size_t k,
                             const struct clf_mat *a, const struct clf_mat *b, const struct clf_mat *c, size_t batch)
{
    char call[128];
    snprintf(call, sizeof call, "%s (m=%zu n=%zu k=%zu batch=%zu)", what, m, n, k, batch);
    if (k == 0)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: k is 0", call);
    struct clf_mat cc = *c;
    cc.trans = false;  /* ignored for C */
    clf_status st;
    if ((st = operand_check(ctx, call, 'A', a, m, k, batch)) || (st = operand_check(ctx, call, 'B', b, k, n, batch)) ||
        (st = operand_check(ctx, call, 'C', &cc, m, n, batch)))
        return st;
    return CLF_OK;
}

/* ------------------------------------------------ a model's weights in another type
 * One buffer per context holds a model's weights with a compute type
 * (clf_gemm_weights_set); GEMMs whose B lies in it with alpha 1, beta 0 go
 * to that type's path: int8 and bfloat16 to oneDNN on the host's memory
 * (gemm_dnnl.c), float16 to the device's half GEMM (gemm_half.c). */

bool clf_gemm_f32_packs(const clf_ctx_t *ctx, char *why, size_t n)
{
    const char *s = clf_setting_get("CLF_GEMM_PACK");
    if (s && (!strcmp(s, "off") || !strcmp(s, "0") || !strcmp(s, "no"))) {
        snprintf(why, n, "CLF_GEMM_PACK=%s", s);
        return false;
    }
    if (!clf_gemm_dnnl_built()) {
        snprintf(why, n, "built without oneDNN");
        return false;
    }
    if (ctx->gemm != CLF_GEMM_HOST || !ctx->host_ptrs) {
        snprintf(why, n, "GEMMs %s", ctx->gemm != CLF_GEMM_HOST ? "on the clblast backend" : "map their operands");
        return false;
    }
    return clf_gemm_dnnl_supports(&ctx->dev, CLF_GEMM_W_F32P, why, n) == CLF_OK;
}

clf_status clf_gemm_weights_supports(const struct clf_device_info *di, enum clf_gemm_weights t, char *why, size_t n)
{
    return t == CLF_GEMM_W_FLOAT32 ? CLF_OK
           : t == CLF_GEMM_W_F16   ? clf_gemm_half_supports(di, why, n)
                                   : clf_gemm_dnnl_supports(di, t, why, n);
}

void clf_gemm_packed_free(clf_ctx_t *ctx)
{
    clf_gemm_dnnl_free(ctx);
    clf_gemm_half_free(ctx);
    ctx->packed_weights = NULL;
    ctx->packed_type = CLF_GEMM_W_FLOAT32;
}

clf_status clf_gemm_weights_set(clf_ctx_t *ctx, cl_mem weights, enum clf_gemm_weights t)
{
    if (ctx->packed_weights && ctx->packed_weights != weights) {  /* another model's */
        const bool theirs_f32 = ctx->packed_type == CLF_GEMM_W_F32P;
        if (t == CLF_GEMM_W_FLOAT32 || (t == CLF_GEMM_W_F32P && !theirs_f32))
            return CLF_OK;  /* not this one's to drop; this model's float32 runs unpacked */
        if (!theirs_f32)
            return clf_error_set(ctx, CLF_ERR_UNSUPPORTED,
                                 "%s compute: this context already runs another model's weights in %s (one int8, "
                                 "bfloat16 or float16 model per context: make a context for each)",
                                 clf_gemm_weights_str(t), clf_gemm_weights_str(ctx->packed_type));
        /* its packed float32 gives way and runs unpacked: the same arithmetic, in OpenBLAS's order */
    }
    clf_gemm_packed_free(ctx);  /* views packed from earlier contents go */
    if (!weights || t == CLF_GEMM_W_FLOAT32)
        return CLF_OK;
    char why[512];
    if (clf_gemm_weights_supports(&ctx->dev, t, why, sizeof why))
        return clf_error_set(ctx, CLF_ERR_UNSUPPORTED, "%s compute: %s", clf_gemm_weights_str(t), why);
    clf_status st = t == CLF_GEMM_W_F16 ? clf_gemm_half_init(ctx) : clf_gemm_dnnl_init(ctx, t);
    if (st == CLF_OK) {
        ctx->packed_weights = weights;
        ctx->packed_type = t;
    }
    return st;
}

/* C = A·op(B) (+ bias) on a view of the weights, arguments checked. */
static clf_status gemm_packed(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                              const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c)
{
    return ctx->packed_type == CLF_GEMM_W_F16 ? clf_gemm_half(ctx, m, n, k, a, b, bias, c)
                                              : clf_gemm_dnnl(ctx, m, n, k, a, b, bias, c, false);
}

/* ------------------------------------------------------------------ GEMMs */

clf_status clf_gemm(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha, const struct clf_mat *a,
                    const struct clf_mat *b, float beta, const struct clf_mat *c)
{
    if (m == 0 || n == 0)
        return CLF_OK;
    clf_status st = gemm_check(ctx, "gemm", m, n, k, a, b, c, 1);
    if (st != CLF_OK)
        return st;
    if (clf_gemm_packed_takes(ctx, a, b, alpha, beta))  /* a model's weights in another type */
        return gemm_packed(ctx, m, n, k, a, b, NULL, c);
    if (ctx->gemm == CLF_GEMM_HOST)
        return clf_gemm_host(ctx, m, n, k, alpha, a, b, beta, c, 1, NULL);
    /* the bytes CLBlast's indirect kernel needs for copies (0: none, or
     * the direct kernel); if CLBlast cannot say, it allocates its own */
    size_t temp_bytes = 0;
    cl_mem temp = NULL;
    clf_blast_lock();
    CLBlastStatusCode s = CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, tr(a), tr(b), m, n, k, a->offset,
                                                     a->ld, b->offset, b->ld, c->offset, c->ld, &ctx->queue,
                                                     &temp_bytes);
    clf_blast_unlock();
    if (s == CLBlastSuccess && temp_bytes > 0 && (st = clf_scratch_get(ctx, CLF_SCRATCH_GEMM, temp_bytes, &temp)))
        return st;
    double t0 = clf_profile_begin(ctx);
    clf_blast_lock();
    s = CLBlastSgemmWithTempBuffer(CLBlastLayoutRowMajor, tr(a), tr(b), m, n, k, alpha, a->buf, a->offset, a->ld,
                                   b->buf, b->offset, b->ld, beta, c->buf, c->offset, c->ld, &ctx->queue, NULL,
                                   temp);
    clf_blast_unlock();
    /* CLBlast may enqueue several kernels (padding, transposes) and reports
     * only one event: while profiling, time the whole call instead */
    static const char *names[4] = {"gemm NN (CLBlast)", "gemm NT (CLBlast)", "gemm TN (CLBlast)", "gemm TT (CLBlast)"};
    if (s == CLBlastSuccess)
        clf_profile_end(ctx, names[2 * a->trans + b->trans], t0);
    return clf_blast_status(ctx, s, "gemm", m, n, k, 1);
}

bool clf_gemm_fuses_bias(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b)
{
    return ctx->gemm == CLF_GEMM_HOST || clf_gemm_packed_takes(ctx, a, b, 1.0f, 0.0f);
}

clf_status clf_gemm_bias_fused(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                               const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c)
{
    if (m == 0 || n == 0)
        return CLF_OK;
    clf_status st = gemm_check(ctx, "gemm + bias", m, n, k, a, b, c, 1);  /* the bias: the caller's check */
    if (st == CLF_OK && clf_gemm_packed_takes(ctx, a, b, 1.0f, 0.0f))
        return gemm_packed(ctx, m, n, k, a, b, bias, c);
    if (st == CLF_OK && ctx->gemm != CLF_GEMM_HOST)
        return clf_error_set(ctx, CLF_ERR_ARG, "gemm + bias: the %s backend adds no bias in its GEMM",
                             clf_gemm_backend_str(ctx->gemm));
    return st ? st : clf_gemm_host(ctx, m, n, k, 1.0f, a, b, 0.0f, c, 1, bias);
}

bool clf_gemm_fuses_relu(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b)
{
    return clf_gemm_packed_takes(ctx, a, b, 1.0f, 0.0f) && ctx->packed_type != CLF_GEMM_W_F16;
}

clf_status clf_gemm_bias_relu_fused(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                                    const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c)
{
    if (m == 0 || n == 0)
        return CLF_OK;
    clf_status st = gemm_check(ctx, "gemm + bias + relu", m, n, k, a, b, c, 1);
    if (st == CLF_OK && !clf_gemm_fuses_relu(ctx, a, b))
        return clf_error_set(ctx, CLF_ERR_ARG, "gemm + bias + relu: only oneDNN's packed weights take the ReLU "
                             "in their GEMM");
    return st ? st : clf_gemm_dnnl(ctx, m, n, k, a, b, bias, c, true);
}

clf_status clf_gemm_batched(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha,
                            const struct clf_mat *a, const struct clf_mat *b, float beta,
                            const struct clf_mat *c, size_t batch)
{
    if (m == 0 || n == 0 || batch == 0)
        return CLF_OK;
    if (batch == 1)
        return clf_gemm(ctx, m, n, k, alpha, a, b, beta, c);
    clf_status st = gemm_check(ctx, "batched gemm", m, n, k, a, b, c, batch);
    if (st != CLF_OK)
        return st;
    if (ctx->gemm == CLF_GEMM_HOST)
        return clf_gemm_host(ctx, m, n, k, alpha, a, b, beta, c, batch, NULL);
    double t0 = clf_profile_begin(ctx);
    clf_blast_lock();
    CLBlastStatusCode s = CLBlastSgemmStridedBatched(
        CLBlastLayoutRowMajor, tr(a), tr(b), m, n, k, alpha, a->buf, a->offset, a->ld, a->stride, b->buf,
        b->offset, b->ld, b->stride, beta, c->buf, c->offset, c->ld, c->stride, batch, &ctx->queue, NULL);
    clf_blast_unlock();
    if (s == CLBlastSuccess)
        clf_profile_end(ctx, "batched gemm (CLBlast)", t0);
    return clf_blast_status(ctx, s, "batched gemm", m, n, k, batch);
}
