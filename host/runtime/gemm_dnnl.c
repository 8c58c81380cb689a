/* gemm_dnnl.c: int8 and bfloat16 GEMMs on the host backend, through
 * oneDNN's matmul, against weights packed once into the layout oneDNN
 * prefers (format_tag any) and kept beside the float32 ones.
 *
 * A caller (the model) names one buffer as its weights and a type
 * (clf_gemm_weights_set, gemm.c). From then on every clf_gemm / clf_gemm_bias on
 * the host backend whose B lies in that buffer (alpha 1, beta 0: the
 * linear layers and the output projection) runs here: B's view (k×n, or
 * n×k when transposed; its columns are the outputs) is packed at its first
 * use and found again by its key (clf_view_key: offset, ld, trans, k, n)
 * after. Other GEMMs (attention's, training's) stay float32 in
 * gemm_host.c.
 *
 *   int8: weights s8 with one symmetric scale per output, sw_j =
 *   Q/max_k|W(k,j)| (Q = 127, or 63 where oneDNN's products would
 *   saturate: int8_path below); activations quantized here per row at every call,
 *   sa_i = 127/max_k|A(i,k)| (oneDNN 2.6 has run-time scales per output
 *   column at most, none per row of A), round to nearest, s8. oneDNN
 *   computes the s8·s8 → s32 product (VNNI / AMX where the CPU has them);
 *   the epilogue here is C(i,j) = acc(i,j) / (sa_i·sw_j) + bias_j, the
 *   dequantization and the bias add in one pass over C.
 *   bfloat16: weights bf16, activations rounded to bf16 here (to nearest
 *   even), f32 accumulation, the bias added by oneDNN in f32.
 *   float32 (CLF_GEMM_W_F32P, what float32 decoding on a CPU runs): the
 *   same weights packed, A and C the buffers' own memory, the bias added
 *   by oneDNN; the arithmetic of float32 in oneDNN's order, 1.5-1.8 times
 *   OpenBLAS's speed on decoding's shapes (M = 32..128, K = 256) on an
 *   AVX-512 EPYC, where OpenBLAS spends most of the call packing. Where
 *   oneDNN's ISA stops below avx512_core (no brgemm matmul there: gemm:jit
 *   repacks the weights at every call) gemm_f32.c's AVX2 kernel runs it
 *   instead, on its own packing (f32_own below).
 *
 * The layout is chosen once per view (for M = PACK_M) and each M then gets
 * its own primitive on it (below, PACK_M's comment says why). Buffers are
 * host memory here: the addresses host_ptrs.c records, after one clFinish,
 * as gemm_host.c does; a device without recorded addresses is refused. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_error.h"
#include "ctx.h"
#include "gemm_avx2.h"
#include "gemm_f32.h"
#include "gemm_i8.h"
#include "gemm_internal.h"
#include "gemm_paths.h"
#include "host_ptrs.h"
#include "profile.h"
#include "settings.h"

/* The per-row passes (quantizing A, the epilogue) over oneDNN's OpenMP
 * threads where the build has OpenMP and the pass covers `par` (set
 * before each: at least 2^16 elements; smaller ones cost less than waking
 * the threads): each element is computed alone, so the result does not
 * depend on the thread count. */
enum { PAR_ELEMENTS = 1 << 16 };
#ifdef _OPENMP
#include <omp.h>
#define ROWS_PARALLEL _Pragma("omp parallel for schedule(static) if (par)")
#define SIMD _Pragma("omp simd")
#define SIMD_MAX_M _Pragma("omp simd reduction(max : m)")
#else
#define ROWS_PARALLEL (void)par;
#define SIMD
#define SIMD_MAX_M
#endif

#ifndef CLF_DNNL

bool clf_gemm_dnnl_built(void) { return false; }
struct clf_cpu_isa clf_cpu_isa_effective(void) { return (struct clf_cpu_isa){0}; }
int clf_gemm_int8_weight_max(void) { return 127; }
const char *clf_gemm_int8_kernel(void) { return "none (built without oneDNN)"; }
const char *clf_gemm_f32_kernel(void) { return "none (built without oneDNN)"; }
static clf_status isa_supports(enum clf_gemm_weights t, char *why, size_t n)
{
    snprintf(why, n, "this clformer was built without oneDNN (libdnnl-dev), which runs %s GEMMs on CPUs",
             clf_gemm_weights_str(t));
    return CLF_ERR_UNSUPPORTED;
}
clf_status clf_gemm_dnnl_init(clf_ctx_t *ctx, enum clf_gemm_weights t)
{
    return clf_error_set(ctx, CLF_ERR_UNSUPPORTED, "%s compute: built without oneDNN (install libdnnl-dev "
                         "and rebuild)", clf_gemm_weights_str(t));
}
clf_status clf_gemm_dnnl(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                         const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c, bool relu)
{
    (void)m, (void)n, (void)k, (void)a, (void)b, (void)bias, (void)c, (void)relu;
    return clf_error_set(ctx, CLF_ERR_UNSUPPORTED, "packed GEMM: built without oneDNN");
}
void clf_gemm_dnnl_free(clf_ctx_t *ctx) { (void)ctx; }

#else

#include <oneapi/dnnl/dnnl.h>

/* A matmul for one M (and C's row length for f32 outputs, A's for
 * float32's own A). */
struct prim {
    size_t m, ldc, lda;
    bool relu;
    dnnl_primitive_t p;
};

