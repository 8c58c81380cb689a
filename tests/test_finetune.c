/* test_finetune.c: `clformer train --init CKPT`. A model of ours trained a
 * few updates, and tests/fixtures/marian/swish_shared imported with
 * `clformer import` (a Marian model: pad 1045 = decoder start, eos 0, its
 * own tokenizer), are fine-tuned on other data. The first logged loss must
 * be the loss the checkpoint itself gives on the first batch, computed
 * here through the library with the model's own pad / eos / decoder-start
 * ids (not a fresh model's, not ours 0-2 for Marian's), the warm-up and
 * Adam must start again, the validation loss must fall, and the run's
 * directory must hold the tokenizer and say where the weights came from. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"
#define MARIAN CLF_SOURCE_DIR "/tests/fixtures/marian/swish_shared"
#define DATA CLF_SOURCE_DIR "/data/multi30k"

static char dir[256], err[300];

static void run_ok(const char *cmd)
{
    cr_assert_eq(tu_run(cmd, err), 0, "'%s' failed:\n%s", cmd, tu_slurp(err));
}

/* Expects `cmd` to fail with a message containing `want`. */
static void refuses(const char *cmd, const char *want)
{
    int rc = tu_run(cmd, err);
    char *msg = tu_slurp(err);
    cr_assert_neq(rc, 0, "'%s' succeeded", cmd);
    cr_assert(strstr(msg, want), "'%s': message '%s' lacks '%s'", cmd, msg, want);
    free(msg);
}

/* A number after `"key":` in the first line of log.jsonl holding `has`. */
static double logged(const char *log, const char *has, const char *key)
{
    char *s = tu_slurp(log), want[64];
    const char *line = strstr(s, has);
    cr_assert(line, "%s has no line with %s:\n%s", log, has, s);
    snprintf(want, sizeof want, "\"%s\":", key);
    const char *v = strstr(line, want);
    cr_assert(v && v < strchr(line, '\n'), "%s: no %s in the line with %s", log, key, has);
    double x = atof(v + strlen(want));
    free(s);
    return x;
}

/* The loss per target token that checkpoint ckpt gives, without dropout,
 * on the first batch `clformer train --seed seed --max-tokens max_tokens`
 * forms of src/tgt encoded with tok, its rows built with ids (NULL: the
 * model's own pad, eos and decoder start). */
static double first_batch_loss(const char *ckpt, const clf_tok_t *tok, const char *src, const char *tgt,
                               uint64_t seed, size_t max_tokens, const struct clf_batch_ids *ids)
{
    clf_ctx_t *ctx = tu_ctx();
    clf_model_t *m;
    cr_assert_eq(clf_model_load(ctx, &m, ckpt), CLF_OK, "%s", clf_ctx_error(ctx));
    const struct clf_model_config *c = clf_model_config(m);
    const struct clf_batch_ids own = {c->pad_id, c->eos_id, c->decoder_start_id};
    struct clf_corpus *corpus;
    struct clf_batches b;
    cr_assert_eq(clf_corpus_load(&corpus, src, tgt), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_corpus_encode_tok(corpus, tok, 100, NULL), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_batches_make(corpus, max_tokens, seed, 0, &b), CLF_OK);
    const struct clf_batch *x = &b.batch[0];
    size_t ns = x->n * (size_t)x->src_len, nt = x->n * (size_t)x->tgt_len;
    int32_t *v = malloc((ns + 2 * nt) * sizeof *v);
    cr_assert_eq(clf_batch_fill_ids(corpus, x, ids ? ids : &own, v, v + ns, v + ns + nt), CLF_OK);
    struct clf_model_batch mb = {x->n, (size_t)x->src_len, (size_t)x->tgt_len, v, v + ns, v + ns + nt};
    struct clf_model_shape shape = {0, 0, 0};
    clf_model_shape_add(&shape, x->n, (size_t)x->src_len, (size_t)x->tgt_len);
    double sum, tokens;
    cr_assert_eq(clf_model_reserve(m, &shape), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_forward(m, &mb), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_loss_take(m, &sum, &tokens), CLF_OK, "%s", clf_ctx_error(ctx));
    free(v);
    clf_batches_free(&b);
    clf_corpus_free(corpus);
    clf_model_free(m);
    clf_ctx_free(ctx);
    return sum / tokens;
}

