/* tune_gemm.c: clf_gemm_params_tune, the search of CLBlast's SGEMM kernel
 * parameters for one device on the shapes the model presets use (the
 * library's half of `clformer tune`, which prints what the progress
 * callback tells it).
 *
 * Shapes, of the small preset (d = 256, V = 8000) on T tokens (default 2560,
 * the 128×20 batch of `bench train`): T×d×d, T×3d×d, T×4d×d, T×d×4d, T×V×d
 * with B transposed (the output embedding), d×4d×T with A transposed (a
 * weight gradient), 32×d×d (a decoding step), and 1024³. Every candidate's
 * result is checked against the host's BLAS (OpenBLAS, as gemm_host.c
 * links it) before it is timed; one that fails to compile, fails to run or
 * disagrees is skipped. The search runs in three parts: the indirect
 * kernel (Xgemm, forced for every shape), the direct kernel (XgemmDirect,
 * forced likewise), then the size that switches between the two, picked
 * from the figures measured. Each part starts from what was in force (the
 * tuning file's and the table's parameters) and known seeds, then draws at
 * random from a declared parameter space and mutates the best so far;
 * every parameter is reached by its name in the parameter table
 * (clf_param_defs). The budget counts from the call: the shapes' setup and
 * the baseline always run, the search stops at the deadline (or when the
 * progress callback asks), and when nothing was searched the starting
 * point is measured and returned, so that a caller always gets a result. */
#include <cblas.h>
#include <clblast_c.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/rand.h"
#include "base/status.h"
#include "clformer.h"
#include "runtime/gemm_paths.h"

#define MAX_SHAPES 10
#define MAX_CAND 4096

/* The small preset (d 256, d_ff 1024, vocab 8000), the one CPUs train: a
 * decoding step of translation, then a training batch's products; a size
 * of 0 is T, the tokens. */
enum { D = 256, V = 8000 };
static const struct {
    const char *name;
    size_t m, n, k;
    bool ta, tb;
} shapes[] = {
    {"decode 32.d.d", 32, D, D, false, false},         {"T.d.d (out proj)", 0, D, D, false, false},
    {"T.3d.d (qkv)", 0, 3 * D, D, false, false},       {"T.4d.d (ffn in)", 0, 4 * D, D, false, false},
    {"T.d.4d (ffn out)", 0, D, 4 * D, false, false},   {"T.V.d (logits, Bt)", 0, V, D, false, true},
    {"d.4d.T (dW, At)", D, 4 * D, 0, true, false},     {"1024^3", 1024, 1024, 1024, false, false},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

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
    struct clf_gemm_params prior[CLF_TUNE_MAX_PRIOR];  /* tried first: the caller's, else what is in force */
    int nprior;
    int best[2];                  /* index into done[kind] of the best geometric mean */
    double best_score[2];
    uint32_t rng;
    const struct clf_tune_opts *o;  /* the caller's progress callback */
    bool cancelled;               /* the callback asked to stop: the deadline is now */
};

/* The search's draws: base/rand.h's stream from a fixed seed. */
static unsigned rnd(struct tuner *t)
{
    return clf_rand24(&t->rng);
}

/* CLBlast's compiled programs dropped, under the lock every call into
 * CLBlast holds (its caches are process-wide). */
static void clear_programs(void)
{
    clf_blast_lock();
    CLBlastClearCache();
    clf_blast_unlock();
}

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
        double t0 = clf_now();
        if (run_shape(t->ctx, s) || clf_ctx_finish(t->ctx))
            return -1;
        double dt = clf_now() - t0;
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

/* FNV-1a over the values, named through the parameter table */
static uint64_t params_hash(const struct clf_gemm_params *p)
{
    size_t n;
    const struct clf_param_def *defs = clf_param_defs(&n);
    const struct clf_params all = {.gemm = *p};
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ clf_param_value(&all, &defs[i])) * 0x100000001b3ULL;
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

/* Tells the caller's callback where the search is; a nonzero answer
 * stops it as the deadline would (later answers change nothing: the
 * callback still hears of the measuring that follows). */
