/* status.c: status names, OpenCL error names and the last-error messages. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char thread_error[CLF_ERRMSG_LEN];

const char *clf_status_str(clf_status s)
{
    switch (s) {
    case CLF_OK: return "CLF_OK";
    case CLF_ERR_ARG: return "CLF_ERR_ARG";
    case CLF_ERR_NO_DEVICE: return "CLF_ERR_NO_DEVICE";
    case CLF_ERR_OPENCL: return "CLF_ERR_OPENCL";
    case CLF_ERR_BUILD: return "CLF_ERR_BUILD";
    case CLF_ERR_BLAS: return "CLF_ERR_BLAS";
    case CLF_ERR_MEMORY: return "CLF_ERR_MEMORY";
    case CLF_ERR_IO: return "CLF_ERR_IO";
    case CLF_ERR_FORMAT: return "CLF_ERR_FORMAT";
    case CLF_ERR_UNSUPPORTED: return "CLF_ERR_UNSUPPORTED";
    }
    return "CLF_ERR_UNKNOWN";
}

const char *clf_cl_error_str(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x
    E(CL_SUCCESS); E(CL_DEVICE_NOT_FOUND); E(CL_DEVICE_NOT_AVAILABLE);
    E(CL_COMPILER_NOT_AVAILABLE); E(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    E(CL_OUT_OF_RESOURCES); E(CL_OUT_OF_HOST_MEMORY); E(CL_PROFILING_INFO_NOT_AVAILABLE);
    E(CL_MEM_COPY_OVERLAP); E(CL_IMAGE_FORMAT_MISMATCH); E(CL_IMAGE_FORMAT_NOT_SUPPORTED);
    E(CL_BUILD_PROGRAM_FAILURE); E(CL_MAP_FAILURE); E(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST); E(CL_COMPILE_PROGRAM_FAILURE);
    E(CL_LINKER_NOT_AVAILABLE); E(CL_LINK_PROGRAM_FAILURE); E(CL_DEVICE_PARTITION_FAILED);
    E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE); E(CL_INVALID_VALUE); E(CL_INVALID_DEVICE_TYPE);
    E(CL_INVALID_PLATFORM); E(CL_INVALID_DEVICE); E(CL_INVALID_CONTEXT);
    E(CL_INVALID_QUEUE_PROPERTIES); E(CL_INVALID_COMMAND_QUEUE); E(CL_INVALID_HOST_PTR);
    E(CL_INVALID_MEM_OBJECT); E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR); E(CL_INVALID_IMAGE_SIZE);
    E(CL_INVALID_SAMPLER); E(CL_INVALID_BINARY); E(CL_INVALID_BUILD_OPTIONS);
    E(CL_INVALID_PROGRAM); E(CL_INVALID_PROGRAM_EXECUTABLE); E(CL_INVALID_KERNEL_NAME);
    E(CL_INVALID_KERNEL_DEFINITION); E(CL_INVALID_KERNEL); E(CL_INVALID_ARG_INDEX);
    E(CL_INVALID_ARG_VALUE); E(CL_INVALID_ARG_SIZE); E(CL_INVALID_KERNEL_ARGS);
    E(CL_INVALID_WORK_DIMENSION); E(CL_INVALID_WORK_GROUP_SIZE); E(CL_INVALID_WORK_ITEM_SIZE);
    E(CL_INVALID_GLOBAL_OFFSET); E(CL_INVALID_EVENT_WAIT_LIST); E(CL_INVALID_EVENT);
    E(CL_INVALID_OPERATION); E(CL_INVALID_GL_OBJECT); E(CL_INVALID_BUFFER_SIZE);
    E(CL_INVALID_MIP_LEVEL); E(CL_INVALID_GLOBAL_WORK_SIZE); E(CL_INVALID_PROPERTY);
    E(CL_INVALID_IMAGE_DESCRIPTOR); E(CL_INVALID_COMPILER_OPTIONS); E(CL_INVALID_LINKER_OPTIONS);
    E(CL_INVALID_DEVICE_PARTITION_COUNT);
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    }
    return "CL_UNKNOWN_ERROR";
}

const char *clf_ctx_error(const clf_ctx_t *ctx)
{
    return ctx ? ctx->error : thread_error;
}

clf_status clf_error_set(clf_ctx_t *ctx, clf_status s, const char *fmt, ...)
{
    /* Formatted aside first: callers wrap an earlier message with
     * clf_error_set(ctx, s, "%s: %s", path, clf_ctx_error(...)), and
     * vsnprintf into the buffer it reads from is undefined (it garbled
     * checkpoint errors). */
    char tmp[CLF_ERRMSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(ctx ? ctx->error : thread_error, tmp, sizeof tmp);
    return s;
}

clf_status clf_error_cl(clf_ctx_t *ctx, cl_int err, const char *call, const char *file, int line)
{
    const char *base = strrchr(file, '/');
    return clf_error_set(ctx, err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY
                                  ? CLF_ERR_MEMORY : CLF_ERR_OPENCL,
                         "%s failed: %s (%d) at %s:%d", call, clf_cl_error_str(err), (int)err,
                         base ? base + 1 : file, line);
}

uint64_t clf_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
