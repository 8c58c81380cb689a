/* trainer.c: the duties of `clformer train`'s loop that call the
 * library's trainer (clformer_train.h: the batches, the update, Adam,
 * checkpoints, the resumed position): the sum across ranks plugged into
 * the trainer's hooks (dist.h; in buckets during the backward, buckets.h,
 * unless --bucket-mb is 0), a step with the tests' fault and consistency
 * checks around it, validation with greedy BLEU, a checkpoint. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clformer/advanced/hash.h>
#include "buckets.h"
#include "cli.h"
#include "dist.h"
#include "trainer.h"

/* Under MPI (ranks > 1) the library's trainer asks these: the buckets'
 * backward hook for this rank's last batch, and the sum of the update's
 * gradients, loss and tokens before Adam. Buckets need every rank to run a
 * backward (a short update at an epoch's end may leave a rank none): all
 * ranks decide alike. */
static const struct clf_backward_hook *sum_hook(void *user, const struct clf_train_update *u)
{
    struct trainer *t = user;
    t->bucketed = t->buckets && u->batches >= (size_t)t->ranks;
    return t->bucketed ? grad_buckets_begin(t->buckets) : NULL;
}

static clf_status sum_across_ranks(void *user, const struct clf_train_update *u, double *loss, double *tokens)
{
    struct trainer *t = user;
    const bool bucketed = t->bucketed && u->batches >= (size_t)t->ranks;
    t->bucketed = false;
    clf_status st = bucketed ? grad_buckets_finish(t->buckets) : grads_sum_after(t->ctx, t->m, t->grads, NULL);
    double x[2] = {*loss, *tokens};
    if (st == CLF_OK) {
        dist_sum_doubles(x, 2);
        *loss = x[0], *tokens = x[1];
    }
    return st;
}

/* The library trainer's options from the command's. */
struct clf_train_opts trainer_opts(struct trainer *t, const struct clf_model_config *config)
{
    const struct train_args *a = &t->a;
    struct clf_train_opts o = {.config = config, .init = a->init, .dropout = (float)a->dropout,
                               .label_smoothing = (float)a->smoothing, .seed = a->seed,
                               .max_tokens = a->max_tokens, .update_tokens = a->update_tokens,
                               .warmup = a->warmup, .lr_scale = a->lr_scale, .clip = a->clip,
                               .rank = t->rank, .ranks = t->ranks};
    if (t->ranks > 1)
        o.hooks = (struct clf_train_hooks){.user = t, .backward = sum_hook, .reduce = sum_across_ranks};
    return o;
}

/* ------------------------------------------------------------ one update */

/* CLF_DIST_CHECK=K: every K updates the ranks compare a hash of their
 * parameters, which the identical Adam steps must have kept equal. */
static int check_same_parameters(struct trainer *t)
{
    size_t n = clf_model_numel(t->m);
    float *w = malloc(n * sizeof *w);
    clf_status st = w ? clf_tensor_download(t->ctx, clf_model_weights(t->m), w) : CLF_ERR_MEMORY;
    uint64_t h = st == CLF_OK ? clf_fnv1a(CLF_FNV_INIT, w, n * sizeof *w) : 0;
    free(w);
    if (st != CLF_OK)
        return cli_fail(t->ctx, st, "CLF_DIST_CHECK: reading the parameters");
    if (!dist_agree(h)) {
        fprintf(stderr, "clformer train: CLF_DIST_CHECK: the ranks' parameters differ after update %ld "
                "(rank %d's hash %016" PRIx64 ")\n", t->s->step, t->rank, h);
        return 1;
    }
    return 0;
}

int trainer_step(struct trainer *t)
{
    const long step = t->s->step + 1;
    if (t->fail_step == step) {
        fprintf(stderr, "clformer train: CLF_DIST_FAIL_RANK=%d: failing at update %ld on purpose (a test of the "
                "fault path)\n", t->rank, step);
        return 1;
    }
    clf_status st = clf_trainer_step(t->tr);
    if (st != CLF_OK)
        return cli_fail_memory(t->ctx, st, "training step", TRAIN_BATCH_FLAGS);
    t->now = clf_now();
    if (t->check_every > 0 && step % t->check_every == 0 && check_same_parameters(t))
        return 1;
    return 0;
}

/* ------------------------------------------------------------- validation */

int trainer_validate_now(struct trainer *t, double *loss, double *bleu)
{
    clf_status st = clf_trainer_validate(t->tr, t->val, loss);
    if (st != CLF_OK)
        return cli_fail_memory(t->ctx, st, "validation loss", TRAIN_BATCH_FLAGS);
    st = clf_translate_bleu(t->ctx, t->m, t->tok, t->val, (size_t)t->a.max_tokens, bleu);
    return st != CLF_OK ? cli_fail_memory(t->ctx, st, "translating", "--max-tokens") : 0;
}

int trainer_save(struct trainer *t)
{
    clf_status st = clf_trainer_save(t->tr, t->a.out, t->tok, t->a.keep);
    return st != CLF_OK ? cli_fail(t->ctx, st, "saving a checkpoint") : 0;
}
