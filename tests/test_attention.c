/* test_attention.c: tiled and naive attention against the double reference
 * of tests/ref_attention.c on shapes that are no multiple of any tile
 * (n_q, n_k in {1, 7, 33, 100, 257}, d_k in {32, 64, 80} and odd ones),
 * every mask combination, fused (B·T, 3·H·d_k) and contiguous layouts;
 * backward against the analytic reference, itself checked against central
 * finite differences; fully masked rows; run-to-run bit identity; a window
 * covering everything equals full attention exactly; bad arguments. The
 * split form's cases (lanes > 1, what GPUs run) run where the device is a
 * GPU or shaped as one (CLF_DEVICE_LIMITS=gpu) and skip elsewhere. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_attention.h"
#include "attention/attention_internal.h" /* clf_attention_fused_by_default */
#include "testutil.h"

/* Every case's time limit. The cases are bound by compiling their tiles'
 * programs (a few seconds to a minute each on PoCL, cold), not by running
 * them, and Criterion runs two at a time beside another test binary: in a
 * fresh clone's CI other_head_dims ran out of a 120 s limit that it meets
 * in 50 s alone. The limit catches a hang; it times nothing. */
#define ATT_TIMEOUT TU_TIMEOUT(300)

struct acase {
    size_t B, H, nq, nk, dk;
    int kl_mode; /* 0 none, 1 ragged lengths, 2 first sequence has no key */
    bool causal;
    int window;
    size_t qoff;
    bool fused; /* q, k, v (and dq, dk, dv) in one (B·T, 3·H·d_k + 5) buffer; needs nq == nk */
};

/* One operand's place: a host buffer index and a layout inside it. */
struct place {
    size_t offset, bs, hs, rs;
};

static struct place contiguous(const struct acase *c, size_t n)
{
    return (struct place){0, c->H * n * c->dk, n * c->dk, c->dk};
}

/* (B·n, width) rows, operand `slot` of 3 (heads contiguous inside each block) */
static struct place rowmajor(const struct acase *c, size_t n, size_t slot, size_t nslots)
{
    size_t rs = nslots * c->H * c->dk + 5;
    return (struct place){3 + slot * c->H * c->dk, n * rs, c->dk, rs};
}

static size_t place_end(const struct acase *c, const struct place *p, size_t n)
{
    return p->offset + (c->B - 1) * p->bs + (c->H - 1) * p->hs + (n - 1) * p->rs + c->dk;
}

static void pack(float *buf, const struct place *p, const double *x, const struct acase *c, size_t n)
{
    for (size_t b = 0; b < c->B; b++)
        for (size_t h = 0; h < c->H; h++)
            for (size_t i = 0; i < n; i++)
                for (size_t e = 0; e < c->dk; e++)
                    buf[p->offset + b * p->bs + h * p->hs + i * p->rs + e] =
                        (float)x[((b * c->H + h) * n + i) * c->dk + e];
}

static void unpack(float *x, const float *buf, const struct place *p, const struct acase *c, size_t n)
{
    for (size_t b = 0; b < c->B; b++)
        for (size_t h = 0; h < c->H; h++)
            for (size_t i = 0; i < n; i++)
                for (size_t e = 0; e < c->dk; e++)
                    x[((b * c->H + h) * n + i) * c->dk + e] = buf[p->offset + b * p->bs + h * p->hs + i * p->rs + e];
}

static struct clf_attention_layout lay(cl_mem buf, const struct place *p)
{
    return (struct clf_attention_layout){buf, p->offset, p->bs, p->hs, p->rs};
}

static void key_lengths(int32_t *kl, const struct acase *c)
{
    for (size_t b = 0; b < c->B; b++) {
        if (c->kl_mode == 1)
            kl[b] = (int32_t)(c->nk - (b * c->nk) / (c->B + 1));
        else
            kl[b] = b == 0 ? 0 : (int32_t)(c->nk / 2 + 1);
    }
}

struct result {
    float *o, *lse, *dq, *dk, *dv; /* contiguous (B, H, n, d_k) */
};

static void result_free(struct result *r)
{
    free(r->o), free(r->lse), free(r->dq), free(r->dk), free(r->dv);
    memset(r, 0, sizeof *r);
}

