/* test_translator.c: the library's translator (clformer_translate.h) on an
 * imported Marian fixture (relu_separate, with its tokenizer and its
 * generation defaults): text in gives `clformer translate`'s output
 * exactly, greedy, beam and 2-best with scores, in batches of any size,
 * also from a second translator sharing the context; a new translator
 * decodes on the GEMM paths of the default compute type, as one set to it
 * (the command sets it; `serve` did not); a missing checkpoint, a
 * missing tokenizer and another model's tokenizer are refused with a
 * status and a message naming the file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clformer.h"
#include "testutil.h"

#define FIX CLF_SOURCE_DIR "/tests/fixtures/marian/"
#define CLI CLF_BINARY_DIR "/clformer"
#define SRC CLF_SOURCE_DIR "/data/multi30k/test_2016_flickr.en.gz"
#define N_LINES 9

static char dir[512], model[1024], input[1024];
static struct clf_lines lines;

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    char imp[600];  /* dir/imp */
    snprintf(imp, sizeof imp, "%s/imp", dir);
    cr_assert_eq(clf_marian_import(FIX "relu_separate", imp), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(model, sizeof model, "%s/model.safetensors", imp);
    struct clf_lines all;
    cr_assert_eq(clf_lines_read(&all, SRC), CLF_OK, "%s", clf_ctx_error(NULL));
    snprintf(input, sizeof input, "%s/src.en", dir);
    FILE *f = fopen(input, "w");
    cr_assert_not_null(f);
    for (size_t i = 0; i < N_LINES; i++)
        fprintf(f, "%s\n", all.line[i]);
    fclose(f);
    clf_lines_free(&all);
    cr_assert_eq(clf_lines_read(&lines, input), CLF_OK, "%s", clf_ctx_error(NULL));
}

static void teardown(void) { clf_lines_free(&lines); }

/* What `clformer translate --model … ARGS` prints for the input. */
static char *command(const char *args)
{
    char cmd[4096], out[600], err[600];
    snprintf(out, sizeof out, "%s/cmd.out", dir);
    snprintf(err, sizeof err, "%s/cmd.err", dir);
    snprintf(cmd, sizeof cmd, "%s translate --model %s --input %s --quiet %s > %s", CLI, model, input, args, out);
    cr_assert_eq(tu_run(cmd, err), 0, "%s: %s", cmd, tu_slurp(err));
    return tu_slurp(out);
}

/* The translator's output printed as the command prints it. */
static char *printed(char **out, const float *scores, size_t nbest)
{
    size_t cap = 1 << 16, at = 0;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    for (size_t i = 0; i < lines.n; i++)
        for (size_t k = 0; k < nbest; k++) {
            size_t j = i * nbest + k;
            at += nbest > 1 ? (size_t)snprintf(s + at, cap - at, "%zu\t%.4f\t%s\n", i, scores[j], out[j])
                            : (size_t)snprintf(s + at, cap - at, "%s\n", out[j]);
            cr_assert_lt(at, cap);
        }
    return s;
}

static char *translate(clf_translator_t *t, const struct clf_translate_opts *o, struct clf_batching b)
{
    const size_t nbest = o->greedy ? 1 : (size_t)o->nbest;
    char **out = calloc(lines.n * nbest, sizeof *out);
    float *scores = calloc(lines.n * nbest, sizeof *scores);
    cr_assert(out && scores);
    clf_status st = clf_translator_translate(t, (const char *const *)lines.line, lines.n, o, b, out, scores, NULL,
                                             NULL);
    cr_assert_eq(st, CLF_OK, "%s: %s", clf_status_str(st), clf_ctx_error(NULL));
    char *s = printed(out, scores, nbest);
    for (size_t i = 0; i < lines.n * nbest; i++)
        free(out[i]);
    free(out), free(scores);
    return s;
}

static void progress(size_t done, size_t n, void *arg)
{
    size_t *last = arg;
    cr_expect(done > *last && done <= n, "progress %zu of %zu after %zu", done, n, *last);
    *last = done;
}

