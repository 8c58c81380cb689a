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
