/* kv_cache.cl: decoding's key/value caches (host/attention/kv_cache.c),
 * OpenCL C 1.2: a step's keys and values appended, and rows gathered or
 * moved when beam search reorders or drops sentences. Built per head
 * dimension (-DHEAD_DIM), apart from attention.cl's tiles. */
#include "common.h"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif

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

