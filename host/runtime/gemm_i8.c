/* gemm_i8.c: int8 products on x86 CPUs whose oneDNN cannot sum them
 * exactly (no VNNI: gemm_dnnl.c's probe), in AVX2, with 8-bit operands on
 * both sides and the dequantization, bias and ReLU fused into the store.
 *
 *   C (m×n, ldc) = (A_q · W_q)(i, j) · inv_sa_i · inv_sw_j + bias_j
 *   A_q (m×kp) s8, rows quantized by gemm_dnnl.c, zero past k;
 *   W_q packed here from a plain (k×n) s8 array, |q| ≤ 127.
 *
 * Why not oneDNN here: without VNNI its s8·s8 matmul shifts A to u8 (+128)
 * and sums each pair of u8·s8 products in 16 bits (vpmaddubsw), which
 * saturates at full scale (255·127·2 > 32767); it would need 7-bit weights.
 * This kernel moves the sign instead: vpmaddubsw(|a|, w·sign(a)) has
 * |a| ≤ 127 and |w·sign(a)| ≤ 127, so a pair sums to at most 2·127·127 =
 * 32258 and nothing saturates; vpmaddwd with ones then adds the pairs
 * into 32 bits. The sums are exact integers, the same as any order's.
 *
 * Layout: W in panels of NR = 16 columns; within a panel, for each group
 * of 4 consecutive k, the 16 columns' 4 bytes (64 bytes: two registers of
 * 8 columns). A micro-tile is MR = 4 rows × 16 columns, 8 accumulators. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_avx2.h"
#include "gemm_i8.h"

enum { NR = 16, MR = 4 };

#ifdef _OPENMP
#include <omp.h>
#endif

size_t clf_i8_kp(size_t k) { return (k + 3) & ~(size_t)3; }

size_t clf_i8_packed_bytes(size_t k, size_t n) { return ((n + NR - 1) / NR) * NR * clf_i8_kp(k); }

void clf_i8_pack(int8_t *dst, const int8_t *q, size_t k, size_t n)
{
    const size_t kp = clf_i8_kp(k), panels = (n + NR - 1) / NR;
    for (size_t p = 0; p < panels; p++)
        for (size_t g = 0; g < kp / 4; g++)
            for (size_t c = 0; c < NR; c++)
                for (size_t t = 0; t < 4; t++) {
                    const size_t kk = 4 * g + t, j = p * NR + c;
                    dst[((p * (kp / 4) + g) * NR + c) * 4 + t] = kk < k && j < n ? q[kk * n + j] : 0;
                }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AVX2 CLF_AVX2

/* One group of 4 k for one row: acc0/acc1 += (a's 4 bytes) · (w0, w1). */
#define ROW_STEP(a32, acc0, acc1)                                                                             \
    do {                                                                                                      \
        const __m256i a_ = _mm256_set1_epi32(a32);                                                            \
        const __m256i u_ = _mm256_abs_epi8(a_);                                                               \
        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_maddubs_epi16(u_, _mm256_sign_epi8(w0, a_)), one)); \
        acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_maddubs_epi16(u_, _mm256_sign_epi8(w1, a_)), one)); \
    } while (0)

/* Dequantize, add the bias, ReLU, store cols columns (≤ 16) of one row. */
AVX2 static inline void store_row(float *c, __m256i acc0, __m256i acc1, float inv_sa, const float *inv_sw,
                                  const float *bias, size_t cols, bool relu)
{
    const __m256 sa = _mm256_set1_ps(inv_sa);
    __m256 s0 = _mm256_mul_ps(sa, _mm256_loadu_ps(inv_sw)), s1 = _mm256_mul_ps(sa, _mm256_loadu_ps(inv_sw + 8));
    __m256 b0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
    __m256 b1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
    __m256 v0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc0), s0, b0);
    __m256 v1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc1), s1, b1);
    clf_avx2_store16(c, v0, v1, cols, relu);
}

/* Rows i0..i0+rows (rows ≤ MR) of panel p. inv_sw and bias here point at
 * the panel's first column and hold 16 values (padded by the caller). */
