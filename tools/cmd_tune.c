/* cmd_tune.c: `clformer tune`: searches CLBlast's SGEMM kernel parameters
 * for one device on the shapes the model presets use, and keeps the best in
 * the device's tuning file, which every later context applies.
 *
 * Shapes, of the small preset (d = 256, V = 8000) on T tokens (default 2560,
 * the 128×20 batch of `bench train`): T×d×d, T×3d×d, T×4d×d, T×d×4d, T×V×d
 * with B transposed (the output embedding), d×4d×T with A transposed (a
 * weight gradient), 32×d×d (a decoding step), and 1024³. Every candidate's
 * result is checked against OpenBLAS before it is timed; one that fails to
 * compile, fails to run or disagrees is skipped. The search runs in three parts: the
 * indirect kernel (Xgemm, forced for every shape), the direct kernel
 * (XgemmDirect, forced likewise), then the size that switches between the
 * two, picked from the figures measured. Each part starts from what was
 * in force (the tuning file's and the table's parameters) and known seeds,
 * then samples at random and mutates the best so far. Before GEMM, a short
 * fixed search of clformer's own kernels (tune_kernels.c): the attention
 * tiles and the row-wise ops' work-group size, kept in the same file. */
#include <cblas.h>
#include <clblast_c.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "tune_kernels.h"

#define MAX_SHAPES 10
#define MAX_CAND 4096

struct tshape {
    char name[40];
    size_t m, n, k;
    bool ta, tb;
    float *a, *b, *ref, *out;
    clf_tensor da, db, dc;
    double flops;
    double t_before, t_ref;  /* seconds */
};

enum kind { INDIRECT, DIRECT };

/* A fully measured candidate: its seconds on every shape. */
struct cand {
    struct clf_gemm_params p;
    double t[MAX_SHAPES];
};

struct tuner {
    clf_ctx_t *ctx;
    struct tshape s[MAX_SHAPES];
    int ns;
    double deadline, start;
    unsigned tried, failed, pruned;
    struct cand *done[2];
    int ndone[2];
    uint64_t *seen;
    int nseen;
    struct clf_gemm_params base;  /* the other kernel's parameters while one is searched */
    struct clf_gemm_params prior[2];  /* in force before: the tuning file's, the table's */
    int nprior;
    int best[2];                  /* index into done[kind] of the best geometric mean */
    double best_score[2];
    bool quiet;
    unsigned rng;
};

static unsigned rnd(struct tuner *t)
{
    t->rng = t->rng * 1103515245u + 12345u;
    return t->rng >> 8;
}
#define PICK(t, arr) ((arr)[rnd(t) % (sizeof(arr) / sizeof((arr)[0]))])

static clf_status run_shape(clf_ctx_t *ctx, struct tshape *s)
{
    /* row-major: A is m×k (k×m when transposed), B k×n (n×k when transposed) */
    struct clf_mat a = {s->da.buf, 0, s->ta ? s->m : s->k, s->ta, 0};
    struct clf_mat b = {s->db.buf, 0, s->tb ? s->k : s->n, s->tb, 0};
    struct clf_mat c = {s->dc.buf, 0, s->n, false, 0};
    return clf_gemm(ctx, s->m, s->n, s->k, 1.0f, &a, &b, 0.0f, &c);
}

/* Runs once with C poisoned and compares with OpenBLAS; returns false with
 * the reason in why when the result is wrong or the run failed. */
static bool check_shape(struct tuner *t, struct tshape *s, char *why, size_t len)
{
    clf_status st;
    size_t nc = s->m * s->n;
    if ((st = clf_tensor_fill(t->ctx, &s->dc, 1234.5f)) || (st = run_shape(t->ctx, s)) ||
        (st = clf_tensor_download(t->ctx, &s->dc, s->out))) {
        snprintf(why, len, "%s: %s", clf_status_str(st), clf_ctx_error(t->ctx));
        return false;
    }
    for (size_t i = 0; i < nc; i++) {
        double d = fabs((double)s->out[i] - s->ref[i]);
        if (!(d <= 1e-3 + 1e-3 * fabs(s->ref[i]))) {
            snprintf(why, len, "wrong result at %zu: %g, OpenBLAS %g", i, s->out[i], s->ref[i]);
            return false;
        }
    }
    return true;
}

/* Best of `reps` timed runs (after the check run, which warms up). */
static double time_shape(struct tuner *t, struct tshape *s, int reps)
{
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        double t0 = cli_now();
        if (run_shape(t->ctx, s) || clf_ctx_finish(t->ctx))
            return -1;
        double dt = cli_now() - t0;
        if (dt < best)
            best = dt;
        if (dt > 0.5)  /* a slow candidate: one run says enough */
            break;
    }
    return best;
}