/* One packed weight view and its matmuls. */
struct packed {
    struct clf_view_key key; /* first: clf_view_find */
    dnnl_memory_desc_t wmd; /* the layout oneDNN chose (for M = PACK_M) */
    dnnl_memory_t w;        /* the packed weights, in wmd, oneDNN's memory */
    float *inv_sw;          /* int8: (n) 1/sw_j */
    int8_t *own;            /* int8 where oneDNN's sums saturate: gemm_i8.c's packing (w unused) */
    float *own_f32;         /* float32 where oneDNN has no brgemm: gemm_f32.c's packing (w unused) */
    struct prim *prims;
    size_t nprims, cap;
};

/* The M the packed layout is chosen for: oneDNN 2.6's brgemm matmul (AMX,
 * VNNI) takes no run-time M (with DNNL_RUNTIME_DIM_VAL it falls back to
 * gemm:jit on plain weights), so each M gets its own primitive, made on
 * the packed layout; oneDNN's primitive cache shares them across layers
 * of one shape. */
enum { PACK_M = 64 };

struct clf_dnnl {
    enum clf_gemm_weights type;
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    struct packed *p;
    size_t np, cap;
    void *qa;               /* (m, k) A in s8 or bf16 */
    size_t qa_bytes;
    int32_t *acc;           /* int8: (m, n) s32 products */
    size_t acc_bytes;
    float *inv_sa;          /* int8: (m) 1/sa_i */
    size_t inv_sa_bytes;
    float *zeros;           /* bfloat16: (n) the bias of a GEMM without one */
    size_t zeros_bytes;
};

bool clf_gemm_dnnl_built(void) { return true; }

struct clf_cpu_isa clf_cpu_isa_effective(void)
{
    const unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
#define HAS(x) ((isa & (unsigned)(x)) == (unsigned)(x))
    return (struct clf_cpu_isa){.avx2 = HAS(dnnl_cpu_isa_avx2),
                                .avx512 = HAS(dnnl_cpu_isa_avx512_core),
                                .vnni = HAS(dnnl_cpu_isa_avx512_core_vnni) || HAS(dnnl_cpu_isa_avx2_vnni),
                                .bf16 = HAS(dnnl_cpu_isa_avx512_core_bf16),
                                .amx = HAS(dnnl_cpu_isa_avx512_core_amx)};
#undef HAS
}

/* Whether oneDNN's s8·s8 matmul gives exact sums on operands at full
 * scale, ±127 on both sides. It shifts the source to u8 (+128) and, on
 * CPUs without VNNI (AVX2, AVX-512 without VNNI, or either under
 * ONEDNN_MAX_CPU_ISA), sums each pair of u8·s8 products in 16 bits
 * (vpmaddubsw), which saturates at 32767: 255·127·2 = 64770 does, 255·63·2
 * = 32130 does not. VNNI (vpdpbusd) and AMX (tdpbssd) sum in 32 bits. The
 * probe asks the library itself rather than a table of ISAs: rows of all
 * 127s (the shifted 255s) and of all -127s (the shifted 1s) against
 * columns of 127s and of 127s and -127s alternating, on packed weights as
 * pack() makes them, for `rows` rows of a (PROBE_K) and w (PROBE_K×PROBE_N). */
enum { PROBE_K = 256, PROBE_N = 32 };

static bool probe_rows(dnnl_engine_t eng, dnnl_stream_t stream, dnnl_dim_t rows, int8_t *a, int8_t *w, int32_t *c)
{
    bool exact = false;
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    dnnl_primitive_t mm = NULL, reorder = NULL;
    dnnl_memory_t ma = NULL, mw = NULL, mwp = NULL, mc = NULL;
    dnnl_memory_desc_t src_md, w_md, wplain_md, dst_md;
    dnnl_dims_t sd = {rows, PROBE_K}, ss = {PROBE_K, 1}, wd = {PROBE_K, PROBE_N}, ws = {PROBE_N, 1},
                dd = {rows, PROBE_N}, ds = {PROBE_N, 1};
    dnnl_matmul_desc_t md;
    if (dnnl_memory_desc_init_by_strides(&src_md, 2, sd, dnnl_s8, ss) ||
        dnnl_memory_desc_init_by_tag(&w_md, 2, wd, dnnl_s8, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_strides(&wplain_md, 2, wd, dnnl_s8, ws) ||
        dnnl_memory_desc_init_by_strides(&dst_md, 2, dd, dnnl_s32, ds) ||
        dnnl_matmul_desc_init(&md, &src_md, &w_md, NULL, &dst_md) ||
        dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL))
        goto done;
    const dnnl_memory_desc_t *packed = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (dnnl_memory_create(&mw, &wplain_md, eng, w) || dnnl_memory_create(&mwp, packed, eng, DNNL_MEMORY_ALLOCATE) ||
        dnnl_reorder_primitive_desc_create(&rpd, &wplain_md, eng, packed, eng, NULL) ||
        dnnl_primitive_create(&reorder, rpd))
        goto done;
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, mw}, {DNNL_ARG_TO, mwp}};
    if (dnnl_primitive_execute(reorder, stream, 2, rargs) || dnnl_primitive_create(&mm, pd) ||
        dnnl_memory_create(&ma, &src_md, eng, a) || dnnl_memory_create(&mc, &dst_md, eng, c))
        goto done;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mwp}, {DNNL_ARG_DST, mc}};
    if (dnnl_primitive_execute(mm, stream, 3, args) || dnnl_stream_wait(stream))
        goto done;
    exact = true;
    for (size_t i = 0; i < (size_t)rows; i++)
        for (size_t j = 0; j < PROBE_N; j++)
            exact &= c[i * PROBE_N + j] == (i % 2 ? -1 : 1) * (j % 2 ? 0 : 127 * 127 * PROBE_K);
