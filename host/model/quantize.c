/* quantize.c: the codec of weights stored in reduced precision (enum
 * clf_compute_type): float32 weights into a file's tensors of that type,
 * and such tensors back into float32, for the checkpoint's writer and
 * reader (checkpoint.c, which also converts a float32 file: `clformer
 * quantize`); this file knows nothing of files. Which tensors: every matrix but the learned
 * positions, i.e. the linear layers' weights, stored (in, out), and the
 * embeddings (V, d), whose rows are the tied output projection's outputs;
 * biases, layer norms and positions stay F32.
 *
 *   int8      I8 values q with one F32 scale s per output, named
 *             <weight>_scale as CTranslate2 names its "weight_scale":
 *             s = 127 / max|w| over that output (1 where the maximum is 0,
 *             or so small that 127 / max is not finite: the output's
 *             weights, all below 4e-37, are stored as 0),
 *             q = round_even(w·s) within [-127, 127], and w ≈ q / s,
 *             CTranslate2's convention and arithmetic (float32). The
 *             scales are (out) for a linear weight (in, out) (one per
 *             column) and (V) for an embedding (one per row).
 *   bfloat16  BF16, float32's upper 16 bits rounded to nearest even.
 *   float16   F16 (IEEE half), rounded to nearest even, subnormals kept.
 *
 * A weight that is not finite, or that would round past the type's
 * largest finite value (65504 in float16), is refused naming the tensor:
 * a stored infinity would change the model's outputs, not round them. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model_internal.h"
#include "safetensors.h"

/* ------------------------------------------------------ which tensors */

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

bool clf_quant_stored(const struct clf_param *p)
{
    return p->ndim == 2 && strcmp(p->name, "pos.weight");
}

/* Whether p's outputs are its rows (an embedding) rather than its columns. */
static bool outputs_are_rows(const struct clf_param *p)
{
    return ends_with(p->name, "embed.weight");
}

size_t clf_quant_outputs(const struct clf_param *p)
{
    return outputs_are_rows(p) ? p->shape[0] : p->shape[1];
}

void clf_quant_scale_name(const struct clf_param *p, char *out, size_t len)
{
    snprintf(out, len, "%s_scale", p->name);
}

enum clf_st_dtype clf_quant_dtype(int compute_type, const struct clf_param *p)
{
    if (!clf_quant_stored(p))
        return CLF_ST_F32;
    switch (compute_type) {
    case CLF_COMPUTE_INT8: return CLF_ST_I8;
    case CLF_COMPUTE_BFLOAT16: return CLF_ST_BF16;
    case CLF_COMPUTE_FLOAT16: return CLF_ST_F16;
    default: return CLF_ST_F32;
    }
}

/* --------------------------------------------------------- conversions */

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* x (finite) to bfloat16, rounded to nearest even; false when it rounds to
 * infinity. */
static bool to_bf16(float x, uint16_t *out)
{
    uint32_t u = bits_of(x);
    u += 0x7fffu + (u >> 16 & 1);
    *out = (uint16_t)(u >> 16);
    return (*out & 0x7f80u) != 0x7f80u;
}

static float from_bf16(uint16_t h)
{
    return float_of((uint32_t)h << 16);
}

/* x (finite) to IEEE half, rounded to nearest even; false when it rounds
 * to infinity (|x| >= 65520). */
static bool to_f16(float x, uint16_t *out)
{
    const uint32_t u = bits_of(x), sign = u >> 16 & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x477ff000u)  /* 65520: halfway from 65504 to 2^16, whose even neighbour is infinity */
        return false;
    if (a < 0x38800000u) {  /* below 2^-14: a subnormal half, m·2^-24 (m = 1024 is 2^-14 itself) */
        const float m = nearbyintf(float_of(a) * 16777216.0f);  /* exact scaling; rounds to even */
        *out = (uint16_t)(sign | (uint32_t)m);
        return true;
    }
    a += 0xfffu + (a >> 13 & 1);  /* round the 13 dropped bits to even; a carry moves into the exponent */
    *out = (uint16_t)(sign | (a - 0x38000000u) >> 13);  /* exponent 127 -> 15 */
    return true;
}

