/* bench_train.c: `clformer bench train`: target tokens per second of full
 * training steps (forward, backward, Adam; dropout on) of a preset on
 * B = 128 sentences of 20 tokens, the shape bench/peers/torch_peer.py
 * train measures, and where the device time goes (GEMM, attention, other
 * ops) from one profiled step. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

struct train_run {
    clf_model_t *m;
    struct clf_model_batch b;
    uint32_t step;
};

static clf_status one_step(clf_ctx_t *ctx, void *arg)
{
    (void)ctx;
    struct train_run *r = arg;
    struct clf_step_opts o = {true, ++r->step, 1.0f / (float)(r->b.batch * r->b.tgt_len)};
    double loss, tokens;
    clf_status st = clf_model_zero_grad(r->m);
    if (st == CLF_OK)
        st = clf_model_forward_backward(r->m, &r->b, &o, &loss, &tokens);
    if (st == CLF_OK)
        st = clf_model_adam_step(r->m, 1e-4f, 0.0f);
    return st;
}

static const char *category(const char *name)
{
    if (strstr(name, "gemm"))
        return "gemm";
    if (strstr(name, "attn") || strstr(name, "attention") || strstr(name, "flash"))
        return "attention";
    return "other";
}

/* Reads `"tgt_tokens_per_s": X` from a torch_peer.py train line. */
static double peer_tokens(const char *path)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[4096];
    double v = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"tgt_tokens_per_s\":");
        if (p && strstr(line, "train_step"))
            v = atof(p + 19);
    }
    if (f)
        fclose(f);
    return v;
}

int bench_train(int argc, char **argv)
{
    const char *preset = "small", *peer = NULL;
    /* our own options first, then the common ones */
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    bool bad = false;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && (cli_opt(argc, argv, &i, "--preset", &preset, &bad) || cli_opt(argc, argv, &i, "--peer", &peer, &bad)))
            continue;
        rest[nrest++] = argv[i];
    }
    struct bench_opts o;
    if (bad || !bench_parse(nrest, rest, &o, "clformer bench train [--preset P] [--peer FILE] [--json] [--device D] [--quick]")) {
        free(rest);
        return 2;
    }
    free(rest);
    clf_ctx_t *ctx = cli_open(o.device);
    if (!ctx)
        return 1;
    int rc = 1;
    struct clf_model_config c;
    clf_model_t *m = NULL;
    struct clf_profile_entry *prof = NULL;
    size_t nprof = 0;
    enum { B = 128, N = 20 };
    int32_t *ids = malloc(3 * B * N * sizeof *ids);
    if (!ids) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    if (!bench_model(ctx, preset, &c, &m))
        goto done;
    unsigned seed = 5;
    for (int i = 0; i < 3 * B * N; i++)
        ids[i] = 4 + (int32_t)(clf_rand24(&seed) % (unsigned)(c.vocab - 4));
    struct train_run r = {m, {B, N, N, ids, ids + B * N, ids + 2 * B * N}, 0};
    double t = bench_time(ctx, one_step, &r, o.quick ? 1.0 : 10.0);
    if (t < 0) {
        cli_fail(ctx, CLF_ERR_OPENCL, "training step");
        goto done;
    }
    /* one more step, profiled */
    clf_status st;
    if ((st = clf_ctx_profile_start(ctx)) || (st = one_step(ctx, &r)) ||
        (st = clf_ctx_profile_report(ctx, &prof, &nprof))) {
        cli_fail(ctx, st, "profiling a step");
        goto done;
    }
    double total = 0, cat[3] = {0};
    const char *cats[3] = {"gemm", "attention", "other"};
    for (size_t i = 0; i < nprof; i++) {
        total += prof[i].seconds;
        for (int k = 0; k < 3; k++)
            if (!strcmp(category(prof[i].name), cats[k]))
                cat[k] += prof[i].seconds;
    }
    double tps = B * N / t, ptps = peer_tokens(peer);
    if (o.json) {
        printf("{\"bench\": \"train\", ");
        bench_json_device(stdout, ctx);
        printf("\"preset\": \"%s\", \"batch\": %d, \"len\": %d, \"seconds_per_step\": %.4f, \"tgt_tokens_per_s\": %.1f",
               preset, B, N, t, tps);
        if (ptps > 0)
            printf(", \"peer_tgt_tokens_per_s\": %.1f, \"ratio\": %.3f", ptps, tps / ptps);
        printf(", \"device_seconds\": {\"gemm\": %.4f, \"attention\": %.4f, \"other\": %.4f}}\n", cat[0], cat[1],
               cat[2]);
    } else {
        printf("training step, preset %s (%d+%d layers, d_model %d, vocab %d), %d sentences x %d tokens, on %s\n",
               preset, c.enc_layers, c.dec_layers, c.d_model, c.vocab, B, N, clf_ctx_device(ctx)->device_name);
        printf("  %.3f s per step (median), %.1f target tokens/s", t, tps);
        if (ptps > 0)
            printf("; PyTorch %.1f tokens/s, ratio %.2fx", ptps, tps / ptps);
        printf("\n  device time of one step: %.3f s\n", total);
        for (int k = 0; k < 3; k++)
            printf("    %-10s %7.3f s  %5.1f%%\n", cats[k], cat[k], 100 * cat[k] / (total > 0 ? total : 1));
        struct clf_cache_stats cs;
        clf_ctx_cache_stats(ctx, &cs);
        printf("  kernel programs: %u compiled, %u loaded from the disk cache\n", cs.programs_built, cs.programs_loaded);
        printf("  longest kernels:\n");
        for (size_t i = 0; i < nprof && i < 8; i++)
            printf("    %-32s %5u calls %7.3f s\n", prof[i].name, prof[i].calls, prof[i].seconds);
    }
    rc = 0;
done:
    free(prof);
    free(ids);
    clf_model_free(m);
    clf_ctx_free(ctx);
    return rc;
}
