/* gemm_host.c: the host-BLAS backend of clf_gemm and clf_gemm_batched, and
 * choosing a context's backend.
 *
 * On a device whose memory is the host's (a CPU device), a blocking map
 * hands back the buffer's own memory: PoCL 3.1 and Intel's CPU runtime
 * return the same pointer for every map of a buffer, at the mapped offset,
 * and a CL_MEM_USE_HOST_PTR buffer maps to the host pointer itself. So a
 * GEMM here is: map A, B and C (the last map blocks, and waits for
 * everything enqueued before it on the in-order queue), OpenBLAS's cblas_sgemm on those
 * pointers (row-major; the strided batch as a loop: OpenBLAS 0.3.21 has no
 * batched call), unmap. Operands are matrices of floats in one or more
 * buffers: C is (m, ldc) at c->offset, A is (m, lda) or (k, lda) when
 * transposed, B (k, ldb) or (n, ldb); matrix i of a batch at offset +
 * i·stride. Several operands may share a buffer (views of one fused
 * weight): each distinct buffer is mapped once, over the union of the
 * ranges its operands need (OpenCL leaves overlapping maps for writing
 * undefined), and the operands' pointers are derived from that one map.
 * clf_gemm_bias's row of bias (a fourth operand) is added to C's rows on
 * the host while C is mapped: one call instead of a GEMM and a kernel. */
#include <cblas.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cl_error.h"
#include "ctx.h"
#include "gemm_paths.h"
#include "host_ptrs.h"
#include "profile.h"
#include "settings.h"

const char *clf_gemm_backend_str(enum clf_gemm_backend b)
{
    return b == CLF_GEMM_HOST ? "host" : b == CLF_GEMM_CLBLAST ? "clblast" : "unknown";
}

/* The refusal of the host backend on a device that does not share the
 * host's memory; origin says who asked ("CLF_GEMM=host", …). */
static clf_status refuse_host(clf_ctx_t *ctx, const struct clf_device_info *di, const char *origin)
{
    return clf_error_set(ctx, CLF_ERR_UNSUPPORTED,
                         "%s: device [%d] '%s' (%s) does not share the host's memory%s%s%s, so the host's BLAS "
                         "cannot run its GEMMs; use clblast",
                         origin, di->index, di->device_name, di->platform_name,
                         di->shaped[0] ? " (as CLF_DEVICE_LIMITS=" : "", di->shaped, di->shaped[0] ? " shapes it)" : "");
}

clf_status clf_gemm_backend_choose(const struct clf_device_info *di, const char *request,
                                   enum clf_gemm_backend *out)
{
    char origin[96];
    if (request && *request) {
        snprintf(origin, sizeof origin, "GEMM backend '%.40s'", request);
    } else {
        request = clf_setting_get("CLF_GEMM");
        snprintf(origin, sizeof origin, "CLF_GEMM=%.40s", request ? request : "");
    }
    if (!request || !*request) {
        *out = (di->type & CL_DEVICE_TYPE_CPU) && di->host_unified ? CLF_GEMM_HOST : CLF_GEMM_CLBLAST;
        return CLF_OK;
    }
    enum clf_gemm_backend b;
    if (!strcmp(request, "host"))
        b = CLF_GEMM_HOST;
    else if (!strcmp(request, "clblast"))
        b = CLF_GEMM_CLBLAST;
    else
        return clf_error_set(NULL, CLF_ERR_ARG, "%s: the GEMM backend is 'host' (the host's BLAS) or 'clblast'",
                             origin);
    if (b == CLF_GEMM_HOST && !di->host_unified)
        return refuse_host(NULL, di, origin);
    *out = b;
    return CLF_OK;
}

/* OpenBLAS's own (exported by its pthread and OpenMP builds, not in cblas.h) */
void openblas_read_env(void);
int blas_thread_shutdown_(void);

/* OpenBLAS's idle threads spin, calling sched_yield, for
 * 2^OPENBLAS_THREAD_TIMEOUT cycles (2^28 by default, ~0.1 s) after each
 * call before they sleep. Here a GEMM comes every few hundred microseconds
 * between OpenCL kernels, so they never sleep: they take the cores from
 * the driver's worker threads running those kernels (half of a decoding
 * step's CPU time went to sched_yield, measured with perf). Unless the
 * user set OPENBLAS_THREAD_TIMEOUT, it becomes 4 (the least OpenBLAS
 * takes: the threads sleep at once and a call wakes them). The variable
 * is set as the library loads (blas_timeout_env), before any thread of
 * ours or of an OpenCL driver reads the environment: setenv may free the
 * array that a concurrent getenv walks, and PoCL's worker threads call
 * getenv as they compile and run kernels. OpenBLAS reads the setting when
 * it starts its threads, which its own load did already, so they are
 * stopped here and restart with it at the next call. Once per process
 * (pthread_once: a context opened in another thread meanwhile waits for
 * it), at the first context on the host backend, before any of its
 * GEMMs. */