static int reps_for(const struct tshape *s, double gflops_guess)
{
    double sec = s->flops / (gflops_guess * 1e9);
    return sec > 0.3 ? 1 : sec > 0.05 ? 2 : 4;
}

static uint64_t params_hash(const struct clf_gemm_params *p)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < sizeof *p; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static double geomean_gflops(const struct tuner *t, const double *sec, const bool *use)
{
    double lg = 0;
    int n = 0;
    for (int i = 0; i < t->ns; i++) {
        if (use && !use[i])
            continue;
        if (!(sec[i] > 0) || !isfinite(sec[i]))
            return 0;  /* not measured there: cannot serve these shapes */
        lg += log(t->s[i].flops / sec[i] * 1e-9);
        n++;
    }
    return n ? exp(lg / n) : 0;
}

static void progress(struct tuner *t, const char *stage)
{
    if (t->quiet)
        return;
    double left = t->deadline - cli_now();
    if (left < 0)
        left = 0;
    fprintf(stderr, "\r[tune %s] %u tried (%u failed, %u pruned); best indirect %.1f, direct %.1f GFLOP/s; %d:%02d left ",
            stage, t->tried, t->failed, t->pruned, t->best_score[INDIRECT], t->best_score[DIRECT], (int)left / 60,
            (int)left % 60);
    fflush(stderr);
}

/* Measures one candidate for `kind` on every shape, the probe shape first;
 * gives up early when it is far behind the best on a shape. */
static void evaluate(struct tuner *t, enum kind kind, const struct clf_gemm_params *cand, const int *order)
{
    struct clf_gemm_params p = t->base;
    if (kind == INDIRECT) {
        p.xgemm = cand->xgemm;
        p.min_indirect = 0;  /* m·n·k < 0 never holds: always indirect */
    } else {
        p.direct = cand->direct;
        p.min_indirect = 1u << 20;  /* always direct */
    }
    char why[512];
    if (!clf_gemm_params_check(&p, clf_ctx_device(t->ctx), why, sizeof why))
        return;
    uint64_t h = params_hash(&p);
    for (int i = 0; i < t->nseen; i++)
        if (t->seen[i] == h)
            return;
    if (t->nseen < MAX_CAND * 2)
        t->seen[t->nseen++] = h;
    t->tried++;
    struct cand c = {.p = p};
    bool ok = clf_gemm_params_apply(t->ctx, &p) == CLF_OK;
    const struct cand *best = t->best[kind] >= 0 ? &t->done[kind][t->best[kind]] : NULL;
    for (int j = 0; ok && j < t->ns; j++) {
        int i = order[j];
        struct tshape *s = &t->s[i];
        /* the direct kernel is for small products: not worth timing on the largest */
        if (kind == DIRECT && (double)s->m * s->n * s->k > 2147483648.0) {
            c.t[i] = NAN;
            continue;
        }
        if (!check_shape(t, s, why, sizeof why)) {
            ok = false;
            t->failed++;
            break;
        }
        double g_guess = best ? s->flops / best->t[i] * 1e-9 : 10;
        c.t[i] = time_shape(t, s, reps_for(s, g_guess));
        if (c.t[i] <= 0) {
            ok = false;
            t->failed++;
            break;
        }
        if (best && c.t[i] > 1.6 * best->t[i]) {
            ok = false;
            t->pruned++;
            break;
        }
        if (cli_now() > t->deadline + 30) /* never overrun the budget by much */
            ok = false;
    }
    CLBlastClearCache();  /* each candidate is a new program; keep memory flat */
    if (ok && t->ndone[kind] < MAX_CAND) {
        t->done[kind][t->ndone[kind]] = c;
        bool measured[MAX_SHAPES];
        for (int i = 0; i < t->ns; i++)
            measured[i] = !isnan(c.t[i]);
        double score = geomean_gflops(t, c.t, measured);
        if (score > t->best_score[kind]) {
            t->best_score[kind] = score;
            t->best[kind] = t->ndone[kind];
        }
        t->ndone[kind]++;
    }
}

/* ---------------------------------------------------------- candidates */

