/* bench_plot.c: `clformer bench plot FILES/FOLDERS -o DIR`: SVG charts of
 * v1 reports (folders walked whole, as `bench db` does): for every
 * (benchmark, metric, unit) one bar chart of the absolute values across
 * the reports (one bar per report, one group per case), and the sweeps,
 * one line per report: attention GFLOP/s against n, GEMM GFLOP/s against
 * the product's size (2mnk) and translate sentences/s against --batch.
 * The writers are barplot.c's. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "barplot.h"
#include "bench.h"
#include "cli.h"
#include "report.h"

/* A sweep: the rows of `bench` and `metric` drawn against the number that
 * `key` names, in the case ("n=1024") or in the params ("--batch 8");
 * key "mnk": 2·m·n·k from the case's m=, n=, k=. */
struct sweep {
    const char *file, *bench, *metric, *key, *title, *xlabel;
};
static const struct sweep sweeps[] = {
    {"sweep-attention-n", "attention", "gflops", "n", "attention GFLOP/s against n", "n (tokens), log 2"},
    {"sweep-gemm-size", "gemm", "gflops", "mnk", "GEMM GFLOP/s against size", "2mnk (FLOP of one product), log 2"},
    {"sweep-translate-batch", "translate", "sentences_per_s", "batch", "translate sentences/s against batch",
     "--batch (sentences), log 2"},
};

/* The number after "key=" as a whole word of s, its word removed from
 * rest (the rest names the point's panel). */
static bool word_number(const char *s, const char *key, double *x, char *rest, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = s; (p = strstr(p, key)); p++) {
        if ((p != s && p[-1] != ' ') || p[kl] != '=')
            continue;
        char *end;
        double v = strtod(p + kl + 1, &end);
        if (end == p + kl + 1)
            continue;
        *x = v;
        snprintf(rest, len, "%.*s%s", (int)(p - s), s, end);
        return true;
    }
    return false;
}

/* The number after "--key " in params, its two words removed from rest. */
static bool param_number(const char *params, const char *key, double *x, char *rest, size_t len)
{
    char opt[48];
    snprintf(opt, sizeof opt, "--%s ", key);
    const char *p = strstr(params, opt);
    if (!p)
        return false;
    char *end;
    double v = strtod(p + strlen(opt), &end);
    if (end == p + strlen(opt))
        return false;
    *x = v;
    snprintf(rest, len, "%.*s%s", (int)(p - params), params, end);
    return true;
}

/* Collapses runs of spaces and trims, in place. */
static void squeeze(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++)
        if (!(*p == ' ' && (o == s || o[-1] == ' ')))
            *o++ = *p;
    while (o > s && o[-1] == ' ')
        o--;
    *o = 0;
}

/* A point's x and panel name for sweep w; false when the row is not one. */
static bool sweep_point(const struct sweep *w, const struct report_item *it, double *x, char *panel, size_t len)
{
    if (strcmp(it->bench, w->bench) || strcmp(it->metric, w->metric))
        return false;
    char rest[256], prest[128];
    if (!strcmp(w->key, "mnk")) {
        double m, n, k;
        char tmp[256];
        if (!word_number(it->name, "m", &m, tmp, sizeof tmp) || !word_number(it->name, "n", &n, tmp, sizeof tmp) ||
            !word_number(it->name, "k", &k, tmp, sizeof tmp))
            return false;
        *x = 2 * m * n * k;
        snprintf(panel, len, "%s", it->params[0] ? it->params : "all shapes");  /* one line a report */
        return true;
    }
    if (word_number(it->name, w->key, x, rest, sizeof rest)) {
        snprintf(panel, len, "%.110s %.80s", rest, it->params);
    } else if (param_number(it->params, w->key, x, prest, sizeof prest)) {
        snprintf(panel, len, "%.110s %.80s", it->name, prest);
    } else {
        return false;
    }
    squeeze(panel);
    return *x > 0;
}

/* A file name's part from free text: letters, digits, '-' and '_'. */
static void file_part(const char *s, char *out, size_t len)
{
    size_t o = 0;
    for (; *s && o + 1 < len; s++)
        out[o++] = isalnum((unsigned char)*s) || *s == '_' ? *s : '-';
    out[o] = 0;
}

static bool write_sweep(const char *dir, const struct sweep *w, const struct report *reports, size_t nr,
                        const char *const *series)
{
    size_t total = 0;
    for (size_t j = 0; j < nr; j++)
        total += reports[j].count;
    struct lineplot_point *pts = calloc(total ? total : 1, sizeof *pts);
    char (*panels)[200] = calloc(total ? total : 1, sizeof *panels);
    const char **pnames = calloc(total ? total : 1, sizeof *pnames);
    size_t np = 0, npanels = 0;
    bool ok = pts && panels && pnames;
    for (size_t j = 0; ok && j < nr; j++)
        for (size_t i = 0; i < reports[j].count; i++) {
            double x;
            char panel[200];
            const struct report_item *it = &reports[j].items[i];
            if (!isfinite(it->value) || !sweep_point(w, it, &x, panel, sizeof panel))
                continue;
            size_t p = 0;
            while (p < npanels && strcmp(panels[p], panel))
                p++;
            if (p == npanels) {
                snprintf(panels[npanels], sizeof panels[npanels], "%s", panel);
                pnames[npanels] = panels[npanels];
                npanels++;
            }
            pts[np++] = (struct lineplot_point){p, j, x, it->value};
        }
    if (ok && np) {
        char path[4096], ylabel[96];
        snprintf(path, sizeof path, "%s/%s.svg", dir, w->file);
        snprintf(ylabel, sizeof ylabel, "%s (higher is better)", w->metric);
        if (lineplot_svg(path, w->title, w->xlabel, ylabel, pnames, npanels, series, nr, pts, np)) {
            fprintf(stderr, "clformer: cannot write %s: %s\n", path, strerror(errno));
            ok = false;
        } else {
            printf("%s\n", path);
        }
    }
    free(pts);
    free(panels);
    free(pnames);
    return ok;
}

