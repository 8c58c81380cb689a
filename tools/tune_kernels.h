/* tune_kernels.h: the part of `clformer tune` that searches clformer's own
 * kernels (attention tiles, the row-wise ops' work-group size). */
#ifndef CLF_TUNE_KERNELS_H
#define CLF_TUNE_KERNELS_H

#include <stdbool.h>

#include <clformer/advanced.h>

/* Times the built-in choice, then candidates until `deadline` (clf_now()
 * seconds) or until none is left, each checked before it is timed. On
 * return *best holds the fastest (the built-in's own values when nothing
 * beat it) and ctx has the built-in choice back in force. before_s and
 * after_s receive the seconds of the attention and row benchmarks with the
 * built-in choice and with *best. A failure to set up the benchmark is an
 * error; a candidate that fails is skipped and counted in *failed. */
struct tune_kernels_result {
    struct clf_kernel_params best;
    double attn_before_s, attn_after_s, rows_before_s, rows_after_s;
    unsigned tried, failed;
    char attn_case[96], rows_case[96];  /* what was timed, for the report */
};
/* prior (may be NULL): the values of an earlier tuning file, tried right
 * after the built-in choice, so that tuning again never ends worse. */
clf_status tune_kernels(clf_ctx_t *ctx, const struct clf_kernel_params *prior, double deadline, bool quiet,
                        struct tune_kernels_result *out);

#endif
