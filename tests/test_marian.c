/* test_marian.c: Marian's tokenizer (clf_tok_marian_load) against the ids
 * and text transformers' MarianTokenizer gives for the same model
 * directories (tests/fixtures/marian/make_marian.py writes them and
 * tokens.tsv / generate.tsv): one configuration with a shared vocabulary
 * and a language code, one with separate source and target vocabularies.
 * Bad directories (missing files, invalid JSON, a special piece missing,
 * two pieces with one id, a gap in the ids) must fail with the file named.
 * Our own SentencePiece models go through the same interface. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, symlink */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clformer.h"
#include "clformer_json.h"
#include "testutil.h"

#define FIX CLF_SOURCE_DIR "/tests/fixtures/marian/"

static const char *const models[] = {"swish_shared", "relu_separate"};

static clf_tok_t *load(const char *name)
{
    char dir[512];
    snprintf(dir, sizeof dir, FIX "%s", name);
    clf_tok_t *tok = NULL;
    cr_assert_eq(clf_tok_marian_load(&tok, dir), CLF_OK, "%s: %s", dir, clf_ctx_error(NULL));
    return tok;
}

struct counts {
    int enc, dec, bad, unk_seen, code_seen;
};

static void check_tokens(const char *name, struct counts *c)
{
    clf_tok_t *tok = load(name);
    struct clf_tok_ids sp = clf_tok_specials(tok);
    char path[512];
    snprintf(path, sizeof path, FIX "%s/tokens.tsv", name);
    struct clf_lines lines;
    cr_assert_eq(clf_lines_read(&lines, path), CLF_OK, "%s", clf_ctx_error(NULL));
    for (size_t i = 0; i < lines.n; i++) {
        char *f[4];
        if (lines.line[i][0] == '#' || !lines.line[i][0]) continue;
        cr_assert_eq(tu_fields(lines.line[i], f, 4), 4, "%s:%zu: want 4 fields", path, i + 1);
        enum clf_tok_side side = strcmp(f[1], "src") ? CLF_TOK_TARGET : CLF_TOK_SOURCE;
        if (!strcmp(f[0], "enc")) {
            size_t nw, ng;
            int32_t *want = tu_parse_ids(f[3], &nw), *got = NULL;
            cr_assert_eq(clf_tok_encode(tok, side, f[2], strlen(f[2]), true, &got, &ng), CLF_OK,
                         "%s:%zu: %s", path, i + 1, clf_ctx_error(NULL));
            if (!tu_same_ids(got, ng, want, nw)) {
                char *g = tu_ids_str(got, ng);
                cr_log_error("%s:%zu: %s \"%s\": got [%s], transformers [%s]", path, i + 1, f[1], f[2], g,
                             f[3]);
                free(g);
                c->bad++;
            }
            if (!strstr(f[2], "<unk>")) /* pieces, not the literal token */
                for (size_t k = 0; k + 1 < nw; k++) c->unk_seen += want[k] == sp.unk;
            c->code_seen += !strncmp(f[2], ">>", 2) && nw && want[0] != sp.unk;
            c->enc++;
            free(want);
            free(got);
        } else {
            cr_assert_str_eq(f[0], "dec", "%s:%zu", path, i + 1);
            size_t n;
            int32_t *ids = tu_parse_ids(f[2], &n);
            char *text = NULL;
            cr_assert_eq(clf_tok_decode(tok, side, ids, n, &text), CLF_OK, "%s:%zu: %s", path, i + 1,
                         clf_ctx_error(NULL));
            if (strcmp(text, f[3])) {
                cr_log_error("%s:%zu: %s [%s]: got \"%s\", transformers \"%s\"", path, i + 1, f[1], f[2],
                             text, f[3]);
                c->bad++;
            }
            c->dec++;
            free(text);
            free(ids);
        }
    }
    clf_lines_free(&lines);
    clf_tok_free(tok);
}

