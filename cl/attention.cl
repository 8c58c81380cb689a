/* attention.cl: scaled dot-product attention, OpenCL C 1.2.
 *
 * Operands are addressed through layouts: element (b, h, i, c) of Q, K, V,
 * O, dO, dQ, dK, dV lives at off + b*bs + h*hs + i*rs + c (floats), so the
 * kernels read straight out of fused projections. lse and delta are
 * (batch·heads, n_q) contiguous. key_len is int32 (batch) or unused.
 *
 * Query row i sits at position p = i + qoff among the keys and sees the
 * keys of one interval [lo(p), hi(p)):
 *   lo(p) = window >= 0 ? max(0, p - window) : 0
 *   hi(p) = min(key_len[b], causal ? p + 1 : n_k, window >= 0 ? p + window + 1 : n_k)
 * (vis_lo, vis_hi and keys_of in attn_mask.h, which decode_attn.cl shares).
 * Both ends grow with p, so a tile of rows sees an interval of key tiles and
 * the tiles outside it are never visited (restricted attention: O(n·r·d)).
 *
 *   attn_fwd        group = TILE_Q query rows of one (b, h); K, V tiles of
 *                   TILE_K rows in local memory; online softmax (base 2).
 *   attn_bwd_delta  delta[i] = Σ_c dO[i,c]·O[i,c]
 *   attn_bwd_dkdv   group = TILE_K key rows; Q, dO tiles of TILE_Q rows in
 *                   local memory; dK, dV written once (no atomics).
 *   attn_bwd_dq     group = TILE_Q query rows; K, V tiles in local memory.
 *   attn_mask_scores, attn_cache_append, attn_cache_gather(4),
 *   attn_cache_move(4): the naive path and the decoding cache.
 * LANES > 1 (GPUs) compiles attn_fwd, attn_bwd_dq and attn_bwd_dkdv in a
 * split form: each query row (each key row in dK/dV) is LANES work-items,
 * each holding HEAD_DIM/LANES of the row's vectors, so a work-item's
 * private arrays shrink by LANES and a group is TILE_Q·LANES items
 * (TILE_K·LANES). Scores are partial dot products summed across the lanes
 * through local memory. LANES = 1 (CPUs) is one work-item per row.
 * Every reduction runs in a fixed order: results are bit-identical run to run.
 * batch·heads always travels in dimension 0 (with the row tiles): NVIDIA's
 * drivers map dimensions 1 and 2 onto a CUDA grid's y and z, at most 65535.
 * Remainders are written x - (x / y)·y: LLVM turns a division and a remainder
 * of the same operands into that with a `freeze`, which Oclgrind 21.10's
 * uninitialised-value checker does not support (it stops the kernel). The
 * last step of a horizontal sum is dot(u, 1) rather than u.x + u.y: LLVM
 * turns the latter into a shufflevector whose mask has an undef lane, on
 * which that checker crashes; dot(u, 1) is u.x + u.y to the bit.
 */
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

#if LANES == 1
__kernel __attribute__((reqd_work_group_size(TILE_Q, 1, 1)))
void attn_fwd(__global float *o, LAYOUT(o),
              __global float *lse, ulong lse_off,
              __global const float *q, LAYOUT(q),
              __global const float *k, LAYOUT(k),
              __global const float *v, LAYOUT(v),
              MASK_ARGS, float scale)
{
    __local float Ks[TILE_K * HEAD_DIM];
    __local float Vs[TILE_K * HEAD_DIM];
    const int lid = get_local_id(0);
    QUERY_TILE(lid);

    const float qs = scale * LOG2E; /* scores in base 2 */
    vf qv[NV], acc[NV];
    float sv[TILE_K];
    float m = CLF_NEG_LARGE, l = 0.0f;
    if (active) {
        __global const float *qr = ROW_OF(q, q, i);
        for (int c = 0; c < NV; c++)
            qv[c] = VLOAD(c, qr) * qs;
    }
    for (int c = 0; c < NV; c++)
        acc[c] = (vf)(0.0f);

    for (int t = j_begin; t < j_end; t += TILE_K) {
        LOAD_KV_TILE(t, TILE_Q);
        if (!active)
            continue;
        const int a = max(a_row - t, 0), e = min(e_row - t, TILE_K);
        if (a >= e)
            continue;
        /* the scores of the fours of keys that hold a visible one, then
         * every other entry up to e8 (e rounded up to 8) masked: past e8
         * every entry would be masked, and its exp2 a zero, so the max,
         * the sum and P·V skip them with the same results */
        const int e8 = (e + 7) & ~7;
        for (int jj = a & ~7; jj < e; jj += 8)
            vstore8(dot8(qv, Ks + jj * HEAD_DIM), 0, sv + jj);
        if (a > 0 || e < e8)
            for (int jj = 0; jj < e8; jj++)
                if (jj < a || jj >= e)
                    sv[jj] = CLF_NEG_LARGE;
        float8 mx8 = vload8(0, sv);
        for (int jj = 8; jj < e8; jj += 8)
            mx8 = fmax(mx8, vload8(0, sv + jj));
        float4 mx4 = fmax(mx8.lo, mx8.hi);
        float2 mx2 = fmax(mx4.lo, mx4.hi);
        const float m_new = fmax(m, fmax(mx2.x, mx2.y));
        const float alpha = exp2(m - m_new);
        m = m_new;
        float8 rs8 = (float8)(0.0f);
        for (int jj = 0; jj < e8; jj += 8) {
            float8 pv = exp2(vload8(0, sv + jj) - m_new);
            rs8 += pv;
            vstore8(pv, 0, sv + jj);
        }
        for (int c = 0; c < NV; c++)
            acc[c] *= alpha;
        for (int jj = a & ~7; jj < e; jj += 8)
            axpy8(acc, vload8(0, sv + jj), Vs + jj * HEAD_DIM);
        float4 rs4 = rs8.lo + rs8.hi;
        float2 rs2 = rs4.lo + rs4.hi;
        const float rs = dot(rs2, (float2)(1.0f));
        l = l * alpha + rs;
    }
    if (!active)
        return;
    __global float *orow = ROW_OF(o, o, i);
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int c = 0; c < NV; c++)
        VSTORE(acc[c] * inv, c, orow);
    lse[lse_off + (size_t)bh * n_q + i] = l > 0.0f ? (m + log2(l)) * LN2 : CLF_NEG_LARGE;
}
#else /* LANES > 1 */

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

