/* clformer.c: the `clformer` command, a thin dispatcher over the
 * subcommands in tools/cmd_*.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

/* oneDNN's OpenMP threads (int8, bfloat16 and packed float32 GEMMs) spin
 * after each call by default (GOMP_SPINCOUNT 300000, milliseconds here),
 * taking the cores from the OpenCL CPU runtime's threads that run the
 * next kernels: a beam-4 decoder step on PoCL took 16-17 ms with them
 * spinning and 12 ms with them waiting passively (attention 5.4 -> 2.9 ms).
 * libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in its
 * initialiser, before main; nothing set in this process reaches it (libc's
 * initialiser puts back the environment the process started with after
 * the executable's .preinit_array has run). So when the user set neither,
 * the command sets OMP_WAIT_POLICY=passive and executes itself again, once
 * (13 ms of start-up here); where that fails, or under Valgrind, it goes
 * on, spinning. */
static void omp_passive(char **argv)
{
#ifdef CLF_DNNL
    /* Valgrind's /proc/self/exe is its own tool, which cannot start so */
    const char *preload = getenv("LD_PRELOAD");
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || (preload && strstr(preload, "vgpreload")) ||
        setenv("OMP_WAIT_POLICY", "passive", 1))
        return;
    execv("/proc/self/exe", argv);
#else
    (void)argv;
#endif
}

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    bool device;  /* opens a device: takes --device and --gemm */
    const char *help;
};

static const struct command commands[] = {
    {"devices", clf_cmd_devices, false, "list OpenCL platforms and devices [--json]"},
    {"settings", clf_cmd_settings, false, "the environment variables the library reads, values and docs [--markdown]"},
    {"bench", clf_cmd_bench, true, "benchmarks (peak, gemm, attention, ops, train, translate, serve, all) and their reports"},
    {"bpe", clf_cmd_bpe, false, "subword models: learn, encode, decode (SentencePiece BPE)"},
    {"bleu", clf_cmd_bleu, false, "corpus BLEU and chrF as sacreBLEU: bleu REF... < HYP"},
    {"tune", clf_cmd_tune, true, "tune GEMM and our kernels for this device: [--minutes M] [--show] [--reset]"},
    {"data", clf_cmd_data, false, "check a parallel corpus and show its encoding and batches"},
    {"train", clf_cmd_train, true, "train a Transformer on parallel text (default: bundled Multi30k EN->DE)"},
    {"translate", clf_cmd_translate, true, "translate stdin with a checkpoint (beam search, KV cache)"},
    {"serve", clf_cmd_serve, true, "a translation service with LibreTranslate's HTTP API, batching across requests"},
    {"import", clf_cmd_import, false, "convert a Marian / OPUS-MT model (transformers' directory) into a checkpoint"},
    {"average", clf_cmd_average, true, "average checkpoints element-wise (the paper's last-K averaging)"},
    {"quantize", clf_cmd_quantize, false, "store a checkpoint's weights in int8, bfloat16 or float16 (translate runs that type where it can)"},
    {"compare-attention", clf_cmd_compare_attention, true, "a study, not part of translating: full vs restricted self-attention"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-18s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nThe device is chosen by --device or CLF_DEVICE: an index from `clformer devices`,\n"
               "gpu, cpu, or part of the platform or device name. Every command that opens a\n"
               "device also takes --gemm host|clblast (or CLF_GEMM): GEMMs on the host's BLAS\n"
               "(the default on CPU devices) or on CLBlast (elsewhere). CLF_KERNEL_DIR loads\n"
               "kernels from a folder instead of the copies built in.\n");
}

int main(int argc, char **argv)
{
    omp_passive(argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            int n = argc - 1;
            if (commands[i].device && !cli_gemm_take(&n, argv + 1))
                return 2;
            return commands[i].run(n, argv + 1);
        }
    fprintf(stderr, "clformer: unknown command '%s'; run 'clformer --help' for the list\n", argv[1]);
    return 2;
}
