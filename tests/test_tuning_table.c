/* test_tuning_table.c: the tuning table's search, which is host logic over
 * device descriptions (label host: once, and under ASan): the fallback
 * device → vendor → type → none, each tunable searched on its own, and CPUs
 * keyed on what they have (ISA features, core count), never on a vendor or
 * model name: a CPU with the same features under another name finds the
 * same entry. Also the host's features as the device list reports them,
 * against the kernel's /proc/cpuinfo. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define POCL "Portable Computing Language"
/* what this machine's Zen 3 has; the table's measured entry wants AVX2 and FMA */
#define ZEN3 (CLF_CPU_SSE4_2 | CLF_CPU_AVX | CLF_CPU_AVX2 | CLF_CPU_FMA)

static struct clf_device_info cpu(const char *platform, const char *vendor, const char *name, unsigned features,
                                  unsigned cores)
{
    struct clf_device_info d = {.type = CL_DEVICE_TYPE_CPU, .cpu_features = features, .compute_units = cores};
    snprintf(d.platform_name, sizeof d.platform_name, "%s", platform);
    snprintf(d.vendor, sizeof d.vendor, "%s", vendor);
    snprintf(d.device_name, sizeof d.device_name, "%s", name);
    return d;
}

/* Every tunable's value and the entry it came from are the same for a and b. */
static void same_params(const struct clf_device_info *a, const struct clf_device_info *b)
{
    struct clf_params_found fa, fb;
    clf_params_lookup(NULL, 0, a, &fa);
    clf_params_lookup(NULL, 0, b, &fb);
    size_t n;
    const struct clf_param_def *defs = clf_param_defs(&n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(clf_param_value(&fa.values, &defs[i]), clf_param_value(&fb.values, &defs[i]), "%s: %s against %s",
                     defs[i].name, a->device_name, b->device_name);
        cr_assert_eq(fa.origin[i].entry, fb.origin[i].entry, "%s", defs[i].name);
        cr_assert_eq(fa.origin[i].level, fb.origin[i].level, "%s", defs[i].name);
    }
    cr_assert_eq(clf_tuning_prefer(a, NULL), clf_tuning_prefer(b, NULL));
}

Test(tuning_table, table_falls_back_device_vendor_type)
{
    struct clf_gemm_params p1 = clf_gemm_params_generic, p2 = p1, p3 = p1;
    p1.min_indirect = 1;
    p2.min_indirect = 2;
    p3.min_indirect = 3;
    const struct clf_tuning_entry table[] = {
        {"type cpu", NULL, NULL, NULL, CL_DEVICE_TYPE_CPU, &p3, {0}, 0, 0, 0},
        {"acme gpus", NULL, "Acme", NULL, CL_DEVICE_TYPE_GPU, &p2, {0}, 0, 0, 0},
        {"acme rocket", "Acme Platform", "Acme", "Rocket 9", CL_DEVICE_TYPE_GPU, &p1, {0}, 0, 0, 0},
    };
    struct clf_device_info d = {.type = CL_DEVICE_TYPE_GPU};
    snprintf(d.platform_name, sizeof d.platform_name, "Acme Platform");
    snprintf(d.vendor, sizeof d.vendor, "ACME Inc.");
    snprintf(d.device_name, sizeof d.device_name, "acme rocket 9000");
    enum clf_tuning_level level;
    const struct clf_tuning_entry *e = clf_tuning_table_lookup(table, 3, &d, &level);
    cr_assert_not_null(e);
    cr_assert_eq(level, CLF_TUNING_LEVEL_DEVICE);
    cr_assert_eq(e->gemm->min_indirect, 1);

    snprintf(d.device_name, sizeof d.device_name, "Acme Pebble");
    e = clf_tuning_table_lookup(table, 3, &d, &level);
    cr_assert_not_null(e);
    cr_assert_eq(level, CLF_TUNING_LEVEL_VENDOR);
    cr_assert_eq(e->gemm->min_indirect, 2);

    /* the device entry wants its platform too */
    snprintf(d.device_name, sizeof d.device_name, "Rocket 9");
    snprintf(d.platform_name, sizeof d.platform_name, "Another Platform");
    e = clf_tuning_table_lookup(table, 3, &d, &level);
    cr_assert_eq(level, CLF_TUNING_LEVEL_VENDOR);

    snprintf(d.vendor, sizeof d.vendor, "Other");
    d.type = CL_DEVICE_TYPE_CPU;
    e = clf_tuning_table_lookup(table, 3, &d, &level);
    cr_assert_not_null(e);
    cr_assert_eq(level, CLF_TUNING_LEVEL_TYPE);
    cr_assert_eq(e->gemm->min_indirect, 3);

    d.type = CL_DEVICE_TYPE_GPU;
    e = clf_tuning_table_lookup(table, 3, &d, &level);
    cr_assert_null(e);
    cr_assert_eq(level, CLF_TUNING_LEVEL_NONE);
    cr_assert_str_eq(clf_tuning_level_str(level), "none");
}

