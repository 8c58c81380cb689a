/* decode_attn.c: launchers of cl/decode_attn.cl, decoding's attention:
 * a few query rows per (sequence, head) over its keys (one, or the beams
 * sharing a sentence's memory), the keys split into parts (split-K) so that
 * a few long rows and many short ones both give the device enough
 * work-groups; a second kernel combines the parts.
 *
 * Operands as clf_attention_forward's with n_q <= 64: q and o (batch,
 * heads, n_q, d_k), k and v (batch, heads, n_k, d_k) through layouts, lse
 * (batch·heads·n_q). The parts' partial results, (m, l) and d_k
 * unnormalised sums per (query row, part), live in the scratch arena's
 * PART slot.
 *
 * What the device decides (host/attention's other kernels take tiles from
 * the parameter table; these take the row-wise ops' ROWS_WG and the
 * device's limits):
 *   - the scores' shape: several lanes per key on GPUs (coalesced reads
 *     of K), one work-item per key on CPUs (-DSCORE_LANES);
 *   - the work-group of attn_dec_part: 64 items, at most ROWS_WG (16 on
 *     CPUs, whose work-items loop between barriers: a wide group there only
 *     lengthens the loops; none on GPUs), at most what device and kernel
 *     allow, halved until its local memory fits (clf_ops_kernel_wg);
 *   - CHUNK, the most keys a part takes: 256, halved (down to 32, then
 *     with the work-group) until local memory fits;
 *   - the parts: enough that the groups (sequences · heads · parts) reach
 *     8 per compute unit on a GPU (several resident groups hide memory
 *     latency) and 2 on a CPU (a group is a thread's loop; more parts only
 *     add the combination), but no part under 16 keys on a GPU and 64 on a
 *     CPU (each part pays for its query, two reductions and d_k + 2 floats
 *     written and read back), and never fewer than CHUNK requires. One
 *     part writes o and lse directly, with no second kernel.
 * Every choice is a power of two down to 1 or a count, so a legal launch
 * exists for any device with local memory for the query, one key and one
 * work-item's reduction (the error names the limit otherwise). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_internal.h"
#include "ops/ops_internal.h"
#include "runtime/settings.h"

#define DEC_WG_WANT 64
#define DEC_CHUNK_MAX 256
#define DEC_CHUNK_PREF_MIN 32

/* Local memory of attn_dec_part, mirroring its arrays: the query, CHUNK
 * scores, WG floats of reductions and one array shared by the scores' lane
 * partials (with lanes: WG keys of CPK | 1 floats, CPK = min(NV, WG)) and,
 * when a row's vectors are fewer than the items, KG key groups' sums. */
static size_t dec_local_bytes(size_t wg, size_t chunk, size_t d_k, bool lanes)
{
    size_t vec = d_k % 8 == 0 ? 8 : d_k % 4 == 0 ? 4 : 1, nv = d_k / vec;
    size_t kg = nv >= wg ? 1 : wg / nv, cpk = nv >= wg ? wg : nv;
    size_t p = lanes ? wg * (cpk | 1) : 0, r = kg > 1 ? kg * nv * vec : 0;
    return (d_k + chunk + wg + (p > r ? p : r)) * sizeof(float);
}