static float from_f16(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = h >> 10 & 0x1f, m = h & 0x3ffu;
    if (e == 0)
        return float_of(sign | bits_of(ldexpf((float)m, -24)));
    if (e == 31)
        return float_of(sign | 0x7f800000u | m << 13);
    return float_of(sign | (e + 112) << 23 | m << 13);
}

/* The int8 scale of an output whose largest magnitude is amax. */
static float int8_scale(float amax)
{
    return amax > 127.0f / FLT_MAX ? 127.0f / amax : 1.0f;
}

static int8_t to_i8(float w, float s)
{
    float q = nearbyintf(w * s);
    return (int8_t)(q > 127.0f ? 127 : q < -127.0f ? -127 : q);
}

/* ------------------------------------------------------------ storing */

/* w (p's shape) into q, with the scales into s (int8) or none. A weight
 * that is not finite or overflows the type is refused naming p. */
static clf_status store(const struct clf_param *p, int compute_type, const float *w, void *q, float *s)
{
    const size_t rows = p->shape[0], cols = p->shape[1], n = rows * cols;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(w[i]))
            return clf_error_set(NULL, CLF_ERR_ARG, "tensor %s holds %g at (%zu, %zu): only finite weights can be "
                                 "stored as %s", p->name, w[i], i / cols, i % cols,
                                 clf_compute_type_str(compute_type));
    if (compute_type == CLF_COMPUTE_INT8) {
        const bool by_row = outputs_are_rows(p);
        const size_t outs = clf_quant_outputs(p);
        for (size_t o = 0; o < outs; o++)
            s[o] = 0.0f;
        for (size_t i = 0; i < n; i++) {  /* s first holds each output's max|w| */
            float *amax = &s[by_row ? i / cols : i % cols];
            *amax = fmaxf(*amax, fabsf(w[i]));
        }
        for (size_t o = 0; o < outs; o++)
            s[o] = int8_scale(s[o]);
        int8_t *q8 = q;
        for (size_t i = 0; i < n; i++)
            q8[i] = to_i8(w[i], s[by_row ? i / cols : i % cols]);
        return CLF_OK;
    }
    uint16_t *h = q;
    const bool bf = compute_type == CLF_COMPUTE_BFLOAT16;
    for (size_t i = 0; i < n; i++)
        if (!(bf ? to_bf16(w[i], &h[i]) : to_f16(w[i], &h[i])))
            return clf_error_set(NULL, CLF_ERR_ARG, "tensor %s holds %g at (%zu, %zu), past %s's largest value "
                                 "(%s): it cannot be stored in that type", p->name, w[i], i / cols, i % cols,
                                 clf_compute_type_str(compute_type), bf ? "3.39e38" : "65504");
    return CLF_OK;
}

clf_status clf_quant_tensors(const struct model_layout *l, const float *host, int compute_type,
                             struct clf_st_tensor *t, size_t *count, void **storage)
{
    size_t bytes = 0, k = 0;
    *storage = NULL;
    for (size_t i = 0; i < l->nparams; i++) {
        const struct clf_param *p = &l->params[i];
        const enum clf_st_dtype d = clf_quant_dtype(compute_type, p);
        if (d != CLF_ST_F32)
            bytes += (p->shape[0] * p->shape[1] * clf_st_dtype_size(d) + 3) / 4 * 4 +
                     (d == CLF_ST_I8 ? clf_quant_outputs(p) * sizeof(float) : 0);
    }
    unsigned char *at = *storage = malloc(bytes ? bytes : 1);
    if (!at)
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory");
    for (size_t i = 0; i < l->nparams; i++) {
        const struct clf_param *p = &l->params[i];
        struct clf_st_tensor *x = &t[k++];
        *x = (struct clf_st_tensor){.ndim = p->ndim, .shape = {p->shape[0], p->shape[1]},
                                    .numel = p->shape[0] * (p->ndim == 2 ? p->shape[1] : 1),
                                    .data = host + p->offset, .dtype = clf_quant_dtype(compute_type, p)};
        snprintf(x->name, sizeof x->name, "%s", p->name);
        if (x->dtype == CLF_ST_F32)
            continue;
        void *q = at;
        at += (x->numel * clf_st_dtype_size(x->dtype) + 3) / 4 * 4;
        float *s = NULL;
        if (x->dtype == CLF_ST_I8) {
            struct clf_st_tensor *y = &t[k++];
            s = (float *)at;
            at += clf_quant_outputs(p) * sizeof *s;
            *y = (struct clf_st_tensor){.ndim = 1, .shape = {clf_quant_outputs(p)}, .numel = clf_quant_outputs(p),
                                        .data = s, .dtype = CLF_ST_F32};
            clf_quant_scale_name(p, y->name, sizeof y->name);
        }
        clf_status st = store(p, compute_type, host + p->offset, q, s);
        if (st != CLF_OK) {
            free(*storage);
            *storage = NULL;
            return st;
        }
        x->data = q;
    }
    *count = k;
    return CLF_OK;
}