static const unsigned xseeds[][16] = {
    /* GEMMK KREG KWG KWI MDIMA MDIMC MWG NDIMB NDIMC NWG SA SB STRM STRN VWM VWN */
    {0, 1, 32, 2, 8, 8, 32, 16, 16, 32, 1, 1, 0, 0, 4, 2},    /* CLBlast's generic */
    {0, 1, 32, 2, 16, 16, 64, 8, 8, 64, 0, 0, 0, 0, 4, 4},    /* CLBlast's default for Intel CPUs */
    {0, 1, 32, 8, 32, 32, 64, 32, 16, 64, 1, 1, 1, 0, 2, 2},  /* as CLBlast has for a Skylake CPU */
    {0, 1, 32, 2, 16, 8, 32, 8, 32, 128, 1, 1, 1, 1, 1, 4},   /* as for a Haswell Xeon */
    {1, 2, 1, 1, 16, 16, 64, 4, 4, 64, 0, 0, 0, 0, 1, 1},     /* GEMMK 1, as for a Coffee Lake CPU */
    {0, 1, 32, 2, 8, 8, 64, 8, 8, 64, 0, 0, 0, 0, 4, 4},
    {0, 1, 16, 2, 8, 8, 64, 8, 8, 64, 0, 0, 0, 0, 8, 8},
    {1, 4, 1, 1, 4, 4, 64, 4, 4, 64, 0, 0, 0, 0, 4, 4},
};
static const unsigned dseeds[][10] = {
    /* KWID MDIMAD MDIMCD NDIMBD NDIMCD PADA PADB VWMD VWND WGD */
    {2, 8, 8, 8, 8, 1, 1, 1, 1, 16},      /* CLBlast's generic */
    {8, 8, 8, 8, 8, 0, 0, 8, 4, 64},      /* as CLBlast has for a Haswell CPU */
    {16, 16, 8, 8, 8, 0, 0, 2, 4, 32},    /* as for a Nehalem CPU */
    {2, 8, 8, 8, 8, 0, 0, 4, 4, 32},
    {2, 8, 8, 8, 8, 0, 0, 8, 8, 64},
    {8, 4, 4, 4, 4, 0, 0, 8, 8, 32},
};

static void from_array(struct clf_gemm_params *p, enum kind kind, const unsigned *v)
{
    if (kind == INDIRECT)
        p->xgemm = (struct clf_xgemm_params){v[0], v[1], v[2], v[3], v[4],  v[5],  v[6],  v[7],
                                              v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]};
    else
        p->direct = (struct clf_xgemm_direct_params){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]};
}

static void random_indirect(struct tuner *t, struct clf_xgemm_params *x)
{
    static const unsigned wg[] = {16, 32, 64, 128}, kw[] = {16, 32, 64}, dim[] = {4, 8, 16, 32}, kwi[] = {2, 8},
                          vw[] = {1, 2, 4, 8}, bit[] = {0, 1}, wg1[] = {8, 16, 32, 64, 128}, dim1[] = {2, 4, 8, 16, 32},
                          kreg[] = {1, 2, 4, 8, 16};
    if (rnd(t) % 4 == 0) {
        x->gemmk = 1;
        x->kwg = x->kwi = 1;
        x->sa = x->sb = x->strm = x->strn = 0;
        x->mwg = PICK(t, wg1);
        x->nwg = PICK(t, wg1);
        x->mdimc = x->mdima = PICK(t, dim1);
        x->ndimc = x->ndimb = PICK(t, dim1);
        x->vwm = PICK(t, vw);
        x->vwn = PICK(t, vw);
        x->kreg = PICK(t, kreg);
    } else {
        x->gemmk = 0;
        x->kreg = 1;
        x->mwg = PICK(t, wg);
        x->nwg = PICK(t, wg);
        x->kwg = PICK(t, kw);
        x->kwi = PICK(t, kwi);
        x->mdimc = PICK(t, dim);
        x->ndimc = PICK(t, dim);
        x->mdima = PICK(t, dim);
        x->ndimb = PICK(t, dim);
        x->vwm = PICK(t, vw);
        x->vwn = PICK(t, vw);
        x->sa = PICK(t, bit);
        x->sb = PICK(t, bit);
        x->strm = PICK(t, bit);
        x->strn = PICK(t, bit);
    }
}

static void random_direct(struct tuner *t, struct clf_xgemm_direct_params *d)
{
    static const unsigned wgd[] = {8, 16, 32, 64}, dim[] = {4, 8, 16, 32}, kwid[] = {2, 8, 16}, vw[] = {1, 2, 4, 8},
                          bit[] = {0, 1};
    d->wgd = PICK(t, wgd);
    d->mdimcd = PICK(t, dim);
    d->ndimcd = PICK(t, dim);
    d->mdimad = PICK(t, dim);
    d->ndimbd = PICK(t, dim);
    d->kwid = PICK(t, kwid);
    d->vwmd = PICK(t, vw);
    d->vwnd = PICK(t, vw);
    d->pada = PICK(t, bit);
    d->padb = PICK(t, bit);
}