Test(translator, gives_the_commands_output, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = tu_ctx();
    clf_translator_t *t = NULL;
    cr_assert_eq(clf_translator_init(ctx, model, NULL, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    struct clf_translate_opts d, o = clf_translator_opts(t);
    cr_assert_eq(clf_translator_defaults(model, &d), CLF_OK, "%s", clf_ctx_error(NULL));
    /* field by field: memcmp would compare the struct's padding too */
    cr_expect(d.beam == o.beam && d.alpha == o.alpha && d.max_extra == o.max_extra && d.nbest == o.nbest &&
                  d.greedy == o.greedy && d.min_length == o.min_length && d.length_penalty == o.length_penalty &&
                  d.max_output == o.max_output,
              "the defaults without a device are the loaded translator's");
    cr_expect_eq(o.length_penalty, CLF_LENGTH_PENALTY_HF, "an imported model decodes with its own defaults");

    /* its own defaults (beam 4), in batches of 32, of 2 and of 20 tokens */
    char *want = command("");
    char *got = translate(t, &o, CLF_BATCHING_DEFAULT);
    cr_expect_str_eq(got, want);
    free(got);
    got = translate(t, &o, (struct clf_batching){.sentences = 2});
    cr_expect_str_eq(got, want, "batches of 2 change the output");
    free(got);
    got = translate(t, &o, (struct clf_batching){.sentences = 32, .tokens = 20});
    cr_expect_str_eq(got, want, "a token budget changes the output");
    free(got);
    got = translate(t, &o, (struct clf_batching){.sentences = 3, .continuous = true});
    cr_expect_str_eq(got, want, "sources joining one decoding (3 at once) change the output");
    free(got);
    got = translate(t, &o, (struct clf_batching){.sentences = 32, .tokens = 20, .continuous = true});
    cr_expect_str_eq(got, want, "one decoding of 20 source tokens at once changes the output");
    free(got), free(want);

    /* greedy, and on a second translator sharing the context, in turn */
    struct clf_translate_opts g = o;
    g.greedy = true, g.nbest = 1;
    clf_translator_t *t2 = NULL;
    cr_assert_eq(clf_translator_init(ctx, model, NULL, &t2), CLF_OK, "%s", clf_ctx_error(ctx));
    want = command("--greedy");
    got = translate(t, &g, CLF_BATCHING_DEFAULT);
    cr_expect_str_eq(got, want);
    free(got);
    got = translate(t2, &g, (struct clf_batching){.sentences = 5});
    cr_expect_str_eq(got, want, "a second translator on the same context");
    free(got);
    got = translate(t2, &g, (struct clf_batching){.sentences = 2, .continuous = true});
    cr_expect_str_eq(got, want, "greedy, sources joining one decoding");
    free(got), free(want);
    want = command("");
    got = translate(t2, &o, CLF_BATCHING_DEFAULT);
    cr_expect_str_eq(got, want, "the second translator's beam");
    free(got), free(want);
    clf_translator_free(t2);

    /* 2-best with scores, and the progress after each batch */
    struct clf_translate_opts n2 = o;
    n2.nbest = 2;
    want = command("--nbest 2 --batch 4");
    char *out[N_LINES * 2];
    float scores[N_LINES * 2];
    size_t last = 0;
    clf_status st = clf_translator_translate(t, (const char *const *)lines.line, lines.n, &n2,
                                             (struct clf_batching){.sentences = 4}, out, scores, progress, &last);
    cr_assert_eq(st, CLF_OK, "%s", clf_ctx_error(ctx));
    cr_expect_eq(last, lines.n, "the last progress says all %zu are done, not %zu", lines.n, last);
    got = printed(out, scores, 2);
    cr_expect_str_eq(got, want);
    for (size_t i = 0; i < lines.n * 2; i++)
        free(out[i]);
    free(got), free(want);

    /* bad options come back as a status with the message, out[] NULL */
    struct clf_translate_opts bad = o;
    bad.nbest = bad.beam + 1;
    st = clf_translator_translate(t, (const char *const *)lines.line, 1, &bad, CLF_BATCHING_DEFAULT, out, scores,
                                  NULL, NULL);
    cr_expect_eq(st, CLF_ERR_ARG, "%s", clf_status_str(st));
    cr_expect(strstr(clf_ctx_error(ctx), "nbest"), "%s", clf_ctx_error(ctx));
    for (size_t i = 0; i < (size_t)bad.nbest; i++)
        cr_expect_null(out[i]);
    clf_translator_free(t);
    clf_ctx_free(ctx);
}

/* The GEMM calls of one greedy translation by t whose profile name names
 * oneDNN (packed float32, int8, bfloat16), and all of them. */
static void gemm_paths(clf_ctx_t *ctx, clf_translator_t *t, unsigned *onednn, unsigned *all)
{
    struct clf_translate_opts g = clf_translator_opts(t);
    g.greedy = true, g.nbest = 1;
    cr_assert_eq(clf_ctx_profile_start(ctx), CLF_OK, "%s", clf_ctx_error(ctx));
    free(translate(t, &g, CLF_BATCHING_DEFAULT));
    struct clf_profile_entry *prof = NULL;
    size_t n = 0;
    cr_assert_eq(clf_ctx_profile_report(ctx, &prof, &n), CLF_OK, "%s", clf_ctx_error(ctx));
    *onednn = *all = 0;
    for (size_t i = 0; i < n; i++)
        if (strstr(prof[i].name, "gemm")) {
            *all += prof[i].calls;
            *onednn += strstr(prof[i].name, "oneDNN") ? prof[i].calls : 0;
        }
    free(prof);
}

Test(translator, a_new_one_decodes_as_its_default_compute_type, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = tu_ctx();
    clf_translator_t *t = NULL;
    unsigned fresh, fresh_all, set, set_all;
    cr_assert_eq(clf_translator_init(ctx, model, NULL, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    gemm_paths(ctx, t, &fresh, &fresh_all);
    cr_assert_eq(clf_translator_compute_set(t, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    gemm_paths(ctx, t, &set, &set_all);
    cr_expect_gt(fresh_all, 0, "no GEMM in the profile");
    cr_expect(fresh == set && fresh_all == set_all, "a new translator ran %u of %u GEMMs on oneDNN, one set to its "
              "default compute type %u of %u", fresh, fresh_all, set, set_all);
    clf_translator_free(t);
    clf_ctx_free(ctx);
}

Test(translator, refuses_what_it_cannot_translate_with, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    clf_translator_t *t = (clf_translator_t *)ctx;  /* set to NULL on every failure */
    struct clf_translate_opts o;
    clf_status st = clf_translator_defaults("/nonexistent.safetensors", &o);
    cr_expect_eq(st, CLF_ERR_IO, "%s", clf_status_str(st));
    cr_expect(strstr(clf_ctx_error(NULL), "/nonexistent.safetensors"), "%s", clf_ctx_error(NULL));
    st = clf_translator_init(ctx, "/nonexistent.safetensors", NULL, &t);
    cr_expect_eq(st, CLF_ERR_IO, "%s", clf_status_str(st));
    cr_expect(strstr(clf_ctx_error(ctx), "/nonexistent.safetensors"), "%s", clf_ctx_error(ctx));
    cr_expect_null(t);

    /* a tokenizer directory with nothing in it */
    char empty[600];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    cr_assert_eq(mkdir(empty, 0755), 0);
    t = (clf_translator_t *)ctx;
    st = clf_translator_init(ctx, model, empty, &t);
    cr_expect_neq(st, CLF_OK);
    cr_expect(strstr(clf_ctx_error(ctx), empty) && strstr(clf_ctx_error(ctx), "tokenizer"), "%s",
              clf_ctx_error(ctx));
    cr_expect_null(t);

    /* another model's tokenizer: its vocabulary is twice this one's */
    t = (clf_translator_t *)ctx;
    st = clf_translator_init(ctx, model, FIX "swish_shared", &t);
    cr_expect_eq(st, CLF_ERR_ARG, "%s: %s", clf_status_str(st), clf_ctx_error(ctx));
    cr_expect(strstr(clf_ctx_error(ctx), "swish_shared") && strstr(clf_ctx_error(ctx), "pieces"), "%s",
              clf_ctx_error(ctx));
    cr_expect_null(t);
    clf_ctx_free(ctx);
}
