/* cmd_bleu.c: `clformer bleu REF [REF...] < HYP`, corpus BLEU (and chrF)
 * printed as `sacrebleu REF < HYP` prints it: a JSON block by default, or
 * the one-line text form with -f text, or the score alone with -b.
 * (sacreBLEU's rstrip() of every line happens inside clf_bleu_corpus; chrF
 * drops all whitespace anyway.) One difference: sacrebleu splits stdin lines
 * at tabs into several systems; here a line is one hypothesis, tabs and all. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clformer bleu [options] REF [REF...] < HYP\n"
            "  corpus BLEU as sacreBLEU %s computes it (13a tokens, mixed case, exp smoothing)\n"
            "  -i, --input HYP       read the hypotheses from a file instead of stdin\n"
            "  -m, --metrics M...    bleu and/or chrf (default bleu)\n"
            "  -lc, --lowercase      lowercased BLEU\n"
            "  -tok, --tokenize T    13a (default) or none\n"
            "  --chrf-lowercase      lowercased chrF\n"
            "  -b, --score-only      print the score alone\n"
            "  -w, --width N         decimals (default 1)\n"
            "  -f, --format F        json (default) or text\n"
            "Files may be gzip. Every REF must have as many lines as HYP.\n",
            CLF_SACREBLEU_VERSION);
}

/* Python's repr(float("%.*f")): the rounded score as JSON prints it. */
static void json_number(char *buf, size_t len, double v, int width)
{
    snprintf(buf, len, "%.*f", width, v);
    char *dot = strchr(buf, '.');
    if (!dot) {
        strncat(buf, ".0", len - strlen(buf) - 1);
        return;
    }
    char *end = buf + strlen(buf) - 1;
    while (end > dot + 1 && *end == '0') *end-- = '\0';
}

struct result {
    char line[1024];   /* the text form, the JSON block or the score alone */
};

static void bleu_result(struct result *r, const struct clf_bleu_score *s,
                        const struct clf_bleu_opts *o, int nrefs, int width, bool json,
                        bool score_only)
{
    char sig[256], verbose[256], num[64], sc[64];
    clf_bleu_signature(o, nrefs, sig, sizeof sig);
    clf_bleu_verbose(s, verbose, sizeof verbose);
    snprintf(sc, sizeof sc, "%.*f", width, s->score);
    if (score_only) {
        snprintf(r->line, sizeof r->line, "%s", sc);
    } else if (json) {
        json_number(num, sizeof num, s->score, width);
        snprintf(r->line, sizeof r->line,
                 "{\n \"name\": \"BLEU\",\n \"score\": %s,\n \"signature\": \"%s\",\n"
                 " \"verbose_score\": \"%s\",\n \"nrefs\": \"%d\",\n \"case\": \"%s\",\n"
                 " \"eff\": \"no\",\n \"tok\": \"%s\",\n \"smooth\": \"exp\",\n"
                 " \"version\": \"%s\"\n}",
                 num, sig, verbose, nrefs, o->lowercase ? "lc" : "mixed",
                 o->tok == CLF_BLEU_TOK_NONE ? "none" : "13a", CLF_SACREBLEU_VERSION);
    } else {
        snprintf(r->line, sizeof r->line, "BLEU|%s = %s %s", sig, sc, verbose);
    }
}

static void chrf_result(struct result *r, double score, bool lc, int nrefs, int width, bool json,
                        bool score_only)
{
    char sig[256], num[64], sc[64];
    clf_chrf_signature(lc, nrefs, sig, sizeof sig);
    snprintf(sc, sizeof sc, "%.*f", width, score);
    if (score_only) {
        snprintf(r->line, sizeof r->line, "%s", sc);
    } else if (json) {
        json_number(num, sizeof num, score, width);
        snprintf(r->line, sizeof r->line,
                 "{\n \"name\": \"chrF2\",\n \"score\": %s,\n \"signature\": \"%s\",\n"
                 " \"nrefs\": \"%d\",\n \"case\": \"%s\",\n \"eff\": \"yes\",\n \"nc\": \"6\",\n"
                 " \"nw\": \"0\",\n \"space\": \"no\",\n \"version\": \"%s\"\n}",
                 num, sig, nrefs, lc ? "lc" : "mixed", CLF_SACREBLEU_VERSION);
    } else {
        snprintf(r->line, sizeof r->line, "chrF2|%s = %s", sig, sc);
    }
}

/* sacreBLEU's print_single_results: JSON list, or text aligned on '='. */
static void print_results(struct result *r, int n, bool json)
{
    if (json) {
        if (n == 1) {
            printf("%s\n", r[0].line);
        } else {
            printf("[\n");
            for (int i = 0; i < n; i++) printf("%s%s\n", r[i].line, i + 1 < n ? "," : "");
            printf("]\n");
        }
        return;
    }
    if (n == 1) {
        printf("%s\n", r[0].line);
        return;
    }
    int w = 0, lens[2] = {-1, -1};
    for (int i = 0; i < n; i++) {
        char *eq = strchr(r[i].line, '=');
        if (!eq) {
            printf("%s\n", r[i].line);
            continue;
        }
        lens[i] = (int)(eq - r[i].line) - 1;
        if (lens[i] > w) w = lens[i];
    }
    for (int i = 0; i < n; i++)
        if (lens[i] >= 0) printf("%*.*s%s\n", w, lens[i], r[i].line, r[i].line + lens[i]);
}

