/* layernorm.cl: layer norm over the last dimension d of x (rows, d).
 *   ln_fwd        y (rows, d), mean (rows), rstd (rows) from x, gain (d), bias (d)
 *   ln_res_fwd    the same of s = x + dropout(r), s written too (a
 *                 post-norm residual: elementwise.cl's residual kernel's
 *                 sums, through the same dropout.h blocks); y may alias x
 *                 (every x is read before the first barrier, and y
 *                 written after the last)
 *   ln_bwd        dx (rows, d) from dy, x, mean, rstd, gain
 *   ln_bwd_drop   the same, and dsub (rows, d) = dropout'(dx) (its arguments
 *                 after ln_bwd's, so one launcher sets both): the backward
 *                 of ln_res_fwd (dx is x's gradient, dsub r's), dsub from
 *                 dx read back as elementwise.cl's dropout kernel reads it
 *   ln_param_part first stage of dgain, dbias: partg, partb (nchunks, d) =
 *                 Σ over each chunk of rows of dy·x̂ and dy
 * Row kernels: one work-group of WG items per row, tree reductions in local
 * memory (fixed order); with WG 1 (CPUs: PoCL's ROWS_WG) one work-item owns
 * the row, in float8 loops with no barrier (see cl/loss.cl for why PoCL
 * wants that shape). */
#include "common.h"
#include "dropout.h"

#if WG == 1

/* Row xr (d) normalised into yr; its mean and rstd into *mo, *ro. */
static void ln_row(__global float *yr, __global const float *xr, __global const float *gn, __global const float *bs,
                   uint d, float eps, float *mo, float *ro)
{
    uint j;
    float8 s8 = (float8)(0.0f);
    for (j = 0; j + 8 <= d; j += 8)
        s8 += vload8(0, xr + j);
    float s = sum8(s8);
    for (; j < d; j++)
        s += xr[j];
    float mu = s / (float)d;
    float8 v8 = (float8)(0.0f);
    for (j = 0; j + 8 <= d; j += 8) {
        float8 t = vload8(0, xr + j) - mu;
        v8 += t * t;
    }
    float v = sum8(v8);
    for (; j < d; j++) {
        float t = xr[j] - mu;
        v += t * t;
    }
    float rs = 1.0f / sqrt(v / (float)d + eps);
    for (j = 0; j + 8 <= d; j += 8)
        vstore8((vload8(0, xr + j) - mu) * rs * vload8(0, gn + j) + vload8(0, bs + j), 0, yr + j);
    for (; j < d; j++)
        yr[j] = (xr[j] - mu) * rs * gn[j] + bs[j];
    *mo = mu;
    *ro = rs;
}

__kernel void ln_fwd(__global float *y, uint yo, __global float *mean, uint mo, __global float *rstd, uint ro,
                     __global const float *x, uint xo, __global const float *gain, uint go,
                     __global const float *bias, uint bo, uint d, float eps)
{
    uint row = get_group_id(0);
    float mu, rs;
    ln_row(y + yo + (size_t)row * d, x + xo + (size_t)row * d, gain + go, bias + bo, d, eps, &mu, &rs);
    mean[mo + row] = mu;
    rstd[ro + row] = rs;
}

__kernel void ln_res_fwd(__global float *y, uint yo, __global float *mean, uint mo, __global float *rstd, uint ro,
                         __global float *s, uint so, __global const float *x, uint xo, __global const float *r,
                         uint rof, __global const float *gain, uint go, __global const float *bias, uint bo, uint d,
                         float eps, DROP_PARAMS)
{
    uint row = get_group_id(0), lo = row * d, hi = lo + d;
    clf_residual_range(s + so, x + xo, r + rof, lo, hi, DROP_ARGS);
    float mu, rs;
    ln_row(y + yo + lo, s + so + lo, gain + go, bias + bo, d, eps, &mu, &rs);
    mean[mo + row] = mu;
    rstd[ro + row] = rs;
}

