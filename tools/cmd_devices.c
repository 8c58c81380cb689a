/* cmd_devices.c: `clformer devices [--json]`: every platform and device,
 * the GEMM backend each would run (CLF_GEMM, else its default), and what
 * tunes it (a tuning file, the table's entry, or nothing: generic). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clformer/advanced/files.h>
#include "cli.h"
#include "commands.h"
#include "json_out.h"

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU) return "gpu";
    if (t & CL_DEVICE_TYPE_CPU) return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
    return "other";
}

/* Why CLF_DEVICE_LIMITS left d with its own limits, or NULL when it shaped
 * d or is not set. */
static const char *refused(const struct clf_device_info *d)
{
    const char *spec = getenv("CLF_DEVICE_LIMITS");
    if (!spec || !*spec || d->shaped[0])
        return NULL;
    struct clf_device_info copy = *d;
    return clf_device_shape(&copy, spec) != CLF_OK ? clf_ctx_error(NULL) : NULL;
}

/* What tunes d before a context opens it, as clf_tuning_query will find:
 * its tuning file (`clformer tune`), else the table's GEMM entry, else
 * nothing, so that an untuned device says it runs on generic values. */
static void tuning_str(const struct clf_device_info *d, char *out, size_t len)
{
    char path[CLF_PATH_MAX];
    enum clf_tuning_level level;
    const struct clf_tuning_entry *e = clf_tuning_table_lookup(NULL, 0, d, &level);
    const char *off = getenv("CLF_TUNING");
    if (off && (!strcmp(off, "off") || !strcmp(off, "0") || !strcmp(off, "no")))
        snprintf(out, len, "off (CLF_TUNING=%s): CLBlast's own database", off);
    else if (clf_tuning_path(d, path, sizeof path) == CLF_OK && access(path, F_OK) == 0)
        snprintf(out, len, "the tuning file %s (clformer tune --show checks it)", path);
    else if (e)
        snprintf(out, len, "the table's \"%s\" (%s level)", e->name, clf_tuning_level_str(level));
    else
        snprintf(out, len, "no entry, untuned: our kernels' generic values, and CLBlast's generic GEMM parameters "
                           "where CLBlast runs unless it knows this device (clformer tune measures better ones)");
}

static void print_json(const struct clf_device_info *d, int n)
{
    struct cli_json w;
    cli_json_init(&w, stdout, false);
    cli_json_arr(&w, NULL);
    for (int i = 0; i < n; i++) {
        cli_json_break(&w, "\n  ");
        cli_json_obj(&w, NULL);
        cli_json_num(&w, "index", "%d", d[i].index);
        cli_json_str(&w, "platform", d[i].platform_name);
        cli_json_str(&w, "name", d[i].device_name);
        cli_json_str(&w, "type", type_name(d[i].type));
        cli_json_str(&w, "vendor", d[i].vendor);
        cli_json_num(&w, "compute_units", "%u", d[i].compute_units);
        cli_json_num(&w, "global_mem", "%llu", (unsigned long long)d[i].global_mem);
        cli_json_num(&w, "local_mem", "%llu", (unsigned long long)d[i].local_mem);
        cli_json_num(&w, "max_alloc", "%llu", (unsigned long long)d[i].max_alloc);
        cli_json_num(&w, "max_work_group", "%zu", d[i].max_work_group);
        cli_json_str(&w, "opencl_c", d[i].c_version);
        cli_json_str(&w, "version", d[i].device_version);
        cli_json_str(&w, "driver", d[i].driver_version);
        cli_json_bool(&w, "host_unified", d[i].host_unified);
        enum clf_gemm_backend b;
        bool chosen = clf_gemm_backend_choose(&d[i], NULL, &b) == CLF_OK;
        cli_json_str(&w, "gemm", chosen ? clf_gemm_backend_str(b) : clf_ctx_error(NULL));
        char auto_why[800];
        cli_json_str(&w, "compute_auto", clf_compute_type_str(clf_compute_auto(&d[i], auto_why, sizeof auto_why)));
        cli_json_str(&w, "compute_auto_why", auto_why);
        char text[CLF_PATH_MAX + 256];
        if (d[i].type & CL_DEVICE_TYPE_CPU)
            cli_json_str(&w, "cpu_features", clf_cpu_features_str(d[i].cpu_features, text, sizeof text));
        tuning_str(&d[i], text, sizeof text);
        cli_json_str(&w, "tuning", text);
        cli_json_str(&w, "shaped", d[i].shaped[0] ? d[i].shaped : NULL);
        const char *why = refused(&d[i]);
        if (why)
            cli_json_str(&w, "shape_refused", why);
        cli_json_bool(&w, "default", d[i].is_default);
        cli_json_end(&w);
    }
    cli_json_break(&w, "\n");
    cli_json_end(&w);
    printf("\n");
}