static void progress(struct tuner *t, enum clf_tune_stage stage)
{
    if (!t->o->progress)
        return;
    double now = clf_now();
    const struct clf_tune_progress p = {
        .stage = stage, .tried = t->tried, .failed = t->failed, .pruned = t->pruned,
        .nshapes = NSHAPES, .best_xgemm_gflops = t->best_score[INDIRECT], .best_direct_gflops = t->best_score[DIRECT],
        .elapsed_s = now - t->start, .left_s = t->deadline > now ? t->deadline - now : 0,
    };
    if (t->o->progress(t->o->user, &p) && !t->cancelled) {
        t->cancelled = true;
        t->deadline = now;
    }
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
        if (clf_now() > t->deadline + 30) /* never overrun the budget by much */
            ok = false;
    }
    clear_programs();  /* each candidate is a new program; keep memory flat */
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

/* --------------------------------------------------- the parameter space */

/* Each kernel's space, declared as CLBlast's tuner declares its own: the
 * values each parameter takes, named as in the parameter table
 * (clf_param_defs), in the order they are drawn. A parameter with one
 * value is fixed; one with `same` takes another's value. The constraints
 * between parameters are apart: clf_gemm_params_check's, which every
 * candidate passes before it is built. */
struct axis {
    const char *name;
    unsigned v[6], n;
    const char *same;
};
struct space {
    const struct axis *axes;
    size_t n;
    unsigned weight;  /* how often a random candidate comes from this space */
};
#define SPACE(axes, w) {axes, sizeof axes / sizeof axes[0], w}
#define WG {16, 32, 64, 128}, 4
#define DIM {4, 8, 16, 32}, 4
#define VW {1, 2, 4, 8}, 4
#define BIT {0, 1}, 2

/* Xgemm with GEMMK 1 (2D register tiling; as CLBlast has for a Coffee Lake CPU) */
static const struct axis xgemm_k1[] = {
    {"GEMMK", {1}, 1, NULL}, {"KWG", {1}, 1, NULL},  {"KWI", {1}, 1, NULL},  {"SA", {0}, 1, NULL},
    {"SB", {0}, 1, NULL},    {"STRM", {0}, 1, NULL}, {"STRN", {0}, 1, NULL}, {"MWG", {8, 16, 32, 64, 128}, 5, NULL},
    {"NWG", {8, 16, 32, 64, 128}, 5, NULL}, {"MDIMC", {2, 4, 8, 16, 32}, 5, NULL}, {"MDIMA", {0}, 0, "MDIMC"},
    {"NDIMC", {2, 4, 8, 16, 32}, 5, NULL},  {"NDIMB", {0}, 0, "NDIMC"},  {"VWM", VW, NULL}, {"VWN", VW, NULL},
    {"KREG", {1, 2, 4, 8, 16}, 5, NULL},
};
/* Xgemm with GEMMK 0, the usual form */
static const struct axis xgemm_k0[] = {
    {"GEMMK", {0}, 1, NULL}, {"KREG", {1}, 1, NULL}, {"MWG", WG, NULL},   {"NWG", WG, NULL},
    {"KWG", {16, 32, 64}, 3, NULL}, {"KWI", {2, 8}, 2, NULL}, {"MDIMC", DIM, NULL}, {"NDIMC", DIM, NULL},
    {"MDIMA", DIM, NULL},    {"NDIMB", DIM, NULL},   {"VWM", VW, NULL},   {"VWN", VW, NULL},
    {"SA", BIT, NULL},       {"SB", BIT, NULL},      {"STRM", BIT, NULL}, {"STRN", BIT, NULL},
};
static const struct axis xgemm_direct[] = {
    {"WGD", {8, 16, 32, 64}, 4, NULL}, {"MDIMCD", DIM, NULL}, {"NDIMCD", DIM, NULL}, {"MDIMAD", DIM, NULL},
    {"NDIMBD", DIM, NULL},  {"KWID", {2, 8, 16}, 3, NULL}, {"VWMD", VW, NULL}, {"VWND", VW, NULL},
    {"PADA", BIT, NULL},    {"PADB", BIT, NULL},
};
#undef WG
#undef DIM
#undef VW
#undef BIT

