/* dropout.h: dropout as kernels apply it, one Philox block (four
 * consecutive elements, philox.h) at a time: the residual y = x + dropout(sub)
 * and the bare y = dropout(x) (its backward). elementwise.cl's flat
 * kernels and layernorm.cl's fused residual rows share these, so the two
 * paths give the same bits. Pointers index the tensor's flat elements
 * (element i at p[i], i also the dropout counter); a block is clipped to
 * [lo, hi): the tensor, or one row of it. vload4/vstore4 need only float
 * alignment, so any offset works. */
#ifndef CLF_CL_DROPOUT_H
#define CLF_CL_DROPOUT_H

#include "philox.h"

/* A kernel's dropout arguments (clf_drop_args on the host), and passing them on */
#define DROP_PARAMS float p, float scale, uint seed_lo, uint seed_hi, uint stream, uint step
#define DROP_ARGS p, scale, seed_lo, seed_hi, stream, step

/* y[i] = x[i] + sub[i]·factor(i) for i in block blk ∩ [lo, hi) */
CLF_INLINE_FN void clf_residual_block(__global float *y, __global const float *x, __global const float *sub,
                                      uint blk, uint lo, uint hi, DROP_PARAMS)
{
    clf_factors4 f = clf_dropout_factors4((ulong)blk, DROP_ARGS);
    uint i0 = 4 * blk;
    if (i0 >= lo && i0 + 4 <= hi) {
        vstore4(vload4(0, x + i0) + vload4(0, sub + i0) * (float4)(f.f0, f.f1, f.f2, f.f3), 0, y + i0);
    } else {
        for (uint k = 0; k < 4; k++) {
            uint i = i0 + k;
            if (i >= lo && i < hi)
                y[i] = x[i] + sub[i] * clf_factors4_at(f, k);
        }
    }
}

/* y[i] = x[i]·factor(i) for i in block blk ∩ [lo, hi) */
CLF_INLINE_FN void clf_dropout_block(__global float *y, __global const float *x, uint blk, uint lo, uint hi,
                                     DROP_PARAMS)
{
    clf_factors4 f = clf_dropout_factors4((ulong)blk, DROP_ARGS);
    uint i0 = 4 * blk;
    if (i0 >= lo && i0 + 4 <= hi) {
        vstore4(vload4(0, x + i0) * (float4)(f.f0, f.f1, f.f2, f.f3), 0, y + i0);
    } else {
        for (uint k = 0; k < 4; k++) {
            uint i = i0 + k;
            if (i >= lo && i < hi)
                y[i] = x[i] * clf_factors4_at(f, k);
        }
    }
}

/* The same over every block that meets [lo, hi), eight blocks (32 elements)
 * at a time where all eight lie inside (philox.h's clf_dropout_factors4x8):
 * a row kernel's loop, or a flat kernel's item of 32 elements. */
#define CLF_X8_STEP(l) vstore4(vload4(l, xx) + vload4(l, ss) * CLF_FACTORS4X8_AT(f, l), l, yy);
CLF_INLINE_FN void clf_residual_range(__global float *y, __global const float *x, __global const float *sub,
                                      uint lo, uint hi, DROP_PARAMS)
{
    uint b = lo / 4;
    while (4 * b < hi) {
        if (4 * b >= lo && 4 * b + 32 <= hi) {
            clf_factors4x8 f = clf_dropout_factors4x8((ulong)b, DROP_ARGS);
            __global float *yy = y + 4 * b;
            __global const float *xx = x + 4 * b, *ss = sub + 4 * b;
            CLF_X8_STEP(0) CLF_X8_STEP(1) CLF_X8_STEP(2) CLF_X8_STEP(3)
            CLF_X8_STEP(4) CLF_X8_STEP(5) CLF_X8_STEP(6) CLF_X8_STEP(7)
            b += 8;
        } else {
            clf_residual_block(y, x, sub, b, lo, hi, DROP_ARGS);
            b++;
        }
    }
}
#undef CLF_X8_STEP

#define CLF_X8_STEP(l) vstore4(vload4(l, xx) * CLF_FACTORS4X8_AT(f, l), l, yy);
CLF_INLINE_FN void clf_dropout_range(__global float *y, __global const float *x, uint lo, uint hi, DROP_PARAMS)
{
    uint b = lo / 4;
    while (4 * b < hi) {
        if (4 * b >= lo && 4 * b + 32 <= hi) {
            clf_factors4x8 f = clf_dropout_factors4x8((ulong)b, DROP_ARGS);
            __global float *yy = y + 4 * b;
            __global const float *xx = x + 4 * b;
            CLF_X8_STEP(0) CLF_X8_STEP(1) CLF_X8_STEP(2) CLF_X8_STEP(3)
            CLF_X8_STEP(4) CLF_X8_STEP(5) CLF_X8_STEP(6) CLF_X8_STEP(7)
            b += 8;
        } else {
            clf_dropout_block(y, x, b, lo, hi, DROP_ARGS);
            b++;
        }
    }
}
#undef CLF_X8_STEP

#endif
