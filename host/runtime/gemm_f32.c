/* gemm_f32.c: float32 products on packed weights in AVX2 + FMA, for
 * float32 decoding (CLF_GEMM_W_F32P) on CPUs where oneDNN's effective ISA
 * stops below avx512_core: there oneDNN 2.6 has no brgemm matmul, and its
 * gemm:jit repacks the weights on every call (ONEDNN_VERBOSE shows
 * matmul,gemm:jit), which is most of a decoding step's GEMM time.
 *
 *   C (m×n, ldc) = A (m×k, lda) · W (k×n) + bias_j, ReLU after when asked
 *
 * Layout: W in panels of NR = 16 columns, k-major within a panel (16
 * floats per k: two ymm registers), the last panel's missing columns
 * zeros. A micro-tile is MR = 6 rows × 16 columns: 12 accumulators, 2
 * loads of W and 1 broadcast of A fill the 16 ymm registers; the rows
 * left over run as tiles of 4, 2 and 1. Each output is summed in k order
 * with FMAs (one rounding per k), so results differ from oneDNN's (other
 * orders, other blockings) in the last bits only. */
#include <stdlib.h>
#include <string.h>

#include "gemm_avx2.h"
#include "gemm_f32.h"

enum { NR = 16, MR = 6 };

#ifdef _OPENMP
#include <omp.h>
#endif

size_t clf_f32_packed_floats(size_t k, size_t n) { return ((n + NR - 1) / NR) * NR * k; }

void clf_f32_pack(float *dst, const float *w, size_t k, size_t n)
{
    const size_t panels = (n + NR - 1) / NR;
    for (size_t p = 0; p < panels; p++)
        for (size_t kk = 0; kk < k; kk++)
            for (size_t c = 0; c < NR; c++) {
                const size_t j = p * NR + c;
                dst[(p * k + kk) * NR + c] = j < n ? w[kk * n + j] : 0.0f;
            }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AVX2 CLF_AVX2

/* Adds the bias, applies the ReLU and stores cols columns (≤ 16) of one
 * row. bias points at the panel's first column and holds 16 values
 * (padded by the caller), or is NULL. */
AVX2 static inline void store_row(float *c, __m256 v0, __m256 v1, const float *bias, size_t cols, bool relu)
{
    if (bias) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(bias));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(bias + 8));
    }
    clf_avx2_store16(c, v0, v1, cols, relu);
}

/* ROWS rows of A (lda apart) against one panel w (k×16). The rows are
 * spelled out (R0..R5), not looped over: GCC at -O2 kept a looped
 * accumulator array in memory, a store and a load around every FMA. */
#define ACC(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = c##r##0
#define FMA(r)                                                                                                \
    do {                                                                                                      \
        const __m256 a_ = _mm256_broadcast_ss(A + (r) * lda + kk);                                            \
        c##r##0 = _mm256_fmadd_ps(a_, w0, c##r##0);                                                           \
        c##r##1 = _mm256_fmadd_ps(a_, w1, c##r##1);                                                           \
    } while (0)
#define STORE(r) store_row(C + (r) * ldc, c##r##0, c##r##1, bias, cols, relu)
#define TILE(ROWS, EACH)                                                                                      \
    AVX2 static void tile##ROWS(float *C, size_t ldc, const float *A, size_t lda, const float *w, size_t k,   \
                                const float *bias, size_t cols, bool relu)                                    \
    {                                                                                                         \
        EACH(ACC, ;);                                                                                         \
        for (size_t kk = 0; kk < k; kk++) {                                                                   \
            const __m256 w0 = _mm256_loadu_ps(w + kk * NR), w1 = _mm256_loadu_ps(w + kk * NR + 8);            \
            EACH(FMA, ;);                                                                                     \
        }                                                                                                     \
        EACH(STORE, ;);                                                                                       \
    }
#define ROWS6(X, S) X(0) S X(1) S X(2) S X(3) S X(4) S X(5)
#define ROWS4(X, S) X(0) S X(1) S X(2) S X(3)
#define ROWS2(X, S) X(0) S X(1)
#define ROWS1(X, S) X(0)
TILE(6, ROWS6)
TILE(4, ROWS4)
TILE(2, ROWS2)
TILE(1, ROWS1)

/* One panel, every row. */
AVX2 static void panel(float *C, size_t ldc, const float *A, size_t lda, const float *w, size_t k, const float *bias,
                       size_t m, size_t cols, bool relu)
{
    float bv[NR] = {0};  /* the last panel's columns padded */
    if (bias && cols < NR) {
        memcpy(bv, bias, cols * sizeof *bv);
        bias = bv;
    }
    size_t i = 0;
    for (; i + MR <= m; i += MR)
        tile6(C + i * ldc, ldc, A + i * lda, lda, w, k, bias, cols, relu);
    if (m - i >= 4) {
        tile4(C + i * ldc, ldc, A + i * lda, lda, w, k, bias, cols, relu);
        i += 4;
    }
    if (m - i >= 2) {
        tile2(C + i * ldc, ldc, A + i * lda, lda, w, k, bias, cols, relu);
        i += 2;
    }
    if (m - i >= 1)
        tile1(C + i * ldc, ldc, A + i * lda, lda, w, k, bias, cols, relu);
}

void clf_f32_gemm(float *C, size_t ldc, const float *A, size_t lda, const float *packed, const float *bias, size_t m,
                  size_t n, size_t k, bool relu, int threads)
{
    const size_t panels = (n + NR - 1) / NR;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
#else
    (void)threads;
#endif
    for (size_t p = 0; p < panels; p++) {
        const size_t j = p * NR, cols = n - j < NR ? n - j : NR;
        panel(C + j, ldc, A, lda, packed + p * NR * k, k, bias ? bias + j : NULL, m, cols, relu);
    }
}

#else

void clf_f32_gemm(float *C, size_t ldc, const float *A, size_t lda, const float *packed, const float *bias, size_t m,
                  size_t n, size_t k, bool relu, int threads)
{
    (void)C, (void)ldc, (void)A, (void)lda, (void)packed, (void)bias, (void)m, (void)n, (void)k, (void)relu,
        (void)threads;
}

#endif
