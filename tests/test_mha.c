/* test_mha.c: the multi-head attention layer against the double reference
 * (self and encoder–decoder, with masks), its backward against central
 * finite differences of that reference (dx overwritten, dmem and parameter
 * gradients added to), and incremental decoding: stepping one position at
 * a time matches the full causal forward, the cross cache matches the full
 * cross forward, reordering the cache matches a reordered batch, and
 * keeping some of its rows (finished sequences leaving) matches the full
 * forward of the rows kept. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_attention.h"
#include "testutil.h"

struct layer {
    size_t D;
    float *w_in, *b_in, *w_out, *b_out;
    struct clf_mha_params p;
};

static void layer_init(clf_ctx_t *ctx, struct layer *L, size_t D, unsigned seed)
{
    L->D = D;
    L->w_in = malloc(D * 3 * D * 4), L->b_in = malloc(3 * D * 4), L->w_out = malloc(D * D * 4),
    L->b_out = malloc(D * 4);
    float s = 1.0f / sqrtf((float)D);
    tu_fill(L->w_in, D * 3 * D, seed, -2 * s, 2 * s);
    tu_fill(L->b_in, 3 * D, seed + 1, -0.5f, 0.5f);
    tu_fill(L->w_out, D * D, seed + 2, -s, s);
    tu_fill(L->b_out, D, seed + 3, -0.5f, 0.5f);
    L->p.w_in = tu_upload(ctx, L->w_in, D * 3 * D);
    L->p.b_in = tu_upload(ctx, L->b_in, 3 * D);
    L->p.w_out = tu_upload(ctx, L->w_out, D * D);
    L->p.b_out = tu_upload(ctx, L->b_out, D);
}

static void layer_free(struct layer *L)
{
    clf_tensor_free(&L->p.w_in), clf_tensor_free(&L->p.b_in), clf_tensor_free(&L->p.w_out),
        clf_tensor_free(&L->p.b_out);
    free(L->w_in), free(L->b_in), free(L->w_out), free(L->b_out);
}

static struct ref_mha_desc rdesc(const struct clf_mha_desc *d, const int32_t *kl)
{
    return (struct ref_mha_desc){d->batch, d->heads, d->d_model, d->len_q, d->len_kv, kl, d->causal, d->window};
}

static void ref_forward(double *y, const double *x, const double *mem, const double *P[4], const struct clf_mha_desc *d,
                        const int32_t *kl)
{
    struct ref_mha_desc r = rdesc(d, kl);
    ref_mha_forward(y, x, d->self ? NULL : mem, P[0], P[1], P[2], P[3], &r);
}

static void forward_case(clf_ctx_t *ctx, struct clf_mha_desc d, const int32_t *kl)
{
    size_t D = d.d_model, rq = d.batch * d.len_q, rk = d.batch * (d.self ? d.len_q : d.len_kv);
    struct layer L;
    layer_init(ctx, &L, D, 7);
    float *x = malloc(rq * D * 4), *mem = malloc(rk * D * 4);
    tu_fill(x, rq * D, 1, -1, 1);
    tu_fill(mem, rk * D, 2, -1, 1);
    clf_tensor tx = tu_upload(ctx, x, rq * D), tm = tu_upload(ctx, mem, rk * D), ty = tu_upload(ctx, x, rq * D),
               tkl = {0};
    if (kl)
        tkl = tu_upload_ints(ctx, kl, d.batch), d.key_len = &tkl;
    struct clf_mha_workspace ws;
    cr_assert_eq(clf_mha_workspace_init(ctx, &ws, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_mha_forward(ctx, &ty, &ws, &tx, d.self ? NULL : &tm, &L.p, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    float *y = tu_download(ctx, &ty, rq * D);
    double *xd = ref_to_double(x, rq * D), *md = ref_to_double(mem, rk * D), *yd = malloc(rq * D * sizeof *yd);
    double *P0 = ref_to_double(L.w_in, D * 3 * D), *P1 = ref_to_double(L.b_in, 3 * D),
           *P2 = ref_to_double(L.w_out, D * D), *P3 = ref_to_double(L.b_out, D);
    const double *P[4] = {P0, P1, P2, P3};
    ref_forward(yd, xd, md, P, &d, kl);
    float *yf = ref_to_float(yd, rq * D);
    char what[128];
    snprintf(what, sizeof what, "mha self=%d causal=%d window=%d Tq=%zu Tkv=%zu", d.self, d.causal, d.window, d.len_q,
             d.len_kv);
    cr_assert(tu_close(what, y, yf, rq * D, 1e-4, 1e-4), "%s", what);
    clf_mha_workspace_free(&ws);
    clf_tensor_free(&tx), clf_tensor_free(&tm), clf_tensor_free(&ty), clf_tensor_free(&tkl);
    free(x), free(mem), free(y), free(xd), free(md), free(yd), free(yf), free(P0), free(P1), free(P2), free(P3);
    layer_free(&L);
}

Test(mha, forward_matches_reference, .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    int32_t kl[3] = {7, 4, 1};
    forward_case(ctx, (struct clf_mha_desc){.batch = 3, .heads = 4, .d_model = 32, .len_q = 7, .len_kv = 7,
                                            .causal = true, .window = -1, .self = true}, kl);
    forward_case(ctx, (struct clf_mha_desc){.batch = 3, .heads = 4, .d_model = 32, .len_q = 7, .len_kv = 7,
                                            .window = 2, .self = true}, NULL);
    int32_t klc[3] = {9, 3, 0};
    forward_case(ctx, (struct clf_mha_desc){.batch = 3, .heads = 4, .d_model = 32, .len_q = 5, .len_kv = 9,
                                            .window = -1}, klc);
    forward_case(ctx, (struct clf_mha_desc){.batch = 2, .heads = 1, .d_model = 80, .len_q = 33, .len_kv = 20,
                                            .window = -1}, NULL);
    clf_ctx_free(ctx);
}

/* Backward against central differences of Σ dy∘y on the double reference. */
static void backward_case(clf_ctx_t *ctx, struct clf_mha_desc d, const int32_t *kl)
{
    size_t D = d.d_model, rq = d.batch * d.len_q, rk = d.batch * (d.self ? d.len_q : d.len_kv);
    struct layer L, G;
    layer_init(ctx, &L, D, 3);
    layer_init(ctx, &G, D, 50); /* gradients start non-zero: they must be added to */
    float *x = malloc(rq * D * 4), *mem = malloc(rk * D * 4), *dy = malloc(rq * D * 4), *dm0 = malloc(rk * D * 4);
    tu_fill(x, rq * D, 4, -1, 1);
    tu_fill(mem, rk * D, 5, -1, 1);
    tu_fill(dy, rq * D, 6, -1, 1);
    tu_fill(dm0, rk * D, 8, -1, 1);
    float *nan = malloc(rq * D * 4);
    for (size_t i = 0; i < rq * D; i++)
        nan[i] = NAN;
    clf_tensor tx = tu_upload(ctx, x, rq * D), tm = tu_upload(ctx, mem, rk * D), ty = tu_upload(ctx, x, rq * D),
               tdy = tu_upload(ctx, dy, rq * D), tdx = tu_upload(ctx, nan, rq * D), tdm = tu_upload(ctx, dm0, rk * D),
               tkl = {0};
    if (kl)
        tkl = tu_upload_ints(ctx, kl, d.batch), d.key_len = &tkl;
    struct clf_mha_workspace ws;
    cr_assert_eq(clf_mha_workspace_init(ctx, &ws, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_mha_forward(ctx, &ty, &ws, &tx, d.self ? NULL : &tm, &L.p, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_mha_backward(ctx, &tdx, d.self ? NULL : &tdm, &G.p, &tdy, &tx, d.self ? NULL : &tm, &ws, &L.p, &d),
                 CLF_OK, "%s", clf_ctx_error(ctx));
    float *gdx = tu_download(ctx, &tdx, rq * D), *gdm = tu_download(ctx, &tdm, rk * D);
    float *gw[4] = {tu_download(ctx, &G.p.w_in, D * 3 * D), tu_download(ctx, &G.p.b_in, 3 * D),
                    tu_download(ctx, &G.p.w_out, D * D), tu_download(ctx, &G.p.b_out, D)};
    const float *g0[4] = {G.w_in, G.b_in, G.w_out, G.b_out};

    double *xd = ref_to_double(x, rq * D), *md = ref_to_double(mem, rk * D), *yd = malloc(rq * D * sizeof *yd);
    double *Pd[4] = {ref_to_double(L.w_in, D * 3 * D), ref_to_double(L.b_in, 3 * D), ref_to_double(L.w_out, D * D),
                     ref_to_double(L.b_out, D)};
    const double *P[4] = {Pd[0], Pd[1], Pd[2], Pd[3]};
    size_t pn[4] = {D * 3 * D, 3 * D, D * D, D};
    /* operands: x, mem (cross only), the four parameters */
    double *ops[6] = {xd, md, Pd[0], Pd[1], Pd[2], Pd[3]};
    size_t ns[6] = {rq * D, d.self ? 0 : rk * D, pn[0], pn[1], pn[2], pn[3]};
    const double h = 1e-5;
    for (int w = 0; w < 6; w++)
        for (size_t e = 0; e < ns[w]; e++) {
            double keep = ops[w][e], lp = 0, lm = 0;
            ops[w][e] = keep + h;
            ref_forward(yd, xd, md, P, &d, kl);
            for (size_t t = 0; t < rq * D; t++)
                lp += yd[t] * dy[t];
            ops[w][e] = keep - h;
            ref_forward(yd, xd, md, P, &d, kl);
            for (size_t t = 0; t < rq * D; t++)
                lm += yd[t] * dy[t];
            ops[w][e] = keep;
            double fd = (lp - lm) / (2 * h), got;
            if (w == 0)
                got = gdx[e];
            else if (w == 1)
                got = (double)gdm[e] - dm0[e];
            else
                got = (double)gw[w - 2][e] - g0[w - 2][e];
            cr_assert(fabs(got - fd) <= 2e-4 + 2e-3 * fabs(fd),
                      "mha backward self=%d operand %d element %zu: device %.7g, differences %.7g", d.self, w, e, got,
                      fd);
        }
    clf_mha_workspace_free(&ws);
    clf_tensor_free(&tx), clf_tensor_free(&tm), clf_tensor_free(&ty), clf_tensor_free(&tdy), clf_tensor_free(&tdx),
        clf_tensor_free(&tdm), clf_tensor_free(&tkl);
    for (int i = 0; i < 4; i++)
        free(gw[i]), free(Pd[i]);
    free(x), free(mem), free(dy), free(dm0), free(nan), free(gdx), free(gdm), free(xd), free(md), free(yd);
    layer_free(&L), layer_free(&G);
}

Test(mha, backward_finite_differences, .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    int32_t kl[2] = {5, 3};
    backward_case(ctx, (struct clf_mha_desc){.batch = 2, .heads = 2, .d_model = 16, .len_q = 5, .len_kv = 5,
                                             .causal = true, .window = -1, .self = true}, kl);
    backward_case(ctx, (struct clf_mha_desc){.batch = 2, .heads = 2, .d_model = 16, .len_q = 5, .len_kv = 5,
                                             .window = 1, .self = true}, NULL);
    int32_t klc[2] = {6, 2};
    backward_case(ctx, (struct clf_mha_desc){.batch = 2, .heads = 2, .d_model = 16, .len_q = 4, .len_kv = 6,
                                             .window = -1}, klc);
    clf_ctx_free(ctx);
}

/* x (B·T, D) row b·T + t → xt (B, D) */
static void take_step(float *xt, const float *x, size_t B, size_t T, size_t D, size_t t)
{
    for (size_t b = 0; b < B; b++)
        memcpy(xt + b * D, x + (b * T + t) * D, D * 4);
}

/* The full forward over (B, T) for comparisons. */
static float *full_forward(clf_ctx_t *ctx, const struct layer *L, const float *x, const float *mem, const clf_tensor *kl,
                           struct clf_mha_desc d)
{
    size_t rq = d.batch * d.len_q, D = d.d_model;
    clf_tensor tx = tu_upload(ctx, x, rq * D), ty = tu_upload(ctx, x, rq * D), tm = {0};
    if (!d.self)
        tm = tu_upload(ctx, mem, d.batch * d.len_kv * D);
    d.key_len = kl;
    struct clf_mha_workspace ws;
    cr_assert_eq(clf_mha_workspace_init(ctx, &ws, &d), CLF_OK);
    cr_assert_eq(clf_mha_forward(ctx, &ty, &ws, &tx, d.self ? NULL : &tm, &L->p, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    float *y = tu_download(ctx, &ty, rq * D);
    clf_mha_workspace_free(&ws);
    clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&tm);
    return y;
}

static void step_and_compare(clf_ctx_t *ctx, struct clf_kv_cache *c, const struct layer *L, const float *x,
                             const float *yfull, size_t B, size_t T, size_t D, int window, size_t t)
{
    float *xt = malloc(B * D * 4), *want = malloc(B * D * 4);
    take_step(xt, x, B, T, D, t);
    take_step(want, yfull, B, T, D, t);
    clf_tensor tx = tu_upload(ctx, xt, B * D), ty = tu_upload(ctx, xt, B * D);
    cr_assert_eq(clf_mha_decode_step(ctx, &ty, &tx, c, &L->p, window, t), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &ty, B * D);
    char what[96];
    snprintf(what, sizeof what, "decode self=%d window=%d step %zu", c->self, window, t);
    cr_assert(tu_close(what, got, want, B * D, 1e-5, 1e-5), "%s", what);
    clf_tensor_free(&tx), clf_tensor_free(&ty);
    free(xt), free(want), free(got);
}

Test(mha, decode_steps_match_full_causal_forward, .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t B = 3, T = 9, D = 32, H = 4;
    struct layer L;
    layer_init(ctx, &L, D, 11);
    float *x = malloc(B * T * D * 4);
    tu_fill(x, B * T * D, 12, -1, 1);
    const int windows[] = {-1, 2};
    for (int wi = 0; wi < 2; wi++) {
        struct clf_mha_desc d = {.batch = B,
                                 .heads = H,
                                 .d_model = D,
                                 .len_q = T,
                                 .len_kv = T,
                                 .causal = true,
                                 .window = windows[wi],
                                 .self = true};
        float *yfull = full_forward(ctx, &L, x, NULL, NULL, d);
        struct clf_kv_cache c;
        cr_assert_eq(clf_kv_cache_init(ctx, &c, B, H, D, T + 3, true, 0), CLF_OK, "%s", clf_ctx_error(ctx));
        for (size_t t = 0; t < T; t++)
            step_and_compare(ctx, &c, &L, x, yfull, B, T, D, windows[wi], t);
        clf_kv_cache_free(&c);
        free(yfull);
    }
    free(x);
    layer_free(&L);
    clf_ctx_free(ctx);
}

Test(mha, decode_cross_attention_matches_full_forward, .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t B = 3, T = 4, S = 11, D = 32, H = 4;
    struct layer L;
    layer_init(ctx, &L, D, 21);
    float *x = malloc(B * T * D * 4), *mem = malloc(B * S * D * 4);
    tu_fill(x, B * T * D, 22, -1, 1);
    tu_fill(mem, B * S * D, 23, -1, 1);
    int32_t kl[3] = {11, 5, 1};
    clf_tensor tkl = tu_upload_ints(ctx, kl, B), tm = tu_upload(ctx, mem, B * S * D);
    struct clf_mha_desc d = {.batch = B, .heads = H, .d_model = D, .len_q = T, .len_kv = S, .window = -1};
    float *yfull = full_forward(ctx, &L, x, mem, &tkl, d);
    struct clf_kv_cache c;
    cr_assert_eq(clf_kv_cache_init(ctx, &c, B, H, D, 0, false, S), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_kv_cache_memory_set(ctx, &c, &tm, &tkl, &L.p), CLF_OK, "%s", clf_ctx_error(ctx));
    for (size_t t = 0; t < T; t++)
        step_and_compare(ctx, &c, &L, x, yfull, B, T, D, -1, t);
    clf_kv_cache_free(&c);
    clf_tensor_free(&tkl), clf_tensor_free(&tm);
    free(yfull), free(x), free(mem);
    layer_free(&L);
    clf_ctx_free(ctx);
}

/* Beams reselected after 3 steps: new row b continues old row perm[b]. */
static void cache_reorder_case(size_t D, size_t H)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t B = 3, T = 6;
    struct layer L;
    layer_init(ctx, &L, D, 31);
    float *x = malloc(B * T * D * 4), *xp = malloc(B * T * D * 4);
    tu_fill(x, B * T * D, 32, -1, 1);
    const int32_t perm[3] = {2, 0, 0};
    for (size_t b = 0; b < B; b++)
        memcpy(xp + b * T * D, x + perm[b] * T * D, T * D * 4);
    struct clf_mha_desc d = {
        .batch = B, .heads = H, .d_model = D, .len_q = T, .len_kv = T, .causal = true, .window = -1, .self = true};
    float *yfull = full_forward(ctx, &L, x, NULL, NULL, d), *yperm = full_forward(ctx, &L, xp, NULL, NULL, d);
    struct clf_kv_cache c;
    cr_assert_eq(clf_kv_cache_init(ctx, &c, B, H, D, T, true, 0), CLF_OK);
    for (size_t t = 0; t < 3; t++)
        step_and_compare(ctx, &c, &L, x, yfull, B, T, D, -1, t);
    cr_assert_eq(clf_kv_cache_reorder(ctx, &c, perm, B), CLF_OK, "%s", clf_ctx_error(ctx));
    for (size_t t = 3; t < T; t++)
        step_and_compare(ctx, &c, &L, xp, yperm, B, T, D, -1, t);
    const int32_t bad[3] = {0, 3, 1};
    cr_assert_eq(clf_kv_cache_reorder(ctx, &c, bad, B), CLF_ERR_ARG);
    clf_kv_cache_free(&c);
    free(x), free(xp), free(yfull), free(yperm);
    layer_free(&L);
    clf_ctx_free(ctx);
}

/* d_k 8 copies in float4s (attn_cache_gather4), d_k 5 one float at a time */
Test(mha, decode_cache_reorder, .timeout = TU_TIMEOUT(120))
{
    cache_reorder_case(16, 2);
    cache_reorder_case(15, 3);
}

/* A step of rows b that follow the sequences x[cur[b]] (y of the full
 * forward likewise). */
static void step_rows_compare(clf_ctx_t *ctx, struct clf_kv_cache *c, const struct layer *L, const float *x,
                              const float *yfull, const int32_t *cur, size_t T, size_t D, int window, size_t t)
{
    const size_t B = c->batch;
    float *xt = malloc(B * D * 4), *want = malloc(B * D * 4);
    for (size_t b = 0; b < B; b++) {
        memcpy(xt + b * D, x + ((size_t)cur[b] * T + t) * D, D * 4);
        memcpy(want + b * D, yfull + ((size_t)cur[b] * T + t) * D, D * 4);
    }
    clf_tensor tx = tu_upload(ctx, xt, B * D), ty = tu_upload(ctx, xt, B * D);
    cr_assert_eq(clf_mha_decode_step(ctx, &ty, &tx, c, &L->p, window, t), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &ty, B * D);
    char what[96];
    snprintf(what, sizeof what, "beams: window=%d step %zu, %zu rows", window, t, B);
    cr_assert(tu_close(what, got, want, B * D, 1e-5, 1e-5), "%s", what);
    clf_tensor_free(&tx), clf_tensor_free(&ty);
    free(xt), free(want), free(got);
}

/* Two sentences of 3 beams (clf_kv_cache_share(3) on a self cache):
 * beams reselected within their sentence twice (no key copied: the
 * attention reads each position in the row that computed it), then the
 * first sentence leaves and the second's beams move into its place
 * reselected once more (the group copied, its ancestry shifted). Each
 * row b follows the sequence x[cur[b]] (cur follows each reordering) and
 * every step equals the full forward of those sequences, with and without
 * a restricted window; then a third sentence joins (its rows read their
 * own). Under CLF_DECODE_ATTN=tiled every reordering copies rows instead.
 * Refusals: a row from another group, a group that does not divide. */
static void cache_beams_case(size_t D, size_t H, int window, bool tiled)
{
    clf_ctx_t *ctx = tu_ctx();
    enum { G = 3, B = 2 * G };
    const size_t T = 8;
    struct layer L;
    layer_init(ctx, &L, D, 61);
    float *x = malloc(B * T * D * 4);
    tu_fill(x, B * T * D, 62, -1, 1);
    struct clf_mha_desc d = {
        .batch = B, .heads = H, .d_model = D, .len_q = T, .len_kv = T, .causal = true, .window = window, .self = true};
    float *yfull = full_forward(ctx, &L, x, NULL, NULL, d);
    if (tiled)
        tu_setting("CLF_DECODE_ATTN", "tiled");
    struct clf_kv_cache c;
    cr_assert_eq(clf_kv_cache_init(ctx, &c, B, H, D, T, true, 0), CLF_OK);
    cr_assert_eq(clf_kv_cache_share(ctx, &c, 4), CLF_ERR_ARG, "4 does not divide 6");
    cr_assert_eq(clf_kv_cache_share(ctx, &c, G), CLF_OK, "%s", clf_ctx_error(ctx));
    int32_t cur[B] = {0, 1, 2, 3, 4, 5}, next[B];
    const int32_t first[B] = {1, 1, 0, 5, 3, 3}, second[B] = {2, 0, 0, 4, 4, 5}, leave[G] = {5, 3, 4},
                  mixed[B] = {0, 1, 3, 3, 4, 5};
    size_t t = 0;
    for (; t < 2; t++)
        step_rows_compare(ctx, &c, &L, x, yfull, cur, T, D, window, t);
    const int32_t *orders[3] = {first, second, leave};
    const size_t kept[3] = {B, B, G};
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(clf_kv_cache_keep(ctx, &c, orders[r], kept[r]), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert_eq(c.indirect, !tiled, "reordering %d: rows %s each other's keys", r,
                     c.indirect ? "read" : "do not read");
        for (size_t b = 0; b < kept[r]; b++)
            next[b] = cur[orders[r][b]];
        memcpy(cur, next, kept[r] * sizeof *cur);
        step_rows_compare(ctx, &c, &L, x, yfull, cur, T, D, window, t++);
        if (r == 1)
            cr_assert_eq(clf_kv_cache_keep(ctx, &c, mixed, B), CLF_ERR_ARG, "row 2 from the other sentence");
    }
    step_rows_compare(ctx, &c, &L, x, yfull, cur, T, D, window, t++);
    cr_assert_eq(c.batch, (size_t)G);
    if (tiled)
        tu_setting("CLF_DECODE_ATTN", NULL);
    clf_kv_cache_free(&c);
    free(x), free(yfull);
    layer_free(&L);
    clf_ctx_free(ctx);
}

/* d_k 8 (float4 copies and vectors), d_k 5 (one float at a time) */
Test(mha, decode_beams_reselect_without_copying, .timeout = TU_TIMEOUT(120))
{
    cache_beams_case(16, 2, -1, false);
    cache_beams_case(15, 3, -1, false);
    cache_beams_case(16, 2, 2, false);
    cache_beams_case(16, 2, -1, true);
}

Test(mha, bad_shapes_are_refused)
{
    clf_ctx_t *ctx = tu_ctx();
    struct layer L;
    layer_init(ctx, &L, 16, 1);
    struct clf_mha_desc d = {.batch = 2,
                             .heads = 3,
                             .d_model = 16,
                             .len_q = 4,
                             .len_kv = 4,
                             .window = -1,
                             .self = true}; /* 3 heads do not divide 16 */
    struct clf_mha_workspace ws;
    cr_assert_eq(clf_mha_workspace_init(ctx, &ws, &d), CLF_ERR_ARG);
    d.heads = 2;
    cr_assert_eq(clf_mha_workspace_init(ctx, &ws, &d), CLF_OK);
    float z[256] = {0};
    clf_tensor x = tu_upload(ctx, z, 2 * 4 * 16), y = tu_upload(ctx, z, 2 * 5 * 16);
    cr_assert_eq(clf_mha_forward(ctx, &y, &ws, &x, NULL, &L.p, &d), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "mha_forward"), "%s", clf_ctx_error(ctx));
    d.len_q = d.len_kv = 5; /* larger than the workspace */
    cr_assert_eq(clf_mha_forward(ctx, &y, &ws, &y, NULL, &L.p, &d), CLF_ERR_ARG);
    clf_mha_workspace_free(&ws);
    clf_tensor_free(&x), clf_tensor_free(&y);
    layer_free(&L);
    clf_ctx_free(ctx);
}

/* After 3 steps, rows leave the cache (clf_kv_cache_keep): of 3 sequences
 * 2 go on, new row b the old row keep[b]; every later step gives what the
 * full forward of those two sequences gives. {2, 0} moves row 0 to 1 and
 * 2 to 0 (through the spare buffer: a source is overwritten); {0, 2} moves
 * row 2 alone into row 1 (in place, as when a sentence leaves and the last
 * takes its place). Self and cross (whose key_len the caller gathers), and
 * keep's refusals. */
static void cache_keep_case(size_t D, size_t H, const int32_t keep[2])
{
    clf_ctx_t *ctx = tu_ctx();
    enum { B = 3, N = 2 };
    const size_t T = 6, S = 5;
    struct layer L;
    layer_init(ctx, &L, D, 41);
    float *x = malloc(B * T * D * 4), *xk = malloc(N * T * D * 4), *mem = malloc(B * S * D * 4),
          *memk = malloc(N * S * D * 4);
    tu_fill(x, B * T * D, 42, -1, 1);
    tu_fill(mem, B * S * D, 43, -1, 1);
    const int32_t bad[N] = {keep[1], 2};
    int32_t kl[B] = {5, 2, 3}, klk[N];
    for (size_t b = 0; b < N; b++) {
        memcpy(xk + b * T * D, x + keep[b] * T * D, T * D * 4);
        memcpy(memk + b * S * D, mem + keep[b] * S * D, S * D * 4);
        klk[b] = kl[keep[b]];
    }
    clf_tensor tm = tu_upload(ctx, mem, B * S * D), tklk = tu_upload_ints(ctx, klk, N);
    for (int self = 1; self >= 0; self--) {
        clf_tensor tkl = tu_upload_ints(ctx, kl, B);
        struct clf_mha_desc d = {.batch = B,
                                 .heads = H,
                                 .d_model = D,
                                 .len_q = T,
                                 .len_kv = self ? T : S,
                                 .causal = self,
                                 .window = -1,
                                 .self = self},
                            dk = d;
        dk.batch = N;
        float *yfull = full_forward(ctx, &L, x, mem, self ? NULL : &tkl, d),
              *ykeep = full_forward(ctx, &L, xk, memk, self ? NULL : &tklk, dk);
        struct clf_kv_cache c;
        cr_assert_eq(clf_kv_cache_init(ctx, &c, B, H, D, T, self, self ? 0 : S), CLF_OK, "%s", clf_ctx_error(ctx));
        if (!self)
            cr_assert_eq(clf_kv_cache_memory_set(ctx, &c, &tm, &tkl, &L.p), CLF_OK, "%s", clf_ctx_error(ctx));
        for (size_t t = 0; t < 3; t++)
            step_and_compare(ctx, &c, &L, x, yfull, B, T, D, -1, t);
        cr_assert_eq(clf_kv_cache_keep(ctx, &c, keep, N), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert_eq(c.batch, N);
        if (!self) {
            clf_tensor first;
            size_t n = N;
            cr_assert_eq(clf_tensor_view(ctx, &tkl, 0, 1, &n, &first), CLF_OK);
            cr_assert_eq(clf_tensor_upload_i32(ctx, &first, klk), CLF_OK);
        }
        for (size_t t = 3; t < T; t++)
            step_and_compare(ctx, &c, &L, xk, ykeep, N, T, D, -1, t);
        cr_assert_eq(clf_kv_cache_keep(ctx, &c, bad, N), CLF_ERR_ARG, "row 2 is gone");
        cr_assert_eq(clf_kv_cache_keep(ctx, &c, keep, N + 1), CLF_ERR_ARG, "more rows than the cache holds");
        cr_assert_eq(clf_kv_cache_keep(ctx, &c, NULL, 1), CLF_ERR_ARG, "a row without its source");
        cr_assert_eq(clf_kv_cache_keep(ctx, &c, NULL, 0), CLF_OK, "no row: emptied");
        cr_assert_eq(c.batch, 0);
        cr_assert_eq(clf_kv_cache_add(ctx, &c, B + 1, self ? NULL : &tm, S, &tkl, &L.p),
                     CLF_ERR_ARG, "more rows than its room");
        clf_kv_cache_free(&c);
        clf_tensor_free(&tkl);
        free(yfull), free(ykeep);
    }
    clf_tensor_free(&tm), clf_tensor_free(&tklk);
    free(x), free(xk), free(mem), free(memk);
    layer_free(&L);
    clf_ctx_free(ctx);
}

/* float4 copies (d_k 8; cross rows of 5·32 floats) and single floats (d_k
 * 5; cross rows of 5·30) */
Test(mha, decode_cache_keep, .timeout = TU_TIMEOUT(120))
{
    const int32_t swap[2] = {2, 0}, last[2] = {0, 2};
    cache_keep_case(16, 2, swap);
    cache_keep_case(15, 3, swap);
    cache_keep_case(16, 2, last);
    cache_keep_case(15, 3, last);
}

/* Beams share their sentence's memory: a cross cache of 2 sentences × 3
 * beams with clf_kv_cache_share(3) gives, step after step, what a cache of
 * 6 rows holding the memory once per row gives (to 1e-6: only the
 * projection GEMM's row count differs), also after the first sentence
 * leaves (keep of a whole group). keep refuses rows that mix groups; share
 * refuses a group that does not divide the batch. */
Test(mha, decode_cross_shared_by_beams, .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    enum { S = 2, G = 3, B = S * G };
    const size_t T = 4, M = 5, D = 16, H = 2;
    struct layer L;
    layer_init(ctx, &L, D, 51);
    float *x = malloc(B * T * D * 4), *mem = malloc(S * M * D * 4), *rep = malloc(B * M * D * 4);
    tu_fill(x, B * T * D, 52, -1, 1);
    tu_fill(mem, S * M * D, 53, -1, 1);
    int32_t kl[S] = {5, 3}, klrep[B];
    for (size_t b = 0; b < B; b++) {
        memcpy(rep + b * M * D, mem + b / G * M * D, M * D * 4);
        klrep[b] = kl[b / G];
    }
    clf_tensor tm = tu_upload(ctx, mem, S * M * D), tr = tu_upload(ctx, rep, B * M * D),
               tkl = tu_upload_ints(ctx, kl, S), tklr = tu_upload_ints(ctx, klrep, B);
    struct clf_kv_cache shared, plain;
    cr_assert_eq(clf_kv_cache_init(ctx, &shared, B, H, D, T, false, M), CLF_OK);
    cr_assert_eq(clf_kv_cache_init(ctx, &plain, B, H, D, T, false, M), CLF_OK);
    cr_assert_eq(clf_kv_cache_share(ctx, &shared, 4), CLF_ERR_ARG, "4 does not divide 6");
    cr_assert_eq(clf_kv_cache_share(ctx, &shared, G), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_kv_cache_memory_set(ctx, &shared, &tm, &tkl, &L.p), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_kv_cache_memory_set(ctx, &plain, &tr, &tklr, &L.p), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t rows = B;
    for (size_t t = 0; t < T; t++) {
        if (t == 2) {  /* sentence 0 finishes: its beams leave, sentence 1's move up (reordered) */
            const int32_t keep[G] = {4, 3, 5}, mixed[G] = {2, 3, 4};
            cr_assert_eq(clf_kv_cache_keep(ctx, &shared, mixed, G), CLF_ERR_ARG, "rows of two groups");
            cr_assert_eq(clf_kv_cache_keep(ctx, &shared, keep, G), CLF_OK, "%s", clf_ctx_error(ctx));
            cr_assert_eq(clf_kv_cache_keep(ctx, &plain, keep, G), CLF_OK, "%s", clf_ctx_error(ctx));
            clf_tensor first, firstr;
            size_t one = 1, three = G;
            cr_assert_eq(clf_tensor_view(ctx, &tkl, 0, 1, &one, &first), CLF_OK);
            cr_assert_eq(clf_tensor_upload_i32(ctx, &first, &kl[1]), CLF_OK);
            cr_assert_eq(clf_tensor_view(ctx, &tklr, 0, 1, &three, &firstr), CLF_OK);
            cr_assert_eq(clf_tensor_upload_i32(ctx, &firstr, &klrep[G]), CLF_OK);
            rows = G;
        }
        float *xt = malloc(rows * D * 4);
        for (size_t r = 0; r < rows; r++)  /* after the keep, row r is old row 3 + r's sentence: any of its beams */
            memcpy(xt + r * D, x + ((rows < B ? G : 0) + r) * T * D + t * D, D * 4);
        clf_tensor tx = tu_upload(ctx, xt, rows * D), ys = tu_upload(ctx, xt, rows * D),
                   yp = tu_upload(ctx, xt, rows * D);
        cr_assert_eq(clf_mha_decode_step(ctx, &ys, &tx, &shared, &L.p, -1, t), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert_eq(clf_mha_decode_step(ctx, &yp, &tx, &plain, &L.p, -1, t), CLF_OK, "%s", clf_ctx_error(ctx));
        float *gs = tu_download(ctx, &ys, rows * D), *gp = tu_download(ctx, &yp, rows * D);
        char what[64];
        snprintf(what, sizeof what, "shared memory, step %zu", t);
        cr_assert(tu_close(what, gs, gp, rows * D, 1e-6, 1e-6), "%s", what);
        clf_tensor_free(&tx), clf_tensor_free(&ys), clf_tensor_free(&yp);
        free(xt), free(gs), free(gp);
    }
    clf_kv_cache_free(&shared), clf_kv_cache_free(&plain);
    clf_tensor_free(&tm), clf_tensor_free(&tr), clf_tensor_free(&tkl), clf_tensor_free(&tklr);
    free(x), free(mem), free(rep);
    layer_free(&L);
    clf_ctx_free(ctx);
}
