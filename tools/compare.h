/* compare.h: what the parts of `clformer compare-attention` share: the
 * options, and the quality studies (tools/compare_quality.c) that train
 * models with full and with restricted self-attention. */
#ifndef CLF_COMPARE_H
#define CLF_COMPARE_H

#include <stdbool.h>
#include <stdio.h>

#include "clformer.h"

#define CMP_MAX_LIST 32

struct cmp_opts {
    bool quick, quality, quiet, skip_mt, skip_syn;
    const char *preset, *device, *json, *plot, *out;
    size_t batch;
    size_t lengths[CMP_MAX_LIST], nlengths;
    int windows[CMP_MAX_LIST], nwindows;  /* restricted radii (full is always measured) */
    size_t reach_len;
    int max_layers;                       /* reach for L = 1..max_layers */
    double max_seconds;                   /* a variant whose fwd+bwd takes longer stops growing n */
    /* quality */
    long mt_steps;                        /* Multi30k: same number of updates ... */
    double mt_minutes;                    /* ... or the same minutes (when > 0) */
    int mt_window;                        /* the restricted radius trained on Multi30k */
    const char *mt_preset;
    int mt_vocab;                         /* BPE pieces */
    size_t mt_val;                        /* validation pairs (0: all) */
    size_t syn_lengths[CMP_MAX_LIST], nsyn;
    int syn_windows[CMP_MAX_LIST], nsyn_windows;
    int syn_layers;
    long syn_steps;
};

/* One Multi30k run: validation loss and greedy BLEU at the end. */
struct cmp_mt_result {
    int window;       /* -1 full */
    double val_loss, val_bleu, seconds;
    long steps;
    int rc;           /* 0: the run and its validation went well */
};

/* One synthetic run: teacher-forced token accuracy on held-out sequences. */
enum { CMP_TASK_REVERSE = 0, CMP_TASK_REPEAT = 1 };
const char *cmp_task_name(int task);
struct cmp_syn_result {
    int task;         /* CMP_TASK_* */
    size_t n;
    int window;       /* -1 full */
    double accuracy, exact, loss, seconds;
};

/* Trains full and restricted (o->mt_window) on the bundled Multi30k with
 * the library's trainer on ctx, same budget; res receives 2 entries.
 * Returns 0, or 1 after printing what failed. */
int cmp_quality_mt(clf_ctx_t *ctx, const struct cmp_opts *o, struct cmp_mt_result res[2]);

/* The synthetic long-range tasks (reverse with a restricted encoder, repeat
 * with a restricted decoder; see compare_quality.c), in process, for each
 * n and each window (and full); res receives 2·nsyn·(1 + nsyn_windows)
 * entries. */
int cmp_quality_synthetic(clf_ctx_t *ctx, const struct cmp_opts *o, struct cmp_syn_result *res);

#endif
