/* tune_kernels.c: clf_kernel_params_tune, the search of clformer's own
 * kernels' parameters: the attention kernels' tiles and the row-wise ops'
 * work-group size (see struct clf_kernel_params), within a budget, telling
 * the caller's progress callback how it goes (`clformer tune` prints it).
 *
 * Attention is timed forward and backward on a training batch's
 * self-attention of the small and base presets (32 sequences of 64 tokens
 * with padding, 4 heads of d_k 64); the row-wise ops as layer norm forward
 * and backward over 2560×256 plus softmax forward and backward over the
 * 512×8000 rows of a logits block. Every candidate is checked before it is
 * timed: the attention output against the naive variant (CLBlast's GEMMs
 * and the softmax op, another code path), the attention gradients and the
 * row ops against the built-in choice's results, which the test suite
 * checks against plain C. The budget counts from the call: setting up and
 * timing the built-in choice always run, candidates stop at the deadline
 * (or when the callback asks), attention taking 60% of what is left. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/rand.h"
#include "base/status.h"
#include "clformer.h"

enum { ATT_B = 32, ATT_H = 4, ATT_N = 64, ATT_DK = 64, LN_T = 2560, LN_D = 256, SM_R = 512, SM_V = 8000 };

#define MIN_SECONDS 0.3

/* ------------------------------------------------------------ helpers */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs fn(arg) once to warm up, then until min_seconds have passed (at
 * least 3 times), waiting for the device after each run; the median
 * seconds per run, or -1 if fn failed. */
static double time_runs(clf_ctx_t *ctx, clf_status (*fn)(clf_ctx_t *, void *), void *arg, double min_seconds)
{
    enum { MAX_RUNS = 1000 };
    double t[MAX_RUNS];
    if (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK)
        return -1;
    int n = 0;
    double start = clf_now();
    while (n < MAX_RUNS && (n < 3 || clf_now() - start < min_seconds)) {
        double t0 = clf_now();
        if (fn(ctx, arg) != CLF_OK || clf_ctx_finish(ctx) != CLF_OK)
            return -1;
        t[n++] = clf_now() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

static clf_status tensor_random(clf_ctx_t *ctx, clf_tensor *t, size_t rows, size_t cols, unsigned seed,
                                float scale)
{
    size_t shape[2] = {rows, cols}, n = rows * cols;
    clf_status st = clf_tensor_init(ctx, t, 2, shape);
    if (st || !scale)
        return st;
    float *h = malloc(n * sizeof *h);
    if (!h)
        return CLF_ERR_MEMORY;
    clf_rand_fill(h, n, seed, scale);
    st = clf_tensor_upload(ctx, t, h);
    free(h);
    return st;
}

/* Downloads t and compares it with want (n floats): |got - want| ≤ 1e-4 +
 * 1e-3·|want| everywhere (NaN fails). With want_fill set, fills want. */
static clf_status check(clf_ctx_t *ctx, const clf_tensor *t, float *want, bool want_fill, float *tmp, size_t n,
                        bool *ok)
{
    clf_status st = clf_tensor_download(ctx, t, want_fill ? want : tmp);
    if (st || want_fill)
        return st;
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(tmp[i] - want[i]) <= 1e-4f + 1e-3f * fabsf(want[i])))
            *ok = false;
    return CLF_OK;
}

/* ---------------------------------------------------------- attention */

struct attn_case {
    struct clf_attention_desc d;
    clf_tensor q, k, v, o, lse, dout, dq, dk, dv;
    clf_tensor key_len; /* i32 (ATT_B) */
    struct clf_attention_workspace ws;
    float *want[4], *tmp;
};

static struct clf_attention_layout lay(const clf_tensor *t)
{
    return (struct clf_attention_layout){t->buf, t->offset, ATT_H * ATT_N * ATT_DK, ATT_N * ATT_DK, ATT_DK};
}

static clf_status attn_run(clf_ctx_t *ctx, void *arg)
{
    struct attn_case *a = arg;
    struct clf_attention_layout q = lay(&a->q), k = lay(&a->k), v = lay(&a->v), o = lay(&a->o), dout = lay(&a->dout),
                                dq = lay(&a->dq), dk = lay(&a->dk), dv = lay(&a->dv);
    clf_status st = clf_attention_forward(ctx, &o, &a->lse, &q, &k, &v, &a->d);
    if (!st)
        st = clf_attention_backward(ctx, &dq, &dk, &dv, &dout, &q, &k, &v, &o, &a->lse, &a->ws, &a->d);
    return st;
}