AVX2 static void tile(float *C, size_t ldc, const int8_t *qa, size_t kp, const float *inv_sa, const int8_t *w,
                      const float *inv_sw, const float *bias, size_t rows, size_t cols, bool relu)
{
    const __m256i one = _mm256_set1_epi16(1);
    const size_t groups = kp / 4;
    if (rows == MR) {
        __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
                c31 = c00;
        const int8_t *a0 = qa, *a1 = qa + kp, *a2 = qa + 2 * kp, *a3 = qa + 3 * kp;
        for (size_t g = 0; g < groups; g++) {
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)(w + g * 64));
            const __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + g * 64 + 32));
            int32_t x0, x1, x2, x3;
            memcpy(&x0, a0 + 4 * g, 4), memcpy(&x1, a1 + 4 * g, 4), memcpy(&x2, a2 + 4 * g, 4),
                memcpy(&x3, a3 + 4 * g, 4);
            ROW_STEP(x0, c00, c01);
            ROW_STEP(x1, c10, c11);
            ROW_STEP(x2, c20, c21);
            ROW_STEP(x3, c30, c31);
        }
        store_row(C, c00, c01, inv_sa[0], inv_sw, bias, cols, relu);
        store_row(C + ldc, c10, c11, inv_sa[1], inv_sw, bias, cols, relu);
        store_row(C + 2 * ldc, c20, c21, inv_sa[2], inv_sw, bias, cols, relu);
        store_row(C + 3 * ldc, c30, c31, inv_sa[3], inv_sw, bias, cols, relu);
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        __m256i c0 = _mm256_setzero_si256(), c1 = c0;
        const int8_t *a = qa + r * kp;
        for (size_t g = 0; g < groups; g++) {
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)(w + g * 64));
            const __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + g * 64 + 32));
            int32_t x;
            memcpy(&x, a + 4 * g, 4);
            ROW_STEP(x, c0, c1);
        }
        store_row(C + r * ldc, c0, c1, inv_sa[r], inv_sw, bias, cols, relu);
    }
}

/* One panel, every row. */
AVX2 static void panel(float *C, size_t ldc, const int8_t *qa, size_t kp, const float *inv_sa, const int8_t *w,
                       const float *inv_sw, const float *bias, size_t m, size_t cols, bool relu)
{
    float sw[NR] = {0}, bv[NR] = {0};  /* the last panel's columns padded */
    if (cols < NR) {
        memcpy(sw, inv_sw, cols * sizeof *sw);
        if (bias)
            memcpy(bv, bias, cols * sizeof *bv);
        inv_sw = sw;
        bias = bias ? bv : NULL;
    }
    for (size_t i = 0; i < m; i += MR)
        tile(C + i * ldc, ldc, qa + i * kp, kp, inv_sa + i, w, inv_sw, bias, m - i < MR ? m - i : MR, cols, relu);
}

void clf_i8_gemm(float *C, size_t ldc, const int8_t *qa, const float *inv_sa, const int8_t *packed,
                 const float *inv_sw, const float *bias, size_t m, size_t n, size_t k, bool relu, int threads)
{
    const size_t kp = clf_i8_kp(k), panels = (n + NR - 1) / NR;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
#else
    (void)threads;
#endif
    for (size_t p = 0; p < panels; p++) {
        const size_t j = p * NR, cols = n - j < NR ? n - j : NR;
        panel(C + j, ldc, qa, kp, inv_sa, packed + p * NR * kp, inv_sw + j, bias ? bias + j : NULL, m, cols, relu);
    }
}

#else

void clf_i8_gemm(float *C, size_t ldc, const int8_t *qa, const float *inv_sa, const int8_t *packed,
                 const float *inv_sw, const float *bias, size_t m, size_t n, size_t k, bool relu, int threads)
{
    (void)C, (void)ldc, (void)qa, (void)inv_sa, (void)packed, (void)inv_sw, (void)bias, (void)m, (void)n, (void)k,
        (void)relu, (void)threads;
}

#endif