static bool blas_timeout_ours;

__attribute__((constructor)) static void blas_timeout_env(void)
{
    const char *t = clf_setting_get("OPENBLAS_THREAD_TIMEOUT");
    blas_timeout_ours = !(t && *t) && setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1) == 0;
}

static void blas_idle_sleep_once(void)
{
    if (!blas_timeout_ours)
        return;
    openblas_read_env();
    blas_thread_shutdown_();
}

static void blas_idle_sleep(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_idle_sleep_once);
}

clf_status clf_ctx_gemm_set(clf_ctx_t *ctx, enum clf_gemm_backend b)
{
    if (b != CLF_GEMM_HOST && b != CLF_GEMM_CLBLAST)
        return clf_error_set(ctx, CLF_ERR_ARG, "GEMM backend %d is neither CLF_GEMM_HOST nor CLF_GEMM_CLBLAST", (int)b);
    if (b == CLF_GEMM_HOST && !ctx->dev.host_unified)
        return refuse_host(ctx, &ctx->dev, "GEMM backend 'host'");
    if (b == CLF_GEMM_HOST)
        blas_idle_sleep();
    ctx->gemm = b;
    clf_host_ptrs_probe(ctx);
    return CLF_OK;
}

enum clf_gemm_backend clf_ctx_gemm(const clf_ctx_t *ctx) { return ctx->gemm; }

int clf_blas_threads(void)
{
    long n = clf_blas_threads_setting();
    return n > 0 ? (int)n : openblas_get_num_threads();
}

clf_status clf_blas_threads_apply(enum clf_gemm_backend b)
{
    long n = clf_blas_threads_setting();
    if (n < 0)
        return clf_error_set(NULL, CLF_ERR_ARG, "CLF_BLAS_THREADS='%s': want a thread count from 1 to 4096",
                             clf_setting_get("CLF_BLAS_THREADS"));
    if (b == CLF_GEMM_HOST)
        blas_idle_sleep();
    if (n > 0 && n != openblas_get_num_threads())
        openblas_set_num_threads((int)n);
    return CLF_OK;
}

/* One distinct buffer to map: the byte range [lo, hi) and the access that
 * its operands need, and where the map put lo. */
struct mapping {
    cl_mem buf;
    size_t lo, hi;
    cl_map_flags flags;
    char *base;
};

