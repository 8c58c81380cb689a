/* setup.c: clf_trainer_open, the set-up of a training run that
 * `clformer train` and Python's Trainer share (clformer/train.h says what
 * it does, in order). Each stage tells the caller's hook as it begins,
 * so that a command's progress messages and its words for a failure
 * (which flag, which file) stay the command's; the library prints
 * nothing. Every message ends on the context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/status.h"
#include "clformer.h"
#include "clformer_train.h"
#include "clformer_translate.h"
#include "train/kept.h"

/* A new model's positions are made for sentences of this many subwords
 * when max_len is not given (clf_model_max_len_fit's cap, too). */
#define NEW_MODEL_MAX_LEN 100
/* Pieces of a learned SentencePiece model when learn_vocab is 0. */
#define LEARN_VOCAB 8000

struct clf_train_setup clf_train_setup_default(void)
{
    return (struct clf_train_setup){.learner = true, .max_len = -1, .opts = clf_train_opts_default()};
}

/* The set-up under way: the caller's setup, its report (the caller's or
 * ours), what it made so far. */
struct opening {
    clf_ctx_t *ctx;
    const struct clf_train_setup *s;
    struct clf_train_setup_report *r;
    struct clf_trainer_kept *k;
    struct clf_ckpt_meta source;     /* the checkpoint the run starts from */
    char ckpt[4096];                 /* its path ("" none) */
};

/* A failure of a call without a context (text, checkpoint metadata) with
 * its message moved onto ctx, where the caller reads every message. */
static clf_status on_ctx(clf_ctx_t *ctx, clf_status st)
{
    return st == CLF_OK ? st : clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
}

static clf_status begin(struct opening *o, enum clf_train_stage stage)
{
    o->r->stage = stage;
    const struct clf_train_setup_hooks *h = &o->s->hooks;
    return h->stage ? h->stage(h->user, o->r) : CLF_OK;
}

/* The newest checkpoint of run when resuming, and the metadata of the
 * checkpoint the run starts from. */
static clf_status source(struct opening *o)
{
    const struct clf_train_setup *s = o->s;
    char optim[sizeof o->ckpt];
    clf_status st;
    o->r->resume_step = -1;
    if (s->resume && s->run && !s->opts.init) {
        long *steps;
        int n = clf_trainer_checkpoints(s->run, &steps);
        if (n > 0)
            o->r->resume_step = steps[n - 1];
        free(steps);
    }
    if (s->opts.init)
        snprintf(o->ckpt, sizeof o->ckpt, "%s", s->opts.init);
    else if (o->r->resume_step >= 0)
        clf_trainer_ckpt_paths(s->run, o->r->resume_step, o->ckpt, optim, sizeof o->ckpt);
    if (!o->ckpt[0])
        return CLF_OK;
    CLF_TRY(begin(o, CLF_TRAIN_STAGE_SOURCE));
    return on_ctx(o->ctx, clf_ckpt_meta_read(o->ckpt, &o->source));
fail:
    return st;
}

/* The pairs are read (line counts, UTF-8) before anything is learned from
 * them, so that a bad corpus is named before minutes of BPE learning. */
static clf_status read_pairs(struct opening *o)
{
    const struct clf_train_setup *s = o->s;
    clf_status st;
    CLF_TRY(begin(o, CLF_TRAIN_STAGE_READ));
    CLF_TRY(on_ctx(o->ctx, clf_corpus_load(&o->k->train, s->source, s->target)));
    if (s->val_source && s->val_target && *s->val_source) {
        CLF_TRY(begin(o, CLF_TRAIN_STAGE_READ_VAL));
        CLF_TRY(on_ctx(o->ctx, clf_corpus_load(&o->k->val, s->val_source, s->val_target)));
    }
fail:
    return st;
}

/* The checkpoint's tokenizer (opts.init's, or a resumed run's made with
 * Marian's), or ours: given, kept from an earlier run in learn_path, or
 * learned there by the learner while the others wait. */