done:
    if (mm)
        dnnl_primitive_destroy(mm);
    if (reorder)
        dnnl_primitive_destroy(reorder);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (ma)
        dnnl_memory_destroy(ma);
    if (mw)
        dnnl_memory_destroy(mw);
    if (mwp)
        dnnl_memory_destroy(mwp);
    if (mc)
        dnnl_memory_destroy(mc);
    return exact;
}

/* Which int8 path this process runs, decided once (int8_path_once):
 * oneDNN where its sums are exact; else gemm_i8.c's kernel (8 bits, exact)
 * where the CPU runs it; else oneDNN on 7-bit weights. */
static enum { INT8_ONEDNN, INT8_OWN, INT8_ONEDNN_7BIT } int8_path;
static pthread_once_t int8_path_decided = PTHREAD_ONCE_INIT;

static void int8_path_once(void)
{
    dnnl_engine_t eng = NULL;
    dnnl_stream_t stream = NULL;
    int8_t *a = malloc((size_t)PACK_M * PROBE_K), *w = malloc((size_t)PROBE_K * PROBE_N);
    int32_t *c = malloc((size_t)PACK_M * PROBE_N * sizeof *c);
    bool exact = false;
    if (a && w && c && dnnl_engine_create(&eng, dnnl_cpu, 0) == dnnl_success &&
        dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) == dnnl_success) {
        for (size_t i = 0; i < (size_t)PACK_M * PROBE_K; i++)
            a[i] = (i / PROBE_K) % 2 ? -127 : 127;
        for (size_t kk = 0; kk < PROBE_K; kk++)
            for (size_t j = 0; j < PROBE_N; j++)
                w[kk * PROBE_N + j] = j % 2 && kk % 2 ? -127 : 127;
        /* decoding's shapes: PACK_M rows, and 2 (one row runs as two) */
        exact = probe_rows(eng, stream, PACK_M, a, w, c) && probe_rows(eng, stream, 2, a, w, c);
    }
    int8_path = exact ? INT8_ONEDNN : clf_avx2_kernels_run() ? INT8_OWN : INT8_ONEDNN_7BIT;
    if (stream)
        dnnl_stream_destroy(stream);
    if (eng)
        dnnl_engine_destroy(eng);
    free(a), free(w), free(c);
}

int clf_gemm_int8_weight_max(void)
{
    pthread_once(&int8_path_decided, int8_path_once);
    return int8_path == INT8_ONEDNN_7BIT ? 63 : 127;
}

const char *clf_gemm_int8_kernel(void)
{
    pthread_once(&int8_path_decided, int8_path_once);
    return int8_path == INT8_OWN    ? "clformer's AVX2 int8 kernel (oneDNN's int8 sums saturate on this CPU)"
           : int8_path == INT8_ONEDNN ? "oneDNN's int8 matmul"
                                      : "oneDNN's int8 matmul on 7-bit weights (its sums saturate on this CPU)";
}

/* Whether packed float32 runs on gemm_f32.c's kernel: where oneDNN's
 * effective ISA has AVX2 but not avx512_core (oneDNN 2.6's brgemm matmul
 * starts there; below it gemm:jit repacks the weights on every call), the
 * CPU has FMA, and CLF_GEMM_F32_OWN is not off. Read at each packing, so
 * a context's weights keep the kernel they were packed for. */
static bool f32_own(void)
{
    const char *s = clf_setting_get("CLF_GEMM_F32_OWN");
    if (s && (!strcmp(s, "off") || !strcmp(s, "0") || !strcmp(s, "no")))
        return false;
    const struct clf_cpu_isa isa = clf_cpu_isa_effective();
    return isa.avx2 && !isa.avx512 && clf_avx2_kernels_run();
}

const char *clf_gemm_f32_kernel(void)
{
    return f32_own() ? "clformer's AVX2 float32 kernel (oneDNN has no brgemm matmul below AVX-512 here)"
                     : "oneDNN's float32 matmul";
}

static clf_status isa_supports(enum clf_gemm_weights t, char *why, size_t n)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    /* oneDNN's reference kernels would run either, a hundred times slower
     * than float32: refuse instead, naming what the CPU lacks */
    if (t == CLF_GEMM_W_BF16 && (isa & dnnl_cpu_isa_avx512_core_bf16) != dnnl_cpu_isa_avx512_core_bf16) {
        snprintf(why, n, "this CPU has no AVX512-BF16 (oneDNN's effective ISA is 0x%x): bfloat16 would run in "
                 "oneDNN's reference code", (unsigned)isa);
        return CLF_ERR_UNSUPPORTED;
    }
    if ((t == CLF_GEMM_W_INT8 || t == CLF_GEMM_W_F32P) && (isa & dnnl_cpu_isa_avx2) != dnnl_cpu_isa_avx2) {
        snprintf(why, n, "this CPU has no AVX2 (oneDNN's effective ISA is 0x%x): %s would run in oneDNN's "
                 "slower code", (unsigned)isa, t == CLF_GEMM_W_INT8 ? "int8" : "packed float32");
        return CLF_ERR_UNSUPPORTED;
    }
    return CLF_OK;
}

static clf_status dnnl_err(clf_ctx_t *ctx, dnnl_status_t s, const char *what)
{
    return clf_error_set(ctx, s == dnnl_out_of_memory ? CLF_ERR_MEMORY : CLF_ERR_BLAS,
                         "oneDNN: %s failed (dnnl_status %d)", what, (int)s);
}
#define DN(call, what)                                                                                        \
    do {                                                                                                      \
        dnnl_status_t s_ = (call);                                                                            \
        if (s_ != dnnl_success) {                                                                             \
            st = dnnl_err(ctx, s_, what);                                                                     \
            goto fail;                                                                                        \
        }                                                                                                     \
    } while (0)

