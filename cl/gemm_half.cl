/* gemm_half.cl: the conversions around float16 compute's GEMM
 * (host/runtime/gemm_half.c), which CLBlast's Hgemm runs between them.
 *   to_half         dst (rows, cols) half, contiguous = src (rows, cols)
 *                   float at so, rows ld apart, rounded to nearest even
 *   from_half_bias  dst (rows, cols) float at do, rows ldd apart = src
 *                   (rows, cols) half, contiguous, + bias (cols) at bo
 *                   when has_bias
 * Flat over rows·cols. vload_half / vstore_half_rte are core OpenCL 1.2;
 * the program is built only for devices with cl_khr_fp16 (the GEMM between
 * needs it), and these kernels do no half arithmetic. Offsets in elements. */
#include "common.h"

#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif

__kernel void to_half(__global half *dst, __global const float *src, uint so, uint ld, uint rows, uint cols)
{
    uint i = get_global_id(0);
    if (i >= rows * cols)
        return;
    uint r = i / cols, c = i - r * cols;
    vstore_half_rte(src[so + r * ld + c], i, dst);
}

__kernel void from_half_bias(__global float *dst, uint do_, uint ldd, __global const half *src,
                             __global const float *bias, uint bo, uint has_bias, uint rows, uint cols)
{
    uint i = get_global_id(0);
    if (i >= rows * cols)
        return;
    uint r = i / cols, c = i - r * cols;
    dst[do_ + r * ldd + c] = vload_half(i, src) + (has_bias ? bias[bo + c] : 0.0f);
}
