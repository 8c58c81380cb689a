/* attention_bwd.cl: the backward of attention.cl's tiled attention, OpenCL
 * C 1.2, a program of its own (built with the forward's options, the same
 * tiles; attention.cl's opening comment describes the layouts, the mask
 * and LANES).
 *
 *   attn_bwd_delta  delta[i] = Σ_c dO[i,c]·O[i,c]
 *   attn_bwd_dkdv   group = TILE_K key rows; Q, dO tiles of TILE_Q rows in
 *                   local memory; dK, dV written once (no atomics).
 *   attn_bwd_dq     group = TILE_Q query rows; K, V tiles in local memory.
 *   attn_bwd_fused  (LANES = 1, TILE_Q >= 8) dK, dV and dQ in one pass.
 */
#include "common.h"
#include "attn_mask.h"
#include "attention_tiles.h"

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