static clf_status subwords(struct opening *o)
{
    const struct clf_train_setup *s = o->s;
    struct clf_train_setup_report *r = o->r;
    clf_status st;
    if (s->opts.init || (r->resume_step >= 0 && o->source.tokenizer == CLF_TOK_KIND_MARIAN)) {
        CLF_TRY(begin(o, CLF_TRAIN_STAGE_CKPT_TOKENIZER));
        return on_ctx(o->ctx, clf_ckpt_tok_open(o->ckpt, &o->source, s->tokenizer, &o->k->tok, r->tokenizer_path,
                                                sizeof r->tokenizer_path));
    }
    const char *path = s->tokenizer ? s->tokenizer : s->learn_path;
    if (!path)
        return clf_error_set(o->ctx, CLF_ERR_ARG, "clf_trainer_open: no tokenizer: a SentencePiece model file, or "
                                                  "learn_path to learn one into");
    snprintf(r->tokenizer_path, sizeof r->tokenizer_path, "%s", path);
    if (!s->tokenizer && s->learner && (access(path, R_OK) != 0 || r->resume_step < 0)) {
        CLF_TRY(begin(o, CLF_TRAIN_STAGE_LEARN));
        struct clf_spm_learn_opts lo;
        clf_spm_learn_defaults(&lo);
        lo.vocab_size = s->learn_vocab ? s->learn_vocab : LEARN_VOCAB;
        const double t0 = clf_now();
        const char *files[] = {s->source, s->target};
        CLF_TRY(on_ctx(o->ctx, clf_spm_learn(files, 2, path, &lo)));
        r->learned = true;
        r->learn_seconds = clf_now() - t0;
    }
    if (s->hooks.subwords_ready)
        CLF_TRY(s->hooks.subwords_ready(s->hooks.user));
    CLF_TRY(begin(o, CLF_TRAIN_STAGE_TOKENIZER));
    st = on_ctx(o->ctx, clf_tok_spm_load(&o->k->tok, path));
fail:
    return st;
}

/* A new model: the preset (or opts.config) with the tokenizer's
 * vocabulary, the caller's changes, opts' regularization, positions for
 * max_len. */
static clf_status new_model(struct opening *o, clf_trainer_t **t)
{
    const struct clf_train_setup *s = o->s;
    struct clf_model_config c;
    clf_status st;
    CLF_TRY(begin(o, CLF_TRAIN_STAGE_CONFIG));
    if (s->opts.config)
        c = *s->opts.config;
    else
        CLF_TRY(on_ctx(o->ctx, clf_model_config_preset(&c, s->preset ? s->preset : "small")));
    c.vocab = clf_tok_vocab_size(o->k->tok, CLF_TOK_SOURCE);
    if (s->hooks.configure)
        CLF_TRY(s->hooks.configure(s->hooks.user, &c));
    if (s->opts.dropout >= 0)
        c.dropout = s->opts.dropout;
    if (s->opts.label_smoothing >= 0)
        c.label_smoothing = s->opts.label_smoothing;
    if (c.max_len < o->r->max_len + 2)  /* a sentence, its EOS, one to spare */
        c.max_len = o->r->max_len + 2;
    CLF_TRY(begin(o, CLF_TRAIN_STAGE_MODEL));
    struct clf_train_opts to = s->opts;
    to.config = &c;
    to.init = NULL;
    st = clf_trainer_init(t, o->ctx, &to);
fail:
    return st;
}

/* The model: new, opts.init's with a fresh optimizer, or the resumed one;
 * a checkpoint's checked against the tokenizer, max_len within its
 * positions. The trainer takes what the set-up keeps as soon as it exists. */
static clf_status model(struct opening *o, clf_trainer_t **t)
{
    const struct clf_train_setup *s = o->s;
    struct clf_train_setup_report *r = o->r;
    clf_status st;
    if (!o->ckpt[0]) {
        if (r->max_len < 0)
            r->max_len = NEW_MODEL_MAX_LEN;
        CLF_TRY(new_model(o, t));
    } else {
        CLF_TRY(begin(o, CLF_TRAIN_STAGE_MODEL));
        struct clf_train_opts to = s->opts;
        to.config = NULL;
        CLF_TRY(s->opts.init ? clf_trainer_init(t, o->ctx, &to)
                             : clf_trainer_resume(t, o->ctx, s->run, r->resume_step, &to));
    }
    clf_trainer_keep(*t, o->k);
    r->trainer = *t;
    if (!o->ckpt[0])
        return CLF_OK;
    const struct clf_model_config *cfg = clf_model_config(clf_trainer_model(*t));
    CLF_TRY(begin(o, CLF_TRAIN_STAGE_CHECK));  /* size, recorded hash, pad and eos */
    CLF_TRY(on_ctx(o->ctx, clf_ckpt_tok_check(o->ckpt, &o->source, o->k->tok, cfg, r->tokenizer_path)));
    CLF_TRY(begin(o, CLF_TRAIN_STAGE_MAX_LEN));
    const int asked = r->max_len;
    /* the bare message stays in clf_ctx_error(NULL) for a caller that
     * names its own flag */
    if ((st = clf_model_max_len_fit(cfg, &r->max_len)) != CLF_OK)
        return clf_error_set(o->ctx, st, "max_len %d: %s (%s)", asked, clf_ctx_error(NULL), o->ckpt);
fail:
    return st;
}