static const struct space indirect_spaces[] = {SPACE(xgemm_k1, 1), SPACE(xgemm_k0, 3)};
static const struct space direct_spaces[] = {SPACE(xgemm_direct, 1)};

static const struct {
    enum clf_param_group group;
    const struct space *spaces;
    size_t n;
    const char *fixed;  /* kept by mutations: it switches the kernel's whole structure */
} kinds[2] = {
    [INDIRECT] = {CLF_PARAM_XGEMM, indirect_spaces, 2, "GEMMK"},
    [DIRECT] = {CLF_PARAM_XGEMM_DIRECT, direct_spaces, 1, NULL},
};

/* Known good starting points, each group's values in the parameter table's order */
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

static unsigned *param(struct clf_params *p, enum clf_param_group g, const char *name)
{
    return clf_param_ref(p, clf_param_find(g, name));
}

/* The group's tunables in the parameter table, in its order. */
static size_t group_defs(enum clf_param_group g, const struct clf_param_def **out)
{
    size_t n, k = 0;
    const struct clf_param_def *defs = clf_param_defs(&n);
    for (size_t i = 0; i < n; i++)
        if (defs[i].group == g)
            out[k++] = &defs[i];
    return k;
}

static void from_seed(struct clf_params *p, enum kind kind, const unsigned *v)
{
    const struct clf_param_def *d[CLF_PARAMS_MAX];
    size_t n = group_defs(kinds[kind].group, d);
    for (size_t i = 0; i < n; i++)
        *clf_param_ref(p, d[i]) = v[i];
}

/* Draws the space's parameters in order, then its ties. */
static void draw(struct tuner *t, enum clf_param_group g, const struct space *s, struct clf_params *p)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->axes[i].n)
            *param(p, g, s->axes[i].name) = s->axes[i].v[s->axes[i].n == 1 ? 0 : rnd(t) % s->axes[i].n];
    for (size_t i = 0; i < s->n; i++)
        if (s->axes[i].same)
            *param(p, g, s->axes[i].name) = *param(p, g, s->axes[i].same);
}

static void random_candidate(struct tuner *t, enum kind kind, struct clf_params *p)
{
    unsigned total = 0;
    for (size_t i = 0; i < kinds[kind].n; i++)
        total += kinds[kind].spaces[i].weight;
    unsigned r = kinds[kind].n > 1 ? rnd(t) % total : 0;
    size_t i = 0;
    while (r >= kinds[kind].spaces[i].weight)
        r -= kinds[kind].spaces[i++].weight;
    draw(t, kinds[kind].group, &kinds[kind].spaces[i], p);
}

/* Changes one or two parameters by a factor of two (or flips a bit), then
 * restores the ties of the space the candidate is in. */
static void mutate(struct tuner *t, enum kind kind, struct clf_params *p)
{
    const struct clf_param_def *d[CLF_PARAMS_MAX];
    enum clf_param_group g = kinds[kind].group;
    size_t n = group_defs(g, d);
    int changes = 1 + (int)(rnd(t) % 2);
    for (int c = 0; c < changes; c++) {
        const struct clf_param_def *pd = d[rnd(t) % (unsigned)n];
        if (kinds[kind].fixed && !strcmp(pd->name, kinds[kind].fixed))
            continue;
        unsigned *v = clf_param_ref(p, pd);
        if (*v <= 1 && (rnd(t) % 2))
            *v ^= 1;
        else if (rnd(t) % 2)
            *v *= 2;
        else if (*v >= 2)
            *v /= 2;
    }
    for (size_t s = 0; s < kinds[kind].n; s++) {
        const struct space *sp = &kinds[kind].spaces[s];
        /* a space is the candidate's when its first parameter, fixed, has the candidate's value */
        if (sp->axes[0].n != 1 || *param(p, g, sp->axes[0].name) != sp->axes[0].v[0])
            continue;
        for (size_t i = 0; i < sp->n; i++)
            if (sp->axes[i].same)
                *param(p, g, sp->axes[i].name) = *param(p, g, sp->axes[i].same);
    }
}

