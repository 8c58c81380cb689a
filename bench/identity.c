/* identity.c: what a v1 report names its figures by (report.h's struct
 * report_identity): the build (version, commit, build type, compiler and
 * options, from clf_build_info.h, which CMake writes at configure time),
 * the host (CPU model and the ISA features that choose code paths, read
 * from /proc/cpuinfo; thread count; OS) and the device (from the context
 * and OpenCL). No host name: reports are shared. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "clf_build_info.h"
#include "cli.h"

static bool on(const char *cmake_bool)
{
    return !strcmp(cmake_bool, "ON") || !strcmp(cmake_bool, "1") || !strcmp(cmake_bool, "TRUE") ||
           !strcmp(cmake_bool, "YES") || !strcmp(cmake_bool, "on") || !strcmp(cmake_bool, "true");
}

bool bench_has_serve(void) { return on(CLF_BUILD_MHD); }

/* Whether the space-separated flags hold `flag` as a whole word. */
static bool has_flag(const char *flags, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = strstr(flags, flag); p; p = strstr(p + 1, flag))
        if ((p == flags || p[-1] == ' ' || p[-1] == '\t') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
            return true;
    return false;
}

void bench_cpu_info(char *model, size_t mlen, char *isa, size_t ilen)
{
    /* the features the int8, bfloat16 and float32 paths are chosen by */
    static const char *const wanted[] = {"avx2",        "fma",         "f16c",     "avx512f",  "avx512bw",
                                         "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8",
                                         "amx_bf16",    "asimd",       "sve"};
    snprintf(model, mlen, "unknown");
    isa[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    static char line[8192];
    bool got_model = false, got_flags = false;
    while (f && fgets(line, sizeof line, f) && !(got_model && got_flags)) {
        char *v = strchr(line, ':');
        if (!v)
            continue;
        v += 1 + (v[1] == ' ');
        if (!got_model && (!strncmp(line, "model name", 10) || !strncmp(line, "Model", 5))) {
            v[strcspn(v, "\n")] = 0;
            snprintf(model, mlen, "%s", v);
            got_model = true;
        } else if (!got_flags && (!strncmp(line, "flags", 5) || !strncmp(line, "Features", 8))) {
            for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
                size_t used = strlen(isa);
                if (has_flag(v, wanted[i]) && used + strlen(wanted[i]) + 2 < ilen)
                    snprintf(isa + used, ilen - used, "%s%s", used ? " " : "", wanted[i]);
            }
            got_flags = true;
        }
    }
    if (f)
        fclose(f);
}

/* The first value of /proc/cpuinfo's field `key` (the line's text before
 * the colon, trimmed) into out, trimmed; false where it is missing. */
