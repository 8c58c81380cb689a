/* bench_attention.c: `clformer bench attention`: scaled dot-product
 * attention at B=8, h=8, d_k=64 for n = 128 .. 4096: the tiled kernels
 * (forward, forward+backward) against the naive path (scores materialised
 * with batched GEMMs; run only while its (B·h, n, n) buffers fit), time,
 * GFLOP/s (4·B·h·n²·d_k for the forward) and the largest device buffer;
 * then restricted attention (r = 32, 64, 128) up to n = 8192, whose time
 * grows linearly in n, and its speed-up over full attention at n = 8192.
 * --peer FILE reads bench/peers/torch_peer.py's JSON lines and prints the ratio
 * (peer seconds ÷ ours) for the tiled forward at the same n. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

enum { B = 8, H = 8, DK = 64 };

struct attn_run {
    struct clf_attention_layout q, k, v, o, g, dq, dk, dv;
    clf_tensor lse;
    struct clf_attention_workspace ws;
    struct clf_attention_naive_workspace nws;
    struct clf_attention_desc d;
};

static clf_status run_fwd(clf_ctx_t *ctx, void *arg)
{
    struct attn_run *r = arg;
    return clf_attention_forward(ctx, &r->o, &r->lse, &r->q, &r->k, &r->v, &r->d);
}

static clf_status run_fwd_bwd(clf_ctx_t *ctx, void *arg)
{
    struct attn_run *r = arg;
    clf_status st = run_fwd(ctx, arg);
    if (st == CLF_OK)
        st = clf_attention_backward(ctx, &r->dq, &r->dk, &r->dv, &r->g, &r->q, &r->k, &r->v, &r->o, &r->lse, &r->ws,
                                    &r->d);
    return st;
}

static clf_status run_naive(clf_ctx_t *ctx, void *arg)
{
    struct attn_run *r = arg;
    return clf_attention_naive_forward(ctx, &r->o, &r->nws, &r->q, &r->k, &r->v, &r->d);
}

/* Times fn: a run that takes over a second is measured once (kernels were
 * compiled by the warm-up), else measure_time's median. warm: one more run
 * first (CLBlast compiles a kernel per size class, in every process). */
static double time_it(clf_ctx_t *ctx, clf_status (*fn)(clf_ctx_t *, void *), void *arg, double min_s, bool warm)
{
    if (warm && (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK))
        return -1;
    double t0 = clf_now();
    if (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK)
        return -1;
    double t = clf_now() - t0;
    if (t > 1.0)
        return t;
    return measure_time(ctx, fn, arg, min_s);
}

/* Device buffers of one size: 8 operands (B, H, n, DK), lse; the naive scores when asked. */
struct bufs {
    clf_tensor t[8];
    size_t largest; /* bytes */
};

static void bufs_free(struct bufs *b)
{
    for (int i = 0; i < 8; i++)
        clf_tensor_free(&b->t[i]);
}

static clf_status setup(clf_ctx_t *ctx, struct attn_run *r, struct bufs *bf, size_t n, bool backward, bool naive)
{
    memset(r, 0, sizeof *r);
    memset(bf, 0, sizeof *bf);
    size_t numel = (size_t)B * H * n * DK, rows = (size_t)B * H * n;
    float *host = malloc(numel * sizeof *host);
    if (!host)
        return CLF_ERR_MEMORY;
    unsigned s = 12345;
    for (size_t i = 0; i < numel; i++)
        host[i] = clf_uniform(&s) * 2 - 1;
    clf_status st = CLF_OK;
    int nb = backward ? 8 : 4;
    for (int i = 0; i < nb && st == CLF_OK; i++)
        if ((st = clf_tensor_init(ctx, &bf->t[i], 1, &numel)) == CLF_OK)
            st = clf_tensor_upload(ctx, &bf->t[i], host);
    free(host);
    if (st)
        return st;
    bf->largest = numel * 4;
    struct clf_attention_layout *ls[8] = {&r->q, &r->k, &r->v, &r->o, &r->g, &r->dq, &r->dk, &r->dv};
    for (int i = 0; i < nb; i++)
        *ls[i] = (struct clf_attention_layout){bf->t[i].buf, 0, (size_t)H * n * DK, n * DK, DK};
    if ((st = clf_tensor_init(ctx, &r->lse, 1, &rows)))
        return st;
    if (backward && (st = clf_attention_workspace_init(ctx, &r->ws, B, H, n)))
        return st;
    if (naive) {
        if ((st = clf_attention_naive_workspace_init(ctx, &r->nws, B, H, n, n)))
            return st;
        bf->largest = r->nws.cap * 4;
    }
    r->d = (struct clf_attention_desc){.batch = B, .heads = H, .n_q = n, .n_k = n, .d_k = DK, .window = -1};
    return CLF_OK;
}