static void search(struct tuner *t, enum kind kind, double until, const int *order)
{
    const enum clf_tune_stage stage = kind == INDIRECT ? CLF_TUNE_XGEMM : CLF_TUNE_XGEMM_DIRECT;
    progress(t, stage);
    /* what was in force first, so that tuning again never ends worse */
    for (int i = 0; i < t->nprior && clf_now() < until && !t->cancelled; i++) {
        struct clf_gemm_params p = t->base;
        if (kind == INDIRECT)
            p.xgemm = t->prior[i].xgemm;
        else
            p.direct = t->prior[i].direct;
        evaluate(t, kind, &p, order);
        progress(t, stage);
    }
    size_t nseeds = kind == INDIRECT ? sizeof xseeds / sizeof xseeds[0] : sizeof dseeds / sizeof dseeds[0];
    for (size_t i = 0; i < nseeds && clf_now() < until && !t->cancelled; i++) {
        struct clf_params p = {.gemm = t->base};
        from_seed(&p, kind, kind == INDIRECT ? xseeds[i] : dseeds[i]);
        evaluate(t, kind, &p.gemm, order);
        progress(t, stage);
    }
    while (clf_now() < until && !t->cancelled) {
        struct clf_params p = {.gemm = t->base};
        if (t->best[kind] >= 0 && rnd(t) % 2) {
            p.gemm = t->done[kind][t->best[kind]].p;
            mutate(t, kind, &p);
        } else {
            random_candidate(t, kind, &p);
        }
        evaluate(t, kind, &p.gemm, order);
        progress(t, stage);
    }
}

/* The best pair of kernels and the size between them, from the figures
 * measured; *found is false when no pair covers every shape. */
static struct clf_gemm_params choose(struct tuner *t, double *sec, bool *found)
{
    unsigned sizes[MAX_SHAPES + 2];
    int nsizes = 0;
    sizes[nsizes++] = 0;
    sizes[nsizes++] = 1u << 20;
    for (int i = 0; i < t->ns; i++)
        sizes[nsizes++] = (unsigned)ceil(cbrt((double)t->s[i].m * t->s[i].n * t->s[i].k)) + 1;
    struct clf_gemm_params best = t->base;
    double best_score = -1;
    *found = false;
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
            *found = true;
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
    clf_rand_fill(s->a, na, 7 + t->ns, 1.0f);
    clf_rand_fill(s->b, nb, 70 + t->ns, 1.0f);
    clf_status st;
    if ((st = clf_tensor_init(t->ctx, &s->da, 1, &na)) || (st = clf_tensor_init(t->ctx, &s->db, 1, &nb)) ||
        (st = clf_tensor_init(t->ctx, &s->dc, 1, &nc)) || (st = clf_tensor_upload(t->ctx, &s->da, s->a)) ||
        (st = clf_tensor_upload(t->ctx, &s->db, s->b)))
        return st;
    double t0 = clf_now();
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, s->a, ta ? (int)m : (int)k, s->b, tb ? (int)k : (int)n, 0.0f, s->ref, (int)n);
    s->t_ref = clf_now() - t0;
    t0 = clf_now();
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, s->a, ta ? (int)m : (int)k, s->b, tb ? (int)k : (int)n, 0.0f, s->ref, (int)n);
    double t2 = clf_now() - t0;
    if (t2 < s->t_ref)
        s->t_ref = t2;
    return CLF_OK;
}


/* ---------------------------------------------------------- the driver */

static clf_status shapes_init(struct tuner *t, size_t T)
{
    clf_status st = CLF_OK;
    for (int i = 0; i < NSHAPES && !st; i++)
        st = add_shape(t, shapes[i].name, shapes[i].m ? shapes[i].m : T, shapes[i].n ? shapes[i].n : T,
                       shapes[i].k ? shapes[i].k : T, shapes[i].ta, shapes[i].tb);
    return st;
}