/* The first update: its loss is the checkpoint's on that batch (to the 6
 * decimals of log.jsonl), and its learning rate the schedule's at update 1
 * (the warm-up starts again; the checkpoint's own step is further on). */
static void check_first_update(const char *run, double want_loss, int d_model, int warmup, double lr_scale)
{
    char log[400];
    snprintf(log, sizeof log, "%s/log.jsonl", run);
    double loss = logged(log, "{\"step\":1,\"epoch\"", "loss"), lr = logged(log, "{\"step\":1,\"epoch\"", "lr");
    cr_expect_lt(fabs(loss - want_loss), 2e-5 + 1e-5 * want_loss, "first logged loss %.6f, the checkpoint gives %.6f",
                 loss, want_loss);
    double want_lr = lr_scale * clf_lr_schedule((size_t)d_model, 1, (size_t)warmup);
    cr_expect_lt(fabs(lr - want_lr), 1e-5 * want_lr, "first lr %g, the warm-up's first %g", lr, want_lr);
}

/* The validation loss after the last update is below the one before the
 * first (the log's record of update 0). */
static void check_val_falls(const char *run, long steps)
{
    char log[400], last[64];
    snprintf(log, sizeof log, "%s/log.jsonl", run);
    snprintf(last, sizeof last, "{\"step\":%ld,\"val_loss\"", steps);
    double before = logged(log, "{\"step\":0,\"val_loss\"", "val_loss"), after = logged(log, last, "val_loss");
    cr_expect_lt(after, before - 0.01, "validation loss %.4f before fine-tuning, %.4f after %ld updates", before,
                 after, steps);
}

static void meta_is(const char *ckpt, const char *key, const char *want)
{
    char v[4200];
    cr_assert_eq(clf_checkpoint_meta(ckpt, key, v, sizeof v), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_str_eq(v, want, "%s: metadata %s", ckpt, key);
}

/* ---------------------------------------------------------------- ours */

static void setup_ours(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(err, sizeof err, "%s/err.txt", dir);
    tu_write_copy_corpus(dir, "a", 300, 1);
    tu_write_copy_corpus(dir, "b", 200, 2);
    tu_write_copy_corpus(dir, "v", 60, 3);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s train --src %s/a.src --tgt %s/a.tgt --val-src '' --val-tgt '' --preset tiny "
             "--vocab 300 --max-tokens 256 --warmup 10 --dropout 0 --seed 3 --steps 10 --out %s/base --quiet",
             CLI, dir, dir, dir);
    run_ok(cmd);
}

#define INIT_OURS "%s train --init %s/base/ckpt-10.safetensors --src %s/b.src --tgt %s/b.tgt --val-src %s/v.src " \
                  "--val-tgt %s/v.tgt --max-tokens 256 --warmup 10 --lr-scale 0.3 --seed 5 --val-every 0 --quiet"