/* Changes one or two parameters of p by a factor of two (or flips a bit). */
static void mutate(struct tuner *t, unsigned *v, int n, const unsigned *fixed_mask)
{
    int changes = 1 + (int)(rnd(t) % 2);
    for (int c = 0; c < changes; c++) {
        int i = (int)(rnd(t) % (unsigned)n);
        if (fixed_mask && fixed_mask[i])
            continue;
        if (v[i] <= 1 && (rnd(t) % 2))
            v[i] ^= 1;
        else if (rnd(t) % 2)
            v[i] *= 2;
        else if (v[i] >= 2)
            v[i] /= 2;
    }
}

static void search(struct tuner *t, enum kind kind, double until, const int *order)
{
    const char *stage = kind == INDIRECT ? "Xgemm" : "XgemmDirect";
    /* what was in force first, so that tuning again never ends worse */
    for (int i = 0; i < t->nprior && cli_now() < until; i++) {
        struct clf_gemm_params p = t->base;
        if (kind == INDIRECT)
            p.xgemm = t->prior[i].xgemm;
        else
            p.direct = t->prior[i].direct;
        evaluate(t, kind, &p, order);
        progress(t, stage);
    }
    size_t nseeds = kind == INDIRECT ? sizeof xseeds / sizeof xseeds[0] : sizeof dseeds / sizeof dseeds[0];
    for (size_t i = 0; i < nseeds && cli_now() < until; i++) {
        struct clf_gemm_params p = t->base;
        from_array(&p, kind, kind == INDIRECT ? xseeds[i] : dseeds[i]);
        evaluate(t, kind, &p, order);
        progress(t, stage);
    }
    while (cli_now() < until) {
        struct clf_gemm_params p = t->base;
        bool from_best = t->best[kind] >= 0 && rnd(t) % 2;
        if (from_best) {
            p = t->done[kind][t->best[kind]].p;
            if (kind == INDIRECT) {
                /* GEMMK switches the kernel's whole structure: mutate within it */
                static const unsigned fixed[16] = {1};
                mutate(t, (unsigned *)&p.xgemm, 16, fixed);
                if (p.xgemm.gemmk == 1) {
                    p.xgemm.mdima = p.xgemm.mdimc;
                    p.xgemm.ndimb = p.xgemm.ndimc;
                }
            } else {
                mutate(t, (unsigned *)&p.direct, 10, NULL);
            }
        } else if (kind == INDIRECT) {
            random_indirect(t, &p.xgemm);
        } else {
            random_direct(t, &p.direct);
        }
        evaluate(t, kind, &p, order);
        progress(t, stage);
    }
    if (!t->quiet)
        fprintf(stderr, "\n");
}

/* Chooses the indirect and direct candidates and the switch size together:
 * for each size that separates the shapes, the best of each kind on its
 * side; returns the combination's seconds per shape in sec. */
static struct clf_gemm_params choose(struct tuner *t, double *sec)
{
    unsigned sizes[MAX_SHAPES + 2];
    int nsizes = 0;
    sizes[nsizes++] = 0;
    sizes[nsizes++] = 1u << 20;
    for (int i = 0; i < t->ns; i++)
        sizes[nsizes++] = (unsigned)ceil(cbrt((double)t->s[i].m * t->s[i].n * t->s[i].k)) + 1;
    struct clf_gemm_params best = t->base;
    double best_score = -1;
    for (int z = 0; z < nsizes; z++) {
        bool direct_side[MAX_SHAPES], indirect_side[MAX_SHAPES];
        for (int i = 0; i < t->ns; i++) {
            double mnk = (double)t->s[i].m * t->s[i].n * t->s[i].k;
            direct_side[i] = mnk < (double)sizes[z] * sizes[z] * sizes[z];
            indirect_side[i] = !direct_side[i];
        }
        int pick[2] = {-1, -1};
        double score[2] = {0, 0};
        for (int kind = 0; kind < 2; kind++) {
            const bool *use = kind == INDIRECT ? indirect_side : direct_side;
            for (int c = 0; c < t->ndone[kind]; c++) {
                double g = geomean_gflops(t, t->done[kind][c].t, use);
                if (g > score[kind]) {
                    score[kind] = g;
                    pick[kind] = c;
                }
            }
        }
        double s[MAX_SHAPES];
        bool complete = true;
        for (int i = 0; i < t->ns; i++) {
            int kind = direct_side[i] ? DIRECT : INDIRECT;
            if (pick[kind] < 0) {
                complete = false;
                break;
            }
            s[i] = t->done[kind][pick[kind]].t[i];
        }
        if (!complete)
            continue;
        double g = geomean_gflops(t, s, NULL);
        if (g > best_score) {
            best_score = g;
            if (pick[INDIRECT] >= 0)
                best.xgemm = t->done[INDIRECT][pick[INDIRECT]].p.xgemm;
            if (pick[DIRECT] >= 0)
                best.direct = t->done[DIRECT][pick[DIRECT]].p.direct;
            best.min_indirect = sizes[z];
            memcpy(sec, s, sizeof s);
        }
    }
    return best;
}

