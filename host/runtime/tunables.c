/* tunables.c: every tunable of clformer in one table (name, field, legal
 * values, the environment variable that overrides it), and what is in
 * force on a context: the table's values (tuning_table.c), over them the
 * tuning file's, over those the settings. The tuning file (tuning_file.c), the
 * constraints, `clformer tune --show` and the tuner's candidates all reach
 * a parameter through this table by name. */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctx.h"
#include "settings.h"

#define G(f) offsetof(struct clf_params, gemm.xgemm.f)
#define D(f) offsetof(struct clf_params, gemm.direct.f)
#define K(f) offsetof(struct clf_params, kernels.f)
#define XG CLF_PARAM_XGEMM
#define XD CLF_PARAM_XGEMM_DIRECT
#define P2 CLF_PARAM_POW2
/* 0 means "not set here": the table's value runs */
#define KZ (CLF_PARAM_POW2 | CLF_PARAM_ZERO)

static const struct clf_param_def defs[] = {
    {"GEMMK", XG, G(gemmk), 0, 1, 0, NULL, 0, "1: the kernel's 2D register tiling over K"},
    {"KREG", XG, G(kreg), 1, 1024, 0, NULL, 0, "K unroll in registers (GEMMK 1)"},
    {"KWG", XG, G(kwg), 1, 1024, 0, NULL, 0, "K tile in local memory"},
    {"KWI", XG, G(kwi), 1, 1024, 0, NULL, 0, "K unroll per work-item"},
    {"MDIMA", XG, G(mdima), 1, 1024, 0, NULL, 0, "work-items along M when loading A"},
    {"MDIMC", XG, G(mdimc), 1, 1024, 0, NULL, 0, "work-items along M"},
    {"MWG", XG, G(mwg), 1, 1024, 0, NULL, 0, "M tile of a work-group"},
    {"NDIMB", XG, G(ndimb), 1, 1024, 0, NULL, 0, "work-items along N when loading B"},
    {"NDIMC", XG, G(ndimc), 1, 1024, 0, NULL, 0, "work-items along N"},
    {"NWG", XG, G(nwg), 1, 1024, 0, NULL, 0, "N tile of a work-group"},
    {"SA", XG, G(sa), 0, 1, 0, NULL, 0, "1: A's tile through local memory"},
    {"SB", XG, G(sb), 0, 1, 0, NULL, 0, "1: B's tile through local memory"},
    {"STRM", XG, G(strm), 0, 1, 0, NULL, 0, "1: strided accesses along M"},
    {"STRN", XG, G(strn), 0, 1, 0, NULL, 0, "1: strided accesses along N"},
    {"VWM", XG, G(vwm), 1, 16, P2, NULL, 0, "vector width along M"},
    {"VWN", XG, G(vwn), 1, 16, P2, NULL, 0, "vector width along N"},
    {"KWID", XD, D(kwid), 1, 1024, 0, NULL, 0, "K unroll per work-item"},
    {"MDIMAD", XD, D(mdimad), 1, 1024, 0, NULL, 0, "work-items along M when loading A"},
    {"MDIMCD", XD, D(mdimcd), 1, 1024, 0, NULL, 0, "work-items along M"},
    {"NDIMBD", XD, D(ndimbd), 1, 1024, 0, NULL, 0, "work-items along N when loading B"},
    {"NDIMCD", XD, D(ndimcd), 1, 1024, 0, NULL, 0, "work-items along N"},
    {"PADA", XD, D(pada), 0, 1, 0, NULL, 0, "1: pad A's local tile (bank conflicts)"},
    {"PADB", XD, D(padb), 0, 1, 0, NULL, 0, "1: pad B's local tile"},
    {"VWMD", XD, D(vwmd), 1, 16, P2, NULL, 0, "vector width along M"},
    {"VWND", XD, D(vwnd), 1, 16, P2, NULL, 0, "vector width along N"},
    {"WGD", XD, D(wgd), 1, 1024, 0, NULL, 0, "tile of a work-group (M, N and K)"},
    {"XGEMM_MIN_INDIRECT_SIZE", CLF_PARAM_GEMM_ROUTINE, offsetof(struct clf_params, gemm.min_indirect), 0, 1u << 20,
     0, NULL, 0, "products with m*n*k below its cube run the direct kernel"},
    {"ATTN_TILE_Q", CLF_PARAM_KERNELS, K(attn_tile_q), 1, 1024, KZ, "CLF_ATTN_TILE_Q", 0,
     "query rows per work-group of attention's forward and dQ kernels (floored at 4)"},
    {"ATTN_TILE_K", CLF_PARAM_KERNELS, K(attn_tile_k), 8, 1024, KZ, "CLF_ATTN_TILE_K", 0,
     "key rows per local-memory tile of attention (and per work-group of dK/dV)"},
    {"ROWS_WG", CLF_PARAM_KERNELS, K(rows_wg), 1, 1024, KZ, "CLF_OPS_CPU_WG", CL_DEVICE_TYPE_CPU,
     "work-group cap of the row-wise ops (0: the row's width)"},
    {"ATTN_LANES", CLF_PARAM_KERNELS, K(attn_lanes), 1, 8, KZ | CLF_PARAM_OPTIONAL, "CLF_ATTN_LANES", 0,
     "work-items per query row of attn_fwd and attn_bwd_dq, per key row of attn_bwd_dkdv (halved until they divide "
     "d_k)"},
};
#define NDEFS (sizeof defs / sizeof defs[0])
_Static_assert(NDEFS <= CLF_PARAMS_MAX, "struct clf_params_found holds CLF_PARAMS_MAX origins");
_Static_assert(sizeof(struct clf_params) == NDEFS * sizeof(unsigned), "every field of struct clf_params is in defs");

