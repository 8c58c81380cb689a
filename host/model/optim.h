/* optim.h: the optimizer's state (optim.c): Adam's two moments, in the
 * weights' flat layout, the scratch of its step, and the count of steps
 * taken. Created on the first step (or when training reserves memory) and
 * kept with the model; a checkpoint's optimizer file holds it. */
#ifndef CLF_MODEL_OPTIM_H
#define CLF_MODEL_OPTIM_H

#include "clformer.h"

struct model_adam {
    clf_tensor m, v;     /* (numel) first and second moments; buf NULL: not created */
    clf_tensor scratch;  /* clf_adam_scratch_size floats */
    uint32_t step;       /* updates taken */
};

/* Creates zeroed moments for numel parameters, unless they exist. */
clf_status clf_model_adam_alloc(clf_ctx_t *ctx, struct model_adam *a, size_t numel);
/* Frees the moments and their scratch; the step count is left. */
void clf_model_adam_free(struct model_adam *a);
/* Device bytes the state of numel parameters takes once created. */
size_t clf_model_adam_bytes(clf_ctx_t *ctx, size_t numel);
/* Device bytes it holds now. */
size_t clf_model_adam_held(const struct model_adam *a);
/* One Adam step of the weights w from their gradients g (numel each) with
 * the paper's β1, β2, ε at learning rate lr (clip_norm 0: no clipping);
 * creates the state first when it does not exist. */
clf_status clf_model_adam_update(clf_ctx_t *ctx, struct model_adam *a, clf_tensor *w, clf_tensor *g, float lr,
                                 float clip_norm);

#endif
