/* attn_mask.h: which keys a query sees, shared by attention.cl and
 * decode_attn.cl (one rule, written once). OpenCL C 1.2.
 *
 * The query at position p among the keys of sequence b sees the keys of
 * one interval [lo(p), hi(p)):
 *   lo(p) = window >= 0 ? max(0, p - window) : 0
 *   hi(p) = min(key_len[b], causal ? p + 1 : n_k, window >= 0 ? p + window + 1 : n_k)
 * Scores are kept in base 2 (scaled by LOG2E); lse is written in base e. */
#ifndef CLF_CL_ATTN_MASK_H
#define CLF_CL_ATTN_MASK_H

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* The visible key interval of position p. */
static inline int vis_lo(int p, int window) { return window >= 0 ? max(0, p - window) : 0; }
static inline int vis_hi(int p, int kl, int causal, int window)
{
    int h = kl;
    if (causal)
        h = min(h, p + 1);
    if (window >= 0)
        h = min(h, p + window + 1);
    return max(h, 0);
}

/* Valid keys of sequence b. */
static inline int keys_of(__global const int *key_len, int has_key_len, int b, int n_k)
{
    return has_key_len ? clamp(key_len[b], 0, n_k) : n_k;
}

#endif
