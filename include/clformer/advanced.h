/* clformer/advanced.h: the stable tier (clformer/clformer.h) and the
 * advanced tier, which includes OpenCL's <CL/cl.h> and may change between
 * minor versions (docs/c-api.md):
 *
 *   clformer/advanced/runtime.h    the context's OpenCL objects, programs, tensors, GEMM
 *   clformer/advanced/ops.h        the Transformer's device ops, forward and backward
 *   clformer/advanced/attention.h  attention, multi-head attention, key/value caches
 *   clformer/advanced/tune.h       tunables, tuning files and the tuning table
 *   clformer/advanced/json.h       the library's JSON reader
 *   clformer/advanced/files.h      folders, and files written to a temporary name and renamed
 *   clformer/advanced/clock.h      the monotonic clock in seconds
 *   clformer/advanced/rand.h       the benchmarks' reproducible data stream (header-only)
 *   clformer/advanced/hash.h       64-bit FNV-1a (header-only) */
#ifndef CLFORMER_ADVANCED_H
#define CLFORMER_ADVANCED_H

#include "clformer/clformer.h"
#include "clformer/advanced/runtime.h"
#include "clformer/advanced/ops.h"
#include "clformer/advanced/attention.h"
#include "clformer/advanced/tune.h"
#include "clformer/advanced/json.h"
#include "clformer/advanced/files.h"
#include "clformer/advanced/clock.h"
#include "clformer/advanced/rand.h"
#include "clformer/advanced/hash.h"

#endif