/* Every line of name's tokens.tsv agrees with MarianTokenizer, and the
 * fixture exercises what it is for: unknown pieces, and a language code
 * when with_code. */
static void tokens_equal(const char *name, bool with_code)
{
    struct counts c = {0};
    check_tokens(name, &c);
    cr_log_info("%s: %d encodes, %d decodes", name, c.enc, c.dec);
    cr_expect_eq(c.bad, 0, "%d of %d lines differ from MarianTokenizer", c.bad, c.enc + c.dec);
    cr_expect_gt(c.enc, 80);
    cr_expect_gt(c.dec, 40);
    cr_expect_gt(c.unk_seen, 0, "no piece mapped to <unk>: the fixture tests nothing there");
    if (with_code)
        cr_expect_gt(c.code_seen, 0, "no language code found in the vocabulary");
}

Test(marian, tokens_equal_marian_tokenizer_shared_vocab) { tokens_equal("swish_shared", true); }
Test(marian, tokens_equal_marian_tokenizer_separate_vocabs) { tokens_equal("relu_separate", false); }

/* The source ids generate() was given, from the same tokenizer. */
Test(marian, generate_inputs_equal)
{
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        clf_tok_t *tok = load(models[m]);
        char path[512];
        snprintf(path, sizeof path, FIX "%s/generate.tsv", models[m]);
        struct clf_lines lines;
        cr_assert_eq(clf_lines_read(&lines, path), CLF_OK, "%s", clf_ctx_error(NULL));
        int checked = 0;
        for (size_t i = 0; i < lines.n; i++) {
            char *f[5];
            if (lines.line[i][0] == '#') continue;
            cr_assert_eq(tu_fields(lines.line[i], f, 5), 5, "%s:%zu: want 5 fields", path, i + 1);
            size_t nw, ng;
            int32_t *want = tu_parse_ids(f[1], &nw), *got = NULL;
            cr_assert_eq(clf_tok_encode(tok, CLF_TOK_SOURCE, f[0], strlen(f[0]), true, &got, &ng), CLF_OK);
            cr_expect(tu_same_ids(got, ng, want, nw), "%s:%zu: \"%s\"", path, i + 1, f[0]);
            free(want);
            free(got);
            checked++;
        }
        cr_expect_geq(checked, 24, "%s: %d sentences", path, checked);
        clf_lines_free(&lines);
        clf_tok_free(tok);
    }
}

/* The special ids and sizes agree with the model's config.json: pad is the
 * last id and the decoder's start, eos 0. */
Test(marian, specials_agree_with_config)
{
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        clf_tok_t *tok = load(models[m]);
        char path[512];
        snprintf(path, sizeof path, FIX "%s/config.json", models[m]);
        char *text = tu_slurp(path);
        struct clf_json j;
        char err[256];
        cr_assert(clf_json_parse(text, strlen(text), &j, err, sizeof err), "%s: %s", path, err);
        double pad, eos, start, vocab, dvocab;
        cr_assert(clf_json_num(&j, "pad_token_id", &pad) && clf_json_num(&j, "eos_token_id", &eos) &&
                  clf_json_num(&j, "decoder_start_token_id", &start) &&
                  clf_json_num(&j, "vocab_size", &vocab) &&
                  clf_json_num(&j, "decoder_vocab_size", &dvocab), "%s: fields missing", path);
        struct clf_tok_ids sp = clf_tok_specials(tok);
        cr_expect_eq(sp.pad, (int32_t)pad, "%s", models[m]);
        cr_expect_eq(sp.pad, (int32_t)start, "%s", models[m]);
        cr_expect_eq(sp.eos, (int32_t)eos, "%s", models[m]);
        cr_expect_eq(sp.bos, -1);
        cr_expect_eq(sp.unk, 1);
        cr_expect_eq(clf_tok_vocab_size(tok, CLF_TOK_SOURCE), (int)vocab, "%s", models[m]);
        cr_expect_eq(clf_tok_vocab_size(tok, CLF_TOK_TARGET), (int)dvocab, "%s", models[m]);
        cr_expect_eq(sp.pad, clf_tok_vocab_size(tok, CLF_TOK_SOURCE) - 1);
        cr_expect_str_eq(clf_tok_piece(tok, CLF_TOK_TARGET, sp.pad), "<pad>");
        cr_expect_str_eq(clf_tok_piece(tok, CLF_TOK_SOURCE, sp.eos), "</s>");
        cr_expect_str_eq(clf_tok_piece(tok, CLF_TOK_SOURCE, -1), "");
        cr_expect_neq(clf_tok_hash(tok), 0);
        cr_expect_not_null(clf_tok_spm(tok, CLF_TOK_SOURCE));
        cr_expect_neq((const void *)clf_tok_spm(tok, CLF_TOK_SOURCE),
                      (const void *)clf_tok_spm(tok, CLF_TOK_TARGET));
        clf_json_free(&j);
        free(text);
        clf_tok_free(tok);
    }
}

