/* cmd_compare_attention.c: `clformer compare-attention`: the paper's Table 1
 * trade-off between full self-attention (O(n²·d) per layer, path length 1)
 * and self-attention restricted to a radius r (O(r·n·d), path length n/r)
 * on the chosen device.
 *   cost     one self-attention layer (clf_mha, the preset's d_model and
 *            heads, batch B) forward and forward+backward for each n and
 *            variant; the growth exponent of time in n (least squares on
 *            log-log over the upper half of the lengths) and the crossover
 *            n from which restricting pays; the device memory the layer
 *            needs (computed from the buffers it allocates).
 *   reach    the input positions one output depends on after L layers,
 *            measured through the encoder's (decoder's) backward
 *            (reach_measure, tools/reach.c), next to min(n, 1 + 2·L·r).
 *   quality  (--quality) Multi30k full vs restricted at the same budget, and
 *            a synthetic reversal task (tools/compare_quality.c).
 * Output (tools/compare_report.c): a table, --json FILE, --plot FILE.svg
 * (time vs n, log-log). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "compare.h"
#include "measure.h"
#include "reach.h"


static void usage(FILE *f)
{
    fprintf(f,
            "usage: clformer compare-attention [options]\n"
            "  a study, not part of translating: full against restricted self-attention's cost,\n"
            "  the positions an output can reach, and what each trains to (docs/compare-attention.md)\n"
            "  --quick                  seconds: short lengths, short timings (default: the full study, minutes)\n"
            "  --preset NAME            d_model and heads of the layer and the reach model (default small)\n"
            "  --batch B                sequences per timed call (default 1)\n"
            "  --lengths N,N,...        sequence lengths (default 64,128,...,8192; quick 64..512)\n"
            "  --windows R,R,...        restricted radii (default 16,32,64,128)\n"
            "  --max-seconds S          stop growing n for a variant once fwd+bwd takes longer (default 30; quick 2)\n"
            "  --reach-length N         sequence length of the reach study (default 256; quick 64)\n"
            "  --max-layers L           reach for 1..L layers (default 3)\n"
            "  --quality                also train full vs restricted (Multi30k and the synthetic task)\n"
            "  --mt-steps N | --mt-minutes M   Multi30k budget per model (default 2 minutes; quick 10 steps)\n"
            "  --mt-window R            restricted encoder radius trained on Multi30k (default 2)\n"
            "  --mt-preset NAME         model trained on Multi30k (default tiny: a CPU trains small at ~70 tokens/s;\n"
            "                           on a GPU try --mt-preset small --mt-minutes 30)\n"
            "  --mt-vocab N             BPE pieces for Multi30k (default 4000; quick 1000)\n"
            "  --mt-val N               validate on the first N pairs of Multi30k val (default all 1014; quick 100)\n"
            "  --skip-mt --skip-synthetic   leave out one half of --quality\n"
            "  --syn-lengths N,...      synthetic task lengths (default 5,9,17; quick 3,8)\n"
            "  --syn-windows R,...      their restricted radii (default 2; quick 1)\n"
            "  --syn-layers L --syn-steps N   their model depth (2) and updates (default 300; quick 200)\n"
            "  --out DIR                where training runs go (default runs/compare-attention)\n"
            "  --json FILE --plot FILE.svg --device D --quiet\n");
}

static int parse_list(const char *s, size_t *out, int max)
{
    int n = 0;
    char *end;
    while (*s && n < max) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1)
            return -1;
        out[n++] = (size_t)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

static int parse_ints(const char *s, int *out, int max)
{
    size_t tmp[CMP_MAX_LIST];
    int n = parse_list(s, tmp, max < CMP_MAX_LIST ? max : CMP_MAX_LIST);
    for (int i = 0; i < n; i++)
        out[i] = (int)tmp[i];
    return n;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static bool parse(int argc, char **argv, struct cmp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->preset = "small";
    o->batch = 1;
    o->max_layers = 3;
    o->out = "runs/compare-attention";
    o->syn_layers = 2;
    o->mt_window = 2;
    const char *lengths = NULL, *windows = NULL, *syn_lengths = NULL, *syn_windows = NULL;
    long batch = 1, reach = 0, steps = -1, syn_steps = -1, mt_val = -1;
    double max_s = -1;
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--quick")) o->quick = true;
        else if (!strcmp(argv[i], "--quality")) o->quality = true;
        else if (!strcmp(argv[i], "--skip-mt")) o->skip_mt = true;
        else if (!strcmp(argv[i], "--skip-synthetic")) o->skip_syn = true;
        else if (!strcmp(argv[i], "--quiet")) o->quiet = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); exit(0); }
        else if (cli_opt(argc, argv, &i, "--preset", &o->preset, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--mt-preset", &o->mt_preset, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--device", &o->device, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--json", &o->json, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--plot", &o->plot, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--out", &o->out, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--lengths", &lengths, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--windows", &windows, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--syn-lengths", &syn_lengths, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--syn-windows", &syn_windows, &bad)) {}
        else if (cli_opt(argc, argv, &i, "--batch", &v, &bad)) { if (v) batch = atol(v); }
        else if (cli_opt(argc, argv, &i, "--reach-length", &v, &bad)) { if (v) reach = atol(v); }
        else if (cli_opt(argc, argv, &i, "--max-layers", &v, &bad)) { if (v) o->max_layers = atoi(v); }
        else if (cli_opt(argc, argv, &i, "--max-seconds", &v, &bad)) { if (v) max_s = atof(v); }
        else if (cli_opt(argc, argv, &i, "--mt-steps", &v, &bad)) { if (v) steps = atol(v); }
        else if (cli_opt(argc, argv, &i, "--mt-minutes", &v, &bad)) { if (v) o->mt_minutes = atof(v); }
        else if (cli_opt(argc, argv, &i, "--mt-window", &v, &bad)) { if (v) o->mt_window = atoi(v); }
        else if (cli_opt(argc, argv, &i, "--mt-val", &v, &bad)) { if (v) mt_val = atol(v); }
        else if (cli_opt(argc, argv, &i, "--mt-vocab", &v, &bad)) { if (v) o->mt_vocab = atoi(v); }
        else if (cli_opt(argc, argv, &i, "--syn-layers", &v, &bad)) { if (v) o->syn_layers = atoi(v); }
        else if (cli_opt(argc, argv, &i, "--syn-steps", &v, &bad)) { if (v) syn_steps = atol(v); }
        else { fprintf(stderr, "clformer compare-attention: unknown option '%s'\n", argv[i]); bad = true; }
    }
    if (bad)
        goto usage_error;
    o->batch = (size_t)(batch > 0 ? batch : 0);
    o->reach_len = reach > 0 ? (size_t)reach : o->quick ? 64 : 256;
    o->max_seconds = max_s > 0 ? max_s : o->quick ? 2 : 30;
    /* sized for a CPU: a quick run in about a minute, the full study in minutes */
    o->mt_steps = steps >= 0 ? steps : 10;
    if (!o->quick && steps < 0 && o->mt_minutes == 0)
        o->mt_minutes = 2;
    o->syn_steps = syn_steps >= 0 ? syn_steps : o->quick ? 200 : 300;
    if (!o->mt_vocab)
        o->mt_vocab = o->quick ? 1000 : 4000;
    o->mt_val = mt_val >= 0 ? (size_t)mt_val : o->quick ? 100 : 0;
    if (!o->mt_preset)
        o->mt_preset = "tiny";
    static const size_t def_len[] = {64, 128, 256, 512, 1024, 2048, 4096, 8192};
    if (lengths) {
        int n = parse_list(lengths, o->lengths, CMP_MAX_LIST);
        if (n < 2) {
            fprintf(stderr, "clformer compare-attention: --lengths wants at least two positive integers\n");
            goto usage_error;
        }
        o->nlengths = (size_t)n;
    } else {
        o->nlengths = o->quick ? 4 : 8;
        memcpy(o->lengths, def_len, o->nlengths * sizeof def_len[0]);
    }
    qsort(o->lengths, o->nlengths, sizeof o->lengths[0], cmp_size);
    if (windows) {
        if ((o->nwindows = parse_ints(windows, o->windows, CMP_MAX_LIST)) < 1) {
            fprintf(stderr, "clformer compare-attention: --windows wants positive integers\n");
            goto usage_error;
        }
    } else {
        static const int w[] = {16, 32, 64, 128};
        memcpy(o->windows, w, sizeof w);
        o->nwindows = 4;
    }
    if (syn_lengths) {
        int n = parse_list(syn_lengths, o->syn_lengths, CMP_MAX_LIST);
        if (n < 1) {
            fprintf(stderr, "clformer compare-attention: --syn-lengths wants positive integers\n");
            goto usage_error;
        }
        o->nsyn = (size_t)n;
    } else {
        static const size_t q[] = {3, 8}, f[] = {5, 9, 17};
        o->nsyn = o->quick ? 2 : 3;
        memcpy(o->syn_lengths, o->quick ? q : f, o->nsyn * sizeof q[0]);
    }
    if (syn_windows) {
        if ((o->nsyn_windows = parse_ints(syn_windows, o->syn_windows, CMP_MAX_LIST)) < 1) {
            fprintf(stderr, "clformer compare-attention: --syn-windows wants positive integers\n");
            goto usage_error;
        }
    } else {
        o->syn_windows[0] = o->quick ? 1 : 2;
        o->nsyn_windows = 1;
    }
    if (!o->batch || o->max_layers < 1 || o->max_layers > 16 || o->mt_window < 0 || o->syn_layers < 1 ||
        o->syn_steps < 1 || o->mt_vocab < 300 || o->mt_steps < 0 || o->mt_minutes < 0) {
        fprintf(stderr, "clformer compare-attention: --batch, --max-layers (1..16), --syn-layers, --syn-steps must "
                        "be positive, --mt-vocab at least 300; --mt-window, --mt-steps, --mt-minutes not negative\n");
        goto usage_error;
    }
    return true;
