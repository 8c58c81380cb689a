/* ops_cases.c: op checks that more than one test executable runs (the op's
 * own test on many shapes, test_kernels_small on the tiny ones Oclgrind
 * can afford), so that each is written once. */
#include "attention/attention_internal.h"
#include "ops_testutil.h"
#include "ref_attention.h"

double *ot_logits_d(const double *h, const double *table, size_t N, size_t V, size_t d)
{
    double *x = malloc(N * V * sizeof *x);
    for (size_t r = 0; r < N; r++)
        for (size_t v = 0; v < V; v++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += h[r * d + k] * table[v * d + k];
            x[r * V + v] = s;
        }
    return x;
}

void ot_loss_case_bias(clf_ctx_t *ctx, size_t N, size_t V, size_t d, float eps, const int32_t *tg, bool with_bias)
{
    struct clf_loss_desc desc = {.smoothing = eps, .pad_id = 1, .grad_scale = 0.5f};
    float *h = ot_rand(N * d, N, -1, 1), *table = ot_rand(V * d, V, -1, 1), *dt0 = ot_rand(V * d, 3, -1, 1),
          *b = ot_rand(V, 5, -1, 1), *db = ot_rand(V, 6, -1, 1);
    double *hd = ref_to_double(h, N * d), *td = ref_to_double(table, V * d), *x = ot_logits_d(hd, td, N, V, d),
           *dl = malloc(N * V * sizeof *dl);
    if (with_bias)
        for (size_t r = 0; r < N; r++)
            for (size_t v = 0; v < V; v++)
                x[r * V + v] += b[v];
    size_t count;
    double want = ref_loss_d(dl, &count, x, tg, N, V, &desc);
    if (eps == 0.0f) {  /* plain cross-entropy, written out independently */
        double ce = 0;
        for (size_t r = 0; r < N; r++) {
            if (tg[r] == desc.pad_id)
                continue;
            double s = 0;
            for (size_t v = 0; v < V; v++)
                s += exp(x[r * V + v]);
            ce += log(s) - x[r * V + tg[r]];
        }
        cr_expect(fabs(ce - want) <= 1e-9 * (1 + fabs(ce)), "ref eps=0 %g vs plain CE %g", want, ce);
    }
    float *wdh = malloc(N * d * 4), *wdt = ot_copy(dt0, V * d);
    for (size_t r = 0; r < N; r++)
        for (size_t k = 0; k < d; k++) {
            double s = 0;
            for (size_t v = 0; v < V; v++)
                s += dl[r * V + v] * td[v * d + k];
            wdh[r * d + k] = (float)s;
        }
    for (size_t v = 0; v < V; v++)
        for (size_t k = 0; k < d; k++) {
            double s = 0;
            for (size_t r = 0; r < N; r++)
                s += dl[r * V + v] * hd[r * d + k];
            wdt[v * d + k] += (float)s;
        }
    float *wdb = ot_copy(db, V);
    for (size_t v = 0; v < V; v++) {
        double s = 0;
        for (size_t r = 0; r < N; r++)
            s += dl[r * V + v];
        wdb[v] += (float)s;
    }
    clf_tensor ttg = tu_upload_ints(ctx, tg, N);
    clf_tensor th = ot_up2(ctx, h, N, d), tt = ot_up2(ctx, table, V, d), tl = ot_up2(ctx, NULL, N, V),
               tloss = ot_up2(ctx, NULL, 1, 2), tdh = ot_up2(ctx, NULL, N, d), tdt = ot_up2(ctx, dt0, V, d),
               tb = ot_up2(ctx, b, 1, V), tdb = ot_up2(ctx, db, 1, V);
    if (with_bias)
        desc.bias = &tb;
    char what[96];
    snprintf(what, sizeof what, "loss N=%zu V=%zu d=%zu eps=%g bias=%d", N, V, d, (double)eps, (int)with_bias);
    /* evaluation first: loss only, logits kept */
    cr_assert_eq(clf_loss_forward_backward(ctx, &tloss, NULL, NULL, &tl, &th, &tt, &ttg, &desc), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    float lw[2] = {(float)want, (float)count}, *xf = ref_to_float(x, N * V);
    cr_expect(ot_check(ctx, what, &tloss, lw, 2, 1e-4, 1e-5), "%s: evaluation", what);
    cr_expect(ot_check(ctx, what, &tl, xf, N * V, 1e-5, 1e-5), "%s: logits kept", what);
    if (with_bias)
        desc.dbias = &tdb;
    cr_assert_eq(clf_loss_forward_backward(ctx, &tloss, &tdh, &tdt, &tl, &th, &tt, &ttg, &desc), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, what, &tloss, lw, 2, 1e-4, 1e-5));
    cr_expect(ot_check(ctx, what, &tdh, wdh, N * d, 1e-5, 1e-4), "%s: dh", what);
    cr_expect(ot_check(ctx, what, &tdt, wdt, V * d, 1e-5, 1e-4), "%s: dtable", what);
    if (with_bias)
        cr_expect(ot_check(ctx, what, &tdb, wdb, V, 1e-5, 1e-4), "%s: dbias", what);
    clf_tensor_free(&tb), clf_tensor_free(&tdb), free(b), free(db), free(wdb);
    clf_tensor_free(&ttg);
    clf_tensor_free(&th), clf_tensor_free(&tt), clf_tensor_free(&tl), clf_tensor_free(&tloss);
    clf_tensor_free(&tdh), clf_tensor_free(&tdt);
    free(h), free(table), free(dt0), free(hd), free(td), free(x), free(dl), free(wdh), free(wdt), free(xf);
}

