/* host_ptrs.c: the host backend's GEMMs without a map and an unmap per
 * operand, on devices whose buffers are host memory that stays put.
 *
 * A host GEMM used to map A, B and C (the last map blocking) and unmap them
 * after: on PoCL every map and unmap is a command its worker threads wake
 * up for, six or seven per GEMM, and a decoding step makes nineteen GEMMs
 * (perf: a fifth of the CPU time in futex wake-ups). PoCL's CPU device and
 * Intel's CPU runtime return the same address for every map of a buffer,
 * the buffer's own storage. Where a probe at context creation finds that
 * (clf_host_ptrs_probe), each buffer is mapped once, its address recorded
 * here and the map undone; a GEMM then waits for the queue (clFinish: the
 * one wait the blocking map was) and calls the BLAS on the recorded
 * addresses. Outside a map this reads and writes the buffer behind
 * OpenCL's back, which the specification leaves undefined: hence the
 * probe, which writes through a recorded address outside a map and checks
 * that a read sees it, and that a fill is seen through it; a device that
 * fails any step keeps the maps. CLF_GEMM_MAP=always keeps them too.
 *
 * The record is process-wide (a mutex guards it) and forgets a buffer when
 * OpenCL destroys it (clSetMemObjectDestructorCallback), before its handle
 * can name a new buffer. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "cl_error.h"
#include "ctx.h"
#include "host_ptrs.h"
#include "settings.h"

struct host_ptr {
    cl_mem buf;
    char *base;
    size_t bytes;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct host_ptr *known;
static size_t nknown, cap_known;

static void CL_CALLBACK forget(cl_mem buf, void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nknown; i++)
        if (known[i].buf == buf) {
            known[i] = known[--nknown];
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* buf's recorded address, or NULL */
static char *find(cl_mem buf, size_t *bytes)
{
    char *base = NULL;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nknown && !base; i++)
        if (known[i].buf == buf)
            base = known[i].base, *bytes = known[i].bytes;
    pthread_mutex_unlock(&lock);
    return base;
}

static bool remember(cl_mem buf, char *base, size_t bytes)
{
    bool ok = true;
    pthread_mutex_lock(&lock);
    if (nknown == cap_known) {
        size_t cap = cap_known ? 2 * cap_known : 256;
        struct host_ptr *g = realloc(known, cap * sizeof *g);
        if (g)
            known = g, cap_known = cap;
        else
            ok = false;
    }
    if (ok)
        known[nknown++] = (struct host_ptr){buf, base, bytes};
    pthread_mutex_unlock(&lock);
    /* registered after the record exists: forget() may run at once */
    return ok && clSetMemObjectDestructorCallback(buf, forget, NULL) == CL_SUCCESS;
}

/* Maps the whole of buf (blocking), returns the address and unmaps. */
static clf_status map_once(clf_ctx_t *ctx, cl_mem buf, char **base, size_t *bytes)
{
    clf_status st = CLF_OK;
    cl_int err = clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof *bytes, bytes, NULL);
    CLF_CL_CHECK(ctx, err, "clGetMemObjectInfo (host gemm)");
    *base = clEnqueueMapBuffer(ctx->queue, buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, *bytes, 0, NULL, NULL, &err);
    CLF_CL_CHECK(ctx, err, "clEnqueueMapBuffer (host gemm)");
    CLF_CL_TRY(ctx, clEnqueueUnmapMemObject(ctx->queue, buf, *base, 0, NULL, NULL));
fail:
    return st;
}

clf_status clf_host_ptr(clf_ctx_t *ctx, cl_mem buf, char **base)
{
    size_t bytes;
    if ((*base = find(buf, &bytes)))
        return CLF_OK;
    clf_status st = map_once(ctx, buf, base, &bytes);
    if (st == CLF_OK && !remember(buf, *base, bytes))
        forget(buf, NULL), st = clf_error_set(ctx, CLF_ERR_MEMORY, "host gemm: cannot record a buffer's address");
    return st;
}

/* The probe's steps on a buffer of n floats; true when every one holds. */
static bool probe_steps(clf_ctx_t *ctx, cl_mem buf, size_t n)
{
    char *a, *b;
    size_t bytes;
    float got[16], fill = 2.5f;
    if (map_once(ctx, buf, &a, &bytes) || map_once(ctx, buf, &b, &bytes) || a != b || clFinish(ctx->queue))
        return false;
    float *p = (float *)a;
    for (size_t i = 0; i < n; i++)  /* written outside any map */
        p[i] = (float)i + 0.25f;
    if (clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, 0, n * sizeof(float), got, 0, NULL, NULL))
        return false;
    for (size_t i = 0; i < n; i++)
        if (got[i] != (float)i + 0.25f)
            return false;
    if (clEnqueueFillBuffer(ctx->queue, buf, &fill, sizeof fill, 0, n * sizeof(float), 0, NULL, NULL) ||
        clFinish(ctx->queue))
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] != fill)
            return false;
    return true;
}

void clf_host_ptrs_probe(clf_ctx_t *ctx)
{
    const char *e = clf_setting_get("CLF_GEMM_MAP");
    ctx->host_ptrs = false;
    if (ctx->gemm != CLF_GEMM_HOST || (e && !strcmp(e, "always")))
        return;
    const size_t n = 16;
    cl_int err;
    cl_mem buf = clf_buffer_create(ctx, CL_MEM_READ_WRITE, n * sizeof(float), &err);
    if (err != CL_SUCCESS)
        return;
    ctx->host_ptrs = probe_steps(ctx, buf, n);
    clf_buffer_release(buf);
}
