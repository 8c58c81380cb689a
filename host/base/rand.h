/* rand.h: clformer's two host generators, each reproducible from its seed.
 * The one stream of made-up data, a 32-bit LCG (clf_rand24, clf_uniform,
 * clf_rand_fill), is public, clformer/advanced/rand.h, as the benchmarks
 * and tools of the clformer command use it (issue 49). The one 64-bit
 * generator, here: splitmix64, for what must be well mixed (the model's
 * initial weights, the data pipeline's shuffles, the tests' inputs).
 * Header-only, so that the library and the tests share it. Not for
 * dropout: its masks come from a counter-based generator on the device. */
#ifndef CLF_BASE_RAND_H
#define CLF_BASE_RAND_H

#include <stdint.h>

#include "clformer/advanced/rand.h"

/* splitmix64 (Steele, Lea and Flood): steps *state, returns 64 mixed bits. */
static inline uint64_t clf_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
