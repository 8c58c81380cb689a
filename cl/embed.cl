/* embed.cl: token embeddings plus positions, and their backward.
 *   pos_sinusoid     pos (len, d) = the sinusoids of positions pos_offset ..,
 *                    interleaved (nsin 0) or in halves (nsin = ⌈d/2⌉)
 *   embed_fwd        y (rows, d) = dropout(table[ids[r]]·scale + pos(t)),
 *                    rows = batch·len, t = pos_offset + r % len, or
 *                    prow[r] when has_prow (decoding rows at positions of
 *                    their own); pos is pos_sinusoid's table or learned
 *                    (max_len, d)
 *   embed_bwd_table  dtable[id] += scale·Σ dropout'(dy[r]) over the rows of
 *                    each distinct id (uids (nuniq), starts (nuniq+1),
 *                    order (rows): the host-built index), rows in order
 *   embed_bwd_pos    dlearned[pos_offset + t] += Σ_b dropout'(dy[b·len + t])
 * Dropout is indexed by the element of y (r·d + j). The two backward
 * kernels run one work-item per (row of the table, column or four columns),
 * all in dimension 0 (ITEM): a batch's distinct ids (and positions) can
 * pass 65535, the most NVIDIA's drivers allow in dimensions 1 and 2. */
#include "common.h"
#include "dropout.h"
#define DROP(i) clf_dropout_factor((ulong)(i), p, scale, seed_lo, seed_hi, stream, step)

/* PE(t, j), frequency 10000^(-2i/d): interleaved (nsin 0, the paper's
 * and tensor2tensor's) sin for even j, cos for odd, 2i = j & ~1; in halves
 * (nsin = ⌈d/2⌉ sine columns, Marian's) sin for j < nsin with 2i = 2j,
 * cos after them with 2i = 2(j - nsin). (`half` is a type in OpenCL C.) The frequency comes from exp2 of a small exact
 * exponent so the angle's error is that of one float product. */
static float sinusoid(uint t, uint j, uint d, uint nsin)
{
    uint e = nsin ? 2 * (j < nsin ? j : j - nsin) : (j & ~1u);
    bool is_cos = nsin ? j >= nsin : (j & 1u) != 0;
    float freq = exp2(-(float)e / (float)d * 13.287712379549449f);  /* log2(10000) */
    float a = (float)t * freq;
    return is_cos ? cos(a) : sin(a);
}

/* pos (len, d) = PE(pos_offset + t, j): the sinusoids once per call, so
 * embed_fwd reads batch rows of them instead of computing each */
__kernel void pos_sinusoid(__global float *pos, uint len, uint d, uint pos_offset, uint nsin)
{
    uint i = get_global_id(0);
    if (i >= len * d)
        return;
    uint t = i / d;
    pos[i] = sinusoid(pos_offset + t, i - t * d, d, nsin);
}

/* four consecutive elements of y per work-item: one Philox block. Row r
 * reads positions pos[po + (t - pos_base)·d], t = pos_offset + r % len or
 * prow[r]: pos_base is 0 for a learned table (max_len, d) or a sinusoid
 * table from position 0, pos_offset for pos_sinusoid's from there.
 * Four inside one row are read and written with vload4/vstore4 (which
 * need only float alignment); four that cross a row's end (d not a multiple
 * of 4) or y's end take the scalar loop, whose bits are the same. */
__kernel void embed_fwd(__global float *y, uint yo, __global const int *ids, __global const float *table, uint to,
                        uint vocab, __global const float *pos, uint po, uint pos_base, uint rows, uint d,
                        uint len, uint pos_offset, __global const int *prow, int has_prow, float emb_scale,
                        DROP_PARAMS)
{
    uint b = get_global_id(0), i0 = 4 * b, n = rows * d;
    if (i0 >= n)
        return;
    clf_factors4 f = clf_dropout_factors4((ulong)b, p, scale, seed_lo, seed_hi, stream, step);
    uint r0 = i0 / d, j0 = i0 - r0 * d;
    if (j0 + 4 <= d) {  /* hence i0 + 4 <= n */
        int id = ids[r0];
        uint t = has_prow ? (uint)prow[r0] : pos_offset + r0 % len;
        float4 pe = vload4(0, pos + po + (t - pos_base) * d + j0);
        float4 v = (id >= 0 && (uint)id < vocab) ? vload4(0, table + to + (uint)id * d + j0) * emb_scale + pe
                                                 : (float4)(NAN);
        vstore4(v * (float4)(f.f0, f.f1, f.f2, f.f3), 0, y + yo + i0);
        return;
    }
    for (uint k = 0; k < 4; k++) {
        uint i = i0 + k, r = i / d, j = i - r * d;
        if (i >= n)
            break;
        uint t = has_prow ? (uint)prow[r] : pos_offset + r % len;
        int id = ids[r];
        float pe = pos[po + (t - pos_base) * d + j];
        float v = (id >= 0 && (uint)id < vocab) ? table[to + (uint)id * d + j] * emb_scale + pe : NAN;
        y[yo + i] = v * clf_factors4_at(f, k);
    }
}

