/* bench_translate.c: `clformer bench translate`: sentences/s and target
 * tokens/s of clf_model_translate, greedy and beam 4, on a fixed synthetic
 * input (200 sentences of random ids, 5..30 tokens, fixed seed) with a
 * model of a preset's shape and random weights (fixed seed), in batches of
 * 32 (--batch N) sorted by length as `clformer translate` makes them; the
 * beam search's width is 4 (--beam N). Random weights
 * rarely choose EOS, so the outputs run to the length limit: source length
 * + max_extra (default 3, about the length of a real translation); the
 * tokens produced are reported with the rates. A second, profiled pass
 * splits the time per decoder step into device time (GEMM, attention,
 * other kernels) and the host's share (wall minus device), beside the
 * host's share predicted from the kernels launched per step
 * (clf_ctx_launches) times an empty kernel's enqueue latency
 * (clf_peak_launch_latency, bench peak's probe, measured here before the
 * profiled pass).
 *
 * A peer on the same weights and input: --export DIR writes the model
 * (DIR/model.safetensors) and the sorted input (DIR/input.ids, one source
 * of ids a line) and times nothing; bench/peers/ct2_peer.py (CTranslate2)
 * translates them, and its JSON
 * lines --peer FILE reads back ("what": "translate", matched on beam and
 * sentences) to print its rates beside ours. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clformer/advanced/files.h>
#include "bench.h"
#include "cli.h"

enum { SENTENCES = 200, QUICK_SENTENCES = 64, MIN_LEN = 5, MAX_LEN = 30, BATCH = 32, MAX_BATCH = 256, TOP = 12 };

struct translate_input {
    size_t n;
    int32_t *ids;          /* (n, MAX_LEN), row i holds len[i] ids */
    const int32_t **src;   /* (n) rows, sorted by length */
    size_t *len;           /* (n) */
};

/* What one search measured: the record printed as a table or as JSON. */
struct translate_result {
    const char *search;    /* "greedy" or "beam" */
    int beam;
    size_t sentences, tgt_tokens, steps;  /* tokens without EOS; decoder steps of the profiled pass */
    size_t calls;          /* profiled calls (kernel launches and GEMMs) of the profiled pass */
    uint64_t launches;     /* kernels enqueued in the profiled pass (clf_ctx_launches; GEMMs not) */
    double seconds;        /* wall, the unprofiled pass */
    double prof_seconds;   /* wall, the profiled pass */
    double device[3];      /* device seconds of the profiled pass: gemm, attention, other */
    double peer_sentences_per_s, peer_tokens_per_s;  /* the peer's (0: none) */
    size_t ntop;
    struct clf_profile_entry top[TOP];  /* the profiled pass's longest kernels */
};