Test(finetune, ours_starts_from_the_checkpoint_and_improves, .init = setup_ours, .timeout = TU_TIMEOUT(300))
{
    char cmd[8192], p[400], s[400], t[400], run[300];
    snprintf(run, sizeof run, "%s/ft", dir);
    snprintf(cmd, sizeof cmd, INIT_OURS " --steps 30 --out %s", CLI, dir, dir, dir, dir, dir, run);
    run_ok(cmd);

    clf_tok_t *tok;
    snprintf(p, sizeof p, "%s/bpe.model", run);  /* copied from base/ */
    cr_assert_eq(clf_tok_spm_load(&tok, p), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(p, sizeof p, "%s/base/ckpt-10.safetensors", dir);
    snprintf(s, sizeof s, "%s/b.src", dir);
    snprintf(t, sizeof t, "%s/b.tgt", dir);
    double want = first_batch_loss(p, tok, s, t, 5, 256, NULL);
    check_first_update(run, want, 32, 10, 0.3);
    check_val_falls(run, 30);

    /* the checkpoint says where it came from and which vocabulary it has */
    char ckpt[400], hash[32];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-30.safetensors", run);
    meta_is(ckpt, "init", p);
    meta_is(ckpt, "step", "30");  /* Adam's steps: afresh, not the checkpoint's 10 + 30 */
    meta_is(ckpt, "bpe", "bpe.model");
    snprintf(hash, sizeof hash, "%016" PRIx64, clf_tok_hash(tok));
    meta_is(ckpt, "tokenizer_hash", hash);
    clf_tok_free(tok);

    /* a fine-tuning run resumes as any other */
    snprintf(cmd, sizeof cmd, "%s train --src %s/b.src --tgt %s/b.tgt --val-src '' --val-tgt '' --max-tokens 256 "
             "--warmup 10 --steps 35 --out %s --resume --quiet", CLI, dir, dir, run);
    run_ok(cmd);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-35.safetensors", run);
    meta_is(ckpt, "init", p);
}

Test(finetune, refuses_what_contradicts_the_checkpoint, .init = setup_ours, .timeout = TU_TIMEOUT(300))
{
    char cmd[8192];
    const char *flags[][2] = {{"--preset tiny", "--preset"}, {"--d-model 64", "--d-model"},
                              {"--layers 3", "--layers"}, {"--vocab 200", "--vocab"},
                              {"--resume", "--resume"}, {"--max-len 400", "--max-len"}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        snprintf(cmd, sizeof cmd, INIT_OURS " --steps 1 --out %s/x %s", CLI, dir, dir, dir, dir, dir, dir,
                 flags[i][0]);
        refuses(cmd, flags[i][1]);
    }
    /* a subword model the checkpoint was not trained with */
    snprintf(cmd, sizeof cmd, "%s bpe learn --vocab 280 -o %s/other.model %s/b.src >/dev/null && " INIT_OURS
             " --steps 1 --out %s/x --bpe %s/other.model", CLI, dir, dir, CLI, dir, dir, dir, dir, dir, dir, dir);
    refuses(cmd, "other.model");
    /* a checkpoint that is not there */
    snprintf(cmd, sizeof cmd, "%s train --init %s/base/ckpt-19.safetensors --src %s/b.src --tgt %s/b.tgt --steps 1 "
             "--out %s/x --quiet", CLI, dir, dir, dir, dir);
    refuses(cmd, "ckpt-19.safetensors");
}

/* -------------------------------------------------------------- Marian */

/* swish_shared imported (`clformer import`: a small random MarianMTModel
 * with its tokenizer, learned on Multi30k EN-DE), a few hundred Multi30k
 * pairs and a hundred validation pairs. */
static void setup_marian(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(err, sizeof err, "%s/err.txt", dir);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && zcat %s/train.en.gz | sed -n 1001,1300p > t.en && zcat %s/train.de.gz | "
             "sed -n 1001,1300p > t.de && zcat %s/val.en.gz | head -n 100 > v.en && zcat %s/val.de.gz | "
             "head -n 100 > v.de && %s import %s -o imp", dir, DATA, DATA, DATA, DATA, CLI, MARIAN);
    run_ok(cmd);
}

#define INIT_MARIAN "%s train --init %s/imp/model.safetensors --src %s/t.en --tgt %s/t.de --val-src %s/v.en " \
                    "--val-tgt %s/v.de --max-tokens 600 --warmup 10 --dropout 0 --seed 5 --val-every 0 --quiet"

