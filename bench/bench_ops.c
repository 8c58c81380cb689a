/* bench_ops.c: `clformer bench ops`: the Transformer's device ops at
 * training shapes (2048 tokens, d_model 256 and 512, d_ff 4·d_model, vocab
 * 8000): GB/s for the memory-bound ops (bytes each op must move at least,
 * over its time) and GFLOP/s for the GEMM-bound ones (FFN, output
 * projection + loss), next to the device's copy bandwidth (a
 * clEnqueueCopyBuffer of 64 MiB, read + write counted) as the roof. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#define TOKENS 2048
#define VOCAB 8000
#define HEADS 8

struct st {
    size_t d, dff;
    clf_tensor x, y, z, gain, bias, mean, rstd, hidden, logits, table, dtable, loss, scores, big, big2, adam[5];
    struct clf_ffn_params p, g;
    clf_tensor ids, targets; /* i32 (T) */
    struct clf_embed_index *ix;
    struct clf_dropout drop;
};

typedef clf_status (*op_fn)(clf_ctx_t *, void *);

static clf_status b_copy(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    return clf_tensor_copy(ctx, &s->big2, &s->big);
}
static clf_status b_add(clf_ctx_t *ctx, void *a) { struct st *s = a; return clf_add(ctx, &s->z, &s->x, &s->y); }
static clf_status b_bias(clf_ctx_t *ctx, void *a) { struct st *s = a; return clf_bias_add(ctx, &s->y, &s->bias); }
static clf_status b_dbias(clf_ctx_t *ctx, void *a) { struct st *s = a; return clf_bias_backward(ctx, &s->bias, &s->y); }
static clf_status b_res(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    return clf_residual_forward(ctx, &s->z, &s->x, &s->y, &s->drop);
}
static clf_status b_dres(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    return clf_residual_backward(ctx, &s->z, &s->y, &s->drop);
}
static clf_status b_ln(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    return clf_layernorm_forward(ctx, &s->y, &s->mean, &s->rstd, &s->x, &s->gain, &s->bias, 1e-6f);
}
static clf_status b_dln(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    return clf_layernorm_backward(ctx, &s->z, &s->gain, &s->bias, &s->y, &s->x, &s->mean, &s->rstd, &s->gain);
}
static clf_status b_sm(clf_ctx_t *ctx, void *a) { struct st *s = a; return clf_softmax_forward(ctx, &s->scores, &s->scores, NULL); }
static clf_status b_dsm(clf_ctx_t *ctx, void *a) { struct st *s = a; return clf_softmax_backward(ctx, &s->scores, &s->scores, &s->scores); }
static clf_status b_lsm(clf_ctx_t *ctx, void *a) { struct st *s = a; return clf_logsoftmax_forward(ctx, &s->logits, &s->logits); }
static clf_status b_emb(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    struct clf_embed_desc e = {
        .batch = 16, .len = TOKENS / 16, .scale = 16.0f, .drop = s->drop, .layout = CLF_POS_INTERLEAVED};
    return clf_embed_forward(ctx, &s->y, &s->ids, &s->table, NULL, &e);
}
static clf_status b_demb(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    struct clf_embed_desc e = {
        .batch = 16, .len = TOKENS / 16, .scale = 16.0f, .drop = s->drop, .layout = CLF_POS_INTERLEAVED};
    return clf_embed_backward(ctx, &s->dtable, NULL, &s->y, s->ix, &e);
}
static clf_status b_ffn(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    return clf_ffn_forward(ctx, &s->y, &s->hidden, &s->x, &s->p, &s->drop);
}
/* the same with SiLU and GELU (Marian's activations): the activation's cost */
static clf_status ffn_act(clf_ctx_t *ctx, struct st *s, enum clf_activation act)
{
    s->p.act = act;
    clf_status st = clf_ffn_forward(ctx, &s->y, &s->hidden, &s->x, &s->p, &s->drop);
    s->p.act = CLF_ACT_RELU;
    return st;
}
static clf_status b_ffn_silu(clf_ctx_t *ctx, void *a) { return ffn_act(ctx, a, CLF_ACT_SILU); }
static clf_status b_ffn_gelu(clf_ctx_t *ctx, void *a) { return ffn_act(ctx, a, CLF_ACT_GELU); }
static clf_status b_dffn(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    clf_status st = clf_ffn_forward(ctx, &s->y, &s->hidden, &s->x, &s->p, &s->drop);
    return st ? st : clf_ffn_backward(ctx, &s->z, &s->g, &s->y, &s->x, &s->hidden, &s->p, &s->drop);
}
static clf_status b_loss(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    struct clf_loss_desc l = {.smoothing = 0.1f, .grad_scale = 1.0f};
    return clf_loss_forward_backward(ctx, &s->loss, &s->z, &s->dtable, &s->logits, &s->x, &s->table, &s->targets, &l);
}
static clf_status b_adam(clf_ctx_t *ctx, void *a)
{
    struct st *s = a;
    struct clf_adam_desc d = clf_adam_defaults(1e-4f);
    d.clip_norm = 1.0f;
    return clf_adam_step(ctx, &s->adam[0], &s->adam[1], &s->adam[2], &s->adam[3], &s->adam[4], &d);
}

