/* tune_gemm.h: the part of `clformer tune` that searches CLBlast's SGEMM
 * parameters (Xgemm, XgemmDirect and the size between them) on the shapes
 * the model presets use. */
#ifndef CLF_TUNE_GEMM_H
#define CLF_TUNE_GEMM_H

#include <stdbool.h>

#include <clformer/advanced.h>

struct tune_gemm;

/* What the search found: the parameters, in force on the context on
 * return, and each shape's GFLOP/s with CLBlast's own choice (before),
 * with them (after) and of OpenBLAS (reference, CPUs only; else 0). */
struct tune_gemm_result {
    struct clf_gemm_params best;
    unsigned tried, failed, pruned;
    int nshapes;
    struct clf_tuning_shape shapes[CLF_TUNING_MAX_SHAPES];
};

/* Prepares the shapes of the small preset on `tokens` tokens (OpenBLAS's
 * products as the reference every candidate is checked against). GEMMs on
 * ctx must run on CLBlast. */
clf_status tune_gemm_init(clf_ctx_t *ctx, size_t tokens, bool quiet, struct tune_gemm **out);
int tune_gemm_shapes(const struct tune_gemm *t);
/* Times CLBlast's own choice, the baseline (what ctx opened with). */
clf_status tune_gemm_baseline(struct tune_gemm *t);
/* Searches until `deadline` (clf_now() seconds), starting from prior[0..nprior)
 * (what was in force: an earlier tuning file's, the table's), then applies
 * the best and measures it. */
clf_status tune_gemm_run(struct tune_gemm *t, const struct clf_gemm_params *prior, int nprior, double deadline,
                         struct tune_gemm_result *out);
void tune_gemm_free(struct tune_gemm *t);

#endif
