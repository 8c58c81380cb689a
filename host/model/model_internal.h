/* model_internal.h: the model's layout, shared by the files of host/model/.
 * Parameters live in one flat device buffer (weights) and gradients in a
 * second of the same layout; layer structs hold views into them. */
#ifndef CLF_MODEL_INTERNAL_H
#define CLF_MODEL_INTERNAL_H

#include "clformer.h"
#include "runtime/internal.h"

struct enc_layer {
    struct clf_mha_params attn;
    clf_tensor norm1_g, norm1_b;
    struct clf_ffn_params ffn;
    clf_tensor norm2_g, norm2_b;
};

struct dec_layer {
    struct clf_mha_params self_attn;
    clf_tensor norm1_g, norm1_b;
    struct clf_mha_params cross_attn;
    clf_tensor norm2_g, norm2_b;
    struct clf_ffn_params ffn;
    clf_tensor norm3_g, norm3_b;
};

/* Views of every parameter (or gradient) of the model. */
struct model_views {
    clf_tensor embed;       /* (V, d): target side and output projection (and source when shared) */
    clf_tensor src_embed;   /* (V, d): the source side's own table when not shared, else = embed */
    clf_tensor pos;         /* (max_len, d), learned positions only */
    struct enc_layer *enc;  /* enc_layers */
    struct dec_layer *dec;  /* dec_layers */
    clf_tensor enc_norm_g, enc_norm_b, dec_norm_g, dec_norm_b; /* pre-norm's final norms */
};

/* A layer is up to three sublayers: 0 self-attention, 1 encoder-decoder
 * attention (decoder only), 2 FFN. Each keeps what its backward needs:
 *   post-norm: s = F(u); r = u + dropout(s); n = LayerNorm(r); output n
 *   pre-norm:  n = LayerNorm(u); s = F(n); r = u + dropout(s); output r */
enum { SUB_SELF = 0, SUB_CROSS = 1, SUB_FFN = 2, NSUB = 3 };

struct sub_acts {
    clf_tensor s, r, n;      /* (N, d) */
    clf_tensor mean, rstd;   /* (N) */
};

struct layer_acts {
    struct sub_acts sub[NSUB];
    struct clf_mha_workspace self_ws, cross_ws;
    clf_tensor hidden;       /* (N, d_ff) */
};

struct side_acts {           /* the encoder's or the decoder's */
    size_t cap;              /* rows (batch·len) planned for */
    clf_tensor x0;           /* (N, d) embeddings */
    struct layer_acts *layers;
    clf_tensor out, mean, rstd; /* pre-norm's final norm (out aliases the last layer's output in post-norm) */
    clf_tensor g[4];         /* (N, d) gradient scratch */
};

struct model_acts {
    struct clf_model_shape cap;  /* the largest shape planned for (tgt_rows 0: no decoder) */
    size_t bytes;                /* device memory of all of it */
    struct side_acts enc, dec;
    clf_tensor g_mem;        /* (N_src, d): gradient into the encoder output */
    clf_tensor logits;       /* (N_tgt, V), overwritten by its gradient when training */
};

/* An int32 input: the buffer it is uploaded through and an i32 view of
 * the latest upload's elements. */
struct model_ints {
    struct clf_upload up;
    clf_tensor t;
};

/* What a batch brings from the host, uploaded without waiting for the
 * device (kept across plans: they grow on their own). */
struct model_inputs {
    struct model_ints src_ids, tgt_ids, tgt_out;  /* (batch·len) */
    struct model_ints src_lens;                   /* (batch) */
    struct clf_embed_index *src_ix, *tgt_ix;  /* the embeddings' backward index, built at upload */
};

/* Each batch's (summed loss, tokens) since the last clf_model_loss_take:
 * (n, 2) floats on the device, read once per update. */
struct model_losses {
    clf_tensor buf;          /* (2·cap) */
    size_t n, cap;
};

struct clf_model {
    clf_ctx_t *ctx;
    struct clf_model_config cfg;
    struct clf_param *params;
    size_t nparams, numel;
    clf_tensor weights, grads;
    struct model_views w, g;
    struct model_acts acts;
    struct model_inputs in;
    struct model_losses losses;
    clf_tensor adam_m, adam_v, adam_scratch;
    uint32_t adam_step;
    uint64_t seed;            /* keys dropout */
    size_t last_tgt_rows;     /* rows of the last forward, for clf_model_logits */
};

/* The first n rows of t, as an (n, cols) view. */
static inline clf_tensor rows(const clf_tensor *t, size_t n)
{
    clf_tensor v = *t;
    v.owns = false;
    if (t->ndim == 1) {
        v.shape[0] = n;
    } else {
        v.ndim = 2;
        v.shape[0] = n;
    }
    return v;
}

struct layer_view {
    struct clf_mha_params *self, *cross, *dself, *dcross;
    struct clf_ffn_params *ffn, *dffn;
    clf_tensor *norm_g[NSUB], *norm_b[NSUB], *dnorm_g[NSUB], *dnorm_b[NSUB];
};

/* model.c */
struct layer_view model_layer_view(clf_model_t *m, int side, int l);
clf_status model_encode(clf_model_t *m, const int32_t *src, size_t batch, size_t src_len,
                        const struct clf_step_opts *o, clf_tensor *mem);
clf_status model_adam_alloc(clf_model_t *m);
/* For measurements: one side (0 encoder, 1 decoder) without dropout, from
 * its embeddings in acts x0 forward, and from acts g[0] back to x0's
 * gradient (left in g[0]); src_len, mem and dmem serve the decoder. */
clf_status model_side_forward(clf_model_t *m, int which, size_t batch, size_t len, const clf_tensor *mem,
                              size_t src_len);
clf_status model_side_backward(clf_model_t *m, int which, size_t batch, size_t len, const clf_tensor *mem,
                               clf_tensor *dmem, size_t src_len);

/* params.c */
clf_status model_params_layout(clf_model_t *m);
clf_status model_views_build(clf_model_t *m, clf_tensor *flat, struct model_views *v);
void model_views_free(clf_model_t *m, struct model_views *v);
void model_params_init_host(const clf_model_t *m, float *w, uint64_t seed);
const struct clf_param *model_param_find(const clf_model_t *m, const char *name);

/* acts.c */
/* Grows the activations to hold `want` (each field's maximum with what is
 * planned); tgt_rows 0 plans the encoder only. */
clf_status model_acts_plan(clf_model_t *m, const struct clf_model_shape *want);
void model_acts_free(clf_model_t *m);
/* The output of layer l of a side (or its embeddings for l = -1). */
clf_tensor *model_layer_out(clf_model_t *m, struct side_acts *s, int l);

#endif