void clf_gemm_dnnl_free(clf_ctx_t *ctx)
{
    struct clf_dnnl *d = ctx->dnnl;
    if (!d)
        return;
    for (size_t i = 0; i < d->np; i++) {
        for (size_t j = 0; j < d->p[i].nprims; j++)
            dnnl_primitive_destroy(d->p[i].prims[j].p);
        free(d->p[i].prims);
        if (d->p[i].w)
            dnnl_memory_destroy(d->p[i].w);
        free(d->p[i].inv_sw);
        free(d->p[i].own);
        free(d->p[i].own_f32);
    }
    free(d->p);
    free(d->qa);
    free(d->acc);
    free(d->inv_sa);
    free(d->zeros);
    if (d->stream)
        dnnl_stream_destroy(d->stream);
    if (d->eng)
        dnnl_engine_destroy(d->eng);
    free(d);
    ctx->dnnl = NULL;
}

clf_status clf_gemm_dnnl_init(clf_ctx_t *ctx, enum clf_gemm_weights t)
{
    clf_status st = CLF_OK;
    if (ctx->gemm != CLF_GEMM_HOST || !ctx->host_ptrs)
        return clf_error_set(ctx, CLF_ERR_UNSUPPORTED,
                             "%s compute: GEMMs on device [%d] '%s' do not run on the host's memory at recorded "
                             "addresses (%s): unset CLF_GEMM and CLF_GEMM_MAP",
                             clf_gemm_weights_str(t), ctx->dev.index, ctx->dev.device_name,
                             ctx->gemm != CLF_GEMM_HOST ? "the clblast backend" : "maps kept");
    struct clf_dnnl *d = calloc(1, sizeof *d);
    if (!d)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "%s compute: out of host memory", clf_gemm_weights_str(t));
    ctx->dnnl = d;
    d->type = t;
    DN(dnnl_engine_create(&d->eng, dnnl_cpu, 0), "dnnl_engine_create");
    DN(dnnl_stream_create(&d->stream, d->eng, dnnl_stream_default_flags), "dnnl_stream_create");
    return CLF_OK;
fail:
    clf_gemm_dnnl_free(ctx);
    return st;
}

static uint16_t bf16_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);  /* to nearest, ties to even (no NaNs here) */
    return (uint16_t)(u >> 16);
}

static clf_status grow(clf_ctx_t *ctx, void **p, size_t *have, size_t bytes)
{
    if (bytes <= *have)
        return CLF_OK;
    void *q = realloc(*p, bytes);
    if (!q)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "packed GEMM: out of host memory (%zu bytes)", bytes);
    *p = q;
    *have = bytes;
    return CLF_OK;
}

/* The per-row passes below vectorise: no calls into libm (fmaxf and
 * lrintf were a third of an int8 decoding's time, called per element),
 * and on x86-64 in AVX-512 or AVX2 where the CPU has them (oneDNN runs
 * only where it has AVX2 at least). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

/* max_k |x_k| (NaNs ignored, as fmaxf does) */
CLONES static float row_amax(const float *x, size_t k)
{
    float m = 0;
    SIMD_MAX_M
    for (size_t i = 0; i < k; i++) {
        const float v = fabsf(x[i]);
        m = v > m ? v : m;
    }
    return m;
}

/* q_k = x_k·s rounded to the nearest integer, ties to even: adding and
 * taking away 1.5·2^23 rounds as lrintf does in the default rounding mode,
 * for |x_k·s| ≤ 127 here. */
CLONES static void row_quantize(int8_t *q, const float *x, float s, size_t k)
{
    const float magic = 12582912.0f;
    SIMD
    for (size_t i = 0; i < k; i++)
        q[i] = (int8_t)(int32_t)((x[i] * s + magic) - magic);
}

/* C(i, j) = acc(i, j)·(1/sa_i · 1/sw_j) + bias_j for one row i */
CLONES static void row_dequantize(float *c, const int32_t *acc, float inv_sa, const float *inv_sw, const float *bias,
                           size_t n, bool relu)
{
    if (relu) {  /* bias + ReLU: the FFN's first GEMM (which always has its bias); a compare, not fmaxf
                  * (a call into libm per element that does not vectorise) */
        SIMD
        for (size_t j = 0; j < n; j++) {
            const float v = (float)acc[j] * (inv_sa * inv_sw[j]) + bias[j];
            c[j] = v > 0.0f ? v : 0.0f;
        }
    } else if (bias) {
        SIMD
        for (size_t j = 0; j < n; j++)
            c[j] = (float)acc[j] * (inv_sa * inv_sw[j]) + bias[j];
    } else {
        SIMD
        for (size_t j = 0; j < n; j++)
            c[j] = (float)acc[j] * (inv_sa * inv_sw[j]) + 0.0f;
    }
}

CLONES static void row_bf16(uint16_t *h, const float *x, size_t k)
{
    SIMD
    for (size_t i = 0; i < k; i++)
        h[i] = bf16_of(x[i]);
}

/* A's m rows (lda apart) quantized at 127/max|row| into rows of q, qld
 * apart (zeros from k to qld), and 1/scale of each into inv_sa. */
static void rows_quantize(int8_t *q, size_t qld, float *inv_sa, const float *A, size_t lda, size_t m, size_t k)
{
    int par = m * k >= PAR_ELEMENTS;
    ROWS_PARALLEL
    for (size_t i = 0; i < m; i++) {
        const float *row = A + i * lda;
        const float amax = row_amax(row, k), s = amax > 0 ? 127.0f / amax : 1.0f;
        inv_sa[i] = 1.0f / s;
        row_quantize(q + i * qld, row, s, k);  /* |row·s| ≤ 127 */
        memset(q + i * qld + k, 0, qld - k);
    }
}