Test(marian, bad_ids_and_text_fail)
{
    clf_tok_t *tok = load("swish_shared");
    int32_t ids[] = {5, clf_tok_vocab_size(tok, CLF_TOK_TARGET)};
    char *text = NULL;
    cr_expect_eq(clf_tok_decode(tok, CLF_TOK_TARGET, ids, 2, &text), CLF_ERR_ARG);
    cr_expect_null(text);
    cr_expect(strstr(clf_ctx_error(NULL), "out of range"), "%s", clf_ctx_error(NULL));
    int32_t *out = NULL;
    size_t n = 7;
    cr_expect_eq(clf_tok_encode(tok, CLF_TOK_SOURCE, "a\xff" "b", 3, true, &out, &n), CLF_ERR_ARG);
    cr_expect(strstr(clf_ctx_error(NULL), "UTF-8"), "%s", clf_ctx_error(NULL));
    cr_expect_null(out);
    cr_expect_eq(n, 0);
    /* without eos, the same ids less the last */
    int32_t *a = NULL, *b = NULL;
    size_t na, nb;
    const char *s = "Two dogs play in the snow.";
    cr_assert_eq(clf_tok_encode(tok, CLF_TOK_SOURCE, s, strlen(s), true, &a, &na), CLF_OK);
    cr_assert_eq(clf_tok_encode(tok, CLF_TOK_SOURCE, s, strlen(s), false, &b, &nb), CLF_OK);
    cr_expect_eq(na, nb + 1);
    cr_expect(tu_same_ids(a, nb, b, nb));
    cr_expect_eq(a[na - 1], clf_tok_specials(tok).eos);
    free(a);
    free(b);
    clf_tok_free(tok);
}

/* ------------------------------------------------------ bad directories */

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/clf_marian_XXXXXX");
    cr_assert(mkdtemp(dir));
    char from[512], to[512];
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "target.spm" : "source.spm";
        snprintf(from, sizeof from, FIX "swish_shared/%s", name);
        snprintf(to, sizeof to, "%s/%s", dir, name);
        cr_assert_eq(symlink(from, to), 0, "symlink %s", to);
    }
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static void put(const char *name, const char *bytes)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    cr_assert(f, "%s", p);
    fputs(bytes, f);
    fclose(f);
}

/* Loading dir fails with status want and a message holding every needle. */
static void refused(clf_status want, const char *const *needles, int n)
{
    clf_tok_t *tok = (clf_tok_t *)&tok;
    clf_status st = clf_tok_marian_load(&tok, dir);
    cr_expect_eq(st, want, "got %s: %s", clf_status_str(st), clf_ctx_error(NULL));
    cr_expect_null(tok);
    for (int i = 0; i < n; i++)
        cr_expect(strstr(clf_ctx_error(NULL), needles[i]), "\"%s\" not in: %s", needles[i],
                  clf_ctx_error(NULL));
    if (st == CLF_OK) clf_tok_free(tok);
}

