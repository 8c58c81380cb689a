/* clformer/clformer.h: libclformer's stable tier, the one header a program
 * that translates, tokenizes, scores or trains includes. It needs no
 * OpenCL header: devices are listed by index and name, and contexts,
 * models, translators, tokenizers, queues and trainers are opaque handles.
 *
 *   clformer/status.h     clf_status, clf_status_str, clf_ctx_error
 *   clformer/device.h     devices, settings, contexts, memory and cache counters
 *   clformer/text.h       SentencePiece, tokenizers, parallel data, BLEU and chrF
 *   clformer/model.h      configs, models, checkpoints: load, save, import, quantize
 *   clformer/translate.h  translators: text in, text out
 *   clformer/serve.h      a translation queue batching across requests
 *   clformer/train.h      the trainer: one update per call, checkpoints
 *
 * What takes OpenCL's types (tensors, ops, attention, GEMM, tuning) is the
 * advanced tier, <clformer/advanced.h>: it may change between minor
 * versions (docs/c-api.md). */
#ifndef CLFORMER_H
#define CLFORMER_H

#include "clformer/status.h"
#include "clformer/device.h"
#include "clformer/text.h"
#include "clformer/model.h"
#include "clformer/translate.h"
#include "clformer/serve.h"
#include "clformer/train.h"

#endif