/* W(kk, j) of view b (op(B) is k×n). */
static inline float w_at(const float *base, const struct clf_mat *b, size_t kk, size_t j)
{
    return b->trans ? base[j * b->ld + kk] : base[kk * b->ld + j];
}

/* Packs view b (k×n) of the weights: quantized or rounded into a plain
 * (k, n) array, then reordered into the matmul's chosen layout. */
static clf_status pack(clf_ctx_t *ctx, const struct clf_mat *b, size_t k, size_t n, struct packed *out)
{
    struct clf_dnnl *d = ctx->dnnl;
    clf_status st = CLF_OK;
    char *base;
    void *plain = NULL;
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t user = NULL;
    *out = (struct packed){.key = clf_view_key_of(b, k, n)};
    if ((st = clf_host_ptr(ctx, b->buf, &base)))
        return st;
    CLF_CL_TRY(ctx, clFinish(ctx->queue));  /* the weights' upload */
    const float *w = (const float *)base + b->offset;
    const bool i8 = d->type == CLF_GEMM_W_INT8, f32 = d->type == CLF_GEMM_W_F32P;
    const dnnl_data_type_t wt = i8 ? dnnl_s8 : f32 ? dnnl_f32 : dnnl_bf16;
    plain = malloc(k * n * (i8 ? 1 : f32 ? 4 : 2));
    if (!plain || (i8 && !(out->inv_sw = malloc(n * sizeof(float))))) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "packed GEMM: out of host memory packing %zu×%zu", k, n);
        goto fail;
    }
    if (i8) {
        int8_t *q = plain;
        const float qmax = (float)clf_gemm_int8_weight_max();  /* decides the int8 path, once */
        for (size_t j = 0; j < n; j++) {
            float amax = 0;
            for (size_t kk = 0; kk < k; kk++)
                amax = fmaxf(amax, fabsf(w_at(w, b, kk, j)));
            const float s = amax > 0 ? qmax / amax : 1.0f;
            out->inv_sw[j] = 1.0f / s;
            for (size_t kk = 0; kk < k; kk++)
                q[kk * n + j] = (int8_t)lrintf(fminf(qmax, fmaxf(-qmax, w_at(w, b, kk, j) * s)));
        }
    } else if (f32) {
        float *x = plain;
        for (size_t kk = 0; kk < k; kk++)
            for (size_t j = 0; j < n; j++)
                x[kk * n + j] = w_at(w, b, kk, j);
    } else {
        uint16_t *h = plain;
        for (size_t kk = 0; kk < k; kk++)
            for (size_t j = 0; j < n; j++)
                h[kk * n + j] = bf16_of(w_at(w, b, kk, j));
    }
    if (i8 && int8_path == INT8_OWN) {  /* gemm_i8.c's layout, no oneDNN one: to the cleanup */
        if (!(out->own = malloc(clf_i8_packed_bytes(k, n))))
            st = clf_error_set(ctx, CLF_ERR_MEMORY, "packed GEMM: out of host memory packing %zu×%zu", k, n);
        else
            clf_i8_pack(out->own, plain, k, n);
        goto fail;
    }
    if (f32 && f32_own()) {  /* gemm_f32.c's layout, no oneDNN one: to the cleanup */
        if (!(out->own_f32 = malloc(clf_f32_packed_floats(k, n) * sizeof(float))))
            st = clf_error_set(ctx, CLF_ERR_MEMORY, "packed GEMM: out of host memory packing %zu×%zu", k, n);
        else
            clf_f32_pack(out->own_f32, plain, k, n);
        goto fail;
    }
    const dnnl_dim_t K = (dnnl_dim_t)k, N = (dnnl_dim_t)n, M = PACK_M;
    dnnl_memory_desc_t src_md, w_md, dst_md, bias_md, user_md;
    dnnl_dims_t sd = {M, K}, ss = {K, 1}, wd = {K, N}, dd = {M, N}, bd = {1, N}, bs = {N, 1};
    DN(dnnl_memory_desc_init_by_strides(&src_md, 2, sd, wt, ss), "src desc");
    DN(dnnl_memory_desc_init_by_tag(&w_md, 2, wd, wt, dnnl_format_tag_any), "weights desc");
    DN(dnnl_memory_desc_init_by_strides(&dst_md, 2, dd, i8 ? dnnl_s32 : dnnl_f32, bs), "dst desc");
    DN(dnnl_memory_desc_init_by_strides(&bias_md, 2, bd, dnnl_f32, bs), "bias desc");
    dnnl_matmul_desc_t md;
    DN(dnnl_matmul_desc_init(&md, &src_md, &w_md, i8 ? NULL : &bias_md, &dst_md), "dnnl_matmul_desc_init");
    DN(dnnl_primitive_desc_create(&pd, &md, NULL, d->eng, NULL), "matmul primitive desc");
    out->wmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *packed_md = &out->wmd;
    DN(dnnl_memory_desc_init_by_strides(&user_md, 2, wd, wt, bs), "plain weights desc");
    DN(dnnl_memory_create(&user, &user_md, d->eng, plain), "plain weights memory");
    DN(dnnl_memory_create(&out->w, packed_md, d->eng, DNNL_MEMORY_ALLOCATE), "packed weights memory");
    DN(dnnl_reorder_primitive_desc_create(&rpd, &user_md, d->eng, packed_md, d->eng, NULL), "reorder desc");
    DN(dnnl_primitive_create(&reorder, rpd), "reorder primitive");
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, out->w}};
    DN(dnnl_primitive_execute(reorder, d->stream, 2, args), "weights reorder");
    DN(dnnl_stream_wait(d->stream), "dnnl_stream_wait");
