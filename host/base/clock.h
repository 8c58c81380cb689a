/* clock.h: seconds on the monotonic clock, for measuring: the library's
 * profiler, the tools, the benchmarks and the tests use it. Not every
 * clock read goes through it: the translation queue (clf_queue_now,
 * translate/queue.c) and the server (tools/serve/) read CLOCK_MONOTONIC
 * themselves, and the server CLOCK_REALTIME for its log's times and its
 * condition variables' deadlines. */
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
