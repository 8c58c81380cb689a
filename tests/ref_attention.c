/* ref_attention.c: see ref_attention.h. Plain loops in double; a softmax
 * row is computed against its maximum over the visible keys only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_attention.h"

bool ref_attn_visible(const struct ref_attn_desc *d, size_t b, size_t i, size_t j)
{
    long p = (long)(i + d->q_pos_offset), jj = (long)j;
    if (d->key_len && jj >= d->key_len[b])
        return false;
    if (d->causal && jj > p)
        return false;
    if (d->window >= 0 && labs(p - jj) > d->window)
        return false;
    return true;
}

static double scale_of(const struct ref_attn_desc *d)
{
    return d->scale > 0 ? d->scale : 1.0 / sqrt((double)d->d_k);
}

/* p (n_k) = softmax row of query i of (b, h); returns false if no key is visible. */
static bool prob_row(double *p, const double *qi, const double *kbh, const struct ref_attn_desc *d, size_t b,
                     size_t i, double *lse)
{
    size_t nk = d->n_k, dk = d->d_k;
    double mx = -INFINITY;
    for (size_t j = 0; j < nk; j++) {
        p[j] = -INFINITY;
        if (!ref_attn_visible(d, b, i, j))
            continue;
        double s = 0;
        for (size_t c = 0; c < dk; c++)
            s += qi[c] * kbh[j * dk + c];
        p[j] = s * scale_of(d);
        if (p[j] > mx)
            mx = p[j];
    }
    if (mx == -INFINITY) {
        for (size_t j = 0; j < nk; j++)
            p[j] = 0;
        if (lse)
            *lse = -1e30;
        return false;
    }
    double sum = 0;
    for (size_t j = 0; j < nk; j++) {
        p[j] = p[j] == -INFINITY ? 0 : exp(p[j] - mx);
        sum += p[j];
    }
    for (size_t j = 0; j < nk; j++)
        p[j] /= sum;
    if (lse)
        *lse = mx + log(sum);
    return true;
}

void ref_attention_forward(double *o, double *lse, const double *q, const double *k, const double *v,
                           const struct ref_attn_desc *d)
{
    size_t nq = d->n_q, nk = d->n_k, dk = d->d_k;
    double *p = malloc(nk * sizeof *p);
    for (size_t b = 0; b < d->batch; b++)
        for (size_t h = 0; h < d->heads; h++) {
            size_t bh = b * d->heads + h;
            const double *kbh = k + bh * nk * dk, *vbh = v + bh * nk * dk;
            for (size_t i = 0; i < nq; i++) {
                double l;
                prob_row(p, q + (bh * nq + i) * dk, kbh, d, b, i, &l);
                if (lse)
                    lse[bh * nq + i] = l;
                double *oi = o + (bh * nq + i) * dk;
                for (size_t c = 0; c < dk; c++) {
                    double acc = 0;
                    for (size_t j = 0; j < nk; j++)
                        acc += p[j] * vbh[j * dk + c];
                    oi[c] = acc;
                }
            }
        }
    free(p);
}

