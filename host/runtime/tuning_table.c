/* tuning_table.c: the values of every tunable (tunables.c) for the devices
 * we know, with a default at each level as CLBlast's database has: a
 * device's own entry, then its vendor's (per device type), then its
 * type's, then one for every device. Each tunable is searched on its own
 * (the GEMM parameters as one): an entry sets GEMM when its gemm is not
 * NULL, and each of our kernels' parameters that is not 0. A device
 * without GEMM entries runs with CLBlast's database.
 *
 * GEMM entries come from `clformer tune`: copy the "Xgemm", "XgemmDirect"
 * and "GemmRoutine" values of the tuning file (clformer tune --show prints
 * them) and say what was measured. PoCL names a CPU "pthread-<llvm
 * cpu>-<model name>" and reports the CPU's vendor id string as its vendor,
 * so CPU entries match on both.
 *
 * Our kernels: the attention tiles and lanes (see host/attention/tiles.c)
 * and the row-wise ops' work-group cap (host/ops/ops_common.c). On CPUs a
 * work-group's items run in loops split at each barrier, so tree
 * reductions over wide groups cost more than they parallelise (PoCL: 16
 * items run softmax and layer norm 4x faster than 256); GPUs take the
 * row's width. PoCL vectorises across a group's items only where its loop
 * over them is the innermost, which the loops over a row prevent, so one
 * item per row is its best: at WG 1 the loss, layer norm and softmax
 * kernels have shapes of their own with float8 loops and no barrier
 * (cl/loss.cl). Intel's CPU compiler runs a group's items in SIMD lanes and
 * keeps 16. CPUs run one work-item per attention query row (lanes 1),
 * which keeps a row's q and accumulator in one item's registers and
 * vectorises across d_k. GPUs split a row over lanes work-items (a group
 * of tile_q·lanes items): the private arrays shrink by that factor instead
 * of spilling, and groups are at least a whole wavefront.
 *
 * The default device: an entry's prefer ranks CPU devices (clformer.h,
 * clf_devices_match), where two drivers can offer the same processor. */
#include <string.h>

#include "internal.h"

/* Measured by `clformer tune --minutes 14` (2026-11-29, 57 candidates,
 * started from an earlier 20-minute tune) on PoCL 3.1 (Debian 12),
 * pthread-haswell-AMD EPYC, 2 quiet vCPUs, CLBlast 1.5.3, T = 2560:
 * 42-78 GFLOP/s on the small preset's shapes (OpenBLAS 54-132 in the same
 * run) where CLBlast's generic values gave 7.5-17. Products of up to 128³
 * go to the direct kernel. */
static const struct clf_gemm_params pocl_epyc_2vcpu = {
    .xgemm = {.gemmk = 0, .kreg = 1, .kwg = 64, .kwi = 2, .mdima = 4, .mdimc = 8, .mwg = 64, .ndimb = 4,
              .ndimc = 4, .nwg = 64, .sa = 1, .sb = 1, .strm = 0, .strn = 0, .vwm = 8, .vwn = 8},
    .direct = {.kwid = 2, .mdimad = 8, .mdimcd = 8, .ndimbd = 8, .ndimcd = 8, .pada = 0, .padb = 0,
               .vwmd = 4, .vwnd = 2, .wgd = 32},
    .min_indirect = 129,
};

#define CPU CL_DEVICE_TYPE_CPU
#define GPU CL_DEVICE_TYPE_GPU
#define POCL "Portable Computing Language"