/* Work-item lid = r·LANES + lane serves query row i0 + r. Per key tile:
 * (1) each lane's partial scores of the keys its row sees, (2) the owner
 * lane of each key (key ≡ lane mod LANES) sums them into Ss, (3) every lane
 * of the row runs the same online softmax over Ss (so all keep the same m
 * and l) and accumulates its slice of P·V. */
__kernel __attribute__((reqd_work_group_size(TILE_Q * LANES, 1, 1)))
void attn_fwd(__global float *o, LAYOUT(o),
              __global float *lse, ulong lse_off,
              __global const float *q, LAYOUT(q),
              __global const float *k, LAYOUT(k),
              __global const float *v, LAYOUT(v),
              MASK_ARGS, float scale)
{
    __local float Ks[TILE_K * HEAD_DIM];
    __local float Vs[TILE_K * HEAD_DIM];
    __local float Sp[TILE_Q * SPS]; /* partial scores (row, key, lane) */
    __local float Ss[TILE_Q * SS];  /* scores (row, key) */
    const int lid = get_local_id(0), r = lid / LANES, lane = lid - r * LANES;
    QUERY_TILE(r);
    __local float *sp = Sp + r * SPS, *ss = Ss + r * SS;

    const float qs = scale * LOG2E; /* scores in base 2 */
    vf qv[NVL], acc[NVL];
    float m = CLF_NEG_LARGE, l = 0.0f;
    for (int c = 0; c < NVL; c++)
        qv[c] = acc[c] = (vf)(0.0f);
    if (active) {
        __global const float *qr = ROW_OF(q, q, i);
        for (int c = 0; c < NVL; c++)
            qv[c] = VLOAD(LV(c, lane), qr) * qs;
    }

    for (int t = j_begin; t < j_end; t += TILE_K) {
        LOAD_KV_TILE(t, TILE_Q * LANES);
        /* the row's visible keys of this tile are [a, e) (every lane agrees) */
        const int a = max(a_row - t, 0), e = min(e_row - t, TILE_K);
        const bool sees = active && a < e;
        lane_partials(sp, qv, Ks, a, e, lane, sees);
        if (sees)
            for (int jj = lane; jj < e; jj += LANES)
                if (jj >= a)
                    ss[jj] = lanes_sum(sp + jj * LANES);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!sees)
            continue;
        float mt = ss[a];
        for (int jj = a + 1; jj < e; jj++)
            mt = fmax(mt, ss[jj]);
        const float m_new = fmax(m, mt);
        const float alpha = exp2(m - m_new);
        m = m_new;
        for (int c = 0; c < NVL; c++)
            acc[c] *= alpha;
        float rs = 0.0f;
        for (int jj = a; jj < e; jj++) {
            const float pj = exp2(ss[jj] - m_new);
            rs += pj;
            axpy_lane(acc, pj, Vs + jj * HEAD_DIM, lane);
        }
        l = l * alpha + rs;
    }
    if (!active)
        return;
    __global float *orow = ROW_OF(o, o, i);
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int c = 0; c < NVL; c++)
        VSTORE(acc[c] * inv, LV(c, lane), orow);
    if (lane == 0)
        lse[lse_off + (size_t)bh * n_q + i] = l > 0.0f ? (m + log2(l)) * LN2 : CLF_NEG_LARGE;
}
#endif /* LANES */

/* delta (bh, n_q) = rowsum(dO ∘ O); global (n_q rounded up to the
 * work-group size, times batch·heads): rows of one (b, h) after another. */
__kernel void attn_bwd_delta(__global float *delta,
                             __global const float *d_o, LAYOUT(do),
                             __global const float *o, LAYOUT(o),
                             int heads, int n_q)
{
    const int lsz = get_local_size(0), padded = (n_q + lsz - 1) / lsz * lsz;
    const int bh = get_global_id(0) / padded, i = get_global_id(0) - bh * padded;
    if (i >= n_q)
        return;
    const int b = bh / heads, h = bh - b * heads;
    __global const float *x = ROW_OF(d_o, do, i);
    __global const float *y = ROW_OF(o, o, i);
    vf s = (vf)(0.0f);
    for (int c = 0; c < NV; c++)
        s = CLF_MAD(VLOAD(c, x), VLOAD(c, y), s);
    delta[(size_t)bh * n_q + i] = hsum(s);
}

/* The prologue of attn_bwd_dkdv, whose row `row` of a group serves key row
 * j = j0 + row: declares GROUP_TILE's names, j, active, a_row and e_row
 * (the query rows that see key j, 0 and 0 for none), i_begin and i_end (the
 * group's query interval: from its first key's first query, rounded down to
 * a tile, to its last key's end), qb and dob (Q and dO at this (b, h)).
 * Positions p that see key x: x < kl, p >= x (causal), x - window <= p <=
 * x + window. */
