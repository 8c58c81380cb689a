/* clformer/advanced/rand.h: the one stream of made-up data, reproducible
 * from its seed: a 32-bit LCG with Numerical Recipes' constants, which is
 * all benchmark inputs, probes (tools/reach.c), tuning searches and
 * synthetic tasks need. Header-only (no symbol in the ABI), so the
 * library, the clformer command and the tests share the one definition.
 * The library's well-mixed 64-bit generator (weights, shuffles) is
 * internal: host/base/rand.h. Not for dropout: its masks come from a
 * counter-based generator on the device. Advanced tier (docs/c-api.md). */
#ifndef CLFORMER_ADVANCED_RAND_H
#define CLFORMER_ADVANCED_RAND_H

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
