/* test_checkpoint_meta.c: a checkpoint's metadata (struct clf_ckpt_meta)
 * through every writer. Every field survives clf_model_save and
 * clf_ckpt_meta_read with the keys and values earlier versions wrote (an
 * older checkpoint reads as before); a derived checkpoint carries the
 * tokenizer and where the weights came from, not the step or the training
 * position; bad values are refused naming the key; the tokenizer a
 * checkpoint names opens in one call. And through the command:
 * `clformer average` of a fine-tuned imported Marian model keeps what the
 * fine-tune carried (tokenizer marian, generation, init, imported_from)
 * and translates with Marian's tokenizer, as the checkpoints it averaged
 * do; an average of our own model keeps bpe and tokenizer_hash. Both
 * translate when averaged into another directory (the tokenizer's files
 * are copied beside it); another file of a tokenizer file's name there is
 * refused, not overwritten. A training run's own tokenizer is put beside
 * its checkpoint (clf_ckpt_tok_put) with the same checks. */
#define _POSIX_C_SOURCE 200809L /* symlink */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clformer.h"
#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"
#define MARIAN CLF_SOURCE_DIR "/tests/fixtures/marian/swish_shared"
#define DATA CLF_SOURCE_DIR "/data/multi30k"
#define FIXTURES CLF_SOURCE_DIR "/tests/fixtures/model/"

static char dir[256], err[300];

static void run_ok(const char *cmd)
{
    cr_assert_eq(tu_run(cmd, err), 0, "'%s' failed:\n%s", cmd, tu_slurp(err));
}

/* The raw value of key in ckpt's __metadata__, or "" when it has none. */
static const char *raw(const char *ckpt, const char *key)
{
    static char v[4200];
    if (clf_checkpoint_meta(ckpt, key, v, sizeof v) != CLF_OK)
        v[0] = 0;
    return v;
}

/* key has the same value (or absence) in both checkpoints. */
static void same(const char *a, const char *b, const char *key)
{
    char va[4200];
    snprintf(va, sizeof va, "%s", raw(a, key));
    cr_expect_str_eq(raw(b, key), va, "metadata %s: %s has '%s', %s '%s'", key, b, raw(b, key), a, va);
}

