/* test_ops_ffn.c: the position-wise FFN with each activation (ReLU, SiLU,
 * GELU): forward against tests/ref_ops.c on odd shapes with and without
 * dropout (exact masks); backward (dx and all four parameter gradients,
 * which add) against central finite differences of the double reference;
 * determinism; argument checks. */
#include "ops_testutil.h"

struct ffn_host {
    size_t rows, d, dff;
    float *x, *w1, *b1, *w2, *b2;
};

static struct ffn_host host_make(size_t rows, size_t d, size_t dff, unsigned seed)
{
    struct ffn_host h = {rows, d, dff, ot_rand(rows * d, seed, -1, 1), ot_rand(d * dff, seed + 1, -0.5f, 0.5f),
                         ot_rand(dff, seed + 2, -0.2f, 0.2f), ot_rand(dff * d, seed + 3, -0.5f, 0.5f),
                         ot_rand(d, seed + 4, -0.2f, 0.2f)};
    return h;
}

static void host_free(struct ffn_host *h)
{
    free(h->x), free(h->w1), free(h->b1), free(h->w2), free(h->b2);
}

static const char *const act_names[] = {"relu", "silu", "gelu"};

static struct clf_ffn_params params_up(clf_ctx_t *ctx, const struct ffn_host *h, enum clf_activation act)
{
    struct clf_ffn_params p = {ot_up2(ctx, h->w1, h->d, h->dff), tu_upload(ctx, h->b1, h->dff),
                               ot_up2(ctx, h->w2, h->dff, h->d), tu_upload(ctx, h->b2, h->d), act};
    return p;
}

static void params_free(struct clf_ffn_params *p)
{
    clf_tensor_free(&p->w1), clf_tensor_free(&p->b1), clf_tensor_free(&p->w2), clf_tensor_free(&p->b2);
}

Test(ops_ffn, forward_odd_shapes)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t shapes[][3] = {{1, 3, 12}, {7, 64, 256}, {33, 100, 400}, {257, 64, 100}, {100, 1, 4}};
    for (int s = 0; s < 5; s++)
        for (int pd = 0; pd < 2; pd++)
        for (int act = 0; act < 3; act++) {
            struct ffn_host h = host_make(shapes[s][0], shapes[s][1], shapes[s][2], 10 * s);
            size_t rows = h.rows, d = h.d, dff = h.dff;
            struct clf_dropout drop = {pd ? 0.1f : 0.0f, 42, 3, 9};
            float *y = malloc(rows * d * 4), *hid = malloc(rows * dff * 4);
            ref_ffn_forward_act(y, hid, h.x, h.w1, h.b1, h.w2, h.b2, rows, d, dff, &drop, act);
            struct clf_ffn_params p = params_up(ctx, &h, (enum clf_activation)act);
            clf_tensor tx = ot_up2(ctx, h.x, rows, d), ty = ot_up2(ctx, NULL, rows, d),
                       th = ot_up2(ctx, NULL, rows, dff);
            cr_assert_eq(clf_ffn_forward(ctx, &ty, &th, &tx, &p, &drop), CLF_OK, "%s", clf_ctx_error(ctx));
            char what[96];
            snprintf(what, sizeof what, "ffn %s rows=%zu d=%zu dff=%zu p=%g", act_names[act], rows, d, dff,
                     (double)drop.p);
            cr_expect(ot_check(ctx, what, &ty, y, rows * d, 1e-5, 1e-4));
            cr_expect(ot_check(ctx, what, &th, hid, rows * dff, 1e-5, 1e-4));
            params_free(&p);
            clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&th);
            free(y), free(hid);
            host_free(&h);
        }
    clf_ctx_free(ctx);
}

static double *to_d(const float *x, size_t n)
{
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

/* L = Σ w ⊙ ffn(x); returns it in double with parameter `which` element j moved by e */
static double loss_d(const struct ffn_host *h, const float *w, const struct clf_dropout *drop, int act, int which,
                     size_t j, double e)
{
    size_t rows = h->rows, d = h->d, dff = h->dff;
    const float *src[5] = {h->x, h->w1, h->b1, h->w2, h->b2};
    size_t len[5] = {rows * d, d * dff, dff, dff * d, d};
    double *v[5];
    for (int i = 0; i < 5; i++)
        v[i] = to_d(src[i], len[i]);
    v[which][j] += e;
    double *y = malloc(rows * d * sizeof *y), l = 0;
    ref_ffn_forward_d_act(y, v[0], v[1], v[2], v[3], v[4], rows, d, dff, drop, act);
    for (size_t i = 0; i < rows * d; i++)
        l += w[i] * y[i];
    for (int i = 0; i < 5; i++)
        free(v[i]);
    free(y);
    return l;
}

static void fd_case(clf_ctx_t *ctx, size_t rows, size_t d, size_t dff, float pdrop, enum clf_activation act)
{
    struct ffn_host h = host_make(rows, d, dff, 77);
    struct clf_dropout drop = {pdrop, 5, 1, 2};
    float *w = ot_rand(rows * d, 78, -1, 1);
    size_t len[5] = {rows * d, d * dff, dff, dff * d, d};
    float *num[5], *start[5];
    const double e = 1e-5;
    for (int which = 0; which < 5; which++) {
        start[which] = ot_rand(len[which], 80 + which, -1, 1);  /* parameter grads start non-zero */
        num[which] = ot_copy(start[which], len[which]);
        if (which == 0)
            memset(num[0], 0, len[0] * 4);  /* dx is overwritten */
        for (size_t j = 0; j < len[which]; j++)
            num[which][j] += (float)((loss_d(&h, w, &drop, act, which, j, e) -
                                      loss_d(&h, w, &drop, act, which, j, -e)) / (2 * e));
    }
    struct clf_ffn_params p = params_up(ctx, &h, act);
    struct clf_ffn_params g = {ot_up2(ctx, start[1], d, dff), tu_upload(ctx, start[2], dff),
                               ot_up2(ctx, start[3], dff, d), tu_upload(ctx, start[4], d), act};
    clf_tensor tx = ot_up2(ctx, h.x, rows, d), ty = ot_up2(ctx, NULL, rows, d), th = ot_up2(ctx, NULL, rows, dff),
               tw = ot_up2(ctx, w, rows, d), tdx = ot_up2(ctx, start[0], rows, d);
    cr_assert_eq(clf_ffn_forward(ctx, &ty, &th, &tx, &p, &drop), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_ffn_backward(ctx, &tdx, &g, &tw, &tx, &th, &p, &drop), CLF_OK, "%s", clf_ctx_error(ctx));
    char what[128];
    snprintf(what, sizeof what, "ffn_backward %s rows=%zu d=%zu dff=%zu p=%g vs finite differences", act_names[act],
             rows, d, dff, (double)pdrop);
    const clf_tensor *got[5] = {&tdx, &g.w1, &g.b1, &g.w2, &g.b2};
    for (int which = 0; which < 5; which++)
        cr_expect(ot_check(ctx, what, got[which], num[which], len[which], 1e-4, 1e-3), "%s: tensor %d", what, which);
    params_free(&p), params_free(&g);
    clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&th), clf_tensor_free(&tw), clf_tensor_free(&tdx);
    for (int which = 0; which < 5; which++)
        free(num[which]), free(start[which]);
    free(w);
    host_free(&h);
}