Test(finetune, marian_uses_its_tokenizer_and_ids_and_improves, .init = setup_marian, .timeout = TU_TIMEOUT(300))
{
    char cmd[8192], p[400], s[400], t[400], run[300], gen[4200];
    snprintf(run, sizeof run, "%s/ft", dir);
    snprintf(cmd, sizeof cmd, INIT_MARIAN " --steps 30 --out %s", CLI, dir, dir, dir, dir, dir, run);
    run_ok(cmd);

    /* the run's directory holds the tokenizer, and its checkpoints say so */
    clf_tok_t *tok;
    cr_assert_eq(clf_tok_marian_load(&tok, run), CLF_OK, "%s", clf_ctx_error(NULL));
    char ckpt[400];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-30.safetensors", run);
    snprintf(p, sizeof p, "%s/imp/model.safetensors", dir);
    meta_is(ckpt, "tokenizer", "marian");
    meta_is(ckpt, "init", p);
    /* and the imported model's generation defaults, which translate reads */
    cr_assert_eq(clf_checkpoint_meta(p, "generation", gen, sizeof gen), CLF_OK, "%s", clf_ctx_error(NULL));
    meta_is(ckpt, "generation", gen);
    cr_expect_eq(clf_tok_specials(tok).pad, 1045, "swish_shared's pad is its last id");

    /* the first loss is the model's on batches of its own ids; ours (pad
     * 0, eos 2, start 1) give another, so the comparison can tell */
    snprintf(s, sizeof s, "%s/t.en", dir);
    snprintf(t, sizeof t, "%s/t.de", dir);
    double want = first_batch_loss(p, tok, s, t, 5, 600, NULL);
    const struct clf_batch_ids ours = {CLF_PAD_ID, CLF_EOS_ID, CLF_BOS_ID};
    double other = first_batch_loss(p, tok, s, t, 5, 600, &ours);
    cr_assert_gt(fabs(want - other), 1e-3, "our ids give the same loss (%.6f): the test proves nothing", want);
    check_first_update(run, want, 32, 10, 1);
    check_val_falls(run, 30);
    clf_tok_free(tok);

    /* resumes with the tokenizer in its own directory, and translates */
    snprintf(cmd, sizeof cmd, "%s train --src %s/t.en --tgt %s/t.de --val-src '' --val-tgt '' --steps 33 --out %s "
             "--resume --quiet", CLI, dir, dir, run);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "head -n 3 %s/v.en | %s translate --model %s/ckpt-33.safetensors", dir, CLI, run);
    run_ok(cmd);
}

Test(finetune, marian_refuses_another_tokenizer, .init = setup_marian, .timeout = TU_TIMEOUT(300))
{
    char cmd[8192];
    /* relu_separate's: its ids fit the model's vocabulary, its pad (520) is another */
    snprintf(cmd, sizeof cmd, INIT_MARIAN " --steps 1 --out %s/x --bpe %s/../relu_separate", CLI, dir, dir, dir, dir,
             dir, dir, MARIAN);
    refuses(cmd, "pad 520");
    /* translate makes the same check (clf_ckpt_tok_check) */
    snprintf(cmd, sizeof cmd, "echo hello | %s translate --model %s/imp/model.safetensors --bpe %s/../relu_separate",
             CLI, dir, MARIAN);
    refuses(cmd, "pad 520");
    /* its positions end at 128 */
    snprintf(cmd, sizeof cmd, INIT_MARIAN " --steps 1 --out %s/x --max-len 200", CLI, dir, dir, dir, dir, dir, dir);
    refuses(cmd, "--max-len 200");
    /* a directory without Marian's files */
    snprintf(cmd, sizeof cmd, INIT_MARIAN " --steps 1 --out %s/x --bpe %s", CLI, dir, dir, dir, dir, dir, dir, dir);
    refuses(cmd, "source.spm");
}
