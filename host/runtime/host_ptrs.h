/* host_ptrs.h: a buffer's host address for the host GEMMs without a map
 * (host_ptrs.c): the context's probe at init and the lookup. */
#ifndef CLF_RUNTIME_HOST_PTRS_H
#define CLF_RUNTIME_HOST_PTRS_H

#include "clformer/advanced/runtime.h"

/* host_ptrs.c: sets ctx->host_ptrs when the host backend may use a
 * buffer's recorded address outside a map (the device keeps buffers at the
 * address a map gives, which a probe checks; CLF_GEMM_MAP=always: never);
 * clf_host_ptr gives buf's address, recording it at the first call. */
void clf_host_ptrs_probe(clf_ctx_t *ctx);
clf_status clf_host_ptr(clf_ctx_t *ctx, cl_mem buf, char **base);

#endif
