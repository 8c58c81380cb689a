/* status.h: recording a failure's message, and the one way to bail out on
 * a failed call. Needs no OpenCL: the text pipeline uses it as the runtime
 * does (host/runtime/internal.h adds the OpenCL-specific helpers). */
#ifndef CLF_BASE_STATUS_H
#define CLF_BASE_STATUS_H

#include "clformer_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLF_ERRMSG_LEN 8192

/* Records a failure's message on ctx (or the per-thread buffer when ctx is
 * NULL) and returns s, so callers can write `return clf_error_set(...)`.
 * The arguments may include the message being replaced (wrapping it is
 * safe: the text is formatted aside first). A context keeps its message in
 * the first member of struct clf_ctx (host/runtime/internal.h). */
clf_status clf_error_set(clf_ctx_t *ctx, clf_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The one way to bail out on a failed call: evaluates a call returning
 * clf_status into the function's `st` and, on failure (its message is
 * already recorded), jumps to the function's `fail` label, where its
 * cleanup runs. host/runtime/internal.h has CLF_CL_TRY, the same for
 * OpenCL calls. */
#define CLF_TRY(expr)                  \
    do {                               \
        if ((st = (expr)) != CLF_OK)   \
            goto fail;                 \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
