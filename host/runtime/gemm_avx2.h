/* gemm_avx2.h: what clformer's two AVX2 kernels share (gemm_i8.c's int8,
 * gemm_f32.c's float32): whether this CPU runs them, and the store of one
 * row's 16 columns of a panel, the ReLU applied when asked and the last
 * panel's missing columns left unwritten. */
#ifndef CLF_RUNTIME_GEMM_AVX2_H
#define CLF_RUNTIME_GEMM_AVX2_H

#include <stdbool.h>
#include <stddef.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#define CLF_AVX2 __attribute__((target("avx2,fma")))

/* Whether this CPU runs the kernels: AVX2 and FMA. */
static inline bool clf_avx2_kernels_run(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* c[0..cols) (cols ≤ 16) = v0 | v1, each clamped at 0 first when relu. */
CLF_AVX2 static inline void clf_avx2_store16(float *c, __m256 v0, __m256 v1, size_t cols, bool relu)
{
    if (relu) {
        v0 = _mm256_max_ps(v0, _mm256_setzero_ps());
        v1 = _mm256_max_ps(v1, _mm256_setzero_ps());
    }
    if (cols == 16) {
        _mm256_storeu_ps(c, v0);
        _mm256_storeu_ps(c + 8, v1);
    } else {
        float tmp[16];
        _mm256_storeu_ps(tmp, v0);
        _mm256_storeu_ps(tmp + 8, v1);
        memcpy(c, tmp, cols * sizeof *c);
    }
}

#else

static inline bool clf_avx2_kernels_run(void) { return false; }

#endif
#endif
