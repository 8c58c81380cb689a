/* upload.c: device buffers filled from the host without making the host
 * wait for the device. A write copies the data into host memory the
 * struct keeps and enqueues a non-blocking write from there; the next
 * write waits for that one only (long done, as a rule), not for the rest of
 * the queue as a blocking write on an in-order queue would. */
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "cl_error.h"
#include "ctx.h"

clf_status clf_upload_write(clf_ctx_t *ctx, struct clf_upload *u, const void *src, size_t bytes)
{
    clf_status st = CLF_OK;
    if (u->done) {
        cl_int err = clWaitForEvents(1, &u->done);
        clReleaseEvent(u->done);
        u->done = NULL;
        CLF_CL_CHECK(ctx, err, "clWaitForEvents(upload)");
    }
    if (bytes == 0)
        return CLF_OK;
    if (bytes > u->cap) {
        void *host = malloc(bytes);
        if (!host)
            return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for an upload of %zu bytes", bytes);
        cl_int err;
        cl_mem buf = clf_buffer_create(ctx, CL_MEM_READ_ONLY, bytes, &err);
        if (err != CL_SUCCESS) {
            free(host);
            return clf_error_cl(ctx, err, "clCreateBuffer(upload)", __FILE__, __LINE__);
        }
        if (u->buf)
            clf_buffer_release(u->buf);  /* kept by OpenCL until its enqueued users finish */
        free(u->host);
        u->buf = buf, u->host = host, u->cap = bytes;
    }
    memcpy(u->host, src, bytes);
    CLF_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, u->buf, CL_FALSE, 0, bytes, u->host, 0, NULL, &u->done));
    /* submitted, so that waiting on its event later cannot stall */
    CLF_CL_TRY(ctx, clFlush(ctx->queue));
fail:
    return st;
}

clf_status clf_upload_ints(clf_ctx_t *ctx, struct clf_upload *u, const int32_t *src, size_t n, clf_tensor *view)
{
    clf_status st = clf_upload_write(ctx, u, src, n * sizeof *src);
    if (st != CLF_OK)
        return st;
    *view = (clf_tensor){.buf = u->buf, .ndim = 1, .shape = {n}, .dtype = CLF_I32};
    return CLF_OK;
}

void clf_upload_free(struct clf_upload *u)
{
    if (!u)
        return;
    if (u->done) {
        clWaitForEvents(1, &u->done);
        clReleaseEvent(u->done);
    }
    if (u->buf)
        clf_buffer_release(u->buf);
    free(u->host);
    memset(u, 0, sizeof *u);
}