#define P_MIN(x) max(causal ? (x) : 0, window >= 0 ? (x) - window : 0)
#define P_END(x) (window >= 0 ? (x) + window + 1 : n_q + qoff)
/* Key row j = j0 + row of the tile at j0 (kl: the sequence's keys): the
 * query tiles [i_begin, i_end) that see any key of the tile, and the query
 * rows [a_row, e_row) that see key j. */
#define KEY_ROWS(row)                                                              \
    const int j = j0 + (row);                                                      \
    const bool active = j < n_k, sees_any = active && j < kl;                      \
    const int j_last = min(n_k, j0 + TILE_K) - 1;                                  \
    const int i_begin = j0 < kl ? max(0, P_MIN(j0) - qoff) / TILE_Q * TILE_Q : 0;  \
    const int i_end = j0 < kl ? min(n_q, P_END(j_last) - qoff) : 0;                \
    const int a_row = sees_any ? max(0, P_MIN(j) - qoff) : 0;                      \
    const int e_row = sees_any ? min(n_q, P_END(j) - qoff) : 0
#define KEY_TILE(row)                                                              \
    GROUP_TILE(n_k, TILE_K, j0);                                                   \
    const int kl = keys_of(key_len, has_key_len, b, n_k);                          \
    KEY_ROWS(row);                                                                 \
    __global const float *qb = HEAD_OF(q, q), *dob = HEAD_OF(d_o, do)

/* Key row j's K (scaled by qs, for base-2 scores) and V into kv, vv, and
 * its gradients' accumulators gk, gv at zero (all zeros past n_k). */
#define KEY_ROW_LOAD()                                                             \
    vf kv[NV], vv[NV], gk[NV], gv[NV];                                             \
    for (int c = 0; c < NV; c++) {                                                 \
        kv[c] = vv[c] = (vf)(0.0f);                                                \
        gk[c] = gv[c] = (vf)(0.0f);                                                \
    }                                                                              \
    if (active) {                                                                  \
        __global const float *kr = ROW_OF(k, k, j);                                \
        __global const float *vr = ROW_OF(v, v, j);                                \
        for (int c = 0; c < NV; c++) {                                             \
            kv[c] = VLOAD(c, kr) * qs;                                             \
            vv[c] = VLOAD(c, vr);                                                  \
        }                                                                          \
    }

/* Query rows ii..ii+QSTEP-1 of the tile in Qs, dOs, Ls, Ds against key row
 * j, those in [a, e) counted: ds = P ∘ (dP - delta), and gv += Pᵀ dO, gk +=
 * dSᵀ Q for them. */
#define KEY_ROW_DS(ii, ds)                                                         \
    do {                                                                           \
        const fq s_ = DOTQ(kv, Qs + (ii) * HEAD_DIM);                              \
        const fq dp_ = DOTQ(vv, dOs + (ii) * HEAD_DIM);                            \
        const fq pr_ = select((fq)(0.0f), exp2(s_ - VLOADQ(0, Ls + (ii))), LANES_INQ(ii, a, e)); \
        ds = pr_ * (dp_ - VLOADQ(0, Ds + (ii)));                                   \
        AXPYQ(gv, pr_, dOs + (ii) * HEAD_DIM);                                     \
        AXPYQ(gk, ds, Qs + (ii) * HEAD_DIM);                                       \
    } while (0)

/* dK (scaled) and dV of key row j from gk, gv. */
#define KEY_ROW_STORE()                                                            \
    do {                                                                           \
        __global float *dkr = ROW_OF(dk, dk, j);                                   \
        __global float *dvr = ROW_OF(dv, dv, j);                                   \
        for (int c = 0; c < NV; c++) {                                             \
            VSTORE(gk[c] * scale, c, dkr);                                         \
            VSTORE(gv[c], c, dvr);                                                 \
        }                                                                          \
    } while (0)

/* Query tile t of Q and dO into Qs and dOs, and of lse (base 2) and delta
 * into Ls and Ds (rows past n_q as zeros), between two barriers, by the
 * group's nwi work-items. */
#define LOAD_QDO_TILE(t, nwi)                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);                                                  \
    LOAD_TILE(Qs, qb, q_rs, t, n_q, TILE_Q, lid, nwi);                             \
    LOAD_TILE(dOs, dob, do_rs, t, n_q, TILE_Q, lid, nwi);                          \
    for (int x_ = lid; x_ < TILE_Q; x_ += (nwi)) {                                 \
        const bool in_ = (t) + x_ < n_q;                                           \
        Ls[x_] = in_ ? lse[lse_off + (size_t)bh * n_q + (t) + x_] * LOG2E : 0.0f;  \
        Ds[x_] = in_ ? delta[(size_t)bh * n_q + (t) + x_] : 0.0f;                  \
    }                                                                              \
    barrier(CLK_LOCAL_MEM_FENCE)

#if LANES == 1
/* One work-item per key row j: the query rows that see it form an interval. */
__kernel __attribute__((reqd_work_group_size(TILE_K, 1, 1)))
void attn_bwd_dkdv(__global float *dk, LAYOUT(dk),
                   __global float *dv, LAYOUT(dv),
                   __global const float *d_o, LAYOUT(do),
                   __global const float *q, LAYOUT(q),
                   __global const float *k, LAYOUT(k),
                   __global const float *v, LAYOUT(v),
                   __global const float *lse, ulong lse_off, __global const float *delta,
                   MASK_ARGS, float scale)
{
    __local float Qs[TILE_Q * HEAD_DIM];
    __local float dOs[TILE_Q * HEAD_DIM];
    __local float Ls[TILE_Q], Ds[TILE_Q];
    const int lid = get_local_id(0);
    KEY_TILE(lid);

    const float qs = scale * LOG2E;
    KEY_ROW_LOAD();
    for (int t = i_begin; t < i_end; t += TILE_Q) {
        LOAD_QDO_TILE(t, TILE_K);
        const int a = max(a_row - t, 0), e = min(e_row - t, TILE_Q);
        for (int ii = a & ~(QSTEP - 1); ii < e; ii += QSTEP) {
            fq ds;
            KEY_ROW_DS(ii, ds);
        }
    }
    if (active)
        KEY_ROW_STORE();
}

