/* loss.cl: label-smoothed cross-entropy over logits (N, V), in place.
 *   loss_rows  one work-group per row: part (N, 2) = [loss, 1] of the row
 *              (zeros for pad rows); with grad, the row of logits becomes
 *              grad_scale·(softmax - (1-eps)·onehot(t) - eps/V) (zeros for
 *              pad rows). loss = lse - (1-eps)·x_t - eps·mean_j x_j, which is
 *              (1-eps)·nll + eps·mean_j(-log p_j).
 *   loss_sum   one work-group: out (2) = Σ_rows part, in a fixed order.
 * Two shapes of loss_rows, chosen by WG (the row ops' work-group cap,
 * ROWS_WG in host/runtime/tuning_table.c):
 *   WG > 1  GPUs: the group's items stride over the row (coalesced loads)
 *           and reduce in local memory, three passes over the row.
 *   WG == 1 CPUs: one work-item owns the row, in float8 vectors and no
 *           barrier: one pass keeps a running max and sum of exponentials
 *           per lane (online log-sum-exp), one more writes the gradient.
 *           PoCL runs a group's items in a loop around each region between
 *           barriers and vectorises across items only where that loop is
 *           innermost, which the loops over the row inside each region
 *           prevent: the wide shape runs there as scalar code, one exp call
 *           per element and pass; this one calls exp on eight at a time.
 * Either shape sums in a fixed order: the same inputs give the same bits. */
#include "common.h"

CLF_GROUP_FN float loss_reduce(__local float *red, float v, int is_max)
{
    uint lid = get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] = is_max ? fmax(red[lid], red[lid + s]) : red[lid] + red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

#if WG == 1
__kernel void loss_rows(__global float *logits, uint lo, __global float *part, __global const int *targets,
                        uint V, int pad_id, float eps, float grad_scale, int grad)
{
    uint row = get_group_id(0);
    __global float *xr = logits + lo + (size_t)row * V;
    int t = targets[row];
    uint j;
    if (t == pad_id) {
        if (grad) {
            for (j = 0; j + 8 <= V; j += 8)
                vstore8((float8)(0.0f), 0, xr + j);
            for (; j < V; j++)
                xr[j] = 0.0f;
        }
        part[2 * row] = 0.0f;
        part[2 * row + 1] = 0.0f;
        return;
    }
    bool ok = t >= 0 && (uint)t < V;
    float xt = ok ? xr[t] : NAN;
    /* lane i of m8 is the largest value it has seen, lane i of s8 the sum
     * of exp(x - m8[i]) over them; blocks of 32 values share one rescale */
    float8 m8 = (float8)(CLF_NEG_LARGE), s8 = (float8)(0.0f), sx8 = (float8)(0.0f);
    for (j = 0; j + 32 <= V; j += 32) {
        float8 a = vload8(0, xr + j), b = vload8(1, xr + j), c = vload8(2, xr + j), d = vload8(3, xr + j);
        float8 mn = fmax(m8, fmax(fmax(a, b), fmax(c, d)));
        s8 = s8 * exp(m8 - mn) + ((exp(a - mn) + exp(b - mn)) + (exp(c - mn) + exp(d - mn)));
        sx8 += (a + b) + (c + d);
        m8 = mn;
    }
    for (; j + 8 <= V; j += 8) {
        float8 a = vload8(0, xr + j);
        float8 mn = fmax(m8, a);
        s8 = s8 * exp(m8 - mn) + exp(a - mn);
        sx8 += a;
        m8 = mn;
    }
    float m1 = CLF_NEG_LARGE, s1 = 0.0f, sx = sum8(sx8);
    for (; j < V; j++) {
        float x = xr[j], mn = fmax(m1, x);
        s1 = s1 * exp(m1 - mn) + exp(x - mn);
        sx += x;
        m1 = mn;
    }
    float m = fmax(max8(m8), m1);
    float lse = m + log(sum8(s8 * exp(m8 - m)) + s1 * exp(m1 - m));
    part[2 * row] = lse - (1.0f - eps) * xt - eps * (sx / (float)V);
    part[2 * row + 1] = 1.0f;
    if (!grad)
        return;
    float u = eps / (float)V;
    for (j = 0; j + 8 <= V; j += 8)
        vstore8(grad_scale * (exp(vload8(0, xr + j) - lse) - u), 0, xr + j);
    for (; j < V; j++)
        xr[j] = grad_scale * (exp(xr[j] - lse) - u);
    if (ok)  /* x_t was read before the row was overwritten */
        xr[t] = grad_scale * (exp(xt - lse) - u - (1.0f - eps));
}

#else

__kernel void loss_rows(__global float *logits, uint lo, __global float *part, __global const int *targets,
                        uint V, int pad_id, float eps, float grad_scale, int grad)
{
    __local float red[WG];
    uint row = get_group_id(0), lid = get_local_id(0);
    __global float *xr = logits + lo + (size_t)row * V;
    int t = targets[row];
    if (t == pad_id) {
        if (grad)
            for (uint j = lid; j < V; j += WG)
                xr[j] = 0.0f;
        if (lid == 0) {
            part[2 * row] = 0.0f;
            part[2 * row + 1] = 0.0f;
        }
        return;
    }
    /* x_t is read by the one work-item that later overwrites it with its
     * gradient (j = t is in its stride), and that item writes the row's
     * loss: another item reading it would race with that write, as the
     * barriers between fence only local memory. */
    bool ok = t >= 0 && (uint)t < V;
    uint owner = ok ? (uint)t % WG : 0;
    float xt = ok && lid == owner ? xr[t] : NAN;
    float m = CLF_NEG_LARGE, sx = 0.0f;
    for (uint j = lid; j < V; j += WG) {
        m = fmax(m, xr[j]);
        sx += xr[j];
    }
    m = loss_reduce(red, m, 1);
    sx = loss_reduce(red, sx, 0);
    float s = 0.0f;
    for (uint j = lid; j < V; j += WG)
        s += exp(xr[j] - m);
    float lse = m + log(loss_reduce(red, s, 0));
    if (lid == owner) {
        part[2 * row] = lse - (1.0f - eps) * xt - eps * (sx / (float)V);
        part[2 * row + 1] = 1.0f;
    }
    if (grad) {
        float u = eps / (float)V;
        for (uint j = lid; j < V; j += WG) {
            float g = exp(xr[j] - lse) - u - ((int)j == t ? 1.0f - eps : 0.0f);
            xr[j] = grad_scale * g;
        }
    }
}

#endif

__kernel void loss_sum(__global float *out, uint oo, __global const float *part, uint N)
{
    __local float red[WG];
    uint lid = get_local_id(0);
    float a = 0.0f, c = 0.0f;
    for (uint r = lid; r < N; r += WG) {
        a += part[2 * r];
        c += part[2 * r + 1];
    }
    a = loss_reduce(red, a, 0);
    c = loss_reduce(red, c, 0);
    if (lid == 0) {
        out[oo] = a;
        out[oo + 1] = c;
    }
}
