/* bench.h: what the benchmarks share: a timing loop (on cli_now, cli.h) that
 * waits for the device, and the JSON preamble that names the device so
 * results from different machines line up. */
#ifndef CLF_BENCH_H
#define CLF_BENCH_H

#include <stdbool.h>
#include <stdio.h>

#include "clformer.h"
#include "clformer_model.h"

/* Runs fn(arg) once to warm up, then repeatedly until `min_seconds` have
 * passed (at least 3 times), waiting for the device after each run; returns
 * the median seconds per run, or a negative value if fn failed. */
double bench_time(clf_ctx_t *ctx, clf_status (*fn)(clf_ctx_t *, void *), void *arg, double min_seconds);

/* Writes `"device": {...}, ` fields naming the device and driver. */
void bench_json_device(FILE *f, clf_ctx_t *ctx);

/* The model a benchmark times: `preset`'s shape with the PyTorch peer's
 * vocabulary (8000) and random weights from seed 1, so that `bench train`
 * and `bench translate` time the same model. False (reported) on failure. */
bool bench_model(clf_ctx_t *ctx, const char *preset, struct clf_model_config *c, clf_model_t **m);

/* Common options of every `clformer bench X`: --json, --device D, --quick. */
struct bench_opts {
    bool json;
    bool quick;
    const char *device;
};
/* Parses argv[1..]; unknown options are a usage error (returns false). */
bool bench_parse(int argc, char **argv, struct bench_opts *o, const char *usage);

/* The registered benchmarks (`clformer bench NAME`). `bench all` runs
 * every one but itself and `compare`, with --json (and --quick, --device). */
struct bench_entry {
    const char *name;
    int (*run)(int argc, char **argv);
};
const struct bench_entry *bench_list(size_t *n);

int bench_all(int argc, char **argv);      /* bench_all.c */
int bench_compare(int argc, char **argv);  /* bench_compare.c */
int bench_gemm(int argc, char **argv);
int bench_train(int argc, char **argv);
int bench_translate(int argc, char **argv);
int bench_attention(int argc, char **argv);
int bench_ops(int argc, char **argv);

#endif
