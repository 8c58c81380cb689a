/* ops_internal.h: what the op launchers of host/ops share: shape checks
 * that name the op, dropout arguments as kernels take them and work-group
 * sizing. An op's temporaries come from the context's scratch arena
 * (clf_scratch_get): CLF_SCRATCH_PART for the column sums below (an op
 * calling them must not hold it), CLF_SCRATCH_WIDE for an activation-sized
 * temporary (clf_gemm uses CLF_SCRATCH_GEMM). */
#ifndef CLF_OPS_INTERNAL_H
#define CLF_OPS_INTERNAL_H

#include "clformer.h"
#include "runtime/program.h"

/* The last dimension of t (its row length). */
static inline size_t clf_t_cols(const clf_tensor *t)
{
    return t->shape[t->ndim - 1];
}

/* Checks that t is an f32 tensor and its extent (offset + numel) fits 32-bit kernel
 * indexing; names op and the tensor's role in the message. */
clf_status clf_ops_check(clf_ctx_t *ctx, const char *op, const char *role, const clf_tensor *t);

/* Formats t's shape as "(a, b, c)" into buf (static per-thread storage is
 * avoided: the caller passes it). */
const char *clf_ops_shape(const clf_tensor *t, char *buf, size_t len);

/* Dropout as the kernels take it: p, scale, seed words, stream, step. */
struct clf_drop_args {
    float p, scale;
    cl_uint seed_lo, seed_hi, stream, step;
};
/* Validates p ∈ [0, 1) (NULL means no dropout) and fills out. */
clf_status clf_drop_args_make(clf_ctx_t *ctx, const char *op, const struct clf_dropout *d, struct clf_drop_args *out);
#define CLF_DROP_ARGS(a) CLF_ARG((a).p), CLF_ARG((a).scale), CLF_ARG((a).seed_lo), CLF_ARG((a).seed_hi), \
                         CLF_ARG((a).stream), CLF_ARG((a).step)

/* Gets kernel kname of file compiled with -DWG=w (plus `extra` options,
 * may be NULL), w the largest power of two ≤ want that device and kernel
 * allow, at most ROWS_WG (the tuning file's, else the table's: 1 on PoCL's
 * CPU device, 16 on other CPUs, none on GPUs; on CPUs the environment
 * variable CLF_OPS_CPU_WG overrides it, for tests); for kernels whose
 * local arrays are sized by WG. A kernel may have a shape of its own for
 * WG 1 (loss.cl, layernorm.cl, softmax.cl: float8 loops, no barrier). */
clf_status clf_ops_kernel_wg(clf_ctx_t *ctx, const char *file, const char *kname, size_t want, const char *extra,
                             cl_kernel *k, size_t *wg);

/* The smallest power of two ≥ n, at least 32 (fewer program variants;
 * short rows leave items idle), at most cap. */
size_t clf_ops_pow2(size_t n, size_t cap);

/* The two-stage column sum out (cols) += Σ_rows in (rows, cols): partial
 * sums over fixed chunks of rows (in scratch slot CLF_SCRATCH_PART), then
 * the chunks in order. Used by bias_backward and the FFN. */
/* Its pieces, for ops with their own first stage: the rows per chunk (and
 * the chunk count), and the second stage out (cols) += Σ_k part (nchunks, cols). */
size_t clf_ops_colsum_chunk(size_t rows, size_t *nchunks);
clf_status clf_ops_colsum_final(clf_ctx_t *ctx, cl_mem out, size_t out_off, cl_mem part, size_t cols,
                                size_t nchunks);
clf_status clf_ops_colsum(clf_ctx_t *ctx, const char *op, cl_mem out, size_t out_off, cl_mem in, size_t in_off,
                          size_t rows, size_t cols);

#endif