/* Times what is in force at the call (CLBlast's own choice unless a tuning
 * file, the table or an earlier call set parameters): every shape's "before". */
static clf_status baseline(struct tuner *t)
{
    char why[512];
    for (int i = 0; i < t->ns; i++) {
        struct tshape *s = &t->s[i];
        if (!check_shape(t, s, why, sizeof why))
            return clf_error_set(t->ctx, CLF_ERR_BLAS, "the GEMM parameters in force before tuning fail on %s: %s",
                                 s->name, why);
        s->t_before = time_shape(t, s, reps_for(s, 10));
    }
    clear_programs();
    return CLF_OK;
}

/* The chosen parameters measured as they will run, against the baseline. */
static clf_status measure(struct tuner *t, struct clf_gemm_tune_result *out)
{
    bool cpu = clf_ctx_device(t->ctx)->type & CL_DEVICE_TYPE_CPU;
    char why[512];
    for (int i = 0; i < t->ns; i++) {
        struct tshape *s = &t->s[i];
        if (!check_shape(t, s, why, sizeof why))
            return clf_error_set(t->ctx, CLF_ERR_BLAS, "the chosen GEMM parameters fail on %s: %s", s->name, why);
        double ta = time_shape(t, s, 3);
        if (!(ta > 0))
            return clf_error_set(t->ctx, CLF_ERR_BLAS, "the chosen GEMM parameters fail on %s when timed: %s",
                                 s->name, clf_ctx_error(t->ctx));
        struct clf_tuning_shape *o = &out->shapes[out->nshapes++];
        snprintf(o->name, sizeof o->name, "%s", s->name);
        o->m = (unsigned)s->m, o->n = (unsigned)s->n, o->k = (unsigned)s->k, o->ta = s->ta, o->tb = s->tb;
        o->gflops_before = s->flops / s->t_before * 1e-9;
        o->gflops_after = s->flops / ta * 1e-9;
        o->gflops_reference = cpu ? s->flops / s->t_ref * 1e-9 : 0;
    }
    return CLF_OK;
}

/* Where the search starts, and what a call with no time to search returns:
 * the caller's first prior, else what is in force (the tuning file's or the
 * table's parameters), else CLBlast's generic values. */
static struct clf_gemm_params start_point(clf_ctx_t *ctx, const struct clf_tune_opts *o)
{
    if (o->nprior > 0)
        return o->prior[0];
    struct clf_gemm_params p = clf_gemm_params_generic;
    struct clf_tuning_info *info = malloc(sizeof *info);
    if (info && clf_tuning_query(ctx, info) == CLF_OK &&
        (info->source == CLF_TUNING_FILE || info->source == CLF_TUNING_TABLE))
        p = info->gemm;
    free(info);
    return p;
}

static clf_status opts_check(clf_ctx_t *ctx, const struct clf_tune_opts *o)
{
    if (!(o->seconds >= 0) || !isfinite(o->seconds))
        return clf_error_set(ctx, CLF_ERR_ARG, "tuning: seconds %g: want a budget of 0 or more seconds", o->seconds);
    if (o->tokens < 16 || o->tokens > 65536)
        return clf_error_set(ctx, CLF_ERR_ARG, "tuning: tokens %zu: want 16..65536", o->tokens);
    if (o->nprior < 0 || o->nprior > CLF_TUNE_MAX_PRIOR || (o->nprior && !o->prior))
        return clf_error_set(ctx, CLF_ERR_ARG, "tuning: nprior %d: want 0..%d parameter sets at prior", o->nprior,
                             CLF_TUNE_MAX_PRIOR);
    return CLF_OK;
}

struct clf_tune_opts clf_tune_opts_default(void)
{
    return (struct clf_tune_opts){.seconds = 300, .tokens = 2560};
}

const char *clf_tune_stage_str(enum clf_tune_stage s)
{
    switch (s) {
    case CLF_TUNE_SETUP: return "setup";
    case CLF_TUNE_BASELINE: return "baseline";
    case CLF_TUNE_XGEMM: return "Xgemm";
    case CLF_TUNE_XGEMM_DIRECT: return "XgemmDirect";
    case CLF_TUNE_MEASURE: return "measure";
    case CLF_TUNE_ATTENTION: return "attention";
    case CLF_TUNE_ROWS: return "rows";
    }
    return "unknown";
}

