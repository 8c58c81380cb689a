/* cmd_import.c: `clformer import DIR -o OUT`: a Marian / OPUS-MT model
 * directory (transformers' MarianMTModel) into a clformer checkpoint,
 * OUT/model.safetensors, with its tokenizer beside it (clf_marian_import). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer import DIR -o OUT\n"
               "  converts a Marian / OPUS-MT model directory as transformers saves it (config.json,\n"
               "  model.safetensors, source.spm, target.spm, vocab.json; e.g. a clone of\n"
               "  Helsinki-NLP/opus-mt-en-de) into OUT/model.safetensors plus its tokenizer files;\n"
               "  then: clformer translate --model OUT/model.safetensors\n");
}

int clf_cmd_import(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL;
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "-o", &out, &bad) || cli_opt(argc, argv, &i, "--out", &out, &bad))
            continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] != '-' && !dir) {
            dir = argv[i];
        } else {
            fprintf(stderr, "clformer import: unexpected argument '%s'\n", argv[i]);
            bad = true;
        }
    }
    if (!bad && (!dir || !out)) {
        fprintf(stderr, "clformer import: want a model directory and -o OUT\n");
        bad = true;
    }
    if (bad) {
        usage(stderr);
        return 2;
    }
    clf_status st = clf_marian_import(dir, out);
    if (st != CLF_OK)
        return cli_fail(NULL, st, "importing");
    printf("%s/model.safetensors: imported from %s\n", out, dir);
    return 0;
}
