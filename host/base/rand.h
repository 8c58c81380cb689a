/* rand.h: clformer's two host generators, each reproducible from its seed.
 * The one stream of made-up data: a 32-bit LCG with Numerical Recipes'
 * constants, which is all benchmark inputs, probes (tools/reach.c)
 * and synthetic tasks need. The one 64-bit generator: splitmix64, for what
 * must be well mixed (the model's initial weights, the data pipeline's
 * shuffles, the tests' inputs). Header-only, so that the library, the tools
 * and the tests share them. Not for dropout: its masks come from a
 * counter-based generator on the device. */
#ifndef CLF_BASE_RAND_H
#define CLF_BASE_RAND_H

#include <stddef.h>
#include <stdint.h>

/* Steps *s and returns its high 24 bits. */
static inline uint32_t clf_rand24(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* The next value as a float in [0, 1). */
static inline float clf_uniform(uint32_t *s)
{
    return (float)(clf_rand24(s) * (1.0 / 16777216.0));
}

/* x[i] = (uniform - 0.5)·scale for n values from seed: [-scale/2, scale/2). */
static inline void clf_rand_fill(float *x, size_t n, uint32_t seed, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (clf_uniform(&seed) - 0.5f) * scale;
}

/* splitmix64 (Steele, Lea and Flood): steps *state, returns 64 mixed bits. */
static inline uint64_t clf_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
