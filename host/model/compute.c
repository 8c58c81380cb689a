/* compute.c: a model's compute type for decoding, by CTranslate2's names
 * (default, auto, float32, int8, bfloat16, float16): which types a device
 * runs, the choice that default and auto make, and handing the weights'
 * buffer to the runtime's packed GEMMs (runtime/gemm.c: int8 and bfloat16
 * in gemm_dnnl.c, float16 in gemm_half.c), which then run every linear
 * layer and the tied output projection in that type; float32 too runs on
 * weights oneDNN packed once, where clf_gemm_f32_packs allows it.
 * Layer norms, softmax, attention and the residual stream stay float32;
 * training never sets a type. */
#include <stdio.h>
#include <string.h>

#include "model_internal.h"

static enum clf_gemm_weights gemm_weights_of(enum clf_compute_type t)
{
    return t == CLF_COMPUTE_INT8       ? CLF_GEMM_W_INT8
           : t == CLF_COMPUTE_BFLOAT16 ? CLF_GEMM_W_BF16
           : t == CLF_COMPUTE_FLOAT16  ? CLF_GEMM_W_F16
                                       : CLF_GEMM_W_FLOAT32;
}

/* Whether m's device runs t; CLF_ERR_UNSUPPORTED with the reason in why. */
static clf_status supports(const clf_model_t *m, enum clf_compute_type t, char *why, size_t n)
{
    return clf_gemm_weights_supports(clf_ctx_device(m->ctx), gemm_weights_of(t), why, n);
}

/* "auto": int8 where the CPU multiplies 8-bit integers in 32-bit sums
 * (VNNI or AMX: oneDNN's int8 matmul there is the fastest type measured on
 * decoding's shapes), else float32. Without VNNI, oneDNN 2.6 sums pairs of
 * u8·s8 products in 16 bits and runs on 7-bit weights (gemm_dnnl.c): int8
 * then was 0.76x float32's speed on an AVX2 Zen 3 (beam 4, README's
 * "Compute types"), so auto keeps float32 there. */
enum clf_compute_type clf_compute_auto(const struct clf_device_info *di, char *why, size_t n)
{
    char no[600];
    if (clf_gemm_weights_supports(di, CLF_GEMM_W_INT8, no, sizeof no) != CLF_OK) {
        snprintf(why, n, "float32: int8 does not run here (%s)", no);
        return CLF_COMPUTE_FLOAT32;
    }
    const struct clf_cpu_isa isa = clf_cpu_isa_effective();
    if ((isa.amx || isa.vnni) && clf_gemm_int8_weight_max() == 127) {
        snprintf(why, n, "int8: the CPU has %s (int8 products summed in 32 bits)", isa.amx ? "AMX" : "VNNI");
        return CLF_COMPUTE_INT8;
    }
    if (isa.amx || isa.vnni) {
        snprintf(why, n, "float32: the CPU has VNNI but oneDNN's int8 products saturated gemm_dnnl.c's probe, so "
                 "int8 runs on 7-bit weights here");
        return CLF_COMPUTE_FLOAT32;
    }
    snprintf(why, n, "float32: the CPU has %s without VNNI, where int8 runs on 7-bit weights and is slower than "
             "float32 (ONEDNN_MAX_CPU_ISA caps what counts)", isa.avx512 ? "AVX-512" : "AVX2");
    return CLF_COMPUTE_FLOAT32;
}

clf_status clf_model_compute_set(clf_model_t *m, const char *name)
{
    enum clf_compute_type t;
    char why[600];
    if (!name || !strcmp(name, "default")) {
        /* CTranslate2's default: the stored type, or float32 where the
         * device cannot run it (as CTranslate2 falls back) */
        t = (enum clf_compute_type)m->stored_compute;
        if (supports(m, t, why, sizeof why) != CLF_OK)
            t = CLF_COMPUTE_FLOAT32;
    } else if (!strcmp(name, "auto")) {
        /* the fastest the device runs, by what the CPU has */
        t = clf_compute_auto(clf_ctx_device(m->ctx), why, sizeof why);
    } else if (!clf_compute_type_parse(name, &t)) {
        return clf_error_set(m->ctx, CLF_ERR_ARG,
                             "compute type '%s': choose default, auto, float32, int8, bfloat16 or float16", name);
    } else if (supports(m, t, why, sizeof why) != CLF_OK) {
        return clf_error_set(m->ctx, CLF_ERR_UNSUPPORTED, "compute type %s: %s", name, why);
    }
    /* float32 on a CPU device with oneDNN: the same weights packed once
     * (runtime/gemm_dnnl.c), faster than the host BLAS on decoding's shapes */
    enum clf_gemm_weights w = gemm_weights_of(t);
    if (w == CLF_GEMM_W_FLOAT32 && clf_gemm_f32_packs(m->ctx, why, sizeof why))
        w = CLF_GEMM_W_F32P;
    clf_status st = clf_gemm_weights_set(m->ctx, m->weights.buf, w);
    if (st == CLF_OK)
        m->compute = (int)t;
    return st;
}

enum clf_compute_type clf_model_compute(const clf_model_t *m) { return (enum clf_compute_type)m->compute; }