usage_error:
    usage(stderr);
    return false;
}

/* ---------------------------------------------------------------- cost */

struct layer_run {
    struct clf_mha_params p, g;
    struct clf_mha_workspace ws;
    struct clf_mha_desc d;
    clf_tensor x, y, dy, dx;
    clf_status st;  /* of the last timed call */
};

static clf_status run_fwd(clf_ctx_t *ctx, void *arg)
{
    struct layer_run *r = arg;
    return r->st = clf_mha_forward(ctx, &r->y, &r->ws, &r->x, NULL, &r->p, &r->d);
}

static clf_status run_both(clf_ctx_t *ctx, void *arg)
{
    struct layer_run *r = arg;
    clf_status st = run_fwd(ctx, arg);
    return st ? st : (r->st = clf_mha_backward(ctx, &r->dx, NULL, &r->g, &r->dy, &r->x, NULL, &r->ws, &r->p, &r->d));
}

/* One timed quantity: a run over a second is measured once (after a warm-up
 * that compiles the kernels), else measure_time's median. */
static double time_it(clf_ctx_t *ctx, clf_status (*fn)(clf_ctx_t *, void *), void *arg, double min_s)
{
    if (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK)
        return -1;
    double t0 = clf_now();
    if (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK)
        return -1;
    double t = clf_now() - t0;
    return t > 0.5 ? t : measure_time(ctx, fn, arg, min_s);
}

