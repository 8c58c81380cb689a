/* head_vec.h: a head row of HEAD_DIM floats as NV vectors of VEC floats,
 * the widest of 8, 4 and 1 that gives every one of VEC_LANES lanes a whole
 * number of them (attention.cl's split form; 1 elsewhere): the type vf,
 * VLOAD and VSTORE of vector i, and hsum, the horizontal sum in a fixed
 * order whose last step is dot(u, 1) (u.x + u.y to the bit; see
 * attention.cl's header for why). Shared by attention.cl and
 * decode_attn.cl. OpenCL C 1.2. */
#ifndef CLF_CL_HEAD_VEC_H
#define CLF_CL_HEAD_VEC_H

#ifndef VEC_LANES
#define VEC_LANES 1
#endif

#if HEAD_DIM % (8 * VEC_LANES) == 0
#define VEC 8
typedef float8 vf;
#define VLOAD(i, p) vload8((i), (p))
#define VSTORE(x, i, p) vstore8((x), (i), (p))
static inline float hsum(vf x) { float4 t = x.lo + x.hi; float2 u = t.lo + t.hi; return dot(u, (float2)(1.0f)); }
#elif HEAD_DIM % (4 * VEC_LANES) == 0
#define VEC 4
typedef float4 vf;
#define VLOAD(i, p) vload4((i), (p))
#define VSTORE(x, i, p) vstore4((x), (i), (p))
static inline float hsum(vf x) { float2 u = x.lo + x.hi; return dot(u, (float2)(1.0f)); }
#else
#define VEC 1
typedef float vf;
#define VLOAD(i, p) ((p)[(i)])
#define VSTORE(x, i, p) ((p)[(i)] = (x))
static inline float hsum(vf x) { return x; }
#endif
#define NV (HEAD_DIM / VEC)

#endif
