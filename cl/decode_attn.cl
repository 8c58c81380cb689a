/* decode_attn.cl: attention for a few query rows per (sequence, head), the
 * decoding step's, split over the keys (split-K). OpenCL C 1.2.
 *
 * Operands as in attention.cl: element (b, h, i, c) of Q, K, V, O at
 * off + b*bs + h*hs + i*rs + c (floats); Q and O have n_q rows (1, or the
 * beams that share a sentence's memory in cross-attention), K and V n_k
 * rows. Query row i sits at position qoff + i among the keys and sees
 * [lo, hi) (attn_mask.h). lse is (batch·heads·n_q) at lse_off. With
 * has_kv_rows, sequence b's key j is in batch row kv_rows[b·kv_stride + j]
 * of K and V (decoding's beams: KV_ROW), else in row b.
 *
 *   attn_dec_part     group g = row·parts + part, row = (b·heads + h)·n_q
 *                     + i: the part's
 *                     share of the row's visible keys, at most CHUNK of
 *                     them (the row's interval cut into `parts` equal
 *                     chunks). (1) the scores into local memory, then
 *                     the group's max m and sum of exponentials l
 *                     (fixed-order trees); (2) the
 *                     weighted sum of V rows with work-items spread over
 *                     the row's vectors and, when a row has fewer vectors
 *                     than the group has items, over KG groups of keys
 *                     (summed in local memory in a fixed order). With
 *                     parts = 1 it writes o and lse itself; otherwise
 *                     (m, l) and the unnormalised sum to `part`:
 *                       part[2g], part[2g + 1]          m (base 2), l
 *                       part[2·groups + g·HEAD_DIM + c]  Σ_j 2^(s_j - m)·v_j[c]
 *   attn_dec_combine  group = one query row: M = max m, L = Σ 2^(m - M)·l,
 *                     o = Σ 2^(m - M)·acc / L, lse = (M + log2 L)·ln 2
 *                     (a part that saw no key has m = CLF_NEG_LARGE,
 *                     l = 0 and weighs nothing; a row that sees no key
 *                     gets zeros and CLF_NEG_LARGE, as attn_fwd gives).
 * The scores of (1) take one of two shapes, the -D option SCORE_LANES:
 *   0 (CPUs)  one work-item per key, the key's whole row in one loop;
 *   1 (GPUs)  the lanes of (2): item (kg, ci) takes keys kg, kg + KG, ...
 *             of each batch of WG keys and vectors ci, ci + CPK, ... of
 *             each, so that neighbouring items read neighbouring vectors
 *             of a K row (coalesced; one item per key reads addresses
 *             HEAD_DIM floats apart); the partials go to local memory
 *             (key, lane) and item jj of the group sums key jj's in lane
 *             order.
 * Every sum runs in a fixed order: results are bit-identical run to run.
 * WG (the work-group of attn_dec_part, a power of two), HEAD_DIM, CHUNK
 * and SCORE_LANES are -D options chosen by host/attention/decode_attn.c,
 * whose dec_local_bytes counts the local arrays below.
 */
#include "common.h"
#include "attn_mask.h"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef CHUNK
#define CHUNK 256
#endif

#include "head_vec.h"

/* The weighted sum: CPK work-items per group of keys, each holding VPI of
 * the row's NV vectors; KG groups of keys. */
#if NV >= WG
#define CPK WG
#define KG 1
#else
#define CPK NV
#define KG (WG / NV)
#endif
#define VPI ((NV + CPK - 1) / CPK)

#ifndef SCORE_LANES
#define SCORE_LANES 0
#endif
/* Local floats shared by (1)'s lane partials, WG keys of PS each (an odd
 * stride: the owners' reads, PS floats apart, fall in different banks),
 * and (2)'s key groups' sums; a barrier lies between their uses. */
#define PS (CPK | 1)
#define P_FLOATS (SCORE_LANES ? WG * PS : 0)
#define R_FLOATS (KG > 1 ? KG * NV * VEC : 0)
#define X_FLOATS (P_FLOATS > R_FLOATS ? P_FLOATS : R_FLOATS)

