/* cmd_translate.c: `clformer translate --model CKPT`: source lines on
 * stdin, detokenised translations on stdout, by batched beam search with
 * incremental decoding (or greedy with --beam 1 --greedy), through the
 * library's translator (clformer_translate.h); here: the flags, the
 * input's lines, the truncation notices, progress and printing. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer translate --model CKPT [--bpe MODEL] [--beam N] [--alpha A] [--nbest N]\n"
               "                          [--greedy] [--max-extra N] [--max-length N] [--min-length N]\n"
               "                          [--length-penalty paper|hf] [--batch N] [--max-tokens N]\n"
               "                          [--batching rounds|continuous] [--input FILE] [--device D] [--compute-type T] [--quiet]\n"
               "  reads source lines (stdin or --input), writes translations to stdout; --nbest N writes\n"
               "  N lines per source as 'index<TAB>score<TAB>text'. The tokenizer is the checkpoint's: its\n"
               "  BPE model beside it (or --bpe), or an imported model's (`clformer import`; --bpe DIR\n"
               "  names another directory). --min-length N: no EOS before N subwords (0 allows an empty\n"
               "  translation). --length-penalty: paper ((5+|Y|)/6)^alpha, or hf (|Y|^alpha and the rest\n"
               "  of transformers' generate() rules). --max-length N: transformers' max_length, at most\n"
               "  N-1 subwords with EOS whatever the source (0: source length + --max-extra). Sources are\n"
               "  sorted by length and, with --batching continuous, join one decoding as others finish\n"
               "  (at most --batch sentences at once and, with --max-tokens N, N source tokens); with\n"
               "  --batching rounds, cut into batches of at most that, each decoded to its end.\n"
               "  The same translations either way. Defaults: beam 4, alpha 0.6, paper, max-extra 50,\n"
               "  max-length 0, min-length 1, batch 32, max-tokens 0 (no token budget), batching continuous; an imported\n"
               "  model's own instead: its num_beams (1: greedy), length_penalty, hf, max_length and\n"
               "  min_length. --compute-type: CTranslate2's names: default (the checkpoint's stored type, or\n"
               "  float32 where the device cannot run it), auto (the fastest the device runs), float32,\n"
               "  int8 or bfloat16 (CPU devices, with oneDNN), float16 (devices with cl_khr_fp16).\n");
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

/* The options a user gave (NAN / NULL: not given), over the defaults. */
struct given {
    double beam, alpha, nbest, max_extra, max_length, min_length;
    const char *penalty;
    bool greedy;
};

static void apply(const struct given *g, struct clf_translate_opts *o)
{
    if (!isnan(g->beam)) o->beam = (int)g->beam, o->greedy = false;
    if (!isnan(g->alpha)) o->alpha = (float)g->alpha;
    if (!isnan(g->nbest)) o->nbest = (int)g->nbest;
    if (!isnan(g->max_extra)) o->max_extra = (int)g->max_extra;
    if (!isnan(g->max_length)) o->max_output = g->max_length != 0 ? (int)g->max_length - 1 : 0;
    if (!isnan(g->min_length)) o->min_length = (int)g->min_length;
    if (g->penalty) o->length_penalty = strcmp(g->penalty, "hf") ? CLF_LENGTH_PENALTY_PAPER : CLF_LENGTH_PENALTY_HF;
    if (g->greedy) o->greedy = true;
}

int clf_cmd_translate(int argc, char **argv)
{
    const char *model = NULL, *bpe = NULL, *device = NULL, *input = "-", *compute = NULL;
    struct clf_translate_opts o = clf_translate_opts_default();
    struct given g = {NAN, NAN, NAN, NAN, NAN, NAN, NULL, false};
    long batch = 32, max_tokens = 0;
    const char *batching = NULL;
    bool quiet = false, bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "--model", &model, &bad) || cli_opt(argc, argv, &i, "--bpe", &bpe, &bad) ||
            cli_opt(argc, argv, &i, "--device", &device, &bad) || cli_opt(argc, argv, &i, "--input", &input, &bad) ||
            cli_opt(argc, argv, &i, "--length-penalty", &g.penalty, &bad) ||
            cli_opt(argc, argv, &i, "--compute-type", &compute, &bad))
            continue;
#define NUM(name, field, lo, hi, integer)                                              \
        if (cli_opt_number(argc, argv, &i, name, lo, hi, integer, &x, &bad)) {         \
            field = x;                                                                 \
            continue;                                                                  \
        }
        double x = 0;
        NUM("--beam", g.beam, INT_MIN, INT_MAX, true) NUM("--alpha", g.alpha, -1e30, 1e30, false)
        NUM("--nbest", g.nbest, INT_MIN, INT_MAX, true) NUM("--max-extra", g.max_extra, INT_MIN, INT_MAX, true)
        NUM("--max-length", g.max_length, INT_MIN, INT_MAX, true)
        NUM("--min-length", g.min_length, INT_MIN, INT_MAX, true) NUM("--batch", batch, -1e15, 1e15, true)
        NUM("--max-tokens", max_tokens, -1e15, 1e15, true)
