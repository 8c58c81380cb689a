/* bench_gemm.c: `clformer bench gemm`: SGEMM GFLOP/s through clf_gemm (the
 * context's backend: CLBlast, or on CPU devices the host's BLAS on the
 * mapped buffers; --gemm chooses) on the shapes a Transformer uses, checked
 * against OpenBLAS before timing. Where the device is a CPU, OpenBLAS's
 * cblas_sgemm is timed on the same shapes in the same run, on plain host
 * arrays: the roof we measure against, and what the host backend's
 * map/wait/unmap costs beside it; and, in a build with oneDNN, oneDNN's
 * float32 matmul with B reordered once into the layout it prefers (what a
 * packed float32 backend would run), checked against OpenBLAS too. The
 * decoder's shapes (one step of beam 4 on 32 sentences: 128 rows) come
 * after the training ones. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#ifdef CLF_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

enum { T = 2048, V = 8000 };  /* tokens of a training batch, the peer's vocabulary */

struct shape {
    const char *what;
    size_t m, n, k;
    bool tb;  /* B stored transposed (n×k), as for the shared output embedding */
};

struct gemm_run {
    size_t m, n, k;
    struct clf_mat a, b, c;
};

static clf_status run_device(clf_ctx_t *ctx, void *arg)
{
    struct gemm_run *r = arg;
    return clf_gemm(ctx, r->m, r->n, r->k, 1.0f, &r->a, &r->b, 0.0f, &r->c);
}

struct cblas_run {
    const struct shape *s;
    const float *a, *b;
    float *c;
};

/* OpenBLAS through the same timing loop (its clf_ctx_finish is a no-op wait). */
static clf_status run_cblas(clf_ctx_t *ctx, void *arg)
{
    (void)ctx;
    const struct cblas_run *r = arg;
    const struct shape *s = r->s;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, (int)s->m, (int)s->n,
                (int)s->k, 1.0f, r->a, (int)s->k, r->b, s->tb ? (int)s->k : (int)s->n, 0.0f, r->c, (int)s->n);
    return CLF_OK;
}

#ifdef CLF_DNNL
/* One oneDNN float32 matmul: B reordered into the matmul's layout once. */
struct dnnl_run {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t mm;
    dnnl_memory_t a, w, c;
};

static clf_status run_dnnl(clf_ctx_t *ctx, void *arg)
{
    (void)ctx;
    struct dnnl_run *r = arg;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, r->a}, {DNNL_ARG_WEIGHTS, r->w}, {DNNL_ARG_DST, r->c}};
    return dnnl_primitive_execute(r->mm, r->stream, 3, args) == dnnl_success &&
                   dnnl_stream_wait(r->stream) == dnnl_success
               ? CLF_OK
               : CLF_ERR_BLAS;
}

static void dnnl_run_free(struct dnnl_run *r)
{
    if (r->mm) dnnl_primitive_destroy(r->mm);
    if (r->a) dnnl_memory_destroy(r->a);
    if (r->w) dnnl_memory_destroy(r->w);
    if (r->c) dnnl_memory_destroy(r->c);
    if (r->stream) dnnl_stream_destroy(r->stream);
    if (r->eng) dnnl_engine_destroy(r->eng);
}

/* The seconds of one oneDNN matmul of s (c receives its result), the
 * reorder of B not counted; -1 where oneDNN fails. */
static double time_dnnl(clf_ctx_t *ctx, const struct shape *s, const float *a, const float *b, float *c, double min_s)
{
    struct dnnl_run r = {0};
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t user = NULL;
    double t = -1;
    const dnnl_dim_t M = (dnnl_dim_t)s->m, N = (dnnl_dim_t)s->n, K = (dnnl_dim_t)s->k;
    dnnl_dims_t ad = {M, K}, as = {K, 1}, wd = {K, N}, ws = {s->tb ? 1 : N, s->tb ? K : 1}, cd = {M, N}, cs = {N, 1};
    dnnl_memory_desc_t a_md, w_md, c_md, user_md;
    dnnl_matmul_desc_t md;
    if (dnnl_engine_create(&r.eng, dnnl_cpu, 0) || dnnl_stream_create(&r.stream, r.eng, dnnl_stream_default_flags) ||
        dnnl_memory_desc_init_by_strides(&a_md, 2, ad, dnnl_f32, as) ||
        dnnl_memory_desc_init_by_tag(&w_md, 2, wd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_strides(&c_md, 2, cd, dnnl_f32, cs) ||
        dnnl_memory_desc_init_by_strides(&user_md, 2, wd, dnnl_f32, ws) ||
        dnnl_matmul_desc_init(&md, &a_md, &w_md, NULL, &c_md) ||
        dnnl_primitive_desc_create(&pd, &md, NULL, r.eng, NULL) || dnnl_primitive_create(&r.mm, pd))
        goto done;
    const dnnl_memory_desc_t *packed = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (dnnl_memory_create(&r.a, &a_md, r.eng, (void *)a) || dnnl_memory_create(&r.c, &c_md, r.eng, c) ||
        dnnl_memory_create(&user, &user_md, r.eng, (void *)b) ||
        dnnl_memory_create(&r.w, packed, r.eng, DNNL_MEMORY_ALLOCATE) ||
        dnnl_reorder_primitive_desc_create(&rpd, &user_md, r.eng, packed, r.eng, NULL) ||
        dnnl_primitive_create(&reorder, rpd))
        goto done;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, r.w}};
    if (dnnl_primitive_execute(reorder, r.stream, 2, args) || dnnl_stream_wait(r.stream) || run_dnnl(ctx, &r))
        goto done;
    t = measure_time(ctx, run_dnnl, &r, min_s);
