/* ref_ops.c: see ref_ops.h. Straightforward loops, double accumulators. */
#include "ref_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/philox.h"

float ref_half_round(float x)
{
    if (x == 0)
        return x;
    int e;
    frexp(x, &e);                            /* |x| = f·2^e, f in [0.5, 1) */
    const int lsb = e < -13 ? -24 : e - 11;  /* half's quantum at |x|: 11 bits, or the subnormals' 2^-24 */
    return (float)(rint(ldexp(x, -lsb)) * ldexp(1.0, lsb));
}

float ref_dropout_factor(const struct clf_dropout *d, size_t i)
{
    if (!d || d->p == 0.0f)
        return 1.0f;
    float scale = 1.0f / (1.0f - d->p);
    return clf_dropout_factor((uint64_t)i, d->p, scale, (uint32_t)d->seed, (uint32_t)(d->seed >> 32), d->stream,
                              d->step);
}

void ref_bias_add(float *y, const float *bias, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            y[r * cols + c] += bias[c];
}

void ref_bias_backward(float *dbias, const float *dy, size_t rows, size_t cols)
{
    for (size_t c = 0; c < cols; c++) {
        double s = 0;
        for (size_t r = 0; r < rows; r++)
            s += dy[r * cols + c];
        dbias[c] = (float)(dbias[c] + s);
    }
}

void ref_residual_forward(float *y, const float *x, const float *sub, size_t n, const struct clf_dropout *d)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] + sub[i] * ref_dropout_factor(d, i);
}

void ref_residual_backward(float *dsub, const float *dy, size_t n, const struct clf_dropout *d)
{
    for (size_t i = 0; i < n; i++)
        dsub[i] = dy[i] * ref_dropout_factor(d, i);
}

void ref_softmax_row_d(double *y, const double *x, size_t cols, size_t len)
{
    double m = -INFINITY, s = 0;
    for (size_t j = 0; j < len; j++)
        m = fmax(m, x[j]);
    for (size_t j = 0; j < len; j++)
        s += exp(x[j] - m);
    for (size_t j = 0; j < cols; j++)
        y[j] = j < len ? exp(x[j] - m) / s : 0.0;
}

void ref_softmax_forward(float *y, const float *x, size_t rows, size_t cols, const int32_t *valid)
{
    double *xd = malloc(cols * sizeof *xd), *yd = malloc(cols * sizeof *yd);
    for (size_t r = 0; r < rows; r++) {
        size_t len = cols;
        if (valid)
            len = valid[r] <= 0 ? 0 : (size_t)valid[r] < cols ? (size_t)valid[r] : cols;
        for (size_t j = 0; j < cols; j++)
            xd[j] = x[r * cols + j];
        ref_softmax_row_d(yd, xd, cols, len);
        for (size_t j = 0; j < cols; j++)
            y[r * cols + j] = (float)yd[j];
    }
    free(xd);
    free(yd);
}

void ref_softmax_backward(float *dx, const float *y, const float *dy, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t j = 0; j < cols; j++)
            s += (double)y[r * cols + j] * dy[r * cols + j];
        for (size_t j = 0; j < cols; j++)
            dx[r * cols + j] = (float)(y[r * cols + j] * (dy[r * cols + j] - s));
    }
}

/* k passes over each row, each taking the best column not yet taken. */
void ref_topk(float *val, int32_t *idx, float *at, const float *x, size_t rows, size_t cols, size_t k,
                     int skip, size_t pick)
{
    char *used = malloc(cols);
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        for (size_t c = 0; c < cols; c++)
            used[c] = (int)c == skip;
        for (size_t j = 0; j < k; j++) {
            long best = -1;
            for (size_t c = 0; c < cols; c++)
                if (!used[c] && (best < 0 || xr[c] > xr[best]))
                    best = (long)c;
            val[r * k + j] = best < 0 ? -1.0e30f : xr[best];
            idx[r * k + j] = (int32_t)best;
            if (best >= 0)
                used[best] = 1;
        }
        at[r] = xr[pick];
    }
    free(used);
}

void ref_logsoftmax_forward(float *y, const float *x, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double m = -INFINITY, s = 0;
        for (size_t j = 0; j < cols; j++)
            m = fmax(m, xr[j]);
        for (size_t j = 0; j < cols; j++)
            s += exp(xr[j] - m);
        double lse = m + log(s);
        for (size_t j = 0; j < cols; j++)
            y[r * cols + j] = (float)(xr[j] - lse);
    }
}

