/* tuning_table.c: GEMM parameters for devices we have measured, with a
 * default at each level as CLBlast's database has: a device's own entry,
 * then its vendor's (per device type), then its type's. A device matching
 * none runs with CLBlast's database. Entries come from `clformer tune`:
 * copy the "Xgemm", "XgemmDirect" and "GemmRoutine" values of the tuning
 * file (clformer tune --show prints them) and say what was measured.
 *
 * PoCL names a CPU "pthread-<llvm cpu>-<model name>" and reports the CPU's
 * vendor id string as its vendor, so CPU entries match on both. */
#include <ctype.h>
#include <string.h>

#include "internal.h"

/* Measured by `clformer tune --minutes 14` (2026-11-29, 57 candidates,
 * started from an earlier 20-minute tune) on PoCL 3.1 (Debian 12),
 * pthread-haswell-AMD EPYC, 2 quiet vCPUs, CLBlast 1.5.3, T = 2560:
 * 42-78 GFLOP/s on the small preset's shapes (OpenBLAS 54-132 in the same
 * run) where CLBlast's generic values gave 7.5-17. Products of up to 128³
 * go to the direct kernel. */
#define POCL_EPYC_2VCPU                                                                                      \
    {.xgemm = {.gemmk = 0, .kreg = 1, .kwg = 64, .kwi = 2, .mdima = 4, .mdimc = 8, .mwg = 64, .ndimb = 4,   \
               .ndimc = 4, .nwg = 64, .sa = 1, .sb = 1, .strm = 0, .strn = 0, .vwm = 8, .vwn = 8},          \
     .direct = {.kwid = 2, .mdimad = 8, .mdimcd = 8, .ndimbd = 8, .ndimcd = 8, .pada = 0, .padb = 0,         \
                .vwmd = 4, .vwnd = 2, .wgd = 32},                                                             \
     .min_indirect = 129}

static const struct clf_tuning_entry table[] = {
    /* devices */
    {"PoCL 3.1 on AMD EPYC (2 vCPU, haswell target), measured", "Portable Computing Language", "AuthenticAMD",
     "AMD EPYC", CL_DEVICE_TYPE_CPU, POCL_EPYC_2VCPU},
    /* vendors */
    {"PoCL on AMD CPUs: the EPYC entry", "Portable Computing Language", "AuthenticAMD", NULL, CL_DEVICE_TYPE_CPU,
     POCL_EPYC_2VCPU},
    /* types: PoCL's CPU compiler vectorises across work-items, so what
     * suits one x86 CPU suits the others better than CLBlast's generic
     * GPU-minded values */
    {"PoCL on any CPU: the EPYC entry", "Portable Computing Language", NULL, NULL, CL_DEVICE_TYPE_CPU,
     POCL_EPYC_2VCPU},
};

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
           : e->type ? CLF_TUNING_LEVEL_TYPE : CLF_TUNING_LEVEL_NONE;
}

const struct clf_tuning_entry *clf_tuning_table_lookup(const struct clf_tuning_entry *tab, size_t n,
                                                       const struct clf_device_info *dev,
                                                       enum clf_tuning_level *level)
{
    if (!tab)
        tab = clf_tuning_table(&n);
    static const enum clf_tuning_level order[] = {CLF_TUNING_LEVEL_DEVICE, CLF_TUNING_LEVEL_VENDOR,
                                                  CLF_TUNING_LEVEL_TYPE};
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++) {
        for (size_t i = 0; i < n; i++) {
            const struct clf_tuning_entry *e = &tab[i];
            if (level_of(e) != order[o])
                continue;
            if ((e->type && !(dev->type & e->type)) || !has(dev->platform_name, e->platform) ||
                !has(dev->vendor, e->vendor) || !has(dev->device_name, e->device))
                continue;
            if (level)
                *level = order[o];
            return e;
        }
    }
    if (level)
        *level = CLF_TUNING_LEVEL_NONE;
    return NULL;
}
