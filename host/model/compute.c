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

#include "base/status.h"
#include "model_internal.h"
#include "runtime/gemm_internal.h"

/* The compute types' names, as a checkpoint's compute_type and
 * --compute-type spell them. They live with the types, below the model
 * (model.c), the checkpoint's metadata and the quantizer that all name
 * them: in checkpoint_meta.c they closed a loop of calls through
 * model.c, checkpoint.c and import_marian.c (scripts/check-layers.py). */
static const char *const compute_type_names[CLF_COMPUTE_NTYPES] = {
    [CLF_COMPUTE_FLOAT32] = "float32", [CLF_COMPUTE_INT8] = "int8", [CLF_COMPUTE_BFLOAT16] = "bfloat16",
    [CLF_COMPUTE_FLOAT16] = "float16"};

const char *clf_compute_type_str(enum clf_compute_type t)
{
    return (unsigned)t < CLF_COMPUTE_NTYPES ? compute_type_names[t] : "?";
}

bool clf_compute_type_parse(const char *name, enum clf_compute_type *t)
{
    for (int i = 0; name && i < CLF_COMPUTE_NTYPES; i++)
        if (!strcmp(name, compute_type_names[i])) {
            *t = (enum clf_compute_type)i;
            return true;
        }
    return false;
}

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

/* "auto": int8 wherever it runs on 8-bit weights, else float32.
 *   VNNI or AMX: oneDNN's int8 matmul, its sums exact, the fastest type
 *   measured on AVX-512 EPYC and Xeon decoding.
 *   No VNNI (AVX2; AVX-512 without VNNI; or under ONEDNN_MAX_CPU_ISA):
 *   oneDNN sums pairs of u8·s8 products in 16 bits, so int8 runs on our
 *   AVX2 kernel (runtime/gemm_i8.c), measured 1.20-1.45x float32's
 *   target tokens/s on a 2-vCPU AVX2 Zen 3 (`clformer bench translate`,
 *   small preset, greedy and beam 4, two rounds, 2026-12-07).
 *   Only oneDNN on 7-bit weights left (no AVX2 kernel): float32, as int8
 *   there lost precision and speed (0.76x float32 on that Zen 3). */
enum clf_compute_type clf_compute_auto(const struct clf_device_info *di, char *why, size_t n)
{
    char no[600];
    if (clf_gemm_weights_supports(di, CLF_GEMM_W_INT8, no, sizeof no) != CLF_OK) {
        snprintf(why, n, "float32: int8 does not run here (%s)", no);
        return CLF_COMPUTE_FLOAT32;
    }
    if (clf_gemm_int8_weight_max() != 127) {
        snprintf(why, n, "float32: int8 would run on 7-bit weights here (%s)", clf_gemm_int8_kernel());
        return CLF_COMPUTE_FLOAT32;
    }
    const struct clf_cpu_isa isa = clf_cpu_isa_effective();
    snprintf(why, n, "int8: %s, the CPU having %s", clf_gemm_int8_kernel(),
             isa.amx ? "AMX" : isa.vnni ? "VNNI" : isa.avx512 ? "AVX-512 without VNNI" : "AVX2 without VNNI");
    return CLF_COMPUTE_INT8;
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
