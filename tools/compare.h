/* compare.h: what the parts of `clformer compare-attention` share: the
 * options, the quality studies (tools/compare_quality.c) that train
 * models with full and with restricted self-attention, the measured
 * records and their reports (tools/compare_report.c). */
#ifndef CLF_COMPARE_H
#define CLF_COMPARE_H

#include <stdbool.h>
#include <stdio.h>

#include <clformer/advanced.h>

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

/* The cost of one self-attention layer per variant and n, and what the
 * masks let through (cmd_compare_attention.c measures them). */
#define NV (1 + CMP_MAX_LIST) /* variants: full, then each window */

struct cost {
    double fwd[NV][CMP_MAX_LIST], both[NV][CMP_MAX_LIST];  /* seconds, < 0: not measured */
    size_t largest[CMP_MAX_LIST], total[CMP_MAX_LIST];      /* bytes the layer allocates at each n */
    double naive_scores[CMP_MAX_LIST];                      /* bytes the naive path's (B·h, n, n) scores+probs would take */
    double slope_fwd[NV], slope_both[NV];
    size_t cross[NV];                                       /* 0: restricting never paid on this grid */
    double cross_interp[NV];
};

struct reach_row {
    int layers, window;
    size_t enc, enc_formula, dec, dec_formula;
};

/* The first of nl lengths the growth exponent is fitted from: the upper
 * half, and at least two points. */
static inline size_t cmp_fit_from(size_t nl) { return nl / 2 < nl - 2 ? nl / 2 : nl - 2; }

/* The reports (compare_report.c): the cost and reach tables, the quality
 * tables (mt or syn may be NULL), --json (returns 0, or 1 after printing
 * what failed) and --plot. */
void cmp_print_tables(clf_ctx_t *ctx, const struct cmp_opts *o, const struct clf_model_config *c, const struct cost *r,
                      const struct reach_row *rr, size_t nrr);
void cmp_print_quality(const struct cmp_opts *o, const struct cmp_mt_result *mt, const struct cmp_syn_result *syn,
                       size_t nsyn);
int cmp_write_json(clf_ctx_t *ctx, const struct cmp_opts *o, const struct clf_model_config *c, const struct cost *r,
                   const struct reach_row *rr, size_t nrr, const struct cmp_mt_result *mt,
                   const struct cmp_syn_result *syn, size_t nsyn);
int cmp_write_plot(const struct cmp_opts *o, const struct cost *r);

#endif