/* Two rows at once through the same loads of r (register blocking: one
 * load feeds two multiply-adds): x · rows r .. r+7 into *sx and y · them
 * into *sy (sixteen chains), and acc += w · rows r .. r+7, acc2 += w2 ·
 * them. Each chain adds its terms in dot8's and axpy8's order.
 *
 * How many of the eight rows go through the registers at once (FUSED_RB)
 * follows the device's native vector width (NATIVE_VEC, from
 * CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT; the launcher passes it): 16 floats
 * (AVX-512) come with 32 vector registers, which hold all sixteen chains
 * with x, y and a row; 8 floats (AVX, AVX2) come with 16, where sixteen
 * chains and three operands spill, so the rows go in two blocks of four
 * (eight chains; and axpy8x2's eight broadcast weights per block instead
 * of sixteen). The blocks split no chain: every sum is the same, to the
 * bit, as with one block of eight. */
#ifndef NATIVE_VEC
#define NATIVE_VEC 16
#endif
#if NATIVE_VEC >= 16
#define FUSED_RB 8
#else
#define FUSED_RB 4
#endif
static inline void dot8x2(const vf *x, const vf *y, __local const float *r, float8 *sx, float8 *sy)
{
#if FUSED_RB == 8
    vf d[16];
#pragma unroll
    for (int u = 0; u < 16; u++)
        d[u] = (vf)(0.0f);
#pragma unroll
    for (int c = 0; c < NV; c++) {
        const vf xc = x[c], yc = y[c];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const vf rv = VLOAD(c, r + u * HEAD_DIM);
            d[u] = CLF_MAD(xc, rv, d[u]);
            d[8 + u] = CLF_MAD(yc, rv, d[8 + u]);
        }
    }
    *sx = (float8)(hsum4(d[0], d[1], d[2], d[3]), hsum4(d[4], d[5], d[6], d[7]));
    *sy = (float8)(hsum4(d[8], d[9], d[10], d[11]), hsum4(d[12], d[13], d[14], d[15]));
#else
    float4 hx[2], hy[2];
#pragma unroll
    for (int blk = 0; blk < 2; blk++) {
        __local const float *rb = r + blk * 4 * HEAD_DIM;
        vf d[8];
#pragma unroll
        for (int u = 0; u < 8; u++)
            d[u] = (vf)(0.0f);
#pragma unroll
        for (int c = 0; c < NV; c++) {
            const vf xc = x[c], yc = y[c];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const vf rv = VLOAD(c, rb + u * HEAD_DIM);
                d[u] = CLF_MAD(xc, rv, d[u]);
                d[4 + u] = CLF_MAD(yc, rv, d[4 + u]);
            }
        }
        hx[blk] = hsum4(d[0], d[1], d[2], d[3]);
        hy[blk] = hsum4(d[4], d[5], d[6], d[7]);
    }
    *sx = (float8)(hx[0], hx[1]);
    *sy = (float8)(hy[0], hy[1]);
#endif
}

static inline void axpy8x2(vf *acc, vf *acc2, float8 w, float8 w2, __local const float *r)
{
    float wa[8], wb[8];
    vstore8(w, 0, wa);
    vstore8(w2, 0, wb);
#pragma unroll
    for (int u0 = 0; u0 < 8; u0 += FUSED_RB) {
#pragma unroll
        for (int c = 0; c < NV; c++) {
            vf t = acc[c], t2 = acc2[c];
#pragma unroll
            for (int u = u0; u < u0 + FUSED_RB; u++) {
                const vf rv = VLOAD(c, r + u * HEAD_DIM);
                t = CLF_MAD((vf)(wa[u]), rv, t);
                t2 = CLF_MAD((vf)(wb[u]), rv, t2);
            }
            acc[c] = t;
            acc2[c] = t2;
        }
    }
}

/* The query rows [a_row, e_row) that see key row j (0, 0 for none), as
 * KEY_ROWS counts them. */
#define KEY_SEEN_BY(j, a_row, e_row)                                               \
    do {                                                                           \
        const bool s_ = (j) < n_k && (j) < kl;                                     \
        a_row = s_ ? max(0, P_MIN(j) - qoff) : 0;                                  \
        e_row = s_ ? min(n_q, P_END(j) - qoff) : 0;                                \
    } while (0)

/* attn_bwd_fused (FlashAttention-2's order, LANES = 1 only): one group of
 * TILE_K / 2 items per (b, h), looping over its key tiles (outer) and their
 * query tiles (inner). Item r holds key rows j0 + 2r and j0 + 2r + 1
 * (two rows per item: each row of Q, dO and K read from local memory feeds
 * two multiply-adds; neighbours, so that a short sequence leaves whole
 * items idle rather than half of every item's work wasted). Per query
 * tile, an item adds to its keys' dK, dV as attn_bwd_dkdv does and writes
 * their columns of dS·scale into local memory (dSt is (query, key), so
 * that dQ's products read rows of it); after a barrier, item r serves query
 * rows 2r and 2r + 1, then TILE_K + 2r and TILE_K + 2r + 1, .. of the tile
 * and adds dS·K to dQ in global memory,
 * which only this group touches (zeroed first; barriers order the
 * read-modify-writes). So S, P, dP are computed once instead of twice:
 * 5 n²·d products, not 7. Query rows go eight at a time: TILE_Q >= 8. */