fail:
    if (reorder)
        dnnl_primitive_destroy(reorder);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (user)
        dnnl_memory_destroy(user);
    free(plain);
    if (st != CLF_OK) {
        if (out->w)
            dnnl_memory_destroy(out->w);
        free(out->inv_sw);
        free(out->own);
        free(out->own_f32);
    }
    return st;
}

static clf_status find_or_pack(clf_ctx_t *ctx, const struct clf_mat *b, size_t k, size_t n, struct packed **out)
{
    struct clf_dnnl *d = ctx->dnnl;
    if ((*out = clf_view_find(d->p, d->np, sizeof *d->p, clf_view_key_of(b, k, n))))
        return CLF_OK;
    struct packed *q = clf_view_room(d->p, d->np, &d->cap, sizeof *q);
    if (!q)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "packed GEMM: out of host memory");
    d->p = q;
    clf_status st = pack(ctx, b, k, n, &d->p[d->np]);
    if (st == CLF_OK)
        *out = &d->p[d->np++];
    return st;
}

/* An int8 matmul of at most 2^23 multiply-adds (decoding's M = 32..128
 * rows through d_model = 256) runs on the calling thread alone: VNNI does
 * it in less time than waking oneDNN's OpenMP threads takes. Whole
 * translations of test_2016_flickr (PoCL, 2 threads, alternating rounds):
 * int8 beam 4 154.7 against 145.0 sentences/s with two threads. A float32
 * matmul stays alone up to 2^21 (DNNL_VERBOSE on 400 greedy sentences, per
 * shape, one thread against two: 32×256·256×256 52 against 69 µs, one row
 * 9 against 39; from 16×256·256×768 on two are as fast or faster; the
 * matmuls took 713 ms instead of 799); past that, both threads (alone,
 * the output projection and the encoder's are much slower: greedy 166.7
 * against 194.8 sentences/s with every float32 matmul alone). bfloat16
 * keeps both threads (no difference measured). The thread count is set
 * around the primitive's creation (oneDNN plans its split then) and its
 * execution. */
#define ONE_THREAD_MACS (1u << 23)
#define ONE_THREAD_MACS_F32 (1u << 21)
/* gemm_i8.c's kernel: its threads split the columns; below this, one.
 * `clformer bench translate --compute-type int8`, AVX2 Zen 3, three
 * alternating rounds (target tokens/s, greedy): 2^19 5284/6378/4422,
 * 2^21 4409/4527/3988, threads always 5556/6068/4964. */
#define ONE_THREAD_MACS_OWN (1u << 19)

static int threads_for(enum clf_gemm_weights t, size_t m, size_t n, size_t k)
{
#ifdef _OPENMP
    const int was = omp_get_max_threads();
    const double macs = (double)m * (double)n * (double)k;
    if ((t == CLF_GEMM_W_INT8 && macs <= ONE_THREAD_MACS) || (t == CLF_GEMM_W_F32P && macs <= ONE_THREAD_MACS_F32))
        omp_set_num_threads(1);
    return was;
#else
    (void)t, (void)m, (void)n, (void)k;
    return 1;
#endif
}

static void threads_back(int was)
{
#ifdef _OPENMP
    omp_set_num_threads(was);
#else
    (void)was;
#endif
}

/* p's matmul for m rows of A (C's rows ldc apart for f32 outputs, A's
 * lda apart for float32's). */
static clf_status prim_for(clf_ctx_t *ctx, struct packed *p, size_t m, size_t ldc, size_t lda, bool relu,
                           dnnl_primitive_t *out)
{
    struct clf_dnnl *d = ctx->dnnl;
    const bool i8 = d->type == CLF_GEMM_W_INT8, f32 = d->type == CLF_GEMM_W_F32P;
    if (i8)
        ldc = p->key.n;  /* the s32 products are ours, packed */
    if (!f32)
        lda = p->key.k;  /* A quantized or rounded here, packed */
    relu &= !i8;  /* int8's ReLU follows its dequantization, ours: the plain matmul serves both */
    for (size_t i = 0; i < p->nprims; i++)
        if (p->prims[i].m == m && p->prims[i].ldc == ldc && p->prims[i].lda == lda && p->prims[i].relu == relu) {
            *out = p->prims[i].p;
            return CLF_OK;
        }
    clf_status st = CLF_OK;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    if (p->nprims == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        struct prim *q = realloc(p->prims, cap * sizeof *q);
        if (!q)
            return clf_error_set(ctx, CLF_ERR_MEMORY, "packed GEMM: out of host memory");
        p->prims = q;
        p->cap = cap;
    }
    const dnnl_dim_t M = (dnnl_dim_t)m, K = (dnnl_dim_t)p->key.k, N = (dnnl_dim_t)p->key.n;
    dnnl_memory_desc_t src_md, dst_md, bias_md;
    dnnl_dims_t sd = {M, K}, ss = {(dnnl_dim_t)lda, 1}, dd = {M, N}, ds = {(dnnl_dim_t)ldc, 1}, bd = {1, N},
                bs = {N, 1};
    DN(dnnl_memory_desc_init_by_strides(&src_md, 2, sd, i8 ? dnnl_s8 : f32 ? dnnl_f32 : dnnl_bf16, ss), "src desc");
    DN(dnnl_memory_desc_init_by_strides(&dst_md, 2, dd, i8 ? dnnl_s32 : dnnl_f32, ds), "dst desc");
    DN(dnnl_memory_desc_init_by_strides(&bias_md, 2, bd, dnnl_f32, bs), "bias desc");
    dnnl_matmul_desc_t md;
    DN(dnnl_matmul_desc_init(&md, &src_md, &p->wmd, i8 ? NULL : &bias_md, &dst_md), "dnnl_matmul_desc_init");
    if (relu) {  /* max(A·B + bias, 0) as it leaves the matmul */
        DN(dnnl_post_ops_create(&ops), "post-ops");
        DN(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f), "ReLU post-op");
        DN(dnnl_primitive_attr_create(&attr), "primitive attributes");
        DN(dnnl_primitive_attr_set_post_ops(attr, ops), "post-ops attribute");
    }
    const int was = threads_for(d->type, m, p->key.n, p->key.k);
    const dnnl_status_t made = dnnl_primitive_desc_create(&pd, &md, attr, d->eng, NULL);
    threads_back(was);
    DN(made, "matmul primitive desc (packed weights)");
    dnnl_primitive_t prim;
    DN(dnnl_primitive_create(&prim, pd), "matmul primitive");
    p->prims[p->nprims++] = (struct prim){m, ldc, lda, relu, prim};
    *out = prim;
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (ops)
        dnnl_post_ops_destroy(ops);
    return st;
}

