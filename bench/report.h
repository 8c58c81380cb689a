/* report.h: benchmark reports in format v1 ("clformer-bench/1", described
 * in bench/README.md) written as json, jsonl, csv, md, sql or a table
 * (report_write.c), read back as flat lists of figures (report.c; older
 * unversioned reports too, their units guessed from key names), and
 * several reports lined up against a baseline, for `clformer bench
 * compare`. Only bench/ needs them; the library does not. */
#ifndef CLF_BENCH_REPORT_H
#define CLF_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#define REPORT_FORMAT "clformer-bench/1"
/* What a figure's "spread" is, written into every report beside it. */
#define REPORT_SPREAD_KIND "(max-min)/median"

/* A figure over n repetitions: median, extremes and spread, (max-min)/median
 * (NaN where n < 2 or the median is 0: no spread is known). */
struct report_stats {
    int n;
    double median, min, max, spread;
};
/* The statistics of x[0..n) (n >= 1); x is left as it was. */
void report_stats_of(const double *x, int n, struct report_stats *s);

/* One measured figure of a report. */
struct report_item {
    char bench[32];     /* "gemm", "ops", …, or "peer:torch" */
    char name[160];     /* the case: "attn proj  d=256" */
    char params[96];    /* the sweep's settings ("--batch 8 --beam 4"), or "" */
    char metric[40];    /* "gflops", "tgt_tokens_per_s", "seconds", … */
    char unit[24];      /* "GFLOP/s", "s", "tokens/s", … */
    bool higher_better;
    double value;       /* the median */
    struct report_stats st;  /* pre-v1 reports: n 1, no spread */
    double of_peak;     /* median over the measured peak of its unit (GFLOP/s: bench peak's
                         * FMA, GB/s: its copy) when the report holds one, else 0 */
    char flag[64];      /* a word the writer adds ("BLEU 0.52 below float32's"), or "" */
    char basis[400];    /* what a derived figure rests on (the record's "METRIC_basis":
                         * bench peak's theoretical_gflops), or "" */
};

/* The build, host and device a report was measured on: every v1 report
 * carries it (bench/identity.c fills it; no host name). */
struct report_identity {
    char version[32], commit[64], build_type[32], compiler[64];
    bool onednn, mpi, mhd, sanitize;
    char cpu[128], isa[160], os[128];  /* isa: the features that matter, space-separated */
    int threads;                       /* online CPUs */
    double load1;                      /* the 1-minute load average when the report began */
    char device[128], platform[128], vendor[128], driver[64], device_version[128], opencl_c[64];
    char device_type[8];
    unsigned compute_units, clock_mhz;
    unsigned long long global_mem, local_mem, max_alloc;
    bool fp16, subgroups;
    char gemm[32];
    int blas_threads;
    char clblast[64], openblas[160];
    char date[32];
    int repetitions, warmup;
    bool quick;
    char command[256];                 /* the bench command's options */
    char weights[16];                  /* "random": no benchmark yet translates with a trained model */
    char note[128];                    /* --note: what the figures need said (a shared machine), or "" */
    char caps[192];                    /* the ISA caps in force from the environment (POCL_LLVM_CPU_NAME=x86-64
                                        * OPENBLAS_CORETYPE=Nehalem …), so that a run emulating an older CPU
                                        * is not taken for another machine; "" when none */
};

struct report {
    char label[384];    /* "<device> (<tuning>)", or "<device>, <cpu> [<isa>], caps <caps>, <commit>, load <l>" */
    char device[128];
    char tuning[32];    /* the tuning source in force, or "" if not recorded */
    char format[32];    /* REPORT_FORMAT, or "" for a pre-v1 report */
    bool units_guessed; /* pre-v1: units and directions from key names */
    size_t count;
    struct report_item *items;
};

/* The unit and direction that the writer gives a figure named `key` (rates
 * higher, times lower); false for a key that is not a figure. Only the
 * writer and the pre-v1 reader use it: a v1 reader reads both from the report. */
bool report_metric_unit(const char *key, char *unit, size_t len, bool *higher_better);

/* Flattens one benchmark's JSON record ({"bench": NAME, "results": [...]},
 * or bench all's whole report) into figures appended to r, each with
 * `params`. False with the reason in err. */
bool report_add_record(struct report *r, const char *text, size_t len, const char *params, char *err, size_t errlen);

/* Output formats of a v1 report. */
enum report_format { REPORT_TABLE, REPORT_JSON, REPORT_JSONL, REPORT_CSV, REPORT_MD, REPORT_SQL };
/* "table", "json", …: false for a name it does not know. */
bool report_format_parse(const char *name, enum report_format *f);

/* The writer: begin, then rows (jsonl writes and flushes each at once;
 * the others keep them), then end, which writes the whole document. */
struct report_writer {
    FILE *f;
    enum report_format fmt;
    const struct report_identity *id;
    struct report rows;
    size_t cap;
    bool failed;  /* out of memory keeping rows */
    double peak_gflops, peak_gbps;  /* bench peak's rows once written: every later
                                     * GFLOP/s or GB/s row gets its of_peak */
    struct report bleu;             /* the BLEU rows written so far: a compute type's row
                                     * is flagged when it falls REPORT_BLEU_DROP below
                                     * float32's of the same case */
    size_t bleu_cap;
};
/* How far a compute type's BLEU may fall below float32's, same case and
 * settings otherwise, before its row is flagged (issue 47). */
#define REPORT_BLEU_DROP 0.3
void report_write_begin(struct report_writer *w, FILE *f, enum report_format fmt, const struct report_identity *id);
void report_write_rows(struct report_writer *w, const struct report_item *items, size_t n);
/* Writes the document (or, for jsonl, nothing more); false if rows were lost. */
bool report_write_end(struct report_writer *w);

/* Reads a report: the output of `bench all --json` or of one benchmark's
 * --json. origin names the text in messages (a file name). False, with
 * the reason (origin first) in err, when the text is not a report. */
bool report_parse(const char *text, size_t len, const char *origin, struct report *r, char *err, size_t errlen);
bool report_load(const char *path, struct report *r, char *err, size_t errlen);
void report_free(struct report *r);

/* Reports side by side: one row per (bench, name, params, metric) found in
 * any of them, in order of first appearance; value[j] is report j's figure
 * (NaN where absent) and ratio[j] its speed relative to report `base`:
 * value/value_base for rates, value_base/value for times, so above 1 is
 * faster. noise[j]: the two figures' [min, max] ranges overlap (both with
 * n >= 2), so the difference lies inside the noise. A figure whose unit
 * differs from the baseline's gets no ratio (unit_mismatch[j]). */
struct compare_row {
    const struct report_item *item;  /* the first report's item naming the row */
    const struct report_item **of;   /* each report's item, or NULL */
    double *value, *ratio;           /* nreports each */
    bool *noise, *unit_mismatch;
};
struct comparison {
    size_t nreports, nrows, base;
    struct compare_row *rows;
    double *store;
    bool *flags;
    const struct report_item **ofs;
};
/* False (out of memory, no reports, base out of range) with the reason in err. */
bool report_compare(const struct report *reports, size_t n, size_t base, struct comparison *out, char *err,
                    size_t errlen);
void comparison_free(struct comparison *c);

#endif
