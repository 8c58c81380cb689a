/* attention_tiles.h: what attention.cl (the forward) and attention_bwd.cl
 * (the backward) share: HEAD_DIM, the tiles and lanes (-D build options,
 * defaults below), the dot products and multiply-adds over rows of a local
 * tile, and the macros that load tiles and name a group's rows. The two
 * files are separate programs, so that a forward (translation, decoding)
 * never compiles the backward: on PoCL and rusticl compiling the backward
 * costs more than the forward. */
#ifndef CLF_CL_ATTENTION_TILES_H
#define CLF_CL_ATTENTION_TILES_H
#include "common.h"
#include "attn_mask.h"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef TILE_Q
#define TILE_Q 64
#endif
#ifndef TILE_K
#define TILE_K 64
#endif
#ifndef LANES
#define LANES 1
#endif
#if HEAD_DIM % LANES != 0
#error "HEAD_DIM must be a multiple of LANES"
#endif

/* vectors of VEC floats, a whole number of them per lane */
#define VEC_LANES LANES
#include "head_vec.h"
#define NVL (NV / LANES) /* vectors per lane */

/* Sums of four vectors at once: x, y, z, w lanes of the result. */
static inline float4 hsum4(vf a, vf b, vf c, vf d)
{
#if VEC == 8
    float4 a4 = a.lo + a.hi, b4 = b.lo + b.hi, c4 = c.lo + c.hi, d4 = d.lo + d.hi;
    float4 ab = (float4)(a4.lo + a4.hi, b4.lo + b4.hi), cd = (float4)(c4.lo + c4.hi, d4.lo + d4.hi);
    return (float4)(ab.even + ab.odd, cd.even + cd.odd);
#else
    return (float4)(hsum(a), hsum(b), hsum(c), hsum(d));
#endif
}

/* x · rows r, r+1, r+2, r+3 of a local (·, HEAD_DIM) tile: four independent
 * chains of multiply-adds keep the FMA units busy. */
static inline float4 dot4(const vf *x, __local const float *r)
{
    vf d0 = (vf)(0.0f), d1 = (vf)(0.0f), d2 = (vf)(0.0f), d3 = (vf)(0.0f);
#pragma unroll
    for (int c = 0; c < NV; c++) {
        const vf xc = x[c];
        d0 = CLF_MAD(xc, VLOAD(c, r), d0);
        d1 = CLF_MAD(xc, VLOAD(c, r + HEAD_DIM), d1);
        d2 = CLF_MAD(xc, VLOAD(c, r + 2 * HEAD_DIM), d2);
        d3 = CLF_MAD(xc, VLOAD(c, r + 3 * HEAD_DIM), d3);
    }
    return hsum4(d0, d1, d2, d3);
}

/* acc += w.x·row r + w.y·row r+1 + w.z·row r+2 + w.w·row r+3 */
static inline void axpy4(vf *acc, float4 w, __local const float *r)
{
#pragma unroll
    for (int c = 0; c < NV; c++) {
        vf t = acc[c];
        t = CLF_MAD((vf)(w.x), VLOAD(c, r), t);
        t = CLF_MAD((vf)(w.y), VLOAD(c, r + HEAD_DIM), t);
        t = CLF_MAD((vf)(w.z), VLOAD(c, r + 2 * HEAD_DIM), t);
        t = CLF_MAD((vf)(w.w), VLOAD(c, r + 3 * HEAD_DIM), t);
        acc[c] = t;
    }
}

/* lanes of rows r0 .. r0+3 inside [a, e) */
static inline int4 lanes_in(int r0, int a, int e)
{
    int4 r = (int4)(r0, r0 + 1, r0 + 2, r0 + 3);
    return r >= (int4)(a) && r < (int4)(e);
}

/* The same for eight rows at once: x · rows r .. r+7 (eight independent
 * chains, as many as two FMA units of four cycles' latency keep busy), acc
 * += w.s0·row r + .. + w.s7·row r+7 (the terms in the order two axpy4 calls
 * would add them), and the lanes of rows r0 .. r0+7 inside [a, e). */
static inline float8 dot8(const vf *x, __local const float *r)
{
    vf d0 = (vf)(0.0f), d1 = (vf)(0.0f), d2 = (vf)(0.0f), d3 = (vf)(0.0f);
    vf d4 = (vf)(0.0f), d5 = (vf)(0.0f), d6 = (vf)(0.0f), d7 = (vf)(0.0f);
#pragma unroll
    for (int c = 0; c < NV; c++) {
        const vf xc = x[c];
        d0 = CLF_MAD(xc, VLOAD(c, r), d0);
        d1 = CLF_MAD(xc, VLOAD(c, r + HEAD_DIM), d1);
        d2 = CLF_MAD(xc, VLOAD(c, r + 2 * HEAD_DIM), d2);
        d3 = CLF_MAD(xc, VLOAD(c, r + 3 * HEAD_DIM), d3);
        d4 = CLF_MAD(xc, VLOAD(c, r + 4 * HEAD_DIM), d4);
        d5 = CLF_MAD(xc, VLOAD(c, r + 5 * HEAD_DIM), d5);
        d6 = CLF_MAD(xc, VLOAD(c, r + 6 * HEAD_DIM), d6);
        d7 = CLF_MAD(xc, VLOAD(c, r + 7 * HEAD_DIM), d7);
    }
    return (float8)(hsum4(d0, d1, d2, d3), hsum4(d4, d5, d6, d7));
}