static clf_status tensor2(clf_ctx_t *ctx, clf_tensor *t, size_t rows, size_t cols, float fill)
{
    size_t sh[2] = {rows, cols};
    clf_status st = clf_tensor_init(ctx, t, 2, sh);
    return st ? st : clf_tensor_fill(ctx, t, fill);
}

static clf_status setup(clf_ctx_t *ctx, struct st *s, size_t d)
{
    memset(s, 0, sizeof *s);
    s->d = d, s->dff = 4 * d;
    s->drop = (struct clf_dropout){0.1f, 1, 1, 1};
    size_t T = TOKENS, nadam = 16u << 20;
    clf_status st;
    if ((st = tensor2(ctx, &s->x, T, d, 0.5f)) || (st = tensor2(ctx, &s->y, T, d, 0.25f)) ||
        (st = tensor2(ctx, &s->z, T, d, 0)) || (st = tensor2(ctx, &s->gain, 1, d, 1)) ||
        (st = tensor2(ctx, &s->bias, 1, d, 0)) || (st = tensor2(ctx, &s->mean, T, 1, 0)) ||
        (st = tensor2(ctx, &s->rstd, T, 1, 0)) || (st = tensor2(ctx, &s->hidden, T, s->dff, 0)) ||
        (st = tensor2(ctx, &s->logits, T, VOCAB, 0)) || (st = tensor2(ctx, &s->table, VOCAB, d, 0.01f)) ||
        (st = tensor2(ctx, &s->dtable, VOCAB, d, 0)) || (st = tensor2(ctx, &s->loss, 1, 2, 0)) ||
        (st = tensor2(ctx, &s->scores, T * HEADS, 128, 0.1f)) || (st = tensor2(ctx, &s->big, 16u << 20, 1, 0)) ||
        (st = tensor2(ctx, &s->big2, 16u << 20, 1, 0)) || (st = tensor2(ctx, &s->p.w1, d, s->dff, 0.01f)) ||
        (st = tensor2(ctx, &s->p.b1, 1, s->dff, 0)) || (st = tensor2(ctx, &s->p.w2, s->dff, d, 0.01f)) ||
        (st = tensor2(ctx, &s->p.b2, 1, d, 0)) || (st = tensor2(ctx, &s->g.w1, d, s->dff, 0)) ||
        (st = tensor2(ctx, &s->g.b1, 1, s->dff, 0)) || (st = tensor2(ctx, &s->g.w2, s->dff, d, 0)) ||
        (st = tensor2(ctx, &s->g.b2, 1, d, 0)))
        return st;
    for (int i = 0; i < 4; i++)
        if ((st = tensor2(ctx, &s->adam[i], nadam, 1, i == 3 ? 1e-3f : 0)))
            return st;
    if ((st = tensor2(ctx, &s->adam[4], clf_adam_scratch_size(ctx, nadam), 1, 0)))
        return st;
    int32_t *ids = malloc(T * sizeof *ids);
    if (!ids)
        return CLF_ERR_MEMORY;
    for (size_t i = 0; i < T; i++)
        ids[i] = (int32_t)((i * 2654435761u) % VOCAB);
    size_t nt = T;
    if (!(st = clf_tensor_init_dtype(ctx, &s->ids, CLF_I32, 1, &nt)) && !(st = clf_tensor_upload_i32(ctx, &s->ids, ids)) &&
        !(st = clf_tensor_init_dtype(ctx, &s->targets, CLF_I32, 1, &nt)) &&
        !(st = clf_tensor_upload_i32(ctx, &s->targets, ids)))
        st = clf_embed_index_init(ctx, &s->ix, ids, T, VOCAB);
    free(ids);
    return st;
}

