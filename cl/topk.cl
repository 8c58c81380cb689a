/* topk.cl: the K largest entries of each row, for decoding: beam search
 * needs only the best 2·beam continuations of each hypothesis, so only
 * those cross to the host instead of the whole vocabulary.
 *   topk_rows  x (rows, cols) -> val (rows, K), idx int32 (rows, K), best
 *              first; equal values: the lower column first; column `skip`
 *              (if >= 0) is left out; fewer than K columns leave idx -1
 *              and val CLF_NEG_LARGE. at (rows) = x[row, pick], the one
 *              column the host also needs (EOS at the length limit).
 *              With has_shift the entries are x - shift[row] (log-softmax
 *              from the logits and lse_rows's log-sum-exp, without
 *              writing it), computed as logsoftmax_fwd computes them.
 * One work-group of WG items per row: each keeps the best K of its
 * strided columns in registers, then a tree in local memory merges the
 * sorted lists two by two, so the result does not depend on WG. */
#include "common.h"

#ifndef WG
#define WG 16
#endif
#ifndef K
#define K 8
#endif

/* a before b: larger value, or equal value and lower column */
static bool better(float va, int ia, float vb, int ib)
{
    return va > vb || (va == vb && (uint)ia < (uint)ib);  /* idx -1 (none) sorts last */
}

__kernel void topk_rows(__global float *val, uint vo, __global int *idx, __global float *at, uint ao,
                        __global const float *x, uint xo, uint cols, int skip, uint pick,
                        __global const float *shift, uint so, int has_shift)
{
    __local float lv[WG * K];
    __local int li[WG * K];
    uint row = get_group_id(0), lid = get_local_id(0);
    __global const float *xr = x + xo + (size_t)row * cols;
    const float sh = has_shift ? shift[so + row] : 0.0f;
    float bv[K];
    int bi[K];
    for (uint k = 0; k < K; k++) {
        bv[k] = CLF_NEG_LARGE;
        bi[k] = -1;
    }
    for (uint j = lid; j < cols; j += WG) {
        float v = has_shift ? xr[j] - sh : xr[j];
        if ((int)j == skip || !better(v, (int)j, bv[K - 1], bi[K - 1]))
            continue;
        uint p = K - 1;
        while (p > 0 && better(v, (int)j, bv[p - 1], bi[p - 1])) {
            bv[p] = bv[p - 1];
            bi[p] = bi[p - 1];
            p--;
        }
        bv[p] = v;
        bi[p] = (int)j;
    }
    for (uint k = 0; k < K; k++) {
        lv[lid * K + k] = bv[k];
        li[lid * K + k] = bi[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {  /* merge lists lid and lid + s, keep the first K */
            uint a = lid * K, b = (lid + s) * K, ea = a + K, eb = b + K;
            for (uint k = 0; k < K; k++) {
                bool take_a = b == eb || (a < ea && better(lv[a], li[a], lv[b], li[b]));
                bv[k] = take_a ? lv[a] : lv[b];
                bi[k] = take_a ? li[a] : li[b];
                if (take_a)
                    a++;
                else
                    b++;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s)
            for (uint k = 0; k < K; k++) {
                lv[lid * K + k] = bv[k];
                li[lid * K + k] = bi[k];
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (uint k = lid; k < K; k += WG) {
        val[vo + (size_t)row * K + k] = lv[k];
        idx[(size_t)row * K + k] = li[k];
    }
    if (lid == 0)
        at[ao + row] = has_shift ? xr[pick] - sh : xr[pick];
}
