/* acts.h: the model's activation memory (acts.c): what the forward
 * leaves for the backward, side by side and layer by layer, planned for
 * the largest batch shape seen or reserved (struct clf_model_shape) and
 * reused by every smaller one (each call takes views of the rows it
 * needs). Knows the config, not the model. */
#ifndef CLF_MODEL_ACTS_H
#define CLF_MODEL_ACTS_H

#include "clformer.h"
#include "sublayer.h"

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

/* Grows a (for config c) to hold `want`, each field the maximum of what
 * is planned and what is wanted (tgt_rows 0 plans the encoder only); every
 * buffer is checked against ctx's device first, and the total with
 * state_bytes (the weights, gradients and optimizer state it holds beside
 * them) against its memory: a refusal (CLF_ERR_MEMORY) names the buffer
 * or the total, its size and the limit. Growing frees what was planned
 * (views of it, the logits' included, are gone). */
clf_status clf_model_acts_plan(clf_ctx_t *ctx, const struct clf_model_config *c, struct model_acts *a,
                               const struct clf_model_shape *want, size_t state_bytes);
void clf_model_acts_free(struct model_acts *a, const struct clf_model_config *c);
/* The output of layer l of a side (or its embeddings for l = -1), pre:
 * pre-norm. */
clf_tensor *clf_model_layer_out(struct side_acts *s, int l, bool pre);

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

#endif