static int by_length(const void *a, const void *b)
{
    const size_t *x = a, *y = b;  /* (len, index) pairs */
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

static bool input_init(struct translate_input *in, size_t n, int vocab)
{
    in->n = n;
    in->ids = malloc(n * MAX_LEN * sizeof *in->ids);
    in->src = malloc(n * sizeof *in->src);
    in->len = malloc(n * sizeof *in->len);
    size_t *order = malloc(2 * n * sizeof *order);
    if (!in->ids || !in->src || !in->len || !order) {
        free(order);
        return false;
    }
    unsigned seed = 11;
    for (size_t i = 0; i < n; i++) {
        order[2 * i] = MIN_LEN + clf_rand24(&seed) % (MAX_LEN - MIN_LEN + 1);
        order[2 * i + 1] = i;
        for (size_t t = 0; t < MAX_LEN; t++) {
            in->ids[i * MAX_LEN + t] = 4 + (int32_t)(clf_rand24(&seed) % (unsigned)(vocab - 4));
        }
    }
    qsort(order, n, 2 * sizeof *order, by_length);
    for (size_t i = 0; i < n; i++) {
        in->len[i] = order[2 * i];
        in->src[i] = in->ids + order[2 * i + 1] * MAX_LEN;
    }
    free(order);
    return true;
}

static void input_free(struct translate_input *in)
{
    free(in->ids), free(in->src), free(in->len);
}

/* Translates sentences [0, n) in batches; adds the tokens produced. */
static clf_status translate_all(clf_model_t *m, const struct translate_input *in, size_t n, size_t batch,
                                const struct clf_translate_opts *o, size_t *tokens)
{
    struct clf_hypothesis h[MAX_BATCH];
    *tokens = 0;
    for (size_t at = 0; at < n; at += batch) {
        size_t c = n - at < batch ? n - at : batch;
        clf_status st = clf_model_translate(m, in->src + at, in->len + at, c, o, h);
        if (st != CLF_OK)
            return st;
        for (size_t i = 0; i < c; i++)
            *tokens += h[i].n;
        clf_hypotheses_free(h, c);
    }
    return CLF_OK;
}

/* The profiled pass: device time per category (gemm, attention, other)
 * and decoder steps (one log-softmax, or its log-sum-exp alone, per step). */
static clf_status profiled(clf_ctx_t *ctx, clf_model_t *m, const struct translate_input *in, size_t batch,
                           const struct clf_translate_opts *o, struct translate_result *r)
{
    struct clf_profile_entry *prof = NULL;
    size_t nprof = 0, tokens;
    clf_status st = clf_ctx_profile_start(ctx);
    if (st != CLF_OK)
        return st;
    uint64_t l0 = clf_ctx_launches(ctx);
    double t0 = clf_now();
    if ((st = translate_all(m, in, in->n, batch, o, &tokens)) || (st = clf_ctx_profile_report(ctx, &prof, &nprof)))
        return st;
    r->prof_seconds = clf_now() - t0;
    r->launches = clf_ctx_launches(ctx) - l0;
    for (size_t i = 0; i < nprof; i++) {
        r->device[bench_category(prof[i].name)] += prof[i].seconds;
        r->calls += prof[i].calls;
        if (strstr(prof[i].name, "logsoftmax") || !strcmp(prof[i].name, "lse_rows"))  /* one a step */
            r->steps += prof[i].calls;
    }
    for (size_t i = 0; i < nprof && r->ntop < TOP; i++)  /* the report is longest first */
        r->top[r->ntop++] = prof[i];
    free(prof);
    return CLF_OK;
}

/* What bench translate measured: both searches on one input. */
struct translate_record {
    struct measure_device dev;
    char preset[32];
    struct clf_model_config c;
    int max_extra, batch;
    char compute[16];      /* the compute type that ran (clf_model_compute) */
    double enqueue_us;     /* an empty kernel's enqueue, median (clf_peak_launch_latency) */
    int latency_launches;  /* how many that median is of */
    struct translate_result r[2];
    struct bench_memory mem;  /* over the whole benchmark */
};

static void translate_json(FILE *f, const void *rec)
{
    const struct translate_record *t = rec;
    const struct translate_result *r = t->r;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "translate");
    measure_device_json(&w, &t->dev);
    cli_json_str(&w, "preset", t->preset);
    cli_json_num(&w, "vocab", "%d", t->c.vocab);
    cli_json_num(&w, "sentences", "%zu", r[0].sentences);
    cli_json_num(&w, "batch", "%d", t->batch);
    cli_json_num(&w, "max_extra", "%d", t->max_extra);
    cli_json_str(&w, "compute_type", t->compute);
    cli_json_str(&w, "weights", "random");  /* bench_model's, seed 1: no BLEU to give */
    cli_json_num(&w, "launch_enqueue_us", "%.2f", t->enqueue_us);
    cli_json_arr(&w, "results");
    for (int k = 0; k < 2; k++) {
        const struct translate_result *x = &r[k];
        double dev = x->device[0] + x->device[1] + x->device[2], s = x->steps ? (double)x->steps : 1;
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "search", x->search);
        cli_json_num(&w, "beam", "%d", x->beam);
        cli_json_num(&w, "seconds", "%.3f", x->seconds);
        cli_json_num(&w, "sentences_per_s", "%.2f", x->sentences / x->seconds);
        cli_json_num(&w, "tgt_tokens_per_s", "%.1f", x->tgt_tokens / x->seconds);
        cli_json_obj(&w, "counts");
        cli_json_num(&w, "tgt_tokens", "%zu", x->tgt_tokens);
        cli_json_num(&w, "decoder_steps", "%zu", x->steps);
        cli_json_num(&w, "calls_per_step", "%.1f", x->calls / s);
        cli_json_num(&w, "launches_per_step", "%.1f", (double)x->launches / s);
        cli_json_end(&w);
        cli_json_obj(&w, "step_ms");
        cli_json_num(&w, "wall", "%.3f", 1e3 * x->prof_seconds / s);
        cli_json_num(&w, "gemm", "%.3f", 1e3 * x->device[0] / s);
        cli_json_num(&w, "attention", "%.3f", 1e3 * x->device[1] / s);
        cli_json_num(&w, "other", "%.3f", 1e3 * x->device[2] / s);
        cli_json_num(&w, "host", "%.3f", 1e3 * (x->prof_seconds - dev) / s);
        cli_json_num(&w, "host_pred", "%.3f", 1e-3 * t->enqueue_us * (double)x->launches / s);
        cli_json_end(&w);
        if (x->peer_sentences_per_s > 0) {
            cli_json_obj(&w, "peer");
            cli_json_str(&w, "name", "ctranslate2");
            cli_json_num(&w, "sentences_per_s", "%.2f", x->peer_sentences_per_s);
            cli_json_num(&w, "tgt_tokens_per_s", "%.1f", x->peer_tokens_per_s);
            cli_json_num(&w, "ratio", "%.3f", x->sentences / x->seconds / x->peer_sentences_per_s);
            cli_json_end(&w);
        }
        cli_json_end(&w);
    }
    cli_json_end(&w);
    bench_memory_json(&w, &t->mem);
    cli_json_end(&w);
}

