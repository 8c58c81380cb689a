/* gemm_dnnl_f32.c: large float32 GEMMs of the host backend (training's)
 * through oneDNN's matmul, on the operands' own memory.
 *
 * gemm_host.c hands over a call whose pointers it has resolved when
 * clf_gemm_dnnl_f32_takes says so: a build with oneDNN, one matrix (no
 * batch), at least BIG_MACS multiply-adds, CLF_GEMM_F32 not openblas, and
 * no bias unless alpha is 1. oneDNN's matmul (its brgemm kernels on
 * AVX-512) reads A and B where they lie, through strides (either
 * orientation), adds the bias as it stores C, and scales by alpha and adds
 * beta·C (a sum post-op) in the same pass.
 *
 * Why: on training's shapes (2560 rows against d_model 256 .. vocabulary
 * 8000, each orientation) it ran at 200-225 GFLOP/s against OpenBLAS
 * 0.3.21's 185-208 on a 2-core AVX-512 EPYC (2026-12-05, best of 5, idle
 * threads sleeping), and the bias, which OpenBLAS leaves to a pass of our
 * own over C afterwards, costs nothing. Below 2^25 multiply-adds (512 rows
 * of 256 by 256) OpenBLAS was as fast or faster (64 rows: 170 against
 * 102), so smaller GEMMs stay there. The arithmetic is float32's in
 * oneDNN's order: results differ from OpenBLAS's in the last bits, and for
 * a given thread count they are the same run to run.
 *
 * Primitives are kept per context, keyed by everything that shapes them,
 * in a ring of KEEP: a training step's few dozen shapes are created once. */
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "gemm_paths.h"
#include "settings.h"

#define BIG_MACS (1u << 25)

static bool wanted(void)
{
    const char *s = clf_setting_get("CLF_GEMM_F32");
    return !(s && !strcmp(s, "openblas"));
}

#ifndef CLF_DNNL

bool clf_gemm_f32_onednn(void) { return false; }
bool clf_gemm_dnnl_f32_takes(const clf_ctx_t *ctx, size_t m, size_t n, size_t k, size_t batch, float alpha,
                             bool bias)
{
    (void)ctx, (void)m, (void)n, (void)k, (void)batch, (void)alpha, (void)bias, (void)wanted;
    return false;
}
clf_status clf_gemm_dnnl_f32(clf_ctx_t *ctx, const struct clf_gemm_ptrs *g)
{
    (void)g;
    return clf_error_set(ctx, CLF_ERR_UNSUPPORTED, "float32 GEMM through oneDNN: built without oneDNN");
}
void clf_gemm_dnnl_f32_free(clf_ctx_t *ctx) { (void)ctx; }

#else

#include <oneapi/dnnl/dnnl.h>
#ifdef _OPENMP
#include <omp.h>
#endif

enum { KEEP = 64 };

struct key {
    size_t m, n, k, lda, ldb, ldc;
    bool ta, tb, bias;
    float alpha, beta;
};

struct kept {
    struct key key;
    dnnl_primitive_t p;
};

struct clf_dnnl_f32 {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    struct kept kept[KEEP];
    size_t nkept, next; /* the ring: the next slot to replace once full */
};

bool clf_gemm_f32_onednn(void) { return wanted(); }

bool clf_gemm_dnnl_f32_takes(const clf_ctx_t *ctx, size_t m, size_t n, size_t k, size_t batch, float alpha,
                             bool bias)
{
    return ctx->host_ptrs && batch == 1 && (double)m * (double)n * (double)k >= BIG_MACS && (!bias || alpha == 1.0f) &&
           wanted();
}

void clf_gemm_dnnl_f32_free(clf_ctx_t *ctx)
{
    struct clf_dnnl_f32 *d = ctx->dnnl_f32;
    if (!d)
        return;
    for (size_t i = 0; i < d->nkept; i++)
        dnnl_primitive_destroy(d->kept[i].p);
    if (d->stream)
        dnnl_stream_destroy(d->stream);
    if (d->eng)
        dnnl_engine_destroy(d->eng);
    free(d);
    ctx->dnnl_f32 = NULL;
}

static clf_status fail(clf_ctx_t *ctx, dnnl_status_t s, const char *what)
{
    return clf_error_set(ctx, s == dnnl_out_of_memory ? CLF_ERR_MEMORY : CLF_ERR_BLAS,
                         "float32 GEMM through oneDNN: %s failed (dnnl_status %d); CLF_GEMM_F32=openblas runs "
                         "the host BLAS instead",
                         what, (int)s);
}

#define DN(call, what)                                                                                        \
    do {                                                                                                      \
        dnnl_status_t s_ = (call);                                                                            \
        if (s_ != dnnl_success) {                                                                             \
            st = fail(ctx, s_, what);                                                                         \
            goto done;                                                                                        \
        }                                                                                                     \
    } while (0)

