/* tensor.c: device tensors: a buffer, an offset in elements, a row-major
 * shape of up to four dimensions and an element type (f32 or int32, both
 * four bytes, so byte offsets are elements times CLF_ELEM). */
#include <string.h>

#include "buffers.h"
#include "cl_error.h"
#include "ctx.h"

/* bytes per element of every dtype */
#define CLF_ELEM 4
_Static_assert(sizeof(float) == CLF_ELEM && sizeof(int32_t) == CLF_ELEM, "f32 and i32 are four bytes");

static const char *dtype_name(enum clf_dtype dt)
{
    return dt == CLF_F32 ? "f32" : dt == CLF_I32 ? "i32" : "unknown";
}

static clf_status check_dtype(clf_ctx_t *ctx, const char *what, const clf_tensor *t, enum clf_dtype want)
{
    if (t->dtype != want)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: tensor is %s, want %s", what, dtype_name(t->dtype),
                             dtype_name(want));
    return CLF_OK;
}

static size_t shape_numel(int ndim, const size_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

size_t clf_tensor_numel(const clf_tensor *t)
{
    return shape_numel(t->ndim, t->shape);
}

static clf_status check_shape(clf_ctx_t *ctx, int ndim, const size_t *shape)
{
    if (ndim < 1 || ndim > CLF_MAX_DIMS)
        return clf_error_set(ctx, CLF_ERR_ARG, "tensor: %d dimensions, want 1..%d", ndim, CLF_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0)
            return clf_error_set(ctx, CLF_ERR_ARG, "tensor: dimension %d is zero", i);
    return CLF_OK;
}

clf_status clf_tensor_init(clf_ctx_t *ctx, clf_tensor *t, int ndim, const size_t *shape)
{
    return clf_tensor_init_dtype(ctx, t, CLF_F32, ndim, shape);
}

clf_status clf_tensor_init_dtype(clf_ctx_t *ctx, clf_tensor *t, enum clf_dtype dtype, int ndim,
                                 const size_t *shape)
{
    memset(t, 0, sizeof *t);
    if (dtype != CLF_F32 && dtype != CLF_I32)
        return clf_error_set(ctx, CLF_ERR_ARG, "tensor: unknown dtype %d", (int)dtype);
    clf_status st = check_shape(ctx, ndim, shape);
    if (st != CLF_OK)
        return st;
    size_t bytes = shape_numel(ndim, shape) * CLF_ELEM;
    if (bytes > ctx->dev.max_alloc)
        return clf_error_set(ctx, CLF_ERR_MEMORY,
                             "tensor of %zu bytes exceeds the device's largest allocation (%llu bytes) on %s: "
                             "use a smaller batch or model",
                             bytes, (unsigned long long)ctx->dev.max_alloc, ctx->dev.device_name);
    cl_int err;
    t->buf = clf_buffer_create(ctx, CL_MEM_READ_WRITE, bytes, &err);
    CLF_CL_CHECK(ctx, err, "clCreateBuffer");
    t->ndim = ndim;
    memcpy(t->shape, shape, ndim * sizeof *shape);
    t->owns = true;
    t->dtype = dtype;
    return CLF_OK;
fail:
    return st;
}

void clf_tensor_free(clf_tensor *t)
{
    if (t->owns && t->buf)
        clf_buffer_release(t->buf);
    memset(t, 0, sizeof *t);
}

clf_status clf_tensor_view(clf_ctx_t *ctx, const clf_tensor *t, size_t offset, int ndim,
                           const size_t *shape, clf_tensor *view)
{
    clf_status st = check_shape(ctx, ndim, shape);
    if (st != CLF_OK)
        return st;
    size_t n = shape_numel(ndim, shape);
    if (offset + n > clf_tensor_numel(t))
        return clf_error_set(ctx, CLF_ERR_ARG, "tensor view of %zu elements at %zu overruns a tensor of %zu",
                             n, offset, clf_tensor_numel(t));
    clf_tensor v = {.buf = t->buf, .offset = t->offset + offset, .ndim = ndim, .owns = false,
                   .dtype = t->dtype};
    memcpy(v.shape, shape, ndim * sizeof *shape);
    *view = v;
    return CLF_OK;
}

/* Blocking copies of t's whole extent, refused unless t holds `want`. */
static clf_status write_all(clf_ctx_t *ctx, clf_tensor *t, enum clf_dtype want, const void *src)
{
    clf_status st = check_dtype(ctx, "tensor upload", t, want);
    if (st != CLF_OK)
        return st;
    CLF_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, t->buf, CL_TRUE, t->offset * CLF_ELEM,
                                         clf_tensor_numel(t) * CLF_ELEM, src, 0, NULL, NULL));