/* ---------------------------------------------------------- the command */

static void print_params(const struct clf_gemm_params *p)
{
    char buf[1024];
    clf_gemm_params_str(p, buf, sizeof buf);
    for (char *part = strtok(buf, ";"); part; part = strtok(NULL, ";"))
        printf("  %s\n", part + (*part == ' '));
}

static int show(clf_ctx_t *ctx)
{
    struct clf_tuning_info *info = malloc(sizeof *info);
    if (!info)
        return 1;
    const struct clf_device_info *d = clf_ctx_device(ctx);
    (void)clf_tuning_query(ctx, info);  /* a failure is info->file_status, shown below */
    printf("device:      %s (%s, driver %s)\n", d->device_name, d->platform_name, d->driver_version);
    if (d->shaped[0])
        printf("             limits shaped by CLF_DEVICE_LIMITS=%s (its own tuning file)\n", d->shaped);
    printf("tuning file: %s (%s)\n", info->path,
           !info->file_present ? "absent" : info->file_status ? "present but refused" : "present");
    if (info->file_present && info->file_status)
        printf("             %s: %s\n", clf_status_str(info->file_status), info->file_message);
    if (info->entry)
        printf("table entry: %s (level: %s)\n", info->entry->name, clf_tuning_level_str(info->level));
    else
        printf("table entry: none for this device, its vendor or its type\n");
    if (info->apply_status)
        printf("NOT APPLIED: %s: %s\n             GEMM runs on CLBlast's defaults\n",
               clf_status_str(info->apply_status), info->apply_message);
    switch (info->source) {
    case CLF_TUNING_FILE:
        printf("in force:    tuned, from the file (%s, %.1f minutes, %u candidates, CLBlast %s)\n",
               info->record.created, info->record.minutes, info->record.candidates,
               info->record.clblast[0] ? info->record.clblast : "?");
        print_params(&info->gemm);
        break;
    case CLF_TUNING_TABLE:
        printf("in force:    the repository's table (%s level)\n", clf_tuning_level_str(info->level));
        print_params(&info->gemm);
        break;
    case CLF_TUNING_CLBLAST:
        printf("in force:    CLBlast's own database: generic parameters unless CLBlast knows this device\n");
        break;
    case CLF_TUNING_OFF:
        printf("in force:    nothing of ours: CLF_TUNING=off; CLBlast's own database\n");
        break;
    }
    if (info->source == CLF_TUNING_FILE && info->record.nshapes) {
        printf("\nmeasured when tuned (GFLOP/s):\n%-22s %6s %6s %6s %9s %9s %9s\n", "shape", "m", "n", "k",
               "CLBlast", "tuned", "OpenBLAS");
        for (int i = 0; i < info->record.nshapes; i++) {
            const struct clf_tuning_shape *s = &info->record.shapes[i];
            printf("%-22s %6u %6u %6u %9.1f %9.1f %9.1f\n", s->name, s->m, s->n, s->k, s->gflops_before,
                   s->gflops_after, s->gflops_reference);
        }
    }
    struct clf_attention_tuning at;
    if (clf_attention_tuning_get(ctx, 64, &at) == CLF_OK)
        printf("\nattention (d_k 64): tile_q %zu, tile_k %zu, fast math %s, from '%s'%s\n",
               at.tile_q, at.tile_k, at.fast_math ? "on" : "off", at.entry ? at.entry : "?",
               at.tuned ? "" : " (generic)");
    if (info->kernels.rows_wg)
        printf("row-wise ops: work-groups of at most %u work-items, from the tuning file\n", info->kernels.rows_wg);
    else
        printf("row-wise ops: built-in work-group sizes (at most 16 work-items on CPUs, the row's width up to 256 "
               "elsewhere)\n");
    free(info);
    return 0;
}

