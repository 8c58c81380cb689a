/* cmd_average.c: `clformer average`: the element-wise mean of several
 * checkpoints of one model, as the paper averaged its last checkpoints.
 * The result's step is the newest checkpoint's, and it carries that one's
 * metadata on (clf_ckpt_meta_carry: the tokenizer, an imported model's
 * generation defaults, init), with the tokenizer's files that one names
 * put beside OUT (clf_ckpt_tok_copy); averaged_steps lists them all (in
 * the order given). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

/* The last k ckpt-<step>.safetensors of dir, oldest first. */
static int last_checkpoints(const char *dir, int k, char ***out)
{
    long *steps;
    int n = clf_trainer_checkpoints(dir, &steps), first = n > k ? n - k : 0;
    *out = NULL;
    if (n <= 0)
        return n;
    *out = calloc((size_t)(n - first), sizeof **out);
    for (int i = first; *out && i < n; i++) {
        (*out)[i - first] = malloc(strlen(dir) + 64);
        sprintf((*out)[i - first], "%s/ckpt-%ld.safetensors", dir, steps[i]);
    }
    free(steps);
    return *out ? n - first : -1;
}

#define AVERAGE_USAGE                                                                                 \
    "usage: clformer average -o OUT CKPT... | clformer average -o OUT --dir DIR [--last K] [--device D]\n" \
    "  writes the element-wise mean of the checkpoints (default: the last 5 of DIR)\n"

int clf_cmd_average(int argc, char **argv)
{
    const char *out = NULL, *dir = NULL, *device = NULL;
    int last = 5, nfiles = 0, nfound = 0;
    bool bad = false;
    char **files = calloc((size_t)argc, sizeof *files), **found = NULL;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf(AVERAGE_USAGE);
            free(files);
            return 0;
        }
        if (cli_opt(argc, argv, &i, "-o", &out, &bad) || cli_opt(argc, argv, &i, "--dir", &dir, &bad) ||
            cli_opt(argc, argv, &i, "--device", &device, &bad))
            continue;
        double x = last;
        if (cli_opt_number(argc, argv, &i, "--last", 1, 1e9, true, &x, &bad)) {
            last = (int)x;
            continue;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "clformer average: unknown option '%s'\n", argv[i]);
            bad = true;
        } else {
            files[nfiles++] = argv[i];
        }
    }
    if (!bad && dir) {
        int n = nfound = last_checkpoints(dir, last, &found);
        if (n <= 0) {
            fprintf(stderr, "clformer average: no ckpt-<step>.safetensors in %s\n", dir);
            free(files);
            return 1;
        }
        for (int i = 0; i < n; i++)
            files[nfiles++] = found[i];
    }
    if (bad || !out || nfiles < 1 || last < 1) {
        fprintf(stderr, AVERAGE_USAGE);
        free(files);
        return 2;
    }
    if (cli_make_folder_of("average", out)) {
        for (int i = 0; i < nfound; i++)
            free(found[i]);
        free(found);
        free(files);
        return 1;
    }
    int rc = 1;
    clf_ctx_t *ctx = cli_open(device);
    clf_model_t *first = NULL;
    double *sum = NULL;
    float *w = NULL;
    size_t n = 0;
    int newest = 0;  /* the file with the highest step */
    struct clf_ckpt_meta meta, from;
    clf_status st;
    if (!ctx)
        goto done;
    for (int f = 0; f < nfiles; f++) {
        clf_model_t *m = NULL;
        if ((st = clf_model_load(ctx, &m, files[f])) != CLF_OK) {
            cli_fail(ctx, st, "loading a checkpoint");
            goto done;
        }
        if (!first) {
            first = m;
            n = clf_model_numel(m);
            sum = calloc(n, sizeof *sum);
            w = malloc(n * sizeof *w);
            if (!sum || !w) {
                fprintf(stderr, "clformer: out of host memory\n");
                goto done;
            }
        } else {
            char a[1024], b[1024];
            clf_model_config_json(clf_model_config(first), a, sizeof a);
            clf_model_config_json(clf_model_config(m), b, sizeof b);
            if (strcmp(a, b)) {
                fprintf(stderr, "clformer average: %s has another configuration than %s\n", files[f], files[0]);
                clf_model_free(m);
                goto done;
            }
        }
        if (!f)
            clf_ckpt_meta_init(&meta, m);  /* the first's seed, as before */
        const uint32_t step = clf_model_adam_steps(m);
        if (step > meta.step)
            meta.step = step, newest = f;
        if ((st = clf_ckpt_meta_average_add(&meta, step)) != CLF_OK) {
            cli_fail(NULL, st, "listing the averaged steps");
            if (m != first)
                clf_model_free(m);
            goto done;
        }
        st = clf_tensor_download(ctx, clf_model_weights(m), w);
        if (m != first)
            clf_model_free(m);
        if (st != CLF_OK) {
            cli_fail(ctx, st, "reading weights");
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            sum[i] += w[i];
        fprintf(stderr, "  %s\n", files[f]);
    }
    for (size_t i = 0; i < n; i++)
        w[i] = (float)(sum[i] / nfiles);
    /* step: the newest checkpoint's, the one the average stands in for */
    if ((st = clf_ckpt_meta_read(files[newest], &from)) != CLF_OK) {
        cli_fail(NULL, st, "reading the newest checkpoint's metadata");
        goto done;
    }
    clf_ckpt_meta_carry(&meta, &from);
    /* the tokenizer it names, beside the average, as beside what it averaged */
    if ((st = clf_ckpt_tok_copy(files[newest], &from, out)) != CLF_OK) {
        cli_fail(NULL, st, "putting the tokenizer beside the average");
        goto done;
    }
    if ((st = clf_tensor_upload(ctx, clf_model_weights(first), w)) || (st = clf_model_save(first, out, &meta))) {
        cli_fail(ctx, st, "writing the average");
        goto done;
    }
    fprintf(stderr, "averaged %d checkpoints into %s\n", nfiles, out);
    rc = 0;
done:
    for (int i = 0; i < nfound; i++)
        free(found[i]);
    free(found);
    free(files);
    free(sum);
    free(w);
    clf_model_free(first);
    clf_ctx_free(ctx);
    return rc;
}