/* ------------------------------------------------------------ loading */

static void shape_str(const struct clf_st_tensor *t, char *out, size_t len)
{
    snprintf(out, len, "(");
    for (int d = 0; d < t->ndim; d++)
        snprintf(out + strlen(out), len - strlen(out), "%s%zu", d ? ", " : "", t->shape[d]);
    snprintf(out + strlen(out), len - strlen(out), ")");
}

clf_status clf_quant_load(const char *path, const struct clf_st_file *f, int compute_type, const struct clf_param *p,
                          const struct clf_st_tensor *t, float *dst)
{
    const enum clf_st_dtype want = clf_quant_dtype(compute_type, p);
    if (t->dtype != want)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s has dtype %s; a checkpoint of compute_type %s stores "
                             "it as %s",
                             path, p->name, clf_st_dtype_name(t->dtype), clf_compute_type_str(compute_type),
                             clf_st_dtype_name(want));
    const size_t n = t->numel;
    if (want == CLF_ST_F32) {
        memcpy(dst, t->data, n * sizeof *dst);
    } else if (want == CLF_ST_BF16 || want == CLF_ST_F16) {
        const uint16_t *h = t->data;
        for (size_t i = 0; i < n; i++)
            dst[i] = want == CLF_ST_BF16 ? from_bf16(h[i]) : from_f16(h[i]);
    } else {
        char name[160], got[64];
        clf_quant_scale_name(p, name, sizeof name);
        const struct clf_st_tensor *s = clf_st_find(f, name);
        const size_t outs = clf_quant_outputs(p), cols = p->shape[1];
        const bool by_row = outputs_are_rows(p);
        if (!s)
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s is missing (the int8 scales of %s)", path,
                                 name, p->name);
        if (s->dtype != CLF_ST_F32 || s->ndim != 1 || s->shape[0] != outs) {
            shape_str(s, got, sizeof got);
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s is %s of shape %s; the int8 scales of %s "
                                 "are F32 of shape (%zu), one per output", path, name,
                                 clf_st_dtype_name(s->dtype), got, p->name, outs);
        }
        const float *sc = s->data;
        for (size_t o = 0; o < outs; o++)
            if (!(sc[o] > 0.0f) || !isfinite(sc[o]))
                return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s holds %g at %zu, not a positive finite "
                                     "scale", path, name, sc[o], o);
        const int8_t *q = t->data;
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)q[i] / sc[by_row ? i / cols : i % cols];
    }
    return CLF_OK;
}

bool clf_quant_is_scale(const struct model_layout *l, int compute_type, const char *name)
{
    char base[128];
    const size_t len = strlen(name), tail = strlen("_scale");
    if (compute_type != CLF_COMPUTE_INT8 || len <= tail || len - tail >= sizeof base || !ends_with(name, "_scale"))
        return false;
    memcpy(base, name, len - tail);
    base[len - tail] = 0;
    const struct clf_param *p = clf_model_layout_find(l, base);
    return p && clf_quant_stored(p);
}