/* One line: which device the default is and why (the rule is
 * clf_devices_match's: the GPU with the most global memory, else the CPU
 * the tuning table prefers, then likewise by memory). */
static void print_default(const struct clf_device_info *d, int n)
{
    int def = -1, same = 0;
    for (int i = 0; i < n; i++)
        if (d[i].is_default)
            def = i;
    if (def < 0)
        return;
    const char *type = type_name(d[def].type);
    const struct clf_tuning_entry *pref = NULL;
    int p = !strcmp(type, "cpu") ? clf_tuning_prefer(&d[def], &pref) : 0;
    bool preferred = false;  /* over another CPU that the table ranks lower */
    for (int i = 0; i < n; i++) {
        if (strcmp(type_name(d[i].type), type))
            continue;
        same++;
        preferred |= i != def && p && clf_tuning_prefer(&d[i], NULL) < p;
    }
    printf("* default: [%d] %s, ", def, d[def].device_name);
    if (!(d[def].type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_CPU)))
        printf("the first device (no GPU or CPU found)");
    else if (same == 1)
        printf("the only %s", type);
    else if (preferred)
        printf("the %s the tuning table prefers of %d (\"%s\")", type, same, pref->name);
    else
        printf("the %s with the most global memory of %d", type, same);
    if (d[def].type == CL_DEVICE_TYPE_CPU)
        printf(" (no GPU found)");
    printf("; choose another with --device or CLF_DEVICE\n");
}

static void print_table(const struct clf_device_info *d, int n)
{
    int last_platform = -1;
    for (int i = 0; i < n; i++) {
        if (d[i].platform_index != last_platform) {
            printf("platform %d: %s\n", d[i].platform_index, d[i].platform_name);
            last_platform = d[i].platform_index;
        }
        printf("  [%d]%s %s (%s, %s)\n", d[i].index, d[i].is_default ? "*" : " ", d[i].device_name,
               type_name(d[i].type), d[i].vendor);
        printf("       %u compute units, %.1f GiB global (%.1f GiB per allocation), %llu KiB local, "
               "work-group ≤ %zu%s\n",
               d[i].compute_units, d[i].global_mem / 1073741824.0, d[i].max_alloc / 1073741824.0,
               (unsigned long long)(d[i].local_mem / 1024), d[i].max_work_group,
               d[i].host_unified ? ", host-unified memory" : "");
        enum clf_gemm_backend b;
        if (clf_gemm_backend_choose(&d[i], NULL, &b) != CLF_OK)
            printf("       GEMM: none (%s)\n", clf_ctx_error(NULL));
        else if (b == CLF_GEMM_HOST)
            printf("       GEMM: host BLAS on the buffers' memory (OpenBLAS, %d threads%s)%s\n", clf_blas_threads(),
                   clf_gemm_f32_onednn() ? "; oneDNN for the large float32 products" : "",
                   getenv("CLF_GEMM") && *getenv("CLF_GEMM") ? ", from CLF_GEMM" : "");
        else
            printf("       GEMM: CLBlast%s\n", getenv("CLF_GEMM") && *getenv("CLF_GEMM") ? ", from CLF_GEMM" : "");
        char auto_why[800];
        clf_compute_auto(&d[i], auto_why, sizeof auto_why);
        printf("       --compute-type auto: %s\n", auto_why);
        char text[CLF_PATH_MAX + 256];
        if (d[i].type & CL_DEVICE_TYPE_CPU)
            printf("       CPU features: %s\n", clf_cpu_features_str(d[i].cpu_features, text, sizeof text));
        tuning_str(&d[i], text, sizeof text);
        printf("       tuning: %s\n", text);
        if (d[i].shaped[0])
            printf("       (type and limits shaped by CLF_DEVICE_LIMITS=%s)\n", d[i].shaped);
        const char *why = refused(&d[i]);
        if (why)
            printf("       (not shaped, cannot be opened: %s)\n", why);
        printf("       %s; %s; driver %s\n", d[i].device_version, d[i].c_version, d[i].driver_version);
    }
    printf("\n");
    print_default(d, n);
}

#define DEVICES_USAGE "usage: clformer devices [--json]\n"

int clf_cmd_devices(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf(DEVICES_USAGE "  every OpenCL platform and device, with its index (what --device and CLF_DEVICE\n"
                                 "  take), type, compute units, memory, who computes its GEMMs, what\n"
                                 "  --compute-type auto picks, its tuning and driver; * marks the default and a\n"
                                 "  line says why. --json: the same as one JSON document.\n");
            return 0;
        } else {
            fprintf(stderr, DEVICES_USAGE);
            return 2;
        }
    }
    struct clf_device_info *devs;
    int n;
    clf_status st = clf_devices_list(&devs, &n);
    if (st != CLF_OK)
        return cli_fail(NULL, st, "listing devices");
    if (json)
        print_json(devs, n);
    else
        print_table(devs, n);
    free(devs);
    return 0;
}
