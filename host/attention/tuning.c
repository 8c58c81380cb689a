/* tuning.c: the attention kernels' tile sizes per device, in one table.
 *
 * An entry matches a device by a substring of its name (or any name when
 * NULL) and by type; the first match wins, so specific entries come first
 * and every device type ends with a generic default. A device without a
 * specific entry runs with its type's generic parameters (`tuned` false);
 * `clformer bench attention` prints what is in force. Values are clamped to
 * the device's local memory and work-group limits at launch.
 *
 * A device's tuning file (written by `clformer tune`) overrides the table;
 * the entry then reads "tuning file". For trying tiles by hand,
 * CLF_ATTN_TILE_Q and CLF_ATTN_TILE_K override both (powers of two), and
 * CLF_ATTN_LANES (1, 2, 4 or 8) the work-items per query row of attn_fwd
 * and attn_bwd_dq (tests use it to run the GPU form on a CPU); the entry
 * then reads "env". Whatever the source, tiles are at least
 * CLF_ATTN_MIN_TILE_Q and CLF_ATTN_MIN_TILE_K rows, and lanes are halved
 * until they divide d_k (d_k 36 with 8 lanes runs 4; odd d_k runs 1).
 *
 * Lanes: CPUs run one work-item per query row (lanes 1), which keeps a
 * row's q and accumulator in one item's registers and vectorises across
 * d_k. GPUs split a row over lanes work-items (a group of tile_q·lanes
 * items): the private arrays shrink by that factor instead of spilling,
 * and groups are at least a whole wavefront. */
#include <stdlib.h>
#include <string.h>

#include "attention_internal.h"

struct tuning_entry {
    const char *name_contains; /* NULL: any device of the type */
    cl_device_type type;       /* 0: any type */
    const char *label;
    bool tuned;
    size_t tile_q, tile_k, lanes;
    bool fast_math;
};

static const struct tuning_entry table[] = {
    /* PoCL's CPU device: measured with `clformer bench attention` on a
     * 2-core AMD EPYC (Zen, AVX2), d_k 64. */
    {"pthread", CL_DEVICE_TYPE_CPU, "pocl-cpu", true, 64, 64, 1, false},
    /* not measured on any GPU yet: 32 rows × 4 lanes = 128 items (two
     * NVIDIA warps, two AMD wave64s), 36 KiB of local memory at d_k 64 */
    {NULL, CL_DEVICE_TYPE_GPU, "generic-gpu", false, 32, 32, 4, false},
    {NULL, CL_DEVICE_TYPE_CPU, "generic-cpu", false, 64, 64, 1, false},
    {NULL, 0, "generic", false, 32, 32, 1, false},
};

/* Local memory (floats) of the forward/dQ kernels: 2·TILE_K rows of K and
 * V, and with lanes > 1 the partial scores (TILE_Q·TILE_K·lanes) and the
 * scores (TILE_Q rows of TILE_K + 1). */
static size_t fwd_floats(size_t tq, size_t tk, size_t lanes, size_t d_k)
{
    return 2 * tk * d_k + (lanes > 1 ? tq * tk * lanes + tq * (tk + 1) : 0);
}

/* ... and of dK/dV: 2·TILE_Q rows of Q and dO plus two floats per row. */
static size_t dkdv_floats(size_t tq, size_t d_k)
{
    return 2 * tq * d_k + 2 * tq;
}

static size_t local_bytes(size_t tq, size_t tk, size_t lanes, size_t d_k)
{
    size_t a = fwd_floats(tq, tk, lanes, d_k), b = dkdv_floats(tq, d_k);
    return (a > b ? a : b) * sizeof(float);
}

