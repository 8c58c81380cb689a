/* test_quantize.c: quantized checkpoints (host/model/quantize.c). The
 * conversions against plain-C references written here from the types'
 * definitions (bfloat16 and float16 by nearest of the neighbours, ties to
 * even, float16's from a table of every finite half; int8 by CTranslate2's
 * per-output rule), on matrices of 1, 7 and 33 rows and columns, a zero
 * output, an output with one large value, float16's overflow refused; the
 * file sizes; the compute type through the metadata; a quantized
 * checkpoint's weights as loaded equal the float32 model's rounded by the
 * references, and so do its translations (greedy and beam, ids and
 * scores); corrupt files (a scale missing, misshapen, a wrong dtype)
 * refused naming the tensor; training from a quantized file refused; and
 * the commands: `clformer quantize` of the imported Marian fixture
 * translates through `clformer translate` as the rounded import does. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clformer.h"
#include "model/checkpoint.h"
#include "testutil.h"

#define FIXTURE CLF_SOURCE_DIR "/tests/fixtures/model/tiny_post.safetensors"

static const enum clf_compute_type types[3] = {CLF_COMPUTE_INT8, CLF_COMPUTE_BFLOAT16, CLF_COMPUTE_FLOAT16};

/* ------------------------------------------------------ the references */

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* x rounded to bfloat16: the nearer of the two bfloat16 values around it
 * (compared in double), ties to the one whose last kept bit is 0. */
static float ref_bf16(float x)
{
    const uint32_t lo = bits(x) & 0xffff0000u, hi = lo + 0x10000u;
    const double dl = fabs((double)x - from_bits(lo)), dh = fabs((double)from_bits(hi) - x);
    if (dl != dh)
        return from_bits(dl < dh ? lo : hi);
    return from_bits(lo & 0x10000u ? hi : lo);
}

/* Every non-negative finite half, by its bits (0 .. 0x7bff), as a float:
 * m·2^-24 below the normals, (1 + m/1024)·2^(e-15) above. */
static float halves[0x7c00];

static void halves_init(void)
{
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const int e = (int)(h >> 10), m = (int)(h & 0x3ff);
        halves[h] = e ? ldexpf(1.0f + (float)m / 1024.0f, e - 15) : ldexpf((float)m, -24);
    }
}

/* x rounded to the nearest half, ties to an even mantissa; false past the
 * largest (|x| >= 65520 rounds to infinity). */
static bool ref_f16(float x, float *out)
{
    const float a = fabsf(x);
    if (a >= 65520.0f)
        return false;
    size_t lo = 0, hi = 0x7bff;  /* the last half <= a */
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (halves[mid] <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    size_t pick = lo;
    if (lo < 0x7bff) {
        const double dl = (double)a - halves[lo], dh = (double)halves[lo + 1] - a;
        pick = dh < dl || (dh == dl && (lo & 1)) ? lo + 1 : lo;
    } else if (a > 65504.0f) {
        pick = 0x7bff;  /* below 65520: 65504 is the nearer */
    }
    *out = copysignf(halves[pick], x);
    return true;
}

/* CTranslate2's int8 rule for one output of n weights, stride apart:
 * s = 127 / max|w| (1 for a zero output), w ≈ round(w·s) / s. */
static void ref_int8(const float *w, float *out, size_t n, size_t stride, float *scale)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++)
        amax = fmaxf(amax, fabsf(w[i * stride]));
    const float s = amax > 0.0f ? 127.0f / amax : 1.0f;
    for (size_t i = 0; i < n; i++) {
        float q = rintf(w[i * stride] * s);
        const int8_t stored = (int8_t)(q > 127.0f ? 127 : q < -127.0f ? -127 : q);  /* no -0 in int8 */
        out[i * stride] = (float)stored / s;
        /* within half a step of the original (a float's rounding on top) */
        cr_assert(fabsf(out[i * stride] - w[i * stride]) <= 0.5f / s * (1.0f + 1e-6f),
                  "int8 of %g with scale %g: %g", w[i * stride], s, out[i * stride]);
    }
    *scale = s;
}

/* A parameter's values rounded as a checkpoint of type t stores them, by
 * the references: every matrix but pos.weight; an embedding's outputs are
 * its rows, a linear weight's (in, out) its columns. */