/* The product on one of our AVX2 kernels, A and C the buffers' own
 * memory: int8 on gemm_i8.c's (p->own; A quantized per row into rows of
 * kp bytes, zeros past k, then one pass that multiplies, dequantizes, adds
 * the bias and applies the ReLU) or float32 on gemm_f32.c's (p->own_f32;
 * the bias and ReLU fused into the store). One thread up to int8's
 * ONE_THREAD_MACS_OWN, or for float32 oneDNN float32's ONE_THREAD_MACS_F32:
 * the float32 kernel alone on an AVX-512 EPYC (2 vCPUs, shared) took 41 µs
 * on one thread against 72 on two for 32×256·256×256 (2^21), 224 against
 * 140 for 128×256·256×256. */
static clf_status own_gemm(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                           const struct packed *p, const struct clf_mat *bias, const struct clf_mat *c, bool relu)
{
    struct clf_dnnl *d = ctx->dnnl;
    const bool i8 = p->own != NULL;
    clf_status st;
    char *abase, *cbase, *bbase = NULL;
    const size_t kp = clf_i8_kp(k);
    if ((st = clf_host_ptr(ctx, a->buf, &abase)) || (st = clf_host_ptr(ctx, c->buf, &cbase)) ||
        (bias && (st = clf_host_ptr(ctx, bias->buf, &bbase))) ||
        (i8 && (st = grow(ctx, &d->qa, &d->qa_bytes, m * kp))) ||
        (i8 && (st = grow(ctx, (void **)&d->inv_sa, &d->inv_sa_bytes, m * sizeof(float)))))
        return st;
    double t0 = clf_profile_begin(ctx);
    CLF_CL_TRY(ctx, clFinish(ctx->queue));  /* A's producers */
    const float *A = (const float *)abase + a->offset, *bv = bias ? (const float *)bbase + bias->offset : NULL;
    float *C = (float *)cbase + c->offset;
    int threads = 1;
#ifdef _OPENMP
    if ((double)m * (double)n * (double)k > (i8 ? ONE_THREAD_MACS_OWN : ONE_THREAD_MACS_F32))
        threads = omp_get_max_threads();
#endif
    if (i8) {
        rows_quantize(d->qa, kp, d->inv_sa, A, a->ld, m, k);
        clf_i8_gemm(C, c->ld, d->qa, d->inv_sa, p->own, p->inv_sw, bv, m, n, k, relu, threads);
        clf_profile_end(ctx, relu ? "gemm + bias + relu (int8, AVX2)" : bias ? "gemm + bias (int8, AVX2)"
                                                                        : "gemm (int8, AVX2)", t0);
    } else {
        clf_f32_gemm(C, c->ld, A, a->ld, p->own_f32, bv, m, n, k, relu, threads);
        clf_profile_end(ctx, relu ? "gemm + bias + relu (float32, AVX2)" : bias ? "gemm + bias (float32, AVX2)"
                                                                           : "gemm (float32, AVX2)", t0);
    }
fail:
    return st;
}