static clf_status create(clf_ctx_t *ctx, struct clf_dnnl_f32 *d, const struct key *y, dnnl_primitive_t *out)
{
    clf_status st = CLF_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_dim_t M = (dnnl_dim_t)y->m, N = (dnnl_dim_t)y->n, K = (dnnl_dim_t)y->k;
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N}, vd = {1, N};
    dnnl_dims_t as = {y->ta ? 1 : (dnnl_dim_t)y->lda, y->ta ? (dnnl_dim_t)y->lda : 1};
    dnnl_dims_t bs = {y->tb ? 1 : (dnnl_dim_t)y->ldb, y->tb ? (dnnl_dim_t)y->ldb : 1};
    dnnl_dims_t cs = {(dnnl_dim_t)y->ldc, 1}, vs = {N, 1};
    dnnl_memory_desc_t a_md, b_md, c_md, v_md;
    DN(dnnl_memory_desc_init_by_strides(&a_md, 2, ad, dnnl_f32, as), "A's desc");
    DN(dnnl_memory_desc_init_by_strides(&b_md, 2, bd, dnnl_f32, bs), "B's desc");
    DN(dnnl_memory_desc_init_by_strides(&c_md, 2, cd, dnnl_f32, cs), "C's desc");
    DN(dnnl_memory_desc_init_by_strides(&v_md, 2, vd, dnnl_f32, vs), "the bias's desc");
    dnnl_matmul_desc_t md;
    DN(dnnl_matmul_desc_init(&md, &a_md, &b_md, y->bias ? &v_md : NULL, &c_md), "dnnl_matmul_desc_init");
    DN(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    if (y->alpha != 1.0f)
        DN(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &y->alpha), "alpha (output scales)");
    if (y->beta != 0.0f) {
        DN(dnnl_post_ops_create(&ops), "dnnl_post_ops_create");
        DN(dnnl_post_ops_append_sum(ops, y->beta), "beta (a sum post-op)");
        DN(dnnl_primitive_attr_set_post_ops(attr, ops), "dnnl_primitive_attr_set_post_ops");
    }
    DN(dnnl_primitive_desc_create(&pd, &md, attr, d->eng, NULL), "the matmul's primitive desc");
    DN(dnnl_primitive_create(out, pd), "the matmul's primitive");
done:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (ops)
        dnnl_post_ops_destroy(ops);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

static clf_status primitive(clf_ctx_t *ctx, struct clf_dnnl_f32 *d, const struct key *y, dnnl_primitive_t *out)
{
    for (size_t i = 0; i < d->nkept; i++)
        if (!memcmp(&d->kept[i].key, y, sizeof *y)) {
            *out = d->kept[i].p;
            return CLF_OK;
        }
    dnnl_primitive_t p;
    clf_status st = create(ctx, d, y, &p);
    if (st)
        return st;
    size_t slot;
    if (d->nkept < KEEP) {
        slot = d->nkept++;
    } else { /* the oldest goes */
        slot = d->next;
        d->next = (d->next + 1) % KEEP;
        dnnl_primitive_destroy(d->kept[slot].p);
    }
    d->kept[slot] = (struct kept){*y, p};
    *out = p;
    return CLF_OK;
}

/* ctx's engine and stream, made at its first call */
static clf_status opened(clf_ctx_t *ctx, struct clf_dnnl_f32 **out)
{
    clf_status st = CLF_OK;
    struct clf_dnnl_f32 *d = ctx->dnnl_f32;
    if (!d) {
        if (!(d = calloc(1, sizeof *d)))
            return clf_error_set(ctx, CLF_ERR_MEMORY, "float32 GEMM through oneDNN: out of host memory");
        ctx->dnnl_f32 = d;
        DN(dnnl_engine_create(&d->eng, dnnl_cpu, 0), "dnnl_engine_create");
        DN(dnnl_stream_create(&d->stream, d->eng, dnnl_stream_default_flags), "dnnl_stream_create");
    }
    *out = d;
done:
    if (st)
        clf_gemm_dnnl_f32_free(ctx);
    return st;
}

clf_status clf_gemm_dnnl_f32(clf_ctx_t *ctx, const struct clf_gemm_ptrs *g)
{
    struct clf_dnnl_f32 *d = NULL;
    clf_status st = opened(ctx, &d);
    if (st)
        return st;
    struct key y;
    memset(&y, 0, sizeof y); /* the padding too: keys are compared whole */
    y.m = g->m, y.n = g->n, y.k = g->k, y.lda = g->lda, y.ldb = g->ldb, y.ldc = g->ldc;
    y.ta = g->ta, y.tb = g->tb, y.bias = g->bias != NULL, y.alpha = g->alpha, y.beta = g->beta;
#ifdef _OPENMP
    const int was = omp_get_max_threads(), want = clf_blas_threads_setting();
    if (want > 0)
        omp_set_num_threads(want); /* before the creation: oneDNN plans its split then */
#endif
    dnnl_primitive_t p;
    dnnl_memory_t mem[4] = {NULL, NULL, NULL, NULL};
    if ((st = primitive(ctx, d, &y, &p)))
        goto done;
    const dnnl_memory_desc_t *md[4];
    dnnl_primitive_desc_t pd;
    DN(dnnl_primitive_get_primitive_desc(p, (const_dnnl_primitive_desc_t *)&pd), "the primitive's desc");
    md[0] = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    md[1] = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    md[2] = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    md[3] = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
    void *ptr[4] = {(void *)g->a, (void *)g->b, g->c, (void *)g->bias};
    static const int role[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    dnnl_exec_arg_t args[4];
    int nargs = 0;
    for (int i = 0; i < 4; i++)
        if (ptr[i]) {
            DN(dnnl_memory_create(&mem[i], md[i], d->eng, ptr[i]), "an operand's memory");
            args[nargs++] = (dnnl_exec_arg_t){role[i], mem[i]};
        }
    DN(dnnl_primitive_execute(p, d->stream, nargs, args), "the matmul");
    DN(dnnl_stream_wait(d->stream), "dnnl_stream_wait");
done:
    for (int i = 0; i < 4; i++)
        if (mem[i])
            dnnl_memory_destroy(mem[i]);
#ifdef _OPENMP
    if (want > 0)
        omp_set_num_threads(was);
#endif
    return st;
}

#endif
