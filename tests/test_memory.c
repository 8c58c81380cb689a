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

Test(memory, a_model_larger_than_the_device_is_refused_naming_the_preset, .timeout = TU_TIMEOUT(300))
{
    char out[512], *msg;
    snprintf(out, sizeof out, "%s/base", tu_tmpdir());
    int rc = train_small_device("64M", "--preset base", out, &msg);
    cr_assert_neq(rc, 0, "training a base model in 64 MiB did not fail:\n%s", msg);
    cr_assert(strstr(msg, "CLF_ERR_MEMORY"), "%s", msg);
    cr_assert(strstr(msg, "parameters take"), "the message says nothing of the model's size:\n%s", msg);
    cr_assert(strstr(msg, "64.0 MiB"), "the message does not name the device's memory:\n%s", msg);
    cr_assert(strstr(msg, "--preset"), "the message does not name the flag to change:\n%s", msg);
    cr_assert_not(has_checkpoint(out));
    free(msg);
}

Test(memory, a_batch_larger_than_the_device_is_refused_naming_max_tokens, .timeout = TU_TIMEOUT(300))
{
    char out[512], *msg;
    snprintf(out, sizeof out, "%s/batch", tu_tmpdir());
    /* tiny's parameters fit in 100 MiB many times over; 20000 tokens a
     * batch do not */
    int rc = train_small_device("100M", "--preset tiny --max-tokens 20000", out, &msg);
    cr_assert_neq(rc, 0, "a batch of 20000 tokens in 100 MiB did not fail:\n%s", msg);
    cr_assert(strstr(msg, "CLF_ERR_MEMORY"), "%s", msg);
    cr_assert(strstr(msg, "100.0 MiB"), "the message does not name the device's memory:\n%s", msg);
    cr_assert(strstr(msg, "--max-tokens"), "the message does not name the flag to change:\n%s", msg);
    cr_assert_not(strstr(msg, "step 1"), "training started before the refusal:\n%s", msg);
    cr_assert_not(has_checkpoint(out));
    free(msg);
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