/* Runs the device on inputs q, k, v, dO (contiguous doubles); naive or tiled; backward when asked. */
static struct result run_device(clf_ctx_t *ctx, const struct acase *c, const double *q, const double *k,
                                const double *v, const double *g, bool naive, bool backward)
{
    struct result r = {0};
    size_t nq = c->nq, nk = c->nk;
    struct place pq, pk, pv, po, pg;
    if (c->fused) {
        pq = rowmajor(c, nq, 0, 3), pk = rowmajor(c, nk, 1, 3), pv = rowmajor(c, nk, 2, 3);
        po = rowmajor(c, nq, 0, 1), pg = rowmajor(c, nq, 0, 1);
    } else {
        pq = contiguous(c, nq), pk = contiguous(c, nk), pv = contiguous(c, nk), po = contiguous(c, nq),
        pg = contiguous(c, nq);
    }
    size_t nin = c->fused ? place_end(c, &pv, nk) : 0;
    size_t sq = c->fused ? nin : place_end(c, &pq, nq), sk = c->fused ? nin : place_end(c, &pk, nk),
           so = place_end(c, &po, nq);
    float *hq = calloc(sq, 4), *hk = c->fused ? hq : calloc(sk, 4), *hv = c->fused ? hq : calloc(sk, 4);
    float *ho = malloc(so * 4), *hg = calloc(so, 4);
    pack(hq, &pq, q, c, nq);
    pack(hk, &pk, k, c, nk);
    pack(hv, &pv, v, c, nk);
    pack(hg, &pg, g, c, nq);
    for (size_t i = 0; i < so; i++)
        ho[i] = 777.0f; /* sentinel: entries outside the layout must survive */
    clf_tensor tq = tu_upload(ctx, hq, sq), tk = c->fused ? tq : tu_upload(ctx, hk, sk),
               tv = c->fused ? tq : tu_upload(ctx, hv, sk), to = tu_upload(ctx, ho, so), tg = tu_upload(ctx, hg, so);
    int32_t kl[64];
    clf_tensor tkl = {0};
    if (c->kl_mode) {
        key_lengths(kl, c);
        tkl = tu_upload_ints(ctx, kl, c->B);
    }
    struct clf_attention_desc d = {.batch = c->B,
                                   .heads = c->H,
                                   .n_q = nq,
                                   .n_k = nk,
                                   .d_k = c->dk,
                                   .key_len = c->kl_mode ? &tkl : NULL,
                                   .causal = c->causal,
                                   .window = c->window,
                                   .q_pos_offset = c->qoff};
    struct clf_attention_layout lq = lay(tq.buf, &pq), lk = lay(tk.buf, &pk), lv = lay(tv.buf, &pv),
                                lo = lay(to.buf, &po), lg = lay(tg.buf, &pg);
    size_t rows = c->B * c->H * nq;
    clf_tensor tl;
    cr_assert_eq(clf_tensor_init(ctx, &tl, 1, &rows), CLF_OK);
    clf_status st;
    if (naive) {
        struct clf_attention_naive_workspace nws;
        cr_assert_eq(clf_attention_naive_workspace_init(ctx, &nws, c->B, c->H, nq, nk), CLF_OK);
        st = clf_attention_naive_forward(ctx, &lo, &nws, &lq, &lk, &lv, &d);
        cr_assert_eq(st, CLF_OK, "naive: %s", clf_ctx_error(ctx));
        clf_ctx_finish(ctx);
        clf_attention_naive_workspace_free(&nws);
    } else {
        st = clf_attention_forward(ctx, &lo, &tl, &lq, &lk, &lv, &d);
        cr_assert_eq(st, CLF_OK, "forward: %s", clf_ctx_error(ctx));
    }
    float *got = tu_download(ctx, &to, so);
    r.o = malloc(c->B * c->H * nq * c->dk * 4);
    unpack(r.o, got, &po, c, nq);
    /* every entry the layout does not cover keeps its sentinel */
    float *mark = calloc(so, 4);
    double *ones = malloc(c->B * c->H * nq * c->dk * sizeof *ones);
    for (size_t i = 0; i < c->B * c->H * nq * c->dk; i++)
        ones[i] = 1;
    pack(mark, &po, ones, c, nq);
    for (size_t i = 0; i < so; i++)
        if (mark[i] == 0)
            cr_assert_eq(got[i], 777.0f, "o entry %zu outside the layout was written", i);
    free(mark), free(ones), free(got);
    if (!naive)
        r.lse = tu_download(ctx, &tl, rows);
    if (backward) {
        struct clf_attention_workspace ws;
        cr_assert_eq(clf_attention_workspace_init(ctx, &ws, c->B, c->H, nq), CLF_OK);
        /* gradients go to buffers shaped like the inputs, pre-filled with garbage (overwrite semantics) */
        size_t nj = sq > sk ? sq : sk;
        float *junk = malloc(nj * 4);
        for (size_t i = 0; i < nj; i++)
            junk[i] = NAN;
        clf_tensor gq = tu_upload(ctx, junk, sq), gk = c->fused ? gq : tu_upload(ctx, junk, sk),
                   gv = c->fused ? gq : tu_upload(ctx, junk, sk);
        struct clf_attention_layout ldq = lay(gq.buf, &pq), ldk = lay(gk.buf, &pk), ldv = lay(gv.buf, &pv);
        st = clf_attention_backward(ctx, &ldq, &ldk, &ldv, &lg, &lq, &lk, &lv, &lo, &tl, &ws, &d);
        cr_assert_eq(st, CLF_OK, "backward: %s", clf_ctx_error(ctx));
        float *bq = tu_download(ctx, &gq, sq), *bk = c->fused ? bq : tu_download(ctx, &gk, sk),
              *bv = c->fused ? bq : tu_download(ctx, &gv, sk);
        r.dq = malloc(rows * c->dk * 4);
        r.dk = malloc(c->B * c->H * nk * c->dk * 4);
        r.dv = malloc(c->B * c->H * nk * c->dk * 4);
        unpack(r.dq, bq, &pq, c, nq);
        unpack(r.dk, bk, &pk, c, nk);
        unpack(r.dv, bv, &pv, c, nk);
        free(bq);
        if (!c->fused)
            free(bk), free(bv), clf_tensor_free(&gk), clf_tensor_free(&gv);
        clf_tensor_free(&gq);
        free(junk);
        clf_attention_workspace_free(&ws);
    }
    clf_tensor_free(&tl);
    clf_tensor_free(&tq);
    if (!c->fused)
        clf_tensor_free(&tk), clf_tensor_free(&tv), free(hk), free(hv);
    clf_tensor_free(&to), clf_tensor_free(&tg), clf_tensor_free(&tkl);
    free(hq), free(ho), free(hg);
    return r;
}