static void layer_free(struct layer_run *r)
{
    clf_tensor *ts[] = {&r->p.w_in, &r->p.b_in, &r->p.w_out, &r->p.b_out, &r->g.w_in, &r->g.b_in, &r->g.w_out,
                        &r->g.b_out, &r->x, &r->y, &r->dy, &r->dx};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clf_tensor_free(ts[i]);
    if (r->ws.cap_q)
        clf_mha_workspace_free(&r->ws);
}

static clf_status upload_random(clf_ctx_t *ctx, clf_tensor *t, size_t rows_, size_t cols, float scale, unsigned *s)
{
    size_t shape[2] = {rows_, cols}, n = rows_ * (cols ? cols : 1);
    float *h = malloc(n * sizeof *h);
    if (!h)
        return CLF_ERR_MEMORY;
    for (size_t i = 0; i < n; i++)
        h[i] = scale * (clf_uniform(s) * 2 - 1);
    clf_status st = clf_tensor_init(ctx, t, cols ? 2 : 1, shape);
    if (st == CLF_OK)
        st = clf_tensor_upload(ctx, t, h);
    free(h);
    return st;
}

/* The layer's buffers at batch B and length n; sizes in bytes. */
static clf_status layer_setup(clf_ctx_t *ctx, struct layer_run *r, size_t B, size_t n, size_t d, size_t h,
                              size_t *largest, size_t *total)
{
    memset(r, 0, sizeof *r);
    unsigned s = 4242;
    clf_status st;
    const float ws = 1.0f / sqrtf((float)d);
    if ((st = upload_random(ctx, &r->p.w_in, d, 3 * d, ws, &s)) || (st = upload_random(ctx, &r->p.b_in, 3 * d, 0, 0.1f, &s)) ||
        (st = upload_random(ctx, &r->p.w_out, d, d, ws, &s)) || (st = upload_random(ctx, &r->p.b_out, d, 0, 0.1f, &s)) ||
        (st = upload_random(ctx, &r->g.w_in, d, 3 * d, 0, &s)) || (st = upload_random(ctx, &r->g.b_in, 3 * d, 0, 0, &s)) ||
        (st = upload_random(ctx, &r->g.w_out, d, d, 0, &s)) || (st = upload_random(ctx, &r->g.b_out, d, 0, 0, &s)) ||
        (st = upload_random(ctx, &r->x, B * n, d, 1.0f, &s)) || (st = upload_random(ctx, &r->y, B * n, d, 0, &s)) ||
        (st = upload_random(ctx, &r->dy, B * n, d, 1.0f, &s)) || (st = upload_random(ctx, &r->dx, B * n, d, 0, &s)))
        return st;
    r->d = (struct clf_mha_desc){
        .batch = B, .heads = h, .d_model = d, .len_q = n, .len_kv = n, .window = -1, .self = true};
    if ((st = clf_mha_workspace_init(ctx, &r->ws, &r->d)))
        return st;
    /* what this layer allocated: parameters and gradients, x y dy dx, and
     * the workspace (qkv, dqkv 3·B·n·d; attn, dattn B·n·d; lse, delta B·h·n) */
    size_t f = 4, bnd = B * n * d, bhn = B * h * n;
    *total = f * (2 * (4 * d * d + 4 * d) + 4 * bnd + 2 * 3 * bnd + 2 * bnd + 2 * bhn);
    *largest = f * (3 * bnd > 3 * d * d ? 3 * bnd : 3 * d * d);
    return CLF_OK;
}