done:
    if (reorder) dnnl_primitive_destroy(reorder);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (user) dnnl_memory_destroy(user);
    dnnl_run_free(&r);
    return t;
}
#endif

enum { MAX_SHAPES = 14 };

/* What bench gemm measured: one row per shape. */
struct gemm_record {
    struct measure_device dev;
    bool cpu;  /* OpenBLAS timed beside it */
    int n;
    struct gemm_row {
        const struct shape *s;
        double seconds, gflops, openblas_gflops, dnnl_gflops;  /* dnnl: 0 where not run */
    } rows[MAX_SHAPES];
};

static void gemm_json(FILE *f, const void *rec)
{
    const struct gemm_record *g = rec;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "gemm");
    measure_device_json(&w, &g->dev);
    cli_json_arr(&w, "results");
    for (int i = 0; i < g->n; i++) {
        const struct gemm_row *r = &g->rows[i];
        const struct shape *s = r->s;
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "shape", s->what);
        cli_json_num(&w, "m", "%zu", s->m);
        cli_json_num(&w, "n", "%zu", s->n);
        cli_json_num(&w, "k", "%zu", s->k);
        cli_json_bool(&w, "b_transposed", s->tb);
        cli_json_num(&w, "seconds", "%.6g", r->seconds);
        cli_json_num(&w, "gflops", "%.2f", r->gflops);
        if (g->cpu) {
            cli_json_num(&w, "openblas_gflops", "%.2f", r->openblas_gflops);
            cli_json_num(&w, "ratio", "%.3f", r->gflops / r->openblas_gflops);
        }
        if (r->dnnl_gflops > 0)
            cli_json_num(&w, "onednn_packed_gflops", "%.2f", r->dnnl_gflops);
        cli_json_end(&w);
    }
    cli_json_end(&w);
    cli_json_end(&w);
}

static void gemm_table(FILE *f, const void *rec)
{
    const struct gemm_record *g = rec;
    fprintf(f, "SGEMM on %s (%s) through %s, row-major C = A·op(B); GFLOP/s = 2·m·n·k / time\n",
            g->dev.info.device_name, g->dev.info.platform_name, g->dev.gemm_describe);
    const bool dn = g->n > 0 && g->rows[0].dnnl_gflops > 0;
    fprintf(f, "%-18s %6s %6s %6s %10s %10s %8s %10s\n", "shape", "m", "n", "k", "clformer", g->cpu ? "OpenBLAS" : "",
            g->cpu ? "ratio" : "", dn ? "oneDNN" : "");
    for (int i = 0; i < g->n; i++) {
        const struct gemm_row *r = &g->rows[i];
        const struct shape *s = r->s;
        if (g->cpu)
            fprintf(f, "%-18s %6zu %6zu %6zu %10.1f %10.1f %7.2fx %10.1f\n", s->what, s->m, s->n, s->k, r->gflops,
                    r->openblas_gflops, r->gflops / r->openblas_gflops, r->dnnl_gflops);
        else
            fprintf(f, "%-18s %6zu %6zu %6zu %10.1f\n", s->what, s->m, s->n, s->k, r->gflops);
    }
    if (g->cpu)
        fprintf(f, "ratio = clformer ÷ OpenBLAS on the same CPU (%s), in this run%s\n", "cblas_sgemm",
                dn ? "; oneDNN: its float32 matmul, B reordered once into its layout (not counted), on host arrays"
                   : "");
}

const char bench_gemm_usage[] = "clformer bench gemm [--json] [--device D] [--quick]";

