/* clformer/advanced/hash.h: 64-bit FNV-1a, the library's one hash: its
 * program cache's keys and checksums, the tuning file's device key, the
 * tokenizers' fingerprints (host/text/), and `clformer train`'s check
 * that its ranks hold the same parameters (CLF_DIST_CHECK). Header-only (no symbol
 * in the ABI), so that all of them share the one definition. Advanced
 * tier (docs/c-api.md). */
#ifndef CLFORMER_ADVANCED_HASH_H
#define CLFORMER_ADVANCED_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Where a hash starts: FNV-1a's 64-bit offset basis. */
#define CLF_FNV_INIT 0xcbf29ce484222325ULL

/* Hashes len bytes of data on from h (CLF_FNV_INIT, or a previous hash
 * to chain several parts). */
static inline uint64_t clf_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#endif