/* The upper half of the lengths, at least two of them. */

static double fit_slope(const size_t *n, const double *t, size_t count, size_t from)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (size_t i = from; i < count; i++) {
        if (!(t[i] > 0))
            continue;
        double x = log((double)n[i]), y = log(t[i]);
        sx += x, sy += y, sxx += x * x, sxy += x * y;
        k++;
    }
    if (k < 2)
        return NAN;
    double den = k * sxx - sx * sx;
    return den > 0 ? (k * sxy - sx * sy) / den : NAN;
}

static void progress(const struct cmp_opts *o, const char *fmt, const char *what, size_t i, size_t total)
{
    if (o->quiet)
        return;
    const bool tty = isatty(2);
    fprintf(stderr, "%s[%3zu%%] ", tty ? "\r" : "", total ? 100 * i / total : 100);
    fprintf(stderr, fmt, what);
    fprintf(stderr, tty ? "%-20s" : "%s\n", "");
    if (i == total && tty)
        fputc('\n', stderr);
}

static int measure_cost(clf_ctx_t *ctx, const struct cmp_opts *o, const struct clf_model_config *c, struct cost *r)
{
    const size_t d = (size_t)c->d_model, h = (size_t)c->heads, nl = o->nlengths;
    const int nv = 1 + o->nwindows;
    const double min_s = o->quick ? 0.05 : 0.3;
    bool stopped[NV] = {false};
    for (int v = 0; v < nv; v++)
        for (size_t i = 0; i < nl; i++)
            r->fwd[v][i] = r->both[v][i] = -1;
    size_t steps = 0, total = nl * (size_t)nv;
    for (size_t i = 0; i < nl; i++) {
        size_t n = o->lengths[i];
        struct layer_run run;
        clf_status st = layer_setup(ctx, &run, o->batch, n, d, h, &r->largest[i], &r->total[i]);
        r->naive_scores[i] = 2.0 * 4.0 * (double)o->batch * (double)h * (double)n * (double)n;
        if (st != CLF_OK) {
            layer_free(&run);
            char what[64];
            snprintf(what, sizeof what, "setting up a layer at n=%zu", n);
            return cli_fail(ctx, st, what);
        }
        for (int v = 0; v < nv; v++, steps++) {
            char what[96];
            if (v)
                snprintf(what, sizeof what, "cost: n=%zu r=%d", n, o->windows[v - 1]);
            else
                snprintf(what, sizeof what, "cost: n=%zu full", n);
            progress(o, "%s", what, steps, total);
            if (stopped[v])
                continue;
            run.d.window = v ? o->windows[v - 1] : -1;
            r->fwd[v][i] = time_it(ctx, run_fwd, &run, min_s);
            r->both[v][i] = r->fwd[v][i] < 0 ? -1 : time_it(ctx, run_both, &run, min_s);
            if (r->fwd[v][i] < 0 || r->both[v][i] < 0) {
                layer_free(&run);
                return cli_fail(ctx, run.st ? run.st : CLF_ERR_OPENCL, what);
            }
            /* the next n takes about 2× (restricted) to 4× (full) longer */
            stopped[v] = r->both[v][i] * (v ? 2 : 4) > o->max_seconds;
        }
        layer_free(&run);
    }
    progress(o, "%s", "cost: done", total, total);
    for (int v = 0; v < nv; v++) {
        r->slope_fwd[v] = fit_slope(o->lengths, r->fwd[v], nl, cmp_fit_from(nl));
        r->slope_both[v] = fit_slope(o->lengths, r->both[v], nl, cmp_fit_from(nl));
        if (!v)
            continue;
        /* crossover: the smallest n from which on (every n measured for
         * both) restricting is at least 10% faster forward+backward. With
         * n <= r + 1 the masks hide nothing and the work is full attention's
         * (bit for bit: tests/test_compare_attention.c), so a difference
         * there is noise: it never counts as paying, and its ratio is 1. */
        r->cross[v] = 0;
        r->cross_interp[v] = NAN;
        for (size_t i = nl; i-- > 0;) {
            if (!(r->both[0][i] > 0 && r->both[v][i] > 0))
                continue;
            const bool same = o->lengths[i] <= (size_t)o->windows[v - 1] + 1;
            if (!same && r->both[v][i] < 0.9 * r->both[0][i]) {
                r->cross[v] = o->lengths[i];
                continue;
            }
            /* the grid point below the crossover: interpolate the ratio on log n */
            if (r->cross[v]) {
                size_t j = i + 1;
                while (j < nl && o->lengths[j] != r->cross[v])
                    j++;
                double a = same ? 1.0 : r->both[v][i] / r->both[0][i], b = r->both[v][j] / r->both[0][j];
                double la = log((double)o->lengths[i]), lb = log((double)o->lengths[j]);
                r->cross_interp[v] = a != b ? exp(la + (0.9 - a) / (b - a) * (lb - la)) : (double)r->cross[v];
            }
            break;
        }
    }
    return 0;
}