static void teardown(struct attn_run *r, struct bufs *bf)
{
    clf_tensor_free(&r->lse);
    clf_attention_workspace_free(&r->ws);
    clf_attention_naive_workspace_free(&r->nws);
    bufs_free(bf);
}

/* The peer's forward seconds at our B, h, d_k and n, or 0. */
static double peer_seconds(const char *file, size_t n)
{
    static const char *const keys[] = {"b", "h", "dk", "n"};
    const double values[] = {B, H, DK, (double)n};
    return bench_peer_figure(file, "attention_fwd", keys, values, 4, "s");
}

static double gf(double flops, double t) { return t > 0 ? flops / t * 1e-9 : 0; }

static const size_t full_n[] = {128, 256, 512, 1024, 2048, 4096};
static const size_t restricted_n[] = {1024, 2048, 4096, 8192};
static const int restricted_r[] = {32, 64, 128};
enum { NFULL = 6, NRN = 4, NRR = 3 };

/* What bench attention measured. */
struct attention_record {
    struct measure_device dev;
    char entry[64];               /* the attention tuning in force */
    struct clf_attention_tuning tu;
    bool peer;
    int nfull;
    struct attn_full {
        size_t n;
        double tf, tb, tn;        /* tiled forward, forward+backward, naive forward (-1: not run) */
        size_t largest_tiled, largest_naive, naive_bytes;
        double peer_s;            /* 0: no peer figure */
    } full[NFULL];
    int nrn;                      /* restricted: rows of length rn[i], a time per restricted_r */
    size_t rn[NRN];
    double restricted_s[NRN][NRR], restricted_gflops[NRN][NRR];
    double full_8192_s;           /* 0 unless measured, for the speed-up of r = 64 */
    double r64_8192_s;            /* restricted r = 64 at n = 8192, beside it */
};

static void attention_json(FILE *f, const void *rec)
{
    const struct attention_record *a = rec;
    const struct clf_attention_tuning *tu = &a->tu;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "attention");
    measure_device_json(&w, &a->dev);
    cli_json_obj(&w, "tuning");
    cli_json_str(&w, "entry", a->entry);
    cli_json_bool(&w, "tuned", tu->tuned);
    cli_json_num(&w, "tile_q", "%zu", tu->tile_q);
    cli_json_num(&w, "tile_k", "%zu", tu->tile_k);
    cli_json_num(&w, "lanes", "%zu", tu->lanes);
    cli_json_end(&w);
    cli_json_arr(&w, "results");
    for (int i = 0; i < a->nfull; i++) {
        const struct attn_full *x = &a->full[i];
        double flops = 4.0 * B * H * (double)x->n * x->n * DK;
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "kind", "full");
        cli_json_num(&w, "n", "%zu", x->n);
        cli_json_num(&w, "tiled_fwd_s", "%.6g", x->tf);
        cli_json_num(&w, "tiled_fwd_gflops", "%.2f", gf(flops, x->tf));
        cli_json_num(&w, "tiled_fwd_bwd_s", "%.6g", x->tb);
        cli_json_num(&w, "tiled_fwd_bwd_gflops", "%.2f", gf(2.5 * flops, x->tb));
        cli_json_num(&w, "fwd_bwd_over_fwd", "%.3f", x->tf > 0 ? x->tb / x->tf : 0);
        cli_json_num(&w, "largest_buffer_bytes", "%zu", x->largest_tiled);
        if (x->tn >= 0) {
            cli_json_num(&w, "naive_fwd_s", "%.6g", x->tn);
            cli_json_num(&w, "naive_fwd_gflops", "%.2f", gf(flops, x->tn));
            cli_json_num(&w, "naive_largest_buffer_bytes", "%zu", x->largest_naive);
        } else {
            char why[80];
            snprintf(why, sizeof why, "skipped: scores need %zu bytes per buffer", x->naive_bytes);
            cli_json_str(&w, "naive", why);
        }
        if (x->peer_s > 0) {
            cli_json_num(&w, "peer_s", "%.6g", x->peer_s);
            cli_json_num(&w, "peer_ratio", "%.3f", x->peer_s / x->tf);
        }
        cli_json_end(&w);
    }
    for (int i = 0; i < a->nrn; i++) {
        for (int j = 0; j < NRR; j++) {
            cli_json_obj(&w, NULL);
            cli_json_str(&w, "kind", "restricted");
            cli_json_num(&w, "n", "%zu", a->rn[i]);
            cli_json_num(&w, "r", "%d", restricted_r[j]);
            cli_json_num(&w, "fwd_s", "%.6g", a->restricted_s[i][j]);
            cli_json_num(&w, "gflops", "%.2f", a->restricted_gflops[i][j]);
            cli_json_end(&w);
        }
    }
    if (a->full_8192_s > 0) {
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "kind", "full");
        cli_json_num(&w, "n", "%d", 8192);
        cli_json_num(&w, "fwd_s", "%.6g", a->full_8192_s);
        cli_json_num(&w, "restricted_r64_speedup", "%.2f", a->full_8192_s / a->r64_8192_s);
        cli_json_end(&w);
    }
    cli_json_end(&w);
    cli_json_end(&w);
}

