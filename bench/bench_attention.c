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
    struct clf_attn_layout q, k, v, o, g, dq, dk, dv;
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
 * compiled by the warm-up), else bench_time's median. warm: one more run
 * first (CLBlast compiles a kernel per size class, in every process). */
static double time_it(clf_ctx_t *ctx, clf_status (*fn)(clf_ctx_t *, void *), void *arg, double min_s, bool warm)
{
    if (warm && (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK))
        return -1;
    double t0 = cli_now();
    if (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK)
        return -1;
    double t = cli_now() - t0;
    if (t > 1.0)
        return t;
    return bench_time(ctx, fn, arg, min_s);
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
    struct clf_attn_layout *ls[8] = {&r->q, &r->k, &r->v, &r->o, &r->g, &r->dq, &r->dk, &r->dv};
    for (int i = 0; i < nb; i++)
        *ls[i] = (struct clf_attn_layout){bf->t[i].buf, 0, (size_t)H * n * DK, n * DK, DK};
    if ((st = clf_tensor_init(ctx, &r->lse, 1, &rows)))
        return st;
    if (backward && (st = clf_attention_workspace_init(ctx, &r->ws, B, H, n)))
        return st;
    if (naive) {
        if ((st = clf_attention_naive_workspace_init(ctx, &r->nws, B, H, n, n)))
            return st;
        bf->largest = r->nws.cap * 4;
    }
    r->d = (struct clf_attention_desc){B, H, n, n, DK, NULL, false, -1, 0, 0.0f};
    return CLF_OK;
}

static void teardown(struct attn_run *r, struct bufs *bf)
{
    clf_tensor_free(&r->lse);
    clf_attention_workspace_free(&r->ws);
    clf_attention_naive_workspace_free(&r->nws);
    bufs_free(bf);
}

/* The peer's forward seconds at n from torch_peer.py's JSON lines, or 0. */
static double peer_seconds(const char *file, size_t n)
{
    if (!file)
        return 0;
    FILE *f = fopen(file, "r");
    if (!f)
        return 0;
    char line[1024];
    double best = 0;
    while (fgets(line, sizeof line, f)) {
        const char *pn = strstr(line, "\"n\": "), *ps = strstr(line, "\"s\": ");
        if (!strstr(line, "attention_fwd") || !pn || !ps || !strstr(line, "\"b\": 8") || !strstr(line, "\"h\": 8") ||
            !strstr(line, "\"dk\": 64"))
            continue;
        if ((size_t)strtoul(pn + 5, NULL, 10) == n)
            best = strtod(ps + 5, NULL);
    }
    fclose(f);
    return best;
}

static double gf(double flops, double t) { return t > 0 ? flops / t * 1e-9 : 0; }