void ref_layernorm_row_d(double *y, const double *x, const double *gain, const double *bias, size_t d, double eps)
{
    double mu = 0, var = 0;
    for (size_t j = 0; j < d; j++)
        mu += x[j];
    mu /= d;
    for (size_t j = 0; j < d; j++)
        var += (x[j] - mu) * (x[j] - mu);
    double rs = 1.0 / sqrt(var / d + eps);
    for (size_t j = 0; j < d; j++)
        y[j] = (x[j] - mu) * rs * gain[j] + bias[j];
}

void ref_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gain, const float *bias,
                           size_t rows, size_t d, float eps)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        double mu = 0, var = 0;
        for (size_t j = 0; j < d; j++)
            mu += xr[j];
        mu /= d;
        for (size_t j = 0; j < d; j++)
            var += (xr[j] - mu) * (xr[j] - mu);
        double rs = 1.0 / sqrt(var / d + eps);
        for (size_t j = 0; j < d; j++)
            y[r * d + j] = (float)((xr[j] - mu) * rs * gain[j] + bias[j]);
        mean[r] = (float)mu;
        rstd[r] = (float)rs;
    }
}

double ref_act_d(double z, int act)
{
    if (act == CLF_ACT_SILU)
        return z / (1.0 + exp(-z));
    if (act == CLF_ACT_GELU)
        return 0.5 * z * (1.0 + erf(z / sqrt(2.0)));
    return z > 0 ? z : 0.0;
}

void ref_ffn_forward_act(float *y, float *hidden, const float *x, const float *w1, const float *b1, const float *w2,
                         const float *b2, size_t rows, size_t d, size_t dff, const struct clf_dropout *drop, int act)
{
    float *a = malloc(dff * sizeof *a);
    for (size_t r = 0; r < rows; r++) {
        for (size_t j = 0; j < dff; j++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += (double)x[r * d + k] * w1[k * dff + j];
            float v = (float)s + b1[j];
            a[j] = (float)ref_act_d(v, act) * ref_dropout_factor(drop, r * dff + j);
            hidden[r * dff + j] = act == CLF_ACT_RELU ? a[j] : (float)s;
        }
        for (size_t c = 0; c < d; c++) {
            double s = 0;
            for (size_t j = 0; j < dff; j++)
                s += (double)a[j] * w2[j * d + c];
            y[r * d + c] = (float)(s + b2[c]);
        }
    }
    free(a);
}

void ref_ffn_forward(float *y, float *hidden, const float *x, const float *w1, const float *b1, const float *w2,
                     const float *b2, size_t rows, size_t d, size_t dff, const struct clf_dropout *drop)
{
    ref_ffn_forward_act(y, hidden, x, w1, b1, w2, b2, rows, d, dff, drop, CLF_ACT_RELU);
}

void ref_ffn_forward_d_act(double *y, const double *x, const double *w1, const double *b1, const double *w2,
                           const double *b2, size_t rows, size_t d, size_t dff, const struct clf_dropout *drop,
                           int act)
{
    double *h = malloc(dff * sizeof *h);
    for (size_t r = 0; r < rows; r++) {
        for (size_t j = 0; j < dff; j++) {
            double s = b1[j];
            for (size_t k = 0; k < d; k++)
                s += x[r * d + k] * w1[k * dff + j];
            h[j] = ref_act_d(s, act) * ref_dropout_factor(drop, r * dff + j);
        }
        for (size_t c = 0; c < d; c++) {
            double s = b2[c];
            for (size_t j = 0; j < dff; j++)
                s += h[j] * w2[j * d + c];
            y[r * d + c] = s;
        }
    }
    free(h);
}

void ref_ffn_forward_d(double *y, const double *x, const double *w1, const double *b1, const double *w2,
                       const double *b2, size_t rows, size_t d, size_t dff, const struct clf_dropout *drop)
{
    ref_ffn_forward_d_act(y, x, w1, b1, w2, b2, rows, d, dff, drop, CLF_ACT_RELU);
}