Test(ops_ffn, backward_vs_finite_differences)
{
    clf_ctx_t *ctx = tu_ctx();
    for (int act = 0; act < 3; act++) {
        fd_case(ctx, 3, 5, 7, 0.0f, (enum clf_activation)act);
        fd_case(ctx, 7, 16, 33, 0.1f, (enum clf_activation)act);
    }
    clf_ctx_free(ctx);
}

Test(ops_ffn, deterministic)
{
    clf_ctx_t *ctx = tu_ctx();
    struct ffn_host h = host_make(100, 64, 256, 3);
    struct clf_dropout drop = {0.1f, 1, 2, 3};
    size_t rows = h.rows, d = h.d, dff = h.dff;
    struct clf_ffn_params p = params_up(ctx, &h, CLF_ACT_SILU);  /* the path that keeps x·W1 */
    clf_tensor tx = ot_up2(ctx, h.x, rows, d), ty = ot_up2(ctx, NULL, rows, d), th = ot_up2(ctx, NULL, rows, dff);
    float *out[2][3];
    for (int k = 0; k < 2; k++) {
        struct clf_ffn_params g = {ot_up2(ctx, NULL, d, dff), ot_up2(ctx, NULL, 1, dff), ot_up2(ctx, NULL, dff, d),
                                   ot_up2(ctx, NULL, 1, d), CLF_ACT_SILU};
        clf_tensor dx = ot_up2(ctx, NULL, rows, d);
        cr_assert_eq(clf_ffn_forward(ctx, &ty, &th, &tx, &p, &drop), CLF_OK);
        cr_assert_eq(clf_ffn_backward(ctx, &dx, &g, &ty, &tx, &th, &p, &drop), CLF_OK);
        out[k][0] = tu_download(ctx, &dx, rows * d), out[k][1] = tu_download(ctx, &g.w1, d * dff);
        out[k][2] = tu_download(ctx, &g.b1, dff);
        params_free(&g), clf_tensor_free(&dx);
    }
    cr_expect(memcmp(out[0][0], out[1][0], rows * d * 4) == 0, "dx differs between runs");
    cr_expect(memcmp(out[0][1], out[1][1], d * dff * 4) == 0, "dW1 differs between runs");
    cr_expect(memcmp(out[0][2], out[1][2], dff * 4) == 0, "db1 differs between runs");
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++)
            free(out[k][i]);
    params_free(&p);
    clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&th);
    host_free(&h);
    clf_ctx_free(ctx);
}

Test(ops_ffn, bad_arguments)
{
    clf_ctx_t *ctx = tu_ctx();
    struct ffn_host h = host_make(7, 3, 12, 1);
    struct clf_ffn_params p = params_up(ctx, &h, CLF_ACT_RELU);
    clf_tensor x = ot_up2(ctx, NULL, 7, 3), y = ot_up2(ctx, NULL, 7, 3), hid = ot_up2(ctx, NULL, 7, 11),
               hid12 = ot_up2(ctx, NULL, 7, 12);
    OT_EXPECT_ARG(ctx, clf_ffn_forward(ctx, &y, &hid, &x, &p, NULL), "ffn_forward");
    OT_EXPECT_ARG(ctx, clf_ffn_backward(ctx, &y, &p, &y, &x, &hid, &p, NULL), "ffn_backward");
    p.act = (enum clf_activation)7;
    OT_EXPECT_ARG(ctx, clf_ffn_forward(ctx, &y, &hid12, &x, &p, NULL), "activation 7");
    clf_tensor_free(&hid12);
    params_free(&p);
    clf_tensor_free(&x), clf_tensor_free(&y), clf_tensor_free(&hid);
    host_free(&h);
    clf_ctx_free(ctx);
}