static void translate_table(FILE *f, const void *rec)
{
    const struct translate_record *t = rec;
    const struct translate_result *r = t->r;
    fprintf(f, "translation, preset %s (%d+%d layers, d_model %d, vocab %d, random weights), %zu sentences of %d..%d "
               "random ids in batches of %d, outputs capped at source length + %d, on %s, compute type %s\n",
               t->preset, t->c.enc_layers, t->c.dec_layers, t->c.d_model, t->c.vocab, r[0].sentences, MIN_LEN,
               MAX_LEN, t->batch, t->max_extra, t->dev.info.device_name, t->compute);
    fprintf(f, "  %-8s %8s %12s %14s %10s %8s\n", "search", "seconds", "sentences/s", "tgt tokens/s", "tokens",
            "steps");
    for (int k = 0; k < 2; k++)
        fprintf(f, "  %-6s%2d %8.2f %12.2f %14.1f %10zu %8zu\n", r[k].search, r[k].beam, r[k].seconds,
                   r[k].sentences / r[k].seconds, r[k].tgt_tokens / r[k].seconds, r[k].tgt_tokens, r[k].steps);
    for (int k = 0; k < 2; k++)
        if (r[k].peer_sentences_per_s > 0)
            fprintf(f, "  CTranslate2 (same weights and input), %s %d: %.2f sentences/s, %.1f tgt tokens/s; "
                       "clformer/CTranslate2 %.2fx\n",
                    r[k].search, r[k].beam, r[k].peer_sentences_per_s, r[k].peer_tokens_per_s,
                    r[k].sentences / r[k].seconds / r[k].peer_sentences_per_s);
    fprintf(f, "  per decoder step (profiled pass; the encoder's time is spread over the steps), ms, calls "
               "(kernel launches and GEMMs) and kernel launches per step; host predicted = launches x %.2f us, "
               "an empty kernel's enqueue (median of %d):\n", t->enqueue_us, t->latency_launches);
    fprintf(f, "  %-8s %8s %8s %10s %8s %8s %9s %8s %8s\n", "search", "wall", "gemm", "attention", "other", "host",
            "predicted", "calls", "launches");
    for (int k = 0; k < 2; k++) {
        double s = r[k].steps ? (double)r[k].steps : 1, dev = r[k].device[0] + r[k].device[1] + r[k].device[2];
        fprintf(f, "  %-6s%2d %8.3f", r[k].search, r[k].beam, 1e3 * r[k].prof_seconds / s);
        for (int i = 0; i < 3; i++)
            fprintf(f, i == 1 ? " %10.3f" : " %8.3f", 1e3 * r[k].device[i] / s);
        fprintf(f, " %8.3f %9.3f %8.1f %8.1f\n", 1e3 * (r[k].prof_seconds - dev) / s,
                1e-3 * t->enqueue_us * (double)r[k].launches / s, r[k].calls / s, (double)r[k].launches / s);
    }
    fprintf(f, "  memory: %.1f MiB of device buffers at most, %.1f MiB resident at most\n", t->mem.device_peak_mib,
            t->mem.max_rss_mib);
    for (int k = 0; k < 2; k++) {
        double s = r[k].steps ? (double)r[k].steps : 1;
        fprintf(f, "  longest kernels, %s %d (ms and launches per step):\n", r[k].search, r[k].beam);
        for (size_t i = 0; i < r[k].ntop; i++)
            fprintf(f, "    %-36s %8.3f %6.1f\n", r[k].top[i].name, 1e3 * r[k].top[i].seconds / s,
                    r[k].top[i].calls / s);
    }
}

