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
    clf_tensor logits_bias; /* (V): with a logits bias only */
};

/* The embeddings' position layout for a config's sinusoids. */
static inline enum clf_pos_layout model_pos_layout(const struct clf_model_config *c)
{
    return c->positions == CLF_POS_SINUSOIDAL_HALVES ? CLF_POS_HALVES : CLF_POS_INTERLEAVED;
}

/* ------------------------------------------------------------ sublayers */

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
clf_status sublayer_forward(clf_ctx_t *ctx, const struct sublayer *s, struct sublayer_acts *a, const clf_tensor *u,
                            clf_tensor *out);
/* The rule's backward, from the forward's u and a: g->d_stream goes from
 * the output's gradient to u's; the other three are overwritten. */
clf_status sublayer_backward(clf_ctx_t *ctx, const struct sublayer *s, struct sublayer_acts *a, const clf_tensor *u,
                             struct sublayer_grads *g);

/* ------------------------------------------------------------ activations */

struct layer_acts {
    struct sublayer_acts sub[NSUB];
    struct clf_mha_workspace self_ws, cross_ws;
    clf_tensor hidden;       /* (N, d_ff) FFN activations */
};

struct side_acts {           /* the encoder's or the decoder's */
    size_t cap;              /* rows (batch·len) planned for */
    clf_tensor embedded;     /* (N, d) embeddings: the first layer's input */
    struct layer_acts *layers;
    clf_tensor final_normed, final_mean, final_rstd; /* (N, d), (N), (N): pre-norm's final norm (the side's output) */
    struct sublayer_grads grad;
};

struct model_acts {
    struct clf_model_shape cap;  /* the largest shape planned for (tgt_rows 0: no decoder) */
    size_t bytes;                /* device memory of all of it */
    struct side_acts enc, dec;
    clf_tensor d_mem;        /* (N_src, d): gradient into the encoder output */
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
    int32_t *lens;                                /* (lens_cap) host copy of the source lengths, kept */
    size_t lens_cap;
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
    clf_tensor last_logits;   /* (N_tgt, V) view of acts.logits after a forward-only call (buf NULL: none) */
    const struct clf_backward_hook *hook;  /* of the next backward (NULL: none) */
    bool *told;               /* (nparams) named to the hook in this backward */
    size_t *told_now;         /* (nparams) the indices of one call to it */
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

/* A layer's parameters and gradients, sublayer by sublayer. */
struct layer_view {
    struct clf_mha_params *self, *cross, *dself, *dcross;
    struct clf_ffn_params *ffn, *dffn;
    clf_tensor *norm_g[NSUB], *norm_b[NSUB], *dnorm_g[NSUB], *dnorm_b[NSUB];
};

/* model.c */
struct layer_view model_layer_view(clf_model_t *m, enum clf_side side, int l);
/* Sublayer k of layer view v with its parameters and norm set, no dropout;
 * the caller sets what F reads (ws and desc, or cache) and the dropouts. */
struct sublayer model_sublayer(const clf_model_t *m, const struct layer_view *v, int k);
clf_status model_encode(clf_model_t *m, const int32_t *src, size_t batch, size_t src_len,
                        const struct clf_step_opts *o, clf_tensor *mem);
clf_status model_adam_alloc(clf_model_t *m);

/* checkpoint.c: writes m's parameters from host (numel floats, m->params'
 * layout) as a checkpoint with metadata meta (NULL: clf_ckpt_meta_init's),
 * as clf_model_save does; m->ctx may be NULL. */
clf_status model_save_host(const clf_model_t *m, const float *host, const char *path,
                           const struct clf_ckpt_meta *meta);

/* checkpoint_meta.c: the one place that knows __metadata__'s keys. */
struct clf_st_meta;
struct clf_st_file;
/* The most pairs a model file's metadata holds. */
#define CKPT_META_MAX 24
/* A model file's pairs into out[CKPT_META_MAX]: format, config and
 * inference (of c), then meta's. Returns how many. */
size_t ckpt_meta_write(const struct clf_ckpt_meta *meta, const struct clf_model_config *c, struct clf_st_meta *out);
/* The optimizer file's pairs (format, config, step) into out[3]. */
size_t ckpt_meta_optim_write(const struct clf_model_config *c, uint32_t step, struct clf_st_meta *out);
/* Reads path into f (clf_st_free it), refusing a file whose format is not
 * CLF_CKPT_FORMAT. */
clf_status ckpt_file_read(const char *path, struct clf_st_file *f);
/* f's metadata into meta and, when c is not NULL, its config into c. */
clf_status ckpt_meta_parse(const char *path, const struct clf_st_file *f, struct clf_ckpt_meta *meta,
                           struct clf_model_config *c);
/* Whether f holds the optimizer state of a model of config c; its step
 * into *step. */
bool ckpt_meta_optim_read(const struct clf_st_file *f, const struct clf_model_config *c, uint32_t *step);

/* import_marian.c: the files of a Marian model's tokenizer, as a
 * checkpoint's directory holds them; the optional ones are copied where
 * present. */
#define MARIAN_TOK_FILES 6
struct marian_tok_file {
    const char *name;
    bool required;
};
extern const struct marian_tok_file marian_tok_files[MARIAN_TOK_FILES];

/* config.c: the config metadata (clf_model_config_json's flat object) into
 * *c; a bad field is refused naming path and the field. */
clf_status model_config_parse(const char *path, const char *text, struct clf_model_config *c);

/* params.c. The layout of m->cfg's parameters into m->params and
 * m->numel; with m->ctx NULL (no device) it only lays them out, unchecked
 * against a device's memory. */
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