/* dr (d) = the row's dx from dy row gr, x row xr and the row's mu, rs */
static void ln_bwd_row(__global float *dr, __global const float *gr, __global const float *xr,
                       __global const float *gn, float mu, float rs, uint d)
{
    uint j;
    float8 a8 = (float8)(0.0f), b8 = (float8)(0.0f);
    for (j = 0; j + 8 <= d; j += 8) {
        float8 g = vload8(0, gr + j) * vload8(0, gn + j);
        a8 += g;
        b8 += g * (vload8(0, xr + j) - mu) * rs;
    }
    float a = sum8(a8), b = sum8(b8);
    for (; j < d; j++) {
        float g = gr[j] * gn[j];
        a += g;
        b += g * (xr[j] - mu) * rs;
    }
    a /= (float)d;
    b /= (float)d;
    for (j = 0; j + 8 <= d; j += 8) {
        float8 xh = (vload8(0, xr + j) - mu) * rs;
        vstore8(rs * (vload8(0, gr + j) * vload8(0, gn + j) - a - xh * b), 0, dr + j);
    }
    for (; j < d; j++) {
        float xh = (xr[j] - mu) * rs;
        dr[j] = rs * (gr[j] * gn[j] - a - xh * b);
    }
}

__kernel void ln_bwd(__global float *dx, uint dxo, __global const float *dy, uint dyo, __global const float *x,
                     uint xo, __global const float *mean, uint mo, __global const float *rstd, uint ro,
                     __global const float *gain, uint go, uint d)
{
    uint row = get_group_id(0);
    size_t r0 = (size_t)row * d;
    ln_bwd_row(dx + dxo + r0, dy + dyo + r0, x + xo + r0, gain + go, mean[mo + row], rstd[ro + row], d);
}

__kernel void ln_bwd_drop(__global float *dx, uint dxo, __global const float *dy, uint dyo, __global const float *x,
                          uint xo, __global const float *mean, uint mo, __global const float *rstd, uint ro,
                          __global const float *gain, uint go, uint d, __global float *dsub, uint dso, DROP_PARAMS)
{
    uint row = get_group_id(0), lo = row * d, hi = lo + d;
    ln_bwd_row(dx + dxo + lo, dy + dyo + lo, x + xo + lo, gain + go, mean[mo + row], rstd[ro + row], d);
    clf_dropout_range(dsub + dso, dx + dxo, lo, hi, DROP_ARGS);
}

#else

/* Row xr (d) normalised into yr by the group; its mean and rstd (item 0) */
CLF_GROUP_FN void ln_row(__local float *red, __global float *yr, __global const float *xr, __global const float *gain,
                         uint go, __global const float *bias, uint bo, uint d, float eps, __global float *mo,
                         __global float *ro)
{
    uint lid = get_local_id(0);
    float s = 0.0f;
    for (uint j = lid; j < d; j += WG)
        s += xr[j];
    float mu = wg_sum(red, s) / (float)d;
    float v = 0.0f;
    for (uint j = lid; j < d; j += WG) {
        float t = xr[j] - mu;
        v += t * t;
    }
    float rs = 1.0f / sqrt(wg_sum(red, v) / (float)d + eps);
    for (uint j = lid; j < d; j += WG)
        yr[j] = (xr[j] - mu) * rs * gain[go + j] + bias[bo + j];
    if (lid == 0) {
        *mo = mu;
        *ro = rs;
    }
}

__kernel void ln_fwd(__global float *y, uint yo, __global float *mean, uint mo, __global float *rstd, uint ro,
                     __global const float *x, uint xo, __global const float *gain, uint go,
                     __global const float *bias, uint bo, uint d, float eps)
{
    __local float red[WG];
    uint row = get_group_id(0);
    ln_row(red, y + yo + (size_t)row * d, x + xo + (size_t)row * d, gain, go, bias, bo, d, eps, mean + mo + row,
           rstd + ro + row);
}

/* The row's residual sums go in one Philox block per item, so an item's
 * sums are not the ones it reads in ln_row: a barrier between. */