/* The model and the sorted input, for a peer: DIR/model.safetensors and
 * DIR/input.ids (written to a temporary name, then renamed). */
static bool export_peer_input(clf_ctx_t *ctx, clf_model_t *m, const struct translate_input *in, const char *dir)
{
    char path[CLF_PATH_MAX];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    clf_status st = clf_model_save(m, path, NULL);
    if (st != CLF_OK) {
        cli_fail(ctx, st, "--export");
        return false;
    }
    snprintf(path, sizeof path, "%s/input.ids", dir);
    struct clf_file_out out;
    bool opened = clf_file_out_open(&out, path) == CLF_OK, ok = opened;
    for (size_t i = 0; ok && i < in->n; i++)
        for (size_t t = 0; ok && t < in->len[i]; t++)
            ok = fprintf(out.f, "%d%c", (int)in->src[i][t], t + 1 < in->len[i] ? ' ' : '\n') > 0;
    if (!opened || clf_file_out_close(&out, ok) != CLF_OK) {
        fprintf(stderr, "clformer bench translate: cannot write %s (--export)\n", path);
        return false;
    }
    fprintf(stderr, "wrote %s/model.safetensors and %s\n", dir, path);
    return true;
}

const char bench_translate_usage[] =
    "clformer bench translate [--preset P] [--max-extra N] [--export DIR] [--peer FILE] [--compute-type T] "
    "[--batch N] [--beam N] [--model CKPT --src FILE --ref FILE [--lines N]] [--json] [--device D] [--quick]";

