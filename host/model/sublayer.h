/* sublayer.h: the residual sublayer (sublayer.c), the one rule every
 * layer is made of, and what its forward leaves for its backward. */
#ifndef CLF_MODEL_SUBLAYER_H
#define CLF_MODEL_SUBLAYER_H

#include "clformer.h"

/* A layer is up to three sublayers, each wrapping a function F of its
 * input u (N, d) in one residual rule (sublayer.c), the same for training,
 * encoding and decoding:
 *   post-norm: out = LN(u + drop(F(u)))
 *   pre-norm:  out = u + drop(F(LN(u)))
 * F is self-attention, encoder-decoder attention (decoder only) or the FFN. */
enum sublayer_kind { SUB_SELF = 0, SUB_CROSS = 1, SUB_FFN = 2, NSUB = 3 };

/* What a sublayer's forward leaves for its backward. */
struct sublayer_acts {
    clf_tensor f_out;              /* (N, d) F's output, before dropout */
    clf_tensor resid;              /* (N, d) u + drop(f_out): pre-norm's output, post-norm's LN input */
    clf_tensor normed;             /* (N, d) LN's output: post-norm's output LN(resid), pre-norm's F input LN(u) */
    clf_tensor ln_mean, ln_rstd;   /* (N) LN's row statistics */
};

/* F and what it reads besides its input x (N, d), writing y (N, d):
 * attention (attn set) over whole sequences, keeping what its backward
 * needs in ws, or, when decoding, one position per row over key/value
 * caches (cache set); or the FFN (ffn set). Gradients are added into the
 * d-prefixed parameters. */
struct sublayer_fn {
    const struct clf_mha_params *attn;
    struct clf_mha_params *dattn;
    struct clf_mha_desc desc;           /* with ws */
    struct clf_mha_workspace *ws;
    const clf_tensor *mem;              /* encoder-decoder attention with ws: the memory (N_src, d) */
    clf_tensor *dmem;                   /* (N_src, d): its gradient, added into */
    struct clf_kv_cache *cache;         /* decoding: self or cross cache */
    int window;                         /* with cache: self-attention radius, -1 full */
    size_t step;                        /* with cache: the position fed */
    const struct clf_ffn_params *ffn;
    struct clf_ffn_params *dffn;
    clf_tensor hidden;                  /* (N, d_ff) FFN activations (overwritten by the backward) */
    struct clf_dropout drop;            /* FFN's inner dropout */
};

/* One sublayer: its layer norm, the dropout on F's output, and F. */
struct sublayer {
    bool pre;                           /* pre-norm */
    float eps;                          /* LN's epsilon */
    const clf_tensor *norm_g, *norm_b;  /* (d) */
    clf_tensor *dnorm_g, *dnorm_b;      /* (d) their gradients, added into */
    struct clf_dropout drop;            /* on f_out, before the residual add */
    struct sublayer_fn f;
};

/* The gradient scratch a sublayer's backward passes through, by role. */
struct sublayer_grads {
    clf_tensor d_stream;   /* (N, d) at the sublayer's output on entry, at its input u on exit */
    clf_tensor d_ln_in;    /* (N, d) LN's backward: at resid (post-norm) or at u through LN (pre-norm) */
    clf_tensor d_f_out;    /* (N, d) at f_out, through the residual's dropout */
    clf_tensor d_f_in;     /* (N, d) at F's input */
};

/* The sublayer's output in a: resid (pre-norm) or normed (post-norm). */
static inline clf_tensor *sublayer_out(struct sublayer_acts *a, bool pre)
{
    return pre ? &a->resid : &a->normed;
}

/* Runs the rule on u (N, d) into a (views of N rows); *out is the output. */
clf_status clf_sublayer_forward(clf_ctx_t *ctx, const struct sublayer *s, struct sublayer_acts *a, const clf_tensor *u,
                                clf_tensor *out);
/* The rule's backward, from the forward's u and a: g->d_stream goes from
 * the output's gradient to u's; the other three are overwritten. */
clf_status clf_sublayer_backward(clf_ctx_t *ctx, const struct sublayer *s, struct sublayer_acts *a, const clf_tensor *u,
                                 struct sublayer_grads *g);

#endif
