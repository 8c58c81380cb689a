/* weights.h: the model's weights (weights.c). Their layout comes from a
 * config alone, with no context and no device (import lays a Marian model
 * out with it): every parameter's name and shape in checkpoint order and
 * its place in one flat buffer, gradients in a second of the same layout.
 * Views carve such a buffer into the layers' named tensors. */
#ifndef CLF_MODEL_WEIGHTS_H
#define CLF_MODEL_WEIGHTS_H

#include "clformer.h"

/* The parameters of a config, in checkpoint order. */
struct model_layout {
    struct clf_param *params;  /* (nparams) names, shapes, offsets */
    size_t nparams;
    size_t numel;              /* floats of the flat buffer (each tensor starts 64-byte aligned) */
};

/* Lays c's parameters out into *l (clf_model_layout_free it); a failure's
 * message is clf_ctx_error(NULL)'s. */
clf_status clf_model_layout_build(const struct clf_model_config *c, struct model_layout *l);
void clf_model_layout_free(struct model_layout *l);
/* The parameter named name, or NULL. */
const struct clf_param *clf_model_layout_find(const struct model_layout *l, const char *name);
/* The reference implementations' initialisation of a flat host buffer w
 * (l->numel floats) from seed. */
void clf_model_weights_init_host(const struct model_layout *l, const struct clf_model_config *c, float *w, uint64_t seed);
/* Whether numel weights and as many gradients fit ctx's device, each
 * buffer within its largest allocation; CLF_ERR_MEMORY says by how much
 * they do not. */
clf_status clf_model_weights_fit(clf_ctx_t *ctx, size_t numel);

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

/* Views of flat (l's layout of c) into *v (clf_model_views_free it). */
clf_status clf_model_views_build(clf_ctx_t *ctx, const struct clf_model_config *c, const struct model_layout *l,
                                 clf_tensor *flat, struct model_views *v);
void clf_model_views_free(struct model_views *v);

#endif
