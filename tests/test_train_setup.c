/* test_train_setup.c: clf_trainer_open (clformer/train.h), the set-up of
 * a run that `clformer train` and Python's Trainer share, on the bundled
 * Multi30k test set: a new model with subwords learned on the pairs, its
 * stages in order; the run resumed from its checkpoint; the checkpoint
 * fine-tuned with its own tokenizer; a missing file and pairs of unequal
 * length refused, naming the file, at the stage that failed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clformer.h"
#include "clformer_train.h"
#include "testutil.h"

#define DATA CLF_SOURCE_DIR "/data/multi30k/test_2016_flickr"

/* The stages as the hook saw them, and the subwords_ready calls. */
struct seen {
    enum clf_train_stage stage[32];
    int n, ready;
    const clf_trainer_t *trainer_at_encode;
};

static clf_status on_stage(void *user, const struct clf_train_setup_report *r)
{
    struct seen *s = user;
    cr_assert_lt(s->n, 32);
    s->stage[s->n++] = r->stage;
    if (r->stage == CLF_TRAIN_STAGE_ENCODE)
        s->trainer_at_encode = r->trainer;
    return CLF_OK;
}

static clf_status on_ready(void *user)
{
    ((struct seen *)user)->ready++;
    return CLF_OK;
}

static struct clf_train_setup setup(const char *dir, struct seen *seen, struct clf_train_setup_report *r)
{
    static char learn[512];
    snprintf(learn, sizeof learn, "%s/bpe.model", dir);
    struct clf_train_setup s = clf_train_setup_default();
    s.source = DATA ".en.gz", s.target = DATA ".de.gz";
    s.val_source = DATA ".en.gz", s.val_target = DATA ".de.gz", s.val_pairs = 20;
    s.learn_path = learn, s.learn_vocab = 600;
    s.run = dir;
    s.preset = "tiny";
    s.opts.max_tokens = 1024, s.opts.warmup = 10, s.opts.seed = 3;
    s.hooks = (struct clf_train_setup_hooks){.user = seen, .stage = on_stage, .subwords_ready = on_ready};
    s.report = r;
    return s;
}

