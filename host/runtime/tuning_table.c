/* tuning_table.c: the values of every tunable (tunables.c) for the devices
 * we know, with a default at each level as CLBlast's database has: a
 * device's own entry, then its vendor's (per device type), then its
 * type's, then one for every device. Each tunable is searched on its own
 * (the GEMM parameters as one): an entry sets GEMM when its gemm is not
 * NULL, and each of our kernels' parameters that is not 0. A device
 * without GEMM entries runs with CLBlast's database (its generic values
 * unless CLBlast knows the device), and `clformer tune --show` and
 * `clformer devices` say so. Also what a CPU has (clf_cpu_features).
 *
 * GEMM entries come from `clformer tune`: copy the "Xgemm", "XgemmDirect"
 * and "GemmRoutine" values of the tuning file (clformer tune --show prints
 * them) and say what was measured.
 *
 * CPU entries are keyed on what the CPU has, its ISA features and its
 * core count (compute units), never on a vendor or model name: a kernel
 * compiled for a CPU is fast or slow for its vector width and FMA, its
 * cores and caches, and the same processor is named differently by each
 * driver ("pthread-haswell-AMD EPYC", "AMD EPYC 7B13") and by each cloud.
 * So another CPU with the same features finds the same entry, whatever it
 * is called. Platform names still key entries where the driver is the
 * point (PoCL's compiler against Intel's on the same CPU). GPU entries may
 * key on the device's name: a GPU's name is its chip, and no features
 * like a CPU's cpuid describe its tuning. There are none yet.
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
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "base/files.h"
#include "settings.h"

/* Measured by `clformer tune --minutes 14` (2026-11-29, 57 candidates,
 * started from an earlier 20-minute tune) on PoCL 3.1 (Debian 12),
 * pthread-haswell-AMD EPYC, 2 quiet vCPUs, CLBlast 1.5.3, T = 2560:
 * 42-78 GFLOP/s on the small preset's shapes (OpenBLAS 54-132 in the same
 * run) where CLBlast's generic values gave 7.5-17. Products of up to 128³
 * go to the direct kernel. */
static const struct clf_gemm_params pocl_avx2_2cores = {
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
    /* devices: CPUs by what they have. The GEMM values and the attention
     * tiles (`clformer bench attention`, d_k 64) were measured on a 2-vCPU
     * Zen 3 (AVX2 and FMA, no AVX-512). A CPU with more (AVX-512) matches
     * too: nothing was measured for it, and its PoCL took these values
     * before as well (the type entry below); an entry measured there goes
     * above this one. More than 2 cores was not measured: such CPUs get
     * the same values from the type entry, which says so. */
    {"PoCL on a CPU with AVX2 and FMA, up to 2 cores: measured on a 2-vCPU Zen 3", POCL, NULL, NULL, CPU,
     &pocl_avx2_2cores, {.attn_tile_q = 64, .attn_tile_k = 64, .attn_lanes = 1}, 0, CLF_CPU_AVX2 | CLF_CPU_FMA, 2},
    /* drivers */
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
     CPU, NULL, {0}, 1, 0, 0},
    /* types: PoCL's CPU compiler vectorises across work-items, so what
     * suits one x86 CPU suits the others better than CLBlast's generic
     * GPU-minded values; not measured beyond the CPU above */
    {"PoCL on any CPU: the values measured on AVX2 and 2 cores, not measured here", POCL, NULL, NULL, CPU,
     &pocl_avx2_2cores, {0}, 0, 0, 0},
    /* PoCL's CPU device: `clformer tune` measured one work-item per row
     * fastest for layer norm and softmax (2-vCPU AMD EPYC, with their
     * group-shaped kernels), and the loss, layer norm and softmax now have
     * one-item float8 shapes (cl/loss.cl) */
    {"PoCL's CPU device: row ops one work-item per row (clformer tune)", POCL, NULL, NULL, CPU, NULL,
     {.rows_wg = 1}, 0, 0, 0},
    /* not measured on any GPU yet: 32 rows × 4 lanes = 128 items (two
     * NVIDIA warps, two AMD wave64s), 37 KiB of local memory at d_k 64 */
    {"generic-gpu", NULL, NULL, NULL, GPU, NULL, {.attn_tile_q = 32, .attn_tile_k = 32, .attn_lanes = 4}, 0, 0, 0},
    {"generic-cpu", NULL, NULL, NULL, CPU, NULL,
     {.attn_tile_q = 64, .attn_tile_k = 64, .attn_lanes = 1, .rows_wg = 16}, 0, 0, 0},
    /* every device; ROWS_WG 0: the row's width */
    {"generic", NULL, NULL, NULL, 0, NULL, {.attn_tile_q = 32, .attn_tile_k = 32, .attn_lanes = 1}, 0, 0, 0},
};