static void ref_round(const struct clf_param *p, enum clf_compute_type t, float *w)
{
    if (p->ndim != 2 || !strcmp(p->name, "pos.weight"))
        return;
    const size_t rows = p->shape[0], cols = p->shape[1], n = rows * cols;
    const size_t len = strlen(p->name);
    const bool by_row = len >= 12 && !strcmp(p->name + len - 12, "embed.weight");
    float s;
    if (t == CLF_COMPUTE_INT8) {
        if (by_row)
            for (size_t r = 0; r < rows; r++)
                ref_int8(w + r * cols, w + r * cols, cols, 1, &s);
        else
            for (size_t c = 0; c < cols; c++)
                ref_int8(w + c, w + c, rows, cols, &s);
    } else {
        for (size_t i = 0; i < n; i++)
            if (t == CLF_COMPUTE_BFLOAT16)
                w[i] = ref_bf16(w[i]);
            else
                cr_assert(ref_f16(w[i], &w[i]), "%s: %g overflows float16", p->name, w[i]);
    }
}

/* ------------------------------------------- conversions on odd shapes */

/* Params of (rows, cols) for each pair below, "embed.weight" first (by
 * rows), then linear weights (by columns), packed in one buffer. */
static const size_t shapes[][2] = {{7, 33}, {1, 7}, {7, 1}, {33, 7}, {1, 1}, {33, 33}};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

static void layout(struct model_layout *l, struct clf_param *p)
{
    size_t off = 0;
    for (int i = 0; i < NSHAPES; i++) {
        p[i] = (struct clf_param){.ndim = 2, .shape = {shapes[i][0], shapes[i][1]}, .offset = off};
        if (i == 0)
            snprintf(p[i].name, sizeof p[i].name, "embed.weight");
        else
            snprintf(p[i].name, sizeof p[i].name, "l%d.weight", i);
        off += shapes[i][0] * shapes[i][1];
    }
    *l = (struct model_layout){.params = p, .nparams = NSHAPES, .numel = off};
}

/* w stored as type t and turned back into float32 (through the tensors a
 * file would hold), into back; CLF_OK or the refusal. */
static clf_status round_trip(const struct model_layout *l, const float *w, enum clf_compute_type t, float *back)
{
    struct clf_st_tensor tensors[2 * NSHAPES];
    size_t count = 0;
    void *storage = NULL;
    clf_status st = clf_quant_tensors(l, w, (int)t, tensors, &count, &storage);
    if (st != CLF_OK)
        return st;
    cr_assert_eq(count, t == CLF_COMPUTE_INT8 ? 2 * NSHAPES : NSHAPES);
    struct clf_st_file f = {.tensors = tensors, .count = count};
    for (size_t i = 0; i < l->nparams; i++) {
        const struct clf_param *p = &l->params[i];
        const struct clf_st_tensor *x = clf_st_find(&f, p->name);
        cr_assert(x);
        cr_assert_eq(st = clf_quant_load("mem", &f, (int)t, p, x, back + p->offset), CLF_OK, "%s",
                     clf_ctx_error(NULL));
    }
    free(storage);
    return CLF_OK;
}

/* Values around every binade and the halves' edges, with zero outputs
 * (embed.weight's row 2, l3's column 0) and one large value (l5's). */
static float *odd_values(const struct model_layout *l, float big)
{
    float *w = malloc(l->numel * sizeof *w);
    tu_fill(w, l->numel, 11, -1.0f, 1.0f);
    for (size_t i = 0; i < l->numel; i++)
        w[i] = ldexpf(w[i], (int)(i % 44) - 30);  /* 2^-30 .. 2^13 */
    const struct clf_param *e = &l->params[0], *l3 = &l->params[3], *l5 = &l->params[5];
    memset(w + e->offset + 2 * e->shape[1], 0, e->shape[1] * sizeof *w);
    for (size_t r = 0; r < l3->shape[0]; r++)
        w[l3->offset + r * l3->shape[1]] = 0.0f;
    tu_fill(w + l5->offset, l5->shape[0] * l5->shape[1], 5, -0x1p-20f, 0x1p-20f);
    w[l5->offset + 5 * 33 + 4] = big;
    /* float16's edges: exact ties, the largest half, its subnormals */
    const float edges[] = {65504.0f, -65504.0f, 65519.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 0x1p-24f,
                           0x1p-25f, 0x1.8p-24f, 0x1p-14f, 0x1.ffcp-15f, -0.0f, 0x1p-26f};
    memcpy(w + l->params[4].offset + 0, edges, sizeof edges[0]);  /* (1, 1) */
    memcpy(w + l->params[1].offset, edges + 1, 7 * sizeof *w);    /* (1, 7) */
    memcpy(w + l->params[2].offset, edges + 8, 4 * sizeof *w);    /* (7, 1) */
    return w;
}

