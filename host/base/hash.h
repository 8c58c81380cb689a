/* hash.h: 64-bit FNV-1a, for cache keys (host/runtime/program.c) and model
 * fingerprints (host/text/spm.cc). */
#ifndef CLF_BASE_HASH_H
#define CLF_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Chained through `h` (start with CLF_FNV_INIT). */
#define CLF_FNV_INIT 0xcbf29ce484222325ULL
uint64_t clf_fnv1a(uint64_t h, const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
