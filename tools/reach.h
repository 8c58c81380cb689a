/* reach.h: how far information travels through a stack of self-attention
 * layers, measured rather than assumed (`clformer compare-attention`'s
 * reach table; tests/test_compare_attention.c checks it against the
 * formula). */
#ifndef CLF_TOOLS_REACH_H
#define CLF_TOOLS_REACH_H

#include <stdbool.h>
#include <stddef.h>

#include <clformer/advanced.h>

/* The input positions one output position can depend on, measured: one
 * sequence of n random embeddings (no padding, no dropout) through the
 * encoder or the decoder (causal, its memory random too) of m (on ctx, its
 * context, which keeps the library's refusals' messages), a random
 * gradient on output row pos only, backward to the embeddings; the rows
 * whose gradient is not exactly zero. Uses the model's config (layers,
 * enc_window / dec_window); n <= max_len. n < 1 or pos >= n is CLF_ERR_ARG
 * with no message on ctx. */
struct reach {
    size_t count;        /* embedding rows with a non-zero gradient */
    size_t first, last;  /* the first and last of them */
    bool contiguous;     /* they form one run first..last */
};
clf_status reach_measure(clf_ctx_t *ctx, clf_model_t *m, enum clf_side side, size_t n, size_t pos, struct reach *out);

/* What the masks predict for that measurement: the positions within
 * layers·window of pos (encoder: on both sides, clipped to 0..n-1; decoder:
 * at or before pos); window < 0 (full): n, or pos + 1 for the decoder. For
 * a central pos the encoder's is min(n, 1 + 2·L·r); the decoder's is
 * min(pos + 1, 1 + L·r). */
size_t reach_formula(enum clf_side side, size_t n, size_t pos, int layers, int window);

#endif
