/* model_internal.h: the model object (struct clf_model) and what the
 * files that run it (model.c, decode.c, search.c, checkpoint.c, optim.c)
 * share. Its parts have their own headers: the weights' layout and views
 * (weights.h), the activations (acts.h), the sublayer (sublayer.h), the
 * optimizer's state (optim.h), the checkpoint's files (checkpoint.h). */
#ifndef CLF_MODEL_INTERNAL_H
#define CLF_MODEL_INTERNAL_H

#include "acts.h"
#include "checkpoint.h"
#include "clformer.h"
#include "optim.h"
#include "runtime/buffers.h"
#include "sublayer.h"
#include "weights.h"

/* The embeddings' position layout for a config's sinusoids. */
static inline enum clf_pos_layout model_pos_layout(const struct clf_model_config *c)
{
    return c->positions == CLF_POS_SINUSOIDAL_HALVES ? CLF_POS_HALVES : CLF_POS_INTERLEAVED;
}

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
    struct model_layout lay;  /* the parameters: names, shapes, offsets */
    clf_tensor weights, grads;
    struct model_views w, g;
    struct model_acts acts;
    struct model_inputs in;
    struct model_losses losses;
    struct model_adam adam;
    uint64_t seed;            /* keys dropout */
    clf_tensor last_logits;   /* (N_tgt, V) view of acts.logits after clf_model_forward (buf NULL: none) */
    const struct clf_backward_hook *hook;  /* of the next backward (NULL: none) */
    bool *told;               /* (nparams) named to the hook in this backward */
    size_t *told_now;         /* (nparams) the indices of one call to it */
    int stored_compute;       /* enum clf_compute_type: the loaded checkpoint's (float32 otherwise) */
    int compute;              /* enum clf_compute_type: decoding's (compute.c) */
};

/* A layer's parameters and gradients, sublayer by sublayer. */
struct layer_view {
    struct clf_mha_params *self, *cross, *dself, *dcross;
    struct clf_ffn_params *ffn, *dffn;
    clf_tensor *norm_g[NSUB], *norm_b[NSUB], *dnorm_g[NSUB], *dnorm_b[NSUB];
};

/* model.c */
/* clf_model_init, with the weights drawn from the seed only when `draw`
 * (a checkpoint's load fills them itself). */
clf_status clf_model_alloc(clf_ctx_t *ctx, clf_model_t **out, const struct clf_model_config *c, uint64_t seed, bool draw);
struct layer_view clf_model_layer_view(clf_model_t *m, enum clf_side side, int l);
/* Sublayer k of layer view v with its parameters and norm set, no dropout;
 * the caller sets what F reads (ws and desc, or cache) and the dropouts. */
struct sublayer clf_model_sublayer(const clf_model_t *m, const struct layer_view *v, int k);
/* clf_model_acts_plan for m, counting the weights, gradients and optimizer
 * state it holds; the last forward's logits are gone after it. */
clf_status clf_model_plan(clf_model_t *m, const struct clf_model_shape *want);
clf_status clf_model_encode(clf_model_t *m, const int32_t *src, size_t batch, size_t src_len,
                            const struct clf_step_opts *o, clf_tensor *mem);

#endif
