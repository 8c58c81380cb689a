/* status.c: status names and the last-error messages, per context or per
 * thread. No OpenCL here (OpenCL's error names: host/runtime/status.c). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"

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

/* A context's message buffer is the first member of struct clf_ctx (checked
 * there), and a pointer to a struct converted points to its first member
 * (C11 6.7.2.1), so this layer needs no view of the rest of the context. */
static char *error_buf(const clf_ctx_t *ctx)
{
    return ctx ? (char *)ctx : thread_error;
}

const char *clf_ctx_error(const clf_ctx_t *ctx)
{
    return error_buf(ctx);
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
    memcpy(error_buf(ctx), tmp, sizeof tmp);
    return s;
}
