/* softmax.cl: softmax, its backward and log-softmax over the last
 * dimension. One work-group of WG items per row; x, y, dy, dx (rows, cols),
 * valid int32 (rows) or absent. Reductions are trees in local memory, so
 * their order is fixed. With WG 1 (CPUs: PoCL's ROWS_WG) one work-item owns
 * the row, in float8 loops with no barrier (see cl/loss.cl for why PoCL
 * wants that shape); log-softmax then finds its log-sum-exp in one pass, as
 * the loss does. lse_rows gives that log-sum-exp alone. y may alias x, dx may alias y or dy: each element is read
 * before the same element is written. */
#include "common.h"

/* The row's valid columns: valid[row] clamped to [0, cols], or all of them. */
static inline uint valid_len(__global const int *valid, int has_valid, uint row, uint cols)
{
    if (!has_valid)
        return cols;
    const int v = valid[row];
    return v <= 0 ? 0u : min((uint)v, cols);
}

#if WG == 1

__kernel void softmax_fwd(__global float *y, uint yo, __global const float *x, uint xo, uint cols,
                          __global const int *valid, int has_valid)
{
    uint row = get_group_id(0), j;
    __global const float *xr = x + xo + (size_t)row * cols;
    __global float *yr = y + yo + (size_t)row * cols;
    const uint len = valid_len(valid, has_valid, row, cols);
    float8 m8 = (float8)(CLF_NEG_LARGE);
    for (j = 0; j + 8 <= len; j += 8)
        m8 = fmax(m8, vload8(0, xr + j));
    float m = max8(m8);
    for (; j < len; j++)
        m = fmax(m, xr[j]);
    /* y holds the exponentials until the sum is known */
    float8 s8 = (float8)(0.0f);
    for (j = 0; j + 8 <= len; j += 8) {
        float8 e = exp(vload8(0, xr + j) - m);
        vstore8(e, 0, yr + j);
        s8 += e;
    }
    float s = sum8(s8);
    for (; j < len; j++) {
        float e = exp(xr[j] - m);
        yr[j] = e;
        s += e;
    }
    for (; j < cols; j++)
        yr[j] = 0.0f;
    float inv = len ? 1.0f / s : 0.0f;
    for (j = 0; j + 8 <= len; j += 8)
        vstore8(vload8(0, yr + j) * inv, 0, yr + j);
    for (; j < len; j++)
        yr[j] *= inv;
}

__kernel void softmax_bwd(__global float *dx, uint dxo, __global const float *y, uint yo, __global const float *dy,
                          uint dyo, uint cols)
{
    uint row = get_group_id(0), j;
    __global const float *yr = y + yo + (size_t)row * cols;
    __global const float *gr = dy + dyo + (size_t)row * cols;
    __global float *dr = dx + dxo + (size_t)row * cols;
    float8 s8 = (float8)(0.0f);
    for (j = 0; j + 8 <= cols; j += 8)
        s8 += vload8(0, yr + j) * vload8(0, gr + j);
    float s = sum8(s8);
    for (; j < cols; j++)
        s += yr[j] * gr[j];
    for (j = 0; j + 8 <= cols; j += 8) {
        float8 yv = vload8(0, yr + j), gv = vload8(0, gr + j);
        vstore8(yv * (gv - s), 0, dr + j);
    }
    for (; j < cols; j++)
        dr[j] = yr[j] * (gr[j] - s);
}

/* log Σ exp(xr[j]) over the row, in one pass */
static float row_lse(__global const float *xr, uint cols)
{
    uint j;
    /* lane i: the largest value it has seen and Σ exp(x - that) */
    float8 m8 = (float8)(CLF_NEG_LARGE), s8 = (float8)(0.0f);
    for (j = 0; j + 8 <= cols; j += 8) {
        float8 a = vload8(0, xr + j), mn = fmax(m8, a);
        s8 = s8 * exp(m8 - mn) + exp(a - mn);
        m8 = mn;
    }
    float m1 = CLF_NEG_LARGE, s1 = 0.0f;
    for (; j < cols; j++) {
        float a = xr[j], mn = fmax(m1, a);
        s1 = s1 * exp(m1 - mn) + exp(a - mn);
        m1 = mn;
    }
    float m = fmax(max8(m8), m1);
    return m + log(sum8(s8 * exp(m8 - m)) + s1 * exp(m1 - m));
}

__kernel void logsoftmax_fwd(__global float *y, uint yo, __global const float *x, uint xo, uint cols)
{
    uint row = get_group_id(0), j;
    __global const float *xr = x + xo + (size_t)row * cols;
    __global float *yr = y + yo + (size_t)row * cols;
    float lse = row_lse(xr, cols);
    for (j = 0; j + 8 <= cols; j += 8)
        vstore8(vload8(0, xr + j) - lse, 0, yr + j);
    for (; j < cols; j++)
        yr[j] = xr[j] - lse;
}

#else

__kernel void softmax_fwd(__global float *y, uint yo, __global const float *x, uint xo, uint cols,
                          __global const int *valid, int has_valid)
{
    __local float red[WG];
    uint row = get_group_id(0), lid = get_local_id(0);
    __global const float *xr = x + xo + (size_t)row * cols;
    __global float *yr = y + yo + (size_t)row * cols;
    const uint len = valid_len(valid, has_valid, row, cols);
    float m = CLF_NEG_LARGE;
    for (uint j = lid; j < len; j += WG)
        m = fmax(m, xr[j]);
    m = wg_max(red, m);
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

/* log Σ exp(xr[j]) over the row, by the group */
CLF_GROUP_FN float row_lse(__local float *red, __global const float *xr, uint cols)
{
    uint lid = get_local_id(0);
    float m = CLF_NEG_LARGE;
    for (uint j = lid; j < cols; j += WG)
        m = fmax(m, xr[j]);
    m = wg_max(red, m);
    float s = 0.0f;
    for (uint j = lid; j < cols; j += WG)
        s += exp(xr[j] - m);
    return m + log(wg_sum(red, s));
}

__kernel void logsoftmax_fwd(__global float *y, uint yo, __global const float *x, uint xo, uint cols)
{
    __local float red[WG];
    uint row = get_group_id(0), lid = get_local_id(0);
    __global const float *xr = x + xo + (size_t)row * cols;
    __global float *yr = y + yo + (size_t)row * cols;
    float lse = row_lse(red, xr, cols);
    for (uint j = lid; j < cols; j += WG)
        yr[j] = xr[j] - lse;
}

#endif

/* lse (rows) = the log-sum-exp logsoftmax_fwd subtracts from each row of x,
 * to the bit (the same row_lse in the same program): log-softmax's values
 * are x - lse, for whoever needs only some of them (decoding's top-k). */
__kernel void lse_rows(__global float *lse, uint lo, __global const float *x, uint xo, uint cols)
{
    uint row = get_group_id(0);
#if WG == 1
    float v = row_lse(x + xo + (size_t)row * cols, cols);
#else
    __local float red[WG];
    float v = row_lse(red, x + xo + (size_t)row * cols, cols);
    if (get_local_id(0) == 0)
#endif
    lse[lo + row] = v;
}
