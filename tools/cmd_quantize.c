/* cmd_quantize.c: `clformer quantize IN -o OUT --to TYPE`: a float32
 * checkpoint written again with its weights stored in int8, bfloat16 or
 * float16 (clf_ckpt_quantize), its tokenizer beside OUT. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer quantize IN -o OUT --to int8|bfloat16|float16\n"
               "  writes the float32 checkpoint IN again as OUT with the linear layers' weights and the\n"
               "  (tied) embeddings stored in that type (int8: one float32 scale per output, as\n"
               "  CTranslate2 stores them), about 1/4 (int8) or 1/2 of the file; biases, layer norms\n"
               "  and positions stay float32. Its tokenizer's files are put beside OUT.\n"
               "  clformer translate --model OUT reads it; this build still computes in float32: the\n"
               "  weights are turned back into float32 when loaded, so the translations differ from\n"
               "  IN's only by the rounding of the weights.\n");
}

static double mib(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 ? (double)s.st_size / (1024.0 * 1024.0) : 0.0;
}

int clf_cmd_quantize(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *to = NULL;
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "-o", &out, &bad) || cli_opt(argc, argv, &i, "--to", &to, &bad))
            continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] != '-' && !in) {
            in = argv[i];
        } else {
            fprintf(stderr, "clformer quantize: unexpected argument '%s'\n", argv[i]);
            bad = true;
        }
    }
    if (!bad && (!in || !out || !to)) {
        fprintf(stderr, "clformer quantize: want a checkpoint, -o OUT and --to\n");
        bad = true;
    }
    enum clf_compute_type type = CLF_COMPUTE_FLOAT32;
    if (!bad && (!clf_compute_type_parse(to, &type) || type == CLF_COMPUTE_FLOAT32)) {
        fprintf(stderr, "clformer quantize: --to %s: choose int8, bfloat16 or float16\n", to);
        bad = true;
    }
    if (bad) {
        usage(stderr);
        return 2;
    }
    if (cli_make_folder_of("quantize", out))
        return 1;
    clf_status st = clf_ckpt_quantize(in, out, type);
    if (st != CLF_OK)
        return cli_fail(NULL, st, "quantizing");
    printf("%s: %s's weights stored as %s (%.2f MiB, was %.2f MiB); translate computes in the stored type "
           "where the device can (--compute-type)\n",
           out, in, clf_compute_type_str(type), mib(out), mib(in));
    return 0;
}
