/* cl_error.h: a failed OpenCL call recorded on the context (status.c: the
 * call's text, the error's name, file and line), and CLF_CL_TRY /
 * CLF_CL_CHECK, which do that and jump to the function's `fail` label, as
 * base/status.h's CLF_TRY does for our own calls. */
#ifndef CLF_RUNTIME_CL_ERROR_H
#define CLF_RUNTIME_CL_ERROR_H

#include "clformer/advanced/runtime.h"

/* Records a failed OpenCL call: its text, the error's name, file and line. */
clf_status clf_error_cl(clf_ctx_t *ctx, cl_int err, const char *call, const char *file, int line);

/* Evaluates an OpenCL call returning cl_int; on failure records it and
 * jumps to the function's `fail` label with `st` set. */
#define CLF_CL_TRY(ctx, call)                                               \
    do {                                                                    \
        cl_int clf_err_ = (call);                                           \
        if (clf_err_ != CL_SUCCESS) {                                       \
            st = clf_error_cl((ctx), clf_err_, #call, __FILE__, __LINE__);  \
            goto fail;                                                      \
        }                                                                   \
    } while (0)

/* Same for a call that reports through its last argument. */
#define CLF_CL_CHECK(ctx, err, what)                                        \
    do {                                                                    \
        if ((err) != CL_SUCCESS) {                                          \
            st = clf_error_cl((ctx), (err), (what), __FILE__, __LINE__);    \
            goto fail;                                                      \
        }                                                                   \
    } while (0)

#endif