static clf_status dec_kernels_get(clf_ctx_t *ctx, size_t d_k, struct clf_attention_dec *out)
{
    /* leave a little local memory for the compiler's own use, as tiles.c does */
    size_t budget = ctx->max_local_mem > 1024 ? ctx->max_local_mem - 512 : ctx->max_local_mem;
    size_t want = DEC_WG_WANT, chunk = DEC_CHUNK_MAX;
    /* GPUs score each key with several lanes (coalesced K reads); a CPU's
     * work-item loops over whole rows, which its caches and vectors like */
    bool lanes = !(ctx->dev.type & CL_DEVICE_TYPE_CPU);
    while (dec_local_bytes(want, chunk, d_k, lanes) > budget) {
        if (chunk > DEC_CHUNK_PREF_MIN)
            chunk /= 2;
        else if (want > 1)
            want /= 2;
        else if (chunk > 1)
            chunk /= 2;
        else
            return clf_error_set(ctx, CLF_ERR_UNSUPPORTED,
                                 "decode attention (attn_dec_part, d_k %zu): needs %zu bytes of local memory even "
                                 "with work-groups of 1 and one key per part, %s has %zu (local_mem%s) of which %zu "
                                 "are usable",
                                 d_k, dec_local_bytes(1, 1, d_k, lanes), ctx->dev.device_name, ctx->max_local_mem,
                                 ctx->dev.shaped[0] ? " (shaped by CLF_DEVICE_LIMITS)" : "", budget);
    }
    char extra[96], opts[160];
    snprintf(extra, sizeof extra, "-DHEAD_DIM=%zu -DCHUNK=%zu -DSCORE_LANES=%d", d_k, chunk, lanes ? 1 : 0);
    size_t wg;
    clf_status st = clf_ops_kernel_wg(ctx, "decode_attn.cl", "attn_dec_part", want, extra, &out->part, &wg);
    if (st)
        return st;
    /* the same program (the options clf_ops_kernel_wg settled on) */
    snprintf(opts, sizeof opts, "-DWG=%zu %s", wg, extra);
    if ((st = clf_kernel_get(ctx, "decode_attn.cl", opts, "attn_dec_combine", &out->combine)))
        return st;
    out->wg = wg;
    out->chunk = chunk;
    out->d_k = d_k;
    out->ctx = ctx;
    return CLF_OK;
}

/* The most keys a query row of d sees: each row's interval, every key valid. */
static size_t visible_bound(const struct clf_attention_desc *d)
{
    size_t most = 0, w = d->window >= 0 ? (size_t)d->window : 0;
    for (size_t i = 0; i < d->n_q; i++) {
        size_t p = d->q_pos_offset + i, lo = d->window >= 0 && p > w ? p - w : 0, hi = d->n_k;
        if (d->causal && p + 1 < hi)
            hi = p + 1;
        if (d->window >= 0 && p + w + 1 < hi)
            hi = p + w + 1;
        if (hi > lo && hi - lo > most)
            most = hi - lo;
    }
    return most;
}

size_t clf_attention_decode_parts(const clf_ctx_t *ctx, const struct clf_attention_dec *dec,
                                  const struct clf_attention_desc *d, size_t parts)
{
    size_t n = visible_bound(d), need = (n + dec->chunk - 1) / dec->chunk;
    if (need < 1)
        need = 1;
    if (!parts) {
        bool cpu = (ctx->dev.type & CL_DEVICE_TYPE_CPU) != 0;
        size_t cu = ctx->dev.compute_units ? ctx->dev.compute_units : 1;
        size_t groups = cu * (cpu ? 2 : 8), rows = d->batch * d->heads * d->n_q, min_keys = cpu ? 64 : 16;
        size_t fill = (groups + rows - 1) / rows, most = (n + min_keys - 1) / min_keys;
        parts = fill < most ? fill : most;
    }
    return parts > need ? parts : need;
}

