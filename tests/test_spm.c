/* test_spm.c: the SentencePiece interface against SentencePiece's own tools.
 *
 * A BPE model learned on the bundled Multi30k train EN+DE must encode every
 * line to the ids `spm_encode` gives with the same model (Debian package
 * `sentencepiece`), and decode(encode(line)) must equal what `spm_normalize`
 * makes of hand-made lines (emoji, combining marks, tabs, no-break and
 * zero-width spaces, full-width forms). Models are learned into a temporary
 * folder. */
#define _POSIX_C_SOURCE 200809L /* popen, mkdtemp */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/clock.h"
#include "clformer.h"
#include "testutil.h"

#define DATA CLF_SOURCE_DIR "/data/multi30k/"
#define CLI CLF_BINARY_DIR "/clformer"

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *tmpdir(void)
{
    static char dir[64];
    strcpy(dir, "/tmp/clf_spm_XXXXXX");
    cr_assert(mkdtemp(dir), "mkdtemp");
    return dir;
}

static clf_spm_t *learn(const char *model, int vocab, const char *a, const char *b)
{
    const char *files[] = {a, b};
    struct clf_spm_learn_opts o;
    clf_spm_learn_defaults(&o);
    o.vocab_size = vocab;
    double t0 = clf_now();
    cr_assert_eq(clf_spm_learn(files, 2, model, &o), CLF_OK, "learn: %s", clf_ctx_error(NULL));
    cr_log_info("learned %d pieces in %.2f s", vocab, clf_now() - t0);
    clf_spm_t *spm;
    cr_assert_eq(clf_spm_load(&spm, model), CLF_OK, "load: %s", clf_ctx_error(NULL));
    return spm;
}

/* Writes the lines of several (gzip) files into one plain file. */
static size_t concat(const char *out, const char *const *files, int n)
{
    FILE *f = fopen(out, "w");
    cr_assert(f);
    size_t lines = 0;
    for (int i = 0; i < n; i++) {
        struct clf_lines l;
        cr_assert_eq(clf_lines_read(&l, files[i]), CLF_OK, "%s", clf_ctx_error(NULL));
        for (size_t k = 0; k < l.n; k++) fprintf(f, "%s\n", l.line[k]);
        lines += l.n;
        clf_lines_free(&l);
    }
    fclose(f);
    return lines;
}

static char *ids_str(const int32_t *ids, size_t n)
{
    char *s = malloc(12 * n + 1), *p = s;
    *p = '\0';
    for (size_t i = 0; i < n; i++) p += sprintf(p, i ? " %d" : "%d", (int)ids[i]);
    return s;
}

Test(spm, encode_equals_spm_encode_on_multi30k, .timeout = TU_TIMEOUT(120))
{
    char *dir = tmpdir(), model[256], text[256], ids[256], pieces[256];
    snprintf(model, sizeof model, "%s/m.model", dir);
    snprintf(text, sizeof text, "%s/train.txt", dir);
    snprintf(ids, sizeof ids, "%s/ids.txt", dir);
    snprintf(pieces, sizeof pieces, "%s/pieces.txt", dir);
    clf_spm_t *spm = learn(model, 8000, DATA "train.en.gz", DATA "train.de.gz");

    cr_expect_eq(clf_spm_vocab_size(spm), 8000);
    cr_expect_str_eq(clf_spm_piece(spm, CLF_SPM_PAD), "<pad>");
    cr_expect_str_eq(clf_spm_piece(spm, CLF_SPM_BOS), "<s>");
    cr_expect_str_eq(clf_spm_piece(spm, CLF_SPM_EOS), "</s>");
    cr_expect_str_eq(clf_spm_piece(spm, CLF_SPM_UNK), "<unk>");
    cr_expect_str_eq(clf_spm_piece(spm, 4), "<0x00>");
    cr_expect_neq(clf_spm_hash(spm), 0);

    const char *files[] = {DATA "train.en.gz", DATA "train.de.gz"};
    size_t n = concat(text, files, 2);
    cr_assert_eq(n, 58000);
    cr_assert_eq(sh("spm_encode --model='%s' --output_format=id < '%s' > '%s'", model, text, ids), 0,
                 "spm_encode failed: apt-get install sentencepiece");
    cr_assert_eq(sh("spm_encode --model='%s' --output_format=piece < '%s' > '%s'", model, text,
                    pieces),
                 0);
    struct clf_lines src, want, want_p;
    cr_assert_eq(clf_lines_read(&src, text), CLF_OK);
    cr_assert_eq(clf_lines_read(&want, ids), CLF_OK);
    cr_assert_eq(clf_lines_read(&want_p, pieces), CLF_OK);
    cr_assert_eq(want.n, n);
    cr_assert_eq(want_p.n, n);
    size_t bad = 0, tokens = 0;
    double t0 = clf_now();
    for (size_t i = 0; i < n; i++) {
        int32_t *v;
        size_t k;
        cr_assert_eq(clf_spm_encode(spm, src.line[i], strlen(src.line[i]), &v, &k), CLF_OK);
        tokens += k;
        char *got = ids_str(v, k);
        if (strcmp(got, want.line[i]) && bad++ < 5)
            cr_log_error("line %zu: ours %s, spm_encode %s", i + 1, got, want.line[i]);
        free(got);
        free(v);
    }
    cr_log_info("encoded %zu lines into %zu pieces in %.2f s", n, tokens, clf_now() - t0);
    for (size_t i = 0; i < n; i++) {
        char *got;
        cr_assert_eq(clf_spm_encode_pieces(spm, src.line[i], strlen(src.line[i]), &got), CLF_OK);
        if (strcmp(got, want_p.line[i]) && bad++ < 5)
            cr_log_error("line %zu: ours %s, spm_encode %s", i + 1, got, want_p.line[i]);
        free(got);
    }
    cr_expect_eq(bad, 0, "%zu lines encode differently from spm_encode", bad);
    clf_lines_free(&src);
    clf_lines_free(&want);
    clf_lines_free(&want_p);
    clf_spm_free(spm);
    sh("rm -rf '%s'", dir);
}

