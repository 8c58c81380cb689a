/* ffn.cl: the position-wise FFN's fused elementwise steps on hidden
 * (rows, dff), around the two GEMMs the launcher runs. ACT (a -D option)
 * picks the activation: 0 ReLU, 1 SiLU (swish: z·σ(z)), 2 GELU (exact:
 * z·Φ(z) = z/2·(1 + erf(z/√2)), as PyTorch's and transformers' "gelu").
 *   ffn_act    a = dropout(act(h + b1[j])); ReLU runs it in place (a = h),
 *              the others keep h (x·W1, the bias not added) for backward
 *   ffn_dact   ReLU: h = (h > 0) ? dh·scale : 0, h the forward's output
 *              (h > 0 exactly where the unit passed ReLU and dropout)
 *   ffn_dact_z SiLU, GELU: h = dh·dropout'·act'(h + b1[j]), h the forward's
 *              pre-activation without its bias
 * dh (rows, dff) is dy·W2ᵀ. */
#include "common.h"
#include "dropout.h"

#ifndef ACT
#define ACT 0
#endif

#define RSQRT2 0.70710678118654752f
#define RSQRT2PI 0.39894228040143268f

static inline float act(float z)
{
#if ACT == 1
    return z / (1.0f + exp(-z));
#elif ACT == 2
    return 0.5f * z * (1.0f + erf(z * RSQRT2));
#else
    return fmax(z, 0.0f);
#endif
}

/* act'(z) for SiLU and GELU */
static inline float dact(float z)
{
#if ACT == 1
    float s = 1.0f / (1.0f + exp(-z));
    return s * (1.0f + z * (1.0f - s));
#else
    return 0.5f * (1.0f + erf(z * RSQRT2)) + z * RSQRT2PI * exp(-0.5f * z * z);
#endif
}

/* b1[j], b1[j+1], b1[j+2], b1[j+3] with the columns wrapping at dff (the
 * next row's first columns): one vload4 unless the four cross a row's end */
static inline float4 bias4(__global const float *b1, uint j, uint dff)
{
    if (j + 4 <= dff)
        return vload4(0, b1 + j);
    float4 v;
    v.x = b1[j];
    j = j + 1 == dff ? 0 : j + 1;
    v.y = b1[j];
    j = j + 1 == dff ? 0 : j + 1;
    v.z = b1[j];
    j = j + 1 == dff ? 0 : j + 1;
    v.w = b1[j];
    return v;
}

/* act on each component: the scalar function, so that the vector path's
 * results are the scalar tail's bits (a vector exp or erf may round
 * differently) */
static inline float4 act4(float4 z)
{
    return (float4)(act(z.x), act(z.y), act(z.z), act(z.w));
}

static inline float4 dact4(float4 z)
{
    return (float4)(dact(z.x), dact(z.y), dact(z.z), dact(z.w));
}

/* ffn_act on the four elements of block blk, j = column of its first */
static inline void act_block(__global float *a, __global const float *h, __global const float *b1, uint blk,
                             uint n, uint dff, uint j, DROP_PARAMS)
{
    clf_factors4 f = clf_dropout_factors4((ulong)blk, DROP_ARGS);
    uint i0 = 4 * blk;
    if (i0 + 4 <= n) {
        float4 z = vload4(0, h + i0) + bias4(b1, j, dff);
        vstore4(act4(z) * (float4)(f.f0, f.f1, f.f2, f.f3), 0, a + i0);
        return;
    }
    for (uint k = 0; i0 + k < n; k++) {
        uint i = i0 + k;
        a[i] = act(h[i] + b1[j]) * clf_factors4_at(f, k);
        j = j + 1 == dff ? 0 : j + 1;
    }
}

/* the column four on from column j */
static inline uint next4(uint j, uint dff)
{
    j += 4;
    return j < dff ? j : j % dff;
}

/* 32 consecutive elements per work-item: eight Philox blocks, drawn at once
 * as SIMD lanes (philox.h) unless the eight run past n, each read and
 * written with vload4/vstore4 (which need only float alignment, so any
 * offset works). One division per item: CPUs have no vector integer
 * division. a may be h (in place). */
#define ACT_STEP(l)                                                                                                   \
    vstore4(act4(vload4(l, hh) + bias4(bb, j, dff)) * CLF_FACTORS4X8_AT(f, l), l, aa);                              \
    j = next4(j, dff);
__kernel void ffn_act(__global float *a, uint ao, __global const float *h, uint ho, __global const float *b1,
                      uint bo, uint n, uint dff, DROP_PARAMS)
{
    uint blk = 8 * get_global_id(0), i0 = 4 * blk;
    if (i0 >= n)
        return;
    uint j = i0 % dff;
    if (i0 + 32 <= n) {
        clf_factors4x8 f = clf_dropout_factors4x8((ulong)blk, DROP_ARGS);
        __global float *aa = a + ao + i0;
        __global const float *hh = h + ho + i0, *bb = b1 + bo;
        ACT_STEP(0) ACT_STEP(1) ACT_STEP(2) ACT_STEP(3) ACT_STEP(4) ACT_STEP(5) ACT_STEP(6) ACT_STEP(7)
        return;
    }
    for (; 4 * blk < n; blk++) {
        act_block(a + ao, h + ho, b1 + bo, blk, n, dff, j, DROP_ARGS);
        j = next4(j, dff);
    }
}
#undef ACT_STEP

__kernel void ffn_dact(__global float *h, uint ho, __global const float *dh, uint n, float scale)
{
    uint i = get_global_id(0);
    if (i < n)
        h[ho + i] = h[ho + i] > 0.0f ? dh[i] * scale : 0.0f;
}

#if ACT != 0
__kernel void ffn_dact_z(__global float *h, uint ho, __global const float *dh, __global const float *b1, uint bo,
                         uint n, uint dff, float p, float scale, uint seed_lo, uint seed_hi, uint stream, uint step)
{
    uint b = get_global_id(0), i0 = 4 * b;
    if (i0 >= n)
        return;
    clf_factors4 f = clf_dropout_factors4((ulong)b, p, scale, seed_lo, seed_hi, stream, step);
    uint j = i0 % dff;
    if (i0 + 4 <= n) {
        float4 z = vload4(0, h + ho + i0) + bias4(b1 + bo, j, dff);
        vstore4(vload4(0, dh + i0) * (float4)(f.f0, f.f1, f.f2, f.f3) * dact4(z), 0, h + ho + i0);
        return;
    }
    for (uint k = 0; i0 + k < n; k++) {
        uint i = i0 + k;
        h[ho + i] = dh[i] * clf_factors4_at(f, k) * dact(h[ho + i] + b1[bo + j]);
        j = j + 1 == dff ? 0 : j + 1;
    }
}
#endif
