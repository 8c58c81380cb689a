/* tensor.c: f32 device tensors: a buffer, an offset in elements and a
 * row-major shape of up to four dimensions. */
#include <string.h>

#include "internal.h"

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
    memset(t, 0, sizeof *t);
    clf_status st = check_shape(ctx, ndim, shape);
    if (st != CLF_OK)
        return st;
    size_t bytes = shape_numel(ndim, shape) * sizeof(float);
    if (bytes > ctx->dev.max_alloc)
        return clf_error_set(ctx, CLF_ERR_MEMORY,
                             "tensor of %zu bytes exceeds the device's largest allocation (%llu bytes) on %s: "
                             "use a smaller batch or model",
                             bytes, (unsigned long long)ctx->dev.max_alloc, ctx->dev.device_name);
    cl_int err;
    t->buf = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CLF_CL_CHECK(ctx, err, "clCreateBuffer");
    t->ndim = ndim;
    memcpy(t->shape, shape, ndim * sizeof *shape);
    t->owns = true;
    return CLF_OK;
fail:
    return st;
}

void clf_tensor_free(clf_tensor *t)
{
    if (t->owns && t->buf)
        clReleaseMemObject(t->buf);
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
    clf_tensor v = {.buf = t->buf, .offset = t->offset + offset, .ndim = ndim, .owns = false};
    memcpy(v.shape, shape, ndim * sizeof *shape);
    *view = v;
    return CLF_OK;
}

clf_status clf_tensor_upload(clf_ctx_t *ctx, clf_tensor *t, const float *src)
{
    clf_status st = CLF_OK;
    CLF_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, t->buf, CL_TRUE, t->offset * sizeof(float),
                                         clf_tensor_numel(t) * sizeof(float), src, 0, NULL, NULL));
fail:
    return st;
}

clf_status clf_tensor_download(clf_ctx_t *ctx, const clf_tensor *t, float *dst)
{
    clf_status st = CLF_OK;
    CLF_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, t->buf, CL_TRUE, t->offset * sizeof(float),
                                        clf_tensor_numel(t) * sizeof(float), dst, 0, NULL, NULL));
fail:
    return st;
}

clf_status clf_tensor_fill(clf_ctx_t *ctx, clf_tensor *t, float value)
{
    clf_status st = CLF_OK;
    CLF_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, t->buf, &value, sizeof value,
                                        t->offset * sizeof(float), clf_tensor_numel(t) * sizeof(float),
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
    CLF_CL_TRY(ctx, clEnqueueCopyBuffer(ctx->queue, src->buf, dst->buf, src->offset * sizeof(float),
                                        dst->offset * sizeof(float), n * sizeof(float), 0, NULL, NULL));
fail:
    return st;
}