int clf_cmd_bleu(int argc, char **argv)
{
    struct clf_bleu_opts o = {false, CLF_BLEU_TOK_13A};
    bool score_only = false, json = true, want_bleu = false, want_chrf = false, chrf_lc = false,
         bad = false;
    int width = 1, rc = 1, nref = 0;
    const char *input = "-", *val;
    const char **ref_paths = calloc((size_t)argc + 1, sizeof *ref_paths);
    struct clf_lines hyp = {0}, *refs = NULL;
    const char ***cols = NULL;
    if (!ref_paths) return 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--score-only")) {
            score_only = true;
        } else if (!strcmp(a, "-lc") || !strcmp(a, "--lowercase")) {
            o.lowercase = true;
        } else if (!strcmp(a, "--chrf-lowercase")) {
            chrf_lc = true;
        } else if (cli_opt(argc, argv, &i, "-w", &val, &bad) ||
                   cli_opt(argc, argv, &i, "--width", &val, &bad)) {
            char *end;
            long w = strtol(val, &end, 10);
            if (*end || w < 0 || w > 16) {
                fprintf(stderr, "clformer bleu: bad width '%s'\n", val);
                rc = 2;
                goto done;
            }
            width = (int)w;
        } else if (cli_opt(argc, argv, &i, "-tok", &val, &bad) ||
                   cli_opt(argc, argv, &i, "--tokenize", &val, &bad)) {
            if (!strcmp(val, "13a")) {
                o.tok = CLF_BLEU_TOK_13A;
            } else if (!strcmp(val, "none")) {
                o.tok = CLF_BLEU_TOK_NONE;
            } else {
                fprintf(stderr, "clformer bleu: tokenizer '%s' not supported (13a, none)\n", val);
                rc = 2;
                goto done;
            }
        } else if (cli_opt(argc, argv, &i, "-f", &val, &bad) ||
                   cli_opt(argc, argv, &i, "--format", &val, &bad)) {
            if (strcmp(val, "json") && strcmp(val, "text")) {
                fprintf(stderr, "clformer bleu: format '%s' not supported (json, text)\n", val);
                rc = 2;
                goto done;
            }
            json = !strcmp(val, "json");
        } else if (cli_opt(argc, argv, &i, "-i", &val, &bad) ||
                   cli_opt(argc, argv, &i, "--input", &val, &bad)) {
            input = val;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--metrics")) {
            int got = 0;
            while (i + 1 < argc && (!strcmp(argv[i + 1], "bleu") || !strcmp(argv[i + 1], "chrf"))) {
                if (!strcmp(argv[++i], "bleu"))
                    want_bleu = true;
                else
                    want_chrf = true;
                got++;
            }
            if (!got) {
                fprintf(stderr, "clformer bleu: -m needs bleu and/or chrf\n");
                rc = 2;
                goto done;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "clformer bleu: unknown option '%s'\n", a);
            usage(stderr);
            rc = 2;
            goto done;
        } else {
            ref_paths[nref++] = a;
        }
        if (bad) {
            rc = 2;
            goto done;
        }
    }
    if (nref == 0) {
        usage(stderr);
        rc = 2;
        goto done;
    }
    if (!want_bleu && !want_chrf) want_bleu = true;

    clf_status st;
    refs = calloc((size_t)nref, sizeof *refs);
    cols = calloc((size_t)nref, sizeof *cols);
    if (!refs || !cols) goto done;
    for (int r = 0; r < nref; r++) {
        if ((st = clf_lines_read(&refs[r], ref_paths[r])) != CLF_OK) {
            rc = cli_fail(NULL, st, "reading a reference");
            goto done;
        }
    }
    if ((st = clf_lines_read(&hyp, input)) != CLF_OK) {
        rc = cli_fail(NULL, st, "reading the hypotheses");
        goto done;
    }
    for (int r = 0; r < nref; r++) {
        if (refs[r].n != hyp.n) {
            fprintf(stderr,
                    "clformer bleu: %s has %zu lines but the hypotheses (%s) have %zu\n",
                    ref_paths[r], refs[r].n, strcmp(input, "-") ? input : "stdin", hyp.n);
            goto done;
        }
        cols[r] = (const char **)refs[r].line;
    }

    struct result res[2];
    int nres = 0;
    if (want_bleu) {
        struct clf_bleu_score s;
        st = clf_bleu_corpus((const char *const *)hyp.line, hyp.n,
                             (const char *const *const *)cols, nref, &o, &s);
        if (st != CLF_OK) {
            rc = cli_fail(NULL, st, "BLEU");
            goto done;
        }
        bleu_result(&res[nres++], &s, &o, nref, width, json, score_only);
    }
    if (want_chrf) {
        double score;
        st = clf_chrf_corpus((const char *const *)hyp.line, hyp.n,
                             (const char *const *const *)cols, nref, chrf_lc, &score);
        if (st != CLF_OK) {
            rc = cli_fail(NULL, st, "chrF");
            goto done;
        }
        chrf_result(&res[nres++], score, chrf_lc, nref, width, json, score_only);
    }
    print_results(res, nres, json);
    rc = 0;
done:
    clf_lines_free(&hyp);
    if (refs)
        for (int r = 0; r < nref; r++) clf_lines_free(&refs[r]);
    free(refs);
    free(cols);
    free(ref_paths);
    return rc;
}