static inline void axpy8(vf *acc, float8 w, __local const float *r)
{
#pragma unroll
    for (int c = 0; c < NV; c++) {
        vf t = acc[c];
        t = CLF_MAD((vf)(w.s0), VLOAD(c, r), t);
        t = CLF_MAD((vf)(w.s1), VLOAD(c, r + HEAD_DIM), t);
        t = CLF_MAD((vf)(w.s2), VLOAD(c, r + 2 * HEAD_DIM), t);
        t = CLF_MAD((vf)(w.s3), VLOAD(c, r + 3 * HEAD_DIM), t);
        t = CLF_MAD((vf)(w.s4), VLOAD(c, r + 4 * HEAD_DIM), t);
        t = CLF_MAD((vf)(w.s5), VLOAD(c, r + 5 * HEAD_DIM), t);
        t = CLF_MAD((vf)(w.s6), VLOAD(c, r + 6 * HEAD_DIM), t);
        t = CLF_MAD((vf)(w.s7), VLOAD(c, r + 7 * HEAD_DIM), t);
        acc[c] = t;
    }
}

static inline int8 lanes_in8(int r0, int a, int e)
{
    int8 r = (int8)(r0) + (int8)(0, 1, 2, 3, 4, 5, 6, 7);
    return r >= (int8)(a) && r < (int8)(e);
}

/* The backward's query rows go QSTEP at a time: eight where a tile holds
 * them (tiles are powers of two, at least 4 query and 8 key rows). */
#if TILE_Q >= 8
#define QSTEP 8
typedef float8 fq;
#define DOTQ dot8
#define AXPYQ axpy8
#define VLOADQ vload8
#define VSTOREQ vstore8
#define LANES_INQ lanes_in8
#else
#define QSTEP 4
typedef float4 fq;
#define DOTQ dot4
#define AXPYQ axpy4
#define VLOADQ vload4
#define VSTOREQ vstore4
#define LANES_INQ lanes_in
#endif

/* Copies rows [r0, r0 + ROWS) of a (·, HEAD_DIM) operand with row stride rs
 * into local memory (rows ≥ n as zeros), cooperatively over nwi work-items:
 * where a row is one work-item (LANES = 1, CPUs) each item copies whole
 * rows, one after another in memory; with lanes (GPUs) neighbouring items
 * copy neighbouring vectors, so that a group's reads coalesce. */
#if LANES == 1
#define LOAD_TILE(dst, src, rs, r0, n, ROWS, lid, nwi)                              \
    for (int r_ = (lid); r_ < (ROWS); r_ += (nwi)) {                               \
        __local float *d_ = (dst) + r_ * HEAD_DIM;                                 \
        if ((r0) + r_ < (n)) {                                                     \
            __global const float *s_ = (src) + (size_t)((r0) + r_) * (rs);         \
            for (int c_ = 0; c_ < NV; c_++)                                        \
                VSTORE(VLOAD(c_, s_), c_, d_);                                     \
        } else {                                                                   \
            for (int c_ = 0; c_ < NV; c_++)                                        \
                VSTORE((vf)(0.0f), c_, d_);                                        \
        }                                                                          \
    }
#else
#define LOAD_TILE(dst, src, rs, r0, n, ROWS, lid, nwi)                              \
    for (int idx_ = (lid); idx_ < (ROWS) * NV; idx_ += (nwi)) {                    \
        int r_ = idx_ / NV, cv_ = idx_ - r_ * NV;                                  \
        vf val_ = (vf)(0.0f);                                                      \
        if ((r0) + r_ < (n))                                                       \
            val_ = VLOAD(cv_, (src) + (size_t)((r0) + r_) * (rs));                 \
        VSTORE(val_, idx_, (dst));                                                 \
    }
#endif

/* A layout's arguments: element (b, h, i, c) of x at x_off + b·x_bs + h·x_hs
 * + i·x_rs + c (floats). */
#define LAYOUT(x) ulong x##_off, ulong x##_bs, ulong x##_hs, ulong x##_rs
/* The arguments that say which keys a query sees (attn_mask.h). */
#define MASK_ARGS                                                                  \
    __global const int *key_len, int has_key_len, int heads, int n_q, int n_k,    \
        int causal, int window, int qoff

/* Operand x at this work-item's (b, h), and its row i, through the layout
 * arguments L_off, L_bs, L_hs, L_rs (L differs from x only for d_o: do). */
#define HEAD_OF(x, L) ((x) + L##_off + b * L##_bs + h * L##_hs)
#define ROW_OF(x, L, i) (HEAD_OF(x, L) + (size_t)(i) * L##_rs)

