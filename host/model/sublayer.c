/* sublayer.c: the residual sublayer, the one rule every layer is made of,
 * and its backward beside it. Training, encoding and decoding all run a
 * sublayer through clf_sublayer_forward; only F's inputs differ (whole
 * sequences with a workspace, or one position per row over key/value
 * caches).
 *
 * Shapes: u, the output and every activation (N, d), N rows of d_model;
 * the FFN's hidden (N, d_ff); LN's statistics (N). */
#include "base/status.h"
#include "sublayer.h"

/* y = F(x) */
static clf_status fn_forward(clf_ctx_t *ctx, const struct sublayer_fn *f, clf_tensor *y, const clf_tensor *x)
{
    if (f->ffn) {
        clf_tensor hidden = f->hidden;
        return clf_ffn_forward(ctx, y, &hidden, x, f->ffn, &f->drop);
    }
    if (f->cache)
        return clf_mha_decode_step(ctx, y, x, f->cache, f->attn, f->window, f->step);
    return clf_mha_forward(ctx, y, f->ws, x, f->mem, f->attn, &f->desc);
}

/* dx (overwritten) from dy, for the forward of x; parameter gradients
 * (and the memory's) are added into. */
static clf_status fn_backward(clf_ctx_t *ctx, const struct sublayer_fn *f, clf_tensor *dx, const clf_tensor *dy,
                              const clf_tensor *x)
{
    if (f->ffn) {
        clf_tensor hidden = f->hidden;
        return clf_ffn_backward(ctx, dx, f->dffn, dy, x, &hidden, f->ffn, &f->drop);
    }
    return clf_mha_backward(ctx, dx, f->dmem, f->dattn, dy, x, f->mem, f->ws, f->attn, &f->desc);
}

clf_status clf_sublayer_forward(clf_ctx_t *ctx, const struct sublayer *s, struct sublayer_acts *a, const clf_tensor *u,
                                clf_tensor *out)
{
    clf_status st = CLF_OK;
    if (s->pre) {
        /* u + drop(F(LN(u))) */
        CLF_TRY(clf_layernorm_forward(ctx, &a->normed, &a->ln_mean, &a->ln_rstd, u, s->norm_g, s->norm_b, s->eps));
        CLF_TRY(fn_forward(ctx, &s->f, &a->f_out, &a->normed));
        CLF_TRY(clf_residual_forward(ctx, &a->resid, u, &a->f_out, &s->drop));
    } else {
        /* LN(u + drop(F(u))): the sum and the norm in one kernel */
        CLF_TRY(fn_forward(ctx, &s->f, &a->f_out, u));
        CLF_TRY(clf_residual_layernorm_forward(ctx, &a->normed, &a->ln_mean, &a->ln_rstd, &a->resid, u, &a->f_out,
                                               s->norm_g, s->norm_b, s->eps, &s->drop));
    }
    *out = *sublayer_out(a, s->pre);
fail:
    return st;
}

clf_status clf_sublayer_backward(clf_ctx_t *ctx, const struct sublayer *s, struct sublayer_acts *a, const clf_tensor *u,
                                 struct sublayer_grads *g)
{
    clf_status st = CLF_OK;
    if (s->pre) {
        /* out = resid = u + drop(F(LN(u))): u's gradient is d_stream (the
         * identity) plus what comes back through F and LN */
        CLF_TRY(clf_residual_backward(ctx, &g->d_f_out, &g->d_stream, &s->drop));
        CLF_TRY(fn_backward(ctx, &s->f, &g->d_f_in, &g->d_f_out, &a->normed));
        CLF_TRY(clf_layernorm_backward(ctx, &g->d_ln_in, s->dnorm_g, s->dnorm_b, &g->d_f_in, u, &a->ln_mean,
                                       &a->ln_rstd, s->norm_g));
        CLF_TRY(clf_add(ctx, &g->d_stream, &g->d_stream, &g->d_ln_in));
    } else {
        /* out = normed = LN(u + drop(F(u))): u's gradient is resid's (the
         * identity) plus what comes back through F */
        CLF_TRY(clf_residual_layernorm_backward(ctx, &g->d_ln_in, &g->d_f_out, s->dnorm_g, s->dnorm_b, &g->d_stream,
                                                &a->resid, &a->ln_mean, &a->ln_rstd, s->norm_g, &s->drop));
        CLF_TRY(fn_backward(ctx, &s->f, &g->d_f_in, &g->d_f_out, u));
        CLF_TRY(clf_add(ctx, &g->d_stream, &g->d_ln_in, &g->d_f_in));
    }
fail:
    return st;
}
