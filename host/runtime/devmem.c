/* devmem.c: the device memory the library holds, counted at the one place
 * every buffer is made and released (clf_buffer_create/_release), for the
 * whole process (every context): bytes held now and the most held at once,
 * which `clformer bench train` and `bench translate` report. Atomics,
 * since contexts may live on several threads (clformer serve). What the
 * driver allocates on its own (programs, queues) is not counted. */
#include <stdatomic.h>

#include "buffers.h"
#include "ctx.h"

static _Atomic size_t held, peak;

cl_mem clf_buffer_create(clf_ctx_t *ctx, cl_mem_flags flags, size_t bytes, cl_int *err)
{
    cl_mem b = clCreateBuffer(ctx->context, flags, bytes, NULL, err);
    if (*err != CL_SUCCESS)
        return NULL;
    size_t now = atomic_fetch_add(&held, bytes) + bytes;
    size_t p = atomic_load(&peak);
    while (now > p && !atomic_compare_exchange_weak(&peak, &p, now))
        ;  /* p is reloaded on failure */
    return b;
}

void clf_buffer_release(cl_mem b)
{
    size_t bytes = 0;
    if (!b)
        return;
    if (clGetMemObjectInfo(b, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS)
        atomic_fetch_sub(&held, bytes);
    clReleaseMemObject(b);  /* OpenCL keeps it until its enqueued users finish */
}

void clf_memory_stats(struct clf_memory_stats *out)
{
    out->device_bytes = atomic_load(&held);
    out->device_peak_bytes = atomic_load(&peak);
}

void clf_memory_peak_reset(void)
{
    atomic_store(&peak, atomic_load(&held));
}