/* The parameter database: each tunable is searched on its own, so an entry
 * that sets some of our kernels' parameters leaves the rest to less
 * specific entries, down to the default; names match case-insensitively. */
Test(tuning_table, params_lookup_per_tunable)
{
    const struct clf_tuning_entry table[] = {
        {"all", NULL, NULL, NULL, 0, NULL, {.attn_tile_q = 32, .attn_tile_k = 32, .attn_lanes = 1}, 0, 0, 0},
        {"gpus", NULL, NULL, NULL, CL_DEVICE_TYPE_GPU, NULL, {.attn_lanes = 4}, 0, 0, 0},
        {"rocket", NULL, NULL, "ROCKET", CL_DEVICE_TYPE_GPU, NULL, {.attn_tile_q = 64}, 0, 0, 0},
    };
    struct clf_device_info d = {.type = CL_DEVICE_TYPE_GPU};
    snprintf(d.device_name, sizeof d.device_name, "acme rocket 9000");
    struct clf_params_found f;
    clf_params_lookup(table, 3, &d, &f);
    size_t n;
    const struct clf_param_def *defs = clf_param_defs(&n);
    cr_assert_leq(n, CLF_PARAMS_MAX);
    for (size_t i = 0; i < n; i++) {
        const struct clf_param_def *def = &defs[i];
        const struct clf_param_origin *o = &f.origin[i];
        cr_assert_eq(clf_param_find(def->group, def->name), def);
        unsigned v = clf_param_value(&f.values, def);
        const char *want = !strcmp(def->name, "ATTN_TILE_Q") ? "rocket"
                           : !strcmp(def->name, "ATTN_LANES") ? "gpus"
                           : !strcmp(def->name, "ATTN_TILE_K") ? "all" : NULL;
        if (!want) {  /* GEMM (no entry sets it) and ROWS_WG: nowhere */
            cr_assert_eq(o->source, CLF_PARAM_FROM_NONE, "%s", def->name);
            cr_assert_eq(v, 0, "%s", def->name);
            continue;
        }
        cr_assert_eq(o->source, CLF_PARAM_FROM_TABLE, "%s", def->name);
        cr_assert_str_eq(o->entry->name, want, "%s", def->name);
    }
    cr_assert_eq(f.values.kernels.attn_tile_q, 64);
    cr_assert_eq(f.values.kernels.attn_lanes, 4);
    cr_assert_eq(f.values.kernels.attn_tile_k, 32);
    cr_assert_eq(f.origin[clf_param_find(CLF_PARAM_KERNELS, "attn_tile_k") - defs].level, CLF_TUNING_LEVEL_DEFAULT);
    cr_assert_null(clf_tuning_table_lookup(table, 3, &d, NULL));

    /* the built-in table: PoCL's CPU device and any GPU */
    d.type = CL_DEVICE_TYPE_CPU;
    snprintf(d.device_name, sizeof d.device_name, "pthread-haswell-Some CPU");
    clf_params_lookup(NULL, 0, &d, &f);
    const struct clf_kernel_params cpu = {64, 64, 16, 1}, gpu = {32, 32, 0, 4}, pocl = {64, 64, 1, 1};
    cr_assert_eq(memcmp(&f.values.kernels, &cpu, sizeof cpu), 0);
    /* PoCL's CPU device: row ops one work-item per row */
    snprintf(d.platform_name, sizeof d.platform_name, "Portable Computing Language");
    clf_params_lookup(NULL, 0, &d, &f);
    cr_assert_eq(memcmp(&f.values.kernels, &pocl, sizeof pocl), 0);
    cr_assert_eq(f.origin[clf_param_find(CLF_PARAM_KERNELS, "ROWS_WG") - defs].level, CLF_TUNING_LEVEL_TYPE);
    /* Intel's CPU runtime keeps 16 items (its compiler runs them in SIMD lanes) */
    snprintf(d.platform_name, sizeof d.platform_name, "Intel(R) OpenCL");
    snprintf(d.vendor, sizeof d.vendor, "Intel(R) Corporation");
    snprintf(d.device_name, sizeof d.device_name, "Some CPU");
    clf_params_lookup(NULL, 0, &d, &f);
    cr_assert_eq(memcmp(&f.values.kernels, &cpu, sizeof cpu), 0);
    d.platform_name[0] = d.vendor[0] = 0;
    d.type = CL_DEVICE_TYPE_GPU;
    clf_params_lookup(NULL, 0, &d, &f);
    cr_assert_eq(memcmp(&f.values.kernels, &gpu, sizeof gpu), 0);
}

