/* hash.h: the library's name for clformer/advanced/hash.h, 64-bit FNV-1a
 * (clf_fnv1a, CLF_FNV_INIT), for cache keys (host/runtime/program.c) and
 * model fingerprints (host/text/spm.cc); public, header-only, so that
 * `clformer train` hashes with the same definition (issue 49). */
#ifndef CLF_BASE_HASH_H
#define CLF_BASE_HASH_H

#include "clformer/advanced/hash.h"

#endif