static void teardown(struct st *s)
{
    clf_tensor *ts[] = {&s->x, &s->y, &s->z, &s->gain, &s->bias, &s->mean, &s->rstd, &s->hidden, &s->logits,
                        &s->table, &s->dtable, &s->loss, &s->scores, &s->big, &s->big2, &s->p.w1, &s->p.b1,
                        &s->p.w2, &s->p.b2, &s->g.w1, &s->g.b1, &s->g.w2, &s->g.b2, &s->ids, &s->targets};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clf_tensor_free(ts[i]);
    for (int i = 0; i < 5; i++)
        clf_tensor_free(&s->adam[i]);
    clf_embed_index_free(s->ix);
}

struct op_case {
    const char *name, *shape;
    op_fn fn;
    double bytes, flops;  /* per run; 0 where not meaningful */
};

enum { MAX_ROWS = 64 };

/* What bench ops measured: one row per (op, d). */
struct ops_record {
    struct measure_device dev;
    double roof;  /* the copy's GB/s */
    int n;
    struct ops_row {
        const char *op;
        size_t d;
        char shape[32];
        double seconds, gbps, gflops;  /* 0 where the op has no such figure */
    } rows[MAX_ROWS];
};

static void ops_json(FILE *f, const void *rec)
{
    const struct ops_record *o = rec;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "ops");
    measure_device_json(&w, &o->dev);
    cli_json_num(&w, "tokens", "%d", TOKENS);
    cli_json_num(&w, "vocab", "%d", VOCAB);
    cli_json_arr(&w, "results");
    for (int i = 0; i < o->n; i++) {
        const struct ops_row *r = &o->rows[i];
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "op", r->op);
        cli_json_num(&w, "d", "%zu", r->d);
        cli_json_str(&w, "shape", r->shape);
        cli_json_num(&w, "seconds", "%.6g", r->seconds);
        if (r->gbps > 0) {
            cli_json_num(&w, "gbps", "%.3f", r->gbps);
            cli_json_num(&w, "roof_fraction", "%.3f", o->roof > 0 ? r->gbps / o->roof : 0);
        }
        if (r->gflops > 0)
            cli_json_num(&w, "gflops", "%.3f", r->gflops);
        cli_json_end(&w);
    }
    cli_json_end(&w);
    cli_json_num(&w, "copy_gbps", "%.3f", o->roof);
    cli_json_end(&w);
}

static void ops_table(FILE *f, const void *rec)
{
    const struct ops_record *o = rec;
    fprintf(f, "Transformer ops on %s (%s): %d tokens, vocab %d, d_ff = 4·d; dropout 0.1 where it applies\n",
            o->dev.info.device_name, o->dev.info.platform_name, TOKENS, VOCAB);
    fprintf(f, "%-22s %4s %-14s %9s %8s %9s %7s\n", "op", "d", "shape", "ms", "GB/s", "GFLOP/s", "%roof");
    for (int i = 0; i < o->n; i++) {
        const struct ops_row *r = &o->rows[i];
        char g1[16] = "", g2[16] = "", g3[16] = "";
        if (r->gbps > 0)
            snprintf(g1, 16, "%.2f", r->gbps), snprintf(g3, 16, "%.0f%%", o->roof > 0 ? 100 * r->gbps / o->roof : 0);
        if (r->gflops > 0)
            snprintf(g2, 16, "%.1f", r->gflops);
        fprintf(f, "%-22s %4zu %-14s %9.3f %8s %9s %7s\n", r->op, r->d, r->shape, r->seconds * 1e3, g1, g2, g3);
    }
    fprintf(f, "GB/s counts the bytes each op must read and write at least; %%roof is that over the copy's GB/s\n");
}

const char bench_ops_usage[] = "clformer bench ops [--json] [--device D] [--quick]";