#undef NUM
        if (cli_opt(argc, argv, &i, "--batching", &batching, &bad)) {
            if (strcmp(batching, "rounds") && strcmp(batching, "continuous")) {
                fprintf(stderr, "clformer translate: --batching %s: want rounds or continuous\n", batching);
                bad = true;
            }
            continue;
        }
        if (!strcmp(argv[i], "--greedy")) g.greedy = true;
        else if (!strcmp(argv[i], "--quiet")) quiet = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else { fprintf(stderr, "clformer translate: unknown option '%s'\n", argv[i]); bad = true; }
    }
    if (!bad && !model) {
        fprintf(stderr, "clformer translate: --model CKPT is required\n");
        bad = true;
    }
    if (!bad && g.penalty && strcmp(g.penalty, "hf") && strcmp(g.penalty, "paper")) {
        fprintf(stderr, "clformer translate: --length-penalty wants paper or hf, not '%s'\n", g.penalty);
        bad = true;
    }
    enum clf_compute_type ct;
    if (!bad && compute && strcmp(compute, "default") && strcmp(compute, "auto") && !clf_compute_type_parse(compute, &ct)) {
        fprintf(stderr, "clformer translate: --compute-type %s: choose default, auto, float32, int8, bfloat16 or "
                        "float16\n", compute);
        bad = true;
    }
    clf_status st;
    if (!bad && (st = clf_translator_defaults(model, &o)) != CLF_OK)  /* an imported model's own; ours have none */
        return cli_fail(NULL, st, "reading the checkpoint");
    if (!bad)
        apply(&g, &o);
    if (!bad && (o.beam < 1 || o.beam > CLF_TRANSLATE_BEAM_MAX || o.nbest < 1 || o.nbest > o.beam || batch < 1 ||
                 max_tokens < 0 || o.max_extra < 1 || o.min_length < 0 || o.max_output < 0 || g.max_length == 1)) {
        fprintf(stderr, "clformer translate: want 1 <= --beam <= %d, 1 <= --nbest <= --beam, --batch >= 1, "
                        "--max-tokens >= 0, --max-extra >= 1, --max-length 0 or >= 2, --min-length >= 0\n",
                CLF_TRANSLATE_BEAM_MAX);
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
    clf_translator_t *t = NULL;
    struct clf_lines lines = {0};
    int32_t **src = NULL;
    size_t *len = NULL;
    char **out = NULL;
    float *scores = NULL;
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
    if ((st = clf_translator_init(ctx, model, bpe, &t)) != CLF_OK) {
        cli_fail(ctx, st, "loading the model");
        goto done;
    }
    if ((st = clf_translator_compute_set(t, compute)) != CLF_OK) {
        cli_fail(ctx, st, "--compute-type");
        goto done;
    }
    if (!quiet && compute && !strcmp(compute, "auto")) {
        char why[800];
        clf_compute_auto(clf_ctx_device(ctx), why, sizeof why);
        fprintf(stderr, "clformer translate: --compute-type auto: %s\n", why);
    }
    const size_t nb = (size_t)o.nbest;
    src = calloc(lines.n, sizeof *src);
    len = calloc(lines.n, sizeof *len);
    out = calloc(lines.n * nb, sizeof *out);
    scores = calloc(lines.n * nb, sizeof *scores);
    if (!src || !len || !out || !scores) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    const size_t limit = clf_translator_max_source(t);
    for (size_t i = 0; i < lines.n; i++) {
        if ((st = clf_translator_encode(t, lines.line[i], &src[i], &len[i])) != CLF_OK) {
            char what[64];
            snprintf(what, sizeof what, "encoding line %zu", i + 1);
            cli_fail(ctx, st, what);
            goto done;
        }
        if (len[i] > limit) {
            fprintf(stderr, "clformer translate: line %zu has %zu subwords; the model takes at most %zu: truncated\n",
                    i + 1, len[i], limit);
            len[i] = limit;
        }
    }
    struct progress_arg pa = {clf_now(), !quiet && isatty(2)};  /* a progress line only on a terminal */
    const struct clf_batching b = {.sentences = (size_t)batch, .tokens = (size_t)max_tokens,
                                   .continuous = !batching || !strcmp(batching, "continuous")};
    if ((st = clf_translator_translate_ids(t, (const int32_t *const *)src, len, lines.n, &o, b, out, scores, progress,
                                           &pa)) != CLF_OK) {
        cli_fail_memory(ctx, st, "translating", "--batch, --max-tokens");
        goto done;
    }
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
        fprintf(stderr, "%stranslated %zu sentences in %.1f s: %.2f sentences/s (%s, beam %d, %s%s%s)\n",
                pa.show ? "\r" : "", lines.n, dt,
                lines.n / dt, o.greedy ? "greedy" : "beam search", o.greedy ? 1 : o.beam,
                clf_ctx_device(ctx)->device_name, clf_translator_compute(t) != CLF_COMPUTE_FLOAT32 ? ", " : "",
                clf_translator_compute(t) != CLF_COMPUTE_FLOAT32 ? clf_compute_type_name(clf_translator_compute(t)) : "");
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
    clf_translator_free(t);
    clf_ctx_free(ctx);
    return rc;
}
