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
#define CLF_PHILOX_FN static inline __attribute__((always_inline)) /* common.h's CLF_INLINE_FN: why */
#else
#include <stdint.h>
typedef uint32_t clf_u32;
typedef uint64_t clf_u64;
#define CLF_PHILOX_FN static inline
#endif

/* The ten rounds of Philox4x32-10 on counter words c0..c3 (lvalues) with
 * key k0, k1, written once for the one-block form below and the kernels'
 * eight-block form: U64 the 64-bit type of the products, WIDE and NARROW
 * the conversions to it and back (casts, or convert_ulong8 and
 * convert_uint8). The 32x32->64 products are whole 64-bit products, not
 * mul_hi: PoCL 3.1 runs mul_hi on uint unvectorised (residual + dropout
 * took 16 ms, then 2.9, in bench ops). */
#define CLF_PHILOX_ROUNDS(U64, WIDE, NARROW, c0, c1, c2, c3, k0, k1)                                \
    for (int r_ = 0; r_ < 10; r_++) {                                                               \
        U64 p0_ = WIDE(c0) * (U64)(0xD2511F53u);                                                    \
        U64 p1_ = WIDE(c2) * (U64)(0xCD9E8D57u);                                                    \
        c0 = NARROW(p1_ >> 32) ^ c1 ^ k0;                                                           \
        c1 = NARROW(p1_);                                                                           \
        c2 = NARROW(p0_ >> 32) ^ c3 ^ k1;                                                           \
        c3 = NARROW(p0_);                                                                           \
        k0 += 0x9E3779B9u;                                                                          \
        k1 += 0xBB67AE85u;                                                                          \
    }

/* word -> uniform in [0, 1), exact in float (TO_FLOAT: a cast or convert_float8) */
#define CLF_PHILOX_U01(w, TO_FLOAT) (TO_FLOAT((w) >> 8) * (1.0f / 16777216.0f))

/* Four words of a block, and four dropout factors: structs rather than
 * arrays, so that OpenCL compilers keep them in registers (PoCL cannot
 * vectorise work-items that index private arrays). */
typedef struct {
    clf_u32 w0, w1, w2, w3;
} clf_philox_block;
typedef struct {
    float f0, f1, f2, f3;
} clf_factors4;

/* One Philox4x32-10 block of counter (c0..c3) and key (k0, k1). */
CLF_PHILOX_FN clf_philox_block clf_philox4x32_10(clf_u32 c0, clf_u32 c1, clf_u32 c2, clf_u32 c3, clf_u32 k0,
                                                 clf_u32 k1)
{
    CLF_PHILOX_ROUNDS(clf_u64, (clf_u64), (clf_u32), c0, c1, c2, c3, k0, k1)
    clf_philox_block b = {c0, c1, c2, c3};
    return b;
}

/* word -> uniform in [0, 1), exact in float */
CLF_PHILOX_FN float clf_philox_u01(clf_u32 w)
{
    return CLF_PHILOX_U01(w, (float));
}

/* The factors (0 when dropped, scale when kept) of the four elements
 * 4·blk .. 4·blk+3, from one block. p <= 0 gives ones. */
CLF_PHILOX_FN clf_factors4 clf_dropout_factors4(clf_u64 blk, float p, float scale, clf_u32 seed_lo,
                                                clf_u32 seed_hi, clf_u32 stream, clf_u32 step)
{
    clf_factors4 f = {1.0f, 1.0f, 1.0f, 1.0f};
    if (p > 0.0f) {
        clf_philox_block b = clf_philox4x32_10((clf_u32)blk, (clf_u32)(blk >> 32), stream, step, seed_lo, seed_hi);
        f.f0 = clf_philox_u01(b.w0) >= p ? scale : 0.0f;
        f.f1 = clf_philox_u01(b.w1) >= p ? scale : 0.0f;
        f.f2 = clf_philox_u01(b.w2) >= p ? scale : 0.0f;
        f.f3 = clf_philox_u01(b.w3) >= p ? scale : 0.0f;
    }
    return f;
}

/* The factor of element k (0..3) of a block's four. Two bit tests rather
 * than the chain k == 0 ? .. : k == 1 ? ..: Oclgrind 21.10 runs the chain
 * wrongly when k varies inside a loop (embed_bwd_table with d = 7 picked
 * the wrong words for k = 0 and 1), and the two forms cost the same. */
CLF_PHILOX_FN float clf_factors4_at(clf_factors4 f, clf_u32 k)
{
    return (k & 2u) ? ((k & 1u) ? f.f3 : f.f2) : ((k & 1u) ? f.f1 : f.f0);
}

/* dropout's factor for element i alone (the references use it). */
CLF_PHILOX_FN float clf_dropout_factor(clf_u64 i, float p, float scale, clf_u32 seed_lo, clf_u32 seed_hi,
                                       clf_u32 stream, clf_u32 step)
{
    return clf_factors4_at(clf_dropout_factors4(i >> 2, p, scale, seed_lo, seed_hi, stream, step), (clf_u32)(i & 3));
}

#ifdef __OPENCL_VERSION__
/* Eight blocks at once (kernels only), lane l holding block blk0 + l: the
 * same rounds as clf_philox4x32_10 on ulong8/uint8 lanes. PoCL 3.1 does
 * not vectorise the one-block form across work-items (one block per item
 * ran at ~22 ns on AVX-512); this one it runs as SIMD. */
typedef struct {
    float8 f0, f1, f2, f3; /* word k's factor of each of the eight blocks */
} clf_factors4x8;

CLF_PHILOX_FN float8 clf_dropout_word8(uint8 w, float p, float scale)
{
    return select((float8)(0.0f), (float8)(scale), CLF_PHILOX_U01(w, convert_float8) >= (float8)(p));
}

CLF_PHILOX_FN clf_factors4x8 clf_dropout_factors4x8(ulong blk0, float p, float scale, uint seed_lo, uint seed_hi,
                                                    uint stream, uint step)
{
    clf_factors4x8 f = {(float8)(1.0f), (float8)(1.0f), (float8)(1.0f), (float8)(1.0f)};
    if (p > 0.0f) {
        ulong8 blk = (ulong8)(blk0) + (ulong8)(0, 1, 2, 3, 4, 5, 6, 7);
        uint8 c0 = convert_uint8(blk), c1 = convert_uint8(blk >> 32), c2 = (uint8)(stream), c3 = (uint8)(step);
        uint k0 = seed_lo, k1 = seed_hi;
        CLF_PHILOX_ROUNDS(ulong8, convert_ulong8, convert_uint8, c0, c1, c2, c3, k0, k1)
        f.f0 = clf_dropout_word8(c0, p, scale);
        f.f1 = clf_dropout_word8(c1, p, scale);
        f.f2 = clf_dropout_word8(c2, p, scale);
        f.f3 = clf_dropout_word8(c3, p, scale);
    }
    return f;
}

/* the four factors of block l (a literal 0..7) of eight */
#define CLF_FACTORS4X8_AT(f, l) ((float4)((f).f0.s##l, (f).f1.s##l, (f).f2.s##l, (f).f3.s##l))
#endif

#endif