/* The built-in table: PoCL on this machine's CPU as PoCL names it, and the
 * same features under other vendors' and models' names, find one entry;
 * the name alone (a CPU without AVX2 called "AMD EPYC") finds the less
 * specific one. */
Test(tuning_table, cpus_by_features_not_names)
{
    const struct clf_device_info here = cpu(POCL, "AuthenticAMD", "pthread-haswell-AMD EPYC", ZEN3, 2);
    const struct clf_device_info others[] = {
        cpu(POCL, "GenuineIntel", "pthread-haswell-Intel(R) Xeon(R) CPU @ 2.20GHz", ZEN3, 2),
        cpu(POCL, "HygonGenuine", "pthread-znver1-Hygon C86 3185", ZEN3, 1),
        cpu(POCL, "AuthenticAMD", "cpu-x86-64-Some Future CPU", ZEN3, 2),
    };
    enum clf_tuning_level level;
    const struct clf_tuning_entry *e = clf_tuning_table_lookup(NULL, 0, &here, &level);
    cr_assert_not_null(e);
    cr_assert_eq(level, CLF_TUNING_LEVEL_DEVICE, "%s", e->name);
    cr_assert_null(e->vendor);
    cr_assert_null(e->device);
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        enum clf_tuning_level l;
        cr_assert_eq(clf_tuning_table_lookup(NULL, 0, &others[i], &l), e, "%s", others[i].device_name);
        cr_assert_eq(l, CLF_TUNING_LEVEL_DEVICE);
        same_params(&here, &others[i]);
    }
    /* more than it was measured with: AVX-512 still runs the AVX2 values */
    const struct clf_device_info avx512 =
        cpu(POCL, "GenuineIntel", "pthread-sapphirerapids-Intel(R) Xeon(R) Platinum 8481C",
            ZEN3 | CLF_CPU_AVX512F | CLF_CPU_AVX512_VNNI | CLF_CPU_AVX512_BF16 | CLF_CPU_AMX, 2);
    cr_assert_eq(clf_tuning_table_lookup(NULL, 0, &avx512, NULL), e);

    /* the same name without the features, or with more cores than were
     * measured: the type's entry, which says it was not measured there */
    const struct clf_device_info old = cpu(POCL, "AuthenticAMD", "pthread-haswell-AMD EPYC", CLF_CPU_SSE4_2, 2),
                                 many = cpu(POCL, "AuthenticAMD", "pthread-haswell-AMD EPYC", ZEN3, 64);
    const struct clf_tuning_entry *t = clf_tuning_table_lookup(NULL, 0, &old, &level);
    cr_assert_not_null(t);
    cr_assert_neq(t, e);
    cr_assert_eq(level, CLF_TUNING_LEVEL_TYPE);
    cr_assert_not_null(strstr(t->name, "not measured"), "%s", t->name);
    cr_assert_eq(clf_tuning_table_lookup(NULL, 0, &many, &level), t);
    cr_assert_eq(level, CLF_TUNING_LEVEL_TYPE);

    /* no built-in CPU entry names a vendor or a model */
    size_t n;
    const struct clf_tuning_entry *tab = clf_tuning_table(&n);
    for (size_t i = 0; i < n; i++)
        if (!tab[i].type || (tab[i].type & CL_DEVICE_TYPE_CPU))
            cr_assert(!tab[i].vendor && !tab[i].device, "%s keys a CPU on its name", tab[i].name);

    /* Intel's runtime on the same CPU is another driver: its own values */
    const struct clf_device_info intel = cpu("Intel(R) OpenCL", "Intel(R) Corporation", "AMD EPYC", ZEN3, 2);
    cr_assert_null(clf_tuning_table_lookup(NULL, 0, &intel, &level));
    cr_assert_eq(level, CLF_TUNING_LEVEL_NONE);
}

/* Features and cores as keys of any table: every feature an entry wants
 * (a superset matches), at most max_cores compute units, an entry with more
 * features listed first winning, and a device-level rank. */
