/* cmd_translate.c: `clformer translate --model CKPT`: source lines on
 * stdin, detokenised translations on stdout, by batched beam search with
 * incremental decoding (or greedy with --beam 1 --greedy). */
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "textgen.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer translate --model CKPT [--bpe MODEL] [--beam N] [--alpha A] [--nbest N]\n"
               "                          [--greedy] [--max-extra N] [--min-length N] [--batch N] [--max-tokens N]\n"
               "                          [--input FILE]"
               "                          [--device D] [--quiet]\n"
               "  reads source lines (stdin or --input), writes translations to stdout; --nbest N writes\n"
               "  N lines per source as 'index<TAB>score<TAB>text'. The BPE model defaults to the one\n"
               "  beside the checkpoint. --min-length N: no EOS before N subwords (0 allows an empty\n"
               "  translation). Sources are sorted by length and cut into batches of at most --batch\n"
               "  sentences and, with --max-tokens N, N padded source tokens. Defaults: beam 4, alpha 0.6,\n"
               "  max-extra 50, min-length 1, batch 32, max-tokens 0 (no token budget).\n");
}

struct progress_arg {
    double t0;
    bool show;
};

static void progress(size_t done, size_t n, void *arg)
{
    struct progress_arg *p = arg;
    if (!p->show)
        return;
    double dt = clf_now() - p->t0;
    fprintf(stderr, "\rtranslated %zu/%zu sentences, %.1f sentences/s", done, n, done / (dt > 0 ? dt : 1));
}

int clf_cmd_translate(int argc, char **argv)
{
    const char *model = NULL, *bpe = NULL, *device = NULL, *input = "-";
    struct clf_translate_opts o = clf_translate_opts_default();
    long batch = 32, max_tokens = 0;
    bool quiet = false, bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "--model", &model, &bad) || cli_opt(argc, argv, &i, "--bpe", &bpe, &bad) ||
            cli_opt(argc, argv, &i, "--device", &device, &bad) || cli_opt(argc, argv, &i, "--input", &input, &bad))
            continue;
#define NUM(name, field, lo, hi, integer)                                              \
        if (cli_opt_number(argc, argv, &i, name, lo, hi, integer, &x, &bad)) {         \
            field = x;                                                                 \
            continue;                                                                  \
        }
        double x = 0;
        NUM("--beam", o.beam, INT_MIN, INT_MAX, true) NUM("--alpha", o.alpha, -1e30, 1e30, false)
        NUM("--nbest", o.nbest, INT_MIN, INT_MAX, true) NUM("--max-extra", o.max_extra, INT_MIN, INT_MAX, true)
        NUM("--min-length", o.min_length, INT_MIN, INT_MAX, true) NUM("--batch", batch, -1e15, 1e15, true)
        NUM("--max-tokens", max_tokens, -1e15, 1e15, true)