static void make_inputs(const struct acase *c, double **q, double **k, double **v, double **g, unsigned seed)
{
    size_t nq = c->B * c->H * c->nq * c->dk, nk = c->B * c->H * c->nk * c->dk;
    float *t = malloc((nq > nk ? nq : nk) * 4);
    tu_fill(t, nq, seed, -2, 2), *q = ref_to_double(t, nq);
    tu_fill(t, nk, seed + 1, -2, 2), *k = ref_to_double(t, nk);
    tu_fill(t, nk, seed + 2, -1, 1), *v = ref_to_double(t, nk);
    tu_fill(t, nq, seed + 3, -1, 1), *g = ref_to_double(t, nq);
    free(t);
}

static struct ref_attn_desc ref_desc(const struct acase *c, const int32_t *kl)
{
    return (struct ref_attn_desc){c->B, c->H, c->nq, c->nk, c->dk, c->kl_mode ? kl : NULL, c->causal, c->window,
                                  c->qoff, 0};
}

static void describe(char *s, size_t n, const char *what, const struct acase *c)
{
    snprintf(s, n, "%s B=%zu H=%zu nq=%zu nk=%zu dk=%zu kl=%d causal=%d window=%d qoff=%zu fused=%d", what, c->B,
             c->H, c->nq, c->nk, c->dk, c->kl_mode, c->causal, c->window, c->qoff, c->fused);
}

/* Forward (tiled and naive) and, when asked, backward against the reference. */
static void check_case(clf_ctx_t *ctx, const struct acase *c, bool naive, bool backward)
{
    double *q, *k, *v, *g;
    make_inputs(c, &q, &k, &v, &g, 11 + (unsigned)(c->nq * 7 + c->nk));
    int32_t kl[64];
    if (c->kl_mode)
        key_lengths(kl, c);
    struct ref_attn_desc rd = ref_desc(c, kl);
    size_t no = c->B * c->H * c->nq * c->dk, nkk = c->B * c->H * c->nk * c->dk, rows = c->B * c->H * c->nq;
    double *o = malloc(no * sizeof *o), *lse = malloc(rows * sizeof *lse);
    ref_attention_forward(o, lse, q, k, v, &rd);
    float *of = ref_to_float(o, no), *lf = ref_to_float(lse, rows);
    char what[256];
    struct result r = run_device(ctx, c, q, k, v, g, false, backward);
    describe(what, sizeof what, "tiled o", c);
    cr_assert(tu_close(what, r.o, of, no, 2e-5, 1e-4), "%s", what);
    describe(what, sizeof what, "tiled lse", c);
    cr_assert(tu_close(what, r.lse, lf, rows, 2e-5, 1e-5), "%s", what);
    if (backward) {
        double *dq = malloc(no * sizeof *dq), *dk = malloc(nkk * sizeof *dk), *dv = malloc(nkk * sizeof *dv);
        ref_attention_backward(dq, dk, dv, g, q, k, v, &rd);
        float *f;
        describe(what, sizeof what, "dq", c);
        f = ref_to_float(dq, no);
        cr_assert(tu_close(what, r.dq, f, no, 2e-5, 2e-4), "%s", what);
        free(f);
        describe(what, sizeof what, "dk", c);
        f = ref_to_float(dk, nkk);
        cr_assert(tu_close(what, r.dk, f, nkk, 2e-5, 2e-4), "%s", what);
        free(f);
        describe(what, sizeof what, "dv", c);
        f = ref_to_float(dv, nkk);
        cr_assert(tu_close(what, r.dv, f, nkk, 2e-5, 2e-4), "%s", what);
        free(f);
        free(dq), free(dk), free(dv);
    }
    result_free(&r);
    if (naive) {
        r = run_device(ctx, c, q, k, v, g, true, false);
        describe(what, sizeof what, "naive o", c);
        cr_assert(tu_close(what, r.o, of, no, 2e-5, 1e-4), "%s", what);
        result_free(&r);
    }
    free(q), free(k), free(v), free(g), free(o), free(lse), free(of), free(lf);
}

static const size_t sizes[] = {1, 7, 33, 100, 257};
static const int windows[] = {-1, 0, 1, 5, 64};

/* Every mask combination on each d_k, the sizes rotating so each appears as n_q and n_k. */
static void forward_sweep(size_t dk, bool backward, bool naive)
{
    clf_ctx_t *ctx = tu_ctx();
    int n = 0;
    for (int kl = 0; kl < 3; kl++)
        for (int causal = 0; causal < 2; causal++)
            for (int w = 0; w < 5; w++, n++) {
                size_t nq = sizes[n % 5], nk = sizes[(n + 1 + n / 5) % 5];
                if (backward) { /* keep the double reference quick */
                    nq = nq > 100 ? 100 : nq;
                    nk = nk > 100 ? 100 : nk;
                }
                struct acase c = {2, 2, nq, nk, dk, kl, causal, windows[w], 0, false};
                if (n % 3 == 0)
                    c.nk = c.nq, c.fused = true;
                if (n % 4 == 1 && c.nk > c.nq)
                    c.qoff = c.nk - c.nq; /* queries at the end, as when decoding */
                check_case(ctx, &c, naive, backward);
            }
    clf_ctx_free(ctx);
}