/* --------------------------------------------------------------- reach */

static int measure_reach(clf_ctx_t *ctx, const struct cmp_opts *o, const struct clf_model_config *base,
                         struct reach_row *rows_, size_t *nrows)
{
    const size_t n = o->reach_len;
    size_t k = 0, total = (size_t)o->max_layers * (1 + (size_t)o->nwindows);
    for (int L = 1; L <= o->max_layers; L++)
        for (int v = 0; v <= o->nwindows; v++, k++) {
            int r = v ? o->windows[v - 1] : -1;
            char what[64];
            if (v)
                snprintf(what, sizeof what, "reach: L=%d r=%d", L, r);
            else
                snprintf(what, sizeof what, "reach: L=%d full", L);
            progress(o, "%s", what, k, total);
            struct clf_model_config c = *base;
            c.enc_layers = c.dec_layers = L;
            c.enc_window = c.dec_window = r;
            c.max_len = (int)n;
            c.dropout = 0;
            clf_model_t *m = NULL;
            struct reach e, dr;
            clf_status st = clf_model_init(ctx, &m, &c, 1);
            if (st == CLF_OK)
                st = reach_measure(ctx, m, CLF_SIDE_ENCODER, n, n / 2, &e);
            if (st == CLF_OK)
                st = reach_measure(ctx, m, CLF_SIDE_DECODER, n, n - 1, &dr);
            clf_model_free(m);
            if (st != CLF_OK)
                return cli_fail(ctx, st, what);
            rows_[k] = (struct reach_row){L, r, e.count, reach_formula(CLF_SIDE_ENCODER, n, n / 2, L, r),
                                          dr.count, reach_formula(CLF_SIDE_DECODER, n, n - 1, L, r)};
        }
    progress(o, "%s", "reach: done", total, total);
    *nrows = k;
    return 0;
}