static clf_status attn_setup(clf_ctx_t *ctx, struct attn_case *a)
{
    const size_t rows = (size_t)ATT_B * ATT_H * ATT_N, n = rows * ATT_DK;
    a->d = (struct clf_attention_desc){.batch = ATT_B, .heads = ATT_H, .n_q = ATT_N, .n_k = ATT_N,
                                       .d_k = ATT_DK, .window = -1};
    const struct { clf_tensor *t; size_t cols; unsigned seed; float scale; } ts[] = {
        {&a->q, ATT_DK, 1, 2}, {&a->k, ATT_DK, 2, 2}, {&a->v, ATT_DK, 3, 2}, {&a->dout, ATT_DK, 4, 2},
        {&a->o, ATT_DK, 0, 0}, {&a->dq, ATT_DK, 0, 0}, {&a->dk, ATT_DK, 0, 0}, {&a->dv, ATT_DK, 0, 0},
        {&a->lse, 1, 0, 0},
    };
    clf_status st;
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        if ((st = tensor_random(ctx, ts[i].t, rows, ts[i].cols, ts[i].seed, ts[i].scale)))
            return st;
    /* padded sequences of 33..64 tokens, as a length-bucketed batch has */
    int32_t len[ATT_B];
    size_t nb = ATT_B;
    for (int b = 0; b < ATT_B; b++)
        len[b] = ATT_N - (b * 7) % (ATT_N / 2);
    if ((st = clf_tensor_init_dtype(ctx, &a->key_len, CLF_I32, 1, &nb)) ||
        (st = clf_tensor_upload_i32(ctx, &a->key_len, len)))
        return st;
    a->d.key_len = &a->key_len;
    for (int i = 0; i < 4; i++)
        if (!(a->want[i] = malloc(n * sizeof(float))))
            return CLF_ERR_MEMORY;
    if (!(a->tmp = malloc(n * sizeof(float))))
        return CLF_ERR_MEMORY;
    /* the forward's reference: the naive variant */
    struct clf_attention_naive_workspace nws = {0};
    struct clf_attention_layout q = lay(&a->q), k = lay(&a->k), v = lay(&a->v), o = lay(&a->o);
    if ((st = clf_attention_naive_workspace_init(ctx, &nws, ATT_B, ATT_H, ATT_N, ATT_N)) == CLF_OK &&
        (st = clf_attention_naive_forward(ctx, &o, &nws, &q, &k, &v, &a->d)) == CLF_OK)
        st = clf_tensor_download(ctx, &a->o, a->want[0]);
    clf_attention_naive_workspace_free(&nws);
    return st;
}

static void attn_free(struct attn_case *a)
{
    clf_tensor *ts[] = {&a->q, &a->k, &a->v, &a->o, &a->lse, &a->dout, &a->dq, &a->dk, &a->dv, &a->key_len};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clf_tensor_free(ts[i]);
    for (int i = 0; i < 4; i++)
        free(a->want[i]);
    free(a->tmp);
}

/* Runs the kernel parameters in force once, checks them (the built-in's
 * run, first, records the gradients' reference) and times them; negative
 * when they fail. */
static double attn_measure(clf_ctx_t *ctx, struct attn_case *a, bool first)
{
    const size_t n = (size_t)ATT_B * ATT_H * ATT_N * ATT_DK;
    double t = -1;
    bool ok = true;
    /* a fresh workspace: it caches the kernels of the tiles it first saw */
    if (clf_attention_workspace_init(ctx, &a->ws, ATT_B, ATT_H, ATT_N) != CLF_OK)
        return -1;
    if (attn_run(ctx, a) == CLF_OK && check(ctx, &a->o, a->want[0], false, a->tmp, n, &ok) == CLF_OK &&
        check(ctx, &a->dq, a->want[1], first, a->tmp, n, &ok) == CLF_OK &&
        check(ctx, &a->dk, a->want[2], first, a->tmp, n, &ok) == CLF_OK &&
        check(ctx, &a->dv, a->want[3], first, a->tmp, n, &ok) == CLF_OK && ok)
        t = time_runs(ctx, attn_run, a, MIN_SECONDS);
    clf_attention_workspace_free(&a->ws);
    return t;
}

