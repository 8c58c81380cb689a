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
        /* the fastest the device runs: int8, else float32 */
        t = supports(m, CLF_COMPUTE_INT8, why, sizeof why) == CLF_OK ? CLF_COMPUTE_INT8 : CLF_COMPUTE_FLOAT32;
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
