/* clformer/advanced/clock.h: seconds on the monotonic clock, for
 * measuring: the library's profiler and training log, the clformer
 * command's tools and benchmarks, and the tests read it, so that all of
 * them share the one definition (host/base/clock.c). A function, not an
 * inline one: CLOCK_MONOTONIC is POSIX's, which a program in strict C11
 * does not see. The translation queue and the server (its deadlines,
 * rate limits and files' ages) read it too; the server reads
 * CLOCK_REALTIME itself for its log's times and its condition variables'
 * deadlines. Advanced tier (docs/c-api.md). */
#ifndef CLFORMER_ADVANCED_CLOCK_H
#define CLFORMER_ADVANCED_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* Seconds since an arbitrary start, on CLOCK_MONOTONIC. */
double clf_now(void);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