static void free_shapes(struct tuner *t)
{
    for (int i = 0; i < t->ns; i++) {
        free(t->s[i].a);
        free(t->s[i].b);
        free(t->s[i].ref);
        free(t->s[i].out);
        clf_tensor_free(&t->s[i].da);
        clf_tensor_free(&t->s[i].db);
        clf_tensor_free(&t->s[i].dc);
    }
}

static clf_status add_shape(struct tuner *t, const char *name, size_t m, size_t n, size_t k, bool ta, bool tb)
{
    struct tshape *s = &t->s[t->ns++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->m = m, s->n = n, s->k = k, s->ta = ta, s->tb = tb;
    s->flops = 2.0 * m * n * k;
    size_t na = m * k, nb = k * n, nc = m * n;
    s->a = malloc(na * 4), s->b = malloc(nb * 4), s->ref = malloc(nc * 4), s->out = malloc(nc * 4);
    if (!s->a || !s->b || !s->ref || !s->out)
        return CLF_ERR_MEMORY;
    cli_fill_random(s->a, na, 7 + t->ns, 1.0f);
    cli_fill_random(s->b, nb, 70 + t->ns, 1.0f);
    clf_status st;
    if ((st = clf_tensor_init(t->ctx, &s->da, 1, &na)) || (st = clf_tensor_init(t->ctx, &s->db, 1, &nb)) ||
        (st = clf_tensor_init(t->ctx, &s->dc, 1, &nc)) || (st = clf_tensor_upload(t->ctx, &s->da, s->a)) ||
        (st = clf_tensor_upload(t->ctx, &s->db, s->b)))
        return st;
    double t0 = cli_now();
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, s->a, ta ? (int)m : (int)k, s->b, tb ? (int)k : (int)n, 0.0f, s->ref, (int)n);
    s->t_ref = cli_now() - t0;
    t0 = cli_now();
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, s->a, ta ? (int)m : (int)k, s->b, tb ? (int)k : (int)n, 0.0f, s->ref, (int)n);
    double t2 = cli_now() - t0;
    if (t2 < s->t_ref)
        s->t_ref = t2;
    return CLF_OK;
}

