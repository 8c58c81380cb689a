/* tiles.c: the attention kernels' tiles and lanes for a device and a
 * head size: the values in force (clf_params_in_force: the parameter
 * table's entry for the device in host/runtime/tuning_table.c, over it the
 * device's tuning file, over that the settings CLF_ATTN_TILE_Q,
 * CLF_ATTN_TILE_K and CLF_ATTN_LANES), clamped here to the device's
 * limits. `clformer bench attention` and `clformer tune --show` print what
 * is in force; `entry` names the table's entry, or "tuning file", or "env"
 * when a setting decided.
 *
 * Whatever the source, tiles are at least CLF_ATTENTION_MIN_TILE_Q and
 * CLF_ATTENTION_MIN_TILE_K rows, and lanes are halved until they divide d_k
 * (d_k 36 with 8 lanes runs 4; odd d_k runs 1). Then tiles (and lanes)
 * are halved to fit the work-group limit and local memory. Lanes split the
 * rows of all three tiled kernels: query rows in attn_fwd and attn_bwd_dq
 * (groups of tile_q·lanes), key rows in attn_bwd_dkdv (tile_k·lanes). */
#include <string.h>

#include "attention_internal.h"
#include "runtime/settings.h"

/* Local memory (floats) of the forward/dQ kernels: 2·TILE_K rows of K and
 * V, and with lanes > 1 the partial scores (TILE_Q rows of TILE_K·lanes +
 * lanes - 1: SPS, padded against bank conflicts) and the scores (TILE_Q
 * rows of TILE_K + 1: SS). */
static size_t fwd_floats(size_t tq, size_t tk, size_t lanes, size_t d_k)
{
    return 2 * tk * d_k + (lanes > 1 ? tq * (tk * lanes + lanes - 1) + tq * (tk + 1) : 0);
}

/* ... and of dK/dV: 2·TILE_Q rows of Q and dO plus two floats per row, and
 * with lanes > 1 the same partial sums and scores with the roles swapped
 * (TILE_K key rows of TILE_Q·lanes + lanes - 1, and of TILE_Q + 1). */
static size_t dkdv_floats(size_t tq, size_t tk, size_t lanes, size_t d_k)
{
    return 2 * tq * d_k + 2 * tq + (lanes > 1 ? tk * (tq * lanes + lanes - 1) + tk * (tq + 1) : 0);
}

static size_t local_bytes(size_t tq, size_t tk, size_t lanes, size_t d_k)
{
    size_t a = fwd_floats(tq, tk, lanes, d_k), b = dkdv_floats(tq, tk, lanes, d_k);
    return (a > b ? a : b) * sizeof(float);
}

clf_status clf_attention_tuning_get(clf_ctx_t *ctx, size_t d_k, struct clf_attention_tuning *out)
{
    if (d_k == 0 || d_k > CLF_ATTENTION_MAX_HEAD_DIM)
        return clf_error_set(ctx, CLF_ERR_ARG, "attention tuning: d_k %zu outside 1..%d", d_k,
                             CLF_ATTENTION_MAX_HEAD_DIM);
    struct clf_params_found f;
    clf_params_in_force(ctx, &f);
    const struct clf_param_origin *oq = clf_param_origin(&f, "ATTN_TILE_Q"), *ok = clf_param_origin(&f, "ATTN_TILE_K"),
                                  *ol = clf_param_origin(&f, "ATTN_LANES");
    size_t tq = f.values.kernels.attn_tile_q, tk = f.values.kernels.attn_tile_k, lanes = f.values.kernels.attn_lanes;
    out->entry = oq->entry ? oq->entry->name : "built-in";
    out->tuned = oq->level == CLF_TUNING_LEVEL_DEVICE;
    out->fast_math = false;  /* no device's entry has wanted it yet */
    if (oq->source == CLF_PARAM_FROM_FILE || ok->source == CLF_PARAM_FROM_FILE || ol->source == CLF_PARAM_FROM_FILE) {
        out->entry = "tuning file";
        out->tuned = true;
    }
    if (oq->source == CLF_PARAM_FROM_SETTING || ok->source == CLF_PARAM_FROM_SETTING ||
        ol->source == CLF_PARAM_FROM_SETTING)
        out->entry = "env";
    if (!lanes)
        lanes = 1;
    /* each lane holds d_k/lanes of a row */
    while (d_k % lanes)
        lanes /= 2;
    /* the kernels step through tiles four query rows at a time (eight
     * where tile_q >= 8) and eight keys at a time: smaller tiles would read
     * past them */
    if (tq < CLF_ATTENTION_MIN_TILE_Q)
        tq = CLF_ATTENTION_MIN_TILE_Q;
    if (tk < CLF_ATTENTION_MIN_TILE_K)
        tk = CLF_ATTENTION_MIN_TILE_K;
    /* leave a little local memory for the compiler's own use */
    size_t budget = ctx->max_local_mem > 1024 ? ctx->max_local_mem - 512 : ctx->max_local_mem;
    /* groups: tile_q·lanes items (attn_fwd, attn_bwd_dq), tile_k·lanes
     * (attn_bwd_dkdv) */
    while (tq * lanes > ctx->max_wg && tq > CLF_ATTENTION_MIN_TILE_Q)
        tq /= 2;
    while (tk * lanes > ctx->max_wg && tk > CLF_ATTENTION_MIN_TILE_K)
        tk /= 2;
    while ((tq * lanes > ctx->max_wg || tk * lanes > ctx->max_wg) && lanes > 1)
        lanes /= 2;
    while (local_bytes(tq, tk, lanes, d_k) > budget &&
           (tq > CLF_ATTENTION_MIN_TILE_Q || tk > CLF_ATTENTION_MIN_TILE_K)) {
        if ((tk >= tq && tk > CLF_ATTENTION_MIN_TILE_K) || tq == CLF_ATTENTION_MIN_TILE_Q)
            tk /= 2;
        else
            tq /= 2;
    }
    const char *shaped = ctx->dev.shaped[0] ? " (shaped by CLF_DEVICE_LIMITS)" : "";
    if (tk * lanes > ctx->max_wg || tq * lanes > ctx->max_wg)
        return clf_error_set(ctx, CLF_ERR_UNSUPPORTED,
                             "attention (%s, d_k %zu): the smallest tile needs work-groups of %zu items, %s allows "
                             "%zu (max_wg%s)", tk * lanes > ctx->max_wg ? "attn_bwd_dkdv" : "attn_fwd, attn_bwd_dq",
                             d_k, (tk * lanes > ctx->max_wg ? tk : tq) * lanes, ctx->dev.device_name, ctx->max_wg,
                             shaped);
    if (local_bytes(tq, tk, lanes, d_k) > budget) {
        /* which kernel needs the most */
        bool kv = fwd_floats(tq, tk, lanes, d_k) >= dkdv_floats(tq, tk, lanes, d_k);
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