#undef CPU
#undef GPU
#undef POCL

/* ------------------------------------------------ what a CPU has */

static const struct {
    unsigned bit;
    const char *name;
} feature_names[] = {
    {CLF_CPU_SSE4_2, "sse4.2"},         {CLF_CPU_AVX, "avx"},
    {CLF_CPU_AVX2, "avx2"},             {CLF_CPU_FMA, "fma"},
    {CLF_CPU_AVX512F, "avx512f"},       {CLF_CPU_AVX512_VNNI, "avx512_vnni"},
    {CLF_CPU_AVX512_BF16, "avx512_bf16"}, {CLF_CPU_AMX, "amx"},
};

#if defined(__x86_64__) || defined(__i386__)
/* cpuid, and for the AVX families whether the OS saves their registers
 * (XCR0): a CPU that has AVX-512 under a kernel that does not save zmm
 * cannot run it, and the compilers targeting the host (PoCL's LLVM) do not
 * use it. AMX needs its tile state saved too. */
static unsigned features_read(void)
{
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const bool osxsave = c & (1u << 27);
    unsigned long long xcr0 = 0;
    if (osxsave) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = ((unsigned long long)hi << 32) | lo;
    }
    const bool ymm = (xcr0 & 0x6) == 0x6, zmm = ymm && (xcr0 & 0xe0) == 0xe0,
               tiles = (xcr0 & 0x60000) == 0x60000;
    if (c & (1u << 20))
        f |= CLF_CPU_SSE4_2;
    if ((c & (1u << 28)) && ymm)
        f |= CLF_CPU_AVX;
    if ((c & (1u << 12)) && ymm)
        f |= CLF_CPU_FMA;
    if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return f;
    if ((b & (1u << 5)) && ymm)
        f |= CLF_CPU_AVX2;
    if ((b & (1u << 16)) && zmm)
        f |= CLF_CPU_AVX512F;
    if ((c & (1u << 11)) && zmm)
        f |= CLF_CPU_AVX512_VNNI;
    if ((d & (1u << 25)) && tiles)  /* AMX-INT8 */
        f |= CLF_CPU_AMX;
    unsigned a1, b1, c1, d1;
    if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 5)) && zmm)
        f |= CLF_CPU_AVX512_BF16;
    return f;
}
#else
static unsigned features_read(void) { return 0; }
#endif

unsigned clf_cpu_features(void)
{
    static unsigned cached;  /* the bit above every feature: read */
    static const unsigned READ = 1u << 31;
    unsigned f = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (!(f & READ)) {
        f = features_read() | READ;
        __atomic_store_n(&cached, f, __ATOMIC_RELAXED);
    }
    return f & ~READ;
}

const char *clf_cpu_features_str(unsigned f, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = 0;
    for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0] && used < len; i++)
        if (f & feature_names[i].bit) {
            int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", feature_names[i].name);
            used += n > 0 ? (size_t)n : 0;
        }
    if (!used)
        snprintf(buf, len, "none known");
    return buf;
}

/* ------------------------------------------------------ the table */

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

/* An entry for what a CPU has is as specific as one for a device's name. */
static enum clf_tuning_level level_of(const struct clf_tuning_entry *e)
{
    return e->device || e->cpu_features || e->max_cores ? CLF_TUNING_LEVEL_DEVICE
           : e->vendor ? CLF_TUNING_LEVEL_VENDOR : e->type ? CLF_TUNING_LEVEL_TYPE : CLF_TUNING_LEVEL_DEFAULT;
}

static bool matches(const struct clf_tuning_entry *e, const struct clf_device_info *dev)
{
    return !(e->type && !(dev->type & e->type)) && has(dev->platform_name, e->platform) &&
           has(dev->vendor, e->vendor) && has(dev->device_name, e->device) &&
           (dev->cpu_features & e->cpu_features) == e->cpu_features &&
           !(e->max_cores && dev->compute_units > e->max_cores);
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
