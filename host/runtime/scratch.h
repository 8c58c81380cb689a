/* scratch.h: the scratch arena (scratch.c), a context's grow-only
 * temporaries that ops borrow instead of creating buffers on every step:
 * its slots, a slot's buffer, and the arena's count and release. */
#ifndef CLF_RUNTIME_SCRATCH_H
#define CLF_RUNTIME_SCRATCH_H

#include <stddef.h>

#include "clformer/advanced/runtime.h"

/* The scratch arena's slots (scratch.c). Each is one grow-only buffer; an
 * op holds a slot only while it enqueues its users, and two temporaries
 * alive at once (in one op and the ops it calls) take two slots. */
enum clf_scratch_slot {
    CLF_SCRATCH_GEMM,   /* CLBlast's temporary matrices: inside clf_gemm only */
    CLF_SCRATCH_PART,   /* partial sums of a two-stage reduction (column sums, the loss) */
    CLF_SCRATCH_PART2,  /* a second one beside it (layer norm's gain and bias) */
    CLF_SCRATCH_WIDE,   /* an op's activation-sized temporary (FFN's dh, sinusoids, row lists) */
    CLF_SCRATCH_HALF_A, /* float16 GEMMs' A and C in half: inside clf_gemm only (gemm_half.c) */
    CLF_SCRATCH_HALF_C,
    CLF_SCRATCH_SLOTS
};

struct clf_scratch {
    cl_mem buf;
    size_t bytes;
};

/* A buffer of at least `bytes` for slot, kept by ctx: the same one on
 * every call once it is large enough (grown by half again at least). */
clf_status clf_scratch_get(clf_ctx_t *ctx, enum clf_scratch_slot slot, size_t bytes, cl_mem *buf);

/* How many buffers the arena has created since clf_ctx_init (for tests). */
unsigned clf_scratch_allocs(const clf_ctx_t *ctx);

/* Releases the arena (clf_ctx_free). */
void clf_scratch_free(clf_ctx_t *ctx);

#endif