void ot_decode_attn_case(clf_ctx_t *ctx, const struct ot_dcase *c, size_t parts, bool vs_tiled)
{
    /* k and v sit in a cache of cap positions per (b, h), as decoding's do */
    const size_t B = c->B, H = c->H, dk = c->dk, nk = c->nk, cap = nk + 3, Q = c->nq ? c->nq : 1, rows = B * H * Q;
    const size_t nq = rows * dk, nkv = B * H * nk * dk, ncap = B * H * cap * dk;
    const unsigned long long seed = 1000 * dk + 10 * nk + parts;
    float *q = ot_rand(nq, seed, -2, 2), *k = ot_rand(nkv, seed + 1, -2, 2), *v = ot_rand(nkv, seed + 2, -1, 1);
    float *kc = ot_rand(ncap, seed + 3, -1, 1), *vc = ot_rand(ncap, seed + 4, -1, 1), *nan = malloc(nq * 4);
    for (size_t r = 0; r < B * H; r++) {
        memcpy(kc + r * cap * dk, k + r * nk * dk, nk * dk * 4);
        memcpy(vc + r * cap * dk, v + r * nk * dk, nk * dk * 4);
    }
    for (size_t i = 0; i < nq; i++)
        nan[i] = NAN; /* outputs must be overwritten */
    double *qd = ref_to_double(q, nq), *kd = ref_to_double(k, nkv), *vd = ref_to_double(v, nkv);
    double *o = malloc(nq * sizeof *o), *lse = malloc(rows * sizeof *lse);
    struct ref_attn_desc rd = {B, H, Q, nk, dk, c->kl, c->causal, c->window, c->qoff, 0};
    ref_attention_forward(o, lse, qd, kd, vd, &rd);
    float *of = ref_to_float(o, nq), *lf = ref_to_float(lse, rows);
    clf_tensor tkl = c->kl ? tu_upload_ints(ctx, c->kl, B) : (clf_tensor){0};
    clf_tensor tq = tu_upload(ctx, q, nq), tk = tu_upload(ctx, kc, ncap), tv = tu_upload(ctx, vc, ncap),
               to = tu_upload(ctx, nan, nq), tl = tu_upload(ctx, nan, rows);
    struct clf_attention_desc d = {.batch = B,
                                   .heads = H,
                                   .n_q = Q,
                                   .n_k = nk,
                                   .d_k = dk,
                                   .key_len = c->kl ? &tkl : NULL,
                                   .causal = c->causal,
                                   .window = c->window,
                                   .q_pos_offset = c->qoff};
    struct clf_attention_layout lq = {tq.buf, 0, H * Q * dk, Q * dk, dk}, lk = {tk.buf, 0, H * cap * dk, cap * dk, dk},
                                lv = {tv.buf, 0, H * cap * dk, cap * dk, dk}, lo = {to.buf, 0, H * Q * dk, Q * dk, dk};
    char what[192];
    snprintf(what, sizeof what, "decode attention B=%zu H=%zu n_q=%zu d_k=%zu n_k=%zu key_len=%s causal=%d "
             "window=%d qoff=%zu parts=%zu", B, H, Q, dk, nk, c->kl ? "yes" : "no", c->causal, c->window, c->qoff,
             parts);
    cr_assert_eq(clf_attention_decode_with(ctx, NULL, parts, &lo, &tl, &lq, &lk, &lv, &d), CLF_OK, "%s: %s", what,
                 clf_ctx_error(ctx));
    float *go = tu_download(ctx, &to, nq), *gl = tu_download(ctx, &tl, rows);
    cr_expect(tu_close(what, go, of, nq, 1e-5, 1e-5), "%s: o against the reference", what);
    cr_expect(tu_close(what, gl, lf, rows, 1e-5, 1e-5), "%s: lse against the reference", what);
    if (vs_tiled) {
        clf_tensor to2 = tu_upload(ctx, nan, nq), tl2 = tu_upload(ctx, nan, rows);
        struct clf_attention_layout lo2 = lo;
        lo2.buf = to2.buf;
        cr_assert_eq(clf_attention_forward(ctx, &lo2, &tl2, &lq, &lk, &lv, &d), CLF_OK, "%s: %s", what,
                     clf_ctx_error(ctx));
        float *wo = tu_download(ctx, &to2, nq), *wl = tu_download(ctx, &tl2, rows);
        cr_expect(tu_close(what, go, wo, nq, 2e-6, 2e-6), "%s: o against the tiled forward", what);
        cr_expect(tu_close(what, gl, wl, rows, 2e-6, 2e-6), "%s: lse against the tiled forward", what);
        clf_tensor_free(&to2), clf_tensor_free(&tl2);
        free(wo), free(wl);
    }
    clf_tensor_free(&tkl), clf_tensor_free(&tq), clf_tensor_free(&tk), clf_tensor_free(&tv), clf_tensor_free(&to);
    clf_tensor_free(&tl);
    free(q), free(k), free(v), free(kc), free(vc), free(nan), free(qd), free(kd), free(vd), free(o), free(lse);
    free(of), free(lf), free(go), free(gl);
}