clf_status clf_attention_tuning_get(clf_ctx_t *ctx, size_t d_k, struct clf_attention_tuning *out)
{
    if (d_k == 0 || d_k > CLF_ATTN_MAX_HEAD_DIM)
        return clf_error_set(ctx, CLF_ERR_ARG, "attention tuning: d_k %zu outside 1..%d", d_k,
                             CLF_ATTN_MAX_HEAD_DIM);
    const struct tuning_entry *e = &table[sizeof table / sizeof table[0] - 1];
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const struct tuning_entry *t = &table[i];
        if (t->type && !(ctx->dev.type & t->type))
            continue;
        if (t->name_contains && !strstr(ctx->dev.device_name, t->name_contains))
            continue;
        e = t;
        break;
    }
    out->entry = e->label;
    out->tuned = e->tuned;
    out->fast_math = e->fast_math;
    size_t tq = e->tile_q, tk = e->tile_k, lanes = e->lanes;
    /* the device's tuning file (`clformer tune`) over the table */
    if (ctx->kparams.attn_tile_q || ctx->kparams.attn_tile_k) {
        tq = ctx->kparams.attn_tile_q ? ctx->kparams.attn_tile_q : tq;
        tk = ctx->kparams.attn_tile_k ? ctx->kparams.attn_tile_k : tk;
        out->entry = "tuning file";
        out->tuned = true;
    }
    const char *eq = getenv("CLF_ATTN_TILE_Q"), *ek = getenv("CLF_ATTN_TILE_K");
    size_t vq = eq ? strtoul(eq, NULL, 10) : 0, vk = ek ? strtoul(ek, NULL, 10) : 0;
    if (vq && !(vq & (vq - 1)))
        tq = vq, out->entry = "env";
    if (vk >= 8 && !(vk & (vk - 1)))
        tk = vk, out->entry = "env";
    const char *el = getenv("CLF_ATTN_LANES");
    size_t vl = el ? strtoul(el, NULL, 10) : 0;
    if (vl && vl <= 8 && !(vl & (vl - 1)))
        lanes = vl, out->entry = "env";
    /* each lane holds d_k/lanes of a row */
    while (d_k % lanes)
        lanes /= 2;
    /* the kernels step through tiles four rows at a time (and the forward's
     * scores eight at a time): smaller tiles would read past them */
    if (tq < CLF_ATTN_MIN_TILE_Q)
        tq = CLF_ATTN_MIN_TILE_Q;
    if (tk < CLF_ATTN_MIN_TILE_K)
        tk = CLF_ATTN_MIN_TILE_K;
    /* leave a little local memory for the compiler's own use */
    size_t budget = ctx->max_local_mem > 1024 ? ctx->max_local_mem - 512 : ctx->max_local_mem;
    while (tq * lanes > ctx->max_wg && tq > CLF_ATTN_MIN_TILE_Q)
        tq /= 2;
    while (tq * lanes > ctx->max_wg && lanes > 1)
        lanes /= 2;
    while (tk > ctx->max_wg && tk > CLF_ATTN_MIN_TILE_K)
        tk /= 2;
    while (local_bytes(tq, tk, lanes, d_k) > budget && (tq > CLF_ATTN_MIN_TILE_Q || tk > CLF_ATTN_MIN_TILE_K)) {
        if ((tk >= tq && tk > CLF_ATTN_MIN_TILE_K) || tq == CLF_ATTN_MIN_TILE_Q)
            tk /= 2;
        else
            tq /= 2;
    }
    const char *shaped = ctx->dev.shaped[0] ? " (shaped by CLF_DEVICE_LIMITS)" : "";
    if (tk > ctx->max_wg || tq * lanes > ctx->max_wg)
        return clf_error_set(ctx, CLF_ERR_UNSUPPORTED,
                             "attention (%s, d_k %zu): the smallest tile needs work-groups of %zu items, %s allows "
                             "%zu (max_wg%s)", tk > ctx->max_wg ? "attn_bwd_dkdv" : "attn_fwd, attn_bwd_dq", d_k,
                             tk > ctx->max_wg ? tk : tq, ctx->dev.device_name, ctx->max_wg, shaped);
    if (local_bytes(tq, tk, lanes, d_k) > budget) {
        bool kv = fwd_floats(tq, tk, lanes, d_k) >= dkdv_floats(tq, d_k); /* which kernel needs the most */
        return clf_error_set(ctx, CLF_ERR_UNSUPPORTED,
                             "attention (%s, d_k %zu): needs %zu bytes of local memory even with the smallest tiles "
                             "(tile_q %zu, tile_k %zu, lanes %zu), %s has %zu (local_mem%s) of which %zu are usable",
                             kv ? "attn_fwd, attn_bwd_dq" : "attn_bwd_dkdv", d_k, local_bytes(tq, tk, lanes, d_k),
                             tq, tk, lanes, ctx->dev.device_name, ctx->max_local_mem, shaped, budget);
    }
    out->tile_q = tq;
    out->tile_k = tk;
    out->lanes = lanes;
    return CLF_OK;
}