clf_status clf_gemm_host(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha, const struct clf_mat *a,
                         const struct clf_mat *b, float beta, const struct clf_mat *c, size_t batch,
                         const struct clf_mat *bias)
{
    /* cblas takes int dimensions (OpenBLAS built without 64-bit integers) */
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || a->ld > INT_MAX || b->ld > INT_MAX || c->ld > INT_MAX)
        return clf_error_set(ctx, CLF_ERR_ARG,
                             "gemm (m=%zu n=%zu k=%zu, lda %zu ldb %zu ldc %zu): the host's BLAS takes dimensions "
                             "up to %d; use the clblast backend (CLF_GEMM=clblast)",
                             m, n, k, a->ld, b->ld, c->ld, INT_MAX);
    struct clf_mat cc = *c, bb = bias ? *bias : *c;
    cc.trans = bb.trans = false;
    const struct clf_mat *ops[4] = {a, b, &cc, &bb};
    const size_t r[4] = {m, k, m, 1}, cols[4] = {k, n, n, n};
    const int nops = bias ? 4 : 3;
    const bool dnnl = clf_gemm_dnnl_f32_takes(ctx, m, n, k, batch, alpha, bias != NULL);
    struct mapping maps[4];
    int which[4], nmaps = 0, mapped = 0;
    for (int i = 0; i < nops; i++) {
        size_t lo = ops[i]->offset * sizeof(float);
        size_t hi = clf_mat_extent(ops[i], r[i], cols[i], batch).end * sizeof(float);
        cl_map_flags flags = i == 2 ? CL_MAP_READ | CL_MAP_WRITE : CL_MAP_READ;
        int j = 0;
        while (j < nmaps && maps[j].buf != ops[i]->buf)
            j++;
        if (j == nmaps)
            maps[nmaps++] = (struct mapping){ops[i]->buf, lo, hi, flags, NULL};
        maps[j].lo = lo < maps[j].lo ? lo : maps[j].lo;
        maps[j].hi = hi > maps[j].hi ? hi : maps[j].hi;
        maps[j].flags |= flags;
        which[i] = j;
    }

    clf_status st = CLF_OK;
    cl_int err;
    double t0 = clf_profile_begin(ctx);
    if (ctx->host_ptrs) {  /* recorded addresses: one wait, no maps (host_ptrs.c) */
        for (int j = 0; j < nmaps; j++) {
            char *base;
            if ((st = clf_host_ptr(ctx, maps[j].buf, &base)))
                return st;
            maps[j].base = base + maps[j].lo;
        }
        CLF_CL_TRY(ctx, clFinish(ctx->queue));
        mapped = 0;  /* nothing to unmap */
    }
    /* only the last map blocks: on the in-order queue its completion is
     * that of everything before it, the other maps included, so the host
     * waits for the device once per call instead of once per buffer */
    for (; !ctx->host_ptrs && mapped < nmaps; mapped++) {
        struct mapping *p = &maps[mapped];
        cl_bool last = mapped == nmaps - 1 ? CL_TRUE : CL_FALSE;
        p->base = clEnqueueMapBuffer(ctx->queue, p->buf, last, p->flags, p->lo, p->hi - p->lo, 0, NULL, NULL,
                                     &err);
        CLF_CL_CHECK(ctx, err, "clEnqueueMapBuffer (host gemm)");
    }
    float *ptr[4];
    for (int i = 0; i < nops; i++) {
        const struct mapping *p = &maps[which[i]];
        ptr[i] = (float *)(p->base + (ops[i]->offset * sizeof(float) - p->lo));
    }
    if (dnnl) {  /* large ones: oneDNN's matmul, the bias added as it stores C (gemm_dnnl_f32.c) */
        const struct clf_gemm_ptrs g = {m,      n,      k,     a->ld,  b->ld,  c->ld,  a->trans, b->trans,
                                        alpha,  beta,   ptr[0], ptr[1], bias ? ptr[3] : NULL, ptr[2]};
        st = clf_gemm_dnnl_f32(ctx, &g);
        goto fail;
    }
    for (size_t i = 0; i < batch; i++)
        cblas_sgemm(CblasRowMajor, a->trans ? CblasTrans : CblasNoTrans, b->trans ? CblasTrans : CblasNoTrans,
                    (int)m, (int)n, (int)k, alpha, ptr[0] + i * a->stride, (int)a->ld, ptr[1] + i * b->stride,
                    (int)b->ld, beta, ptr[2] + i * c->stride, (int)c->ld);
    /* the bias after the product, as bias_add would add it: the same sums */
    for (size_t i = 0; bias && i < m; i++) {
        float *row = ptr[2] + i * c->ld;
        for (size_t j = 0; j < n; j++)
            row[j] += ptr[3][j];
    }
fail:
    /* the unmaps are enqueued, not waited for: later work on the in-order
     * queue sees C's new contents */
    for (int j = 0; j < mapped; j++) {
        err = clEnqueueUnmapMemObject(ctx->queue, maps[j].buf, maps[j].base, 0, NULL, NULL);
        if (err != CL_SUCCESS && st == CLF_OK)
            st = clf_error_cl(ctx, err, "clEnqueueUnmapMemObject (host gemm)", __FILE__, __LINE__);
    }
    static const char *names[2][8] = {
        {"gemm NN (host BLAS)", "gemm NT (host BLAS)", "gemm TN (host BLAS)", "gemm TT (host BLAS)",
         "gemm NN + bias (host BLAS)", "gemm NT + bias (host BLAS)", "gemm TN + bias (host BLAS)",
         "gemm TT + bias (host BLAS)"},
        {"gemm NN (oneDNN)", "gemm NT (oneDNN)", "gemm TN (oneDNN)", "gemm TT (oneDNN)", "gemm NN + bias (oneDNN)",
         "gemm NT + bias (oneDNN)", "gemm TN + bias (oneDNN)", "gemm TT + bias (oneDNN)"}};
    if (st == CLF_OK)
        clf_profile_end(ctx, batch > 1 ? "batched gemm (host BLAS)" : names[dnnl][4 * !!bias + 2 * a->trans + b->trans],
                        t0);
    return st;
}