#undef G
#undef D
#undef K
#undef XG
#undef XD
#undef P2
#undef KZ

const struct clf_param_def *clf_param_defs(size_t *n)
{
    *n = NDEFS;
    return defs;
}

const char *clf_param_group_str(enum clf_param_group g)
{
    switch (g) {
    case CLF_PARAM_XGEMM: return "Xgemm";
    case CLF_PARAM_XGEMM_DIRECT: return "XgemmDirect";
    case CLF_PARAM_GEMM_ROUTINE: return "GemmRoutine";
    case CLF_PARAM_KERNELS: return "Kernels";
    }
    return "?";
}

const struct clf_param_def *clf_param_find(enum clf_param_group group, const char *name)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (defs[i].group == group && !strcasecmp(defs[i].name, name))
            return &defs[i];
    return NULL;
}

unsigned *clf_param_ref(struct clf_params *p, const struct clf_param_def *d)
{
    return (unsigned *)((char *)p + d->offset);
}

unsigned clf_param_value(const struct clf_params *p, const struct clf_param_def *d)
{
    return *(const unsigned *)((const char *)p + d->offset);
}

bool clf_param_ok(const struct clf_param_def *d, unsigned v, char *why, size_t len)
{
    if (v == 0 && (d->flags & CLF_PARAM_ZERO))
        return true;
    bool pow2 = v && !(v & (v - 1));
    if (v >= d->min && v <= d->max && (pow2 || !(d->flags & CLF_PARAM_POW2)))
        return true;
    if (why && len)
        snprintf(why, len, "%s %s is %u; want %s%s in %u..%u", clf_param_group_str(d->group), d->name, v,
                 d->flags & CLF_PARAM_ZERO ? "0 (the table's) or " : "",
                 d->flags & CLF_PARAM_POW2 ? "a power of two" : "a whole number", d->min, d->max);
    return false;
}

bool clf_kernel_params_check(const struct clf_kernel_params *p, char *why, size_t len)
{
    struct clf_params all = {.kernels = *p};
    for (size_t i = 0; i < NDEFS; i++)
        if (defs[i].group == CLF_PARAM_KERNELS && !clf_param_ok(&defs[i], clf_param_value(&all, &defs[i]), why, len))
            return false;
    return true;
}

clf_status clf_kernel_params_set(clf_ctx_t *ctx, const struct clf_kernel_params *p)
{
    char why[256];
    if (!clf_kernel_params_check(p, why, sizeof why))
        return clf_error_set(ctx, CLF_ERR_ARG, "kernel parameters refused: %s", why);
    ctx->kparams = *p;
    return CLF_OK;
}

struct clf_kernel_params clf_kernel_params_get(const clf_ctx_t *ctx) { return ctx->kparams; }

/* d's environment variable as a legal value for dev, or 0 (not set, not
 * legal, or not for this device). */
static unsigned setting(const struct clf_param_def *d, const struct clf_device_info *dev)
{
    if (!d->setting || (d->setting_on && !(dev->type & d->setting_on)))
        return 0;
    const char *e = clf_setting_get(d->setting);
    if (!e || !*e)
        return 0;
    char *end;
    unsigned long v = strtoul(e, &end, 10);
    if (*end || v == 0 || v > 0xffffffffu || !clf_param_ok(d, (unsigned)v, NULL, 0))
        return 0;
    return (unsigned)v;
}

void clf_params_in_force(const clf_ctx_t *ctx, struct clf_params_found *out)
{
    *out = ctx->params;
    struct clf_params file = {.kernels = ctx->kparams};
    for (size_t i = 0; i < NDEFS; i++) {
        const struct clf_param_def *d = &defs[i];
        unsigned v;
        if ((v = setting(d, &ctx->dev)))
            out->origin[i].source = CLF_PARAM_FROM_SETTING;
        else if (d->group == CLF_PARAM_KERNELS && (v = clf_param_value(&file, d)))
            out->origin[i].source = CLF_PARAM_FROM_FILE;
        else
            continue;
        *clf_param_ref(&out->values, d) = v;
    }
}

const struct clf_param_origin *clf_param_origin(const struct clf_params_found *f, const char *name)
{
    const struct clf_param_def *d = clf_param_find(CLF_PARAM_KERNELS, name);
    assert(d);
    return &f->origin[d - defs];
}
