/* loss.cl: label-smoothed cross-entropy over logits (N, V), in place.
 *   loss_rows  one work-group per row: part (N, 2) = [loss, 1] of the row
 *              (zeros for pad rows); with grad, the row of logits becomes
 *              grad_scale·(softmax - (1-eps)·onehot(t) - eps/V) (zeros for
 *              pad rows). loss = lse - (1-eps)·x_t - eps·mean_j x_j, which is
 *              (1-eps)·nll + eps·mean_j(-log p_j).
 *   loss_sum   one work-group: out (2) = Σ_rows part, in a fixed order. */
#include "common.h"

static float loss_reduce(__local float *red, float v, int is_max)
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
