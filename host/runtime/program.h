/* program.h: launching our kernels (program.c): arguments from a list of
 * (size, pointer) pairs, the launch with its global size rounded up to the
 * work-group, the largest work-group a kernel and device allow, a cl/
 * file's text, and the release of a context's programs. Compiling and
 * caching programs stays inside program.c (public: clf_kernel_get). */
#ifndef CLF_RUNTIME_PROGRAM_H
#define CLF_RUNTIME_PROGRAM_H

#include <stddef.h>

#include "clformer/advanced/runtime.h"

/* Sets kernel arguments from a list of (size, pointer) pairs. */
struct clf_arg {
    size_t size;
    const void *value;
};
#define CLF_ARG(x) ((struct clf_arg){sizeof(x), &(x)})
#define CLF_ARG_LOCAL(bytes) ((struct clf_arg){(bytes), NULL})

clf_status clf_kernel_set_args(clf_ctx_t *ctx, cl_kernel k, const char *name,
                               const struct clf_arg *args, int nargs);

/* Enqueues k over `dims` dimensions; global sizes are rounded up to a
 * multiple of local (local NULL lets the driver choose). */
clf_status clf_kernel_launch(clf_ctx_t *ctx, cl_kernel k, const char *name, cl_uint dims,
                             const size_t *global, const size_t *local);

/* The largest power of two ≤ want that the kernel and device allow. */
size_t clf_kernel_wg_limit(clf_ctx_t *ctx, cl_kernel k, size_t want);

/* Returns the file of cl/ with this name: from CLF_KERNEL_DIR when set,
 * else the embedded copy. *text is malloc'd, caller frees. */
clf_status clf_kernel_source(clf_ctx_t *ctx, const char *file, char **text, size_t *len);

/* Releases the context's programs and kernels (clf_ctx_free). */
void clf_programs_release(clf_ctx_t *ctx);

#endif
