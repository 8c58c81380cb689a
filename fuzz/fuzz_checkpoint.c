/* fuzz_checkpoint.c: loading a checkpoint, past the safetensors layer
 * (fuzz_safetensors.c): the metadata that names the format, the model
 * config in it (a JSON object read field by field, then checked), the step
 * and seed, and every tensor matched against the parameters the config
 * implies. The metadata needs no device (clf_ckpt_meta_read: every key
 * the tools read, the generation JSON, the averaged steps); the config
 * and the tensors are read by clf_model_load, which does: a context on the
 * default device is opened once, with CLF_DEVICE_LIMITS lowering its
 * memory so that a config naming a huge model is refused before anything
 * is allocated. Without a device only the metadata is fuzzed (and said so
 * once). */
#include <stdio.h>
#include <stdlib.h>

#include "clformer.h"
#include "clformer_model.h"
#include "fuzz.h"

static clf_ctx_t *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("CLF_DEVICE_LIMITS", "global_mem=64M,max_alloc=16M", 0);
    if (!getenv("CLF_FUZZ_NO_DEVICE") && clf_ctx_init(&ctx, NULL) != CLF_OK) {
        fprintf(stderr, "fuzz_checkpoint: no device (%s): the config and tensors are not fuzzed\n",
                clf_ctx_error(NULL));
        ctx = NULL;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(0, data, size);
    char v[4096];
    struct clf_ckpt_meta meta;
    if (clf_checkpoint_meta(path, "format", v, sizeof v) != CLF_OK)
        return 0;  /* not a checkpoint: nothing further reads it */
    if (clf_ckpt_meta_read(path, &meta) == CLF_OK) {
        struct clf_translate_opts o = clf_translate_opts_default();
        clf_ckpt_meta_translate_opts(&meta, &o);
    }
    if (!ctx)
        return 0;
    clf_model_t *m = NULL;
    if (clf_model_load(ctx, &m, path) == CLF_OK) {
        if (!m)
            abort();
        clf_model_free(m);
    }
    return 0;
}
