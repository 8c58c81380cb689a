/* train_setup.c: what `clformer train` does before its first update: the
 * run's folder, the device, then the library's set-up (clf_trainer_open:
 * the checkpoint it resumes or fine-tunes, the data, the subwords, the
 * model, the batches), whose stages this file narrates and whose failures
 * it names in the command's words (its flags); with --init the tokenizer's
 * files copied into --out (finetune.c); under MPI the writer alone learns
 * the subwords while the others wait, and the way the ranks sum. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clformer/advanced/files.h>
#include "buckets.h"
#include "cli.h"
#include "dist.h"
#include "trainer.h"

/* The checkpoint the run starts from: --init's or the resumed one. */
static void source_path(const struct trainer *t, const struct clf_train_setup_report *r, char *path, size_t len)
{
    char optim[CLF_PATH_MAX];
    if (t->a.init)
        snprintf(path, len, "%s", t->a.init);
    else
        clf_trainer_ckpt_paths(t->a.out, r->resume_step, path, optim, len);
}

static void say_train(const struct trainer *t, const struct clf_train_setup_report *r)
{
    const struct clf_corpus_summary *sum = &r->train;
    if (t->talk)
        fprintf(stderr, "train: %zu pairs, %zu kept (%zu empty, %zu longer than %d), %zu + %zu subwords\n",
                sum->lines, sum->kept, sum->skipped_empty, sum->skipped_long, r->max_len, sum->src_tokens,
                sum->tgt_tokens);
}

/* The messages due before stage r->stage that are not yet said, in the
 * order the stages came. */
static void tell(struct trainer *t, const struct clf_train_setup_report *r)
{
    const struct train_args *a = &t->a;
    const enum clf_train_stage now = r->stage;
    if (!t->told.resume) {
        t->told.resume = true;
        if (a->resume && r->resume_step < 0)
            fprintf(stderr, "clformer train: --resume: no checkpoint in %s, starting afresh\n", a->out);
    }
    if (now > CLF_TRAIN_STAGE_LEARN && r->learned && !t->told.learned) {
        t->told.learned = true;
        if (t->talk)
            fprintf(stderr, "  %s in %.1f s\n", r->tokenizer_path, r->learn_seconds);
    }
    if (now >= CLF_TRAIN_STAGE_ENCODE && r->resume_step >= 0 && !t->told.ranks) {
        t->told.ranks = true;
        const struct clf_ckpt_position *was = &clf_trainer_source(r->trainer)->train;
        const struct clf_train_state *s = clf_trainer_state(r->trainer);
        long ranks = was->present ? was->ranks : 1;
        char path[CLF_PATH_MAX];
        source_path(t, r, path, sizeof path);
        if (ranks != t->ranks && t->talk)
            fprintf(stderr, "note: %s was written by %ld rank%s, resuming with %d: an update takes at least one "
                    "batch per rank, so updates that held fewer than %d batches now hold more (unchanged where "
                    "--update-tokens %ld already gave every update %d or more)\n", path, ranks,
                    ranks == 1 ? "" : "s", t->ranks, t->ranks, s->update_tokens, t->ranks);
    }
    if (now > CLF_TRAIN_STAGE_ENCODE && !t->told.train) {
        t->told.train = true;
        say_train(t, r);
    }
    if (now > CLF_TRAIN_STAGE_ENCODE_VAL && r->trainer && !t->told.val) {
        t->told.val = true;
        const struct clf_corpus *val = clf_trainer_corpus(r->trainer, true);
        /* --val-sentences N: the first N kept pairs */
        if (val && t->talk && a->val_pairs > 0)
            fprintf(stderr, "validation: the first %zu of %zu pairs (--val-sentences)\n", val->n_pairs, r->val.kept);
    }
}

static void describe_model(const struct trainer *t)
{
    const struct clf_model_config *cfg = t->cfg;
    char gemm[96];
    cli_gemm_describe(t->ctx, gemm, sizeof gemm);
    fprintf(stderr, "model: %d+%d layers, d_model %d, %d heads, d_ff %d, vocab %d, %s-norm, %zu parameters on %s; "
            "GEMM: %s\n",
            cfg->enc_layers, cfg->dec_layers, cfg->d_model, cfg->heads, cfg->d_ff, cfg->vocab,
            cfg->norm == CLF_NORM_PRE ? "pre" : "post", clf_model_numel(t->m), clf_ctx_device(t->ctx)->device_name,
            gemm);
}

