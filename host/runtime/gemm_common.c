/* gemm_common.c: what the GEMM paths share, below all of them, so that
 * the dispatcher (gemm.c) calls the paths (gemm_host.c, gemm_dnnl.c,
 * gemm_dnnl_f32.c, gemm_half.c) and none of them calls back up: the
 * process-wide CLBlast lock and CLBlast's status codes named, the compute
 * types' names, the cache of packed B views the reduced-precision paths
 * keep (its key, lookup and growth) and the test of whether a GEMM runs on
 * the context's packed weights, and CLF_BLAS_THREADS read. */
#include <clblast_c.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "gemm_internal.h"
#include "gemm_paths.h"
#include "settings.h"

/* Every call into CLBlast holds this one process-wide lock: Debian 12's
 * CLBlast 1.5.3 fills its kernel and database caches without one
 * (CNugteren/CLBlast#486, fixed upstream in #495), and two threads' GEMMs
 * on two contexts crashed on it. The calls only enqueue work (no wait), so
 * the lock is held for microseconds, except while CLBlast compiles a
 * kernel on its first use on a device. */
static pthread_mutex_t blast_lock = PTHREAD_MUTEX_INITIALIZER;

void clf_blast_lock(void) { pthread_mutex_lock(&blast_lock); }
void clf_blast_unlock(void) { pthread_mutex_unlock(&blast_lock); }

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

clf_status clf_blast_status(clf_ctx_t *ctx, int s, const char *what, size_t m, size_t n, size_t k, size_t batch)
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

const char *clf_gemm_weights_str(enum clf_gemm_weights t)
{
    return t == CLF_GEMM_W_INT8   ? "int8"
           : t == CLF_GEMM_W_BF16 ? "bfloat16"
           : t == CLF_GEMM_W_F16  ? "float16"
           : t == CLF_GEMM_W_F32P ? "float32 (packed)"
                                  : "float32";
}

struct clf_view_key clf_view_key_of(const struct clf_mat *b, size_t k, size_t n)
{
    return (struct clf_view_key){.offset = b->offset, .ld = b->ld, .k = k, .n = n, .trans = b->trans};
}

void *clf_view_find(void *items, size_t n, size_t size, struct clf_view_key key)
{
    for (size_t i = 0; i < n; i++) {
        const struct clf_view_key *v = (const struct clf_view_key *)((char *)items + i * size);
        if (v->offset == key.offset && v->ld == key.ld && v->trans == key.trans && v->k == key.k && v->n == key.n)
            return (char *)items + i * size;
    }
    return NULL;
}

void *clf_view_room(void *items, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return items;
    const size_t c = *cap ? 2 * *cap : 64;
    void *q = realloc(items, c * size);
    if (q)
        *cap = c;
    return q;
}

bool clf_gemm_packed_takes(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b, float alpha,
                           float beta)
{
    return ctx->packed_weights && b->buf == ctx->packed_weights && !a->trans && alpha == 1.0f && beta == 0.0f;
}

long clf_blas_threads_setting(void)
{
    const char *s = clf_setting_get("CLF_BLAS_THREADS");
    if (!s || !*s)
        return 0;
    char *end;
    long n = strtol(s, &end, 10);
    return *end || n < 1 || n > 4096 ? -1 : n;
}
