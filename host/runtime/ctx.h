/* ctx.h: the context's layout, struct clf_ctx, which the public headers
 * keep opaque (clf_ctx_t): its device, queue, caches, profiler, scratch
 * arena and GEMM state. For the runtime's files and the few above that
 * read a field (the device's limits, the queue); the functions over those
 * fields have their own headers beside this one. */
#ifndef CLF_RUNTIME_CTX_H
#define CLF_RUNTIME_CTX_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "clformer/advanced/runtime.h"
#include "clformer/advanced/tune.h"
#include "gemm_internal.h"
#include "scratch.h"

struct clf_program_entry;

struct clf_ctx {
    char error[CLF_ERRMSG_LEN];          /* first: host/base/status.c finds it there */
    struct clf_device_info dev;
    cl_context context;
    cl_command_queue queue;
    struct clf_cache_stats stats;
    struct clf_program_entry *programs;  /* memory cache, a list */
    struct clf_kernel_memo *memo;        /* (file, options, kernel) -> kernel, before any source is read */
    size_t max_local_mem;                /* bytes, from the device */
    size_t max_wg;                       /* work-items, from the device */
    bool fp_fma;                         /* CL_FP_FMA: kernels build with -DCLF_FMA (common.h) */
    unsigned native_vec_float;           /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, 16 where unknown (attention.c) */
    struct clf_params_found params;      /* every tunable: the table's, GEMM's as CLBlast was given them */
    struct clf_kernel_params kparams;    /* our kernels': the tuning file's (zeros: the table's) */
    clf_status tuning_status;            /* clf_tuning_apply's at init: CLF_OK or why CLBlast's defaults run */
    char tuning_message[512];
    bool profiling;
    uint64_t launches;                   /* kernels enqueued (clf_kernel_launch), always counted */
    struct clf_profile_event *events;    /* while profiling: launches not yet folded */
    size_t nevents, cap_events;
    struct clf_scratch scratch[CLF_SCRATCH_SLOTS];
    unsigned scratch_allocs;             /* buffers the arena has created */
    struct clf_profile_entry *totals;    /* finished launches, summed per name */
    size_t ntotals, cap_totals;
    enum clf_gemm_backend gemm;          /* who runs clf_gemm (gemm.c, gemm_host.c) */
    bool host_ptrs;                      /* host GEMMs use recorded addresses, no maps (host_ptrs.c) */
    cl_mem packed_weights;               /* a model's weights in packed_type (gemm.c); NULL: none */
    enum clf_gemm_weights packed_type;
    struct clf_dnnl *dnnl;               /* int8/bfloat16 GEMMs' packed weights (gemm_dnnl.c); NULL: none */
    struct clf_half *half;               /* float16 GEMMs' half weights (gemm_half.c); NULL: none */
    struct clf_dnnl_f32 *dnnl_f32;       /* large float32 GEMMs' primitives (gemm_dnnl_f32.c); NULL: none yet */
};

_Static_assert(offsetof(struct clf_ctx, error) == 0, "base/status.c reads a context's message at its start");

#endif
