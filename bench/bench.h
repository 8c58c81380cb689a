/* bench.h: what the benchmarks share beside measure.h's timing loop and
 * device record (cli/): the model and batch they time, and the result
 * record each benchmark hands back, which `clformer bench NAME` prints as a
 * table or as JSON and `bench all` gathers into one report. */
#ifndef CLF_BENCH_H
#define CLF_BENCH_H

#include <stdbool.h>
#include <stdio.h>

#include <clformer/advanced.h>
#include <clformer/model.h>
#include "energy.h"
#include "measure.h"
#include "report.h"

/* The model a benchmark times: `preset`'s shape with the PyTorch peer's
 * vocabulary (8000) and random weights from seed 1, so that `bench train`
 * and `bench translate` time the same model. False (reported) on failure. */
bool bench_model(clf_ctx_t *ctx, const char *preset, struct clf_model_config *c, clf_model_t **m);
/* That model's config alone (for a trainer that makes the model: bench train). */
bool bench_config(const char *preset, struct clf_model_config *c);

/* A batch of b sentences of n random tokens (ids 4 .. vocab-1) on each
 * side, each rank its own, in ids (3·b·n). */
struct clf_model_batch bench_batch(const struct clf_model_config *c, int32_t *ids, size_t b, size_t n);

/* Where a profiled kernel's device time goes: 0 GEMM, 1 attention, 2 the
 * other ops; bench_categories names them. */
int bench_category(const char *kernel);
extern const char *const bench_categories[3];

/* The last line of a peer file (bench/peers/torch_peer.py's JSON lines)
 * whose "what" is `what` and whose numbers `key` equal `value` (keys NULL:
 * any line of that kind), read through clformer_json.h: its number `field`,
 * or 0 when there is none (no file, no such line). */
double bench_peer_figure(const char *path, const char *what, const char *const *keys, const double *values,
                         size_t nkeys, const char *field);

/* Memory a benchmark took: the most device memory the library held at
 * once (clf_memory_stats) and the process's peak resident set, from
 * bench_memory_begin to bench_memory_end, in MiB. The resident peak is
 * reset at the start where Linux allows it (/proc/self/clear_refs, "5");
 * where not (rss_reset false) it is the whole process's, earlier
 * benchmarks of `bench all` included. */
struct bench_memory {
    double device_peak_mib, max_rss_mib;
    bool rss_reset;
    struct bench_energy energy;  /* over the same span (energy.h) */
    double energy_j;             /* NaN: the machine exposes no counter */
};
void bench_memory_begin(struct bench_memory *m);
void bench_memory_end(struct bench_memory *m);
/* Writes `"memory": {"case": "memory", "device_peak_mib": …, "max_rss_mib": …}`
 * and `"energy": {"case": "energy", "energy_j": … or null}` into w's open
 * object: report.c reads them as the cases "memory" and "energy" (no
 * flags in them: a true flag would join the case's name). */
void bench_memory_json(struct cli_json *w, const struct bench_memory *m);

/* Common options of every `clformer bench X`: --device D, --quick (--json
 * is bench_run's: how the result is printed, not what is measured). */
struct bench_opts {
    bool quick;
    const char *device;
};
/* Parses argv[1..]; unknown options are a usage error (returns false). */
bool bench_parse(int argc, char **argv, struct bench_opts *o, const char *usage);

/* What a benchmark measured: its record (malloc'd, freed with free()) and
 * the two ways of printing it. json writes one object, {"bench": NAME, …},
 * without a newline. */
struct bench_result {
    void *record;
    void (*json)(FILE *f, const void *record);
    void (*table)(FILE *f, const void *record);
};
void bench_result_free(struct bench_result *r);

/* The registered benchmarks (`clformer bench NAME`). A benchmark measures:
 * it takes its options (argv[0] is its name), fills *out and returns 0, or
 * returns the exit status having printed why (2: a usage error); a rank
 * other than 0 of an MPI job returns 0 with no record (only rank 0
 * prints). `all` and
 * `compare` only run. `bench all` measures every benchmark. */
struct bench_entry {
    const char *name;
    int (*measure)(int argc, char **argv, struct bench_result *out);
    int (*run)(int argc, char **argv);
    const char *summary;  /* one line for `clformer bench --help` */
    const char *usage;    /* its options, as its parser prints them (bench_X_usage) */
};
const struct bench_entry *bench_list(size_t *n);

/* `clformer bench NAME …` for a benchmark: takes --json out of argv,
 * measures, prints the result as a table or as JSON. */