Test(convert, each_type_equals_its_reference_on_odd_shapes)
{
    halves_init();
    struct clf_param p[NSHAPES];
    struct model_layout l;
    layout(&l, p);
    float *w = odd_values(&l, 3000.0f), *back = malloc(l.numel * sizeof *back), *want = malloc(l.numel * sizeof *want);
    for (int k = 0; k < 3; k++) {
        memcpy(want, w, l.numel * sizeof *w);
        for (int i = 0; i < NSHAPES; i++)
            ref_round(&p[i], types[k], want + p[i].offset);
        cr_assert_eq(round_trip(&l, w, types[k], back), CLF_OK, "%s: %s", clf_compute_type_str(types[k]),
                     clf_ctx_error(NULL));
        for (size_t i = 0; i < l.numel; i++)
            cr_assert(!memcmp(&back[i], &want[i], 4), "%s: weight %zu = %a stored as %a, the reference %a",
                      clf_compute_type_str(types[k]), i, w[i], back[i], want[i]);
    }
    /* the zero outputs stay zero (no division by a zero maximum) */
    for (size_t j = 0; j < p[0].shape[1]; j++)
        cr_assert_eq(back[p[0].offset + 2 * p[0].shape[1] + j], 0.0f);
    free(w);
    free(back);
    free(want);
}

Test(convert, int8_scales_are_ctranslate2s_one_per_output)
{
    struct clf_param p[NSHAPES];
    struct model_layout l;
    layout(&l, p);
    float *w = odd_values(&l, 3000.0f);
    struct clf_st_tensor t[2 * NSHAPES];
    size_t count;
    void *storage;
    cr_assert_eq(clf_quant_tensors(&l, w, CLF_COMPUTE_INT8, t, &count, &storage), CLF_OK);
    for (int i = 0; i < NSHAPES; i++) {
        const struct clf_st_tensor *q = &t[2 * i], *s = &t[2 * i + 1];
        char name[160];
        snprintf(name, sizeof name, "%.96s_scale", p[i].name);
        cr_assert_str_eq(s->name, name);
        cr_assert_eq(q->dtype, CLF_ST_I8);
        cr_assert_eq(s->dtype, CLF_ST_F32);
        const size_t outs = i == 0 ? p[i].shape[0] : p[i].shape[1];
        cr_assert_eq(s->ndim, 1);
        cr_assert_eq(s->shape[0], outs, "%s: %zu scales, want %zu", name, s->shape[0], outs);
        const int8_t *qv = q->data;
        for (size_t k = 0; k < q->numel; k++)
            cr_assert(qv[k] >= -127 && qv[k] <= 127);
    }
    /* the output with one large value: it maps to 127, its scale 127/3000 */
    const float *s5 = t[11].data;
    const int8_t *q5 = t[10].data;
    cr_assert_eq(s5[4], 127.0f / 3000.0f);
    cr_assert_eq(q5[5 * 33 + 4], 127);
    /* a zero output's scale is 1 */
    cr_assert_eq(((const float *)t[1].data)[2], 1.0f);
    cr_assert_eq(((const float *)t[7].data)[0], 1.0f);
    free(storage);
    free(w);
}