int clf_cmd_tune(int argc, char **argv)
{
    const char *device = NULL, *minutes_s = "5", *tokens_s = "2560";
    bool do_show = false, do_reset = false, quiet = false, bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--show"))
            do_show = true;
        else if (!strcmp(argv[i], "--reset"))
            do_reset = true;
        else if (!strcmp(argv[i], "--quiet"))
            quiet = true;
        else if (!cli_opt(argc, argv, &i, "--device", &device, &bad) &&
                 !cli_opt(argc, argv, &i, "--minutes", &minutes_s, &bad) &&
                 !cli_opt(argc, argv, &i, "--tokens", &tokens_s, &bad)) {
            fprintf(stderr, "clformer: unknown option '%s'\n", argv[i]);
            bad = true;
        }
    }
    char *end;
    double minutes = strtod(minutes_s, &end);
    if (!bad && (*end || !(minutes > 0) || minutes > 24 * 60)) {
        fprintf(stderr, "clformer: --minutes wants a number of minutes above 0, not '%s'\n", minutes_s);
        bad = true;
    }
    long tokens = strtol(tokens_s, &end, 10);
    if (!bad && (*end || tokens < 16 || tokens > 65536)) {
        fprintf(stderr, "clformer: --tokens wants 16..65536, not '%s'\n", tokens_s);
        bad = true;
    }
    if (bad) {
        fprintf(stderr, "usage: clformer tune [--minutes M] [--tokens T] [--show] [--reset] [--device D] [--quiet]\n");
        return 2;
    }
    if (do_reset || do_show) {
        clf_ctx_t *ctx = cli_open(device);
        if (!ctx)
            return 1;
        int rc = 0;
        if (do_reset) {
            bool removed;
            clf_status st = clf_tuning_reset(ctx, &removed);
            if (st)
                rc = cli_fail(NULL, st, "tune --reset");
            else
                printf("%s\n", removed ? "tuning file deleted: the next context runs with the table or CLBlast's "
                                         "parameters"
                                       : "no tuning file for this device: nothing to delete");
        }
        if (do_show && !rc)
            rc = show(ctx);
        clf_ctx_free(ctx);
        return rc;
    }

    /* the baseline is CLBlast's own choice and our kernels' built-in one:
     * open the device with nothing applied, and no hand-set tiles */
    setenv("CLF_TUNING", "off", 1);
    unsetenv("CLF_ATTN_TILE_Q");
    unsetenv("CLF_ATTN_TILE_K");
    unsetenv("CLF_OPS_CPU_WG");
    struct tuner *t = calloc(1, sizeof *t);
    if (!t)
        return 1;
    t->quiet = quiet;
    t->rng = 12345u;
    t->best[0] = t->best[1] = -1;
    t->ctx = cli_open(device);
    int rc = 1;
    if (!t->ctx)
        goto out;
    /* what is tuned is CLBlast's kernels, whichever backend runs GEMMs */
    if (clf_ctx_gemm_set(t->ctx, CLF_GEMM_CLBLAST) != CLF_OK)
        goto out;
    t->done[0] = calloc(MAX_CAND, sizeof(struct cand));
    t->done[1] = calloc(MAX_CAND, sizeof(struct cand));
    t->seen = calloc(MAX_CAND * 2, sizeof *t->seen);
    if (!t->done[0] || !t->done[1] || !t->seen)
        goto out;
    const struct clf_device_info *dev = clf_ctx_device(t->ctx);
    bool cpu = dev->type & CL_DEVICE_TYPE_CPU;
    struct clf_kernel_params prior_kernels = {0};  /* the earlier file's, if any */
    {
        char prior_path[1024];
        struct clf_tuning_record *prev = malloc(sizeof *prev);
        if (prev && clf_tuning_path(dev, prior_path, sizeof prior_path) == CLF_OK &&
            clf_tuning_load(prior_path, dev, prev) == CLF_OK) {
            t->prior[t->nprior++] = prev->gemm;
            prior_kernels = prev->kernels;
        }
        free(prev);
        const struct clf_tuning_entry *e = clf_tuning_table_lookup(NULL, 0, dev, NULL);
        if (e)
            t->prior[t->nprior++] = *e->gemm;
    }
    size_t T = (size_t)tokens, V = 8000;
    clf_status st = CLF_OK;
    /* the small preset (d 256, d_ff 1024, vocab 8000), the one CPUs train:
     * a decoding step of translation, then a training batch's products */
    const size_t d = 256;
    st = add_shape(t, "decode 32.d.d", 32, d, d, false, false);
    if (!st)
        st = add_shape(t, "T.d.d (out proj)", T, d, d, false, false);
    if (!st)
        st = add_shape(t, "T.3d.d (qkv)", T, 3 * d, d, false, false);
    if (!st)
        st = add_shape(t, "T.4d.d (ffn in)", T, 4 * d, d, false, false);
    if (!st)
        st = add_shape(t, "T.d.4d (ffn out)", T, d, 4 * d, false, false);
    if (!st)
        st = add_shape(t, "T.V.d (logits, Bt)", T, V, d, false, true);
    if (!st)
        st = add_shape(t, "d.4d.T (dW, At)", d, 4 * d, T, true, false);
    if (!st)
        st = add_shape(t, "1024^3", 1024, 1024, 1024, false, false);
    if (st) {
        rc = cli_fail(t->ctx, st, "preparing the shapes");
        goto out;
    }
    t->start = cli_now();
    t->deadline = t->start + minutes * 60;
    printf("tuning SGEMM on %s (%s) for %.1f minutes, %d shapes of T=%ld tokens\n", dev->device_name,
           dev->platform_name, minutes, t->ns, tokens);
    fflush(stdout);

    /* CLBlast's own choice, for the record */
    char why[512];
    for (int i = 0; i < t->ns; i++) {
        struct tshape *s = &t->s[i];
        if (!check_shape(t, s, why, sizeof why)) {
            fprintf(stderr, "clformer: CLBlast's own parameters fail on %s: %s\n", s->name, why);
            goto out;
        }
        s->t_before = time_shape(t, s, reps_for(s, 10));
    }
    CLBlastClearCache();

    /* the other kernel's parameters while one is searched: CLBlast's generic
     * values (what an unknown device gets anyway) */
    t->base = clf_gemm_params_generic;
    int order_ind[MAX_SHAPES], order_dir[MAX_SHAPES];
    /* probe first: the indirect kernel on the largest shape, the direct on the smallest */
    for (int i = 0; i < t->ns; i++) {
        order_ind[i] = t->ns - 1 - i;
        order_dir[i] = i;
    }
    /* our own kernels first: a short fixed list, whose leftover time goes to GEMM */
    struct tune_kernels_result kr;
    double t_kernels = cli_now();
    if ((st = tune_kernels(t->ctx, &prior_kernels, t_kernels + 0.15 * (t->deadline - t_kernels), quiet, &kr))) {
        fprintf(stderr, "clformer: tuning the attention and row-wise kernels failed: %s\n", clf_ctx_error(t->ctx));
        goto out;
    }
    /* what is left, less a reserve for measuring the choice */
    double t_search = cli_now(), total = (t->deadline - t_search) * 0.92;
    search(t, INDIRECT, t_search + 0.55 * total, order_ind);
    if (t->best[INDIRECT] >= 0)
        t->base.xgemm = t->done[INDIRECT][t->best[INDIRECT]].p.xgemm;
    search(t, DIRECT, t_search + total, order_dir);
    if (t->ndone[INDIRECT] == 0 && t->ndone[DIRECT] == 0) {
        fprintf(stderr, "clformer: no candidate passed; the tuning file is left as it was\n");
        goto out;
    }
    double predicted[MAX_SHAPES];
    struct clf_gemm_params final = choose(t, predicted);

    /* the choice, measured as it will run */
    if ((st = clf_gemm_params_apply(t->ctx, &final))) {
        rc = cli_fail(t->ctx, st, "applying the result");
        goto out;
    }
    struct clf_tuning_record *rec = calloc(1, sizeof *rec);
    if (!rec)
        goto out;
    snprintf(rec->platform, sizeof rec->platform, "%s", dev->platform_name);
    snprintf(rec->device, sizeof rec->device, "%s", dev->device_name);
    snprintf(rec->driver, sizeof rec->driver, "%s", dev->driver_version);
    cli_clblast_version(rec->clblast, sizeof rec->clblast);
    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(rec->created, sizeof rec->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    rec->gemm = final;
    rec->kernels = kr.best;
    rec->candidates = t->tried + kr.tried;
    printf("\n%-22s %6s %6s %6s %9s %9s %9s   (GFLOP/s)\n", "shape", "m", "n", "k", "CLBlast", "tuned",
           cpu ? "OpenBLAS" : "");
    for (int i = 0; i < t->ns; i++) {
        struct tshape *s = &t->s[i];
        if (!check_shape(t, s, why, sizeof why)) {
            fprintf(stderr, "clformer: the chosen parameters fail on %s: %s; not saved\n", s->name, why);
            free(rec);
            goto out;
        }
        double ta = time_shape(t, s, 3);
        struct clf_tuning_shape *o = &rec->shapes[rec->nshapes++];
        snprintf(o->name, sizeof o->name, "%s", s->name);
        o->m = (unsigned)s->m, o->n = (unsigned)s->n, o->k = (unsigned)s->k, o->ta = s->ta, o->tb = s->tb;
        o->gflops_before = s->flops / s->t_before * 1e-9;
        o->gflops_after = s->flops / ta * 1e-9;
        o->gflops_reference = cpu ? s->flops / s->t_ref * 1e-9 : 0;
        printf("%-22s %6zu %6zu %6zu %9.1f %9.1f", s->name, s->m, s->n, s->k, o->gflops_before, o->gflops_after);
        if (cpu)
            printf(" %9.1f", o->gflops_reference);
        printf("\n");
    }
    rec->minutes = (cli_now() - t->start) / 60;
    char path[1024];
    if ((st = clf_tuning_path(dev, path, sizeof path)) || (st = clf_tuning_save(path, rec))) {
        rc = cli_fail(NULL, st, "saving the tuning file");
        free(rec);
        goto out;
    }
    printf("\nattention, %s: %.2f ms built-in, %.2f ms with tiles %ux%u\n", kr.attn_case, kr.attn_before_s * 1e3,
           kr.attn_after_s * 1e3, kr.best.attn_tile_q, kr.best.attn_tile_k);
    if (kr.best.rows_wg)
        printf("row-wise ops, %s: %.2f ms built-in, %.2f ms with work-groups of at most %u\n", kr.rows_case,
               kr.rows_before_s * 1e3, kr.rows_after_s * 1e3, kr.best.rows_wg);
    else
        printf("row-wise ops, %s: %.2f ms built-in, which no candidate beat\n", kr.rows_case, kr.rows_before_s * 1e3);
    printf("\n%u candidates in %.1f minutes (%u failed the check or the build, %u pruned)\n", rec->candidates,
           rec->minutes, t->failed + kr.failed, t->pruned);
    print_params(&final);
    printf("  Kernels ATTN_TILE_Q=%u ATTN_TILE_K=%u ROWS_WG=%u%s\n", kr.best.attn_tile_q, kr.best.attn_tile_k,
           kr.best.rows_wg, kr.best.rows_wg ? "" : " (0: built-in)");
    printf("saved to %s; every new context on this device applies it\n", path);
    free(rec);
    rc = 0;
out:
    if (t->ctx)
        free_shapes(t);
    clf_ctx_free(t->ctx);
    free(t->done[0]);
    free(t->done[1]);
    free(t->seen);
    free(t);
    return rc;
}