/* One bar chart per (bench, metric, unit): every report's absolute value of each case. */
static bool write_absolute(const char *dir, const struct comparison *cmp, const char *const *series, size_t nr)
{
    struct barplot_row *rows = calloc(cmp->nrows ? cmp->nrows : 1, sizeof *rows);
    char (*labels)[200] = calloc(cmp->nrows ? cmp->nrows : 1, sizeof *labels);
    bool *done = calloc(cmp->nrows ? cmp->nrows : 1, sizeof *done);
    bool ok = rows && labels && done;
    for (size_t r = 0; ok && r < cmp->nrows; r++) {
        if (done[r])
            continue;
        const struct report_item *a = cmp->rows[r].item;
        size_t n = 0;
        for (size_t q = r; q < cmp->nrows; q++) {
            const struct report_item *b = cmp->rows[q].item;
            if (done[q] || strcmp(a->bench, b->bench) || strcmp(a->metric, b->metric) || strcmp(a->unit, b->unit))
                continue;
            done[q] = true;
            snprintf(labels[n], sizeof labels[n], "%.120s%s%.70s", b->name, b->params[0] ? " " : "", b->params);
            rows[n] = (struct barplot_row){a->bench, labels[n], cmp->rows[q].value};
            n++;
        }
        char path[4096], bench[40], metric[48], title[160], xlabel[128];
        file_part(a->bench, bench, sizeof bench);
        file_part(a->metric, metric, sizeof metric);
        snprintf(path, sizeof path, "%s/%s-%s.svg", dir, bench, metric);
        snprintf(title, sizeof title, "%s: %s", a->bench, a->metric);
        snprintf(xlabel, sizeof xlabel, "%s, %s is better (median over the runs)", a->unit,
                 a->higher_better ? "higher" : "lower");
        if (barplot_svg(path, title, xlabel, 0, series, nr, rows, n)) {
            fprintf(stderr, "clformer: cannot write %s: %s\n", path, strerror(errno));
            ok = false;
        } else {
            printf("%s\n", path);
        }
    }
    free(rows);
    free(labels);
    free(done);
    return ok;
}

const char bench_plot_usage[] = "clformer bench plot FILE|DIR ... -o DIR (v1 reports; folders walked whole: one "
                                "bar chart per metric across the reports, and the sweeps, one line per report)";

int bench_plot(int argc, char **argv)
{
    const char *usage = bench_plot_usage;
    const char *outdir = NULL;
    size_t cap = (size_t)argc + 1, nf = 0, nown = 0;
    const char **files = calloc(cap, sizeof *files);
    char **owned = calloc(cap, sizeof *owned);
    bool bad = !files || !owned;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "-o", &outdir, &bad) || cli_opt(argc, argv, &i, "--out", &outdir, &bad))
            continue;
        struct stat st;
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "clformer: unknown option '%s'\n", argv[i]);
            bad = true;
        } else if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            bad = !bench_add_folder(argv[i], true, &files, &nf, &cap, &owned, &nown);
        } else {
            files[nf++] = argv[i];
        }
    }
    if (!bad && !outdir) {
        fprintf(stderr, "clformer bench plot: -o DIR is missing: the folder the charts go to\n");
        bad = true;
    }
    if (!bad && mkdir(outdir, 0777) && errno != EEXIST) {
        fprintf(stderr, "clformer bench plot: -o %s: cannot make the folder: %s\n", outdir, strerror(errno));
        bad = true;
    }
    if (bad || nf == 0) {
        fprintf(stderr, "usage: %s\n", usage);
        bench_files_free(files, owned, nown);
        return 2;
    }
    struct report *reports = calloc(nf, sizeof *reports);
    const char **series = calloc(nf, sizeof *series);
    char (*names)[420] = calloc(nf, sizeof *names);
    struct comparison cmp = {0};
    char err[512];
    size_t nr = 0;
    int rc = 1;
    if (!reports || !series || !names)
        goto out;
    /* only v1 reports: their units and directions are written, not guessed */
    for (size_t j = 0; j < nf; j++) {
        if (!report_load(files[j], &reports[nr], err, sizeof err)) {
            fprintf(stderr, "clformer: skipped: %s\n", err);
            continue;
        }
        if (!reports[nr].format[0]) {
            fprintf(stderr, "clformer: skipped: %s: a report from before format v1\n", files[j]);
            report_free(&reports[nr]);
            memset(&reports[nr], 0, sizeof reports[nr]);
            continue;
        }
        snprintf(names[nr], sizeof names[nr], "%.380s", reports[nr].label);
        series[nr] = names[nr];
        nr++;
    }
    if (nr == 0) {
        fprintf(stderr, "clformer bench plot: no v1 reports to plot\n");
        goto out;
    }
    if (!report_compare(reports, nr, 0, &cmp, err, sizeof err)) {
        fprintf(stderr, "clformer: plotting: %s\n", err);
        goto out;
    }
    rc = write_absolute(outdir, &cmp, series, nr) ? 0 : 1;
    for (size_t s = 0; s < sizeof sweeps / sizeof sweeps[0]; s++)
        if (!write_sweep(outdir, &sweeps[s], reports, nr, series))
            rc = 1;
out:
    comparison_free(&cmp);
    for (size_t j = 0; j < nr; j++)
        report_free(&reports[j]);
    free(reports);
    free(series);
    free(names);
    bench_files_free(files, owned, nown);
    return rc;
}