#undef NUM
        if (!strcmp(argv[i], "--greedy")) o.greedy = true;
        else if (!strcmp(argv[i], "--quiet")) quiet = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else { fprintf(stderr, "clformer translate: unknown option '%s'\n", argv[i]); bad = true; }
    }
    if (!bad && !model) {
        fprintf(stderr, "clformer translate: --model CKPT is required\n");
        bad = true;
    }
    if (!bad && (o.beam < 1 || o.beam > CLF_TRANSLATE_BEAM_MAX || o.nbest < 1 || o.nbest > o.beam || batch < 1 ||
                 max_tokens < 0 || o.max_extra < 1 || o.min_length < 0)) {
        fprintf(stderr, "clformer translate: want 1 <= --beam <= %d, 1 <= --nbest <= --beam, --batch >= 1, "
                        "--max-tokens >= 0, --max-extra >= 1, --min-length >= 0\n", CLF_TRANSLATE_BEAM_MAX);
        bad = true;
    }
    if (bad) {
        usage(stderr);
        return 2;
    }
    if (o.greedy)
        o.nbest = 1;

    int rc = 1;
    clf_ctx_t *ctx = NULL;
    clf_model_t *m = NULL;
    clf_spm_t *spm = NULL;
    struct clf_lines lines = {0};
    int32_t **src = NULL;
    size_t *len = NULL;
    char **out = NULL;
    float *scores = NULL;
    char bpe_path[4200];
    clf_status st;
    if (!bpe) {  /* the subword model written beside the checkpoint by `clformer train` */
        char dir[4096], name[256] = "bpe.model";
        snprintf(dir, sizeof dir, "%s", model);
        clf_checkpoint_meta(model, "bpe", name, sizeof name);
        snprintf(bpe_path, sizeof bpe_path, "%s/%s", dirname(dir), name);
        bpe = bpe_path;
    }
    if ((st = clf_spm_load(&spm, bpe)) != CLF_OK) {
        cli_fail(NULL, st, "loading the subword model (--bpe)");
        goto done;
    }
    if ((st = clf_lines_read(&lines, input)) != CLF_OK) {
        cli_fail(NULL, st, "reading the input");
        goto done;
    }
    if (lines.n == 0) {
        fprintf(stderr, "clformer translate: the input (%s) is empty: nothing to translate\n",
                strcmp(input, "-") ? input : "stdin");
        goto done;
    }
    if (!(ctx = cli_open(device)))
        goto done;
    if ((st = clf_model_load(ctx, &m, model)) != CLF_OK) {
        cli_fail(ctx, st, "loading the model");
        goto done;
    }
    if (textgen_check_vocab(model, spm, clf_model_config(m)->vocab, bpe))
        goto done;
    const size_t nb = (size_t)o.nbest;
    src = calloc(lines.n, sizeof *src);
    len = calloc(lines.n, sizeof *len);
    out = calloc(lines.n * nb, sizeof *out);
    scores = calloc(lines.n * nb, sizeof *scores);
    if (!src || !len || !out || !scores) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    const size_t limit = (size_t)clf_model_config(m)->max_len - 1;
    for (size_t i = 0; i < lines.n; i++) {
        if ((st = clf_spm_encode(spm, lines.line[i], strlen(lines.line[i]), &src[i], &len[i])) != CLF_OK) {
            char what[64];
            snprintf(what, sizeof what, "encoding line %zu", i + 1);
            cli_fail(NULL, st, what);
            goto done;
        }
        if (len[i] > limit) {
            fprintf(stderr, "clformer translate: line %zu has %zu subwords; the model takes at most %zu: truncated\n",
                    i + 1, len[i], limit);
            len[i] = limit;
        }
    }
    struct progress_arg pa = {clf_now(), !quiet && isatty(2)};  /* a progress line only on a terminal */
    if (textgen_translate(ctx, m, spm, (const int32_t *const *)src, len, lines.n, &o,
                          (struct textgen_batching){(size_t)batch, (size_t)max_tokens}, out, scores,
                          progress, &pa))
        goto done;
    double dt = clf_now() - pa.t0;
    for (size_t i = 0; i < lines.n; i++)
        for (size_t k = 0; k < nb; k++) {
            if (nb > 1)
                printf("%zu\t%.4f\t%s\n", i, scores[i * nb + k], out[i * nb + k] ? out[i * nb + k] : "");
            else
                printf("%s\n", out[i] ? out[i] : "");
        }
    fflush(stdout);
    if (!quiet)
        fprintf(stderr, "%stranslated %zu sentences in %.1f s: %.2f sentences/s (%s, beam %d, %s)\n",
                pa.show ? "\r" : "", lines.n, dt,
                lines.n / dt, o.greedy ? "greedy" : "beam search", o.greedy ? 1 : o.beam,
                clf_ctx_device(ctx)->device_name);
    rc = 0;
done:
    if (src)
        for (size_t i = 0; i < lines.n; i++)
            free(src[i]);
    if (out)
        for (size_t i = 0; i < lines.n * (size_t)o.nbest; i++)
            free(out[i]);
    free(src), free(len), free(out), free(scores);
    clf_lines_free(&lines);
    clf_model_free(m);
    clf_ctx_free(ctx);
    clf_spm_free(spm);
    return rc;
}
