/* cmd_bpe.c: `clformer bpe learn|encode|decode`, SentencePiece BPE models.
 *   learn --vocab N -o MODEL FILE...      one joint model of all FILEs (plain or gzip)
 *   encode --model MODEL [--pieces]       stdin lines -> ids (or pieces), one line each
 *   decode --model MODEL [--pieces]       ids (or pieces) -> text */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clformer bpe learn --vocab N -o MODEL [--threads T] FILE...\n"
            "       clformer bpe encode --model MODEL [--pieces] < TEXT > IDS\n"
            "       clformer bpe decode --model MODEL [--pieces] < IDS > TEXT\n"
            "Models are SentencePiece BPE .model files with pad=%d bos=%d eos=%d unk=%d\n"
            "and byte fallback; inputs may be gzip.\n",
            CLF_SPM_PAD, CLF_SPM_BOS, CLF_SPM_EOS, CLF_SPM_UNK);
}

static int learn(int argc, char **argv)
{
    struct clf_spm_learn_opts o;
    clf_spm_learn_defaults(&o);
    const char *out = NULL, *val;
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0, rc = 2;
    bool bad = false;
    if (!files) return 1;
    for (int i = 1; i < argc; i++) {
        if (cli_opt(argc, argv, &i, "--vocab", &val, &bad)) {
            o.vocab_size = atoi(val);
        } else if (cli_opt(argc, argv, &i, "--threads", &val, &bad)) {
            o.threads = atoi(val);
        } else if (cli_opt(argc, argv, &i, "-o", &val, &bad) ||
                   cli_opt(argc, argv, &i, "--output", &val, &bad)) {
            out = val;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "clformer bpe learn: unknown option '%s'\n", argv[i]);
            bad = true;
        } else {
            files[nfiles++] = argv[i];
        }
        if (bad) goto done;
    }
    if (!out || nfiles == 0) {
        usage(stderr);
        goto done;
    }
    double t0 = clf_now();
    clf_status st = clf_spm_learn(files, nfiles, out, &o);
    double seconds = clf_now() - t0;
    if (st != CLF_OK) {
        rc = cli_fail(NULL, st, "bpe learn");
        goto done;
    }
    clf_spm_t *spm;
    if ((st = clf_spm_load(&spm, out)) != CLF_OK) {
        rc = cli_fail(NULL, st, "bpe learn");
        goto done;
    }
    fprintf(stderr, "clformer bpe: %s: %d pieces, hash %016llx, learned in %.1f s\n", out,
            clf_spm_vocab_size(spm), (unsigned long long)clf_spm_hash(spm),
            seconds);
    clf_spm_free(spm);
    rc = 0;
done:
    free(files);
    return rc;
}

/* Parses a line of decimal ids into *ids (grown as needed). */
static int parse_ids(const char *s, int32_t **ids, size_t *cap, size_t *n)
{
    *n = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) return 1;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX || (*end && *end != ' ' && *end != '\t'))
            return 0;
        if (*n == *cap) {
            size_t want = *cap ? *cap * 2 : 256;
            int32_t *p = realloc(*ids, want * sizeof *p);
            if (!p) return 0;
            *ids = p;
            *cap = want;
        }
        (*ids)[(*n)++] = (int32_t)v;
        s = end;
    }
}

static int transform(int argc, char **argv, bool encode)
{
    const char *model = NULL, *val;
    bool pieces = false, bad = false;
    const char *what = encode ? "bpe encode" : "bpe decode";
    for (int i = 1; i < argc; i++) {
        if (cli_opt(argc, argv, &i, "--model", &val, &bad) ||
            cli_opt(argc, argv, &i, "-m", &val, &bad)) {
            model = val;
        } else if (!strcmp(argv[i], "--pieces")) {
            pieces = true;
        } else {
            fprintf(stderr, "clformer %s: unexpected argument '%s'\n", what, argv[i]);
            bad = true;
        }
        if (bad) return 2;
    }
    if (!model) {
        usage(stderr);
        return 2;
    }
    clf_spm_t *spm = NULL;
    struct clf_lines in = {0};
    int32_t *ids = NULL;
    size_t cap = 0, n;
    int rc = 1;
    clf_status st;
    if ((st = clf_spm_load(&spm, model)) != CLF_OK) {
        rc = cli_fail(NULL, st, what);
        goto done;
    }
    if ((st = clf_lines_read(&in, "-")) != CLF_OK) {
        rc = cli_fail(NULL, st, what);
        goto done;
    }
    for (size_t l = 0; l < in.n; l++) {
        const char *line = in.line[l];
        char *text = NULL;
        if (encode && pieces) {
            st = clf_spm_encode_pieces(spm, line, strlen(line), &text);
        } else if (encode) {
            free(ids);
            ids = NULL;
            st = clf_spm_encode(spm, line, strlen(line), &ids, &n);
            if (st == CLF_OK)
                for (size_t k = 0; k < n; k++) printf(k ? " %d" : "%d", (int)ids[k]);
        } else if (pieces) {
            st = clf_spm_decode_pieces(spm, line, &text);
        } else {
            if (!parse_ids(line, &ids, &cap, &n)) {
                fprintf(stderr, "clformer bpe decode: <stdin>:%zu: not a list of ids\n", l + 1);
                goto done;
            }
            st = clf_spm_decode(spm, ids, n, &text);
        }
        if (st != CLF_OK) {
            rc = cli_fail(NULL, st, what);
            goto done;
        }
        if (text) fputs(text, stdout);
        putchar('\n');
        free(text);
    }
    rc = fflush(stdout) ? 1 : 0;
done:
    free(ids);
    clf_lines_free(&in);
    clf_spm_free(spm);
    return rc;
}

int clf_cmd_bpe(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "learn")) return learn(argc - 1, argv + 1);
    if (!strcmp(argv[1], "encode")) return transform(argc - 1, argv + 1, true);
    if (!strcmp(argv[1], "decode")) return transform(argc - 1, argv + 1, false);
    fprintf(stderr, "clformer bpe: unknown action '%s' (learn, encode, decode)\n", argv[1]);
    return 2;
}
