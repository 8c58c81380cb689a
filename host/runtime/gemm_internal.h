/* gemm_internal.h: what the library's layers above the runtime use of
 * GEMM beyond the public clf_gemm (clformer/advanced/runtime.h): the fused
 * bias and ReLU products the ops call, and a model's weights in another
 * compute type (int8, bfloat16, float16, packed float32) with what a
 * device supports. The paths behind them share gemm_paths.h. */
#ifndef CLF_RUNTIME_GEMM_INTERNAL_H
#define CLF_RUNTIME_GEMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "clformer/advanced/runtime.h"

/* The types a model's weights compute in (gemm.c, below). */
/* CLF_GEMM_W_F32P: float32 weights packed by oneDNN (decoding on CPU
 * devices: gemm_dnnl.c), the arithmetic of float32 in another order */
enum clf_gemm_weights { CLF_GEMM_W_FLOAT32, CLF_GEMM_W_INT8, CLF_GEMM_W_BF16, CLF_GEMM_W_F16, CLF_GEMM_W_F32P };

/* gemm.c: C = op(A)·op(B) + bias (a row of n floats added to every row)
 * in one call, arguments checked as clf_gemm checks them: where
 * clf_gemm_fuses_bias says so (the host backend, or B in a model's
 * weights of another type); the ops' clf_gemm_bias calls it there and
 * the GEMM and bias_add elsewhere. */
bool clf_gemm_fuses_bias(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b);
clf_status clf_gemm_bias_fused(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                               const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c);
/* C = max(A·B + bias, 0) in one call, where clf_gemm_fuses_relu says so
 * (B in a model's weights that oneDNN multiplies: float32 packed, int8,
 * bfloat16); the FFN's first GEMM when no dropout follows it (decoding). */
bool clf_gemm_fuses_relu(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b);
clf_status clf_gemm_bias_relu_fused(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                                    const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c);

/* gemm.c: a model's weights in another type. clf_gemm_weights_set names
 * the buffer holding a model's weights and their compute type (float32:
 * none; views packed before are dropped; one such buffer per context,
 * another is refused); clf_gemm and clf_gemm_bias then send the GEMMs whose
 * B lies in it (clf_gemm_packed_takes) to the type's path, which packs each
 * B view at its first use: int8 and bfloat16 to gemm_dnnl.c, float16 to
 * gemm_half.c. clf_gemm_weights_supports says why a device cannot run a
 * type (CLF_ERR_UNSUPPORTED, the reason in why). The type's name and
 * clf_gemm_packed_takes are gemm_common.c's, for the paths to use. */
const char *clf_gemm_weights_str(enum clf_gemm_weights t);
clf_status clf_gemm_weights_supports(const struct clf_device_info *di, enum clf_gemm_weights t, char *why, size_t n);
clf_status clf_gemm_weights_set(clf_ctx_t *ctx, cl_mem weights, enum clf_gemm_weights t);
/* Whether float32 decoding on ctx runs on packed weights (CLF_GEMM_W_F32P):
 * a build with oneDNN, the host backend at recorded addresses, a CPU with
 * AVX2, and CLF_GEMM_PACK not off; why says which is missing. */
bool clf_gemm_f32_packs(const clf_ctx_t *ctx, char *why, size_t n);

/* gemm_dnnl.c: int8 and bfloat16 through oneDNN on the host backend (the
 * host's memory at recorded addresses; _init refuses other contexts). */
bool clf_gemm_dnnl_built(void);
/* The largest |q| of int8 weights: 127, or 63 (7 bits) where oneDNN's int8
 * products saturate at full scale (CPUs without VNNI: gemm_dnnl.c's probe,
 * run once per process); 127 in a build without oneDNN. */
int clf_gemm_int8_weight_max(void);
/* Which int8 kernel runs, in words (gemm_dnnl.c's probe decides). */
const char *clf_gemm_int8_kernel(void);
/* Which kernel runs packed float32 (CLF_GEMM_W_F32P), in words: gemm_f32.c's
 * where oneDNN's effective ISA has AVX2 but not AVX-512 (and
 * CLF_GEMM_F32_OWN is not off), else oneDNN's matmul. */
const char *clf_gemm_f32_kernel(void);

#endif
