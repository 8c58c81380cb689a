/* peak.cl: probes of the device's roofs for `clformer bench peak`.
 *   peak_fma    out (items): each work-item runs `iters` rounds of 8
 *               independent float8 multiply-adds (128 FLOP a round) on
 *               values held in registers, then writes their sum so that the
 *               compiler cannot drop the loop. Explicit float8 fills a CPU's
 *               SIMD lanes whether or not the compiler vectorizes across
 *               work-items (on PoCL it did not: scalar chains ran several
 *               times slower); 8 chains hide an FMA's latency (2 ports x 4
 *               cycles on x86); a GPU splits the vectors into 64 registers.
 *               mad() lets the compiler use the fused or the fastest form,
 *               as clpeak does.
 *   peak_triad  a (n) = b + s·c, STREAM's triad: two float streams read,
 *               one written, float4 a work-item (n/4 items), the
 *               bandwidth a kernel of ours reaches, beside the copy's
 *               (clEnqueueCopyBuffer, the driver's own).
 *   peak_empty  does nothing: its enqueue and completion are the launch
 *               latency. */
#include "common.h"

__kernel void peak_fma(__global float *out, float m, float k, uint iters)
{
    float8 x = (float8)((float)get_global_id(0) * 1e-7f) + (float8)(0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f);
    float8 x0 = x, x1 = x + 1.0f, x2 = x + 2.0f, x3 = x + 3.0f, x4 = x + 4.0f, x5 = x + 5.0f, x6 = x + 6.0f,
           x7 = x + 7.0f;
    float8 mm = (float8)m, kk = (float8)k;
    for (uint i = 0; i < iters; i++) {
        x0 = mad(x0, mm, kk); x1 = mad(x1, mm, kk); x2 = mad(x2, mm, kk); x3 = mad(x3, mm, kk);
        x4 = mad(x4, mm, kk); x5 = mad(x5, mm, kk); x6 = mad(x6, mm, kk); x7 = mad(x7, mm, kk);
    }
    float8 s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    out[get_global_id(0)] = ((s.s0 + s.s1) + (s.s2 + s.s3)) + ((s.s4 + s.s5) + (s.s6 + s.s7));
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