/* One (rows, d) case of clf_residual_layernorm_forward against
 * clf_residual_forward then clf_layernorm_forward: sum, y, mean and rstd
 * equal to the bit, and sum and y against the plain-C reference; then of
 * clf_residual_layernorm_backward against clf_layernorm_backward then
 * clf_residual_backward: dx, dsub, dgain and dbias equal to the bit. With
 * alias, y is x's own tensor (the decoder's post-norm stream) and dx
 * overwrites dy. */
bool ot_residual_ln_case(clf_ctx_t *ctx, size_t rows, size_t d, bool alias, const struct clf_dropout *drop)
{
    const size_t n = rows * d;
    float *x = ot_rand(n, 60 + d, -3, 3), *f = ot_rand(n, 61 + rows, -2, 2), *g = ot_rand(d, 62, 0.5f, 1.5f),
          *b = ot_rand(d, 63, -1, 1), *dy = ot_rand(n, 64, -1, 1), *p0 = ot_rand(d, 65, -1, 1), *ws = malloc(n * 4),
          *wy = malloc(n * 4), *wm = malloc(rows * 4), *wr = malloc(rows * 4);
    clf_tensor tx = ot_up2(ctx, x, rows, d), tf = ot_up2(ctx, f, rows, d), tg = ot_up2(ctx, g, 1, d),
               tb = ot_up2(ctx, b, 1, d), sa = ot_up2(ctx, NULL, rows, d), ya = ot_up2(ctx, NULL, rows, d),
               ma = ot_up2(ctx, NULL, rows, 1), ra = ot_up2(ctx, NULL, rows, 1), sb = ot_up2(ctx, NULL, rows, d),
               yb = alias ? ot_up2(ctx, x, rows, d) : ot_up2(ctx, NULL, rows, d), mb = ot_up2(ctx, NULL, rows, 1),
               rb = ot_up2(ctx, NULL, rows, 1), dya = ot_up2(ctx, dy, rows, d), dxa = ot_up2(ctx, NULL, rows, d),
               dsa = ot_up2(ctx, NULL, rows, d), dga = ot_up2(ctx, p0, 1, d), dba = ot_up2(ctx, p0, 1, d),
               dyb = ot_up2(ctx, dy, rows, d), dxb = ot_up2(ctx, NULL, rows, d), dsb = ot_up2(ctx, NULL, rows, d),
               dgb = ot_up2(ctx, p0, 1, d), dbb = ot_up2(ctx, p0, 1, d);
    cr_assert_eq(clf_residual_forward(ctx, &sa, &tx, &tf, drop), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_layernorm_forward(ctx, &ya, &ma, &ra, &sa, &tg, &tb, 1e-5f), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_residual_layernorm_forward(ctx, &yb, &mb, &rb, &sb, alias ? &yb : &tx, &tf, &tg, &tb, 1e-5f,
                                                drop),
                 CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_layernorm_backward(ctx, &dxa, &dga, &dba, &dya, &sa, &ma, &ra, &tg), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    cr_assert_eq(clf_residual_backward(ctx, &dsa, &dxa, drop), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_residual_layernorm_backward(ctx, alias ? &dyb : &dxb, &dsb, &dgb, &dbb, &dyb, &sa, &ma, &ra,
                                                 &tg, drop),
                 CLF_OK, "%s", clf_ctx_error(ctx));
    char what[128];
    snprintf(what, sizeof what, "residual_layernorm rows=%zu d=%zu alias=%d p=%g", rows, d, alias,
             drop ? (double)drop->p : 0.0);
    const clf_tensor *want[8] = {&sa, &ya, &ma, &ra, &dxa, &dsa, &dga, &dba},
                     *got[8] = {&sb, &yb, &mb, &rb, alias ? &dyb : &dxb, &dsb, &dgb, &dbb};
    const size_t len[8] = {n, n, rows, rows, n, n, d, d};
    const char *names[8] = {"sum", "y", "mean", "rstd", "dx", "dsub", "dgain", "dbias"};
    bool ok = true;
    for (int i = 0; i < 8; i++) {
        float *w = tu_download(ctx, want[i], len[i]), *o = tu_download(ctx, got[i], len[i]);
        if (memcmp(w, o, len[i] * sizeof *w)) {
            cr_log_error("%s: %s differs from the unfused kernels'", what, names[i]);
            ok = false;
        }
        free(w), free(o);
    }
    ref_residual_forward(ws, x, f, n, drop);
    ref_layernorm_forward(wy, wm, wr, ws, g, b, rows, d, 1e-5f);
    ok &= ot_check(ctx, what, &sb, ws, n, 1e-6, 1e-6);
    ok &= ot_check(ctx, what, &yb, wy, n, 1e-5, 1e-4);
    clf_tensor *ts[] = {&tx, &tf, &tg, &tb, &sa, &ya, &ma, &ra, &sb, &yb, &mb, &rb,
                        &dya, &dxa, &dsa, &dga, &dba, &dyb, &dxb, &dsb, &dgb, &dbb};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clf_tensor_free(ts[i]);
    free(x), free(f), free(g), free(b), free(dy), free(p0), free(ws), free(wy), free(wm), free(wr);
    return ok;
}

/* The top-k of log-softmax without writing it: clf_lse_rows of x (rows,
 * cols) and clf_topk_rows on x shifted by it, against clf_logsoftmax_forward
 * (every value x - lse to the bit) and ref_topk on its output (columns,
 * values and the picked entry exactly). */
bool ot_topk_shift_case(clf_ctx_t *ctx, const float *x, size_t rows, size_t cols, size_t k, int skip, size_t pick)
{
    const size_t n = rows * cols;
    clf_tensor tx = ot_up2(ctx, x, rows, cols), ty = ot_up2(ctx, NULL, rows, cols), tl = ot_up2(ctx, NULL, rows, 1),
               tv = ot_up2(ctx, NULL, rows, k), ta = ot_up2(ctx, NULL, rows, 1);
    int32_t *gi = malloc(rows * k * 4), *wi = malloc(rows * k * 4);
    for (size_t e = 0; e < rows * k; e++)
        gi[e] = -7;
    clf_tensor ti = tu_upload_ints(ctx, gi, rows * k);
    cr_assert_eq(clf_logsoftmax_forward(ctx, &ty, &tx), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_lse_rows(ctx, &tl, &tx), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_topk_rows(ctx, &tv, &ti, &ta, &tx, &tl, k, skip, pick), CLF_OK, "%s", clf_ctx_error(ctx));
    float *y = tu_download(ctx, &ty, n), *lse = tu_download(ctx, &tl, rows), *wv = malloc(rows * k * 4),
          *wa = malloc(rows * 4);
    bool ok = true;
    for (size_t e = 0; e < n && ok; e++)
        if (y[e] != x[e] - lse[e / cols]) {
            cr_log_error("lse_rows rows=%zu cols=%zu: log-softmax[%zu] %a is not x - lse %a", rows, cols, e, y[e],
                         x[e] - lse[e / cols]);
            ok = false;
        }
    ref_topk(wv, wi, wa, y, rows, cols, k, skip, pick);
    float *gv = tu_download(ctx, &tv, rows * k), *ga = tu_download(ctx, &ta, rows);
    cr_assert_eq(clf_tensor_download_i32(ctx, &ti, gi), CLF_OK);
    if (memcmp(gi, wi, rows * k * 4) || memcmp(gv, wv, rows * k * 4) || memcmp(ga, wa, rows * 4)) {
        cr_log_error("topk_rows with a shift, rows=%zu cols=%zu k=%zu skip=%d: not the top-k of log-softmax", rows,
                     cols, k, skip);
        ok = false;
    }
    clf_tensor *ts[] = {&tx, &ty, &tl, &tv, &ta, &ti};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clf_tensor_free(ts[i]);
    free(y), free(lse), free(wv), free(wa), free(gv), free(ga), free(gi), free(wi);
    return ok;
}

void ot_embed_case(clf_ctx_t *ctx, const char *what, const int32_t *ids, size_t vocab, size_t d, size_t max_len,
                   bool learned, const struct clf_embed_desc *desc, unsigned long long seed, double fwd_atol)
{
    const size_t rows = desc->batch * desc->len, n = rows * d;
    float *table = ot_rand(vocab * d, seed, -1, 1), *pos = ot_rand(max_len * d, 20 + seed, -1, 1),
          *want = malloc((n ? n : 1) * sizeof *want), *dy = ot_rand(n, 30 + seed, -1, 1),
          *dt = ot_rand(vocab * d, 40, -1, 1), *dl = ot_rand(max_len * d, 41, -1, 1);
    ref_embed_forward(want, ids, table, learned ? pos : NULL, d, desc);
    clf_tensor tids = tu_upload_ints(ctx, ids, rows);
    clf_tensor tt = ot_up2(ctx, table, vocab, d), tp = ot_up2(ctx, pos, max_len, d), ty = ot_up2(ctx, NULL, rows, d),
               tdy = ot_up2(ctx, dy, rows, d), tdt = ot_up2(ctx, dt, vocab, d), tdl = ot_up2(ctx, dl, max_len, d);
    cr_assert_eq(clf_embed_forward(ctx, &ty, &tids, &tt, learned ? &tp : NULL, desc), CLF_OK, "%s: %s", what,
                 clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, what, &ty, want, n, fwd_atol, 1e-5));
    struct clf_embed_index *ix;
    cr_assert_eq(clf_embed_index_init(ctx, &ix, ids, rows, vocab), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_embed_backward(ctx, &tdt, learned ? &tdl : NULL, &tdy, ix, desc), CLF_OK, "%s: %s", what,
                 clf_ctx_error(ctx));
    ref_embed_backward(dt, learned ? dl : NULL, dy, ids, d, desc);
    cr_expect(ot_check(ctx, what, &tdt, dt, vocab * d, 1e-5, 1e-5), "%s: dtable", what);
    cr_expect(ot_check(ctx, what, &tdl, dl, max_len * d, 1e-5, 1e-5), "%s: dlearned", what);
    clf_embed_index_free(ix);
    clf_tensor_free(&tids);
    clf_tensor_free(&tt), clf_tensor_free(&tp), clf_tensor_free(&ty), clf_tensor_free(&tdy);
    clf_tensor_free(&tdt), clf_tensor_free(&tdl);
    free(table), free(pos), free(want), free(dy), free(dt), free(dl);
}