__kernel void ln_res_fwd(__global float *y, uint yo, __global float *mean, uint mo, __global float *rstd, uint ro,
                         __global float *s, uint so, __global const float *x, uint xo, __global const float *r,
                         uint rof, __global const float *gain, uint go, __global const float *bias, uint bo, uint d,
                         float eps, DROP_PARAMS)
{
    __local float red[WG];
    uint row = get_group_id(0), lid = get_local_id(0), lo = row * d, hi = lo + d;
    for (uint b = lo / 4 + lid; 4 * b < hi; b += WG)
        clf_residual_block(s + so, x + xo, r + rof, b, lo, hi, DROP_ARGS);
    barrier(CLK_GLOBAL_MEM_FENCE);
    ln_row(red, y + yo + lo, s + so + lo, gain, go, bias, bo, d, eps, mean + mo + row, rstd + ro + row);
}

/* dr (d) = the row's dx from dy row gr, x row xr and the row's mu, rs, by
 * the group */
CLF_GROUP_FN void ln_bwd_row(__local float *red, __global float *dr, __global const float *gr,
                             __global const float *xr, __global const float *gain, uint go, float mu, float rs, uint d)
{
    uint lid = get_local_id(0);
    float a = 0.0f, b = 0.0f;
    for (uint j = lid; j < d; j += WG) {
        float g = gr[j] * gain[go + j];
        a += g;
        b += g * (xr[j] - mu) * rs;
    }
    a = wg_sum(red, a) / (float)d;
    b = wg_sum(red, b) / (float)d;
    for (uint j = lid; j < d; j += WG) {
        float xh = (xr[j] - mu) * rs;
        dr[j] = rs * (gr[j] * gain[go + j] - a - xh * b);
    }
}

__kernel void ln_bwd(__global float *dx, uint dxo, __global const float *dy, uint dyo, __global const float *x,
                     uint xo, __global const float *mean, uint mo, __global const float *rstd, uint ro,
                     __global const float *gain, uint go, uint d)
{
    __local float red[WG];
    uint row = get_group_id(0);
    size_t r0 = (size_t)row * d;
    ln_bwd_row(red, dx + dxo + r0, dy + dyo + r0, x + xo + r0, gain, go, mean[mo + row], rstd[ro + row], d);
}

/* dsub's blocks are not the elements of dx an item wrote: a barrier between */
__kernel void ln_bwd_drop(__global float *dx, uint dxo, __global const float *dy, uint dyo, __global const float *x,
                          uint xo, __global const float *mean, uint mo, __global const float *rstd, uint ro,
                          __global const float *gain, uint go, uint d, __global float *dsub, uint dso, DROP_PARAMS)
{
    __local float red[WG];
    uint row = get_group_id(0), lid = get_local_id(0), lo = row * d, hi = lo + d;
    ln_bwd_row(red, dx + dxo + lo, dy + dyo + lo, x + xo + lo, gain, go, mean[mo + row], rstd[ro + row], d);
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (uint b = lo / 4 + lid; 4 * b < hi; b += WG)
        clf_dropout_block(dsub + dso, dx + dxo, b, lo, hi, DROP_ARGS);
}

#endif

__kernel void ln_param_part(__global float *partg, __global float *partb, __global const float *dy, uint dyo,
                            __global const float *x, uint xo, __global const float *mean, uint mo,
                            __global const float *rstd, uint ro, uint rows, uint d, uint chunk)
{
    uint c = get_global_id(0), k = get_global_id(1);
    if (c >= d)
        return;
    uint r0 = k * chunk, r1 = min(rows, r0 + chunk);
    float sg = 0.0f, sb = 0.0f;
    for (uint r = r0; r < r1; r++) {
        float g = dy[dyo + r * d + c];
        sg += g * (x[xo + r * d + c] - mean[mo + r]) * rstd[ro + r];
        sb += g;
    }
    partg[k * d + c] = sg;
    partb[k * d + c] = sb;
}
