/* cmd_data.c: `clformer data SRC TGT [--model M] [--max-len N] [--max-tokens N]
 * [--preset P]`: loads a parallel corpus as training would, refusing bad
 * input with the file and line, and prints what encoding and batching make
 * of it (and the activation memory a preset's model would plan for those
 * batches). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer data SRC TGT [--model MODEL] [--max-len N] [--max-tokens N] [--seed S]\n"
               "                    [--preset NAME]\n"
               "  checks a parallel corpus (plain or gzip): equal line counts, valid UTF-8;\n"
               "  with a model also encodes it (pairs with an empty side or more than\n"
               "  --max-len subwords, default 100, are skipped) and cuts batches of\n"
               "  --max-tokens padded tokens (default 4096); with --preset, the device\n"
               "  memory that preset's activations take for the largest of those batches\n");
}

int clf_cmd_data(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *model = NULL, *preset = NULL, *val;
    long max_len = 100, max_tokens = 4096;
    unsigned long long seed = 1;
    int npaths = 0, rc = 1;
    bool bad = false;
    for (int i = 1; i < argc; i++) {
        if (cli_opt(argc, argv, &i, "--model", &val, &bad)) {
            model = val;
        } else if (cli_opt(argc, argv, &i, "--max-len", &val, &bad)) {
            max_len = strtol(val, NULL, 10);
        } else if (cli_opt(argc, argv, &i, "--max-tokens", &val, &bad)) {
            max_tokens = strtol(val, NULL, 10);
        } else if (cli_opt(argc, argv, &i, "--preset", &val, &bad)) {
            preset = val;
        } else if (cli_opt(argc, argv, &i, "--seed", &val, &bad)) {
            seed = strtoull(val, NULL, 10);
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if ((argv[i][0] != '-' || !argv[i][1]) && npaths < 2) {
            paths[npaths++] = argv[i];
        } else {
            fprintf(stderr, "clformer data: unexpected argument '%s'\n", argv[i]);
            bad = true;
        }
        if (bad) return 2;
    }
    if (npaths != 2 || max_len < 0 || max_tokens < 1) {
        usage(stderr);
        return 2;
    }
    struct clf_corpus *c = NULL;
    clf_spm_t *spm = NULL;
    struct clf_batches b = {0};
    clf_status st;
    if ((st = clf_corpus_load(&c, paths[0], paths[1])) != CLF_OK) {
        rc = cli_fail(NULL, st, "data");
        goto done;
    }
    printf("%zu line pairs, valid UTF-8\n", c->src.n);
    if (model) {
        struct clf_corpus_summary s;
        if ((st = clf_spm_load(&spm, model)) != CLF_OK ||
            (st = clf_corpus_encode(c, spm, (int)max_len, &s)) != CLF_OK) {
            rc = cli_fail(NULL, st, "data");
            goto done;
        }
        printf("kept %zu pairs; skipped %zu with an empty side, %zu longer than %ld subwords\n",
               s.kept, s.skipped_empty, s.skipped_long, max_len);
        if (s.kept == 0) {
            fprintf(stderr, "clformer data: no usable pairs in %s / %s (every pair has an empty side or more than "
                            "--max-len %ld subwords)\n", paths[0], paths[1], max_len);
            goto done;
        }
        if ((st = clf_batches_make(c, (size_t)max_tokens, seed, 0, &b)) != CLF_OK) {
            rc = cli_fail(NULL, st, "data");
            goto done;
        }
        printf("subwords: source %zu (longest %d), target %zu (longest %d)\n", s.src_tokens,
               s.max_src_len, s.tgt_tokens, s.max_tgt_len);
        size_t padded = 0;
        for (size_t i = 0; i < b.n; i++)
            padded += b.batch[i].n * (size_t)(b.batch[i].src_len + b.batch[i].tgt_len);
        size_t real = s.src_tokens + s.tgt_tokens + 2 * s.kept;
        printf("%zu batches of at most %ld tokens, %.1f%% padding\n", b.n, max_tokens,
               padded ? 100.0 * (double)(padded - real) / (double)padded : 0.0);
        if (preset) {
            struct clf_model_config mc;
            if ((st = clf_model_config_preset(&mc, preset)) != CLF_OK) {
                rc = cli_fail(NULL, st, "data");
                goto done;
            }
            mc.vocab = clf_spm_vocab_size(spm);
            struct clf_model_shape max = {0, 0, 0};
            for (size_t i = 0; i < b.n; i++)
                clf_model_shape_add(&max, b.batch[i].n, (size_t)b.batch[i].src_len, (size_t)b.batch[i].tgt_len);
            printf("preset %s (vocab %d): activations for the largest batch (%zu sentences, %zu source and %zu "
                   "target rows) take %.1f MiB, the logits %.1f MiB of it\n",
                   preset, mc.vocab, max.batch, max.src_rows, max.tgt_rows,
                   (double)clf_model_config_activation_bytes(&mc, &max) / (1024.0 * 1024.0),
                   (double)max.tgt_rows * (double)mc.vocab * sizeof(float) / (1024.0 * 1024.0));
        }
    }
    rc = 0;
done:
    clf_batches_free(&b);
    clf_spm_free(spm);
    clf_corpus_free(c);
    return rc;
}