Test(tuning_table, features_and_cores_as_keys)
{
    struct clf_gemm_params p1 = clf_gemm_params_generic, p2 = p1, p3 = p1;
    p1.min_indirect = 1, p2.min_indirect = 2, p3.min_indirect = 3;
    const struct clf_tuning_entry table[] = {
        {"any cpu", NULL, NULL, NULL, CL_DEVICE_TYPE_CPU, &p3, {0}, 0, 0, 0},
        {"avx-512, up to 8 cores", NULL, NULL, NULL, CL_DEVICE_TYPE_CPU, &p1, {0}, 0, CLF_CPU_AVX512F | CLF_CPU_FMA, 8},
        {"avx2", NULL, NULL, NULL, CL_DEVICE_TYPE_CPU, &p2, {0}, 0, CLF_CPU_AVX2 | CLF_CPU_FMA, 0},
    };
    enum clf_tuning_level level;
    struct clf_device_info d = cpu("P", "V", "a", ZEN3 | CLF_CPU_AVX512F, 8);
    const struct clf_tuning_entry *e = clf_tuning_table_lookup(table, 3, &d, &level);
    cr_assert_eq(e, &table[1]);
    cr_assert_eq(level, CLF_TUNING_LEVEL_DEVICE);
    d.compute_units = 9;
    cr_assert_eq(clf_tuning_table_lookup(table, 3, &d, &level), &table[2]);
    d.cpu_features = ZEN3;
    d.compute_units = 1;
    cr_assert_eq(clf_tuning_table_lookup(table, 3, &d, &level), &table[2]);
    d.cpu_features = CLF_CPU_AVX2;  /* no FMA */
    cr_assert_eq(clf_tuning_table_lookup(table, 3, &d, &level), &table[0]);
    cr_assert_eq(level, CLF_TUNING_LEVEL_TYPE);
    /* a GPU has no CPU features: none of these, and nothing says so */
    d.type = CL_DEVICE_TYPE_GPU;
    d.cpu_features = 0;
    cr_assert_null(clf_tuning_table_lookup(table, 3, &d, &level));
    cr_assert_eq(level, CLF_TUNING_LEVEL_NONE);
}

static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return true;
    return false;
}

/* The device list gives every CPU device the host's features, and those
 * are what the kernel reports in /proc/cpuinfo's flags (which it clears for
 * a feature whose registers it does not save, as the check here does). */
Test(tuning_table, host_features_as_the_kernel_reports_them)
{
    char buf[256];
    const unsigned f = clf_cpu_features();
    cr_log_info("host CPU features: %s", clf_cpu_features_str(f, buf, sizeof buf));
    struct clf_device_info *devs;
    int n;
    if (clf_devices_list(&devs, &n) == CLF_OK) {
        for (int i = 0; i < n; i++)
            if (devs[i].type & CL_DEVICE_TYPE_CPU)
                cr_assert_eq(devs[i].cpu_features, f, "%s", devs[i].device_name);
        free(devs);
    }
#if defined(__linux__) && defined(__x86_64__)
    /* the first processor's flags (/proc files have no size to read ahead) */
    FILE *fp = fopen("/proc/cpuinfo", "r");
    cr_assert_not_null(fp);
    char *flags = NULL;
    size_t cap = 0;
    while (getline(&flags, &cap, fp) > 0 && strncmp(flags, "flags", 5))
        ;
    fclose(fp);
    cr_assert(flags && !strncmp(flags, "flags", 5), "no flags line in /proc/cpuinfo");
    flags[strcspn(flags, "\n")] = 0;
    static const struct {
        unsigned bit;
        const char *flag;
    } map[] = {{CLF_CPU_SSE4_2, "sse4_2"},       {CLF_CPU_AVX, "avx"},
               {CLF_CPU_AVX2, "avx2"},           {CLF_CPU_FMA, "fma"},
               {CLF_CPU_AVX512F, "avx512f"},     {CLF_CPU_AVX512_VNNI, "avx512_vnni"},
               {CLF_CPU_AVX512_BF16, "avx512_bf16"}, {CLF_CPU_AMX, "amx_int8"}};
    const char *colon = strchr(flags, ':');
    cr_assert_not_null(colon);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        cr_assert_eq(!!(f & map[i].bit), has_word(colon + 1, map[i].flag), "%s: cpuid and XCR0 say %d, the kernel not",
                     map[i].flag, !!(f & map[i].bit));
    free(flags);
#endif
    cr_assert_str_eq(clf_cpu_features_str(0, buf, sizeof buf), "none known");
    cr_assert_str_eq(clf_cpu_features_str(CLF_CPU_AVX2 | CLF_CPU_FMA, buf, sizeof buf), "avx2 fma");
    /* a short buffer is cut, not overrun */
    char small[6];
    cr_assert_str_eq(clf_cpu_features_str(CLF_CPU_AVX2 | CLF_CPU_FMA, small, sizeof small), "avx2 ");
}