double ref_sinusoid(size_t t, size_t j, size_t d)
{
    double a = (double)t * pow(10000.0, -(double)(j & ~(size_t)1) / (double)d);
    return j & 1 ? cos(a) : sin(a);
}

/* Marian's layout, as transformers builds it: position_enc[t][k] =
 * t / 10000^(2·(k // 2) / d); sin of its even columns into the first
 * ⌈d/2⌉ columns, cos of its odd ones into the rest. */
double ref_sinusoid_halves(size_t t, size_t j, size_t d)
{
    size_t half = d % 2 ? d / 2 + 1 : d / 2;
    size_t k = j < half ? 2 * j : 2 * (j - half) + 1;
    double a = (double)t / pow(10000.0, 2.0 * (double)(k / 2) / (double)d);
    return j < half ? sin(a) : cos(a);
}

void ref_embed_forward(float *y, const int32_t *ids, const float *table, const float *learned, size_t d,
                       const struct clf_embed_desc *desc)
{
    size_t rows = desc->batch * desc->len;
    for (size_t r = 0; r < rows; r++) {
        size_t t = desc->pos_offset + r % desc->len;
        for (size_t j = 0; j < d; j++) {
            double pos = learned                           ? learned[t * d + j]
                         : desc->layout == CLF_POS_HALVES ? ref_sinusoid_halves(t, j, d)
                                                          : ref_sinusoid(t, j, d);
            double v = (double)table[(size_t)ids[r] * d + j] * desc->scale + pos;
            y[r * d + j] = (float)v * ref_dropout_factor(&desc->drop, r * d + j);
        }
    }
}

void ref_embed_backward(float *dtable, float *dlearned, const float *dy, const int32_t *ids, size_t d,
                        const struct clf_embed_desc *desc)
{
    size_t rows = desc->batch * desc->len;
    for (size_t r = 0; r < rows; r++) {
        size_t t = desc->pos_offset + r % desc->len;
        for (size_t j = 0; j < d; j++) {
            float g = dy[r * d + j] * ref_dropout_factor(&desc->drop, r * d + j);
            dtable[(size_t)ids[r] * d + j] += g * desc->scale;
            if (dlearned)
                dlearned[t * d + j] += g;
        }
    }
}

double ref_loss_d(double *dlogits, size_t *count, const double *logits, const int32_t *targets, size_t n, size_t V,
                  const struct clf_loss_desc *desc)
{
    double total = 0, eps = desc->smoothing;
    *count = 0;
    for (size_t r = 0; r < n; r++) {
        const double *x = logits + r * V;
        int32_t t = targets[r];
        if (t == desc->pad_id) {
            if (dlogits)
                memset(dlogits + r * V, 0, V * sizeof *dlogits);
            continue;
        }
        double m = -INFINITY, s = 0, smooth = 0;
        for (size_t j = 0; j < V; j++)
            m = fmax(m, x[j]);
        for (size_t j = 0; j < V; j++)
            s += exp(x[j] - m);
        double lse = m + log(s);
        for (size_t j = 0; j < V; j++)
            smooth += -(x[j] - lse);
        total += (1 - eps) * -(x[t] - lse) + eps * smooth / V;
        (*count)++;
        if (dlogits)
            for (size_t j = 0; j < V; j++)
                dlogits[r * V + j] =
                    desc->grad_scale * (exp(x[j] - lse) - eps / V - ((int32_t)j == t ? 1 - eps : 0));
    }
    return total;
}

void ref_adam_step(float *params, float *m, float *v, const float *grads, size_t n, const struct clf_adam_desc *d)
{
    float f = 1.0f;
    if (d->clip_norm > 0) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += (double)grads[i] * grads[i];
        double c = d->clip_norm / (sqrt(s) + 1e-6);
        f = (float)(c < 1 ? c : 1);
    }
    double bc1 = 1.0 - pow(d->beta1, d->step), bc2 = 1.0 - pow(d->beta2, d->step);
    float lr_bc1 = (float)(d->lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * f + d->weight_decay * params[i];
        m[i] += (1.0f - d->beta1) * (g - m[i]);
        v[i] = d->beta2 * v[i] + (1.0f - d->beta2) * g * g;
        params[i] -= lr_bc1 * (m[i] / (sqrtf(v[i]) / bc2_sqrt + d->eps));
    }
}
