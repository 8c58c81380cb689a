/* clock.c: clf_now, the monotonic clock in seconds (clformer/advanced/clock.h). */
#include <time.h>

#include "base/clock.h"

double clf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
