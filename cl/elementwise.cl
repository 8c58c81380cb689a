/* elementwise.cl: flat elementwise ops and column sums.
 *   add           y (n) = a (n) + b (n)
 *   bias_add      y (rows, cols) += bias (cols)
 *   colsum_part   part (nchunks, cols) = Σ over each chunk of rows of in (rows, cols)
 *                 (colsum_part4: four columns per work-item)
 *   colsum_final  out (cols) += Σ_chunks part (nchunks, cols), chunks in order
 *   residual      y (n) = x (n) + dropout(sub (n))
 *   dropout       y (n) = dropout(x (n))   (residual's backward)
 *   column_fill   x[r, col] = value for every row r of x (rows, cols)
 * Offsets are in floats. Dropout arguments: p, scale, seed_lo, seed_hi,
 * stream, step (see philox.h). */
#include "common.h"
#include "dropout.h"

__kernel void add(__global float *y, uint yo, __global const float *a, uint ao, __global const float *b, uint bo,
                  uint n)
{
    uint i = get_global_id(0);
    if (i < n)
        y[yo + i] = a[ao + i] + b[bo + i];
}

__kernel void bias_add(__global float *y, uint yo, __global const float *bias, uint bo, uint n, uint cols)
{
    uint i = get_global_id(0);
    if (i < n)
        y[yo + i] += bias[bo + i % cols];
}

/* One work-item per (column, chunk): consecutive items read consecutive
 * columns of a row, so loads coalesce. */
__kernel void colsum_part(__global float *part, __global const float *in, uint io, uint rows, uint cols,
                          uint chunk)
{
    uint c = get_global_id(0), k = get_global_id(1);
    if (c >= cols)
        return;
    uint r0 = k * chunk, r1 = min(rows, r0 + chunk);
    float s = 0.0f;
    for (uint r = r0; r < r1; r++)
        s += in[io + r * cols + c];
    part[k * cols + c] = s;
}

/* The same, four columns per work-item (cols a multiple of 4): each
 * column's sum in the same order, so the same bits; a quarter of the
 * work-items, each a float4 load per row (PoCL loops over work-items). */
__kernel void colsum_part4(__global float *part, __global const float *in, uint io, uint rows, uint cols,
                           uint chunk)
{
    uint c = 4 * get_global_id(0), k = get_global_id(1);
    if (c >= cols)
        return;
    uint r0 = k * chunk, r1 = min(rows, r0 + chunk);
    float4 s = (float4)(0.0f);
    for (uint r = r0; r < r1; r++)
        s += vload4(0, in + io + r * cols + c);
    vstore4(s, 0, part + k * cols + c);
}

__kernel void colsum_final(__global float *out, uint oo, __global const float *part, uint cols, uint nchunks)
{
    uint c = get_global_id(0);
    if (c >= cols)
        return;
    float s = 0.0f;
    for (uint k = 0; k < nchunks; k++)
        s += part[k * cols + c];
    out[oo + c] += s;
}

/* Dropout kernels: each work-item takes 32 consecutive elements, eight
 * Philox blocks (dropout.h; eight at once run as SIMD lanes on CPUs). */
__kernel void residual(__global float *y, uint yo, __global const float *x, uint xo, __global const float *sub,
                       uint so, uint n, DROP_PARAMS)
{
    uint lo = 32 * get_global_id(0);
    if (lo < n)
        clf_residual_range(y + yo, x + xo, sub + so, lo, min(n, lo + 32), DROP_ARGS);
}

__kernel void dropout(__global float *y, uint yo, __global const float *x, uint xo, uint n, DROP_PARAMS)
{
    uint lo = 32 * get_global_id(0);
    if (lo < n)
        clf_dropout_range(y + yo, x + xo, lo, min(n, lo + 32), DROP_ARGS);
}

__kernel void column_fill(__global float *x, uint xo, uint rows, uint cols, uint col, float value)
{
    uint r = get_global_id(0);
    if (r < rows)
        x[xo + r * cols + col] = value;
}