Test(convert, what_a_type_cannot_hold_is_refused_naming_the_tensor)
{
    halves_init();
    struct clf_param p[NSHAPES];
    struct model_layout l;
    layout(&l, p);
    float *w = odd_values(&l, 65520.0f), *back = malloc(l.numel * sizeof *back);
    cr_assert_eq(round_trip(&l, w, CLF_COMPUTE_FLOAT16, back), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(NULL), "tensor l5.weight holds 65520"), "%s", clf_ctx_error(NULL));
    cr_assert(strstr(clf_ctx_error(NULL), "65504"), "%s", clf_ctx_error(NULL));
    cr_assert_eq(round_trip(&l, w, CLF_COMPUTE_BFLOAT16, back), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(round_trip(&l, w, CLF_COMPUTE_INT8, back), CLF_OK, "%s", clf_ctx_error(NULL));
    w[p[3].offset + 3] = NAN;
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(round_trip(&l, w, types[k], back), CLF_ERR_ARG);
        cr_assert(strstr(clf_ctx_error(NULL), "tensor l3.weight holds nan at (0, 3)"), "%s", clf_ctx_error(NULL));
    }
    free(w);
    free(back);
}

/* ------------------------------------------------------------- files */

static char dir[256], fp32[300];

static void files(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(fp32, sizeof fp32, "%s/fp32.safetensors", dir);
    unsigned char *b;
    size_t n = tu_file_bytes(FIXTURE, &b);
    tu_write_bytes(fp32, b, n);
    free(b);
    char bpe[300];
    snprintf(bpe, sizeof bpe, "%s/bpe.model", dir);  /* the tokenizer a quantized copy takes along */
    tu_write_bytes(bpe, (const unsigned char *)"bpe", 3);
}

static void quantized(enum clf_compute_type t, char *out, size_t len)
{
    snprintf(out, len, "%s/q/%s.safetensors", dir, clf_compute_type_str(t));
    char sub[300];
    snprintf(sub, sizeof sub, "%s/q", dir);
    mkdir(sub, 0755);
    cr_assert_eq(clf_ckpt_quantize(fp32, out, t), CLF_OK, "%s", clf_ctx_error(NULL));
}

static long size_of(const char *path)
{
    struct stat s;
    cr_assert_eq(stat(path, &s), 0, "%s", path);
    return (long)s.st_size;
}

TestSuite(file, .init = files, .timeout = TU_TIMEOUT(120));

