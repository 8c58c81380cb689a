/* gemm_paths.h: what gemm.c's dispatcher and the GEMM paths behind it
 * share, inside the runtime: the host BLAS path (gemm_host.c), oneDNN's
 * float32 (gemm_dnnl_f32.c), int8 and bfloat16 (gemm_dnnl.c) and
 * CLBlast's half (gemm_half.c) paths, each with its support check, set-up
 * and release, and below all of them gemm_common.c's lock around CLBlast,
 * its status names, the BLAS threads and the cache of packed B views.
 * Layers above the runtime use gemm_internal.h instead. */
#ifndef CLF_RUNTIME_GEMM_PATHS_H
#define CLF_RUNTIME_GEMM_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#include "clformer/advanced/runtime.h"
#include "gemm_internal.h"

/* gemm_host.c: the host-BLAS backend of clf_gemm and clf_gemm_batched, on
 * arguments gemm.c has already checked; and CLF_BLAS_THREADS, applied by
 * clf_ctx_init (a malformed value is CLF_ERR_ARG, message in the
 * per-thread buffer). */
clf_status clf_gemm_host(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha, const struct clf_mat *a,
                         const struct clf_mat *b, float beta, const struct clf_mat *c, size_t batch,
                         const struct clf_mat *bias);
clf_status clf_blas_threads_apply(enum clf_gemm_backend b);
/* CLF_BLAS_THREADS's count, 0 when unset, -1 when malformed (gemm_common.c). */
long clf_blas_threads_setting(void);
/* gemm_common.c: the process-wide lock every call into CLBlast holds
 * (gemm_common.c says why). */
void clf_blast_lock(void);
void clf_blast_unlock(void);
/* CLBlast's status s (a CLBlastStatusCode) of a call named what: CLF_OK,
 * or the mapped clf_status with the code named in the message. */
clf_status clf_blast_status(clf_ctx_t *ctx, int s, const char *what, size_t m, size_t n, size_t k, size_t batch);

/* gemm.c, gemm_common.c: whether a GEMM goes to the path of the model's
 * weights' type (gemm_internal.h's clf_gemm_weights_set), and the release
 * of what those paths packed (clf_ctx_free). */
bool clf_gemm_packed_takes(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b, float alpha,
                           float beta);
void clf_gemm_packed_free(clf_ctx_t *ctx);
/* gemm_common.c: how the types' paths find the copy they keep of a B view: its
 * key (B's offset and row length, orientation, k×n) opens each kept item,
 * items of `size` bytes in an array grown by doubling. */
struct clf_view_key {
    size_t offset, ld, k, n;
    bool trans;
};
struct clf_view_key clf_view_key_of(const struct clf_mat *b, size_t k, size_t n);
/* The one of n items keyed `key`, else NULL. */
void *clf_view_find(void *items, size_t n, size_t size, struct clf_view_key key);
/* items with room for one more after n (*cap grown, items moved): NULL
 * when out of host memory, items left as they were. */
void *clf_view_room(void *items, size_t n, size_t *cap, size_t size);

/* gemm_dnnl.c: int8 and bfloat16 through oneDNN on the host backend
 * (gemm_internal.h declares what the model asks of it). */
clf_status clf_gemm_dnnl_supports(const struct clf_device_info *di, enum clf_gemm_weights t, char *why, size_t n);
clf_status clf_gemm_dnnl_init(clf_ctx_t *ctx, enum clf_gemm_weights t);
clf_status clf_gemm_dnnl(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                         const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c, bool relu);
void clf_gemm_dnnl_free(clf_ctx_t *ctx);

/* gemm_dnnl_f32.c: a host-backend GEMM on resolved pointers: C (m×n, ldc)
 * = alpha·op(A)·op(B) + beta·C, plus a row of bias when bias is not NULL;
 * op(A) is m×k (A k×m, lda, when ta), op(B) k×n (B n×k, ldb, when tb). */
struct clf_gemm_ptrs {
    size_t m, n, k, lda, ldb, ldc;
    bool ta, tb;
    float alpha, beta;
    const float *a, *b, *bias;
    float *c;
};
/* Whether a GEMM goes to oneDNN's float32 matmul instead of the host BLAS
 * (the file's comment says when and why); then clf_gemm_dnnl_f32 runs it. */
bool clf_gemm_dnnl_f32_takes(const clf_ctx_t *ctx, size_t m, size_t n, size_t k, size_t batch, float alpha,
                             bool bias);
clf_status clf_gemm_dnnl_f32(clf_ctx_t *ctx, const struct clf_gemm_ptrs *g);
void clf_gemm_dnnl_f32_free(clf_ctx_t *ctx);

/* gemm_half.c: float16 on the device, for devices with cl_khr_fp16, on
 * either backend: weights converted to half at first use, activations per
 * call, CLBlast's Hgemm, back to float32 with the bias. */
clf_status clf_gemm_half_supports(const struct clf_device_info *di, char *why, size_t n);
clf_status clf_gemm_half_init(clf_ctx_t *ctx);
clf_status clf_gemm_half(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                         const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c);
void clf_gemm_half_free(clf_ctx_t *ctx);

/* A GEMM operand as stored: op(X) is r×c, so X is c×r when transposed.
 * end is one past the last float of its last matrix (batch of them). */
struct clf_mat_extent {
    size_t rows, cols, end;
};
static inline struct clf_mat_extent clf_mat_extent(const struct clf_mat *x, size_t r, size_t c, size_t batch)
{
    struct clf_mat_extent e = {x->trans ? c : r, x->trans ? r : c, 0};
    e.end = x->offset + (batch - 1) * x->stride + (e.rows - 1) * x->ld + e.cols;
    return e;
}

#endif