int bench_attention(int argc, char **argv)
{
    /* --peer FILE is ours; the rest are every bench's options */
    const char *peer = NULL;
    char *args[64];
    int nargs = 0;
    for (int i = 0; i < argc && nargs < 64; i++) {
        if (!strcmp(argv[i], "--peer") && i + 1 < argc)
            peer = argv[++i];
        else
            args[nargs++] = argv[i];
    }
    struct bench_opts o;
    if (!bench_parse(nargs, args, &o, "clformer bench attention [--json] [--device D] [--quick] [--peer FILE]"))
        return 2;
    clf_ctx_t *ctx = cli_open(o.device);
    if (!ctx)
        return 1;
    const struct clf_device_info *dev = clf_ctx_device(ctx);
    struct clf_attention_tuning tu;
    clf_status st = clf_attention_tuning_get(ctx, DK, &tu);
    if (st) {
        int rc = cli_fail(ctx, st, "attention tuning");
        clf_ctx_free(ctx);
        return rc;
    }
    const double min_s = o.quick ? 0.2 : 0.5;
    static const size_t full_n[] = {128, 256, 512, 1024, 2048, 4096};
    const int nfull = o.quick ? 3 : 6;
    /* the naive path needs two (B·h, n, n) buffers */
    size_t naive_limit = dev->max_alloc < dev->global_mem / 4 ? dev->max_alloc : dev->global_mem / 4;
    int rc = 0;
    if (o.json) {
        printf("{\"bench\": \"attention\", ");
        bench_json_device(stdout, ctx);
        printf("\"tuning\": {\"entry\": \"%s\", \"tuned\": %s, \"tile_q\": %zu, \"tile_k\": %zu, \"lanes\": %zu}, "
               "\"results\": [",
               tu.entry, tu.tuned ? "true" : "false", tu.tile_q, tu.tile_k, tu.lanes);
    } else {
        printf("attention on %s (%s), B=%d h=%d d_k=%d; tiles TILE_Q=%zu TILE_K=%zu LANES=%zu from entry '%s'%s\n",
               dev->device_name, dev->platform_name, B, H, DK, tu.tile_q, tu.tile_k, tu.lanes, tu.entry,
               tu.tuned ? "" : " (untuned: generic parameters)");
        printf("GFLOP/s = 4·B·h·n²·d_k / forward time (fwd+bwd: 2.5× that many flops)\n");
        printf("%6s %10s %8s %10s %8s %10s %8s %10s %8s %7s\n", "n", "tiled fwd", "GFLOP/s", "fwd+bwd", "GFLOP/s",
               "naive fwd", "GFLOP/s", "largest", "naive", peer ? "peer" : "");
        printf("%6s %10s %8s %10s %8s %10s %8s %10s %8s %7s\n", "", "ms", "", "ms", "", "ms", "", "MiB", "MiB",
               peer ? "ratio" : "");
    }
    /* warm-up: compile our kernels and CLBlast's before anything is timed */
    {
        struct attn_run r;
        struct bufs bf;
        if ((st = setup(ctx, &r, &bf, 128, true, true)) || (st = run_fwd_bwd(ctx, &r)) || (st = run_naive(ctx, &r)) ||
            (st = clf_ctx_finish(ctx)))
            rc = cli_fail(ctx, st, "attention warm-up");
        teardown(&r, &bf);
    }
    bool first = true;
    for (int i = 0; i < nfull && rc == 0; i++) {
        size_t n = full_n[i];
        double flops = 4.0 * B * H * (double)n * n * DK;
        size_t naive_bytes = (size_t)B * H * n * n * 4;
        bool naive = naive_bytes <= naive_limit;
        struct attn_run r;
        struct bufs bf;
        double tf = -1, tb = -1, tn = -1;
        size_t largest_tiled = 0, largest_naive = naive ? naive_bytes : 0;
        if ((st = setup(ctx, &r, &bf, n, true, false)) == CLF_OK) {
            largest_tiled = bf.largest;
            tf = time_it(ctx, run_fwd, &r, min_s, false);
            tb = time_it(ctx, run_fwd_bwd, &r, min_s, false);
        }
        teardown(&r, &bf);
        if (st == CLF_OK && naive && (st = setup(ctx, &r, &bf, n, false, true)) == CLF_OK)
            tn = time_it(ctx, run_naive, &r, min_s, true);
        teardown(&r, &bf);
        if (st != CLF_OK || tf < 0 || tb < 0) {
            rc = cli_fail(ctx, st ? st : CLF_ERR_OPENCL, "attention");
            break;
        }
        double ps = peer_seconds(peer, n);
        if (o.json) {
            printf("%s{\"kind\": \"full\", \"n\": %zu, \"tiled_fwd_s\": %.6g, \"tiled_fwd_gflops\": %.2f, "
                   "\"tiled_fwd_bwd_s\": %.6g, \"largest_buffer_bytes\": %zu",
                   first ? "" : ", ", n, tf, gf(flops, tf), tb, largest_tiled);
            if (tn >= 0)
                printf(", \"naive_fwd_s\": %.6g, \"naive_fwd_gflops\": %.2f, \"naive_largest_buffer_bytes\": %zu", tn,
                       gf(flops, tn), largest_naive);
            else
                printf(", \"naive\": \"skipped: scores need %zu bytes per buffer\"", naive_bytes);
            if (ps > 0)
                printf(", \"peer_s\": %.6g, \"peer_ratio\": %.3f", ps, ps / tf);
            printf("}");
        } else {
            char nb[32], nt[32], nm[32], pr[32] = "";
            if (tn >= 0) {
                snprintf(nb, sizeof nb, "%.1f", tn * 1e3);
                snprintf(nt, sizeof nt, "%.1f", gf(flops, tn));
                snprintf(nm, sizeof nm, "%.0f", largest_naive / 1048576.0);
            } else {
                snprintf(nb, sizeof nb, "-");
                snprintf(nt, sizeof nt, "-");
                snprintf(nm, sizeof nm, "(%.0f)", naive_bytes / 1048576.0);
            }
            if (ps > 0)
                snprintf(pr, sizeof pr, "%.2fx", ps / tf);
            printf("%6zu %10.1f %8.1f %10.1f %8.1f %10s %8s %10.1f %8s %7s\n", n, tf * 1e3, gf(flops, tf), tb * 1e3,
                   gf(2.5 * flops, tb), nb, nt, largest_tiled / 1048576.0, nm, pr);
        }
        fflush(stdout);
        first = false;
    }
    if (!o.json && rc == 0)
        printf("naive '-': not run, its (B·h, n, n) scores would need the MiB in parentheses per buffer\n\n");

    /* restricted attention: |i - j| <= r, linear in n */
    static const size_t rn[] = {1024, 2048, 4096, 8192};
    static const int rr[] = {32, 64, 128};
    const int nrn = o.quick ? 2 : 4;
    if (!o.json && rc == 0)
        printf("restricted |i-j| <= r: forward ms (GFLOP/s on the visible pairs)\n%6s %16s %16s %16s\n", "n", "r=32",
               "r=64", "r=128");
    double t64_8192 = 0;
    for (int i = 0; i < nrn && rc == 0; i++) {
        size_t n = rn[i];
        struct attn_run r;
        struct bufs bf;
        if ((st = setup(ctx, &r, &bf, n, false, false))) {
            teardown(&r, &bf);
            rc = cli_fail(ctx, st, "restricted attention");
            break;
        }
        if (!o.json)
            printf("%6zu", n);
        for (int j = 0; j < 3; j++) {
            r.d.window = rr[j];
            double t = time_it(ctx, run_fwd, &r, min_s, false);
            double pairs = 0;
            for (size_t q = 0; q < n; q++) /* visible keys of row q */
                pairs += (double)((q + rr[j] < n - 1 ? q + rr[j] : n - 1) - (q > (size_t)rr[j] ? q - rr[j] : 0) + 1);
            double fl = 4.0 * B * H * pairs * DK;
            if (n == 8192 && rr[j] == 64)
                t64_8192 = t;
            if (o.json)
                printf("%s{\"kind\": \"restricted\", \"n\": %zu, \"r\": %d, \"fwd_s\": %.6g, \"gflops\": %.2f}",
                       first ? "" : ", ", n, rr[j], t, gf(fl, t));
            else {
                char cell[32];
                snprintf(cell, sizeof cell, "%.1f (%.1f)", t * 1e3, gf(fl, t));
                printf(" %16s", cell);
            }
            first = false;
        }
        if (!o.json)
            printf("\n");
        fflush(stdout);
        /* full attention at the largest n once, for the speed-up */
        if (n == 8192 && t64_8192 > 0) {
            r.d.window = -1;
            double t = time_it(ctx, run_fwd, &r, min_s, false);
            if (o.json)
                printf(", {\"kind\": \"full\", \"n\": %zu, \"fwd_s\": %.6g, \"restricted_r64_speedup\": %.2f}", n, t,
                       t / t64_8192);
            else
                printf("full attention at n=%zu: %.1f ms; restricted r=64 is %.1fx faster\n", n, t * 1e3, t / t64_8192);
        }
        teardown(&r, &bf);
    }
    if (o.json)
        printf("]}\n");
    clf_ctx_free(ctx);
    return rc;
}