static void stages_are(const struct seen *s, const enum clf_train_stage *want, int n)
{
    cr_assert_eq(s->n, n, "%d stages, want %d", s->n, n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(s->stage[i], want[i], "stage %d: %d, want %d", i, s->stage[i], want[i]);
}

Test(train_setup, new_resumed_and_fine_tuned, .timeout = TU_TIMEOUT(600))
{
    const char *dir = tu_tmpdir();
    clf_ctx_t *ctx = tu_ctx();
    struct seen seen = {0};
    struct clf_train_setup_report r;
    struct clf_train_setup s = setup(dir, &seen, &r);
    clf_trainer_t *t;

    /* a new model: the subwords learned, then read after the wait */
    cr_assert_eq(clf_trainer_open(ctx, &s, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    const enum clf_train_stage fresh[] = {CLF_TRAIN_STAGE_READ, CLF_TRAIN_STAGE_READ_VAL, CLF_TRAIN_STAGE_LEARN,
                                          CLF_TRAIN_STAGE_TOKENIZER, CLF_TRAIN_STAGE_CONFIG, CLF_TRAIN_STAGE_MODEL,
                                          CLF_TRAIN_STAGE_ENCODE, CLF_TRAIN_STAGE_ENCODE_VAL,
                                          CLF_TRAIN_STAGE_BATCHES};
    stages_are(&seen, fresh, sizeof fresh / sizeof fresh[0]);
    cr_assert_eq(seen.ready, 1);
    cr_assert_eq(seen.trainer_at_encode, t);
    cr_assert(r.learned && r.encoded && r.resume_step == -1 && r.max_len == 100);
    cr_assert_eq(r.train.lines, 1000);
    cr_assert(r.train.kept > 900 && r.train.kept <= 1000, "%zu kept", r.train.kept);
    cr_assert_eq(access(s.learn_path, R_OK), 0);
    cr_assert_str_eq(r.tokenizer_path, s.learn_path);
    const clf_tok_t *tok = clf_trainer_tokenizer(t);
    cr_assert(tok);
    const uint64_t tok_hash = clf_tok_hash(tok);
    const struct clf_model_config *cfg = clf_model_config(clf_trainer_model(t));
    cr_assert_eq(cfg->vocab, clf_tok_vocab_size(tok, CLF_TOK_SOURCE));
    cr_assert_geq(cfg->max_len, 102, "positions for 100 subwords, EOS and one to spare");
    cr_assert_eq(clf_trainer_corpus(t, false)->n_pairs, r.train.kept);
    cr_assert_eq(clf_trainer_corpus(t, true)->n_pairs, 20, "val_pairs keeps the first 20");
    cr_assert_eq(clf_trainer_report(t)->train.kept, r.train.kept);
    cr_assert_eq(clf_trainer_report(t)->trainer, t);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(clf_trainer_step(t), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_trainer_save(t, dir, tok, 5), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_trainer_free(t);

    /* resumed: the newest checkpoint, the run's bpe.model kept (not
     * learned again), its seed and batch sizes over the options' */
    seen = (struct seen){0};
    s.resume = true;
    s.opts.seed = 99, s.opts.max_tokens = 2048;
    cr_assert_eq(clf_trainer_open(ctx, &s, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    const enum clf_train_stage resumed[] = {CLF_TRAIN_STAGE_SOURCE, CLF_TRAIN_STAGE_READ, CLF_TRAIN_STAGE_READ_VAL,
                                            CLF_TRAIN_STAGE_TOKENIZER, CLF_TRAIN_STAGE_MODEL, CLF_TRAIN_STAGE_CHECK,
                                            CLF_TRAIN_STAGE_MAX_LEN, CLF_TRAIN_STAGE_ENCODE,
                                            CLF_TRAIN_STAGE_ENCODE_VAL, CLF_TRAIN_STAGE_BATCHES};
    stages_are(&seen, resumed, sizeof resumed / sizeof resumed[0]);
    cr_assert(!r.learned);
    cr_assert_eq(r.resume_step, 2);
    cr_assert_eq(clf_trainer_state(t)->step, 2);
    cr_assert_eq(clf_trainer_state(t)->seed, 3);
    cr_assert_eq(clf_trainer_state(t)->max_tokens, 1024);
    cr_assert_eq(clf_trainer_state(t)->loss, 0, "a resumed trainer has made no update yet");
    cr_assert_eq(clf_trainer_step(t), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_trainer_state(t)->step, 3);
    clf_trainer_free(t);

    /* fine-tuned: the checkpoint's model and tokenizer (beside it), Adam
     * afresh from update 0; max_len fitted to its positions */
    char ckpt[600], optim[600];
    clf_trainer_ckpt_paths(dir, 2, ckpt, optim, sizeof ckpt);
    seen = (struct seen){0};
    s.resume = false;
    s.learn_path = NULL;
    s.preset = "no such preset";  /* unused with init */
    s.opts.init = ckpt;
    cr_assert_eq(clf_trainer_open(ctx, &s, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    const enum clf_train_stage init[] = {CLF_TRAIN_STAGE_SOURCE, CLF_TRAIN_STAGE_READ, CLF_TRAIN_STAGE_READ_VAL,
                                         CLF_TRAIN_STAGE_CKPT_TOKENIZER, CLF_TRAIN_STAGE_MODEL, CLF_TRAIN_STAGE_CHECK,
                                         CLF_TRAIN_STAGE_MAX_LEN, CLF_TRAIN_STAGE_ENCODE, CLF_TRAIN_STAGE_ENCODE_VAL,
                                         CLF_TRAIN_STAGE_BATCHES};
    stages_are(&seen, init, sizeof init / sizeof init[0]);
    cr_assert_eq(seen.ready, 0, "a checkpoint's tokenizer needs no wait");
    cr_assert_eq(r.resume_step, -1);
    cr_assert_eq(clf_trainer_state(t)->step, 0);
    cr_assert_eq(clf_trainer_source(t)->tokenizer, CLF_TOK_KIND_SPM);
    cr_assert(strstr(r.tokenizer_path, "bpe.model"), "%s", r.tokenizer_path);
    cr_assert_eq(r.max_len, 100);
    cr_assert_eq(clf_tok_hash(clf_trainer_tokenizer(t)), tok_hash, "the run's tokenizer");
    clf_trainer_free(t);

    /* init's model refuses a max_len past its positions, naming both */
    seen = (struct seen){0};
    s.max_len = 100000;
    cr_assert_eq(clf_trainer_open(ctx, &s, &t), CLF_ERR_ARG);
    cr_assert_null(t);
    cr_assert_eq(r.stage, CLF_TRAIN_STAGE_MAX_LEN);
    cr_assert(strstr(clf_ctx_error(ctx), "max_len 100000") && strstr(clf_ctx_error(ctx), ckpt), "%s",
              clf_ctx_error(ctx));
    clf_ctx_free(ctx);
}

Test(train_setup, a_missing_file_is_named, .timeout = TU_TIMEOUT(120))
{
    const char *dir = tu_tmpdir();
    clf_ctx_t *ctx = tu_ctx();
    struct seen seen = {0};
    struct clf_train_setup_report r;
    struct clf_train_setup s = setup(dir, &seen, &r);
    char missing[512];
    snprintf(missing, sizeof missing, "%s/nothing.de", dir);
    s.target = missing;
    clf_trainer_t *t = (clf_trainer_t *)&seen;  /* anything: a failure sets it to NULL */
    cr_assert_eq(clf_trainer_open(ctx, &s, &t), CLF_ERR_IO);
    cr_assert_null(t);
    cr_assert_eq(r.stage, CLF_TRAIN_STAGE_READ);
    cr_assert(strstr(clf_ctx_error(ctx), missing), "%s", clf_ctx_error(ctx));
    cr_assert_eq(access(s.learn_path, F_OK), -1, "nothing learned from pairs that cannot be read");

    /* a process that does not learn reads the learner's file after the
     * wait: without one, the file it looked for is named */
    s.target = DATA ".de.gz";
    s.learner = false;
    seen = (struct seen){0};
    cr_assert_neq(clf_trainer_open(ctx, &s, &t), CLF_OK);
    cr_assert_eq(seen.ready, 1);
    cr_assert_eq(r.stage, CLF_TRAIN_STAGE_TOKENIZER);
    cr_assert(strstr(clf_ctx_error(ctx), s.learn_path), "%s", clf_ctx_error(ctx));

    /* a checkpoint to fine-tune that is not there */
    s.learner = true;
    s.opts.init = missing;
    cr_assert_neq(clf_trainer_open(ctx, &s, &t), CLF_OK);
    cr_assert_eq(r.stage, CLF_TRAIN_STAGE_SOURCE);
    cr_assert(strstr(clf_ctx_error(ctx), missing), "%s", clf_ctx_error(ctx));
    clf_ctx_free(ctx);
}

Test(train_setup, pairs_of_unequal_length_are_refused, .timeout = TU_TIMEOUT(120))
{
    const char *dir = tu_tmpdir();
    clf_ctx_t *ctx = tu_ctx();
    struct seen seen = {0};
    struct clf_train_setup_report r;
    struct clf_train_setup s = setup(dir, &seen, &r);
    char shorter[512];
    snprintf(shorter, sizeof shorter, "%s/short.de", dir);
    const char *three = "Ein Hund.\nZwei Hunde.\nDrei Hunde.\n";
    tu_write_bytes(shorter, (const unsigned char *)three, strlen(three));
    s.val_target = shorter;
    clf_trainer_t *t;
    cr_assert_eq(clf_trainer_open(ctx, &s, &t), CLF_ERR_FORMAT);
    cr_assert_null(t);
    cr_assert_eq(r.stage, CLF_TRAIN_STAGE_READ_VAL);
    cr_assert(strstr(clf_ctx_error(ctx), "line counts differ") && strstr(clf_ctx_error(ctx), shorter), "%s",
              clf_ctx_error(ctx));
    /* no pairs kept: every one longer than max_len */
    s.val_target = DATA ".de.gz";
    s.max_len = 2;
    s.learn_vocab = 600;
    cr_assert_eq(clf_trainer_open(ctx, &s, &t), CLF_ERR_ARG);
    cr_assert_eq(r.stage, CLF_TRAIN_STAGE_ENCODE);
    cr_assert(r.encoded && r.train.kept == 0 && r.train.lines == 1000);
    cr_assert(strstr(clf_ctx_error(ctx), "no usable pairs"), "%s", clf_ctx_error(ctx));
    clf_ctx_free(ctx);
}