int bench_translate(int argc, char **argv, struct bench_result *out)
{
    const char *preset = "small", *extra = NULL, *export_dir = NULL, *peer = NULL, *compute = NULL;
    const char *model = NULL, *src = NULL, *ref = NULL;
    double batch = BATCH, beam = 4, lines = 0;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    bool bad = !rest;
    for (int i = 0; i < argc && rest; i++) {
        if (i > 0 &&
            (cli_opt(argc, argv, &i, "--preset", &preset, &bad) || cli_opt(argc, argv, &i, "--max-extra", &extra, &bad) ||
             cli_opt(argc, argv, &i, "--export", &export_dir, &bad) || cli_opt(argc, argv, &i, "--peer", &peer, &bad) ||
             cli_opt(argc, argv, &i, "--compute-type", &compute, &bad) ||
             cli_opt(argc, argv, &i, "--model", &model, &bad) || cli_opt(argc, argv, &i, "--src", &src, &bad) ||
             cli_opt(argc, argv, &i, "--ref", &ref, &bad) ||
             cli_opt_number(argc, argv, &i, "--lines", 1, 1e9, true, &lines, &bad) ||
             cli_opt_number(argc, argv, &i, "--batch", 1, MAX_BATCH, true, &batch, &bad) ||
             cli_opt_number(argc, argv, &i, "--beam", 1, 64, true, &beam, &bad)))
            continue;
        rest[nrest++] = argv[i];
    }
    struct bench_opts o;
    if (bad || !bench_parse(nrest, rest, &o, bench_translate_usage)) {
        free(rest);
        return 2;
    }
    free(rest);
    if (model) {  /* real text with a trained model: speed and BLEU */
        struct bench_model_opts mo = {.model = model, .src = src, .ref = ref, .compute = compute,
                                      .device = o.device, .batch = (size_t)batch, .beam = (int)beam,
                                      .lines = lines > 0 ? (size_t)lines : o.quick ? QUICK_SENTENCES : SENTENCES};
        return bench_translate_model(&mo, out);
    }
    if (src || ref || lines > 0) {
        fprintf(stderr, "clformer bench translate: --src, --ref and --lines go with --model\n");
        return 2;
    }
    const int max_extra = extra ? atoi(extra) : 3;
    if (max_extra < 1) {
        fprintf(stderr, "clformer bench translate: --max-extra wants a number >= 1\n");
        return 2;
    }
    struct bench_memory mem;
    bench_memory_begin(&mem);  /* before the context: its buffers count too */
    clf_ctx_t *ctx = cli_open(o.device);
    if (!ctx)
        return 1;
    int rc = 1;
    struct clf_model_config c;
    clf_model_t *m = NULL;
    struct translate_input in = {0};
    if (!bench_model(ctx, preset, &c, &m))
        goto done;
    clf_status st;
    if ((st = clf_model_compute_set(m, compute)) != CLF_OK) {  /* default: float32, the random model's */
        cli_fail(ctx, st, "--compute-type");
        goto done;
    }
    if (!input_init(&in, o.quick ? QUICK_SENTENCES : SENTENCES, c.vocab)) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    if (export_dir) {  /* for the peer: nothing is timed */
        rc = export_peer_input(ctx, m, &in, export_dir) ? 0 : 1;
        goto done;
    }
    struct clf_translate_opts opts[2] = {clf_translate_opts_default(), clf_translate_opts_default()};
    opts[0].greedy = true;
    opts[0].max_extra = opts[1].max_extra = max_extra;
    opts[1].beam = (int)beam;
    struct translate_result r[2] = {{.search = "greedy", .beam = 1, .sentences = in.n},
                                    {.search = "beam", .beam = opts[1].beam, .sentences = in.n}};
    size_t tokens;
    for (int k = 0; k < 2; k++)  /* warm-up: compiles (or loads) every kernel */
        if ((st = translate_all(m, &in, (size_t)batch < in.n ? (size_t)batch : in.n, (size_t)batch, &opts[k], &tokens)))
            goto failed;
    for (int k = 0; k < 2; k++) {  /* timed, before profiling (which stays on) */
        double t0 = clf_now();
        if ((st = translate_all(m, &in, in.n, (size_t)batch, &opts[k], &r[k].tgt_tokens)))
            goto failed;
        r[k].seconds = clf_now() - t0;
    }
    /* the enqueue latency, on the plain queue before profiling recreates
     * it (whose events add to the measured share, not to this) */
    double enqueue_us = 0, finish_us = 0;
    const int latency_launches = o.quick ? 200 : 1000;
    if ((st = clf_peak_launch_latency(ctx, latency_launches, &enqueue_us, &finish_us)))
        goto failed;
    for (int k = 0; k < 2; k++)
        if ((st = profiled(ctx, m, &in, (size_t)batch, &opts[k], &r[k])))
            goto failed;
    for (int k = 0; k < 2 && peer; k++) {
        const char *keys[2] = {"beam", "sentences"};
        const double values[2] = {r[k].beam, (double)in.n};
        r[k].peer_sentences_per_s = bench_peer_figure(peer, "translate", keys, values, 2, "sentences_per_s");
        r[k].peer_tokens_per_s = bench_peer_figure(peer, "translate", keys, values, 2, "tgt_tokens_per_s");
        if (r[k].peer_sentences_per_s <= 0)
            fprintf(stderr, "clformer bench translate: %s holds no translate line for beam %d and %zu sentences\n",
                    peer, r[k].beam, in.n);
    }
    struct translate_record *rec = malloc(sizeof *rec);
    if (!rec) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    measure_device_get(ctx, &rec->dev);
    snprintf(rec->preset, sizeof rec->preset, "%s", preset);
    rec->c = c;
    rec->max_extra = max_extra;
    rec->batch = (int)batch;
    rec->enqueue_us = enqueue_us;
    rec->latency_launches = latency_launches;
    snprintf(rec->compute, sizeof rec->compute, "%s", clf_compute_type_str(clf_model_compute(m)));
    memcpy(rec->r, r, sizeof r);
    bench_memory_end(&mem);
    rec->mem = mem;
    *out = (struct bench_result){rec, translate_json, translate_table};
    rc = 0;
    goto done;
failed:
    cli_fail(ctx, st, "translating");
done:
    input_free(&in);
    clf_model_free(m);
    clf_ctx_free(ctx);
    return rc;
}