fail:
    return st;
}

/* done NULL: blocking; else enqueued with *done its event, and flushed */
static clf_status read_all(clf_ctx_t *ctx, const clf_tensor *t, enum clf_dtype want, void *dst, cl_event *done)
{
    clf_status st = check_dtype(ctx, "tensor download", t, want);
    if (st != CLF_OK)
        return st;
    CLF_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, t->buf, done ? CL_FALSE : CL_TRUE, t->offset * CLF_ELEM,
                                        clf_tensor_numel(t) * CLF_ELEM, dst, 0, NULL, done));
    if (done)
        CLF_CL_TRY(ctx, clFlush(ctx->queue));
fail:
    return st;
}

clf_status clf_tensor_read_enqueue(clf_ctx_t *ctx, const clf_tensor *t, void *dst)
{
    cl_event done = NULL;
    clf_status st = read_all(ctx, t, t ? t->dtype : CLF_F32, dst, &done);
    clf_event_release(done);  /* the caller's later wait covers it */
    return st;
}

clf_status clf_tensor_upload(clf_ctx_t *ctx, clf_tensor *t, const float *src)
{
    return write_all(ctx, t, CLF_F32, src);
}

clf_status clf_tensor_download(clf_ctx_t *ctx, const clf_tensor *t, float *dst)
{
    return read_all(ctx, t, CLF_F32, dst, NULL);
}

clf_status clf_tensor_download_start(clf_ctx_t *ctx, const clf_tensor *t, float *dst, cl_event *done)
{
    *done = NULL;
    return read_all(ctx, t, CLF_F32, dst, done);
}

clf_status clf_event_done(clf_ctx_t *ctx, cl_event e, bool *done)
{
    clf_status st = CLF_OK;
    cl_int status;
    *done = false;
    CLF_CL_TRY(ctx, clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    if (status < 0)
        return clf_error_set(ctx, CLF_ERR_OPENCL, "an enqueued command ended in error %d (%s)", (int)status,
                             clf_cl_error_str(status));
    *done = status == CL_COMPLETE;
fail:
    return st;
}

void clf_event_release(cl_event e)
{
    if (e)
        clReleaseEvent(e);
}

clf_status clf_tensor_upload_i32(clf_ctx_t *ctx, clf_tensor *t, const int32_t *src)
{
    return write_all(ctx, t, CLF_I32, src);
}

clf_status clf_tensor_download_i32(clf_ctx_t *ctx, const clf_tensor *t, int32_t *dst)
{
    return read_all(ctx, t, CLF_I32, dst, NULL);
}

clf_status clf_tensor_check_ints(clf_ctx_t *ctx, const char *op, const char *role, const clf_tensor *t, size_t n)
{
    if (!t || !t->buf || t->ndim < 1 || t->ndim > CLF_MAX_DIMS)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s is not a tensor", op, role);
    if (t->dtype != CLF_I32)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s is %s, want i32", op, role, dtype_name(t->dtype));
    if (t->offset != 0)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s starts %zu elements into its buffer, want 0", op, role,
                             t->offset);
    if (clf_tensor_numel(t) < n)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: %s holds %zu ints, want at least %zu", op, role,
                             clf_tensor_numel(t), n);
    return CLF_OK;
}

clf_status clf_tensor_fill(clf_ctx_t *ctx, clf_tensor *t, float value)
{
    clf_status st = check_dtype(ctx, "tensor fill", t, CLF_F32);
    if (st != CLF_OK)
        return st;
    CLF_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, t->buf, &value, sizeof value,
                                        t->offset * CLF_ELEM, clf_tensor_numel(t) * CLF_ELEM,
                                        0, NULL, NULL));
fail:
    return st;
}

clf_status clf_tensor_copy(clf_ctx_t *ctx, clf_tensor *dst, const clf_tensor *src)
{
    clf_status st = CLF_OK;
    size_t n = clf_tensor_numel(src);
    if (clf_tensor_numel(dst) != n)
        return clf_error_set(ctx, CLF_ERR_ARG, "tensor copy: %zu elements into %zu", n, clf_tensor_numel(dst));
    if ((st = check_dtype(ctx, "tensor copy", dst, src->dtype)) != CLF_OK)
        return st;
    CLF_CL_TRY(ctx, clEnqueueCopyBuffer(ctx->queue, src->buf, dst->buf, src->offset * CLF_ELEM,
                                        dst->offset * CLF_ELEM, n * CLF_ELEM, 0, NULL, NULL));
fail:
    return st;
}

size_t clf_mem_bytes(cl_mem m)
{
    size_t bytes = 0;
    if (clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS)
        return 0;
    return bytes;
}
