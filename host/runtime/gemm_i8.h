/* gemm_i8.h: our own int8 GEMM kernel (gemm_i8.c), which gemm_dnnl.c runs
 * where oneDNN's int8 products would saturate: packing 8-bit weights and
 * the product with dequantization, bias and ReLU fused into the store. */
#ifndef CLF_RUNTIME_GEMM_I8_H
#define CLF_RUNTIME_GEMM_I8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* gemm_i8.c: int8 products in AVX2 with 8-bit operands, exact sums (no
 * 16-bit saturation), dequantization, bias and ReLU fused into the store;
 * for CPUs whose oneDNN sums int8 pairs in 16 bits (where it runs:
 * clf_avx2_kernels_run, gemm_avx2.h). */
size_t clf_i8_kp(size_t k);                   /* k rounded up to 4 */
size_t clf_i8_packed_bytes(size_t k, size_t n);
/* dst (clf_i8_packed_bytes) from q, a plain row-major (k×n) s8 array */
void clf_i8_pack(int8_t *dst, const int8_t *q, size_t k, size_t n);
/* C (m×n, ldc) = qa·W · inv_sa_i · inv_sw_j + bias_j (ReLU after when relu);
 * qa (m×kp) s8 with zeros past k; bias may be NULL; threads ≥ 1 */
void clf_i8_gemm(float *C, size_t ldc, const int8_t *qa, const float *inv_sa, const int8_t *packed,
                 const float *inv_sw, const float *bias, size_t m, size_t n, size_t k, bool relu, int threads);

#endif
