/* energy.h: the energy a span of a benchmark took where the machine
 * exposes a counter (energy.c): RAPL's package domains under
 * /sys/class/powercap. NaN where none can be read: a report says null
 * there, never 0. Needs nothing of OpenCL (test_report links it alone). */
#ifndef CLF_BENCH_ENERGY_H
#define CLF_BENCH_ENERGY_H

#include <stdbool.h>

#define BENCH_ENERGY_DOMAINS 16

struct bench_energy {
    int n;                                                 /* domains read at the start */
    char dir[BENCH_ENERGY_DOMAINS][64];                    /* "intel-rapl:0" */
    unsigned long long start[BENCH_ENERGY_DOMAINS];        /* energy_uj */
    unsigned long long range[BENCH_ENERGY_DOMAINS];        /* max_energy_range_uj: where it wraps (0: unknown) */
    char root[192];
};

/* Reads the counters under root (NULL: /sys/class/powercap): every
 * top-level domain "intel-rapl:N" (the packages; AMD's RAPL has the same
 * names since Linux 5.8), not its subzones "intel-rapl:N:M", which the
 * package already counts. */
void bench_energy_begin(struct bench_energy *e, const char *root);
/* Joules since bench_energy_begin, summed over the domains, one wrap of a
 * counter allowed for; NaN where no domain was readable at both ends.
 * The whole package's: other processes on it count too. */
double bench_energy_end(const struct bench_energy *e);

#endif