#define REFUSED(st, ...)                                                 \
    do {                                                                 \
        const char *const nd_[] = {__VA_ARGS__};                         \
        refused(st, nd_, (int)(sizeof nd_ / sizeof nd_[0]));             \
    } while (0)

static const char good_vocab[] = "{\"</s>\": 0, \"<unk>\": 1, \"\\u2581a\": 2, \"<pad>\": 3}";

TestSuite(marian_bad, .init = setup, .fini = teardown);

Test(marian_bad, a_small_directory_loads)
{
    put("vocab.json", good_vocab);
    clf_tok_t *tok = NULL;
    cr_assert_eq(clf_tok_marian_load(&tok, dir), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_eq(clf_tok_vocab_size(tok, CLF_TOK_SOURCE), 4);
    cr_expect_str_eq(clf_tok_piece(tok, CLF_TOK_SOURCE, 2), "\xe2\x96\x81" "a");
    struct clf_tok_ids sp = clf_tok_specials(tok);
    cr_expect(sp.eos == 0 && sp.unk == 1 && sp.pad == 3);
    /* every piece but "▁a" is unknown here */
    int32_t *ids = NULL;
    size_t n = 0;
    cr_assert_eq(clf_tok_encode(tok, CLF_TOK_SOURCE, "a man", 5, true, &ids, &n), CLF_OK);
    cr_assert_geq(n, 3);
    cr_expect_eq(ids[0], 2);
    for (size_t i = 1; i + 1 < n; i++) cr_expect_eq(ids[i], 1);
    cr_expect_eq(ids[n - 1], 0);
    free(ids);
    clf_tok_free(tok);
}

Test(marian_bad, missing_files)
{
    REFUSED(CLF_ERR_IO, "vocab.json", "cannot open");
    put("vocab.json", good_vocab);
    put("tokenizer_config.json", "{\"separate_vocabs\": true}");
    REFUSED(CLF_ERR_IO, "target_vocab.json", "cannot open");
    char p[512];
    snprintf(p, sizeof p, "%s/target.spm", dir);
    cr_assert_eq(unlink(p), 0);
    REFUSED(CLF_ERR_IO, "target.spm");
}

Test(marian_bad, invalid_json)
{
    put("vocab.json", "{\"</s>\": 0, \"<unk>\": 1,");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "invalid JSON", "line 1");
    put("vocab.json", good_vocab);
    put("tokenizer_config.json", "{\"separate_vocabs\": tru}");
    REFUSED(CLF_ERR_FORMAT, "tokenizer_config.json", "invalid JSON");
    put("tokenizer_config.json", "{\"separate_vocabs\": \"yes\"}");
    REFUSED(CLF_ERR_FORMAT, "tokenizer_config.json", "separate_vocabs");
    put("tokenizer_config.json", "{\"unk_token\": 3}");
    REFUSED(CLF_ERR_FORMAT, "tokenizer_config.json", "unk_token");
    put("tokenizer_config.json", "[]");
    REFUSED(CLF_ERR_FORMAT, "tokenizer_config.json", "not a JSON object");
    put("tokenizer_config.json", "{}");
    put("vocab.json", "[\"</s>\", \"<unk>\"]");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "not a JSON object");
    put("vocab.json", "{}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "not a JSON object");
}

