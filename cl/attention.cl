/* attention.cl: scaled dot-product attention, the forward, OpenCL C 1.2.
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
 *   attn_fwd          group = TILE_Q query rows of one (b, h); K, V tiles
 *                     of TILE_K rows in local memory; online softmax (base 2).
 *   attn_mask_scores  the naive path's mask over materialised scores.
 * The backward is attention_bwd.cl and decoding's caches kv_cache.cl,
 * programs of their own, so that a forward compiles neither (the backward
 * took more than half of this file's compile time on PoCL); what the
 * forward and backward share is attention_tiles.h.
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
#include "attention_tiles.h"

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
