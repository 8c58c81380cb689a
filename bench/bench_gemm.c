/* bench_gemm.c: `clformer bench gemm`: SGEMM GFLOP/s through clf_gemm (the
 * context's backend: CLBlast, or on CPU devices the host's BLAS on the
 * mapped buffers; --gemm chooses) on the shapes a Transformer uses, checked
 * against OpenBLAS before timing. Where the device is a CPU, OpenBLAS's
 * cblas_sgemm is timed on the same shapes in the same run, on plain host
 * arrays: the roof we measure against, and what the host backend's
 * map/wait/unmap costs beside it. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

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

enum { MAX_SHAPES = 9 };

/* What bench gemm measured: one row per shape. */
struct gemm_record {
    struct measure_device dev;
    bool cpu;  /* OpenBLAS timed beside it */
    int n;
    struct gemm_row {
        const struct shape *s;
        double seconds, gflops, openblas_gflops;
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
    fprintf(f, "%-18s %6s %6s %6s %10s %10s %8s\n", "shape", "m", "n", "k", "clformer", g->cpu ? "OpenBLAS" : "",
            g->cpu ? "ratio" : "");
    for (int i = 0; i < g->n; i++) {
        const struct gemm_row *r = &g->rows[i];
        const struct shape *s = r->s;
        if (g->cpu)
            fprintf(f, "%-18s %6zu %6zu %6zu %10.1f %10.1f %7.2fx\n", s->what, s->m, s->n, s->k, r->gflops,
                    r->openblas_gflops, r->gflops / r->openblas_gflops);
        else
            fprintf(f, "%-18s %6zu %6zu %6zu %10.1f\n", s->what, s->m, s->n, s->k, r->gflops);
    }
    if (g->cpu)
        fprintf(f, "ratio = clformer ÷ OpenBLAS on the same CPU (%s), in this run\n", "cblas_sgemm");
}

int bench_gemm(int argc, char **argv, struct bench_result *out)
{
    struct bench_opts o;
    if (!bench_parse(argc, argv, &o, "clformer bench gemm [--json] [--device D] [--quick]"))
        return 2;
    static const struct shape shapes[MAX_SHAPES] = {
        {"attn proj  d=256", T, 256, 256, false},  {"ffn in     d=256", T, 1024, 256, false},
        {"ffn out    d=256", T, 256, 1024, false}, {"logits     d=256", T, V, 256, true},
        {"attn proj  d=512", T, 512, 512, false},  {"ffn in     d=512", T, 2048, 512, false},
        {"ffn out    d=512", T, 512, 2048, false}, {"logits     d=512", T, V, 512, true},
        {"square     1024^3", 1024, 1024, 1024, false},
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
        double flops = 2.0 * s->m * s->n * s->k;
        g->rows[g->n++] = (struct gemm_row){s, t, flops / t * 1e-9, flops / tblas * 1e-9};
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