Test(file, sizes_metadata_and_the_tokenizer_beside_it)
{
    struct clf_ckpt_meta m0, m;
    cr_assert_eq(clf_ckpt_meta_read(fp32, &m0), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(m0.compute_type, CLF_COMPUTE_FLOAT32, "a file without compute_type is float32");
    /* the bytes of the stored matrices and of the rest, from the config */
    struct clf_st_file f;
    cr_assert_eq(clf_st_read(fp32, &f), CLF_OK, "%s", clf_ctx_error(NULL));
    size_t matrices = 0, rest = 0, outputs = 0;
    for (size_t i = 0; i < f.count; i++) {
        const struct clf_st_tensor *x = &f.tensors[i];
        if (x->ndim == 2 && strcmp(x->name, "pos.weight")) {
            matrices += x->numel * 4;
            outputs += !strcmp(x->name, "embed.weight") ? x->shape[0] : x->shape[1];
        } else {
            rest += x->numel * 4;
        }
    }
    clf_st_free(&f);
    for (int k = 0; k < 3; k++) {
        char q[400];
        quantized(types[k], q, sizeof q);
        cr_assert_eq(clf_ckpt_meta_read(q, &m), CLF_OK, "%s", clf_ctx_error(NULL));
        cr_assert_eq(m.compute_type, (int)types[k]);
        char v[64];
        cr_assert_eq(clf_checkpoint_meta(q, "compute_type", v, sizeof v), CLF_OK);
        cr_assert_str_eq(v, clf_compute_type_str(types[k]));
        /* the rest of the metadata is the float32 file's */
        cr_assert_eq(m.step, m0.step);
        cr_assert_eq(m.seed, m0.seed);
        cr_assert_str_eq(m.bpe, m0.bpe);
        /* a quarter (int8, with one float per output) or half of the matrices' bytes, no gaps */
        const size_t want = (types[k] == CLF_COMPUTE_INT8 ? matrices / 4 + outputs * 4 : matrices / 2) + rest;
        unsigned char *b;
        const size_t size = tu_file_bytes(q, &b);
        uint64_t hlen = 0;
        for (int i = 7; i >= 0; i--)
            hlen = hlen << 8 | b[i];
        free(b);
        cr_assert_eq(size, 8 + hlen + want, "%s: %zu bytes: a header of %llu and %zu of tensors, want %zu", q, size,
                     (unsigned long long)hlen, size - 8 - (size_t)hlen, want);
        cr_assert(size * 10 < (size_t)size_of(fp32) * (types[k] == CLF_COMPUTE_INT8 ? 4 : 6));
        char bpe[400];
        snprintf(bpe, sizeof bpe, "%s/q/bpe.model", dir);
        cr_assert_eq(size_of(bpe), 3, "the tokenizer is copied beside the quantized file");
        /* what a derived checkpoint (an average) inherits leaves the type: it writes float32 */
        struct clf_ckpt_meta d;
        clf_ckpt_meta_init(&d, NULL);
        clf_ckpt_meta_carry(&d, &m);
        cr_assert_eq(d.compute_type, CLF_COMPUTE_FLOAT32);
        /* a quantized file is not quantized again */
        char again[400];
        snprintf(again, sizeof again, "%s/again.safetensors", dir);
        cr_assert_eq(clf_ckpt_quantize(q, again, CLF_COMPUTE_INT8), CLF_ERR_ARG);
        cr_assert(strstr(clf_ctx_error(NULL), "already quantized"), "%s", clf_ctx_error(NULL));
    }
    cr_assert_eq(clf_ckpt_quantize(fp32, fp32, CLF_COMPUTE_INT8), CLF_ERR_ARG, "in place would lose the original");
    char x[400];
    snprintf(x, sizeof x, "%s/x.safetensors", dir);
    cr_assert_eq(clf_ckpt_quantize(fp32, x, CLF_COMPUTE_FLOAT32), CLF_ERR_ARG);
    enum clf_compute_type t;
    cr_assert(!clf_compute_type_parse("int4", &t));
    cr_assert(clf_compute_type_parse("bfloat16", &t) && t == CLF_COMPUTE_BFLOAT16);
}

/* Source sentences for the tiny fixture (vocab 64). */
enum { N = 4 };
static const int32_t s0[] = {5, 9, 17, 33, 8}, s1[] = {40}, s2[] = {7, 7, 12, 60, 21, 4, 11}, s3[] = {30, 31};
static const int32_t *src[N] = {s0, s1, s2, s3};
static const size_t src_len[N] = {5, 1, 7, 2};

static void translate(clf_model_t *m, bool greedy, struct clf_hypothesis *h)
{
    struct clf_translate_opts o = clf_translate_opts_default();
    o.greedy = greedy;
    o.max_extra = 8;
    cr_assert_eq(clf_model_translate(m, src, src_len, N, &o, h), CLF_OK, "%s", clf_ctx_error(NULL));
}

Test(file, loads_as_the_float32_model_rounded_and_translates_as_it)
{
    halves_init();
    clf_ctx_t *ctx = tu_ctx();
    clf_model_t *f32 = NULL;
    cr_assert_eq(clf_model_load(ctx, &f32, fp32), CLF_OK, "%s", clf_ctx_error(ctx));
    const size_t n = clf_model_numel(f32);
    float *w = tu_download(ctx, clf_model_weights(f32), n);
    size_t np;
    const struct clf_param *p = clf_model_params(f32, &np);
    for (int k = 0; k < 3; k++) {
        char q[400];
        quantized(types[k], q, sizeof q);
        clf_model_t *mq = NULL, *ref = NULL;
        cr_assert_eq(clf_model_load(ctx, &mq, q), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert_eq(clf_model_load(ctx, &ref, fp32), CLF_OK, "%s", clf_ctx_error(ctx));
        float *want = malloc(n * sizeof *want);
        memcpy(want, w, n * sizeof *w);
        for (size_t i = 0; i < np; i++)
            ref_round(&p[i], types[k], want + p[i].offset);
        cr_assert_eq(clf_tensor_upload(ctx, clf_model_weights(ref), want), CLF_OK);
        float *got = tu_download(ctx, clf_model_weights(mq), n);
        size_t changed = 0;
        for (size_t i = 0; i < np; i++)
            for (size_t j = 0; j < p[i].shape[0] * (p[i].ndim == 2 ? p[i].shape[1] : 1); j++) {
                const size_t at = p[i].offset + j;
                cr_assert(!memcmp(&got[at], &want[at], 4), "%s: %s[%zu] loads as %a, the reference rounds %a to %a",
                          clf_compute_type_str(types[k]), p[i].name, j, got[at], w[at], want[at]);
                changed += got[at] != w[at];
            }
        cr_assert(changed > 0, "%s: the rounding changed no weight", clf_compute_type_str(types[k]));
        for (int g = 0; g < 2; g++) {
            struct clf_hypothesis a[N * 4], b[N * 4];
            translate(mq, g, a);
            translate(ref, g, b);
            for (int s = 0; s < N; s++) {
                cr_assert_eq(a[s].n, b[s].n, "%s %s: sentence %d", clf_compute_type_str(types[k]),
                             g ? "greedy" : "beam", s);
                cr_assert(!memcmp(a[s].ids, b[s].ids, a[s].n * sizeof *a[s].ids));
                cr_assert(!memcmp(&a[s].score, &b[s].score, sizeof a[s].score), "%s: score %a against %a",
                          clf_compute_type_str(types[k]), a[s].score, b[s].score);
            }
            clf_hypotheses_free(a, N);
            clf_hypotheses_free(b, N);
        }
        /* saved again without a compute type (what `average` does): float32, the loaded weights */
        char back[400];
        snprintf(back, sizeof back, "%s/back.safetensors", dir);
        cr_assert_eq(clf_model_save(mq, back, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
        char v[64];
        cr_assert_neq(clf_checkpoint_meta(back, "compute_type", v, sizeof v), CLF_OK, "float32: no compute_type");
        free(got);
        free(want);
        clf_model_free(mq);
        clf_model_free(ref);
    }
    free(w);
    clf_model_free(f32);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------------- corrupt files */

/* q's tensors and metadata written to out after edit(tensors, &count). */
static void rewrite(const char *q, const char *out, void (*edit)(struct clf_st_tensor *, size_t *))
{
    struct clf_st_file f;
    cr_assert_eq(clf_st_read_as(q, &f, CLF_ST_ANY), CLF_OK, "%s", clf_ctx_error(NULL));
    edit(f.tensors, &f.count);
    cr_assert_eq(clf_st_write(out, f.tensors, f.count, f.meta, f.meta_count), CLF_OK, "%s", clf_ctx_error(NULL));
    clf_st_free(&f);
}

static struct clf_st_tensor *named(struct clf_st_tensor *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name))
            return &t[i];
    cr_assert_fail("no tensor %s", name);
    return NULL;
}

static void drop_scale(struct clf_st_tensor *t, size_t *n)
{
    struct clf_st_tensor *s = named(t, *n, "decoder.layers.1.ffn.linear2.weight_scale");
    *s = t[--*n];
}

static void short_scale(struct clf_st_tensor *t, size_t *n)
{
    struct clf_st_tensor *s = named(t, *n, "embed.weight_scale");
    s->shape[0]--, s->numel--;
}

static void bias_as_int8(struct clf_st_tensor *t, size_t *n)
{
    struct clf_st_tensor *b = named(t, *n, "encoder.layers.0.ffn.linear1.bias"), *w =
        named(t, *n, "encoder.layers.0.ffn.linear1.weight");
    b->dtype = CLF_ST_I8;
    b->data = w->data;  /* as many bytes as it holds values, from another I8 tensor */
}

static void expect_refused(clf_ctx_t *ctx, const char *path, const char *what)
{
    clf_model_t *m = NULL;
    cr_assert_eq(clf_model_load(ctx, &m, path), CLF_ERR_FORMAT, "%s loads", path);
    cr_assert(strstr(clf_ctx_error(ctx), what), "%s: the message does not say '%s': %s", path, what,
              clf_ctx_error(ctx));
    cr_assert(strstr(clf_ctx_error(ctx), path), "%s: the message does not name the file: %s", path,
              clf_ctx_error(ctx));
}

Test(file, a_corrupt_quantized_file_is_refused_naming_the_tensor)
{
    clf_ctx_t *ctx = tu_ctx();
    char q[400], bad[400];
    quantized(CLF_COMPUTE_INT8, q, sizeof q);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    rewrite(q, bad, drop_scale);
    expect_refused(ctx, bad, "tensor decoder.layers.1.ffn.linear2.weight_scale is missing (the int8 scales of "
                             "decoder.layers.1.ffn.linear2.weight)");
    rewrite(q, bad, short_scale);
    expect_refused(ctx, bad, "tensor embed.weight_scale is F32 of shape (63); the int8 scales of embed.weight are "
                             "F32 of shape (64)");
    rewrite(q, bad, bias_as_int8);
    expect_refused(ctx, bad, "tensor encoder.layers.0.ffn.linear1.bias has dtype I8; a checkpoint of compute_type "
                             "int8 stores it as F32");
    /* the compute type's key gone: an int8 matrix in a float32 file */
    struct clf_st_file f;
    cr_assert_eq(clf_st_read_as(q, &f, CLF_ST_ANY), CLF_OK);
    size_t keep = 0;
    for (size_t i = 0; i < f.meta_count; i++)
        if (strcmp(f.meta[i].key, "compute_type"))
            f.meta[keep++] = f.meta[i];
    cr_assert_eq(clf_st_write(bad, f.tensors, f.count, f.meta, keep), CLF_OK);
    clf_st_free(&f);
    expect_refused(ctx, bad, "tensor embed.weight has dtype I8; a checkpoint of compute_type float32 stores it as F32");
    /* an unknown compute type */
    cr_assert_eq(clf_st_read_as(q, &f, CLF_ST_ANY), CLF_OK);
    for (size_t i = 0; i < f.meta_count; i++)
        if (!strcmp(f.meta[i].key, "compute_type"))
            snprintf(f.meta[i].value, sizeof f.meta[i].value, "int4");
    cr_assert_eq(clf_st_write(bad, f.tensors, f.count, f.meta, f.meta_count), CLF_OK);
    clf_st_free(&f);
    expect_refused(ctx, bad, "metadata compute_type is 'int4', not float32, int8, bfloat16 or float16");
    /* a dtype this build does not read, named with those it does */
    unsigned char *b;
    const size_t n = tu_file_bytes(fp32, &b);
    unsigned char *at = memmem(b, n, "\"dtype\":\"F32\"", 13);
    cr_assert(at);
    at[10] = '6', at[11] = '4';  /* F32 -> F64 */
    tu_write_bytes(bad, b, n);
    free(b);
    expect_refused(ctx, bad, "tensor embed.weight has dtype F64; clformer reads F32, I8, BF16 or F16 only");
    /* the F32-only reader (import's) refuses the reduced types, naming the tensor */
    cr_assert_eq(clf_st_read(q, &f), CLF_ERR_FORMAT);
    cr_assert(strstr(clf_ctx_error(NULL), "has dtype I8; clformer reads F32 only"), "%s", clf_ctx_error(NULL));
    clf_ctx_free(ctx);
}

Test(file, training_from_a_quantized_checkpoint_is_refused)
{
    clf_ctx_t *ctx = tu_ctx();
    char q[400], ck[400];
    quantized(CLF_COMPUTE_BFLOAT16, q, sizeof q);
    struct clf_train_opts o = {.init = q, .dropout = -1, .label_smoothing = -1, .max_tokens = 64};
    clf_trainer_t *t = NULL;
    cr_assert_eq(clf_trainer_init(&t, ctx, &o), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "fine-tune the float32 checkpoint"), "%s", clf_ctx_error(ctx));
    /* a run's checkpoint replaced by its quantized copy */
    snprintf(ck, sizeof ck, "%s/q/ckpt-5.safetensors", dir);
    cr_assert_eq(rename(q, ck), 0);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/q", dir);
    cr_assert_eq(clf_trainer_resume(&t, ctx, sub, 5, &o), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "resume from the float32 checkpoint"), "%s", clf_ctx_error(ctx));
    clf_ctx_free(ctx);
}

/* ------------------------------------------------------- the command */

#define CLI CLF_BINARY_DIR "/clformer"
#define MARIAN CLF_SOURCE_DIR "/tests/fixtures/marian/swish_shared"
#define DATA CLF_SOURCE_DIR "/data/multi30k"

static void run(const char *cmd, int want, const char *err)
{
    const int rc = tu_run(cmd, err);
    cr_assert_eq(rc, want, "'%s' exited %d, want %d:\n%s", cmd, rc, want, tu_slurp(err));
}

/* The imported Marian fixture quantized by `clformer quantize` translates
 * through `clformer translate --compute-type float32` (its default runs the
 * stored type), with the tokenizer copied beside it, exactly as the float32
 * import whose weights the references rounded. */
Test(command, quantize_then_translate_equals_the_rounded_float32_model, .init = files,
     .timeout = TU_TIMEOUT(300))
{
    halves_init();
    char imp[300], ckpt[400], err[400], cmd[4096], src[400];
    snprintf(imp, sizeof imp, "%s/imp", dir);
    snprintf(ckpt, sizeof ckpt, "%s/model.safetensors", imp);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    snprintf(src, sizeof src, "%s/src.en", dir);
    cr_assert_eq(clf_marian_import(MARIAN, imp), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(cmd, sizeof cmd, "zcat %s/test_2016_flickr.en.gz | head -n 4 > %s", DATA, src);
    run(cmd, 0, err);
    struct clf_ckpt_meta meta;
    cr_assert_eq(clf_ckpt_meta_read(ckpt, &meta), CLF_OK, "%s", clf_ctx_error(NULL));
    clf_ctx_t *ctx = tu_ctx();
    for (int k = 0; k < 3; k++) {
        const char *t = clf_compute_type_str(types[k]);
        char q[400], ref[400];
        snprintf(q, sizeof q, "%s/%s/model.safetensors", dir, t);
        snprintf(cmd, sizeof cmd, "mkdir -p %s/%s && %s quantize %s -o %s --to %s", dir, t, CLI, ckpt, q, t);
        run(cmd, 0, err);
        /* the reference: the import rounded here, saved beside its tokenizer */
        clf_model_t *m = NULL;
        cr_assert_eq(clf_model_load(ctx, &m, ckpt), CLF_OK, "%s", clf_ctx_error(ctx));
        const size_t n = clf_model_numel(m);
        size_t np;
        const struct clf_param *p = clf_model_params(m, &np);
        float *w = tu_download(ctx, clf_model_weights(m), n);
        for (size_t i = 0; i < np; i++)
            ref_round(&p[i], types[k], w + p[i].offset);
        cr_assert_eq(clf_tensor_upload(ctx, clf_model_weights(m), w), CLF_OK);
        snprintf(ref, sizeof ref, "%s/ref-%s.safetensors", imp, t);
        cr_assert_eq(clf_model_save(m, ref, &meta), CLF_OK, "%s", clf_ctx_error(ctx));
        free(w);
        clf_model_free(m);
        for (int beam = 0; beam < 2; beam++) {
            snprintf(cmd, sizeof cmd,
                     "%s translate --model %s --compute-type float32 --quiet %s < %s > %s/a.txt && %s translate "
                     "--model %s --quiet %s < %s "
                     "> %s/b.txt && test -s %s/a.txt && cmp %s/a.txt %s/b.txt",
                     CLI, q, beam ? "" : "--greedy", src, dir, CLI, ref, beam ? "" : "--greedy", src, dir, dir, dir,
                     dir);
            run(cmd, 0, err);
        }
    }
    clf_ctx_free(ctx);
    /* refusals name the flag's value and the choices, or the file */
    snprintf(cmd, sizeof cmd, "%s quantize %s -o %s/x.safetensors --to int4", CLI, ckpt, dir);
    run(cmd, 2, err);
    cr_assert(strstr(tu_slurp(err), "--to int4: choose int8, bfloat16 or float16"), "%s", tu_slurp(err));
    snprintf(cmd, sizeof cmd, "%s quantize %s/int8/model.safetensors -o %s/x.safetensors --to float16", CLI, dir,
             dir);
    run(cmd, 1, err);
    cr_assert(strstr(tu_slurp(err), "is already quantized (compute_type int8)"), "%s", tu_slurp(err));
}