clf_status clf_gemm_dnnl(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                         const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c, bool relu)
{
    struct clf_dnnl *d = ctx->dnnl;
    clf_status st = CLF_OK;
    struct packed *p = NULL;
    dnnl_memory_t ma = NULL, mc = NULL, mb = NULL;
    dnnl_primitive_t mm = NULL;
    const bool i8 = d->type == CLF_GEMM_W_INT8, f32 = d->type == CLF_GEMM_W_F32P;
    /* oneDNN 2.6 runs an int8 matmul of one row in its reference code (a
     * hundred times slower): one row is computed as two, the second zeros */
    const size_t mr = i8 && m < 2 ? 2 : m;
    if ((st = find_or_pack(ctx, b, k, n, &p)))
        return st;
    if (p->own || p->own_f32)
        return own_gemm(ctx, m, n, k, a, p, bias, c, relu);
    if ((st = prim_for(ctx, p, mr, c->ld, a->ld, relu, &mm)))
        return st;
    char *abase, *cbase, *bbase = NULL;
    if ((st = clf_host_ptr(ctx, a->buf, &abase)) || (st = clf_host_ptr(ctx, c->buf, &cbase)) ||
        (bias && (st = clf_host_ptr(ctx, bias->buf, &bbase))))
        return st;
    if ((!f32 && (st = grow(ctx, &d->qa, &d->qa_bytes, mr * k * (i8 ? 1 : 2)))) ||
        (i8 && (st = grow(ctx, (void **)&d->acc, &d->acc_bytes, mr * n * sizeof(int32_t)))) ||
        (i8 && (st = grow(ctx, (void **)&d->inv_sa, &d->inv_sa_bytes, m * sizeof(float)))))
        return st;
    double t0 = clf_profile_begin(ctx);
    CLF_CL_TRY(ctx, clFinish(ctx->queue));  /* A's producers */
    /* A is (m, lda) row-major: clf_gemm_packed_takes wants it untransposed */
    const float *A = (const float *)abase + a->offset, *bv = bias ? (const float *)bbase + bias->offset : NULL;
    float *C = (float *)cbase + c->offset;
    int par = m * k >= PAR_ELEMENTS;
    if (i8) {
        rows_quantize(d->qa, k, d->inv_sa, A, a->ld, m, k);
        memset((int8_t *)d->qa + m * k, 0, (mr - m) * k);
    } else if (!f32) {
        uint16_t *h = d->qa;
        ROWS_PARALLEL
        for (size_t i = 0; i < m; i++)
            row_bf16(h + i * k, A + i * a->ld, k);
    }
    const dnnl_dim_t M = (dnnl_dim_t)mr, K = (dnnl_dim_t)k, N = (dnnl_dim_t)n;
    dnnl_memory_desc_t a_md, c_md, b_md;
    dnnl_dims_t ad = {M, K}, as = {f32 ? (dnnl_dim_t)a->ld : K, 1}, cd = {M, N},
                cs = {i8 ? N : (dnnl_dim_t)c->ld, 1}, bd = {1, N}, bs = {N, 1};
    DN(dnnl_memory_desc_init_by_strides(&a_md, 2, ad, i8 ? dnnl_s8 : f32 ? dnnl_f32 : dnnl_bf16, as), "src desc");
    DN(dnnl_memory_desc_init_by_strides(&c_md, 2, cd, i8 ? dnnl_s32 : dnnl_f32, cs), "dst desc");
    DN(dnnl_memory_create(&ma, &a_md, d->eng, f32 ? (void *)A : d->qa), "src memory");
    DN(dnnl_memory_create(&mc, &c_md, d->eng, i8 ? (void *)d->acc : (void *)C), "dst memory");
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, p->w}, {DNNL_ARG_DST, mc}};
    int nargs = 3;
    if (!i8) {
        /* the matmul was made with a bias: a row of zeros stands in when none */
        if (!bv) {
            const size_t had = d->zeros_bytes;
            if ((st = grow(ctx, (void **)&d->zeros, &d->zeros_bytes, n * sizeof(float))))
                goto fail;
            if (d->zeros_bytes > had)
                memset(d->zeros, 0, d->zeros_bytes);
        }
        DN(dnnl_memory_desc_init_by_strides(&b_md, 2, bd, dnnl_f32, bs), "bias desc");
        DN(dnnl_memory_create(&mb, &b_md, d->eng, (void *)(bv ? bv : d->zeros)), "bias memory");
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mb};
    }
    const int was = threads_for(d->type, mr, n, k);
    const dnnl_status_t ran = dnnl_primitive_execute(mm, d->stream, nargs, args);
    threads_back(was);
    DN(ran, i8 ? "int8 matmul" : f32 ? "float32 matmul" : "bfloat16 matmul");
    DN(dnnl_stream_wait(d->stream), "dnnl_stream_wait");
    if (i8) {
        par = m * n >= PAR_ELEMENTS;
        ROWS_PARALLEL
        for (size_t i = 0; i < m; i++)
            row_dequantize(C + i * c->ld, d->acc + i * n, d->inv_sa[i], p->inv_sw, bv, n, relu && bv);
    }
    clf_profile_end(ctx, relu  ? (i8 ? "gemm + bias + relu (oneDNN int8)" : f32 ? "gemm + bias + relu (oneDNN float32)"
                                                                     : "gemm + bias + relu (oneDNN bfloat16)")
                         : i8  ? (bias ? "gemm + bias (oneDNN int8)" : "gemm (oneDNN int8)")
                         : f32 ? (bias ? "gemm + bias (oneDNN float32)" : "gemm (oneDNN float32)")
                               : (bias ? "gemm + bias (oneDNN bfloat16)" : "gemm (oneDNN bfloat16)"),
                    t0);
fail:
    if (ma)
        dnnl_memory_destroy(ma);
    if (mc)
        dnnl_memory_destroy(mc);
    if (mb)
        dnnl_memory_destroy(mb);
    return st;
}

#endif

clf_status clf_gemm_dnnl_supports(const struct clf_device_info *di, enum clf_gemm_weights t, char *why, size_t n)
{
    if (t == CLF_GEMM_W_FLOAT32)
        return CLF_OK;
    if (!(di->type & CL_DEVICE_TYPE_CPU) || !di->host_unified) {
        snprintf(why, n,
                 "device [%d] '%s' (%s) is not a CPU device sharing the host's memory%s%s%s: %s runs there only "
                 "(oneDNN on the buffers' own memory)",
                 di->index, di->device_name, di->platform_name, di->shaped[0] ? " (as CLF_DEVICE_LIMITS=" : "",
                 di->shaped, di->shaped[0] ? " shapes it)" : "", clf_gemm_weights_str(t));
        return CLF_ERR_UNSUPPORTED;
    }
    return isa_supports(t, why, n);
}