Test(attention, forward_dk32, .timeout = ATT_TIMEOUT) { forward_sweep(32, false, true); }
Test(attention, forward_dk64, .timeout = ATT_TIMEOUT) { forward_sweep(64, false, true); }
Test(attention, forward_dk80, .timeout = ATT_TIMEOUT) { forward_sweep(80, false, true); }
Test(attention, backward_dk32, .timeout = ATT_TIMEOUT) { forward_sweep(32, true, false); }
Test(attention, backward_dk80, .timeout = ATT_TIMEOUT) { forward_sweep(80, true, false); }

/* The largest shapes once each: 257 both ways, every mask on. */
Test(attention, forward_257, .timeout = ATT_TIMEOUT)
{
    clf_ctx_t *ctx = tu_ctx();
    struct acase c1 = {2, 2, 257, 257, 64, 1, true, 64, 0, true};
    check_case(ctx, &c1, true, true);
    struct acase c2 = {1, 3, 257, 257, 64, 0, false, -1, 0, false};
    check_case(ctx, &c2, true, false);
    clf_ctx_free(ctx);
}

/* Head dims that take the float4 and scalar paths, and the largest. */
static void other_head_dims(void)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t dks[] = {12, 33, 128, 256};
    for (int i = 0; i < 4; i++) {
        struct acase c = {2, 1, 33, 7 + 26 * (size_t)i, dks[i], i % 3, i % 2, i == 2 ? 5 : -1, 0, false};
        check_case(ctx, &c, true, dks[i] <= 128);
    }
    clf_ctx_free(ctx);
}
Test(attention, other_head_dims, .timeout = ATT_TIMEOUT) { other_head_dims(); }


/* The analytic reference backward against central differences of the
 * reference forward (loss Σ dO∘O), in double; the device is checked
 * against it above, and directly against differences here on tiny shapes. */
Test(attention, backward_finite_differences, .timeout = ATT_TIMEOUT)
{
    clf_ctx_t *ctx = tu_ctx();
    struct acase cases[] = {
        {2, 2, 7, 7, 8, 1, true, 1, 0, false},   {2, 2, 5, 9, 12, 2, false, -1, 0, false},
        {1, 2, 9, 5, 8, 0, false, 2, 0, false},  {2, 1, 3, 8, 8, 1, true, -1, 5, false},
        {2, 2, 6, 6, 8, 0, true, 0, 0, true},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const struct acase *c = &cases[ci];
        double *q, *k, *v, *g;
        make_inputs(c, &q, &k, &v, &g, 100 + (unsigned)ci);
        int32_t kl[64];
        if (c->kl_mode)
            key_lengths(kl, c);
        struct ref_attn_desc rd = ref_desc(c, kl);
        size_t no = c->B * c->H * c->nq * c->dk, nkk = c->B * c->H * c->nk * c->dk;
        double *o = malloc(no * sizeof *o);
        double *dq = malloc(no * sizeof *dq), *dk = malloc(nkk * sizeof *dk), *dv = malloc(nkk * sizeof *dv);
        ref_attention_backward(dq, dk, dv, g, q, k, v, &rd);
        struct result r = run_device(ctx, c, q, k, v, g, false, true);
        double *xs[3] = {q, k, v}, *an[3] = {dq, dk, dv};
        float *dev[3] = {r.dq, r.dk, r.dv};
        size_t ns[3] = {no, nkk, nkk};
        const double h = 1e-5;
        for (int w = 0; w < 3; w++)
            for (size_t e = 0; e < ns[w]; e++) {
                double keep = xs[w][e], lp = 0, lm = 0;
                xs[w][e] = keep + h;
                ref_attention_forward(o, NULL, q, k, v, &rd);
                for (size_t t = 0; t < no; t++)
                    lp += o[t] * g[t];
                xs[w][e] = keep - h;
                ref_attention_forward(o, NULL, q, k, v, &rd);
                for (size_t t = 0; t < no; t++)
                    lm += o[t] * g[t];
                xs[w][e] = keep;
                double fd = (lp - lm) / (2 * h);
                cr_assert(fabs(an[w][e] - fd) <= 1e-7 + 1e-6 * fabs(fd),
                          "case %zu operand %d elt %zu: reference %.10g, differences %.10g", ci, w, e, an[w][e], fd);
                cr_assert(fabs(dev[w][e] - fd) <= 2e-5 + 2e-4 * fabs(fd),
                          "case %zu operand %d elt %zu: device %.8g, differences %.8g", ci, w, e, dev[w][e], fd);
            }
        result_free(&r);
        free(q), free(k), free(v), free(g), free(o), free(dq), free(dk), free(dv);
    }
    clf_ctx_free(ctx);
}