static const struct clf_tuning_entry table[] = {
    /* devices */
    {"PoCL 3.1 on AMD EPYC (2 vCPU, haswell target), measured", POCL, "AuthenticAMD", "AMD EPYC", CPU,
     &pocl_epyc_2vcpu, {0}, 0},
    /* PoCL's CPU device: attention measured with `clformer bench attention`
     * on a 2-core AMD EPYC (Zen, AVX2), d_k 64 */
    {"pocl-cpu", NULL, NULL, "pthread", CPU, NULL, {.attn_tile_q = 64, .attn_tile_k = 64, .attn_lanes = 1}, 0},
    /* vendors */
    {"PoCL on AMD CPUs: the EPYC entry", POCL, "AuthenticAMD", NULL, CPU, &pocl_epyc_2vcpu, {0}, 0},
    /* PoCL trains and translates faster than Intel's OpenCL CPU runtime on
     * the same CPU since dropout's Philox runs as vector lanes (3cb5993):
     * 2-vCPU AVX-512 AMD EPYC, quiet, one sitting, three alternating
     * rounds (2026-12-04): `clformer bench train` (small preset, GEMMs on
     * OpenBLAS under both) PoCL 3.1 2600, 3163, 3132 target tokens/s,
     * Intel's runtime 2026.2 2685, 2536, 2934 (its non-GEMM kernels 0.17-0.21
     * s a step, PoCL's 0.10-0.12); test_2016_flickr with beam 4, 1000
     * sentences: PoCL 107-115 sentences/s, Intel's 87-88 (on 2026-12-01,
     * before that change, Intel's runtime trained faster: 3194-3355
     * against 2635-2755). Again on a 2-vCPU AVX-512 Intel Xeon (AMX,
     * 2026-12-05, two alternating rounds, GEMMs on oneDNN under both):
     * PoCL 4368 and 4501, Intel's runtime 4149 and 4453 (its non-GEMM
     * kernels 0.166-0.182 s a step, PoCL's 0.141-0.147). And on a 2-vCPU
     * AVX2 Zen 3 EPYC (no AVX-512; 2026-12-07, two alternating rounds,
     * build 3d3abc0): training PoCL 1767 and 1761, Intel's runtime 1593 and
     * 1719 (non-GEMM kernels 0.18-0.19 s a step against 0.31-0.32);
     * `bench translate` beam 4 PoCL 1455 and 1631 target tokens/s, Intel's
     * 1458 and 1462. So the preference needs no ISA key. When both offer
     * the CPU, PoCL is the default; Intel's runtime (float16:
     * cl_khr_fp16) stays one --device away. */
    {"PoCL: trains and translates faster than Intel's CPU runtime on one CPU (AVX-512 EPYC and Xeon, AVX2 EPYC)", POCL, NULL, NULL,
     CPU, NULL, {0}, 1},
    /* types: PoCL's CPU compiler vectorises across work-items, so what
     * suits one x86 CPU suits the others better than CLBlast's generic
     * GPU-minded values */
    {"PoCL on any CPU: the EPYC entry", POCL, NULL, NULL, CPU, &pocl_epyc_2vcpu, {0}, 0},
    /* PoCL's CPU device: `clformer tune` measured one work-item per row
     * fastest for layer norm and softmax (2-vCPU AMD EPYC, with their
     * group-shaped kernels), and the loss, layer norm and softmax now have
     * one-item float8 shapes (cl/loss.cl) */
    {"PoCL's CPU device: row ops one work-item per row (clformer tune)", POCL, NULL, NULL, CPU, NULL,
     {.rows_wg = 1}, 0},
    /* not measured on any GPU yet: 32 rows × 4 lanes = 128 items (two
     * NVIDIA warps, two AMD wave64s), 37 KiB of local memory at d_k 64 */
    {"generic-gpu", NULL, NULL, NULL, GPU, NULL, {.attn_tile_q = 32, .attn_tile_k = 32, .attn_lanes = 4}, 0},
    {"generic-cpu", NULL, NULL, NULL, CPU, NULL,
     {.attn_tile_q = 64, .attn_tile_k = 64, .attn_lanes = 1, .rows_wg = 16}, 0},
    /* every device; ROWS_WG 0: the row's width */
    {"generic", NULL, NULL, NULL, 0, NULL, {.attn_tile_q = 32, .attn_tile_k = 32, .attn_lanes = 1}, 0},
};

#undef CPU
#undef GPU
#undef POCL

const struct clf_tuning_entry *clf_tuning_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

const char *clf_tuning_level_str(enum clf_tuning_level l)
{
    switch (l) {
    case CLF_TUNING_LEVEL_NONE: return "none";
    case CLF_TUNING_LEVEL_DEVICE: return "device";
    case CLF_TUNING_LEVEL_VENDOR: return "vendor";
    case CLF_TUNING_LEVEL_TYPE: return "type";
    case CLF_TUNING_LEVEL_DEFAULT: return "default";
    }
    return "?";
}

