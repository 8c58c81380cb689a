/* gemm_f32.h: our own float32 GEMM kernel on packed weights (gemm_f32.c),
 * which gemm_dnnl.c runs for float32 decoding (CLF_GEMM_W_F32P) where
 * oneDNN's effective ISA has AVX2 but not AVX-512: oneDNN 2.6 has no
 * brgemm matmul below avx512_core, and its gemm:jit repacks the weights
 * on every call. */
#ifndef CLF_RUNTIME_GEMM_F32_H
#define CLF_RUNTIME_GEMM_F32_H

#include <stdbool.h>
#include <stddef.h>

/* Where it runs: clf_avx2_kernels_run (gemm_avx2.h). */
size_t clf_f32_packed_floats(size_t k, size_t n);
/* dst (clf_f32_packed_floats) from w, a plain row-major (k×n) array */
void clf_f32_pack(float *dst, const float *w, size_t k, size_t n);
/* C (m×n, ldc) = A (m×k, lda) · W + bias_j (ReLU after when relu); bias
 * may be NULL; threads ≥ 1 */
void clf_f32_gemm(float *C, size_t ldc, const float *A, size_t lda, const float *packed, const float *bias, size_t m,
                  size_t n, size_t k, bool relu, int threads);

#endif