static void tuner_free(struct tuner *t)
{
    if (!t)
        return;
    free_shapes(t);
    free(t->done[0]);
    free(t->done[1]);
    free(t->seen);
    free(t);
}

clf_status clf_gemm_params_tune(clf_ctx_t *ctx, const struct clf_tune_opts *o, struct clf_gemm_tune_result *out)
{
    memset(out, 0, sizeof *out);
    clf_status st = opts_check(ctx, o);
    if (st)
        return st;
    const double start = clf_now();
    /* what is tuned is CLBlast's kernels, whichever backend runs ctx's GEMMs */
    const enum clf_gemm_backend was = clf_ctx_gemm(ctx);
    if (was != CLF_GEMM_CLBLAST && (st = clf_ctx_gemm_set(ctx, CLF_GEMM_CLBLAST)))
        return st;
    struct tuner *t = calloc(1, sizeof *t);
    if (!t) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "tuning: out of host memory");
        goto out;
    }
    t->ctx = ctx;
    t->o = o;
    t->start = start;
    t->deadline = start + o->seconds;
    t->rng = 12345u;
    t->best[0] = t->best[1] = -1;
    t->done[0] = calloc(MAX_CAND, sizeof(struct cand));
    t->done[1] = calloc(MAX_CAND, sizeof(struct cand));
    t->seen = calloc(MAX_CAND * 2, sizeof *t->seen);
    if (!t->done[0] || !t->done[1] || !t->seen) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "tuning: out of host memory");
        goto out;
    }
    progress(t, CLF_TUNE_SETUP);
    if ((st = shapes_init(t, o->tokens))) {
        if (st == CLF_ERR_MEMORY)
            clf_error_set(ctx, st, "tuning: out of host memory for the shapes of %zu tokens", o->tokens);
        goto out;
    }
    out->nshapes = 0;
    progress(t, CLF_TUNE_BASELINE);
    if ((st = baseline(t)))
        goto out;

    const struct clf_gemm_params first = start_point(ctx, o);
    if (o->nprior)
        for (int i = 0; i < o->nprior; i++)
            t->prior[t->nprior++] = o->prior[i];
    else
        t->prior[t->nprior++] = first;
    /* the other kernel's parameters while one is searched: CLBlast's generic
     * values (what an unknown device gets anyway) */
    t->base = clf_gemm_params_generic;
    int order_ind[MAX_SHAPES], order_dir[MAX_SHAPES];
    /* probe first: the indirect kernel on the largest shape, the direct on the smallest */
    for (int i = 0; i < t->ns; i++) {
        order_ind[i] = t->ns - 1 - i;
        order_dir[i] = i;
    }
    /* what is left, less a reserve for measuring the choice */
    double t_search = clf_now(), total = (t->deadline - t_search) * 0.92;
    if (total > 0) {
        search(t, INDIRECT, t_search + 0.55 * total, order_ind);
        if (t->best[INDIRECT] >= 0)
            t->base.xgemm = t->done[INDIRECT][t->best[INDIRECT]].p.xgemm;
        search(t, DIRECT, t_search + total, order_dir);
    }
    out->tried = t->tried, out->failed = t->failed, out->pruned = t->pruned;
    double predicted[MAX_SHAPES];
    out->best = choose(t, predicted, &out->searched);
    if (!out->searched)  /* no time, or no candidate passed: what the search started from */
        out->best = first;
    progress(t, CLF_TUNE_MEASURE);
    if ((st = clf_gemm_params_apply(ctx, &out->best)) == CLF_OK)
        st = measure(t, out);
out:
    out->cancelled = t && t->cancelled;
    out->seconds = clf_now() - start;
    if (was != CLF_GEMM_CLBLAST) {
        clf_status back = clf_ctx_gemm_set(ctx, was);
        if (!st)
            st = back;
    }
    tuner_free(t);
    return st;
}