Test(marian_bad, special_piece_missing)
{
    put("vocab.json", "{\"</s>\": 0, \"\\u2581a\": 1, \"<pad>\": 2}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "<unk>");
    put("vocab.json", "{\"<unk>\": 0, \"\\u2581a\": 1, \"<pad>\": 2}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "</s>");
    put("vocab.json", "{\"</s>\": 0, \"<unk>\": 1, \"\\u2581a\": 2}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "<pad>");
    /* the target vocabulary needs its own <unk> */
    put("vocab.json", good_vocab);
    put("tokenizer_config.json", "{\"separate_vocabs\": true}");
    put("target_vocab.json", "{\"</s>\": 0, \"\\u2581a\": 1, \"<pad>\": 2}");
    REFUSED(CLF_ERR_FORMAT, "target_vocab.json", "<unk>");
    /* specials renamed in the config must be in the vocabulary */
    put("tokenizer_config.json", "{\"pad_token\": {\"content\": \"<blank>\"}}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "<blank>");
}

Test(marian_bad, ids_must_be_unique_and_without_gaps)
{
    put("vocab.json", "{\"</s>\": 0, \"<unk>\": 1, \"\\u2581a\": 1, \"<pad>\": 3}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "both have id 1", "<unk>");
    put("vocab.json", "{\"</s>\": 0, \"<unk>\": 1, \"\\u2581a\": 2, \"<pad>\": 4}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "<pad>", "without a gap");
    put("vocab.json", "{\"</s>\": 0, \"<unk>\": 1, \"\\u2581a\": 2.5, \"<pad>\": 3}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "whole number");
    put("vocab.json", "{\"</s>\": 0, \"<unk>\": 1, \"\\u2581a\": -2, \"<pad>\": 3}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "whole number");
    put("vocab.json", "{\"</s>\": 0, \"<unk>\": 1, \"\\u2581a\": \"2\", \"<pad>\": 3}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "whole number");
    put("vocab.json", "{\"</s>\": 0, \"<unk>\": 1, \"<unk>\": 2, \"<pad>\": 3}");
    REFUSED(CLF_ERR_FORMAT, "vocab.json", "appears twice");
}

/* ---------------------------------------------- ours, same interface */

Test(marian, our_sentencepiece_through_the_same_interface)
{
    const char *model = FIX "swish_shared/source.spm";
    clf_spm_t *spm = NULL;
    clf_tok_t *tok = NULL;
    cr_assert_eq(clf_spm_load(&spm, model), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_tok_spm_load(&tok, model), CLF_OK, "%s", clf_ctx_error(NULL));
    struct clf_tok_ids sp = clf_tok_specials(tok);
    cr_expect(sp.pad == CLF_SPM_PAD && sp.bos == CLF_SPM_BOS && sp.eos == CLF_SPM_EOS &&
              sp.unk == CLF_SPM_UNK);
    cr_expect_eq(clf_tok_vocab_size(tok, CLF_TOK_SOURCE), clf_spm_vocab_size(spm));
    cr_expect_eq(clf_tok_vocab_size(tok, CLF_TOK_TARGET), clf_spm_vocab_size(spm));
    cr_expect_eq(clf_tok_hash(tok), clf_spm_hash(spm));
    const char *s = "A little girl climbs into a wooden playhouse.";
    int32_t *a = NULL, *b = NULL;
    size_t na, nb;
    cr_assert_eq(clf_spm_encode(spm, s, strlen(s), &a, &na), CLF_OK);
    cr_assert_eq(clf_tok_encode(tok, CLF_TOK_TARGET, s, strlen(s), true, &b, &nb), CLF_OK);
    cr_expect_eq(nb, na + 1);
    cr_expect(tu_same_ids(a, na, b, na));
    cr_expect_eq(b[nb - 1], CLF_SPM_EOS);
    char *ta = NULL, *tb = NULL;
    cr_assert_eq(clf_spm_decode(spm, a, na, &ta), CLF_OK);
    cr_assert_eq(clf_tok_decode(tok, CLF_TOK_SOURCE, b, nb, &tb), CLF_OK);
    cr_expect_str_eq(tb, ta);
    cr_expect_str_eq(clf_tok_piece(tok, CLF_TOK_SOURCE, a[0]), clf_spm_piece(spm, a[0]));
    free(a);
    free(b);
    free(ta);
    free(tb);
    clf_tok_free(tok);
    clf_spm_free(spm);
}
