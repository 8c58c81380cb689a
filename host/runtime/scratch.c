/* scratch.c: the context's scratch arena: one grow-only device buffer per
 * slot (enum clf_scratch_slot), kept until clf_ctx_free, so that ops and
 * GEMMs called on every step create no buffers once the largest step has
 * run (GPU drivers make allocation slow, and some zero every new buffer).
 *
 * Reuse is safe because the queue is in order: a slot's next user runs
 * after its last one. Two temporaries alive in one op need two slots. */
#include "buffers.h"
#include "ctx.h"
#include "scratch.h"

clf_status clf_scratch_get(clf_ctx_t *ctx, enum clf_scratch_slot slot, size_t bytes, cl_mem *buf)
{
    struct clf_scratch *s = &ctx->scratch[slot];
    if (bytes == 0)
        bytes = 1;
    if (s->buf && s->bytes >= bytes) {
        *buf = s->buf;
        return CLF_OK;
    }
    /* grow by half again at least, so that slowly rising sizes settle */
    size_t want = s->bytes + s->bytes / 2 > bytes ? s->bytes + s->bytes / 2 : bytes;
    if (want > ctx->dev.max_alloc)
        want = bytes;
    if (bytes > ctx->dev.max_alloc)
        return clf_error_set(ctx, CLF_ERR_MEMORY,
                             "scratch buffer of %zu bytes exceeds the largest allocation of %s (%llu bytes): "
                             "use smaller batches",
                             bytes, ctx->dev.device_name, (unsigned long long)ctx->dev.max_alloc);
    if (s->buf)
        clf_buffer_release(s->buf);  /* OpenCL keeps it until its enqueued users finish */
    s->buf = NULL;
    s->bytes = 0;
    cl_int err;
    cl_mem b = clf_buffer_create(ctx, CL_MEM_READ_WRITE, want, &err);
    if (err != CL_SUCCESS)
        return clf_error_set(ctx, err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES
                                  ? CLF_ERR_MEMORY : CLF_ERR_OPENCL,
                             "scratch buffer of %zu bytes: clCreateBuffer: %s", want, clf_cl_error_str(err));
    s->buf = b;
    s->bytes = want;
    ctx->scratch_allocs++;
    *buf = b;
    return CLF_OK;
}

unsigned clf_scratch_allocs(const clf_ctx_t *ctx)
{
    return ctx->scratch_allocs;
}

void clf_scratch_free(clf_ctx_t *ctx)
{
    for (int i = 0; i < CLF_SCRATCH_SLOTS; i++) {
        if (ctx->scratch[i].buf)
            clf_buffer_release(ctx->scratch[i].buf);
        ctx->scratch[i].buf = NULL;
        ctx->scratch[i].bytes = 0;
    }
}