static void attention_table(FILE *f, const void *rec)
{
    const struct attention_record *a = rec;
    const struct clf_attention_tuning *tu = &a->tu;
    fprintf(f, "attention on %s (%s), B=%d h=%d d_k=%d; tiles TILE_Q=%zu TILE_K=%zu LANES=%zu from entry '%s'%s\n",
            a->dev.info.device_name, a->dev.info.platform_name, B, H, DK, tu->tile_q, tu->tile_k, tu->lanes, a->entry,
            tu->tuned ? "" : " (untuned: generic parameters)");
    fprintf(f, "GFLOP/s = 4·B·h·n²·d_k / forward time (fwd+bwd: 2.5× that many flops)\n");
    fprintf(f, "%6s %10s %8s %10s %8s %10s %8s %10s %8s %7s\n", "n", "tiled fwd", "GFLOP/s", "fwd+bwd", "GFLOP/s",
            "naive fwd", "GFLOP/s", "largest", "naive", a->peer ? "peer" : "");
    fprintf(f, "%6s %10s %8s %10s %8s %10s %8s %10s %8s %7s\n", "", "ms", "", "ms", "", "ms", "", "MiB", "MiB",
            a->peer ? "ratio" : "");
    for (int i = 0; i < a->nfull; i++) {
        const struct attn_full *x = &a->full[i];
        double flops = 4.0 * B * H * (double)x->n * x->n * DK;
        char nb[32], nt[32], nm[32], pr[32] = "";
        if (x->tn >= 0) {
            snprintf(nb, sizeof nb, "%.1f", x->tn * 1e3);
            snprintf(nt, sizeof nt, "%.1f", gf(flops, x->tn));
            snprintf(nm, sizeof nm, "%.0f", x->largest_naive / 1048576.0);
        } else {
            snprintf(nb, sizeof nb, "-");
            snprintf(nt, sizeof nt, "-");
            snprintf(nm, sizeof nm, "(%.0f)", x->naive_bytes / 1048576.0);
        }
        if (x->peer_s > 0)
            snprintf(pr, sizeof pr, "%.2fx", x->peer_s / x->tf);
        fprintf(f, "%6zu %10.1f %8.1f %10.1f %8.1f %10s %8s %10.1f %8s %7s\n", x->n, x->tf * 1e3, gf(flops, x->tf),
                x->tb * 1e3, gf(2.5 * flops, x->tb), nb, nt, x->largest_tiled / 1048576.0, nm, pr);
    }
    fprintf(f, "naive '-': not run, its (B·h, n, n) scores would need the MiB in parentheses per buffer\n\n");
    fprintf(f, "restricted |i-j| <= r: forward ms (GFLOP/s on the visible pairs)\n%6s %16s %16s %16s\n", "n", "r=32",
            "r=64", "r=128");
    for (int i = 0; i < a->nrn; i++) {
        fprintf(f, "%6zu", a->rn[i]);
        for (int j = 0; j < NRR; j++) {
            char cell[32];
            snprintf(cell, sizeof cell, "%.1f (%.1f)", a->restricted_s[i][j] * 1e3, a->restricted_gflops[i][j]);
            fprintf(f, " %16s", cell);
        }
        fprintf(f, "\n");
    }
    if (a->full_8192_s > 0)
        fprintf(f, "full attention at n=%d: %.1f ms; restricted r=64 is %.1fx faster\n", 8192, a->full_8192_s * 1e3,
                a->full_8192_s / a->r64_8192_s);
}

const char bench_attention_usage[] = "clformer bench attention [--json] [--device D] [--quick] [--peer FILE] [--n N]";

