/* common.h: the prelude every clformer kernel includes. OpenCL C 1.2.
 * Tunables are -D build options; each has an #ifndef default here or in
 * its kernel file so that a file compiles on its own. */
#ifndef CLF_CL_COMMON_H
#define CLF_CL_COMMON_H

/* Helper functions in every cl/ file are `static` or `static inline`: OpenCL
 * C 1.2 allows `static` on non-kernel functions (section 6.8; 1.1 did not,
 * and we build with -cl-std=CL1.2). A bare `inline` definition follows C99:
 * it gives no external definition, so a compiler that does not inline a call
 * leaves an undefined symbol and the program fails to build. */

/* A helper function that holds a barrier, or calls one that does, is
 * declared CLF_GROUP_FN: always inlined into its kernel. Mesa's rusticl
 * (25.0, clang -> SPIR-V -> NIR -> llvmpipe) crashes in its queue thread
 * compiling a kernel that calls such a function when clang left the call in
 * the SPIR-V (seen with softmax.cl's row_lse: a strided loop, then wg_max
 * and wg_sum), and a barrier reached through a call is where drivers'
 * compilers have differed before. The attribute is clang's and GCC's, which
 * every OpenCL C compiler we know is built on; tests/test_kernel_sources.c
 * checks that every such helper has it. */
#define CLF_GROUP_FN static inline __attribute__((always_inline))

/* The same for the dropout helpers (dropout.h, philox.h's OpenCL half):
 * rusticl 25.0 crashed the same way compiling layernorm.cl's ln_res_fwd
 * and ln_bwd_drop, whose loops call them, while the same helpers called
 * from elementwise.cl compiled. */
#define CLF_INLINE_FN static inline __attribute__((always_inline))

/* a·b + c, one fused multiply-add where the device says it has one
 * (CL_FP_FMA in CL_DEVICE_SINGLE_FP_CONFIG: the host then builds with
 * -DCLF_FMA), else mad(). PoCL 3.1 compiles mad() as a multiply and an add,
 * two instructions and two roundings, and fma() as one instruction: the
 * attention's tiles ran 7-13% faster on an AVX-512 CPU. fma() rounds once,
 * so it is the more exact of the two; where a device lacks the unit, its
 * fma() would be emulated in software, hence the check. */
#ifdef CLF_FMA
#define CLF_MAD(a, b, c) fma((a), (b), (c))
#else
#define CLF_MAD(a, b, c) mad((a), (b), (c))
#endif

/* Masks and running maxima use a large finite negative number, never
 * -INFINITY, so that -cl-fast-relaxed-math cannot turn them into NaN. */
#define CLF_NEG_LARGE (-1.0e30f)

/* Work-group size of row-wise kernels (one group per row). */
#ifndef WG
#define WG 64
#endif

/* Sum of v over the work-group (WG items, a power of two), by a tree in
 * local memory red[WG]: a fixed order, so the same inputs give the same
 * bits. Every item of the group must call it. */
CLF_GROUP_FN float wg_sum(__local float *red, float v)
{
    uint lid = get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] += red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Max of v over the work-group, the same tree as wg_sum. */
CLF_GROUP_FN float wg_max(__local float *red, float v)
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

/* Horizontal sum and max of a float8's lanes, in a fixed order: the row
 * kernels' one-item shapes (WG 1: one work-item per row, float8 loops and
 * no barrier, for CPUs) reduce their lanes with these. The sum's last step
 * is dot(b, 1), which is b.x + b.y to the bit: LLVM turns b.x + b.y into a
 * shufflevector with an undef lane, on which Oclgrind 21.10's
 * uninitialised-value checker crashes (as in cl/attention.cl's hsum). */
static inline float sum8(float8 v)
{
    float4 a = v.lo + v.hi;
    float2 b = a.lo + a.hi;
    return dot(b, (float2)(1.0f));
}

static inline float max8(float8 v)
{
    float4 a = fmax(v.lo, v.hi);
    float2 b = fmax(a.lo, a.hi);
    return fmax(b.x, b.y);
}

#endif
