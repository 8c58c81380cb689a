/* philox.h: Philox4x32-10 (Salmon et al., SC'11), the counter-based
 * generator behind dropout. The same text compiles as OpenCL C (included by
 * kernels) and as C11 (host/ops/philox.h includes it for the references),
 * so device and host masks agree bit for bit.
 *
 * Element i of a tensor with dropout descriptor (seed, step, stream) reads
 * word i%4 of the block at counter {i/4, i/2^34, stream, step}, key
 * {seed lo, seed hi}; it is kept when u = (word >> 8)·2^-24 >= p. */
#ifndef CLF_PHILOX_H
#define CLF_PHILOX_H

#ifdef __OPENCL_VERSION__
typedef uint clf_u32;
typedef ulong clf_u64;
#define CLF_PHILOX_FN static inline
#define CLF_MULHI(a, b) mul_hi((a), (b))
#else
#include <stdint.h>
typedef uint32_t clf_u32;
typedef uint64_t clf_u64;
#define CLF_PHILOX_FN static inline
#define CLF_MULHI(a, b) ((clf_u32)(((clf_u64)(a) * (clf_u64)(b)) >> 32))
#endif

/* One Philox4x32-10 block; out[0..3] receive the four words. */
CLF_PHILOX_FN void clf_philox4x32_10(clf_u32 out[4], clf_u32 c0, clf_u32 c1, clf_u32 c2, clf_u32 c3,
                                     clf_u32 k0, clf_u32 k1)
{
    for (int r = 0; r < 10; r++) {
        clf_u32 hi0 = CLF_MULHI(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        clf_u32 hi1 = CLF_MULHI(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The uniform in [0, 1) that decides element i's fate (exact in float). */
CLF_PHILOX_FN float clf_philox_uniform(clf_u64 i, clf_u32 seed_lo, clf_u32 seed_hi, clf_u32 stream,
                                       clf_u32 step)
{
    clf_u32 w[4];
    clf_philox4x32_10(w, (clf_u32)(i >> 2), (clf_u32)(i >> 34), stream, step, seed_lo, seed_hi);
    return (float)(w[i & 3] >> 8) * (1.0f / 16777216.0f);
}

/* dropout's factor for element i: 0 when dropped, scale when kept. */
CLF_PHILOX_FN float clf_dropout_factor(clf_u64 i, float p, float scale, clf_u32 seed_lo, clf_u32 seed_hi,
                                       clf_u32 stream, clf_u32 step)
{
    if (p <= 0.0f)
        return 1.0f;
    return clf_philox_uniform(i, seed_lo, seed_hi, stream, step) >= p ? scale : 0.0f;
}

/* The factors of the four elements 4·blk .. 4·blk+3 from one block: the
 * same values clf_dropout_factor gives one at a time. */
CLF_PHILOX_FN void clf_dropout_factors4(float f[4], clf_u64 blk, float p, float scale, clf_u32 seed_lo,
                                        clf_u32 seed_hi, clf_u32 stream, clf_u32 step)
{
    if (p <= 0.0f) {
        f[0] = f[1] = f[2] = f[3] = 1.0f;
        return;
    }
    clf_u32 w[4];
    clf_philox4x32_10(w, (clf_u32)blk, (clf_u32)(blk >> 32), stream, step, seed_lo, seed_hi);
    for (int k = 0; k < 4; k++)
        f[k] = (float)(w[k] >> 8) * (1.0f / 16777216.0f) >= p ? scale : 0.0f;
}

#endif