clf_status clf_attention_decode_with(clf_ctx_t *ctx, struct clf_attention_dec *cache, size_t parts,
                                     const struct clf_attention_layout *o, clf_tensor *lse,
                                     const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                     const struct clf_attention_layout *v, const struct clf_attention_desc *d)
{
    const char *op = "attention_decode";
    clf_status st;
    if ((st = clf_attention_check_operands(ctx, op, o, q, k, v, d)))
        return st;
    if (d->n_q < 1 || d->n_q > 64)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: n_q %zu: decoding's attention takes 1 to 64 query rows per "
                             "sequence and head (clf_attention_forward takes more)", op, d->n_q);
    size_t rows = d->batch * d->heads * d->n_q;
    if (!lse || !lse->buf || clf_tensor_numel(lse) != rows)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: lse has %zu elements, want batch·heads·n_q = %zu", op,
                             lse && lse->buf ? clf_tensor_numel(lse) : 0, rows);
    struct clf_attention_dec own = {0}, *dec = cache ? cache : &own;
    if (!dec->part || dec->d_k != d->d_k || dec->ctx != ctx) {
        struct clf_attention_dec got = {0};
        if ((st = dec_kernels_get(ctx, d->d_k, &got)))
            return st;
        *dec = got;
    }
    parts = clf_attention_decode_parts(ctx, dec, d, parts);
    /* groups index an int and every work-item of dimension 0 too */
    if (parts > (size_t)INT_MAX / rows || rows * parts > (size_t)INT_MAX / dec->wg)
        return clf_error_set(ctx, CLF_ERR_ARG, "%s: batch·heads %zu in %zu parts of %zu work-items: past 2^31", op,
                             rows, parts, dec->wg);
    cl_mem part = NULL; /* one part: attn_dec_part writes o and lse itself */
    size_t part_bytes = rows * parts * (d->d_k + 2) * sizeof(float);
    if (parts > 1 && (st = clf_scratch_get(ctx, CLF_SCRATCH_PART, part_bytes, &part)))
        return st;
    struct lay lo = lay_of(o), lq = lay_of(q), lk = lay_of(k), lv = lay_of(v);
    struct mask_args m = mask_of(d);
    cl_ulong lse_off = lse->offset;
    cl_int np = (cl_int)parts, heads = (cl_int)d->heads, n_q = (cl_int)d->n_q, groups = (cl_int)(rows * parts);
    cl_mem kv_rows = d->kv_rows ? d->kv_rows->buf : NULL;
    cl_int has_kv_rows = d->kv_rows != NULL, kv_stride = (cl_int)d->kv_rows_stride;
    struct clf_arg args[] = {CLF_ARG(part),    CLF_ARG(np),          LAY_ARGS(lo),       CLF_ARG(lse->buf),
                             CLF_ARG(lse_off), LAY_ARGS(lq),         LAY_ARGS(lk),       LAY_ARGS(lv),
                             MASK_ARGS(m),     CLF_ARG(kv_rows),     CLF_ARG(has_kv_rows), CLF_ARG(kv_stride)};
    if ((st = clf_kernel_set_args(ctx, dec->part, "attn_dec_part", args, sizeof args / sizeof args[0])))
        return st;
    size_t wg = dec->wg, global = rows * parts * wg;
    if ((st = clf_kernel_launch(ctx, dec->part, "attn_dec_part", 1, &global, &wg)) || parts == 1)
        return st;
    struct clf_arg ac[] = {LAY_ARGS(lo), CLF_ARG(lse->buf), CLF_ARG(lse_off), CLF_ARG(part),
                           CLF_ARG(np),  CLF_ARG(heads),    CLF_ARG(n_q),     CLF_ARG(groups)};
    if ((st = clf_kernel_set_args(ctx, dec->combine, "attn_dec_combine", ac, sizeof ac / sizeof ac[0])))
        return st;
    size_t wc = clf_kernel_wg_limit(ctx, dec->combine, clf_ops_pow2(d->d_k, 64)), gc = rows * wc;
    return clf_kernel_launch(ctx, dec->combine, "attn_dec_combine", 1, &gc, &wc);
}

clf_status clf_attention_decode(clf_ctx_t *ctx, const struct clf_attention_layout *o, clf_tensor *lse,
                                const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                const struct clf_attention_layout *v, const struct clf_attention_desc *d)
{
    return clf_attention_decode_with(ctx, NULL, 0, o, lse, q, k, v, d);
}

clf_status clf_attention_decode_step(clf_ctx_t *ctx, struct clf_attention_kernels *ks,
                                     const struct clf_attention_layout *o, clf_tensor *lse,
                                     const struct clf_attention_layout *q, const struct clf_attention_layout *k,
                                     const struct clf_attention_layout *v, const struct clf_attention_desc *d)
{
    const char *e = clf_setting_get("CLF_DECODE_ATTN");
    if (e && !strcmp(e, "tiled"))
        return clf_attention_forward_with(ctx, ks, o, lse, q, k, v, d);
    return clf_attention_decode_with(ctx, ks ? &ks->dec : NULL, 0, o, lse, q, k, v, d);
}
