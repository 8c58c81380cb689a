/* hash.c: 64-bit FNV-1a (see hash.h). */
#include "base/hash.h"

uint64_t clf_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
