/* measure.c: the timing loop and the device record that `clformer bench`,
 * `tune` and `compare-attention` measure with (measure.h). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dist.h"
#include "measure.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double measure_median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return x[n / 2];
}

double measure_time(clf_ctx_t *ctx, clf_status (*fn)(clf_ctx_t *, void *), void *arg, double min_seconds)
{
    enum { MAX_RUNS = 1000 };
    static double t[MAX_RUNS];
    if (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK)
        return -1;
    int n = 0;
    double start = clf_now();
    /* under mpirun every rank runs as many times as the slowest wants (fn
     * may sum across the ranks: a rank that stopped early would leave the
     * others waiting) */
    while (n < MAX_RUNS && dist_any(n < 3 || clf_now() - start < min_seconds)) {
        double t0 = clf_now();
        if (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK)
            return -1;
        t[n++] = clf_now() - t0;
    }
    return measure_median(t, n);
}

void measure_device_get(clf_ctx_t *ctx, struct measure_device *d)
{
    d->info = *clf_ctx_device(ctx);
    d->gemm = clf_ctx_gemm(ctx);
    d->blas_threads = clf_blas_threads();
    cli_gemm_describe(ctx, d->gemm_describe, sizeof d->gemm_describe);
    /* what clf_device_info leaves out, asked of OpenCL directly; a failure
     * leaves 0 and false (unknown, never invented) */
    cl_uint mhz = 0;
    if (clGetDeviceInfo(d->info.device, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof mhz, &mhz, NULL) != CL_SUCCESS)
        mhz = 0;
    d->clock_mhz = mhz;
    /* whole words of CL_DEVICE_EXTENSIONS (a substring would take
     * cl_khr_fp16 for one of a longer name) */
    d->fp16 = clf_device_has_extension(&d->info, "cl_khr_fp16");
    d->subgroups = clf_device_has_extension(&d->info, "cl_khr_subgroups") ||
                   clf_device_has_extension(&d->info, "cl_intel_subgroups");
}

void measure_device_json(struct cli_json *w, const struct measure_device *dev)
{
    const struct clf_device_info *d = &dev->info;
    cli_json_obj(w, "device");
    cli_json_str(w, "name", d->device_name);
    cli_json_str(w, "platform", d->platform_name);
    cli_json_str(w, "vendor", d->vendor);
    cli_json_str(w, "driver", d->driver_version);
    cli_json_str(w, "version", d->device_version);
    cli_json_str(w, "type", d->type & CL_DEVICE_TYPE_GPU ? "gpu" : d->type & CL_DEVICE_TYPE_CPU ? "cpu" : "other");
    cli_json_num(w, "compute_units", "%u", d->compute_units);
    cli_json_num(w, "clock_mhz", "%u", dev->clock_mhz);
    cli_json_num(w, "global_mem_bytes", "%llu", (unsigned long long)d->global_mem);
    cli_json_num(w, "local_mem_bytes", "%llu", (unsigned long long)d->local_mem);
    cli_json_num(w, "max_alloc_bytes", "%llu", (unsigned long long)d->max_alloc);
    cli_json_bool(w, "fp16", dev->fp16);
    cli_json_bool(w, "subgroups", dev->subgroups);
    cli_json_end(w);
    /* which backend ran the GEMMs, and with how many BLAS threads */
    cli_json_str(w, "gemm", clf_gemm_backend_str(dev->gemm));
    cli_json_num(w, "blas_threads", "%d", dev->blas_threads);
}
