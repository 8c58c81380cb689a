/* report.h: benchmark reports (`clformer bench … --json`) read back as flat
 * lists of figures, and several reports lined up against the first, for
 * `clformer bench compare`. Only bench/ needs them; the library does not. */
#ifndef CLF_BENCH_REPORT_H
#define CLF_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>

/* One measured figure of a report. */
struct report_item {
    char bench[32];     /* "gemm", "ops", …, or "peer:torch" */
    char name[160];     /* the case: "attn proj  d=256" */
    char metric[40];    /* "gflops", "tgt_tokens_per_s", "seconds", … */
    bool higher_better;
    double value;
};

struct report {
    char label[256];    /* "<device> (<tuning>)" */
    char device[128];
    char tuning[32];    /* the tuning source in force, or "" if not recorded */
    size_t count;
    struct report_item *items;
};

/* Reads a report: the output of `bench all --json` or of one benchmark's
 * --json. origin names the text in messages (a file name). False, with
 * the reason (origin first) in err, when the text is not a report. */
bool report_parse(const char *text, size_t len, const char *origin, struct report *r, char *err, size_t errlen);
bool report_load(const char *path, struct report *r, char *err, size_t errlen);
void report_free(struct report *r);

/* Reports side by side: one row per (bench, name, metric) found in any of
 * them, in order of first appearance; value[j] is report j's figure (NaN
 * where absent) and ratio[j] its speed relative to report 0: value/value0
 * for rates, value0/value for times, so above 1 is faster. */
struct compare_row {
    const struct report_item *item;  /* the first report's item naming the row */
    double *value, *ratio;           /* nreports each */
};
struct comparison {
    size_t nreports, nrows;
    struct compare_row *rows;
    double *store;
};
/* False (out of memory, or no reports) with the reason in err. */
bool report_compare(const struct report *reports, size_t n, struct comparison *out, char *err, size_t errlen);
void comparison_free(struct comparison *c);

#endif