/* Groups run (b·heads + h, tile of TILE rows out of n) in dimension 0
 * (batch·heads travels with the tiles, see above): declares bh, b, h and
 * x0, the tile's first row. */
#define GROUP_TILE(n, TILE, x0)                                                    \
    const int tiles_ = ((n) + (TILE) - 1) / (TILE), grp_ = get_group_id(0);        \
    const int bh = grp_ / tiles_, b = bh / heads, h = bh - b * heads;              \
    const int x0 = (grp_ - bh * tiles_) * (TILE)

/* The prologue of the query-tile kernels (attn_fwd, attn_bwd_dq), whose
 * row `row` of a group serves query row i = i0 + row: declares GROUP_TILE's
 * names, i, kl, active, a_row and e_row (the keys row i sees), j_begin and
 * j_end (the group's key interval: from its first row's lo, rounded down to
 * a tile, to its last row's hi), kb and vb (K and V at this (b, h)). */
#define QUERY_TILE(row)                                                            \
    GROUP_TILE(n_q, TILE_Q, i0);                                                   \
    const int i = i0 + (row);                                                      \
    const int kl = keys_of(key_len, has_key_len, b, n_k);                          \
    const bool active = i < n_q;                                                   \
    const int a_row = vis_lo(i + qoff, window), e_row = vis_hi(i + qoff, kl, causal, window); \
    const int j_begin = vis_lo(i0 + qoff, window) / TILE_K * TILE_K;               \
    const int j_end = vis_hi(min(n_q, i0 + TILE_Q) - 1 + qoff, kl, causal, window); \
    __global const float *kb = HEAD_OF(k, k), *vb = HEAD_OF(v, v)

/* Key tile t of K and V (this (b, h): kb, vb) into Ks and Vs, between two
 * barriers, by the group's nwi work-items. */
#define LOAD_KV_TILE(t, nwi)                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                                  \
    LOAD_TILE(Ks, kb, k_rs, t, n_k, TILE_K, lid, nwi);                             \
    LOAD_TILE(Vs, vb, v_rs, t, n_k, TILE_K, lid, nwi);                             \
    barrier(CLK_LOCAL_MEM_FENCE)

#if LANES > 1
/* The split form's helpers (GPUs: LANES work-items per row), the
 * forward's and the backward's. */
/* Lane `lane` of a row holds vectors lane, lane + LANES, lane + 2·LANES, ...
 * of it: the lanes of a row read neighbouring addresses of a local row. */
#define LV(c, lane) ((c) * LANES + (lane))
/* A group's rows of scores in local memory, n per row (TILE_K for the
 * query-row kernels, TILE_Q for attn_bwd_dkdv), are padded by one float so
 * that the rows of a group read different banks. */
#define S_ROW(n) ((n) + 1)
/* Rows of partial scores (n, lane) likewise, by LANES - 1 floats: at
 * n·LANES (a multiple of 32) every row a warp holds would start in the
 * same bank, so the lanes' writes (column jj of each row: address r·stride
 * + jj·LANES + lane) and the owner lanes' sums (r·stride + lane·LANES + l)
 * were 32/LANES-way bank conflicts. With an odd stride both are at most
 * two-way on 32 banks for 2, 4 and 8 lanes (LANES + 1 does as well; one
 * float alone leaves the writes four-way at 4 lanes).
 * host/attention/tiles.c counts the same floats. */
#define SP_ROW(n) ((n) * LANES + LANES - 1)
#define SS S_ROW(TILE_K)
#define SPS SP_ROW(TILE_K)

/* x's slice · the same slice of local row r */
static inline float dot_lane(const vf *x, __local const float *r, int lane)
{
    vf d = (vf)(0.0f);
    for (int c = 0; c < NVL; c++)
        d = CLF_MAD(x[c], VLOAD(LV(c, lane), r), d);
    return hsum(d);
}

/* acc (a slice) += w · the same slice of local row r */
static inline void axpy_lane(vf *acc, float w, __local const float *r, int lane)
{
    for (int c = 0; c < NVL; c++)
        acc[c] = CLF_MAD((vf)(w), VLOAD(LV(c, lane), r), acc[c]);
}

/* The sum of a key's LANES partials (key, lane) in lane order. */
static inline float lanes_sum(__local const float *p)
{
    float s = p[0];
    for (int l = 1; l < LANES; l++)
        s += p[l];
    return s;
}

/* Each lane's partial x · local row jj of tile, for the keys jj in [a, e)
 * its row sees, into sp (key, lane); then a barrier, after which each key's
 * owner lane sums them (lanes_sum). Every work-item of the group calls it. */
CLF_GROUP_FN void lane_partials(__local float *sp, const vf *x, __local const float *tile, int a, int e,
                               int lane, bool sees)
{
    if (sees)
        for (int jj = a; jj < e; jj++)
            sp[jj * LANES + lane] = dot_lane(x, tile + jj * HEAD_DIM, lane);
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif /* LANES > 1 */

#endif
