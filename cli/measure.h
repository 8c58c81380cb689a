/* measure.h: how a command-line tool measures: a timing loop (on clf_now,
 * base/clock.h) that waits for the device, and the device a result was
 * measured on (named in its JSON so that results from different machines
 * line up). `clformer bench`, `tune` and `compare-attention` share it. */
#ifndef CLF_MEASURE_H
#define CLF_MEASURE_H

#include <stdbool.h>
#include <stdio.h>

#include <clformer/advanced.h>
#include "json_out.h"

/* Runs fn(arg) once to warm up, then repeatedly until `min_seconds` have
 * passed (at least 3 times), waiting for the device after each run; returns
 * the median seconds per run, or a negative value if fn failed. Under
 * mpirun the ranks agree on the number of runs. */
double measure_time(clf_ctx_t *ctx, clf_status (*fn)(clf_ctx_t *, void *), void *arg, double min_seconds);
/* The median of x (n >= 1; the upper one of an even n), sorting x in place. */
double measure_median(double *x, int n);

/* The device of a measurement and what ran its GEMMs, copied from the
 * context so that a result outlives it. */
struct measure_device {
    struct clf_device_info info;
    enum clf_gemm_backend gemm;
    int blas_threads;
    char gemm_describe[96];  /* cli_gemm_describe's words */
    unsigned clock_mhz;      /* CL_DEVICE_MAX_CLOCK_FREQUENCY (0: not given) */
    bool fp16, subgroups;    /* cl_khr_fp16; cl_khr_subgroups or cl_intel_subgroups */
};
void measure_device_get(clf_ctx_t *ctx, struct measure_device *d);
/* Writes `"device": {...}, "gemm": …, "blas_threads": N` into w's object
 * (the device's memories in bytes, clock, fp16 and subgroups included). */
void measure_device_json(struct cli_json *w, const struct measure_device *d);

#endif