/* ------------------------------------------------------- row-wise ops */

struct rows_case {
    clf_tensor x, y, mean, rstd, gain, bias, dy, dx, dgain, dbias;  /* layer norm, LN_T×LN_D */
    clf_tensor sx, sy, sdy, sdx;                                     /* softmax, SM_R×SM_V */
    float *want[5], *tmp;
};

static clf_status rows_run(clf_ctx_t *ctx, void *arg)
{
    struct rows_case *r = arg;
    clf_status st = clf_layernorm_forward(ctx, &r->y, &r->mean, &r->rstd, &r->x, &r->gain, &r->bias, 1e-5f);
    if (!st)
        st = clf_layernorm_backward(ctx, &r->dx, &r->dgain, &r->dbias, &r->dy, &r->x, &r->mean, &r->rstd, &r->gain);
    if (!st)
        st = clf_softmax_forward(ctx, &r->sy, &r->sx, NULL);
    if (!st)
        st = clf_softmax_backward(ctx, &r->sdx, &r->sy, &r->sdy);
    return st;
}

static clf_status rows_setup(clf_ctx_t *ctx, struct rows_case *r)
{
    const struct { clf_tensor *t; size_t rows, cols; unsigned seed; float scale; } ts[] = {
        {&r->x, LN_T, LN_D, 11, 4},   {&r->gain, 1, LN_D, 12, 1}, {&r->bias, 1, LN_D, 13, 1},
        {&r->dy, LN_T, LN_D, 14, 1},  {&r->y, LN_T, LN_D, 0, 0},  {&r->dx, LN_T, LN_D, 0, 0},
        {&r->mean, LN_T, 1, 0, 0},    {&r->rstd, LN_T, 1, 0, 0},  {&r->dgain, 1, LN_D, 0, 0},
        {&r->dbias, 1, LN_D, 0, 0},   {&r->sx, SM_R, SM_V, 15, 16}, {&r->sdy, SM_R, SM_V, 16, 1},
        {&r->sy, SM_R, SM_V, 0, 0},   {&r->sdx, SM_R, SM_V, 0, 0},
    };
    clf_status st;
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        if ((st = tensor_random(ctx, ts[i].t, ts[i].rows, ts[i].cols, ts[i].seed, ts[i].scale)))
            return st;
    for (int i = 0; i < 5; i++)
        if (!(r->want[i] = malloc((size_t)SM_R * SM_V * sizeof(float))))
            return CLF_ERR_MEMORY;
    return (r->tmp = malloc((size_t)SM_R * SM_V * sizeof(float))) ? CLF_OK : CLF_ERR_MEMORY;
}

static void rows_free(struct rows_case *r)
{
    clf_tensor *ts[] = {&r->x, &r->y, &r->mean, &r->rstd, &r->gain, &r->bias, &r->dy,
                        &r->dx, &r->dgain, &r->dbias, &r->sx, &r->sy, &r->sdy, &r->sdx};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clf_tensor_free(ts[i]);
    for (int i = 0; i < 5; i++)
        free(r->want[i]);
    free(r->tmp);
}

static double rows_measure(clf_ctx_t *ctx, struct rows_case *r, bool first)
{
    const size_t ln = (size_t)LN_T * LN_D, sm = (size_t)SM_R * SM_V;
    bool ok = true;
    /* the parameter gradients are added to: start them from zero for the check */
    if (clf_tensor_fill(ctx, &r->dgain, 0) || clf_tensor_fill(ctx, &r->dbias, 0) || rows_run(ctx, r))
        return -1;
    const struct { const clf_tensor *t; size_t n; } outs[5] = {
        {&r->y, ln}, {&r->dx, ln}, {&r->dgain, LN_D}, {&r->sy, sm}, {&r->sdx, sm},
    };
    for (int i = 0; i < 5; i++)
        if (check(ctx, outs[i].t, r->want[i], first, r->tmp, outs[i].n, &ok))
            return -1;
    if (!ok)
        return -1;
    return time_runs(ctx, rows_run, r, MIN_SECONDS);
}

