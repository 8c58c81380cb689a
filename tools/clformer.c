/* clformer.c: the `clformer` command, a thin dispatcher over the
 * subcommands in tools/cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};

static const struct command commands[] = {
    {"devices", clf_cmd_devices, "list OpenCL platforms and devices [--json]"},
    {"bench", clf_cmd_bench, "benchmarks: gemm, ops, attention, train, all, compare [--json]"},
    {"bpe", clf_cmd_bpe, "subword models: learn, encode, decode (SentencePiece BPE)"},
    {"bleu", clf_cmd_bleu, "corpus BLEU and chrF as sacreBLEU: bleu REF... < HYP"},
    {"tune", clf_cmd_tune, "tune GEMM and our kernels for this device: [--minutes M] [--show] [--reset]"},
    {"data", clf_cmd_data, "check a parallel corpus and show its encoding and batches"},
    {"train", clf_cmd_train, "train a Transformer on parallel text (default: bundled Multi30k EN->DE)"},
    {"translate", clf_cmd_translate, "translate stdin with a checkpoint (beam search, KV cache)"},
    {"average", clf_cmd_average, "average checkpoints element-wise (the paper's last-K averaging)"},
    {"compare-attention", clf_cmd_compare_attention, "full vs restricted self-attention: cost, reach, quality"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-18s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nThe device is chosen by --device or CLF_DEVICE: an index from `clformer devices`,\n"
               "gpu, cpu, or part of the platform or device name. CLF_KERNEL_DIR loads kernels\n"
               "from a folder instead of the copies built in.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "clformer: unknown command '%s'; run 'clformer --help' for the list\n", argv[1]);
    return 2;
}