int bench_gemm(int argc, char **argv, struct bench_result *out)
{
    struct bench_opts o;
    if (!bench_parse(argc, argv, &o, bench_gemm_usage))
        return 2;
    static const struct shape shapes[MAX_SHAPES] = {
        {"attn proj  d=256", T, 256, 256, false},  {"ffn in     d=256", T, 1024, 256, false},
        {"ffn out    d=256", T, 256, 1024, false}, {"logits     d=256", T, V, 256, true},
        {"attn proj  d=512", T, 512, 512, false},  {"ffn in     d=512", T, 2048, 512, false},
        {"ffn out    d=512", T, 512, 2048, false}, {"logits     d=512", T, V, 512, true},
        {"square     1024^3", 1024, 1024, 1024, false},
        {"dec qkv    d=256", 128, 768, 256, false},  {"dec proj   d=256", 128, 256, 256, false},
        {"dec ffn in d=256", 128, 1024, 256, false}, {"dec ffn out d=256", 128, 256, 1024, false},
        {"dec logits d=256", 128, V, 256, true},
    };
    const int nshapes = o.quick ? 1 : MAX_SHAPES;
    const double min_s = o.quick ? 0.2 : 1.0;
    struct gemm_record *g = calloc(1, sizeof *g);
    if (!g)
        return 1;
    clf_ctx_t *ctx = cli_open(o.device);
    if (!ctx) {
        free(g);
        return 1;
    }
    measure_device_get(ctx, &g->dev);
    bool cpu = g->cpu = clf_ctx_device(ctx)->type & CL_DEVICE_TYPE_CPU;
    int rc = 0;
    for (int i = 0; i < nshapes && rc == 0; i++) {
        const struct shape *s = &shapes[i];
        size_t na = s->m * s->k, nb = s->k * s->n, nc = s->m * s->n;
        float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *ref = malloc(nc * 4);
        clf_tensor ta = {0}, tb = {0}, tc = {0};
        clf_status st = CLF_ERR_MEMORY;
        if (!a || !b || !c || !ref)
            goto next;
        clf_rand_fill(a, na, 1 + i, 1.0f);
        clf_rand_fill(b, nb, 100 + i, 1.0f);
        if ((st = clf_tensor_init(ctx, &ta, 1, &na)) || (st = clf_tensor_init(ctx, &tb, 1, &nb)) ||
            (st = clf_tensor_init(ctx, &tc, 1, &nc)) || (st = clf_tensor_upload(ctx, &ta, a)) ||
            (st = clf_tensor_upload(ctx, &tb, b)))
            goto next;
        struct gemm_run r = {s->m, s->n, s->k, {ta.buf, 0, s->k, false, 0},
                             {tb.buf, 0, s->tb ? s->k : s->n, s->tb, 0}, {tc.buf, 0, s->n, false, 0}};
        /* correctness first: the device result against OpenBLAS */
        if ((st = run_device(ctx, &r)) || (st = clf_tensor_download(ctx, &tc, c)))
            goto next;
        struct cblas_run cr = {s, a, b, ref};
        double tblas = cpu ? measure_time(ctx, run_cblas, &cr, min_s) : (run_cblas(ctx, &cr), 1.0);
        double maxerr = 0;
        for (size_t j = 0; j < nc; j++)
            maxerr = fmax(maxerr, fabs(c[j] - ref[j]) / (1e-3 + fabs(ref[j])));
        if (!(maxerr < 1e-2)) {
            fprintf(stderr, "clformer: gemm %s disagrees with OpenBLAS (max relative error %.3g)\n", s->what,
                    maxerr);
            rc = 1;
            goto next;
        }
        double t = measure_time(ctx, run_device, &r, min_s);
        if (t < 0) {
            st = CLF_ERR_OPENCL;
            goto next;
        }
        double flops = 2.0 * s->m * s->n * s->k, tdnnl = -1;
#ifdef CLF_DNNL
        if (cpu) {
            tdnnl = time_dnnl(ctx, s, a, b, c, min_s);
            for (size_t j = 0; tdnnl > 0 && j < nc; j++)
                if (!(fabs(c[j] - ref[j]) / (1e-3 + fabs(ref[j])) < 1e-2)) {
                    fprintf(stderr, "clformer: oneDNN's gemm %s disagrees with OpenBLAS at %zu\n", s->what, j);
                    rc = 1;
                    goto next;
                }
        }
#endif
        g->rows[g->n++] = (struct gemm_row){s, t, flops / t * 1e-9, flops / tblas * 1e-9,
                                            tdnnl > 0 ? flops / tdnnl * 1e-9 : 0};
        st = CLF_OK;
    next:
        if (st != CLF_OK)
            rc = cli_fail(ctx, st, s->what);
        clf_tensor_free(&ta);
        clf_tensor_free(&tb);
        clf_tensor_free(&tc);
        free(a);
        free(b);
        free(c);
        free(ref);
    }
    clf_ctx_free(ctx);
    if (rc) {
        free(g);
        return rc;
    }
    *out = (struct bench_result){g, gemm_json, gemm_table};
    return 0;
}