/* ------------------------------------------------------------ search */

struct search {
    clf_ctx_t *ctx;
    const struct clf_tune_opts *o;
    struct clf_kernel_tune_result *out;
    double start, deadline;
    bool cancelled;
};

/* Tells the caller's callback of the stage or of the candidate just timed
 * (what, its seconds and the best so far); a nonzero answer stops the
 * search as the deadline would. */
static void progress(struct search *s, enum clf_tune_stage stage, const char *what, double t, double best)
{
    if (!s->o->progress)
        return;
    double now = clf_now();
    const struct clf_tune_progress p = {
        .stage = stage, .tried = s->out->tried, .failed = s->out->failed,
        .elapsed_s = now - s->start, .left_s = s->deadline > now ? s->deadline - now : 0,
        .candidate = what, .candidate_s = t, .best_s = best,
    };
    if (s->o->progress(s->o->user, &p) && !s->cancelled) {
        s->cancelled = true;
        s->deadline = now;
    }
}

static bool time_left(const struct search *s, double until)
{
    return !s->cancelled && clf_now() < until && clf_now() < s->deadline;
}

/* attention: an earlier file's tiles, then tiles around the usual ones;
 * each pair as the device clamps it, once */
static void search_attention(struct search *s, struct attn_case *a, struct clf_attention_tuning at, double until)
{
    static const unsigned tiles[][2] = {{0, 0}, {64, 64},  {32, 64},  {64, 32},  {128, 64}, {64, 128}, {32, 32},
                                        {128, 128}, {16, 64}, {64, 16},  {32, 128}, {128, 32}, {16, 32},
                                        {32, 16},  {16, 16},  {16, 128}, {128, 16}, {8, 64},   {8, 32},
                                        {256, 64}, {64, 256}, {8, 16},   {256, 32}};
    struct clf_kernel_tune_result *out = s->out;
    const struct clf_kernel_params *prior = s->o->prior_kernels;
    size_t seen[64][2];
    int nseen = 0;
    seen[nseen][0] = at.tile_q, seen[nseen++][1] = at.tile_k;
    progress(s, CLF_TUNE_ATTENTION, NULL, 0, out->attn_after_s);
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0] && time_left(s, until); i++) {
        struct clf_kernel_params p = {.attn_tile_q = tiles[i][0], .attn_tile_k = tiles[i][1]};
        if (i == 0)  /* the slot of the earlier file's tiles */
            p.attn_tile_q = prior ? prior->attn_tile_q : 0, p.attn_tile_k = prior ? prior->attn_tile_k : 0;
        if (!p.attn_tile_q && !p.attn_tile_k)
            continue;
        if (clf_kernel_params_set(s->ctx, &p) || clf_attention_tuning_get(s->ctx, ATT_DK, &at))
            continue;
        bool dup = false;
        for (int j = 0; j < nseen; j++)
            dup |= seen[j][0] == at.tile_q && seen[j][1] == at.tile_k;
        if (dup)
            continue;
        seen[nseen][0] = at.tile_q, seen[nseen++][1] = at.tile_k;
        out->tried++;
        double t = attn_measure(s->ctx, a, false);
        char what[48];
        snprintf(what, sizeof what, "attention %zux%zu", at.tile_q, at.tile_k);
        if (t < 0) {
            out->failed++;
            continue;
        }
        if (t < out->attn_after_s) {
            out->attn_after_s = t;
            out->best.attn_tile_q = (unsigned)at.tile_q;
            out->best.attn_tile_k = (unsigned)at.tile_k;
        }
        progress(s, CLF_TUNE_ATTENTION, what, t, out->attn_after_s);
    }
}

/* the row-wise ops' work-group size: an earlier file's, then every power
 * of two the device takes */
