/* clformer/advanced.h: the stable tier (clformer/clformer.h) and the
 * advanced tier, which includes OpenCL's <CL/cl.h> and may change between
 * minor versions (docs/c-api.md):
 *
 *   clformer/advanced/runtime.h    the context's OpenCL objects, programs, tensors, GEMM
 *   clformer/advanced/ops.h        the Transformer's device ops, forward and backward
 *   clformer/advanced/attention.h  attention, multi-head attention, key/value caches
 *   clformer/advanced/tune.h       tunables, tuning files and the tuning table
 *   clformer/advanced/json.h       the library's JSON reader */
#ifndef CLFORMER_ADVANCED_H
#define CLFORMER_ADVANCED_H

#include "clformer/clformer.h"
#include "clformer/advanced/runtime.h"
#include "clformer/advanced/ops.h"
#include "clformer/advanced/attention.h"
#include "clformer/advanced/tune.h"
#include "clformer/advanced/json.h"

#endif
