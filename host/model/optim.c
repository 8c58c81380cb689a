/* optim.c: the model's optimizer: Adam's state (struct model_adam, two
 * moments of numel floats in the weights' layout, so that a step is one
 * kernel over weights, gradients and both moments) and the model's calls
 * that step, count and reset it. */
#include "base/status.h"
#include "model_internal.h"
#include "optim.h"

clf_status clf_model_adam_alloc(clf_ctx_t *ctx, struct model_adam *a, size_t numel)
{
    clf_status st = CLF_OK;
    if (a->m.buf)
        return CLF_OK;
    size_t scratch = clf_adam_scratch_size(ctx, numel);
    CLF_TRY(clf_tensor_init(ctx, &a->m, 1, &numel));
    CLF_TRY(clf_tensor_init(ctx, &a->v, 1, &numel));
    CLF_TRY(clf_tensor_init(ctx, &a->scratch, 1, &scratch));
    CLF_TRY(clf_tensor_fill(ctx, &a->m, 0.0f));
    CLF_TRY(clf_tensor_fill(ctx, &a->v, 0.0f));
    return CLF_OK;
fail:
    clf_model_adam_free(a);
    return st;
}

void clf_model_adam_free(struct model_adam *a)
{
    clf_tensor_free(&a->m);
    clf_tensor_free(&a->v);
    clf_tensor_free(&a->scratch);
}

size_t clf_model_adam_bytes(clf_ctx_t *ctx, size_t numel)
{
    return (2 * numel + clf_adam_scratch_size(ctx, numel)) * sizeof(float);
}

size_t clf_model_adam_held(const struct model_adam *a)
{
    const clf_tensor *ts[] = {&a->m, &a->v, &a->scratch};
    size_t b = 0;
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        if (ts[i]->buf)
            b += clf_tensor_numel(ts[i]) * sizeof(float);
    return b;
}

clf_status clf_model_adam_update(clf_ctx_t *ctx, struct model_adam *a, clf_tensor *w, clf_tensor *g, float lr,
                                 float clip_norm)
{
    clf_status st = clf_model_adam_alloc(ctx, a, clf_tensor_numel(w));
    if (st != CLF_OK)
        return st;
    struct clf_adam_desc d = {lr, 0.9f, 0.98f, 1e-9f, clip_norm, 0.0f, a->step + 1};
    st = clf_adam_step(ctx, w, &a->m, &a->v, g, &a->scratch, &d);
    if (st == CLF_OK)
        a->step++;
    return st;
}

clf_status clf_model_adam_step(clf_model_t *m, float lr, float clip_norm)
{
    if (!m->grads.buf)
        return clf_error_set(m->ctx, CLF_ERR_ARG, "adam_step: the model has no gradients yet (its first "
                                                  "clf_model_accumulate, clf_model_zero_grad or clf_model_reserve "
                                                  "makes them)");
    return clf_model_adam_update(m->ctx, &m->adam, &m->weights, &m->grads, lr, clip_norm);
}

uint32_t clf_model_adam_steps(const clf_model_t *m) { return m->adam.step; }

void clf_model_optimizer_reset(clf_model_t *m, uint64_t seed)
{
    clf_model_adam_free(&m->adam);
    m->adam.step = 0;
    m->seed = seed;
}