static void search_rows(struct search *s, struct rows_case *r)
{
    struct clf_kernel_tune_result *out = s->out;
    const struct clf_kernel_params *prior = s->o->prior_kernels;
    size_t max_wg = clf_ctx_device(s->ctx)->max_work_group;
    unsigned wgs[16], nwg = 0;
    if (prior && prior->rows_wg)
        wgs[nwg++] = prior->rows_wg;
    for (unsigned wg = 1; wg <= 256; wg *= 2)
        if (!nwg || wg != wgs[0])
            wgs[nwg++] = wg;
    progress(s, CLF_TUNE_ROWS, NULL, 0, out->rows_after_s);
    for (unsigned i = 0; i < nwg && time_left(s, s->deadline); i++) {
        unsigned wg = wgs[i];
        if (wg > max_wg)
            continue;
        struct clf_kernel_params p = {.rows_wg = wg};
        if (clf_kernel_params_set(s->ctx, &p))
            continue;
        out->tried++;
        double t = rows_measure(s->ctx, r, false);
        char what[48];
        snprintf(what, sizeof what, "row ops, %u work-items", wg);
        if (t < 0) {
            out->failed++;
            continue;
        }
        if (t < out->rows_after_s) {
            out->rows_after_s = t;
            out->best.rows_wg = wg;
        }
        progress(s, CLF_TUNE_ROWS, what, t, out->rows_after_s);
    }
}

clf_status clf_kernel_params_tune(clf_ctx_t *ctx, const struct clf_tune_opts *o, struct clf_kernel_tune_result *out)
{
    memset(out, 0, sizeof *out);
    if (!(o->seconds >= 0) || !isfinite(o->seconds))
        return clf_error_set(ctx, CLF_ERR_ARG, "tuning: seconds %g: want a budget of 0 or more seconds", o->seconds);
    char why[256];
    if (o->prior_kernels && !clf_kernel_params_check(o->prior_kernels, why, sizeof why))
        return clf_error_set(ctx, CLF_ERR_ARG, "tuning: prior_kernels: %s", why);
    struct search s = {.ctx = ctx, .o = o, .out = out, .start = clf_now()};
    s.deadline = s.start + o->seconds;
    snprintf(out->attn_case, sizeof out->attn_case, "d_k %d, forward+backward of %dx%d tokens x %d heads", ATT_DK,
             ATT_B, ATT_N, ATT_H);
    snprintf(out->rows_case, sizeof out->rows_case, "layer norm %dx%d and softmax %dx%d, forward+backward", LN_T,
             LN_D, SM_R, SM_V);
    const struct clf_kernel_params builtin = {0};
    struct attn_case *a = calloc(1, sizeof *a);
    struct rows_case *r = calloc(1, sizeof *r);
    clf_status st = a && r ? CLF_OK : clf_error_set(ctx, CLF_ERR_MEMORY, "tuning: out of host memory");
    progress(&s, CLF_TUNE_SETUP, NULL, 0, 0);
    if (!st)
        st = clf_kernel_params_set(ctx, &builtin);
    if (!st)
        st = attn_setup(ctx, a);
    if (!st)
        st = rows_setup(ctx, r);
    if (st)
        goto done;

    /* the built-in choice: the baseline, and the reference of the checks */
    progress(&s, CLF_TUNE_BASELINE, NULL, 0, 0);
    struct clf_attention_tuning at;
    if ((st = clf_attention_tuning_get(ctx, ATT_DK, &at)))
        goto done;
    double ta = attn_measure(ctx, a, true), tr = rows_measure(ctx, r, true);
    if (ta < 0 || tr < 0) {
        st = clf_error_set(ctx, CLF_ERR_OPENCL,
                           "tuning: the built-in attention or row-op parameters fail their own check (%s); run the "
                           "test suite on this device", clf_ctx_error(ctx));
        goto done;
    }
    out->attn_before_s = out->attn_after_s = ta;
    out->rows_before_s = out->rows_after_s = tr;
    out->best.attn_tile_q = (unsigned)at.tile_q;
    out->best.attn_tile_k = (unsigned)at.tile_k;

    double now = clf_now();
    search_attention(&s, a, at, now + (s.deadline - now) * 0.6);
    search_rows(&s, r);

done:;
    /* the best in force; a failure leaves the built-in parameters, always valid */
    clf_status in_force = clf_kernel_params_set(ctx, st ? &builtin : &out->best);
    if (st == CLF_OK)
        st = in_force;
    out->cancelled = s.cancelled;
    out->seconds = clf_now() - s.start;
    if (a)
        attn_free(a);
    if (r)
        rows_free(r);
    free(a);
    free(r);
    return st;
}