static void fully_masked_rows(void)
{
    clf_ctx_t *ctx = tu_ctx();
    /* sequence 0 has no key at all; causal with q_pos_offset 0 and a key
     * length of 3 leaves rows of the others partly empty too */
    struct acase c = {3, 2, 33, 40, 32, 2, true, -1, 0, false};
    double *q, *k, *v, *g;
    make_inputs(&c, &q, &k, &v, &g, 5);
    struct result r = run_device(ctx, &c, q, k, v, g, false, true);
    size_t per = c.H * c.nq * c.dk;
    for (size_t i = 0; i < per; i++) {
        cr_assert_eq(r.o[i], 0.0f, "o[%zu] = %g", i, r.o[i]);
        cr_assert_eq(r.dq[i], 0.0f, "dq[%zu] = %g", i, r.dq[i]);
    }
    for (size_t i = 0; i < c.H * c.nk * c.dk; i++)
        cr_assert(r.dk[i] == 0.0f && r.dv[i] == 0.0f, "dk/dv[%zu] not zero", i);
    for (size_t i = 0; i < c.H * c.nq; i++)
        cr_assert_eq(r.lse[i], CLF_ATTENTION_LSE_EMPTY);
    for (size_t i = 0; i < c.B * c.H * c.nq * c.dk; i++)
        cr_assert(!isnan(r.o[i]) && !isnan(r.dq[i]), "NaN at %zu", i);
    result_free(&r);
    struct result n = run_device(ctx, &c, q, k, v, g, true, false);
    for (size_t i = 0; i < per; i++)
        cr_assert_eq(n.o[i], 0.0f, "naive o[%zu] = %g", i, n.o[i]);
    result_free(&n);
    free(q), free(k), free(v), free(g);
    clf_ctx_free(ctx);
}
Test(attention, fully_masked_rows_are_zero, .timeout = ATT_TIMEOUT) { fully_masked_rows(); }


static bool same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * 4) == 0; }

static void bit_identical(void)
{
    clf_ctx_t *ctx = tu_ctx();
    struct acase c = {2, 3, 100, 100, 64, 1, true, 5, 0, true};
    double *q, *k, *v, *g;
    make_inputs(&c, &q, &k, &v, &g, 9);
    struct result a = run_device(ctx, &c, q, k, v, g, false, true), b = run_device(ctx, &c, q, k, v, g, false, true);
    size_t nq = c.B * c.H * c.nq * c.dk, nk = c.B * c.H * c.nk * c.dk;
    cr_assert(same_bits(a.o, b.o, nq) && same_bits(a.lse, b.lse, c.B * c.H * c.nq));
    cr_assert(same_bits(a.dq, b.dq, nq) && same_bits(a.dk, b.dk, nk) && same_bits(a.dv, b.dv, nk));
    result_free(&a), result_free(&b);
    free(q), free(k), free(v), free(g);
    clf_ctx_free(ctx);
}
Test(attention, bit_identical_runs, .timeout = ATT_TIMEOUT) { bit_identical(); }


static void window_everything(void)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int causal = 0; causal < 2; causal++) {
        struct acase full = {2, 2, 100, 100, 32, 1, causal, -1, 0, false}, wide = full;
        wide.window = 100;
        double *q, *k, *v, *g;
        make_inputs(&full, &q, &k, &v, &g, 21);
        struct result a = run_device(ctx, &full, q, k, v, g, false, true),
                      b = run_device(ctx, &wide, q, k, v, g, false, true);
        size_t n = full.B * full.H * full.nq * full.dk;
        cr_assert(same_bits(a.o, b.o, n) && same_bits(a.dq, b.dq, n) && same_bits(a.dk, b.dk, n) &&
                  same_bits(a.dv, b.dv, n), "window >= n differs from full (causal %d)", causal);
        result_free(&a), result_free(&b);
        free(q), free(k), free(v), free(g);
    }
    clf_ctx_free(ctx);
}
Test(attention, window_covering_everything_is_full_attention, .timeout = ATT_TIMEOUT) { window_everything(); }