/* QUAD 1 (d a multiple of 4): each work-item takes four columns, whose
 * elements share one Philox block; the sums run in the same order as with
 * QUAD 0, so the results are the same bits. */
#ifndef QUAD
#define QUAD 0
#endif

/* Work-item (u, c) of nrows·cols, u a distinct id or a position and c a
 * column group, flattened row after row into dimension 0: consecutive
 * items read consecutive columns. Declares u and c; items past the end
 * return. The remainder is written x - (x / y)·y (see attention.cl:
 * Oclgrind's `freeze`). */
#define ITEM(nrows, cols, u, c)                                                    \
    const size_t gid_ = get_global_id(0);                                          \
    if (gid_ >= (size_t)(nrows) * (cols))                                          \
        return;                                                                    \
    const uint u = (uint)(gid_ / (cols)), c = (uint)gid_ - u * (cols)

#if QUAD
__kernel void embed_bwd_table(__global float *dtable, uint to, __global const float *dy, uint dyo,
                              __global const int *uids, __global const int *starts, __global const int *order,
                              uint nuniq, uint d, float emb_scale, DROP_PARAMS)
{
    ITEM(nuniq, d / 4, u, q);
    float4 s = (float4)(0.0f);
    for (int k = starts[u]; k < starts[u + 1]; k++) {
        uint e = (uint)order[k] * d + 4 * q;
        clf_factors4 f = clf_dropout_factors4((ulong)(e / 4), p, scale, seed_lo, seed_hi, stream, step);
        s += vload4(0, dy + dyo + e) * (float4)(f.f0, f.f1, f.f2, f.f3);
    }
    __global float *o = dtable + to + (uint)uids[u] * d + 4 * q;
    vstore4(vload4(0, o) + emb_scale * s, 0, o);
}

__kernel void embed_bwd_pos(__global float *dlearned, uint lo, __global const float *dy, uint dyo, uint batch,
                            uint len, uint d, uint pos_offset, DROP_PARAMS)
{
    ITEM(len, d / 4, t, q);
    float4 s = (float4)(0.0f);
    for (uint b = 0; b < batch; b++) {
        uint e = (b * len + t) * d + 4 * q;
        clf_factors4 f = clf_dropout_factors4((ulong)(e / 4), p, scale, seed_lo, seed_hi, stream, step);
        s += vload4(0, dy + dyo + e) * (float4)(f.f0, f.f1, f.f2, f.f3);
    }
    __global float *o = dlearned + lo + (pos_offset + t) * d + 4 * q;
    vstore4(vload4(0, o) + s, 0, o);
}
#else
__kernel void embed_bwd_table(__global float *dtable, uint to, __global const float *dy, uint dyo,
                              __global const int *uids, __global const int *starts, __global const int *order,
                              uint nuniq, uint d, float emb_scale, DROP_PARAMS)
{
    ITEM(nuniq, d, u, j);
    float s = 0.0f;
    for (int k = starts[u]; k < starts[u + 1]; k++) {
        uint e = (uint)order[k] * d + j;
        s += dy[dyo + e] * DROP(e);
    }
    dtable[to + (uint)uids[u] * d + j] += emb_scale * s;
}

__kernel void embed_bwd_pos(__global float *dlearned, uint lo, __global const float *dy, uint dyo, uint batch,
                            uint len, uint d, uint pos_offset, DROP_PARAMS)
{
    ITEM(len, d, t, j);
    float s = 0.0f;
    for (uint b = 0; b < batch; b++) {
        uint e = (b * len + t) * d + j;
        s += dy[dyo + e] * DROP(e);
    }
    dlearned[lo + (pos_offset + t) * d + j] += s;
}
#endif