/* The batch row of K and V that holds sequence b's key j: b, or with
 * kv_rows (a beam's keys stay in the rows of the hypotheses that computed
 * them) kv_rows[b·kv_stride + j]. */
#define KV_ROW(j) ((size_t)(has_kv_rows ? kv_rows[(size_t)b * kv_stride + (j)] : b))

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void attn_dec_part(__global float *part, int parts,
                   __global float *o, ulong o_off, ulong o_bs, ulong o_hs, ulong o_rs,
                   __global float *lse, ulong lse_off,
                   __global const float *q, ulong q_off, ulong q_bs, ulong q_hs, ulong q_rs,
                   __global const float *k, ulong k_off, ulong k_bs, ulong k_hs, ulong k_rs,
                   __global const float *v, ulong v_off, ulong v_bs, ulong v_hs, ulong v_rs,
                   __global const int *key_len, int has_key_len, int heads, int n_q, int n_k,
                   int causal, int window, int qoff, float scale,
                   __global const int *kv_rows, int has_kv_rows, int kv_stride)
{
    __local float Qs[HEAD_DIM];
    __local float S[CHUNK];
    __local float red[WG];
#if X_FLOATS > 0
    __local float X[X_FLOATS]; /* P (key, lane) in (1), R in (2) */
#endif
    const int lid = get_local_id(0), g = get_group_id(0);
    /* row = (b·heads + h)·n_q + i: query row i of (b, h), at position qoff + i */
    const int row = g / parts, pt = g - row * parts, bh = row / n_q, i = row - bh * n_q;
    const int b = bh / heads, h = bh - b * heads;
    const int kl = keys_of(key_len, has_key_len, b, n_k);
    const int lo = vis_lo(qoff + i, window), hi = vis_hi(qoff + i, kl, causal, window);
    const int n = max(hi - lo, 0), chunk = (n + parts - 1) / parts;
    const int j0 = lo + pt * chunk;
    const int cnt = clamp(min(hi, j0 + chunk) - j0, 0, CHUNK);

    /* the query, scaled for base-2 scores, shared by the group */
    __global const float *qr = q + q_off + b * q_bs + h * q_hs + (size_t)i * q_rs;
    const float qs = scale * LOG2E;
    for (int c = lid; c < HEAD_DIM; c += WG)
        Qs[c] = qr[c] * qs;
    barrier(CLK_LOCAL_MEM_FENCE);

    /* (1) scores, their max and sum of exponentials */
    const int kg = lid / CPK, ci = lid - kg * CPK; /* (2)'s lanes, and (1)'s with SCORE_LANES */
    float mloc = CLF_NEG_LARGE;
#if SCORE_LANES
    /* batches of WG keys (cnt is the group's: every item takes each barrier) */
    vf qv[VPI];
    for (int u = 0; u < VPI; u++)
        qv[u] = ci + u * CPK < NV ? VLOAD(ci + u * CPK, Qs) : (vf)(0.0f);
    __global const float *kh = k + k_off + h * k_hs;
    for (int jb = 0; jb < cnt; jb += WG) {
        if (kg < KG)
            for (int jj = kg; jj < WG && jb + jj < cnt; jj += KG) {
                const int j = j0 + jb + jj;
                __global const float *kr = kh + KV_ROW(j) * k_bs + (size_t)j * k_rs;
                vf d = (vf)(0.0f);
                for (int u = 0; u < VPI; u++) {
                    const int c = ci + u * CPK;
                    if (c < NV)
                        d = CLF_MAD(qv[u], VLOAD(c, kr), d);
                }
                X[jj * PS + ci] = hsum(d);
            }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (jb + lid < cnt) {
            __local const float *p = X + lid * PS;
            float s = p[0];
            for (int l = 1; l < CPK; l++)
                s += p[l];
            S[jb + lid] = s;
            mloc = fmax(mloc, s);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    if (cnt > 0) {
        __global const float *kh = k + k_off + h * k_hs;
        for (int j = lid; j < cnt; j += WG) {
            __global const float *kr = kh + KV_ROW(j0 + j) * k_bs + (size_t)(j0 + j) * k_rs;
            vf d = (vf)(0.0f);
            for (int c = 0; c < NV; c++)
                d = CLF_MAD(VLOAD(c, Qs), VLOAD(c, kr), d);
            const float s = hsum(d);
            S[j] = s;
            mloc = fmax(mloc, s);
        }
    }
#endif
    const float m = wg_max(red, mloc);
    float lsum = 0.0f;
    for (int j = lid; j < cnt; j += WG) {
        const float pj = exp2(S[j] - m);
        S[j] = pj;
        lsum += pj;
    }
    const float l = wg_sum(red, lsum); /* its barriers publish S */

    /* (2) Σ_j p_j·v_j: item (kg, ci) takes keys kg, kg + KG, ... and
     * vectors ci, ci + CPK, ... of each */
    vf acc[VPI];
    for (int u = 0; u < VPI; u++)
        acc[u] = (vf)(0.0f);
    if (kg < KG && cnt > 0) {
        __global const float *vh = v + v_off + h * v_hs;
        for (int j = kg; j < cnt; j += KG) {
            const vf pj = (vf)(S[j]);
            __global const float *vr = vh + KV_ROW(j0 + j) * v_bs + (size_t)(j0 + j) * v_rs;
            for (int u = 0; u < VPI; u++) {
                const int c = ci + u * CPK;
                if (c < NV)
                    acc[u] = CLF_MAD(pj, VLOAD(c, vr), acc[u]);
            }
        }
    }
#if KG > 1
    /* here CPK = NV and VPI = 1: the key groups' sums, added in group order */
    if (kg < KG)
        VSTORE(acc[0], kg * NV + ci, X);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (kg == 0)
        for (int g2 = 1; g2 < KG; g2++)
            acc[0] += VLOAD(g2 * NV + ci, X);
#endif
    if (kg != 0)
        return;
    if (parts == 1) {
        __global float *orow = o + o_off + b * o_bs + h * o_hs + (size_t)i * o_rs;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int u = 0; u < VPI; u++) {
            const int c = ci + u * CPK;
            if (c < NV)
                VSTORE(acc[u] * inv, c, orow);
        }
        if (lid == 0)
            lse[lse_off + row] = l > 0.0f ? (m + log2(l)) * LN2 : CLF_NEG_LARGE;
    } else {
        __global float *pa = part + 2 * (size_t)get_num_groups(0) + (size_t)g * HEAD_DIM;
        for (int u = 0; u < VPI; u++) {
            const int c = ci + u * CPK;
            if (c < NV)
                VSTORE(acc[u], c, pa);
        }
        if (lid == 0) {
            part[2 * (size_t)g] = m;
            part[2 * (size_t)g + 1] = l;
        }
    }
}

/* One group per query row (b, h, i), any size: every item reads the parts'
 * (m, l) (a few floats) and combines columns lid, lid + size, ... */
__kernel void attn_dec_combine(__global float *o, ulong o_off, ulong o_bs, ulong o_hs, ulong o_rs,
                               __global float *lse, ulong lse_off,
                               __global const float *part, int parts, int heads, int n_q, int groups)
{
    const int row = get_group_id(0), bh = row / n_q, i = row - bh * n_q, b = bh / heads, h = bh - b * heads;
    const int lid = get_local_id(0), lsz = get_local_size(0);
    __global const float *ml = part + 2 * (size_t)row * parts;
    __global const float *pa = part + 2 * (size_t)groups + (size_t)row * parts * HEAD_DIM;
    float M = CLF_NEG_LARGE;
    for (int p = 0; p < parts; p++)
        M = fmax(M, ml[2 * p]);
    float L = 0.0f;
    for (int p = 0; p < parts; p++)
        L += exp2(ml[2 * p] - M) * ml[2 * p + 1];
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    __global float *orow = o + o_off + b * o_bs + h * o_hs + (size_t)i * o_rs;
    for (int c = lid; c < HEAD_DIM; c += lsz) {
        float a = 0.0f;
        for (int p = 0; p < parts; p++)
            a += exp2(ml[2 * p] - M) * pa[(size_t)p * HEAD_DIM + c];
        orow[c] = a * inv;
    }
    if (lid == 0)
        lse[lse_off + row] = L > 0.0f ? (M + log2(L)) * LN2 : CLF_NEG_LARGE;
}
