/* softmax.cl: softmax, its backward and log-softmax over the last
 * dimension. One work-group of WG items per row; x, y, dy, dx (rows, cols),
 * valid int32 (rows) or absent. Reductions are trees in local memory, so
 * their order is fixed. */
#include "common.h"

static float reduce_max(__local float *red, float v)
{
    uint lid = get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] = fmax(red[lid], red[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

__kernel void softmax_fwd(__global float *y, uint yo, __global const float *x, uint xo, uint cols,
                          __global const int *valid, int has_valid)
{
    __local float red[WG];
    uint row = get_group_id(0), lid = get_local_id(0);
    __global const float *xr = x + xo + (size_t)row * cols;
    __global float *yr = y + yo + (size_t)row * cols;
    uint len = cols;
    if (has_valid) {
        int v = valid[row];
        len = v <= 0 ? 0u : min((uint)v, cols);
    }
    float m = CLF_NEG_LARGE;
    for (uint j = lid; j < len; j += WG)
        m = fmax(m, xr[j]);
    m = reduce_max(red, m);
    /* y holds the exponentials until the sum is known (y may alias x:
     * each item reads and writes only its own elements) */
    float s = 0.0f;
    for (uint j = lid; j < cols; j += WG) {
        float e = j < len ? exp(xr[j] - m) : 0.0f;
        yr[j] = e;
        s += e;
    }
    s = wg_sum(red, s);
    float inv = len ? 1.0f / s : 0.0f;
    for (uint j = lid; j < len; j += WG)
        yr[j] *= inv;
}

__kernel void softmax_bwd(__global float *dx, uint dxo, __global const float *y, uint yo, __global const float *dy,
                          uint dyo, uint cols)
{
    __local float red[WG];
    uint row = get_group_id(0), lid = get_local_id(0);
    __global const float *yr = y + yo + (size_t)row * cols;
    __global const float *gr = dy + dyo + (size_t)row * cols;
    __global float *dr = dx + dxo + (size_t)row * cols;
    float s = 0.0f;
    for (uint j = lid; j < cols; j += WG)
        s += yr[j] * gr[j];
    s = wg_sum(red, s);
    for (uint j = lid; j < cols; j += WG)
        dr[j] = yr[j] * (gr[j] - s);
}

__kernel void logsoftmax_fwd(__global float *y, uint yo, __global const float *x, uint xo, uint cols)
{
    __local float red[WG];
    uint row = get_group_id(0), lid = get_local_id(0);
    __global const float *xr = x + xo + (size_t)row * cols;
    __global float *yr = y + yo + (size_t)row * cols;
    float m = CLF_NEG_LARGE;
    for (uint j = lid; j < cols; j += WG)
        m = fmax(m, xr[j]);
    m = reduce_max(red, m);
    float s = 0.0f;
    for (uint j = lid; j < cols; j += WG)
        s += exp(xr[j] - m);
    float lse = m + log(wg_sum(red, s));
    for (uint j = lid; j < cols; j += WG)
        yr[j] = xr[j] - lse;
}
