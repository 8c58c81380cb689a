/* test_bleu.c: BLEU and chrF against sacreBLEU's own numbers.
 *
 * tests/fixtures/bleu/expected.tsv holds, for 22 cases (hypotheses with
 * words dropped, order swapped, lowercased, empty lines, non-ASCII
 * punctuation and spaces, tokenised punctuation, HTML entities, digits and
 * every ASCII punctuation mark, reversed word order (zero 3- and 4-gram
 * matches, so exponential smoothing counts),
 * one line, several references, -lc, -tok none), the unrounded scores and
 * statistics that sacreBLEU computed (make_expected.py, next to them). The
 * `clformer bleu` command must print what the `sacrebleu` command printed. */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "clformer.h"
#include "testutil.h"

#define FIX CLF_SOURCE_DIR "/tests/fixtures/bleu/"
#define CLI CLF_BINARY_DIR "/clformer"

/* Runs a shell command; returns its stdout+stderr (malloc'd) and exit status. */
static char *run(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    cr_assert(p, "popen %s", cmd);
    size_t cap = 4096, n = 0;
    char *out = malloc(cap);
    size_t got;
    while ((got = fread(out + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (cap - n < 2) out = realloc(out, cap *= 2);
    }
    out[n] = '\0';
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

static void read_lines(struct clf_lines *l, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, FIX "%s", name);
    clf_status st = clf_lines_read(l, path);
    cr_assert_eq(st, CLF_OK, "%s: %s", path, clf_ctx_error(NULL));
}

Test(bleu, equals_sacrebleu_on_fixtures)
{
    FILE *f = fopen(FIX "expected.tsv", "r");
    cr_assert(f, "missing " FIX "expected.tsv");
    char row[4096];
    int cases = 0;
    cr_assert(fgets(row, sizeof row, f) && !strncmp(row, "# clformer BLEU fixtures v1", 27),
              "expected.tsv: wrong magic line");
    while (fgets(row, sizeof row, f)) {
        if (row[0] == '#') continue;
        char *field[11];
        int nf = 0;
        for (char *save = NULL, *t = strtok_r(row, "\t\n", &save); t && nf < 11;
             t = strtok_r(NULL, "\t\n", &save))
            field[nf++] = t;
        cr_assert_eq(nf, 11, "expected.tsv: malformed row");
        const char *name = field[0];
        struct clf_bleu_opts o = {field[3][0] == '1',
                                  strcmp(field[4], "none") ? CLF_BLEU_TOK_13A : CLF_BLEU_TOK_NONE};
        double want_bleu = strtod(field[5], NULL), want_chrf = strtod(field[6], NULL);

        struct clf_lines hyp, refs[4];
        const char *const *cols[4];
        int nrefs = 0;
        read_lines(&hyp, field[1]);
        for (char *save = NULL, *t = strtok_r(field[2], ",", &save); t;
             t = strtok_r(NULL, ",", &save)) {
            read_lines(&refs[nrefs], t);
            cr_assert_eq(refs[nrefs].n, hyp.n, "%s: line counts", name);
            cols[nrefs] = (const char *const *)refs[nrefs].line;
            nrefs++;
        }
        struct clf_bleu_score s;
        double chrf;
        cr_assert_eq(clf_bleu_corpus((const char *const *)hyp.line, hyp.n, cols, nrefs, &o, &s),
                     CLF_OK);
        cr_assert_eq(clf_chrf_corpus((const char *const *)hyp.line, hyp.n, cols, nrefs,
                                     o.lowercase, &chrf),
                     CLF_OK);
        cr_expect(fabs(s.score - want_bleu) <= 1e-9 * fmax(1.0, want_bleu),
                  "%s: BLEU %.12f, sacreBLEU %.12f", name, s.score, want_bleu);
        cr_expect(fabs(chrf - want_chrf) <= 1e-9 * fmax(1.0, want_chrf),
                  "%s: chrF %.12f, sacreBLEU %.12f", name, chrf, want_chrf);
        cr_expect_eq(s.hyp_len, atol(field[7]), "%s: hyp_len %ld, want %s", name, s.hyp_len,
                     field[7]);
        cr_expect_eq(s.ref_len, atol(field[8]), "%s: ref_len %ld, want %s", name, s.ref_len,
                     field[8]);
        char got[256];
        snprintf(got, sizeof got, "%ld %ld %ld %ld", s.counts[0], s.counts[1], s.counts[2],
                 s.counts[3]);
        cr_expect_str_eq(got, field[9], "%s: counts", name);
        snprintf(got, sizeof got, "%ld %ld %ld %ld", s.totals[0], s.totals[1], s.totals[2],
                 s.totals[3]);
        cr_expect_str_eq(got, field[10], "%s: totals", name);
        clf_lines_free(&hyp);
        for (int r = 0; r < nrefs; r++) clf_lines_free(&refs[r]);
        cases++;
    }
    fclose(f);
    cr_expect_geq(cases, 10, "only %d cases in expected.tsv", cases);
}

static void expect_cli(const char *args, const char *fixture)
{
    char cmd[2048];
    int status;
    snprintf(cmd, sizeof cmd, "'%s' bleu '%s' %s < '%s' 2>&1", CLI, FIX "ref.en", args,
             FIX "hyp.drop.en");
    char *out = run(cmd, &status);
    char *want = tu_slurp(fixture);
    cr_assert(*want, "missing or empty fixture %s", fixture);
    cr_expect_eq(status, 0, "%s exited %d", cmd, status);
    cr_expect_str_eq(out, want, "%s printed\n%s\nsacrebleu printed\n%s", cmd, out, want);
    free(out);
    free(want);
}

Test(bleu, command_prints_like_sacrebleu)
{
    expect_cli("", FIX "cli_default.txt");
    expect_cli("-f text -m bleu chrf -w 3", FIX "cli_text.txt");
}

Test(bleu, command_score_only)
{
    char cmd[2048];
    int status;
    snprintf(cmd, sizeof cmd, "'%s' bleu -b -w 4 '%s' < '%s'", CLI, FIX "ref.en", FIX "hyp.drop.en");
    char *out = run(cmd, &status);
    cr_expect_eq(status, 0);
    cr_expect_str_eq(out, "51.4337\n");  /* expected.tsv: drop 51.43372186501928 */
    free(out);
}

Test(bleu, command_rejects_line_count_mismatch)
{
    char cmd[2048];
    int status;
    snprintf(cmd, sizeof cmd, "'%s' bleu '%s' < '%s' 2>&1", CLI, FIX "single_ref.en",
             FIX "hyp.drop.en");
    char *out = run(cmd, &status);
    cr_expect_neq(status, 0, "a line count mismatch must fail");
    cr_expect(strstr(out, "single_ref.en has 1 lines but the hypotheses (stdin) have 300"),
              "message: %s", out);
    free(out);
}

Test(bleu, signature)
{
    char sig[256];
    struct clf_bleu_opts o = {false, CLF_BLEU_TOK_13A};
    clf_bleu_signature(&o, 1, sig, sizeof sig);
    cr_expect_str_eq(sig, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" CLF_SACREBLEU_VERSION);
    o.lowercase = true;
    o.tok = CLF_BLEU_TOK_NONE;
    clf_bleu_signature(&o, 2, sig, sizeof sig);
    cr_expect_str_eq(sig, "nrefs:2|case:lc|eff:no|tok:none|smooth:exp|version:" CLF_SACREBLEU_VERSION);
    clf_chrf_signature(false, 1, sig, sizeof sig);
    cr_expect_str_eq(sig, "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:" CLF_SACREBLEU_VERSION);
}
