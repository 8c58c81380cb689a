/* clock.h: the one clock for measuring: seconds on the monotonic clock,
 * for the library's profiler, the tools, the benchmarks and the tests. */
#ifndef CLF_BASE_CLOCK_H
#define CLF_BASE_CLOCK_H

#include <time.h>

static inline double clf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