#define HALF_K (TILE_K / 2)
/* x.s0 .. x.s7 down a column of a (·, TILE_K) local tile from p */
#define COLUMN8_STORE(p, x)                                                        \
    do {                                                                           \
        const float8 x_ = (x);                                                     \
        (p)[0] = x_.s0;                                                            \
        (p)[TILE_K] = x_.s1;                                                       \
        (p)[2 * TILE_K] = x_.s2;                                                   \
        (p)[3 * TILE_K] = x_.s3;                                                   \
        (p)[4 * TILE_K] = x_.s4;                                                   \
        (p)[5 * TILE_K] = x_.s5;                                                   \
        (p)[6 * TILE_K] = x_.s6;                                                   \
        (p)[7 * TILE_K] = x_.s7;                                                   \
    } while (0)
#if TILE_Q >= 8
__kernel __attribute__((reqd_work_group_size(HALF_K, 1, 1)))
void attn_bwd_fused(__global float *dq, LAYOUT(dq),
                    __global float *dk, LAYOUT(dk),
                    __global float *dv, LAYOUT(dv),
                    __global const float *d_o, LAYOUT(do),
                    __global const float *q, LAYOUT(q),
                    __global const float *k, LAYOUT(k),
                    __global const float *v, LAYOUT(v),
                    __global const float *lse, ulong lse_off, __global const float *delta,
                    MASK_ARGS, float scale)
{
    __local float Qs[TILE_Q * HEAD_DIM];
    __local float dOs[TILE_Q * HEAD_DIM];
    __local float Ks[TILE_K * HEAD_DIM];
    __local float dSt[TILE_Q * TILE_K]; /* (query, key) */
    __local float Ls[TILE_Q], Ds[TILE_Q];
    const int lid = get_local_id(0);
    const int bh = get_group_id(0), b = bh / heads, h = bh - b * heads;
    const int kl = keys_of(key_len, has_key_len, b, n_k);
    const float qs = scale * LOG2E;
    __global const float *qb = HEAD_OF(q, q), *dob = HEAD_OF(d_o, do), *kb = HEAD_OF(k, k);
    for (int ii = lid; ii < n_q; ii += HALF_K) {
        __global float *dqr = ROW_OF(dq, dq, ii);
        for (int c = 0; c < NV; c++)
            VSTORE((vf)(0.0f), c, dqr);
    }
    for (int j0 = 0; j0 < n_k; j0 += TILE_K) {
        /* the tile's query interval, as KEY_ROWS finds it */
        const int j_last = min(n_k, j0 + TILE_K) - 1;
        const int i_begin = j0 < kl ? max(0, P_MIN(j0) - qoff) / TILE_Q * TILE_Q : 0;
        const int i_end = j0 < kl ? min(n_q, P_END(j_last) - qoff) : 0;
        const int j = j0 + 2 * lid, j2 = j + 1;
        int a_row, e_row, a_row2, e_row2;
        KEY_SEEN_BY(j, a_row, e_row);
        KEY_SEEN_BY(j2, a_row2, e_row2);
        /* K (scaled by qs, for base-2 scores) and V of both keys, and
         * their gradients' accumulators (all zeros past n_k) */
        vf kv[NV], vv[NV], gk[NV], gv[NV], kv2[NV], vv2[NV], gk2[NV], gv2[NV];
        for (int c = 0; c < NV; c++) {
            kv[c] = vv[c] = gk[c] = gv[c] = (vf)(0.0f);
            kv2[c] = vv2[c] = gk2[c] = gv2[c] = (vf)(0.0f);
        }
        if (j < n_k)
            for (int c = 0; c < NV; c++) {
                kv[c] = VLOAD(c, ROW_OF(k, k, j)) * qs;
                vv[c] = VLOAD(c, ROW_OF(v, v, j));
            }
        if (j2 < n_k)
            for (int c = 0; c < NV; c++) {
                kv2[c] = VLOAD(c, ROW_OF(k, k, j2)) * qs;
                vv2[c] = VLOAD(c, ROW_OF(v, v, j2));
            }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        LOAD_TILE(Ks, kb, k_rs, j0, n_k, TILE_K, lid, HALF_K);
        for (int t = i_begin; t < i_end; t += TILE_Q) {
            LOAD_QDO_TILE(t, HALF_K);
            const int a = max(a_row - t, 0), e = min(e_row - t, TILE_Q);
            const int a2 = max(a_row2 - t, 0), e2 = min(e_row2 - t, TILE_Q);
            /* the rows and keys that exist: past them dS is never read,
             * or is zero and would add nothing to dQ */
            const int rows = min(TILE_Q, n_q - t), keys = (min(TILE_K, kl - j0) + 7) & ~7;
            for (int ii = 0; ii < rows; ii += 8) {
                float8 ds = (float8)(0.0f), ds2 = (float8)(0.0f);
                if ((ii + 8 > a && ii < e) || (ii + 8 > a2 && ii < e2)) {
                    float8 s, s2, dp, dp2;
                    dot8x2(kv, kv2, Qs + ii * HEAD_DIM, &s, &s2);
                    dot8x2(vv, vv2, dOs + ii * HEAD_DIM, &dp, &dp2);
                    const float8 L = vload8(0, Ls + ii), D = vload8(0, Ds + ii);
                    const float8 pr = select((float8)(0.0f), exp2(s - L), lanes_in8(ii, a, e));
                    const float8 pr2 = select((float8)(0.0f), exp2(s2 - L), lanes_in8(ii, a2, e2));
                    ds = pr * (dp - D);
                    ds2 = pr2 * (dp2 - D);
                    axpy8x2(gv, gv2, pr, pr2, dOs + ii * HEAD_DIM);
                    axpy8x2(gk, gk2, ds, ds2, Qs + ii * HEAD_DIM);
                }
                COLUMN8_STORE(dSt + ii * TILE_K + 2 * lid, ds * scale);
                COLUMN8_STORE(dSt + ii * TILE_K + 2 * lid + 1, ds2 * scale);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int r0 = 0; r0 < rows; r0 += TILE_K) {
                /* query rows r0 + 2·lid and the next: a second row past
                 * `rows` is read as zeros and not written */
                const int i1 = r0 + 2 * lid, i2 = i1 + 1;
                const bool in1 = i1 < rows, in2 = i2 < rows;
                if (!in1)
                    continue;
                __global float *dqr = ROW_OF(dq, dq, t + i1);
                __global float *dqr2 = ROW_OF(dq, dq, t + (in2 ? i2 : 0));
                __local const float *ds_row = dSt + i1 * TILE_K;
                __local const float *ds_row2 = dSt + (in2 ? i2 : 0) * TILE_K;
                vf g[NV], g2[NV];
                for (int c = 0; c < NV; c++) {
                    g[c] = VLOAD(c, dqr);
                    g2[c] = in2 ? VLOAD(c, dqr2) : (vf)(0.0f);
                }
                for (int jj = 0; jj < keys; jj += 8)
                    axpy8x2(g, g2, vload8(0, ds_row + jj), vload8(0, ds_row2 + jj), Ks + jj * HEAD_DIM);
                for (int c = 0; c < NV; c++) {
                    VSTORE(g[c], c, dqr);
                    if (in2)
                        VSTORE(g2[c], c, dqr2);
                }
            }
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
        if (j < n_k)
            for (int c = 0; c < NV; c++) {
                VSTORE(gk[c] * scale, c, ROW_OF(dk, dk, j));
                VSTORE(gv[c], c, ROW_OF(dv, dv, j));
            }
        if (j2 < n_k)
            for (int c = 0; c < NV; c++) {
                VSTORE(gk2[c] * scale, c, ROW_OF(dk, dk, j2));
                VSTORE(gv2[c], c, ROW_OF(dv, dv, j2));
            }
    }
}
#endif
#else /* LANES > 1 */

/* Split like attn_bwd_dq with queries and keys swapped: work-item lid =
 * r·LANES + lane serves key row j0 + r and holds its slices of k, v, dK
 * and dV, so a group is TILE_K·LANES items. Per query tile: (1) the lanes'
 * partials of s = k·q for the queries its key is seen by, summed by each
 * query's owner lane into P; (2) every lane adds its slice of P·dO to dV
 * while writing its partials of dP = v·dO, which the owner lanes sum into
 * dS = P·(dP − D) in place; (3) every lane adds its slice of dS·Q to dK. */
__kernel __attribute__((reqd_work_group_size(TILE_K * LANES, 1, 1)))
void attn_bwd_dkdv(__global float *dk, LAYOUT(dk),
                   __global float *dv, LAYOUT(dv),
                   __global const float *d_o, LAYOUT(do),
                   __global const float *q, LAYOUT(q),
                   __global const float *k, LAYOUT(k),
                   __global const float *v, LAYOUT(v),
                   __global const float *lse, ulong lse_off, __global const float *delta,
                   MASK_ARGS, float scale)
{
    __local float Qs[TILE_Q * HEAD_DIM];
    __local float dOs[TILE_Q * HEAD_DIM];
    __local float Ls[TILE_Q], Ds[TILE_Q];
    __local float Sp[TILE_K * SP_ROW(TILE_Q)]; /* partial sums (key row, query, lane) */
    __local float Ss[TILE_K * S_ROW(TILE_Q)];  /* P, then dS (key row, query) */
    const int lid = get_local_id(0), r = lid / LANES, lane = lid - r * LANES;
    KEY_TILE(r);
    __local float *sp = Sp + r * SP_ROW(TILE_Q), *ss = Ss + r * S_ROW(TILE_Q);

    const float qs = scale * LOG2E;
    vf kv[NVL], vv[NVL], gk[NVL], gv[NVL];
    for (int c = 0; c < NVL; c++) {
        kv[c] = vv[c] = (vf)(0.0f);
        gk[c] = gv[c] = (vf)(0.0f);
    }
    if (active) {
        __global const float *kr = ROW_OF(k, k, j);
        __global const float *vr = ROW_OF(v, v, j);
        for (int c = 0; c < NVL; c++) {
            kv[c] = VLOAD(LV(c, lane), kr) * qs;
            vv[c] = VLOAD(LV(c, lane), vr);
        }
    }
    for (int t = i_begin; t < i_end; t += TILE_Q) {
        LOAD_QDO_TILE(t, TILE_K * LANES);
        /* the queries of this tile that see key j are [a, e) (every lane agrees) */
        const int a = max(a_row - t, 0), e = min(e_row - t, TILE_Q);
        const bool sees = a < e;
        lane_partials(sp, kv, Qs, a, e, lane, sees);
        if (sees)
            for (int ii = lane; ii < e; ii += LANES)
                if (ii >= a)
                    ss[ii] = exp2(lanes_sum(sp + ii * LANES) - Ls[ii]);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (sees)
            for (int ii = a; ii < e; ii++)
                axpy_lane(gv, ss[ii], dOs + ii * HEAD_DIM, lane);
        lane_partials(sp, vv, dOs, a, e, lane, sees);
        if (sees)
            for (int ii = lane; ii < e; ii += LANES)
                if (ii >= a)
                    ss[ii] *= lanes_sum(sp + ii * LANES) - Ds[ii];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (sees)
            for (int ii = a; ii < e; ii++)
                axpy_lane(gk, ss[ii], Qs + ii * HEAD_DIM, lane);
    }
    if (!active)
        return;
    __global float *dkr = ROW_OF(dk, dk, j);
    __global float *dvr = ROW_OF(dv, dv, j);
    for (int c = 0; c < NVL; c++) {
        VSTORE(gk[c] * scale, LV(c, lane), dkr);
        VSTORE(gv[c], LV(c, lane), dvr);
    }
}
#endif /* LANES */
#undef P_MIN
#undef P_END

#if LANES == 1
__kernel __attribute__((reqd_work_group_size(TILE_Q, 1, 1)))
void attn_bwd_dq(__global float *dq, LAYOUT(dq),
                 __global const float *d_o, LAYOUT(do),
                 __global const float *q, LAYOUT(q),
                 __global const float *k, LAYOUT(k),
                 __global const float *v, LAYOUT(v),
                 __global const float *lse, ulong lse_off, __global const float *delta,
                 MASK_ARGS, float scale)
{
    __local float Ks[TILE_K * HEAD_DIM];
    __local float Vs[TILE_K * HEAD_DIM];
    const int lid = get_local_id(0);
    QUERY_TILE(lid);
    const float qs = scale * LOG2E;
    vf qv[NV], gv[NV], g[NV];
    float L = 0.0f, D = 0.0f;
    for (int c = 0; c < NV; c++)
        qv[c] = gv[c] = g[c] = (vf)(0.0f);
    if (active) {
        __global const float *qr = ROW_OF(q, q, i);
        __global const float *gr = ROW_OF(d_o, do, i);
        for (int c = 0; c < NV; c++) {
            qv[c] = VLOAD(c, qr) * qs;
            gv[c] = VLOAD(c, gr);
        }
        L = lse[lse_off + (size_t)bh * n_q + i] * LOG2E;
        D = delta[(size_t)bh * n_q + i];
    }
    for (int t = j_begin; t < j_end; t += TILE_K) {
        LOAD_KV_TILE(t, TILE_Q);
        if (!active)
            continue;
        const int a = max(a_row - t, 0), e = min(e_row - t, TILE_K);
        for (int jj = a & ~7; jj < e; jj += 8) {
            const float8 s = dot8(qv, Ks + jj * HEAD_DIM), dp = dot8(gv, Vs + jj * HEAD_DIM);
            const float8 pr = select((float8)(0.0f), exp2(s - L), lanes_in8(jj, a, e));
            axpy8(g, pr * (dp - D), Ks + jj * HEAD_DIM);
        }
    }
    if (!active)
        return;
    __global float *dqr = ROW_OF(dq, dq, i);
    for (int c = 0; c < NV; c++)
        VSTORE(g[c] * scale, c, dqr);
}
#else /* LANES > 1 */

/* Split like attn_fwd: per key tile, the lanes' partials of s = q·k, summed
 * by each key's owner lane into P; then the partials of dP = dO·v, summed
 * into dS = P·(dP − D) in place; then every lane adds its slice of dS·K.
 * The two sums share one partials buffer (the local memory of attn_fwd). */
__kernel __attribute__((reqd_work_group_size(TILE_Q * LANES, 1, 1)))
void attn_bwd_dq(__global float *dq, LAYOUT(dq),
                 __global const float *d_o, LAYOUT(do),
                 __global const float *q, LAYOUT(q),
                 __global const float *k, LAYOUT(k),
                 __global const float *v, LAYOUT(v),
                 __global const float *lse, ulong lse_off, __global const float *delta,
                 MASK_ARGS, float scale)
{
    __local float Ks[TILE_K * HEAD_DIM];
    __local float Vs[TILE_K * HEAD_DIM];
    __local float Sp[TILE_Q * SPS]; /* partial sums (row, key, lane) */
    __local float Ss[TILE_Q * SS];  /* P, then dS (row, key) */
    const int lid = get_local_id(0), r = lid / LANES, lane = lid - r * LANES;
    QUERY_TILE(r);
    __local float *sp = Sp + r * SPS, *ss = Ss + r * SS;
    const float qs = scale * LOG2E;
    vf qv[NVL], gv[NVL], g[NVL];
    float L = 0.0f, D = 0.0f;
    for (int c = 0; c < NVL; c++)
        qv[c] = gv[c] = g[c] = (vf)(0.0f);
    if (active) {
        __global const float *qr = ROW_OF(q, q, i);
        __global const float *gr = ROW_OF(d_o, do, i);
        for (int c = 0; c < NVL; c++) {
            qv[c] = VLOAD(LV(c, lane), qr) * qs;
            gv[c] = VLOAD(LV(c, lane), gr);
        }
        L = lse[lse_off + (size_t)bh * n_q + i] * LOG2E;
        D = delta[(size_t)bh * n_q + i];
    }
    for (int t = j_begin; t < j_end; t += TILE_K) {
        LOAD_KV_TILE(t, TILE_Q * LANES);
        const int a = max(a_row - t, 0), e = min(e_row - t, TILE_K);
        const bool sees = active && a < e;
        lane_partials(sp, qv, Ks, a, e, lane, sees);
        if (sees)
            for (int jj = lane; jj < e; jj += LANES)
                if (jj >= a)
                    ss[jj] = exp2(lanes_sum(sp + jj * LANES) - L);
        barrier(CLK_LOCAL_MEM_FENCE);
        lane_partials(sp, gv, Vs, a, e, lane, sees);
        if (sees)
            for (int jj = lane; jj < e; jj += LANES)
                if (jj >= a)
                    ss[jj] *= lanes_sum(sp + jj * LANES) - D;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (sees)
            for (int jj = a; jj < e; jj++)
                axpy_lane(g, ss[jj], Ks + jj * HEAD_DIM, lane);
    }
    if (!active)
        return;
    __global float *dqr = ROW_OF(dq, dq, i);
    for (int c = 0; c < NVL; c++)
        VSTORE(g[c] * scale, LV(c, lane), dqr);
}
#endif /* LANES */

/* Naive path: scores (bh, n_q, n_k) contiguous at s_off; entries a query
 * does not see are set to `value`. global (n_k rounded up to the work-group
 * size, times batch·heads; n_q). */
__kernel void attn_mask_scores(__global float *s, ulong s_off, __global const int *key_len, int has_key_len,
                               int heads, int n_q, int n_k, int causal, int window, int qoff, float value)
{
    const int lsz = get_local_size(0), padded = (n_k + lsz - 1) / lsz * lsz;
    const int bh = get_global_id(0) / padded, j = get_global_id(0) - bh * padded, i = get_global_id(1);
    if (j >= n_k || i >= n_q)
        return;
    const int kl = keys_of(key_len, has_key_len, bh / heads, n_k);
    const int p = i + qoff;
    if (j < vis_lo(p, window) || j >= vis_hi(p, kl, causal, window))
        s[s_off + ((size_t)bh * n_q + i) * n_k + j] = value;
}

/* Decoding: the step's keys and values (rows of src, batch rows of
 * src_rs floats, K at k_off and V at v_off) appended at position `step`
 * (or each row's row_len[b] - 1) of the (batch, heads, max_len, HEAD_DIM)
 * caches. Four floats per work-item where HEAD_DIM allows (a head's row
 * never splits), else one: global (heads·HEAD_DIM/AV, batch). */
#if HEAD_DIM % 4 == 0
#define AV 4
#else
#define AV 1
#endif
__kernel void attn_cache_append(__global float *ck, __global float *cv, __global const float *src,
                                ulong k_off, ulong v_off, ulong src_rs, int heads, int max_len, int step,
                                __global const int *row_len, int has_row_len)
{
    const int c = get_global_id(0) * AV, b = get_global_id(1);
    if (c >= heads * HEAD_DIM)
        return;
    const int h = c / HEAD_DIM, cc = c - h * HEAD_DIM, t = has_row_len ? row_len[b] - 1 : step;
    const size_t dst = (((size_t)b * heads + h) * max_len + t) * HEAD_DIM + cc;
#if AV == 4
    vstore4(vload4(0, src + k_off + (size_t)b * src_rs + c), 0, ck + dst);
    vstore4(vload4(0, src + v_off + (size_t)b * src_rs + c), 0, cv + dst);
#else
    ck[dst] = src[k_off + (size_t)b * src_rs + c];
    cv[dst] = src[v_off + (size_t)b * src_rs + c];
#endif
}

/* dst row r = src row rows[r], rows of row_len floats (heads blocks of
 * head_len), of which only the first used_len of each head block are
 * copied (the positions appended so far); global (heads·used_len, n). */
__kernel void attn_cache_gather(__global float *dst, __global const float *src, __global const int *rows,
                                ulong row_len, ulong head_len, ulong used_len)
{
    const size_t c = get_global_id(0);
    const int r = get_global_id(1);
    if (c >= row_len / head_len * used_len)
        return;
    const size_t h = c / used_len, off = h * head_len + (c - h * used_len);
    dst[(size_t)r * row_len + off] = src[(size_t)rows[r] * row_len + off];
}

/* The same in float4s, when row_len, head_len and used_len are multiples of
 * 4 (arguments still in floats); global (heads·used_len/4, n). A quarter of
 * the work-items, each a 16-byte copy: a CPU's loop over them is the cost. */
__kernel void attn_cache_gather4(__global float *dst, __global const float *src, __global const int *rows,
                                 ulong row_len, ulong head_len, ulong used_len)
{
    const size_t c = get_global_id(0), u = used_len / 4;
    const int r = get_global_id(1);
    if (c >= row_len / head_len * u)
        return;
    const size_t h = c / u, off = h * head_len + (c - h * u) * 4;
    vstore4(vload4(0, src + (size_t)rows[r] * row_len + off), 0, dst + (size_t)r * row_len + off);
}

/* In place, m rows of the same buffer: row pairs[2i] = row pairs[2i + 1],
 * no source among the destinations (sentences leave and the last rows move
 * into their places; the rows that stay are not copied); row_len, head_len
 * and used_len as attn_cache_gather's; global (heads·used_len, m). */
__kernel void attn_cache_move(__global float *buf, __global const int *pairs, ulong row_len, ulong head_len,
                              ulong used_len)
{
    const size_t c = get_global_id(0);
    const int i = get_global_id(1);
    if (c >= row_len / head_len * used_len)
        return;
    const size_t h = c / used_len, off = h * head_len + (c - h * used_len);
    buf[(size_t)pairs[2 * i] * row_len + off] = buf[(size_t)pairs[2 * i + 1] * row_len + off];
}

/* The same in float4s, as attn_cache_gather4; global (heads·used_len/4, m). */
__kernel void attn_cache_move4(__global float *buf, __global const int *pairs, ulong row_len, ulong head_len,
                               ulong used_len)
{
    const size_t c = get_global_id(0), u = used_len / 4;
    const int i = get_global_id(1);
    if (c >= row_len / head_len * u)
        return;
    const size_t h = c / u, off = h * head_len + (c - h * u) * 4;
    vstore4(vload4(0, buf + (size_t)pairs[2 * i + 1] * row_len + off), 0, buf + (size_t)pairs[2 * i] * row_len + off);
}