int bench_attention(int argc, char **argv, struct bench_result *out)
{
    /* --peer FILE and --n N are ours; the rest are every bench's options */
    const char *peer = NULL;
    size_t only_n = 0; /* --n: that one length instead of the list */
    char *args[64];
    int nargs = 0;
    for (int i = 0; i < argc && nargs < 64; i++) {
        if (!strcmp(argv[i], "--peer") && i + 1 < argc)
            peer = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
            char *end;
            const unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || v < 16 || v > 65536 || argv[i][0] == '-') {
                fprintf(stderr, "clformer bench attention: --n wants a sequence length from 16 to 65536, not '%s'\n",
                        argv[i]);
                fprintf(stderr, "usage: %s\n", bench_attention_usage);
                return 2;
            }
            only_n = (size_t)v;
        } else
            args[nargs++] = argv[i];
    }
    struct bench_opts o;
    if (!bench_parse(nargs, args, &o, bench_attention_usage))
        return 2;
    struct attention_record *rec = calloc(1, sizeof *rec);
    clf_ctx_t *ctx = rec ? cli_open(o.device) : NULL;
    if (!ctx) {
        free(rec);
        return 1;
    }
    measure_device_get(ctx, &rec->dev);
    rec->peer = peer != NULL;
    const struct clf_device_info *dev = clf_ctx_device(ctx);
    clf_status st = clf_attention_tuning_get(ctx, DK, &rec->tu);
    if (st) {
        int rc = cli_fail(ctx, st, "attention tuning");
        clf_ctx_free(ctx);
        free(rec);
        return rc;
    }
    snprintf(rec->entry, sizeof rec->entry, "%s", rec->tu.entry);
    rec->tu.entry = NULL;  /* the copy above outlives the context */
    const double min_s = o.quick ? 0.2 : 0.5;
    /* --n: full attention at that length alone, and restricted at it */
    const size_t *fulls = only_n ? &only_n : full_n, *restricteds = only_n ? &only_n : restricted_n;
    const int nfull = only_n ? 1 : o.quick ? 3 : NFULL;
    /* the naive path needs two (B·h, n, n) buffers */
    size_t naive_limit = dev->max_alloc < dev->global_mem / 4 ? dev->max_alloc : dev->global_mem / 4;
    int rc = 0;
    /* warm-up: compile our kernels and CLBlast's before anything is timed */
    {
        struct attn_run r;
        struct bufs bf;
        if ((st = setup(ctx, &r, &bf, 128, true, true)) || (st = run_fwd_bwd(ctx, &r)) || (st = run_naive(ctx, &r)) ||
            (st = clf_ctx_finish(ctx)))
            rc = cli_fail(ctx, st, "attention warm-up");
        teardown(&r, &bf);
    }
    for (int i = 0; i < nfull && rc == 0; i++) {
        size_t n = fulls[i];
        size_t naive_bytes = (size_t)B * H * n * n * 4;
        bool naive = naive_bytes <= naive_limit;
        struct attn_run r;
        struct bufs bf;
        struct attn_full *x = &rec->full[i];
        *x = (struct attn_full){n, -1, -1, -1, 0, naive ? naive_bytes : 0, naive_bytes, 0};
        if ((st = setup(ctx, &r, &bf, n, true, false)) == CLF_OK) {
            x->largest_tiled = bf.largest;
            x->tf = time_it(ctx, run_fwd, &r, min_s, false);
            x->tb = time_it(ctx, run_fwd_bwd, &r, min_s, false);
        }
        teardown(&r, &bf);
        if (st == CLF_OK && naive && (st = setup(ctx, &r, &bf, n, false, true)) == CLF_OK)
            x->tn = time_it(ctx, run_naive, &r, min_s, true);
        teardown(&r, &bf);
        if (st != CLF_OK || x->tf < 0 || x->tb < 0) {
            rc = cli_fail(ctx, st ? st : CLF_ERR_OPENCL, "attention");
            break;
        }
        x->peer_s = peer_seconds(peer, n);
        rec->nfull++;
    }

    /* restricted attention: |i - j| <= r, linear in n */
    const int nrn = only_n ? 1 : o.quick ? 2 : NRN;
    for (int i = 0; i < nrn && rc == 0; i++) {
        size_t n = restricteds[i];
        struct attn_run r;
        struct bufs bf;
        if ((st = setup(ctx, &r, &bf, n, false, false))) {
            teardown(&r, &bf);
            rc = cli_fail(ctx, st, "restricted attention");
            break;
        }
        for (int j = 0; j < NRR; j++) {
            int w = restricted_r[j];
            r.d.window = w;
            double t = time_it(ctx, run_fwd, &r, min_s, false);
            double pairs = 0;
            for (size_t q = 0; q < n; q++) /* visible keys of row q */
                pairs += (double)((q + w < n - 1 ? q + w : n - 1) - (q > (size_t)w ? q - w : 0) + 1);
            rec->restricted_s[i][j] = t;
            rec->restricted_gflops[i][j] = gf(4.0 * B * H * pairs * DK, t);
        }
        rec->rn[i] = n;
        rec->nrn++;
        /* full attention at the largest n once, for the speed-up */
        if (n == 8192 && rec->restricted_s[i][1] > 0) {
            r.d.window = -1;
            rec->full_8192_s = time_it(ctx, run_fwd, &r, min_s, false);
            rec->r64_8192_s = rec->restricted_s[i][1];
        }
        teardown(&r, &bf);
    }
    clf_ctx_free(ctx);
    if (rc) {
        free(rec);
        return rc;
    }
    *out = (struct bench_result){rec, attention_json, attention_table};
    return 0;
}
