/* ffn.cl: the position-wise FFN's fused elementwise steps on hidden
 * (rows, dff), around the two GEMMs the launcher runs.
 *   ffn_act  h = dropout(max(0, h + b1[j]))          forward, in place
 *   ffn_dact h = (h > 0) ? dh·scale : 0               backward: h is the
 *            forward's output, so h > 0 exactly where the unit passed ReLU
 *            and dropout; dh (rows, dff) is dy·W2ᵀ. */
#include "common.h"
#include "philox.h"

/* four consecutive elements per work-item: one Philox block */
__kernel void ffn_act(__global float *h, uint ho, __global const float *b1, uint bo, uint n, uint dff, float p,
                      float scale, uint seed_lo, uint seed_hi, uint stream, uint step)
{
    uint b = get_global_id(0), i0 = 4 * b;
    if (i0 >= n)
        return;
    clf_factors4 f = clf_dropout_factors4((ulong)b, p, scale, seed_lo, seed_hi, stream, step);
    uint j = i0 % dff;  /* one division per block: CPUs have no vector integer division */
    for (uint k = 0; k < 4; k++) {
        uint i = i0 + k;
        if (i < n)
            h[ho + i] = fmax(h[ho + i] + b1[bo + j], 0.0f) * clf_factors4_at(f, k);
        j = j + 1 == dff ? 0 : j + 1;
    }
}

__kernel void ffn_dact(__global float *h, uint ho, __global const float *dh, uint n, float scale)
{
    uint i = get_global_id(0);
    if (i < n)
        h[ho + i] = h[ho + i] > 0.0f ? dh[i] * scale : 0.0f;
}
