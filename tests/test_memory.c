/* test_memory.c: a model or a batch that the device cannot hold is refused
 * before training starts, with a message that names the device's memory,
 * what was asked for and the flag to change, and nothing is written. The
 * device is made small with CLF_DEVICE_LIMITS=global_mem=… (appended to
 * whatever shaping the run already has, so the GPU-shaped runs test it
 * too). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"
#define DATA CLF_SOURCE_DIR "/data/multi30k"

/* Runs `clformer train ARGS` on the validation pairs with the device's
 * memory lowered to mem; returns the exit status, stderr in *msg. */
static int train_small_device(const char *mem, const char *args, const char *out, char **msg)
{
    const char *shaped = getenv("CLF_DEVICE_LIMITS");
    char cmd[2048], err[512];
    snprintf(err, sizeof err, "%s.err", out);
    snprintf(cmd, sizeof cmd,
             "CLF_DEVICE_LIMITS='%s,global_mem=%s' %s train --src %s/val.en.gz --tgt %s/val.de.gz "
             "--val-src '' --val-tgt '' --vocab 400 --steps 2 --quiet --out %s %s",
             shaped ? shaped : "", mem, CLI, DATA, DATA, out, args);
    int rc = tu_run(cmd, err);
    *msg = tu_slurp(err);
    return rc;
}

static bool has_checkpoint(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/ckpt-*.safetensors >/dev/null 2>&1", dir);
    return system(cmd) == 0;
}

/* Training ARGS in `mib` MiB of device memory is refused before the first
 * update: CLF_ERR_MEMORY, the device's memory, `says` and the flag to
 * change named, no checkpoint written. */
static void refused(int mib, const char *args, const char *says, const char *flag)
{
    char out[512], mem[32], named[32], *msg;
    snprintf(out, sizeof out, "%s/run", tu_tmpdir());
    snprintf(mem, sizeof mem, "%dM", mib);
    snprintf(named, sizeof named, "%d.0 MiB", mib);
    int rc = train_small_device(mem, args, out, &msg);
    cr_assert_neq(rc, 0, "training %s in %s did not fail:\n%s", args, mem, msg);
    cr_assert(strstr(msg, "CLF_ERR_MEMORY"), "%s", msg);
    cr_assert(strstr(msg, says), "the message does not say '%s':\n%s", says, msg);
    cr_assert(strstr(msg, named), "the message does not name the device's memory (%s):\n%s", named, msg);
    cr_assert(strstr(msg, flag), "the message does not name %s:\n%s", flag, msg);
    cr_assert_not(strstr(msg, "step 1"), "training started before the refusal:\n%s", msg);
    cr_assert_not(has_checkpoint(out));
    free(msg);
}

Test(memory, a_model_larger_than_the_device_is_refused_naming_the_preset, .timeout = TU_TIMEOUT(300))
{
    refused(64, "--preset base", "parameters take", "--preset");
}

Test(memory, a_batch_larger_than_the_device_is_refused_naming_max_tokens, .timeout = TU_TIMEOUT(300))
{
    /* tiny's parameters fit in 100 MiB many times over; 20000 tokens a
     * batch do not */
    refused(100, "--preset tiny --max-tokens 20000", "activations for batches", "--max-tokens");
}

Test(memory, the_same_run_on_the_whole_device_trains, .timeout = TU_TIMEOUT(300))
{
    /* the control: the refusals above come from the lowered memory */
    char out[512], *msg;
    snprintf(out, sizeof out, "%s/fits", tu_tmpdir());
    int rc = train_small_device("1G", "--preset tiny --max-tokens 2000", out, &msg);
    cr_assert_eq(rc, 0, "%s", msg);
    cr_assert(has_checkpoint(out), "no checkpoint in %s:\n%s", out, msg);
    free(msg);
}