/* Translates three lines of src with model; every line comes back. */
static void translates(const char *model, const char *src)
{
    char cmd[2048], out[400];
    snprintf(out, sizeof out, "%s/hyp.txt", dir);
    snprintf(cmd, sizeof cmd, "head -n 3 %s | %s translate --model %s --quiet > %s", src, CLI, model, out);
    run_ok(cmd);
    struct clf_lines lines = {0};
    cr_assert_eq(clf_lines_read(&lines, out), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_eq(lines.n, 3, "%s: %zu lines of translation, want 3", model, lines.n);
    clf_lines_free(&lines);
}

/* --------------------------------------------------------- the struct */

/* Metadata with every field set: an imported Marian model's (generation,
 * imported_from) or ours (bpe), fine-tuned, trained and averaged. */
static struct clf_ckpt_meta full(enum clf_tok_kind kind)
{
    struct clf_ckpt_meta m;
    clf_ckpt_meta_init(&m, NULL);
    m.step = 17;
    m.seed = 18446744073709551557ull;  /* past INT64_MAX */
    m.tokenizer = kind;
    if (kind == CLF_TOK_KIND_SPM)
        snprintf(m.bpe, sizeof m.bpe, "sub words.model");
    m.has_tokenizer_hash = true;
    m.tokenizer_hash = 0x00c0ffee0000beefull;
    snprintf(m.init, sizeof m.init, "/runs/base/ckpt-40.safetensors");
    if (kind == CLF_TOK_KIND_MARIAN) {
        snprintf(m.imported_from, sizeof m.imported_from, "/models/opus-mt-en-de \"quoted\"");
        m.generation = (struct clf_ckpt_generation){.present = true, .num_beams = 4, .max_length = 512,
                                                    .length_penalty = 1.05, .length_penalty_kind =
                                                    CLF_LENGTH_PENALTY_HF, .min_length = 3};
    }
    m.train = (struct clf_ckpt_position){.present = true, .epoch = 6, .batch = 31, .tokens = 123456,
                                         .seconds = 67.25, .max_tokens = 2500, .update_tokens = 5000, .ranks = 2};
    cr_assert_eq(clf_ckpt_meta_average_add(&m, 30), CLF_OK);
    cr_assert_eq(clf_ckpt_meta_average_add(&m, 50), CLF_OK);
    cr_assert_eq(clf_ckpt_meta_average_add(&m, 40), CLF_OK);
    return m;
}

static void expect_same_generation(const struct clf_ckpt_generation *a, const struct clf_ckpt_generation *b)
{
    cr_expect_eq(a->present, b->present);
    cr_expect_eq(a->num_beams, b->num_beams);
    cr_expect_eq(a->max_length, b->max_length);
    cr_expect_eq(a->length_penalty, b->length_penalty);
    cr_expect_eq(a->length_penalty_kind, b->length_penalty_kind);
    cr_expect_eq(a->min_length, b->min_length);
}

static void expect_same(const struct clf_ckpt_meta *a, const struct clf_ckpt_meta *b)
{
    cr_expect_str_eq(a->format, b->format);
    cr_expect_eq(a->step, b->step);
    cr_expect_eq(a->seed, b->seed);
    cr_expect_eq(a->tokenizer, b->tokenizer);
    cr_expect_str_eq(a->bpe, b->bpe);
    cr_expect_eq(a->has_tokenizer_hash, b->has_tokenizer_hash);
    cr_expect_eq(a->tokenizer_hash, b->tokenizer_hash);
    cr_expect_str_eq(a->init, b->init);
    cr_expect_str_eq(a->imported_from, b->imported_from);
    expect_same_generation(&a->generation, &b->generation);
    cr_expect_eq(a->train.present, b->train.present);
    cr_expect_eq(a->train.epoch, b->train.epoch);
    cr_expect_eq(a->train.batch, b->train.batch);
    cr_expect_eq(a->train.tokens, b->train.tokens);
    cr_expect_eq(a->train.seconds, b->train.seconds);
    cr_expect_eq(a->train.max_tokens, b->train.max_tokens);
    cr_expect_eq(a->train.update_tokens, b->train.update_tokens);
    cr_expect_eq(a->train.ranks, b->train.ranks);
    cr_expect_eq(a->averaged, b->averaged);
    for (size_t i = 0; i < a->averaged && i < b->averaged; i++)
        cr_expect_eq(a->averaged_steps[i], b->averaged_steps[i], "averaged step %zu", i);
}

/* The tiny model saved with meta at path. */
static void save(clf_ctx_t *ctx, const char *path, const struct clf_ckpt_meta *meta)
{
    struct clf_model_config c;
    clf_model_t *m;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    cr_assert_eq(clf_model_init(ctx, &m, &c, 7), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_save(m, path, meta), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_model_free(m);
}

/* Every field, through clf_model_save and clf_ckpt_meta_read, and again:
 * the same struct, the keys and values earlier versions wrote, the same
 * bytes; clf_model_load takes the step and seed. */
static void round_trip(enum clf_tok_kind kind)
{
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_ckpt_meta want = full(kind);
    struct clf_ckpt_meta got, again;
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/a.safetensors", tu_tmpdir());
    snprintf(b, sizeof b, "%s/b.safetensors", tu_tmpdir());
    save(ctx, a, &want);
    cr_assert_eq(clf_ckpt_meta_read(a, &got), CLF_OK, "%s", clf_ctx_error(NULL));
    struct clf_ckpt_meta expected = want;
    if (kind == CLF_TOK_KIND_MARIAN)
        expected.bpe[0] = 0;  /* Marian's files are named by the tokenizer itself */
    expect_same(&expected, &got);

    /* on disk as `clformer train`, `average` and `import` always wrote it */
    static const char *const common[][2] = {
        {"format", "clformer-1"}, {"step", "17"}, {"seed", "18446744073709551557"},
        {"tokenizer_hash", "00c0ffee0000beef"}, {"epoch", "6"}, {"batch", "31"}, {"tokens", "123456"},
        {"seconds", "67.250"}, {"max_tokens", "2500"}, {"update_tokens", "5000"}, {"ranks", "2"},
        {"init", "/runs/base/ckpt-40.safetensors"}, {"averaged", "yes"}, {"averaged_steps", "[30,50,40]"}};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        cr_expect_str_eq(raw(a, common[i][0]), common[i][1], "metadata %s", common[i][0]);
    if (kind == CLF_TOK_KIND_MARIAN) {
        cr_expect_str_eq(raw(a, "tokenizer"), "marian");
        cr_expect_str_eq(raw(a, "bpe"), "");
        cr_expect_str_eq(raw(a, "imported_from"), "/models/opus-mt-en-de \"quoted\"");
        cr_expect_str_eq(raw(a, "generation"), "{\"num_beams\":4,\"max_length\":512,\"length_penalty\":1.05,"
                         "\"length_penalty_kind\":\"hf\",\"min_length\":3,\"early_stopping\":false}");
    } else {
        cr_expect_str_eq(raw(a, "tokenizer"), "");
        cr_expect_str_eq(raw(a, "bpe"), "sub words.model");
        cr_expect_str_eq(raw(a, "generation"), "");
        cr_expect_str_eq(raw(a, "imported_from"), "");
    }

    save(ctx, b, &got);
    cr_assert_eq(clf_ckpt_meta_read(b, &again), CLF_OK, "%s", clf_ctx_error(NULL));
    expect_same(&got, &again);
    unsigned char *x, *y;
    size_t nx = tu_file_bytes(a, &x), ny = tu_file_bytes(b, &y);
    cr_expect(nx == ny && !memcmp(x, y, nx), "written, read and written again, the file changed");
    free(x), free(y);

    clf_model_t *m;
    cr_assert_eq(clf_model_load(ctx, &m, a), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_expect_eq(clf_model_adam_steps(m), 17);
    struct clf_ckpt_meta own;
    clf_ckpt_meta_init(&own, m);
    cr_expect_eq(own.seed, want.seed, "the model's seed is the checkpoint's");
    clf_model_free(m);
    clf_ctx_free(ctx);
}

Test(checkpoint_meta, every_field_survives_a_write_and_a_read_marian) { round_trip(CLF_TOK_KIND_MARIAN); }
Test(checkpoint_meta, every_field_survives_a_write_and_a_read_ours) { round_trip(CLF_TOK_KIND_SPM); }

/* A fine-tune, a resumed run or an average takes the tokenizer and where
 * the weights came from; the step, seed, position and averaged steps are
 * its own. */
Test(checkpoint_meta, a_derived_checkpoint_carries_tokenizer_and_lineage)
{
    for (int kind = CLF_TOK_KIND_SPM; kind <= CLF_TOK_KIND_MARIAN; kind++) {
        const struct clf_ckpt_meta from = full((enum clf_tok_kind)kind);
        struct clf_ckpt_meta to;
        clf_ckpt_meta_init(&to, NULL);
        clf_ckpt_meta_carry(&to, &from);
        cr_expect_eq(to.tokenizer, from.tokenizer);
        cr_expect_str_eq(to.bpe, from.bpe);
        cr_expect(to.has_tokenizer_hash && to.tokenizer_hash == from.tokenizer_hash);
        cr_expect_str_eq(to.init, from.init);
        cr_expect_str_eq(to.imported_from, from.imported_from);
        expect_same_generation(&to.generation, &from.generation);
        cr_expect_str_eq(to.format, CLF_CKPT_FORMAT);
        cr_expect_eq(to.step, 0);
        cr_expect_eq(to.seed, 0);
        cr_expect(!to.train.present, "the training position was carried");
        cr_expect_eq(to.averaged, 0, "the averaged steps were carried");
    }
}

/* A checkpoint written before the struct (the PyTorch fixture: format,
 * config, step alone) reads as ours with nothing more. */
Test(checkpoint_meta, an_older_checkpoint_reads_as_before)
{
    struct clf_ckpt_meta m;
    cr_assert_eq(clf_ckpt_meta_read(FIXTURES "tiny_post.safetensors", &m), CLF_OK, "%s", clf_ctx_error(NULL));
    struct clf_ckpt_meta want;
    clf_ckpt_meta_init(&want, NULL);
    expect_same(&want, &m);
    struct clf_translate_opts o = clf_translate_opts_default(), d = clf_translate_opts_default();
    clf_ckpt_meta_translate_opts(&m, &o);
    cr_expect(o.beam == d.beam && o.alpha == d.alpha && o.greedy == d.greedy && o.max_output == d.max_output &&
              o.min_length == d.min_length && o.length_penalty == d.length_penalty, "ours have no decoding defaults");
}

/* An imported model's generation: transformers' counting into ours. */
Test(checkpoint_meta, generation_gives_the_decoding_defaults)
{
    struct clf_ckpt_meta m = full(CLF_TOK_KIND_MARIAN);
    struct clf_translate_opts o = clf_translate_opts_default();
    clf_ckpt_meta_translate_opts(&m, &o);
    cr_expect_eq(o.beam, 4);
    cr_expect(!o.greedy);
    cr_expect_float_eq(o.alpha, 1.05f, 1e-7);
    cr_expect_eq(o.length_penalty, CLF_LENGTH_PENALTY_HF);
    cr_expect_eq(o.max_output, 511, "max_length counts the decoder's start");
    cr_expect_eq(o.min_length, 2, "transformers' min_length counts the start");
    m.generation.num_beams = 1;
    clf_ckpt_meta_translate_opts(&m, &o);
    cr_expect(o.greedy, "num_beams 1 is greedy search");
}

/* A copy of src with the first `from` in it replaced by `to` (as long). */
static void damaged(const char *src, const char *dst, const char *from, const char *to)
{
    unsigned char *b;
    size_t n = tu_file_bytes(src, &b), k = strlen(from);
    cr_assert_eq(strlen(to), k);
    unsigned char *at = NULL;
    for (size_t i = 0; !at && i + k <= n; i++)
        if (!memcmp(b + i, from, k))
            at = b + i;
    cr_assert(at, "%s lacks %s", src, from);
    memcpy(at, to, k);
    tu_write_bytes(dst, b, n);
    free(b);
}

Test(checkpoint_meta, bad_values_are_refused_naming_the_key)
{
    clf_ctx_t *ctx = tu_ctx();
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/a.safetensors", tu_tmpdir());
    snprintf(b, sizeof b, "%s/b.safetensors", tu_tmpdir());
    const struct clf_ckpt_meta meta = full(CLF_TOK_KIND_MARIAN);
    save(ctx, a, &meta);
    static const char *const cases[][3] = {
        {"\"marian\"", "\"marist\"", "marist"},                   /* a tokenizer this build does not know */
        {"\"step\":\"17\"", "\"step\":\"1x\"", "step"},
        {"\"seed\":\"1", "\"seed\":\"-", "seed"},
        {"00c0ffee0000beef", "00c0ffee0000bxef", "tokenizer_hash"},
        {"\"epoch\":\"6\"", "\"epoch\":\"?\"", "epoch"},
        {"\\\"num_beams\\\":4", "\\\"num_beams\\\":0", "num_beams"},  /* within a JSON string */
        {"[30,50,40]", "[30,50,4x]", "averaged_steps"},
        {"\\\"hf\\\"", "\\\"hg\\\"", "length_penalty_kind"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        damaged(a, b, cases[i][0], cases[i][1]);
        struct clf_ckpt_meta m;
        cr_expect_neq(clf_ckpt_meta_read(b, &m), CLF_OK, "%s read", cases[i][1]);
        const char *msg = clf_ctx_error(NULL);
        cr_expect(strstr(msg, cases[i][2]) && strstr(msg, b), "%s: the message names no %s and file: %s",
                  cases[i][1], cases[i][2], msg);
    }
    clf_ctx_free(ctx);
}

/* The tokenizer a checkpoint names, opened in one call: Marian's files
 * from its directory (or --bpe's), ours the model `bpe` names beside it. */
Test(checkpoint_meta, the_tokenizer_a_checkpoint_names_opens)
{
    clf_ctx_t *ctx = tu_ctx();
    char dir[512], ckpt[600], path[700], want[700];
    snprintf(dir, sizeof dir, "%s/run", tu_tmpdir());
    cr_assert_eq(clf_mkdir_p(dir), 0);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-3.safetensors", dir);
    struct clf_ckpt_meta meta = full(CLF_TOK_KIND_MARIAN), m;
    save(ctx, ckpt, &meta);
    cr_assert_eq(clf_ckpt_meta_read(ckpt, &m), CLF_OK, "%s", clf_ctx_error(NULL));
    clf_tok_t *tok = NULL;
    /* Marian's files are not beside it yet: the failure names both */
    cr_expect_neq(clf_ckpt_tok_open(ckpt, &m, NULL, &tok, path, sizeof path), CLF_OK);
    cr_expect(strstr(clf_ctx_error(NULL), ckpt) && strstr(clf_ctx_error(NULL), "source.spm"), "%s",
              clf_ctx_error(NULL));
    cr_expect_str_eq(path, dir);
    cr_assert_eq(clf_marian_copy_tokenizer(MARIAN, dir), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_ckpt_tok_open(ckpt, &m, NULL, &tok, path, sizeof path), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_eq(clf_tok_kind(tok), CLF_TOK_KIND_MARIAN);
    clf_tok_free(tok);
    cr_assert_eq(clf_ckpt_tok_open(ckpt, &m, MARIAN, &tok, path, sizeof path), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_str_eq(path, MARIAN, "--bpe names another directory");
    clf_tok_free(tok);

    /* ours: the SentencePiece model `bpe` names, beside the checkpoint */
    meta = full(CLF_TOK_KIND_SPM);
    save(ctx, ckpt, &meta);
    cr_assert_eq(clf_ckpt_meta_read(ckpt, &m), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(want, sizeof want, "%s/sub words.model", dir);
    cr_expect_neq(clf_ckpt_tok_open(ckpt, &m, NULL, &tok, path, sizeof path), CLF_OK);
    cr_expect_str_eq(path, want);
    cr_expect(strstr(clf_ctx_error(NULL), want), "%s", clf_ctx_error(NULL));
    cr_assert_eq(symlink(MARIAN "/source.spm", want), 0);
    cr_assert_eq(clf_ckpt_tok_open(ckpt, &m, NULL, &tok, path, sizeof path), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_eq(clf_tok_kind(tok), CLF_TOK_KIND_SPM);
    clf_tok_free(tok);
    clf_ctx_free(ctx);
}

/* A tokenizer read from a file or directory of its own (a training run's)
 * put beside a checkpoint: ours as bpe.model, Marian's files as they are;
 * again over the same bytes; another file of that name refused and kept. */
Test(checkpoint_meta, a_tokenizer_is_put_beside_a_checkpoint)
{
    char d[512], ckpt[600], cmd[2048], other[600];
    snprintf(d, sizeof d, "%s/put", tu_tmpdir());
    snprintf(err, sizeof err, "%s/err.txt", tu_tmpdir());
    cr_assert_eq(clf_mkdir_p(d), 0);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-7.safetensors", d);
    for (int twice = 0; twice < 2; twice++)
        cr_assert_eq(clf_ckpt_tok_put(MARIAN "/source.spm", CLF_TOK_KIND_SPM, ckpt), CLF_OK, "%s",
                     clf_ctx_error(NULL));
    snprintf(cmd, sizeof cmd, "cmp %s/source.spm %s/bpe.model", MARIAN, d);
    cr_expect_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    snprintf(other, sizeof other, "%s/other.model", d);
    FILE *f = fopen(other, "w");
    cr_assert(f);
    fputs("another\n", f);
    fclose(f);
    cr_expect_eq(clf_ckpt_tok_put(other, CLF_TOK_KIND_SPM, ckpt), CLF_ERR_ARG);
    cr_expect(strstr(clf_ctx_error(NULL), "bpe.model already exists and differs from") &&
              strstr(clf_ctx_error(NULL), other), "%s", clf_ctx_error(NULL));
    cr_expect_eq(tu_run(cmd, err), 0, "bpe.model was overwritten: %s", tu_slurp(err));
    snprintf(other, sizeof other, "%s/missing.model", d);
    cr_expect_eq(clf_ckpt_tok_put(other, CLF_TOK_KIND_SPM, ckpt), CLF_ERR_IO);
    cr_expect(strstr(clf_ctx_error(NULL), other), "%s", clf_ctx_error(NULL));

    snprintf(d, sizeof d, "%s/put-marian", tu_tmpdir());
    cr_assert_eq(clf_mkdir_p(d), 0);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-7.safetensors", d);
    cr_assert_eq(clf_ckpt_tok_put(MARIAN, CLF_TOK_KIND_MARIAN, ckpt), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(cmd, sizeof cmd, "cmp %s/source.spm %s/source.spm && cmp %s/vocab.json %s/vocab.json && test ! -e "
             "%s/bpe.model", MARIAN, d, MARIAN, d, d);
    cr_expect_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
}

/* ---------------------------------------------------------- Marian */

/* swish_shared imported, fine-tuned 2 updates and resumed to 4: the run's
 * directory holds ckpt-2 and ckpt-4. */
static void setup_marian(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(err, sizeof err, "%s/err.txt", dir);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && zcat %s/train.en.gz | sed -n 1001,1100p > t.en && zcat %s/train.de.gz | "
             "sed -n 1001,1100p > t.de && %s import %s -o imp", dir, DATA, DATA, CLI, MARIAN);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "%s train --init %s/imp/model.safetensors --src %s/t.en --tgt %s/t.de --val-src '' "
             "--val-tgt '' --max-tokens 600 --warmup 10 --dropout 0 --seed 5 --keep 5 --steps 2 --out %s/ft --quiet",
             CLI, dir, dir, dir, dir);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "%s train --src %s/t.en --tgt %s/t.de --val-src '' --val-tgt '' --max-tokens 600 "
             "--warmup 10 --keep 5 --steps 4 --out %s/ft --resume --quiet", CLI, dir, dir, dir);
    run_ok(cmd);
}

Test(checkpoint_meta, average_of_a_finetuned_marian_model_translates, .init = setup_marian,
     .timeout = TU_TIMEOUT(300))
{
    char cmd[4096], avg[400], newest[400], imported[400], src[400];
    snprintf(avg, sizeof avg, "%s/ft/avg.safetensors", dir);  /* beside the tokenizer's files, as the run's are */
    snprintf(newest, sizeof newest, "%s/ft/ckpt-4.safetensors", dir);
    snprintf(imported, sizeof imported, "%s/imp/model.safetensors", dir);
    snprintf(cmd, sizeof cmd, "%s average -o %s --dir %s/ft --last 2", CLI, avg, dir);
    run_ok(cmd);

    cr_expect_str_eq(raw(avg, "tokenizer"), "marian");
    cr_expect_str_eq(raw(avg, "bpe"), "", "an average of a Marian model names a bpe model");
    cr_expect_str_neq(raw(imported, "generation"), "");
    same(imported, avg, "generation");  /* translate's defaults */
    same(newest, avg, "init");
    same(newest, avg, "imported_from");
    same(newest, avg, "tokenizer_hash");
    cr_expect_str_eq(raw(avg, "step"), "4");
    cr_expect_str_eq(raw(avg, "averaged_steps"), "[2,4]");

    /* the average translates with Marian's tokenizer beside it, as the
     * checkpoints it averaged do */
    snprintf(src, sizeof src, "%s/t.en", dir);
    translates(newest, src);
    translates(avg, src);

    /* into another directory: Marian's files come with it */
    snprintf(avg, sizeof avg, "%s/elsewhere/avg.safetensors", dir);
    snprintf(cmd, sizeof cmd, "mkdir %s/elsewhere && %s average -o %s --dir %s/ft --last 2", dir, CLI, avg, dir);
    run_ok(cmd);
    static const char *const files[] = {"source.spm", "target.spm", "vocab.json"};
    for (size_t i = 0; i < 3; i++) {
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/ft/%s", dir, files[i]);
        snprintf(b, sizeof b, "%s/elsewhere/%s", dir, files[i]);
        snprintf(cmd, sizeof cmd, "cmp %s %s", a, b);
        cr_expect_eq(tu_run(cmd, err), 0, "%s is not a copy of %s: %s", b, a, tu_slurp(err));
    }
    cr_expect_str_eq(raw(avg, "tokenizer"), "marian");
    translates(avg, src);
}

/* ------------------------------------------------------------- ours */

/* Our tiny model trained 2 updates and resumed to 4, in run/. */
static void setup_ours(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    snprintf(err, sizeof err, "%s/err.txt", dir);
    tu_write_copy_corpus(dir, "a", 200, 1);
    char cmd[8192];
    for (int steps = 2; steps <= 4; steps += 2) {
        snprintf(cmd, sizeof cmd, "%s train --src %s/a.src --tgt %s/a.tgt --val-src '' --val-tgt '' --preset tiny "
                 "--vocab 300 --max-tokens 256 --warmup 10 --dropout 0 --seed 3 --keep 5 --steps %d --out %s/run "
                 "--quiet%s", CLI, dir, dir, steps, dir, steps == 4 ? " --resume" : "");
        run_ok(cmd);
    }
}

Test(checkpoint_meta, average_of_our_model_translates, .init = setup_ours, .timeout = TU_TIMEOUT(300))
{
    char cmd[4096], avg[400], newest[400], src[400];
    snprintf(avg, sizeof avg, "%s/run/avg.safetensors", dir);
    snprintf(newest, sizeof newest, "%s/run/ckpt-4.safetensors", dir);
    snprintf(cmd, sizeof cmd, "%s average -o %s %s/run/ckpt-2.safetensors %s", CLI, avg, dir, newest);
    run_ok(cmd);

    cr_expect_str_eq(raw(avg, "bpe"), "bpe.model");
    cr_expect_str_eq(raw(avg, "tokenizer"), "");
    cr_expect_str_eq(raw(avg, "averaged"), "yes");
    cr_expect_str_eq(raw(avg, "averaged_steps"), "[2,4]");
    cr_expect_str_eq(raw(avg, "step"), "4");
    same(newest, avg, "tokenizer_hash");
    same(newest, avg, "init");
    same(newest, avg, "generation");
    snprintf(src, sizeof src, "%s/a.src", dir);
    translates(avg, src);

    /* into another directory: bpe.model comes with it, and again over the
     * same bytes */
    snprintf(avg, sizeof avg, "%s/elsewhere/avg.safetensors", dir);
    snprintf(cmd, sizeof cmd, "mkdir %s/elsewhere && %s average -o %s --dir %s/run --last 2 && %s average -o %s "
             "--dir %s/run --last 2 && cmp %s/run/bpe.model %s/elsewhere/bpe.model", dir, CLI, avg, dir, CLI, avg,
             dir, dir, dir);
    run_ok(cmd);
    cr_expect_str_eq(raw(avg, "bpe"), "bpe.model");
    same(newest, avg, "tokenizer_hash");
    translates(avg, src);

    /* another subword model of that name is not overwritten, nor the
     * average written */
    snprintf(cmd, sizeof cmd, "mkdir %s/other && echo another > %s/other/bpe.model && %s average -o "
             "%s/other/avg.safetensors --dir %s/run", dir, dir, CLI, dir, dir);
    cr_expect_neq(tu_run(cmd, err), 0, "averaged over another bpe.model");
    cr_expect(strstr(tu_slurp(err), "other/bpe.model already exists and differs"), "%s", tu_slurp(err));
    snprintf(cmd, sizeof cmd, "grep -qx another %s/other/bpe.model && test ! -e %s/other/avg.safetensors", dir, dir);
    cr_expect_eq(tu_run(cmd, err), 0, "the other bpe.model was overwritten, or the average written");
}
