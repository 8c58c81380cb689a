/* adam.cl: Adam over one flat buffer of n floats (params, m, v, grads),
 * with optional global-norm clipping computed on the device.
 *   adam_sq_part  part (G) = Σ g² over a fixed grid-stride slice per group
 *   adam_norm     norm (1) = sqrt(Σ part), one work-group, fixed order
 *   adam_update   as torch.optim.Adam: g·clip (+ wd·p), m = m + (1-b1)(g - m),
 *                 v = b2·v + (1-b2)·g², p -= (lr/bc1)·m / (sqrt(v)/sqrt(bc2) + eps)
 * The clip factor min(1, clip/(norm + 1e-6)) is read by every work-item
 * from the device, so no host round trip is needed. */
#include "common.h"

/* CONTIG 1: each work-item sums one contiguous slice (CPUs, where a
 * work-item's loop runs alone and strides would miss the cache); 0: a grid
 * stride, so a work-group's loads coalesce (GPUs). Either order is fixed. */
#ifndef CONTIG
#define CONTIG 0
#endif

__kernel void adam_sq_part(__global float *part, uint po, __global const float *g, uint go, uint n)
{
    __local float red[WG];
    uint total = get_num_groups(0) * WG;
    float s = 0.0f;
#if CONTIG
    uint chunk = (n + total - 1) / total, i0 = min(n, (uint)get_global_id(0) * chunk), i1 = min(n, i0 + chunk);
    for (uint i = i0; i < i1; i++) {
        float x = g[go + i];
        s += x * x;
    }
#else
    for (uint i = get_global_id(0); i < n; i += total) {
        float x = g[go + i];
        s += x * x;
    }
#endif
    s = wg_sum(red, s);
    if (get_local_id(0) == 0)
        part[po + get_group_id(0)] = s;
}

__kernel void adam_norm(__global float *out, uint oo, __global const float *part, uint po, uint groups)
{
    __local float red[WG];
    float s = 0.0f;
    for (uint i = get_local_id(0); i < groups; i += WG)
        s += part[po + i];
    s = wg_sum(red, s);
    if (get_local_id(0) == 0)
        out[oo] = sqrt(s);
}

__kernel void adam_update(__global float *p, uint po, __global float *m, uint mo, __global float *v, uint vo,
                          __global const float *g, uint go, uint n, __global const float *norm, uint no,
                          float clip, float lr_bc1, float b1, float b2, float eps, float wd, float bc2_sqrt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float f = 1.0f;
    if (clip > 0.0f)
        f = fmin(clip / (norm[no] + 1e-6f), 1.0f);
    float pi = p[po + i], gi = g[go + i] * f;
    if (wd != 0.0f)
        gi += wd * pi;
    float mi = m[mo + i], vi = v[vo + i];
    mi += (1.0f - b1) * (gi - mi);
    vi = b2 * vi + (1.0f - b2) * gi * gi;
    m[mo + i] = mi;
    v[vo + i] = vi;
    p[po + i] = pi - lr_bc1 * (mi / (sqrt(vi) / bc2_sqrt + eps));
}
