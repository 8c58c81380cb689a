/* test_data.c: parallel data. Bad input (missing file, empty file, line
 * counts that differ, invalid UTF-8) must stop with a message naming the
 * file (and line and column), from the library and as a non-zero exit of
 * `clformer data`/`clformer bleu`; skipped pairs are counted; batches are
 * complete, within their token budget, padded right and deterministic. */
#define _POSIX_C_SOURCE 200809L /* popen, mkdtemp */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "clformer.h"
#include "testutil.h"

#define DATA CLF_SOURCE_DIR "/data/multi30k/"
#define CLI CLF_BINARY_DIR "/clformer"

static char dir[64];
static char path_buf[8][512];
static int path_next;

static const char *path(const char *name)
{
    char *p = path_buf[path_next++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static const char *write_file(const char *name, const char *bytes)
{
    const char *p = path(name);
    FILE *f = fopen(p, "wb");
    cr_assert(f);
    fputs(bytes, f);
    fclose(f);
    return p;
}

static void setup(void)
{
    strcpy(dir, "/tmp/clf_data_XXXXXX");
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(data, .init = setup, .fini = teardown);

/* Runs a command; returns its stderr+stdout (malloc'd) and exit status. */
static char *run(int *status, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    char *out = calloc(1, 65536);
    size_t n = fread(out, 1, 65535, p);
    out[n] = '\0';
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

/* The load fails with `want` in the message, and so does `clformer data`. */
static void expect_refused(const char *src, const char *tgt, clf_status want_st, const char *want)
{
    struct clf_corpus *c = NULL;
    clf_status st = clf_corpus_load(&c, src, tgt);
    cr_expect_eq(st, want_st, "status %s, want %s", clf_status_str(st), clf_status_str(want_st));
    cr_expect_null(c);
    cr_expect(strstr(clf_ctx_error(NULL), want), "message '%s' lacks '%s'", clf_ctx_error(NULL),
              want);
    int status;
    char *out = run(&status, "'%s' data '%s' '%s'", CLI, src, tgt);
    cr_expect_neq(status, 0, "clformer data must fail: %s", out);
    cr_expect(strstr(out, want), "clformer data said '%s', lacks '%s'", out, want);
    free(out);
}

Test(data, missing_file)
{
    const char *tgt = write_file("ok.de", "ein\n");
    const char *src = path("nope.en");
    char want[600];
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", src);
    expect_refused(src, tgt, CLF_ERR_IO, want);
}

Test(data, empty_file)
{
    const char *src = write_file("empty.en", "");
    const char *tgt = write_file("ok.de", "ein\n");
    char want[600];
    snprintf(want, sizeof want, "%s: empty file", src);
    expect_refused(src, tgt, CLF_ERR_FORMAT, want);
}

Test(data, line_counts_differ)
{
    const char *src = write_file("three.en", "a\nb\nc\n");
    const char *tgt = write_file("two.de", "a\nb");
    char want[1200];
    snprintf(want, sizeof want, "line counts differ: %s has 3 lines, %s has 2 lines", src, tgt);
    expect_refused(src, tgt, CLF_ERR_FORMAT, want);
}

Test(data, invalid_utf8)
{
    static const struct {
        const char *bytes, *where;
    } cases[] = {
        {"fine\nab\xff" "cd\n", ":2: invalid UTF-8 at byte column 3"},           /* stray byte */
        {"x\ny\nz\xc3\n", ":3: invalid UTF-8 at byte column 2"},                   /* cut short */
        {"\xc0\xaf\n", ":1: invalid UTF-8 at byte column 1"},                      /* overlong */
        {"ok\n\xed\xa0\x80\n", ":2: invalid UTF-8 at byte column 1"},              /* surrogate */
        {"\xf4\x90\x80\x80\n", ":1: invalid UTF-8 at byte column 1"},              /* > U+10FFFF */
        {"\xc3\xa4\xe2\x82\n", ":1: invalid UTF-8 at byte column 3"},              /* ä then cut */
        {"a\xc3(b\n", ":1: invalid UTF-8 at byte column 2"},                       /* bad continuation */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32], want[700];
        snprintf(name, sizeof name, "bad%zu.de", i);
        int lines = 1;
        for (const char *p = cases[i].bytes; *p; p++) lines += *p == '\n';
        char ok[64] = "";
        for (int k = 1; k < lines; k++) strcat(ok, "x\n");
        const char *src = write_file("ok.en", ok);
        const char *tgt = write_file(name, cases[i].bytes);
        snprintf(want, sizeof want, "%s%s", tgt, cases[i].where);
        expect_refused(src, tgt, CLF_ERR_FORMAT, want);
    }
}

Test(data, bleu_command_refuses_bad_input)
{
    int status;
    const char *bad = write_file("bad.txt", "ok\nno\xfe\n");
    char *out = run(&status, "'%s' bleu '%s' < '%s'", CLI, bad, bad);
    cr_expect_neq(status, 0);
    cr_expect(strstr(out, ":2: invalid UTF-8 at byte column 3"), "%s", out);
    free(out);
    out = run(&status, "'%s' bleu '%s' < '%s'", CLI, path("missing.txt"), bad);
    cr_expect_neq(status, 0);
    cr_expect(strstr(out, "missing.txt: cannot open"), "%s", out);
    free(out);
}

Test(data, gzip_plain_crlf_and_final_newline)
{
    struct clf_corpus *a, *b;
    const char *src = write_file("s.en", "one\r\ntwo\nthree");
    const char *tgt = write_file("t.de", "eins\nzwei\ndrei\n");
    cr_assert_eq(clf_corpus_load(&a, src, tgt), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_eq(a->src.n, 3);
    cr_expect_str_eq(a->src.line[0], "one");
    cr_expect_str_eq(a->src.line[2], "three");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "gzip -k '%s' '%s'", src, tgt);
    cr_assert_eq(system(cmd), 0);
    char sgz[600], tgz[600];
    snprintf(sgz, sizeof sgz, "%s.gz", src);
    snprintf(tgz, sizeof tgz, "%s.gz", tgt);
    cr_assert_eq(clf_corpus_load(&b, sgz, tgz), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_eq(b->src.n, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_expect_str_eq(a->src.line[i], b->src.line[i]);
        cr_expect_str_eq(a->tgt.line[i], b->tgt.line[i]);
    }
    clf_corpus_free(a);
    clf_corpus_free(b);
}

static clf_spm_t *small_model(void)
{
    const char *files[] = {DATA "val.en.gz", DATA "val.de.gz"};
    struct clf_spm_learn_opts o;
    clf_spm_learn_defaults(&o);
    o.vocab_size = 1000;
    const char *model = path("small.model");
    cr_assert_eq(clf_spm_learn(files, 2, model, &o), CLF_OK, "%s", clf_ctx_error(NULL));
    clf_spm_t *spm;
    cr_assert_eq(clf_spm_load(&spm, model), CLF_OK, "%s", clf_ctx_error(NULL));
    return spm;
}

Test(data, skipped_pairs_are_counted)
{
    clf_spm_t *spm = small_model();
    const char *src = write_file("s.en", "A man.\n\nTwo dogs run.\n   \n"
                                          "a b c d e f g h i j k l m n o p q r s t u v w x y z\nOk.\n");
    const char *tgt = write_file("t.de", "Ein Mann.\nLeer.\nZwei Hunde.\nAuch leer.\nLang.\n\n");
    struct clf_corpus *c;
    struct clf_corpus_summary s;
    cr_assert_eq(clf_corpus_load(&c, src, tgt), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_corpus_encode(c, spm, 20, &s), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect_eq(s.lines, 6);
    cr_expect_eq(s.skipped_empty, 3, "lines 2, 4 (spaces only) and 6 have an empty side");
    cr_expect_eq(s.skipped_long, 1);
    cr_expect_eq(s.kept, 2);
    cr_expect_eq(c->n_pairs, 2);
    cr_expect_eq(c->pair_line[0], 0);
    cr_expect_eq(c->pair_line[1], 2);
    cr_expect_eq(s.src_tokens, c->src_off[2]);
    cr_expect_eq(s.tgt_tokens, c->tgt_off[2]);
    cr_assert_eq(clf_corpus_encode(c, spm, 0, &s), CLF_OK);
    cr_expect_eq(s.kept, 3, "no length limit keeps the long pair");
    clf_corpus_free(c);
    clf_spm_free(spm);
}

Test(data, batches_complete_bounded_padded_deterministic, .timeout = TU_TIMEOUT(60))
{
    clf_spm_t *spm = small_model();
    struct clf_corpus *c;
    cr_assert_eq(clf_corpus_load(&c, DATA "val.en.gz", DATA "val.de.gz"), CLF_OK);
    cr_assert_eq(clf_corpus_encode(c, spm, 64, NULL), CLF_OK);
    const size_t max_tokens = 700;
    struct clf_batches b1, b2, b3;
    cr_assert_eq(clf_batches_make(c, max_tokens, 42, 0, &b1), CLF_OK);
    cr_assert_eq(clf_batches_make(c, max_tokens, 42, 0, &b2), CLF_OK);
    cr_assert_eq(clf_batches_make(c, max_tokens, 42, 1, &b3), CLF_OK);

    cr_assert_eq(b1.n, b2.n);
    int same_as_next_epoch = b1.n == b3.n;
    unsigned char *seen = calloc(c->n_pairs, 1);
    for (size_t i = 0; i < b1.n; i++) {
        const struct clf_batch *x = &b1.batch[i];
        cr_assert_eq(x->n, b2.batch[i].n);
        cr_assert(!memcmp(x->pairs, b2.batch[i].pairs, x->n * sizeof *x->pairs), "same seed, same batches");
        if (i < b3.n && (x->n != b3.batch[i].n || memcmp(x->pairs, b3.batch[i].pairs, x->n * sizeof *x->pairs)))
            same_as_next_epoch = 0;
        size_t widest = (size_t)(x->src_len > x->tgt_len ? x->src_len : x->tgt_len);
        cr_expect(x->n == 1 || x->n * widest <= max_tokens, "batch %zu: %zu x %zu tokens", i, x->n, widest);

        int32_t *src = malloc(x->n * (size_t)x->src_len * sizeof *src);
        int32_t *tin = malloc(x->n * (size_t)x->tgt_len * sizeof *tin);
        int32_t *tout = malloc(x->n * (size_t)x->tgt_len * sizeof *tout);
        cr_assert_eq(clf_batch_fill(c, x, src, tin, tout), CLF_OK);
        {  /* a model's own ids (Marian's: pad the last id, eos 0, the decoder starts with pad) */
            const struct clf_batch_ids marian = {7999, 0, 7999};
            size_t ns = x->n * (size_t)x->src_len, nt = x->n * (size_t)x->tgt_len;
            int32_t *ms = malloc(ns * sizeof *ms), *mi = malloc(nt * sizeof *mi), *mo = malloc(nt * sizeof *mo);
            cr_assert_eq(clf_batch_fill_ids(c, x, &marian, ms, mi, mo), CLF_OK);
            /* real pieces are never 0, 1 or 2: each special maps to the model's */
            for (size_t k = 0; k < ns; k++)
                cr_expect_eq(ms[k], src[k] == CLF_SPM_PAD ? 7999 : src[k] == CLF_SPM_EOS ? 0 : src[k]);
            for (size_t k = 0; k < nt; k++) {
                cr_expect_eq(mi[k], tin[k] == CLF_SPM_PAD || tin[k] == CLF_SPM_BOS ? 7999 : tin[k]);
                cr_expect_eq(mo[k], tout[k] == CLF_SPM_PAD ? 7999 : tout[k] == CLF_SPM_EOS ? 0 : tout[k]);
            }
            free(ms), free(mi), free(mo);
        }
        int longest_src = 0, longest_tgt = 0;
        for (size_t r = 0; r < x->n; r++) {
            size_t p = x->pairs[r];
            cr_assert_lt(p, c->n_pairs);
            cr_expect(!seen[p], "pair %zu twice", p);
            seen[p] = 1;
            int ns = (int)(c->src_off[p + 1] - c->src_off[p]), nt = (int)(c->tgt_off[p + 1] - c->tgt_off[p]);
            if (ns + 1 > longest_src) longest_src = ns + 1;
            if (nt + 1 > longest_tgt) longest_tgt = nt + 1;
            const int32_t *s = src + r * (size_t)x->src_len, *ti = tin + r * (size_t)x->tgt_len,
                          *to = tout + r * (size_t)x->tgt_len;
            cr_expect(!memcmp(s, c->src_ids + c->src_off[p], (size_t)ns * sizeof *s));
            cr_expect_eq(s[ns], CLF_SPM_EOS);
            for (int j = ns + 1; j < x->src_len; j++) cr_expect_eq(s[j], CLF_SPM_PAD);
            cr_expect_eq(ti[0], CLF_SPM_BOS);
            cr_expect(!memcmp(ti + 1, c->tgt_ids + c->tgt_off[p], (size_t)nt * sizeof *ti));
            cr_expect(!memcmp(to, c->tgt_ids + c->tgt_off[p], (size_t)nt * sizeof *to));
            cr_expect_eq(to[nt], CLF_SPM_EOS);
            for (int j = nt + 1; j < x->tgt_len; j++) {
                cr_expect_eq(ti[j], CLF_SPM_PAD);
                cr_expect_eq(to[j], CLF_SPM_PAD);
            }
        }
        cr_expect_eq(x->src_len, longest_src);
        cr_expect_eq(x->tgt_len, longest_tgt);
        free(src);
        free(tin);
        free(tout);
    }
    for (size_t p = 0; p < c->n_pairs; p++) cr_expect(seen[p], "pair %zu in no batch", p);
    cr_expect(!same_as_next_epoch, "another epoch must shuffle differently");
    free(seen);
    clf_batches_free(&b1);
    clf_batches_free(&b2);
    clf_batches_free(&b3);
    clf_corpus_free(c);
    clf_spm_free(spm);
}

/* A model's tokenizer encodes each side with its own model: with Marian's
 * separate vocabularies the target ids are the target side's, not what the
 * source side makes of the same text; no eos (the batch adds it). */
Test(data, encode_with_a_tokenizer_takes_each_side_from_its_model)
{
    clf_tok_t *tok;
    cr_assert_eq(clf_tok_marian_load(&tok, CLF_SOURCE_DIR "/tests/fixtures/marian/relu_separate"), CLF_OK, "%s",
                 clf_ctx_error(NULL));
    struct clf_corpus *c;
    cr_assert_eq(clf_corpus_load(&c, DATA "val.en.gz", DATA "val.de.gz"), CLF_OK);
    struct clf_corpus_summary s;
    cr_assert_eq(clf_corpus_encode_tok(c, tok, 30, &s), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_gt(c->n_pairs, 100);
    cr_expect_gt(s.skipped_long, 0, "max_len 30 should skip some pairs");
    int differ = 0;
    for (size_t i = 0; i < c->n_pairs; i++) {
        const char *text[2] = {c->src.line[c->pair_line[i]], c->tgt.line[c->pair_line[i]]};
        const int32_t *got[2] = {c->src_ids + c->src_off[i], c->tgt_ids + c->tgt_off[i]};
        size_t ngot[2] = {c->src_off[i + 1] - c->src_off[i], c->tgt_off[i + 1] - c->tgt_off[i]};
        for (int side = 0; side < 2; side++) {
            int32_t *want, *other;
            size_t n, no;
            cr_assert_eq(clf_tok_encode(tok, side, text[side], strlen(text[side]), false, &want, &n), CLF_OK);
            cr_assert_eq(clf_tok_encode(tok, !side, text[side], strlen(text[side]), false, &other, &no), CLF_OK);
            cr_assert_eq(ngot[side], n, "pair %zu side %d: %zu ids, want %zu", i, side, ngot[side], n);
            cr_expect(!memcmp(got[side], want, n * sizeof *want), "pair %zu side %d", i, side);
            differ += no != n || memcmp(other, want, n * sizeof *want);
            free(want), free(other);
        }
    }
    cr_expect_gt(differ, 0, "the two sides encode alike: the test cannot tell them apart");
    clf_corpus_free(c);
    clf_tok_free(tok);
}