Test(attention, bad_arguments_are_refused)
{
    clf_ctx_t *ctx = tu_ctx();
    float x[256] = {0};
    clf_tensor t = tu_upload(ctx, x, 256), l = tu_upload(ctx, x, 16);
    struct clf_attention_layout a = {t.buf, 0, 64, 32, 8};
    struct clf_attention_desc d = {.batch = 2, .heads = 2, .n_q = 4, .n_k = 4, .d_k = 8, .window = -1};
    cr_assert_eq(clf_attention_forward(ctx, &a, &l, &a, &a, &a, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    d.n_k = 30; /* k would run past its buffer */
    cr_assert_eq(clf_attention_forward(ctx, &a, &l, &a, &a, &a, &d), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "attention_forward"), "%s", clf_ctx_error(ctx));
    d.n_k = 4, d.n_q = 3; /* lse numel */
    cr_assert_eq(clf_attention_forward(ctx, &a, &l, &a, &a, &a, &d), CLF_ERR_ARG);
    d.n_q = 4, d.d_k = 300;
    cr_assert_eq(clf_attention_forward(ctx, &a, &l, &a, &a, &a, &d), CLF_ERR_ARG);
    d.d_k = 8;
    /* key_len: int32, at least batch of them, counted in ints */
    int32_t kl[2] = {4, 3};
    clf_tensor k1 = tu_upload_ints(ctx, kl, 1), k2 = tu_upload_ints(ctx, kl, 2);
    d.key_len = &k2;
    cr_assert_eq(clf_attention_forward(ctx, &a, &l, &a, &a, &a, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    d.key_len = &k1;
    cr_assert_eq(clf_attention_forward(ctx, &a, &l, &a, &a, &a, &d), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "key_len holds 1 ints"), "%s", clf_ctx_error(ctx));
    d.key_len = &l; /* floats */
    cr_assert_eq(clf_attention_forward(ctx, &a, &l, &a, &a, &a, &d), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "key_len is f32"), "%s", clf_ctx_error(ctx));
    d.key_len = NULL;
    struct clf_attention_workspace ws;
    cr_assert_eq(clf_attention_workspace_init(ctx, &ws, 1, 2, 4), CLF_OK);
    cr_assert_eq(clf_attention_backward(ctx, &a, &a, &a, &a, &a, &a, &a, &a, &l, &ws, &d), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "workspace"), "%s", clf_ctx_error(ctx));
    /* kv_rows (keys read from other rows, beam search's ancestry) is
     * decoding's: the tiled forward, the naive forward and the backward,
     * whose kernels read each row's own keys, refuse it by name */
    struct clf_attention_naive_workspace nws;
    cr_assert_eq(clf_attention_naive_workspace_init(ctx, &nws, 2, 2, 4, 4), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_attention_naive_forward(ctx, &a, &nws, &a, &a, &a, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    d.kv_rows = &k2, d.kv_rows_stride = 1;
    cr_assert_eq(clf_attention_forward(ctx, &a, &l, &a, &a, &a, &d), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "attention_forward: kv_rows"), "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_attention_naive_forward(ctx, &a, &nws, &a, &a, &a, &d), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "attention_naive_forward: kv_rows"), "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_attention_backward(ctx, &a, &a, &a, &a, &a, &a, &a, &a, &l, &ws, &d), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "attention_backward: kv_rows"), "%s", clf_ctx_error(ctx));
    d.kv_rows = NULL, d.kv_rows_stride = 0;
    clf_attention_naive_workspace_free(&nws);
    clf_attention_workspace_free(&ws);
    clf_ctx_finish(ctx);
    clf_tensor_free(&t), clf_tensor_free(&l), clf_tensor_free(&k1), clf_tensor_free(&k2);
    clf_ctx_free(ctx);
}

/* CLF_ATTN_TILE_Q below 4 once made attn_bwd_dkdv read past its local
 * tiles (it reads query rows four at a time): tiles are floored instead. */