static bool has(const char *hay, const char *needle)
{
    return !needle || clf_contains_nocase(hay, needle);
}

static enum clf_tuning_level level_of(const struct clf_tuning_entry *e)
{
    return e->device ? CLF_TUNING_LEVEL_DEVICE : e->vendor ? CLF_TUNING_LEVEL_VENDOR
           : e->type ? CLF_TUNING_LEVEL_TYPE : CLF_TUNING_LEVEL_DEFAULT;
}

static bool matches(const struct clf_tuning_entry *e, const struct clf_device_info *dev)
{
    return !(e->type && !(dev->type & e->type)) && has(dev->platform_name, e->platform) &&
           has(dev->vendor, e->vendor) && has(dev->device_name, e->device);
}

/* Whether e sets d, and to what. */
static bool entry_sets(const struct clf_tuning_entry *e, const struct clf_param_def *d, unsigned *v)
{
    struct clf_params p = {.kernels = e->kernels};
    if (d->group != CLF_PARAM_KERNELS) {
        if (!e->gemm)
            return false;
        p.gemm = *e->gemm;
    }
    *v = clf_param_value(&p, d);
    return d->group != CLF_PARAM_KERNELS || *v != 0;
}

/* The search: the first entry matching dev that sets d, levels in order. */
static const struct clf_tuning_entry *find(const struct clf_tuning_entry *tab, size_t n,
                                           const struct clf_device_info *dev, const struct clf_param_def *d,
                                           unsigned *v, enum clf_tuning_level *level)
{
    for (enum clf_tuning_level l = CLF_TUNING_LEVEL_DEVICE; l <= CLF_TUNING_LEVEL_DEFAULT; l++)
        for (size_t i = 0; i < n; i++)
            if (level_of(&tab[i]) == l && matches(&tab[i], dev) && entry_sets(&tab[i], d, v)) {
                *level = l;
                return &tab[i];
            }
    *level = CLF_TUNING_LEVEL_NONE;
    return NULL;
}

void clf_params_lookup(const struct clf_tuning_entry *tab, size_t n, const struct clf_device_info *dev,
                       struct clf_params_found *out)
{
    if (!tab)
        tab = clf_tuning_table(&n);
    memset(out, 0, sizeof *out);
    size_t ndefs;
    const struct clf_param_def *defs = clf_param_defs(&ndefs);
    for (size_t i = 0; i < ndefs; i++) {
        struct clf_param_origin *o = &out->origin[i];
        unsigned v = 0;
        o->entry = find(tab, n, dev, &defs[i], &v, &o->level);
        o->source = o->entry ? CLF_PARAM_FROM_TABLE : CLF_PARAM_FROM_NONE;
        *clf_param_ref(&out->values, &defs[i]) = v;
    }
}

int clf_tuning_prefer(const struct clf_device_info *dev, const struct clf_tuning_entry **entry)
{
    size_t n;
    const struct clf_tuning_entry *tab = clf_tuning_table(&n);
    for (enum clf_tuning_level l = CLF_TUNING_LEVEL_DEVICE; l <= CLF_TUNING_LEVEL_DEFAULT; l++)
        for (size_t i = 0; i < n; i++)
            if (level_of(&tab[i]) == l && matches(&tab[i], dev) && tab[i].prefer) {
                if (entry)
                    *entry = &tab[i];
                return tab[i].prefer;
            }
    if (entry)
        *entry = NULL;
    return 0;
}

const struct clf_tuning_entry *clf_tuning_table_lookup(const struct clf_tuning_entry *tab, size_t n,
                                                       const struct clf_device_info *dev,
                                                       enum clf_tuning_level *level)
{
    if (!tab)
        tab = clf_tuning_table(&n);
    size_t ndefs;
    unsigned v;
    enum clf_tuning_level l;
    /* any GEMM parameter: an entry sets them all */
    const struct clf_tuning_entry *e = find(tab, n, dev, &clf_param_defs(&ndefs)[0], &v, &l);
    if (level)
        *level = l;
    return e;
}