/* The pairs encoded for the model (its tokenizer, max_len); the first
 * val_pairs kept validation pairs, the same ones at every validation (the
 * encoding's arrays hold them in file order). */
static clf_status encode(struct opening *o)
{
    const struct clf_train_setup *s = o->s;
    struct clf_train_setup_report *r = o->r;
    clf_status st;
    CLF_TRY(begin(o, CLF_TRAIN_STAGE_ENCODE));
    CLF_TRY(on_ctx(o->ctx, clf_corpus_encode_tok(o->k->train, o->k->tok, r->max_len, &r->train)));
    r->encoded = true;
    if (r->train.kept == 0)
        return clf_error_set(o->ctx, CLF_ERR_ARG,
                             "no usable pairs in %s / %s: all %zu are empty on a side or longer than max_len %d "
                             "subwords", s->source, s->target, r->train.lines, r->max_len);
    if (o->k->val) {
        CLF_TRY(begin(o, CLF_TRAIN_STAGE_ENCODE_VAL));
        CLF_TRY(on_ctx(o->ctx, clf_corpus_encode_tok(o->k->val, o->k->tok, r->max_len, &r->val)));
        if (s->val_pairs > 0 && o->k->val->n_pairs > (size_t)s->val_pairs)
            o->k->val->n_pairs = (size_t)s->val_pairs;
    }
fail:
    return st;
}

clf_status clf_trainer_open(clf_ctx_t *ctx, const struct clf_train_setup *s, clf_trainer_t **out)
{
    struct clf_train_setup_report mine;
    struct opening o = {.ctx = ctx, .s = s, .r = s->report ? s->report : &mine};
    clf_trainer_t *t = NULL;
    clf_status st;
    *out = NULL;
    *o.r = (struct clf_train_setup_report){.stage = CLF_TRAIN_STAGE_SOURCE, .resume_step = -1,
                                           .max_len = s->max_len};
    if (!s->source || !s->target)
        return clf_error_set(ctx, CLF_ERR_ARG, "clf_trainer_open: no training pairs (source, target)");
    if (!(o.k = calloc(1, sizeof *o.k)))
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for a trainer's set-up");
    CLF_TRY(source(&o));
    CLF_TRY(read_pairs(&o));
    CLF_TRY(subwords(&o));
    CLF_TRY(model(&o, &t));
    CLF_TRY(encode(&o));
    CLF_TRY(begin(&o, CLF_TRAIN_STAGE_BATCHES));
    CLF_TRY(clf_trainer_data(t, o.k->train));
    o.k->report = *o.r;  /* its trainer: t */
    *out = t;
    return CLF_OK;
fail:
    o.r->trainer = NULL;
    if (t)
        clf_trainer_free(t);  /* and what it keeps */
    else
        clf_trainer_kept_free(o.k);
    return st;
}

const clf_tok_t *clf_trainer_tokenizer(const clf_trainer_t *t)
{
    const struct clf_trainer_kept *k = clf_trainer_kept(t);
    return k ? k->tok : NULL;
}

const struct clf_corpus *clf_trainer_corpus(const clf_trainer_t *t, bool validation)
{
    const struct clf_trainer_kept *k = clf_trainer_kept(t);
    return !k ? NULL : validation ? k->val : k->train;
}

const struct clf_train_setup_report *clf_trainer_report(const clf_trainer_t *t)
{
    const struct clf_trainer_kept *k = clf_trainer_kept(t);
    return k ? &k->report : NULL;
}