void ref_attention_backward(double *dq, double *dk, double *dv, const double *d_o, const double *q,
                            const double *k, const double *v, const struct ref_attn_desc *d)
{
    size_t nq = d->n_q, nk = d->n_k, dkk = d->d_k;
    size_t bhn = d->batch * d->heads;
    memset(dq, 0, bhn * nq * dkk * sizeof *dq);
    memset(dk, 0, bhn * nk * dkk * sizeof *dk);
    memset(dv, 0, bhn * nk * dkk * sizeof *dv);
    double *p = malloc(nk * sizeof *p), *dp = malloc(nk * sizeof *dp);
    double sc = scale_of(d);
    for (size_t b = 0; b < d->batch; b++)
        for (size_t h = 0; h < d->heads; h++) {
            size_t bh = b * d->heads + h;
            const double *kbh = k + bh * nk * dkk, *vbh = v + bh * nk * dkk;
            for (size_t i = 0; i < nq; i++) {
                const double *qi = q + (bh * nq + i) * dkk, *gi = d_o + (bh * nq + i) * dkk;
                if (!prob_row(p, qi, kbh, d, b, i, NULL))
                    continue;
                double D = 0;
                for (size_t j = 0; j < nk; j++) {
                    double s = 0;
                    for (size_t c = 0; c < dkk; c++)
                        s += gi[c] * vbh[j * dkk + c];
                    dp[j] = s;
                    D += p[j] * s;
                }
                for (size_t j = 0; j < nk; j++) {
                    double ds = p[j] * (dp[j] - D) * sc;
                    for (size_t c = 0; c < dkk; c++) {
                        dv[(bh * nk + j) * dkk + c] += p[j] * gi[c];
                        dq[(bh * nq + i) * dkk + c] += ds * kbh[j * dkk + c];
                        dk[(bh * nk + j) * dkk + c] += ds * qi[c];
                    }
                }
            }
        }
    free(p);
    free(dp);
}

/* y (rows, n) = x (rows, kdim) · w[:, col0 : col0+n] (w has ldw columns) + b[col0 ..] */
static void proj(double *y, const double *x, const double *w, const double *bias, size_t rows, size_t kdim,
                 size_t ldw, size_t col0, size_t n)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < n; c++) {
            double acc = bias ? bias[col0 + c] : 0;
            for (size_t t = 0; t < kdim; t++)
                acc += x[r * kdim + t] * w[t * ldw + col0 + c];
            y[r * n + c] = acc;
        }
}

void ref_mha_forward(double *y, const double *x, const double *mem, const double *w_in, const double *b_in,
                     const double *w_out, const double *b_out, const struct ref_mha_desc *d)
{
    size_t B = d->batch, H = d->heads, D = d->d_model, Tq = d->len_q, Tk = mem ? d->len_kv : d->len_q,
           dk = D / H;
    const double *m = mem ? mem : x;
    double *qp = malloc(B * Tq * D * sizeof *qp), *kp = malloc(B * Tk * D * sizeof *kp),
           *vp = malloc(B * Tk * D * sizeof *vp);
    proj(qp, x, w_in, b_in, B * Tq, D, 3 * D, 0, D);
    proj(kp, m, w_in, b_in, B * Tk, D, 3 * D, D, D);
    proj(vp, m, w_in, b_in, B * Tk, D, 3 * D, 2 * D, D);
    /* to (B, H, T, dk) */
    double *q = calloc(B * Tq * D, sizeof *q), *k = calloc(B * Tk * D, sizeof *k),
           *v = calloc(B * Tk * D, sizeof *v), *o = malloc(B * Tq * D * sizeof *o),
           *cat = malloc(B * Tq * D * sizeof *cat);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t c = 0; c < dk; c++) {
                for (size_t t = 0; t < Tq; t++)
                    q[((b * H + h) * Tq + t) * dk + c] = qp[(b * Tq + t) * D + h * dk + c];
                for (size_t t = 0; t < Tk; t++) {
                    k[((b * H + h) * Tk + t) * dk + c] = kp[(b * Tk + t) * D + h * dk + c];
                    v[((b * H + h) * Tk + t) * dk + c] = vp[(b * Tk + t) * D + h * dk + c];
                }
            }
    struct ref_attn_desc ad = {B, H, Tq, Tk, dk, d->key_len, d->causal, d->window, 0, 0};
    ref_attention_forward(o, NULL, q, k, v, &ad);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < Tq; t++)
                for (size_t c = 0; c < dk; c++)
                    cat[(b * Tq + t) * D + h * dk + c] = o[((b * H + h) * Tq + t) * dk + c];
    proj(y, cat, w_out, b_out, B * Tq, D, D, 0, D);
    free(qp), free(kp), free(vp), free(q), free(k), free(v), free(o), free(cat);
}

double *ref_to_double(const float *x, size_t n)
{
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

float *ref_to_float(const double *x, size_t n)
{
    float *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++)
        y[i] = (float)x[i];
    return y;
}