int bench_run(const struct bench_entry *b, int argc, char **argv);

/* A v1 report's options (runner.c): --format F, --repetitions N (whole
 * runs of each case, default 1), --warmup N (runs left out first, default
 * 0), --note TEXT (a word on the machine for the host record). v1: one of
 * them was given. */
struct bench_runner_opts {
    int repetitions, warmup;
    enum report_format fmt;
    bool v1;
    const char *note;  /* --note TEXT: into the host record ("shared with other jobs"), or NULL */
};
/* Takes those options out of argv[1..] (argc shrinks); false on a bad one
 * (printed). */
bool bench_runner_parse(int *argc, char **argv, struct bench_runner_opts *o);
/* Runs b over the cartesian product of its comma lists (--batch 1,8 --beam
 * 1,4 …: one case each, named in the rows' "params"), each case warmup +
 * repetitions times, its figures' statistics into w; the table format also
 * prints each case's own table. 0, or the exit status of a failed case
 * (the others still run). */
int bench_runner_measure(const struct bench_entry *b, int argc, char **argv, const struct bench_runner_opts *o,
                         struct report_writer *w);

/* identity.c: the build, host and device of a report; the CPU's model and
 * ISA features ("avx2 fma avx512f …") from /proc/cpuinfo. */
void bench_identity_get(clf_ctx_t *ctx, struct report_identity *id);
void bench_cpu_info(char *model, size_t mlen, char *isa, size_t ilen);
/* The host CPU's theoretical float32 peak in GFLOP/s, for a CPU device of
 * `compute_units` (as cores) at `clock_mhz` (the device's; 0: unknown):
 * cores × clock × FLOP a cycle a core from the ISA, each part and its
 * source written into basis. NaN (basis says why) where the ISA or the
 * clock cannot be read. bench peak's FMA figure is read against it. */
double bench_cpu_theoretical_gflops(unsigned compute_units, unsigned clock_mhz, char *basis, size_t blen);
/* Whether this build has `clformer serve` (libmicrohttpd), which bench
 * serve starts; bench all leaves serve out, saying so, where not. */
bool bench_has_serve(void);

/* `clformer bench`: bench.c; tools/commands.h declares it for the
 * command table (bench/ includes nothing of tools/). */
int clf_cmd_bench(int argc, char **argv);

int bench_all(int argc, char **argv);      /* bench_all.c */
int bench_compare(int argc, char **argv);  /* bench_compare.c; argv[0] "db": `bench db` */
int bench_plot(int argc, char **argv);     /* bench_plot.c */
/* A folder's .json and .jsonl files (recursive: its subfolders' too), by
 * path, appended to *files (grown to *cap; the names also in *owned, for
 * freeing). False (said on stderr) when the folder cannot be read. */
bool bench_add_folder(const char *dir, bool recursive, const char ***files, size_t *nf, size_t *cap, char ***owned,
                      size_t *nown);
/* Frees what bench_add_folder gathered: the list and the names it owns. */
void bench_files_free(const char **files, char **owned, size_t nown);
int bench_peak(int argc, char **argv, struct bench_result *out);
int bench_gemm(int argc, char **argv, struct bench_result *out);
int bench_train(int argc, char **argv, struct bench_result *out);
int bench_translate(int argc, char **argv, struct bench_result *out);
/* bench translate --model (bench_translate_model.c): a trained checkpoint
 * on the first `lines` lines of src, timed and scored with BLEU against ref. */
struct bench_model_opts {
    const char *model, *src, *ref, *compute, *device;
    size_t batch, lines;
    int beam;
};
int bench_translate_model(const struct bench_model_opts *mo, struct bench_result *out);
int bench_attention(int argc, char **argv, struct bench_result *out);
int bench_ops(int argc, char **argv, struct bench_result *out);
int bench_allreduce(int argc, char **argv, struct bench_result *out);
/* bench_serve.c: Offline, SingleStream and Server against a `clformer
 * serve` it starts on 127.0.0.1 and stops. */
int bench_serve(int argc, char **argv, struct bench_result *out);

/* Each benchmark's usage line, beside its parser, which prints it on a
 * usage error (stderr, exit 2); `clformer bench X --help` prints it on
 * stdout (bench.c). */
extern const char bench_peak_usage[], bench_gemm_usage[], bench_attention_usage[], bench_ops_usage[],
    bench_train_usage[], bench_translate_usage[], bench_allreduce_usage[], bench_serve_usage[], bench_all_usage[],
    bench_compare_usage[], bench_db_usage[], bench_plot_usage[];

#endif