int bench_ops(int argc, char **argv, struct bench_result *out)
{
    struct bench_opts o;
    if (!bench_parse(argc, argv, &o, bench_ops_usage))
        return 2;
    struct ops_record *rec = calloc(1, sizeof *rec);
    clf_ctx_t *ctx = rec ? cli_open(o.device) : NULL;
    if (!ctx) {
        free(rec);
        return 1;
    }
    measure_device_get(ctx, &rec->dev);
    const double min_s = o.quick ? 0.1 : 0.5;
    const size_t dims[] = {256, 512};
    int rc = 0;
    for (int di = 0; di < (o.quick ? 1 : 2) && rc == 0; di++) {
        size_t d = dims[di], T = TOKENS, dff = 4 * d, n = T * d, V = VOCAB, A = 16u << 20, S = T * HEADS * 128;
        struct st s;
        clf_status st = setup(ctx, &s, d);
        if (st) {
            rc = cli_fail(ctx, st, "bench ops setup");
            teardown(&s);
            break;
        }
        char sh_td[32], sh_ff[32], sh_tv[32], sh_sc[32], sh_ad[32];
        snprintf(sh_td, 32, "%zux%zu", T, d), snprintf(sh_ff, 32, "%zux%zux%zu", T, d, dff);
        snprintf(sh_tv, 32, "%zux%zu", T, V), snprintf(sh_sc, 32, "%zux%d", T * HEADS, 128);
        snprintf(sh_ad, 32, "%zuM", A >> 20);
        const struct op_case cases[] = {
            {"copy (roof)", "64MiB", b_copy, 2.0 * A * 4, 0},
            {"add", sh_td, b_add, 3.0 * n * 4, 0},
            {"bias_add", sh_td, b_bias, 2.0 * n * 4, 0},
            {"bias_backward", sh_td, b_dbias, 1.0 * n * 4, 0},
            {"residual+dropout fwd", sh_td, b_res, 3.0 * n * 4, 0},
            {"residual+dropout bwd", sh_td, b_dres, 2.0 * n * 4, 0},
            {"layernorm fwd", sh_td, b_ln, 2.0 * n * 4, 0},
            {"layernorm bwd", sh_td, b_dln, 3.0 * n * 4, 0},
            {"softmax fwd", sh_sc, b_sm, 2.0 * S * 4, 0},
            {"softmax bwd", sh_sc, b_dsm, 3.0 * S * 4, 0},
            {"logsoftmax (logits)", sh_tv, b_lsm, 2.0 * T * V * 4, 0},
            {"embed+pos+dropout fwd", sh_td, b_emb, 2.0 * n * 4, 0},
            {"embed bwd", sh_td, b_demb, 3.0 * n * 4, 0},
            {"adam (+clip)", sh_ad, b_adam, 8.0 * A * 4, 0},
            {"ffn fwd", sh_ff, b_ffn, 0, 4.0 * T * d * dff},
            {"ffn fwd+bwd", sh_ff, b_dffn, 0, 12.0 * T * d * dff},
            {"ffn fwd silu", sh_ff, b_ffn_silu, 0, 4.0 * T * d * dff},
            {"ffn fwd gelu", sh_ff, b_ffn_gelu, 0, 4.0 * T * d * dff},
            {"logits+loss fwd+bwd", sh_tv, b_loss, 0, 6.0 * T * V * d},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const struct op_case *c = &cases[i];
            if (i == 0 && di > 0)
                continue;  /* the roof does not depend on d */
            double t = measure_time(ctx, c->fn, &s, min_s);
            if (t < 0) {
                rc = cli_fail(ctx, CLF_ERR_OPENCL, c->name);
                break;
            }
            double gbps = c->bytes / t * 1e-9;
            if (i == 0)
                rec->roof = gbps;
            if (rec->n < MAX_ROWS) {
                struct ops_row *r = &rec->rows[rec->n++];
                *r = (struct ops_row){c->name, d, "", t, gbps, c->flops / t * 1e-9};
                snprintf(r->shape, sizeof r->shape, "%s", c->shape);
            }
        }
        teardown(&s);
    }
    clf_ctx_free(ctx);
    if (rc) {
        free(rec);
        return rc;
    }
    *out = (struct bench_result){rec, ops_json, ops_table};
    return 0;
}