static bool cpuinfo_field(const char *key, char *out, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    bool found = false;
    size_t n = strlen(key);
    while (f && !found && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        size_t k = colon ? (size_t)(colon - line) : 0;
        while (k > 0 && (line[k - 1] == ' ' || line[k - 1] == '\t'))
            k--;
        if ((found = colon && k == n && !strncmp(line, key, n))) {
            char *v = colon + 1 + strspn(colon + 1, " \t");
            v[strcspn(v, "\n")] = 0;
            snprintf(out, len, "%s", v);
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* That field as a number; -1 where it is missing. */
static double cpuinfo_number(const char *key)
{
    char v[64];
    return cpuinfo_field(key, v, sizeof v) ? strtod(v, NULL) : -1;
}

/* FLOP a cycle a core in float32 from the ISA: FMA units × SIMD floats × 2.
 * Told apart by the features /proc/cpuinfo lists, and by AMD's family
 * only where one ISA runs on datapaths of two widths: Zen 1 (family 0x17,
 * models below 0x30) splits AVX2 over 128-bit units, Zen 4 (family 0x19
 * with AVX-512) AVX-512 over 256-bit units. Assumed, not read: two FMA
 * units, which Intel's parts with one 512-bit FMA unit (some Xeon Silver
 * and Bronze, client Ice Lake) halve for AVX-512. 0 where unknown. */
static unsigned flop_per_cycle(const char *isa, char *why, size_t wlen)
{
    char vendor[64];
    const bool amd = cpuinfo_field("vendor_id", vendor, sizeof vendor) && !strcmp(vendor, "AuthenticAMD");
    double family = cpuinfo_number("cpu family"), model = cpuinfo_number("model");
    if (has_flag(isa, "avx512f")) {
        if (amd && family == 0x19) {
            snprintf(why, wlen, "AVX-512 on Zen 4's 256-bit units: 2 FMA x 8 floats x 2 = 32");
            return 32;
        }
        snprintf(why, wlen, "AVX-512: 2 FMA units (assumed) x 16 floats x 2 = 64");
        return 64;
    }
    if (has_flag(isa, "avx2") && has_flag(isa, "fma")) {
        if (amd && family == 0x17 && model >= 0 && model < 0x30) {
            snprintf(why, wlen, "AVX2+FMA on Zen 1's 128-bit units: 2 FMA x 4 floats x 2 = 16");
            return 16;
        }
        snprintf(why, wlen, "AVX2+FMA: 2 FMA units x 8 floats x 2 = 32");
        return 32;
    }
    snprintf(why, wlen, "no AVX2+FMA nor AVX-512 listed (\"%.100s\"): FLOP a cycle unknown", isa);
    return 0;
}

double bench_cpu_theoretical_gflops(unsigned compute_units, unsigned clock_mhz, char *basis, size_t blen)
{
    char model[128], isa[160], why[160], clock_from[64];
    bench_cpu_info(model, sizeof model, isa, sizeof isa);
    unsigned flop = flop_per_cycle(isa, why, sizeof why);
    if (!flop) {
        snprintf(basis, blen, "%s", why);
        return NAN;
    }
    /* the clock: the device's, else the kernel's cpufreq maximum, else
     * what /proc/cpuinfo says the core runs at now */
    double mhz = clock_mhz;
    snprintf(clock_from, sizeof clock_from, "the device's max clock");
    if (mhz <= 0) {
        FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
        double khz = 0;
        if (f && fscanf(f, "%lf", &khz) == 1 && khz > 0) {
            mhz = khz / 1e3;
            snprintf(clock_from, sizeof clock_from, "cpufreq's cpuinfo_max_freq");
        }
        if (f)
            fclose(f);
    }
    if (mhz <= 0 && (mhz = cpuinfo_number("cpu MHz")) > 0)
        snprintf(clock_from, sizeof clock_from, "/proc/cpuinfo's cpu MHz");
    if (mhz <= 0) {
        snprintf(basis, blen, "%s, but no clock: not the device's, cpufreq's nor /proc/cpuinfo's", why);
        return NAN;
    }
    /* cores: the compute units, which CPU drivers make one a hardware
     * thread, over the threads a core (siblings / cpu cores) */
    double siblings = cpuinfo_number("siblings"), cores_a_pkg = cpuinfo_number("cpu cores");
    unsigned tpc = siblings > 0 && cores_a_pkg > 0 && siblings > cores_a_pkg ? (unsigned)(siblings / cores_a_pkg) : 1;
    unsigned units = compute_units ? compute_units : 1, cores = (units + tpc - 1) / tpc;
    snprintf(basis, blen, "%u cores (%u compute units, %u thread%s a core) x %.0f MHz (%s) x %u FLOP a cycle (%s)",
             cores, units, tpc, tpc > 1 ? "s" : "", mhz, clock_from, flop, why);
    return cores * mhz * 1e-3 * flop;
}

/* The environment's caps on the instruction sets the kernels and BLAS use:
 * PoCL's target CPU, OpenBLAS's core and oneDNN's ISA, each set by hand to
 * emulate an older CPU on this one. Recorded as NAME=VALUE words so that
 * such a run's row reads as what it is. */
static void isa_caps(char *out, size_t len)
{
    static const char *const names[] = {"POCL_LLVM_CPU_NAME", "OPENBLAS_CORETYPE", "ONEDNN_MAX_CPU_ISA",
                                        "DNNL_MAX_CPU_ISA"};
    out[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        size_t used = strlen(out);
        if (v && *v && used + strlen(names[i]) + strlen(v) + 3 < len)
            snprintf(out + used, len - used, "%s%s=%s", used ? " " : "", names[i], v);
    }
}

void bench_identity_get(clf_ctx_t *ctx, struct report_identity *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->version, sizeof id->version, "%s", CLF_BUILD_VERSION);
    snprintf(id->commit, sizeof id->commit, "%s", CLF_BUILD_COMMIT);
    snprintf(id->build_type, sizeof id->build_type, "%s", CLF_BUILD_TYPE[0] ? CLF_BUILD_TYPE : "none");
    snprintf(id->compiler, sizeof id->compiler, "%s", CLF_BUILD_COMPILER);
    id->onednn = on(CLF_BUILD_ONEDNN);
    id->mpi = on(CLF_BUILD_MPI);
    id->mhd = on(CLF_BUILD_MHD);
    id->sanitize = on(CLF_BUILD_SANITIZE);

    bench_cpu_info(id->cpu, sizeof id->cpu, id->isa, sizeof id->isa);
    isa_caps(id->caps, sizeof id->caps);
    id->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(id->weights, sizeof id->weights, "random");  /* bench_model's, seed 1, in every benchmark */
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(id->os, sizeof id->os, "%.20s %.80s %.20s", u.sysname, u.release, u.machine);
    id->load1 = -1;
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf", &id->load1) != 1)
            id->load1 = -1;
        fclose(la);
    }
    if (id->load1 < 0)
        id->load1 = NAN;  /* unknown: null in the report, never 0 */

    struct measure_device dev;
    measure_device_get(ctx, &dev);
    const struct clf_device_info *d = &dev.info;
    snprintf(id->device, sizeof id->device, "%s", d->device_name);
    snprintf(id->platform, sizeof id->platform, "%s", d->platform_name);
    snprintf(id->vendor, sizeof id->vendor, "%s", d->vendor);
    snprintf(id->driver, sizeof id->driver, "%s", d->driver_version);
    snprintf(id->device_version, sizeof id->device_version, "%s", d->device_version);
    snprintf(id->opencl_c, sizeof id->opencl_c, "%s", d->c_version);
    snprintf(id->device_type, sizeof id->device_type, "%s",
             d->type & CL_DEVICE_TYPE_GPU ? "gpu" : d->type & CL_DEVICE_TYPE_CPU ? "cpu" : "other");
    id->compute_units = d->compute_units;
    id->clock_mhz = dev.clock_mhz;
    id->global_mem = d->global_mem;
    id->local_mem = d->local_mem;
    id->max_alloc = d->max_alloc;
    id->fp16 = dev.fp16;
    id->subgroups = dev.subgroups;
    snprintf(id->gemm, sizeof id->gemm, "%s", clf_gemm_backend_str(dev.gemm));
    id->blas_threads = dev.blas_threads;
    char buf[160];
    cli_clblast_version(buf, sizeof buf);
    snprintf(id->clblast, sizeof id->clblast, "%.63s", buf[0] ? buf : "unknown");
    snprintf(id->openblas, sizeof id->openblas, "%s", openblas_get_config());

    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(id->date, sizeof id->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
