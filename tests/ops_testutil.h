/* ops_testutil.h: small helpers the tests of the ops share (header-only):
 * shaped uploads, int32 buffers, random data and download-and-compare. */
#ifndef CLF_OPS_TESTUTIL_H
#define CLF_OPS_TESTUTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_ops.h"
#include "testutil.h"

/* A device tensor of shape (rows, cols) holding x; x NULL: zeros. */
static inline clf_tensor ot_up2(clf_ctx_t *ctx, const float *x, size_t rows, size_t cols)
{
    size_t n = rows * cols;
    float *z = NULL;
    if (!x)
        x = z = calloc(n, sizeof *z);
    clf_tensor t = tu_upload(ctx, x, n);
    free(z);
    t.ndim = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    return t;
}

static inline float *ot_rand(size_t n, unsigned long long seed, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    cr_assert_not_null(x);
    tu_fill(x, n, seed, lo, hi);
    return x;
}

static inline float *ot_copy(const float *x, size_t n)
{
    float *y = malloc((n ? n : 1) * sizeof *y);
    cr_assert_not_null(y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

/* Downloads t (n floats) and compares with want; true when close. */
static inline bool ot_check(clf_ctx_t *ctx, const char *what, const clf_tensor *t, const float *want, size_t n,
                            double atol, double rtol)
{
    float *got = tu_download(ctx, t, n);
    bool ok = tu_close(what, got, want, n, atol, rtol);
    free(got);
    return ok;
}

/* Expects st to be CLF_ERR_ARG with a message containing `op`. */
#define OT_EXPECT_ARG(ctx, st, op)                                                                          \
    do {                                                                                                    \
        clf_status st_ = (st);                                                                              \
        cr_expect_eq(st_, CLF_ERR_ARG, "%s: want CLF_ERR_ARG, got %s", op, clf_status_str(st_));            \
        cr_expect(strstr(clf_ctx_error(ctx), op) != NULL, "message '%s' does not name %s",                 \
                  clf_ctx_error(ctx), op);                                                                  \
    } while (0)

/* tests/ops_cases.c: checks shared by several test executables.
 * logits (N, V) = h (N, d)·table (V, d)ᵀ in double (malloc'd). */
double *ot_logits_d(const double *h, const double *table, size_t N, size_t V, size_t d);
/* Output projection + loss (eps, pad id 1, grad scale 0.5) on random h and
 * table against ref_loss_d: evaluation (loss, logits kept), then loss, dh
 * and dtable added into a random start; targets tg (N). With a bias (V) on
 * the logits, and its gradient, when with_bias. */
void ot_loss_case_bias(clf_ctx_t *ctx, size_t N, size_t V, size_t d, float eps, const int32_t *tg, bool with_bias);

/* Decoding's attention (clf_attention_decode_with, `parts` parts, 0: its own
 * choice) on nq queries per (b, h) from position qoff over nk keys kept in a
 * cache of nk + 3 positions, against ref_attention_forward (1e-5) and,
 * when vs_tiled, against clf_attention_forward on the same operands
 * (2e-6: only the order of the sums differs). */
struct ot_dcase {
    size_t B, H, dk, nk;
    const int32_t *kl; /* (B) valid keys, or NULL */
    bool causal;
    int window;
    size_t qoff;
    size_t nq;         /* query rows per (b, h) at positions qoff.. (0: 1) */
};
void ot_decode_attn_case(clf_ctx_t *ctx, const struct ot_dcase *c, size_t parts, bool vs_tiled);

/* clf_residual_layernorm_forward and _backward with dropout drop (NULL:
 * none) against the residual and layer norm kernels on (rows, d), to the
 * bit, and the forward against the plain-C reference; alias: y is x's
 * tensor, dx overwrites dy. */
bool ot_residual_ln_case(clf_ctx_t *ctx, size_t rows, size_t d, bool alias, const struct clf_dropout *drop);

/* clf_lse_rows and clf_topk_rows with it as the shift against
 * clf_logsoftmax_forward and ref_topk on its output, to the bit. */
bool ot_topk_shift_case(clf_ctx_t *ctx, const float *x, size_t rows, size_t cols, size_t k, int skip, size_t pick);
/* clf_embed_forward and _backward (through the host-built index) on ids
 * (desc's batch·len) against ref_embed_forward / _backward: a random table
 * (vocab, d) and positions (max_len, d, a learned table when learned) from
 * seed; the output to fwd_atol, the gradients to 1e-5. */
void ot_embed_case(clf_ctx_t *ctx, const char *what, const int32_t *ids, size_t vocab, size_t d, size_t max_len,
                   bool learned, const struct clf_embed_desc *desc, unsigned long long seed, double fwd_atol);

static const size_t ot_rows[] = {1, 7, 33, 100, 257};
static const size_t ot_cols[] = {1, 3, 64, 100, 512};

#endif