static void tiny_tile_q(const char *tq)
{
    tu_setting("CLF_ATTN_TILE_Q", tq);
    clf_ctx_t *ctx = tu_ctx();
    struct clf_attention_tuning t;
    cr_assert_eq(clf_attention_tuning_get(ctx, 16, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_geq(t.tile_q, 4, "CLF_ATTN_TILE_Q=%s gave tile_q %zu", tq, t.tile_q);
    struct acase cases[] = {
        {2, 2, 7, 9, 16, 1, true, -1, 2, false}, {1, 3, 33, 33, 16, 0, false, 5, 0, true},
        {2, 1, 5, 3, 12, 2, false, -1, 0, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(ctx, &cases[i], false, true);
    clf_ctx_free(ctx);
}
Test(attention, tile_q_override_1, .timeout = ATT_TIMEOUT) { tiny_tile_q("1"); }
Test(attention, tile_q_override_2, .timeout = ATT_TIMEOUT) { tiny_tile_q("2"); }

/* batch·heads past 65535 (many tiny sequences): NDRange dimensions 1 and 2
 * are capped there on NVIDIA's drivers, so it travels in dimension 0. */
Test(attention, many_sequences, .timeout = ATT_TIMEOUT)
{
    clf_ctx_t *ctx = tu_ctx();
    struct acase c = {4097, 16, 2, 3, 8, 0, true, -1, 1, false};
    check_case(ctx, &c, true, true);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------ the split (GPU) form */

/* CLF_ATTN_LANES forces the split form of attn_fwd and attn_bwd_dq (each
 * query row spread over `lanes` work-items) and of attn_bwd_dkdv (each key
 * row) on any device; lanes that do not divide d_k are halved until they
 * do. */
static size_t lanes_in_force(const char *lanes, size_t dk)
{
    tu_setting("CLF_ATTN_LANES", lanes);
    clf_ctx_t *ctx = tu_ctx();
    struct clf_attention_tuning t;
    cr_assert_eq(clf_attention_tuning_get(ctx, dk, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_ctx_free(ctx);
    return t.lanes;
}

Test(attention, lanes_divide_d_k)
{
    struct { const char *ask; size_t dk, want; } cases[] = {
        {"2", 32, 2}, {"4", 64, 4}, {"8", 64, 8}, {"8", 80, 8}, {"8", 36, 4}, {"4", 20, 4},
        {"8", 20, 4}, {"8", 12, 4}, {"8", 6, 2}, {"4", 33, 1}, {"8", 256, 8}, {"1", 64, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t got = lanes_in_force(cases[i].ask, cases[i].dk);
        cr_assert_eq(got, cases[i].want, "CLF_ATTN_LANES=%s, d_k %zu: lanes %zu, want %zu", cases[i].ask,
                     cases[i].dk, got, cases[i].want);
    }
    /* values that are not 1, 2, 4 or 8 are ignored: the table's lanes stay */
    size_t table = lanes_in_force("0", 64);
    cr_assert_eq(lanes_in_force("3", 64), table);
    cr_assert_eq(lanes_in_force("16", 64), table);
}

/* The whole mask sweep (n in 1, 7, 33, 100; padding, causal, windows,
 * q_pos_offset, fused layouts), forward and backward, in the split form. */
/* The split form is what GPUs run (their tuning's lanes); a device whose
 * own tuning runs one work-item per row (a CPU) leaves its cases to the
 * GPU-shaped runs (CLF_DEVICE_LIMITS=gpu: CI's runs of Intel's runtime and
 * rusticl, and Oclgrind's GPU limits over test_kernels_small), where the
 * split form is the default: on PoCL its variants took 140 s of
 * test_attention's 260 s, compiling GPU-shaped kernels for a device that
 * runs a group's items one after another, the weakest check of them. */
static void gpu_form_only(void)
{
    clf_ctx_t *ctx = tu_ctx();
    const bool gpu = clf_ctx_device(ctx)->type & CL_DEVICE_TYPE_GPU;
    clf_ctx_free(ctx);
    if (!gpu)
        cr_skip_test("the split form (lanes > 1) is the GPU-shaped runs' (CLF_DEVICE_LIMITS=gpu)");
}

static void split_sweep(const char *lanes, size_t dk, size_t want)
{
    gpu_form_only();
    cr_assert_eq(lanes_in_force(lanes, dk), want);
    forward_sweep(dk, true, false);
}
Test(attention, split2_dk32, .timeout = ATT_TIMEOUT) { split_sweep("2", 32, 2); }
Test(attention, split4_dk64, .timeout = ATT_TIMEOUT) { split_sweep("4", 64, 4); }
Test(attention, split8_dk64, .timeout = ATT_TIMEOUT) { split_sweep("8", 64, 8); }
Test(attention, split8_dk80, .timeout = ATT_TIMEOUT) { split_sweep("8", 80, 8); }   /* 10 scalars per lane */
Test(attention, split4_dk20, .timeout = ATT_TIMEOUT) { split_sweep("4", 20, 4); }   /* 5 scalars per lane */
Test(attention, split8_dk36, .timeout = ATT_TIMEOUT) { split_sweep("8", 36, 4); }   /* 8 does not divide 36: 4 */

/* The backward with one work-item per row, fused (attn_bwd_fused) or split
 * (CLF_ATTN_BWD=split: attn_bwd_dkdv, attn_bwd_dq): the whole mask sweep
 * against the reference, run twice for the same bits, and the profile
 * shows which ran (a device whose local memory cannot hold the fused
 * kernel's tiles runs the split ones: said, not failed). "fused" is the
 * default, not forced: fused where the device vectorises inside a
 * work-item (native float vector wider than 1: PoCL, Intel's runtime),
 * split where across them (rusticl's llvmpipe, GPUs), whose compiler took
 * minutes over the fused kernel at these head dims, and which skip the
 * "fused" cases; test_kernels_small's small/attention_fused_backward
 * forces it there on small ones. */
static void bwd_sweep(const char *mode, size_t dk)
{
    tu_setting("CLF_ATTN_LANES", "1");
    tu_setting("CLF_ATTN_BWD", !strcmp(mode, "fused") ? NULL : mode);
    clf_ctx_t *ctx = tu_ctx();
    const bool want_fused = !strcmp(mode, "fused") && clf_attention_fused_by_default(ctx);
    if (!strcmp(mode, "fused") && !want_fused) {
        /* the split form at other tiles only: split_backward_* are its cases
         * (on rusticl shaped as a GPU these took 170 of test_attention's 300
         * test-seconds, compiling) */
        clf_ctx_free(ctx);
        cr_skip_test("the default backward here is the split form (native float vector 1); "
                     "test_kernels_small's small/attention_fused_backward checks attn_bwd_fused");
    }
    cr_assert_eq(clf_ctx_profile_start(ctx), CLF_OK);
    struct acase c = {2, 3, 100, 100, dk, 1, true, 5, 0, true};
    double *q, *k, *v, *g;
    make_inputs(&c, &q, &k, &v, &g, 11);
    struct result a = run_device(ctx, &c, q, k, v, g, false, true), b = run_device(ctx, &c, q, k, v, g, false, true);
    size_t nq = c.B * c.H * c.nq * c.dk, nk = c.B * c.H * c.nk * c.dk;
    cr_assert(same_bits(a.dq, b.dq, nq) && same_bits(a.dk, b.dk, nk) && same_bits(a.dv, b.dv, nk));
    result_free(&a), result_free(&b);
    free(q), free(k), free(v), free(g);
    struct clf_profile_entry *prof = NULL;
    size_t nprof = 0;
    cr_assert_eq(clf_ctx_profile_report(ctx, &prof, &nprof), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t fused = tu_profile_calls(prof, nprof, "attn_bwd_fused");
    size_t split = tu_profile_calls(prof, nprof, "attn_bwd_dkdv") + tu_profile_calls(prof, nprof, "attn_bwd_dq");
    free(prof);
    if (!want_fused)
        cr_assert(fused == 0 && split > 0, "CLF_ATTN_BWD=split: attn_bwd_fused ran %zu times, the split kernels %zu",
                  fused, split);
    else if (fused)
        cr_assert_eq(split, 0, "the split kernels ran %zu times beside attn_bwd_fused", split);
    else
        cr_log_info("attn_bwd_fused did not run here (its tiles' local memory), the split kernels did");
    clf_ctx_free(ctx);
    forward_sweep(dk, true, false);
}
Test(attention, fused_backward_dk32, .timeout = ATT_TIMEOUT) { bwd_sweep("fused", 32); }
Test(attention, fused_backward_dk64, .timeout = ATT_TIMEOUT) { bwd_sweep("fused", 64); }
Test(attention, fused_backward_dk80, .timeout = ATT_TIMEOUT) { bwd_sweep("fused", 80); }
/* attn_bwd_fused's items hold two key rows and serve two query rows of dQ
 * each: query tiles smaller and larger than the key tile (the last dQ
 * pair half outside the tile, several pairs per item). */
static void fused_tiles(const char *tq, const char *tk)
{
    tu_setting("CLF_ATTN_TILE_Q", tq);
    tu_setting("CLF_ATTN_TILE_K", tk);
    bwd_sweep("fused", 64);
}
Test(attention, fused_backward_tiles_8x32, .timeout = ATT_TIMEOUT) { fused_tiles("8", "32"); }
Test(attention, fused_backward_tiles_128x16, .timeout = ATT_TIMEOUT) { fused_tiles("128", "16"); }
Test(attention, split_backward_dk32, .timeout = ATT_TIMEOUT) { bwd_sweep("split", 32); }
Test(attention, split_backward_dk80, .timeout = ATT_TIMEOUT) { bwd_sweep("split", 80); }

/* Fully masked rows, bit identity, other head dims and the smallest tiles
 * again in the split form. */
static void lanes(const char *n)
{
    gpu_form_only();
    tu_setting("CLF_ATTN_LANES", n);
}
Test(attention, split_fully_masked_rows_are_zero, .timeout = ATT_TIMEOUT) { lanes("4"); fully_masked_rows(); }
Test(attention, split_bit_identical_runs, .timeout = ATT_TIMEOUT) { lanes("8"); bit_identical(); }
Test(attention, split_other_head_dims, .timeout = ATT_TIMEOUT) { lanes("8"); other_head_dims(); }
Test(attention, split_window_covering_everything, .timeout = ATT_TIMEOUT) { lanes("4"); window_everything(); }
Test(attention, split_tile_q_override_1, .timeout = ATT_TIMEOUT) { lanes("8"); tiny_tile_q("1"); }

/* Rows [i0, i0 + n) of a contiguous (B, H, rows, d_k) operand. */
static double *rows_of(const double *x, const struct acase *c, size_t rows, size_t i0, size_t n)
{
    double *y = malloc(c->B * c->H * n * c->dk * sizeof *y);
    for (size_t bh = 0; bh < c->B * c->H; bh++)
        memcpy(y + bh * n * c->dk, x + (bh * rows + i0) * c->dk, n * c->dk * sizeof *y);
    return y;
}

/* A decoding step (one query at position i, q_pos_offset i, the keys up to
 * i) gives row i of the full causal forward bit for bit: each row's work
 * depends on its own visible keys only. Checked in the form in force and
 * in the split form, with and without a window. */
static void decode_matches_full(void)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t n = 100, steps[] = {0, 1, 7, 31, 32, 33, 63, 64, 99};
    for (int w = 0; w < 2; w++) {
        struct acase full = {2, 3, n, n, 64, 0, true, w ? 5 : -1, 0, false};
        double *q, *k, *v, *g;
        make_inputs(&full, &q, &k, &v, &g, 31);
        struct result a = run_device(ctx, &full, q, k, v, g, false, false);
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            size_t i = steps[s];
            struct acase one = {2, 3, 1, i + 1, 64, 0, true, full.window, i, false};
            double *q1 = rows_of(q, &full, n, i, 1), *g1 = rows_of(g, &full, n, i, 1);
            double *k1 = rows_of(k, &full, n, 0, i + 1), *v1 = rows_of(v, &full, n, 0, i + 1);
            struct result b = run_device(ctx, &one, q1, k1, v1, g1, false, false);
            for (size_t bh = 0; bh < full.B * full.H; bh++) {
                cr_assert(same_bits(b.o + bh * full.dk, a.o + (bh * n + i) * full.dk, full.dk),
                          "step %zu window %d: o of (b·h %zu) differs from the full forward", i, full.window, bh);
                cr_assert(same_bits(b.lse + bh, a.lse + bh * n + i, 1), "step %zu: lse differs", i);
            }
            result_free(&b);
            free(q1), free(g1), free(k1), free(v1);
        }
        result_free(&a);
        free(q), free(k), free(v), free(g);
    }
    clf_ctx_free(ctx);
}
Test(attention, decode_step_matches_full_forward, .timeout = ATT_TIMEOUT) { decode_matches_full(); }
Test(attention, split_decode_step_matches_full_forward, .timeout = ATT_TIMEOUT) { lanes("4"); decode_matches_full(); }