/* Hand-made lines; spm_normalize gives SentencePiece's normalised text. */
static const char *const HAND[] = {
    "Zwei  Männer\tstehen 😀👍🏽 vor einem Haus.",
    "e\xcc\x81te\xcc\x81 \xef\xac\x81ne caf\xc3\xa9",          /* combining acute, ligature fi */
    " a\xc2\xa0" "b\xe2\x80\x8b" "c\xe3\x80\x80" "d  ",            /* NBSP, ZWSP, ideographic space */
    "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\x8e \xe2\x91\xa0 \xe6\xbc\xa2\xe5\xad\x97 \xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7",
    "tab\t\tseparated\tline\t",
    "Stra\xc3\x9f" "e \xe1\xba\x9e \xce\x9f\xce\x94\xce\x9f\xce\xa3 \xe2\x80\x9equoted\xe2\x80\x9c \xe2\x80\x93 dash\xe2\x80\xa6",
    "\xe2\x80\x8b\xe2\x80\x8b",                                     /* only zero-width spaces */
    "x\xcc\xa3\xcc\x87 \xe1\xb8\x8b\xcc\xa3 A\xcc\x8a \xe2\x84\xab", /* mark order, angstrom sign */
    "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x94\xac \xf0\x9f\x87\xa9\xf0\x9f\x87\xaa", /* ZWJ sequence, flag */
};

Test(spm, decode_encode_is_spm_normalised_text, .timeout = TU_TIMEOUT(60))
{
    char *dir = tmpdir(), model[256], hand[256], norm[256];
    snprintf(model, sizeof model, "%s/small.model", dir);
    snprintf(hand, sizeof hand, "%s/hand.txt", dir);
    snprintf(norm, sizeof norm, "%s/norm.txt", dir);
    clf_spm_t *spm = learn(model, 1000, DATA "val.en.gz", DATA "val.de.gz");
    size_t n = sizeof HAND / sizeof HAND[0];
    FILE *f = fopen(hand, "w");
    for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", HAND[i]);
    fclose(f);
    cr_assert_eq(sh("spm_normalize --model='%s' < '%s' > '%s'", model, hand, norm), 0,
                 "spm_normalize failed: apt-get install sentencepiece");
    struct clf_lines want;
    cr_assert_eq(clf_lines_read(&want, norm), CLF_OK);
    cr_assert_eq(want.n, n);
    for (size_t i = 0; i < n; i++) {
        int32_t *ids;
        size_t k;
        char *back;
        cr_assert_eq(clf_spm_encode(spm, HAND[i], strlen(HAND[i]), &ids, &k), CLF_OK);
        cr_assert_eq(clf_spm_decode(spm, ids, k, &back), CLF_OK);
        cr_expect_str_eq(back, want.line[i], "line %zu: decode(encode) '%s', spm_normalize '%s'",
                         i + 1, back, want.line[i]);
        free(back);
        free(ids);
    }
    clf_lines_free(&want);
    clf_spm_free(spm);
    sh("rm -rf '%s'", dir);
}

Test(spm, bpe_command_round_trip, .timeout = TU_TIMEOUT(60))
{
    char *dir = tmpdir();
    cr_assert_eq(sh("'%s' bpe learn --vocab 1000 -o '%s/c.model' '%s' '%s' 2> '%s/log'", CLI, dir,
                    DATA "val.en.gz", DATA "val.de.gz", dir),
                 0);
    cr_assert_eq(sh("gzip -dc '%s' > '%s/val.en'", DATA "val.en.gz", dir), 0);
    cr_assert_eq(sh("'%s' bpe encode --model '%s/c.model' < '%s/val.en' > '%s/ours.ids'", CLI, dir,
                    dir, dir),
                 0);
    cr_assert_eq(sh("spm_encode --model='%s/c.model' < '%s/val.en' --output_format=id > "
                    "'%s/spm.ids'",
                    dir, dir, dir),
                 0);
    cr_expect_eq(sh("cmp -s '%s/ours.ids' '%s/spm.ids'", dir, dir), 0, "ids differ from spm_encode");
    cr_assert_eq(sh("'%s' bpe decode --model '%s/c.model' < '%s/ours.ids' > '%s/back'", CLI, dir,
                    dir, dir),
                 0);
    cr_expect_eq(sh("cmp -s '%s/back' '%s/val.en'", dir, dir), 0, "decode(encode) changed val.en");
    cr_assert_eq(sh("'%s' bpe encode --pieces --model '%s/c.model' < '%s/val.en' | '%s' bpe decode "
                    "--pieces --model '%s/c.model' > '%s/back2'",
                    CLI, dir, dir, CLI, dir, dir),
                 0);
    cr_expect_eq(sh("cmp -s '%s/back2' '%s/val.en'", dir, dir), 0, "pieces round trip changed val.en");
    cr_expect_neq(sh("'%s' bpe learn --vocab 1000 -o '%s/d.model' '%s/missing.txt' 2>/dev/null", CLI,
                     dir, dir),
                  0, "learning from a missing file must fail");
    sh("rm -rf '%s'", dir);
}
