/* peak.cl: probes of the device's roofs for `clformer bench peak`.
 *   peak_fma    out (items): each work-item runs `iters` rounds of 8
 *               independent PEAK_T multiply-adds on vectors of PEAK_W
 *               lanes (16·PEAK_W FLOP a round) on values held in
 *               registers, then writes their sum (as a float) so that the
 *               compiler cannot drop the loop. PEAK_T is float (the
 *               default, float8: 128 FLOP a round), half (-DPEAK_FP16,
 *               half8: only built for a device with cl_khr_fp16) or double
 *               (-DPEAK_FP64, double4: cl_khr_fp64); each vector is 256
 *               bits but half's, so that 8 chains fit 16 AVX registers.
 *               Explicit vectors fill a CPU's SIMD lanes whether or not the
 *               compiler vectorizes across work-items (on PoCL it did not:
 *               scalar chains ran several times slower); 8 chains hide an
 *               FMA's latency (2 ports x 4 cycles on x86); a GPU splits the
 *               vectors into registers. mad() lets the compiler use the
 *               fused or the fastest form, as clpeak does.
 *   peak_triad  a (n) = b + s·c, STREAM's triad: two float streams read,
 *               one written, float4 a work-item (n/4 items), the
 *               bandwidth a kernel of ours reaches, beside the copy's
 *               (clEnqueueCopyBuffer, the driver's own).
 *   peak_empty  does nothing: its enqueue and completion are the launch
 *               latency. */
#include "common.h"

/* the optional precisions, each enabled only where the host asked for it
 * (host/ops/peak.c builds them only on a device with the extension) */
#if defined(PEAK_FP16)
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define PEAK_T half
#define PEAK_V half8
#define PEAK_W 8
#elif defined(PEAK_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define PEAK_T double
#define PEAK_V double4
#define PEAK_W 4
#endif
#ifndef PEAK_T
#define PEAK_T float
#define PEAK_V float8
#define PEAK_W 8
#endif

__kernel void peak_fma(__global float *out, float m, float k, uint iters)
{
#if PEAK_W == 8
    PEAK_V lanes = (PEAK_V)((PEAK_T)0.0f, (PEAK_T)0.1f, (PEAK_T)0.2f, (PEAK_T)0.3f, (PEAK_T)0.4f, (PEAK_T)0.5f,
                            (PEAK_T)0.6f, (PEAK_T)0.7f);
#else
    PEAK_V lanes = (PEAK_V)((PEAK_T)0.0f, (PEAK_T)0.1f, (PEAK_T)0.2f, (PEAK_T)0.3f);
#endif
    /* small starting values: half holds them, and every chain tends to
     * k / (1 - m), finite however long it runs */
    PEAK_V x = (PEAK_V)((PEAK_T)((float)(get_global_id(0) & 1023) * 1e-4f)) + lanes;
    PEAK_T one = (PEAK_T)1.0f;
    PEAK_V x0 = x, x1 = x + one, x2 = x + 2 * one, x3 = x + 3 * one, x4 = x + 4 * one, x5 = x + 5 * one,
           x6 = x + 6 * one, x7 = x + 7 * one;
    PEAK_V mm = (PEAK_V)((PEAK_T)m), kk = (PEAK_V)((PEAK_T)k);
    for (uint i = 0; i < iters; i++) {
        x0 = mad(x0, mm, kk); x1 = mad(x1, mm, kk); x2 = mad(x2, mm, kk); x3 = mad(x3, mm, kk);
        x4 = mad(x4, mm, kk); x5 = mad(x5, mm, kk); x6 = mad(x6, mm, kk); x7 = mad(x7, mm, kk);
    }
    PEAK_V s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
#if PEAK_W == 8
    out[get_global_id(0)] = (float)(((s.s0 + s.s1) + (s.s2 + s.s3)) + ((s.s4 + s.s5) + (s.s6 + s.s7)));
#else
    out[get_global_id(0)] = (float)((s.s0 + s.s1) + (s.s2 + s.s3));
#endif
}

__kernel void peak_triad(__global float4 *a, __global const float4 *b, __global const float4 *c, float s, uint n4)
{
    size_t i = get_global_id(0);
    if (i < n4)  /* the global size is rounded up to the work-group's */
        a[i] = b[i] + s * c[i];
}

__kernel void peak_empty(void)
{
}