/* The host buffer or the buckets the sum across ranks goes through. */
static int ranks_setup(struct trainer *t)
{
    size_t n = clf_model_numel(t->m);
    if (!(t->grads = malloc(n * sizeof *t->grads))) {
        fprintf(stderr, "clformer: out of host memory\n");
        return 1;
    }
    if (t->a.bucket_mb > 0 && !(t->buckets = grad_buckets_init(t->ctx, t->m, (size_t)(t->a.bucket_mb * 1e6))))
        return 1;
    if (t->talk && t->buckets)
        fprintf(stderr, "%d ranks, gradients of %.1f MB summed per update in buckets of %g MB during the "
                "backward\n", t->ranks, (double)n * sizeof(float) / 1e6, t->a.bucket_mb);
    else if (t->talk)
        fprintf(stderr, "%d ranks, gradients of %.1f MB summed per update after the backward\n", t->ranks,
                (double)n * sizeof(float) / 1e6);
    return 0;
}

/* Before the batches: the model is made and the data encoded. --init's
 * tokenizer into --out, what the run is, the sum across ranks. 0, or 1
 * after saying what failed. */
static int model_made(struct trainer *t, const struct clf_train_setup_report *r)
{
    const struct train_args *a = &t->a;
    t->m = clf_trainer_model(r->trainer);
    t->tok = clf_trainer_tokenizer(r->trainer);
    if (t->writer && a->init && trainer_copy_tokenizer(t, r->tokenizer_path))
        return 1;
    if (t->talk && a->init)
        fprintf(stderr, "fine-tuning %s: its weights and config, tokenizer %s; Adam afresh from update 0 (warm-up "
                "of %d updates)\n", a->init, r->tokenizer_path, a->warmup);
    t->cfg = clf_model_config(t->m);
    if (t->talk)
        describe_model(t);
    return t->ranks > 1 && ranks_setup(t);
}

/* clf_trainer_open's stages as they begin: the messages due before each;
 * the one begun last is the one a failure names. */
static clf_status on_stage(void *user, const struct clf_train_setup_report *r)
{
    struct trainer *t = user;
    tell(t, r);
    if (r->stage == CLF_TRAIN_STAGE_LEARN && t->talk)
        fprintf(stderr, "learning a %d-piece BPE model on %s and %s ...\n", t->a.vocab ? t->a.vocab : 8000,
                t->a.src, t->a.tgt);  /* --vocab 0 (unset): the library's 8000 */
    if (r->stage == CLF_TRAIN_STAGE_BATCHES && model_made(t, r)) {
        t->said = true;
        return CLF_ERR_ARG;
    }
    return CLF_OK;
}

/* The writer learns the subwords; the other ranks wait for its file. A
 * writer that failed to learn ends the job instead (cmd_train.c). */
static clf_status subwords_ready(void *user)
{
    (void)user;
    dist_barrier();
    return CLF_OK;
}

/* A new model: the preset, changed by the options. */
static clf_status configure(void *user, struct clf_model_config *c)
{
    const struct train_args *a = &((struct trainer *)user)->a;
    if (a->layers > 0) c->enc_layers = c->dec_layers = a->layers;
    if (a->d_model > 0) c->d_model = a->d_model;
    if (a->heads > 0) c->heads = a->heads;
    if (a->d_ff > 0) c->d_ff = a->d_ff;
    if (a->norm >= 0) c->norm = a->norm;
    if (a->enc_window >= -1) c->enc_window = a->enc_window;
    if (a->dec_window >= -1) c->dec_window = a->dec_window;
    return CLF_OK;  /* --dropout, --label-smoothing: the library sets them from the options */
}

/* What failed, in the command's words: the stage that failed names the
 * flag or the file. */