int clf_cmd_compare_attention(int argc, char **argv)
{
    struct cmp_opts o;
    if (!parse(argc, argv, &o))
        return 2;
    struct clf_model_config c;
    clf_status st = clf_model_config_preset(&c, o.preset);
    if (st != CLF_OK)
        return cli_fail(NULL, st, "--preset");
    clf_ctx_t *ctx = cli_open(o.device);
    if (!ctx)
        return 1;
    int rc = 1;
    struct cost *cost = calloc(1, sizeof *cost);
    struct reach_row *rr = calloc((size_t)o.max_layers * (1 + (size_t)o.nwindows), sizeof *rr);
    struct cmp_syn_result *syn = NULL;
    struct cmp_mt_result mt[2];
    size_t nrr = 0, nsyn = 0;
    bool have_mt = false;
    if (!cost || !rr) {
        fprintf(stderr, "clformer compare-attention: out of host memory\n");
        goto done;
    }
    if (measure_cost(ctx, &o, &c, cost) || measure_reach(ctx, &o, &c, rr, &nrr))
        goto done;
    if (o.quality) {
        nsyn = 2 * o.nsyn * (1 + (size_t)o.nsyn_windows);
        if (!(syn = calloc(nsyn + 1, sizeof *syn))) {
            fprintf(stderr, "clformer compare-attention: out of host memory\n");
            goto done;
        }
        if (o.skip_syn)
            nsyn = 0;
        else if (cmp_quality_synthetic(ctx, &o, syn))
            goto done;
        if (!o.skip_mt) {
            if (cmp_quality_mt(ctx, &o, mt))
                goto done;
            have_mt = true;
        }
    }
    cmp_print_tables(ctx, &o, &c, cost, rr, nrr);
    if (o.quality)
        cmp_print_quality(&o, have_mt ? mt : NULL, nsyn ? syn : NULL, nsyn);
    rc = 0;
    if (o.json && cmp_write_json(ctx, &o, &c, cost, rr, nrr, have_mt ? mt : NULL, nsyn ? syn : NULL, nsyn))
        rc = 1;
    if (o.plot && cmp_write_plot(&o, cost))
        rc = 1;
    if (!o.quiet && rc == 0 && (o.json || o.plot))
        fprintf(stderr, "wrote%s%s%s%s\n", o.json ? " " : "", o.json ? o.json : "", o.plot ? " " : "",
                o.plot ? o.plot : "");
done:
    free(cost);
    free(rr);
    free(syn);
    clf_ctx_free(ctx);
    return rc;
}
