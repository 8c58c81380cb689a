/* rand.h: the one stream of made-up data in clformer: a 32-bit LCG with
 * Numerical Recipes' constants, reproducible from its seed, which is all
 * benchmark inputs, probes (tools/reach.c) and synthetic tasks need.
 * Header-only, so that the library, the tools and the tests share it. Not
 * for dropout: its masks come from a counter-based generator on the device. */
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

#endif