static int setup_failed(struct trainer *t, clf_status st)
{
    const struct train_args *a = &t->a;
    const struct clf_train_setup_report *r = &t->setup;
    char what[96], path[CLF_PATH_MAX];
    if (t->said)
        return 1;
    switch (r->stage) {
    case CLF_TRAIN_STAGE_SOURCE:
        return cli_fail(t->ctx, st, a->init ? "--init: reading the checkpoint" : "resuming");
    case CLF_TRAIN_STAGE_READ:
        return cli_fail(t->ctx, st, "reading the training data");
    case CLF_TRAIN_STAGE_READ_VAL:
        return cli_fail(t->ctx, st, "reading the validation data");
    case CLF_TRAIN_STAGE_CKPT_TOKENIZER:
        return cli_fail(t->ctx, st, "opening the checkpoint's tokenizer (pass the one it was made with: --bpe)");
    case CLF_TRAIN_STAGE_LEARN:  /* SentencePiece's message names its limit, the flag is ours */
        snprintf(what, sizeof what, "learning the BPE model of --vocab %d%s", a->vocab ? a->vocab : 8000,
                 a->vocab ? "" : " (the default)");
        return cli_fail(t->ctx, st, what);
    case CLF_TRAIN_STAGE_TOKENIZER:
        return cli_fail(t->ctx, st, "loading the BPE model");
    case CLF_TRAIN_STAGE_CONFIG:
        return cli_fail(t->ctx, st, "--preset");
    case CLF_TRAIN_STAGE_MODEL:
        if (a->init)
            return cli_fail(t->ctx, st, "--init: loading the checkpoint");
        if (r->resume_step >= 0)
            return cli_fail(t->ctx, st, "resuming");
        return cli_fail_memory(t->ctx, st, "creating the model", TRAIN_MODEL_FLAGS);
    case CLF_TRAIN_STAGE_CHECK:
        fprintf(stderr, "clformer train: %s (--bpe)\n", clf_ctx_error(t->ctx));
        return 1;
    case CLF_TRAIN_STAGE_MAX_LEN:  /* the library's bare message, with our flag */
        source_path(t, r, path, sizeof path);
        fprintf(stderr, "clformer train: --max-len %d: %s (%s)\n", a->max_len, clf_ctx_error(NULL), path);
        return 1;
    case CLF_TRAIN_STAGE_ENCODE:
        if (!r->encoded)
            return cli_fail(t->ctx, st, "reading the training data");
        say_train(t, r);
        fprintf(stderr, "clformer train: no usable pairs in %s / %s\n", a->src, a->tgt);
        return 1;
    case CLF_TRAIN_STAGE_ENCODE_VAL:
        return cli_fail(t->ctx, st, "reading the validation data");
    case CLF_TRAIN_STAGE_BATCHES:
        return cli_fail_memory(t->ctx, st, "forming batches", TRAIN_BATCH_FLAGS);
    }
    return cli_fail(t->ctx, st, "setting up");
}

int trainer_setup(struct trainer *t)
{
    struct train_args *a = &t->a;
    if (clf_mkdir_p(a->out)) {
        fprintf(stderr, "clformer train: cannot create --out %s: %s\n", a->out, strerror(errno));
        return 1;
    }
    char device[64], learn[CLF_PATH_MAX];
    if (!(t->ctx = cli_open(dist_device(a->device, device, sizeof device))))
        return 1;
    snprintf(learn, sizeof learn, "%s/bpe.model", a->out);
    struct clf_train_setup s = clf_train_setup_default();
    s.source = a->src, s.target = a->tgt;
    s.val_source = a->val_src, s.val_target = a->val_tgt, s.val_pairs = a->val_pairs;
    s.tokenizer = a->bpe;
    s.learn_path = learn, s.learn_vocab = a->vocab, s.learner = t->writer;
    s.run = a->out, s.resume = a->resume;
    s.preset = a->preset;
    s.max_len = a->max_len;
    s.opts = trainer_opts(t, NULL);
    s.hooks = (struct clf_train_setup_hooks){.user = t, .stage = on_stage, .configure = configure,
                                             .subwords_ready = subwords_ready};
    s.report = &t->setup;
    clf_status st = clf_trainer_open(t->ctx, &s, &t->tr);
    if (st != CLF_OK)
        return setup_failed(t, st);
    t->m = clf_trainer_model(t->tr);
    t->s = clf_trainer_state(t->tr);
    t->cfg = clf_model_config(t->m);
    t->tok = clf_trainer_tokenizer(t->tr);
    t->val = clf_trainer_corpus(t->tr, true);
    t->resume_step = t->setup.resume_step;
    a->max_len = t->setup.max_len;
    if (t->resume_step >= 0)  /* a resumed run's come from its checkpoint */
        a->seed = t->s->seed, a->max_tokens = t->s->max_tokens, a->update_tokens = t->s->update_tokens;
    return 0;
}
