/* bench_compare.c: `clformer bench compare A.json B.json …`: any number of
 * reports (v1 json or jsonl; older `--json` reports too; a folder gives
 * its .json and .jsonl files, by name) side by side, each
 * figure with its unit and spread as the report gives them, its speed
 * relative to a baseline (the first, or --baseline), a mark where the
 * difference lies inside the noise, and an SVG chart of those ratios, one
 * panel per benchmark. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "barplot.h"
#include "bench.h"
#include "cli.h"
#include "report.h"

/* A report's column name: A..Z, then R27, R28, … */
static void column(size_t j, char *out, size_t len)
{
    if (j < 26)
        snprintf(out, len, "%c", (int)('A' + j));
    else
        snprintf(out, len, "R%zu", j + 1);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder's reports: its *.json and *.jsonl files (and, recursive, those
 * of its subfolders: `bench db`'s vendor/device tree), sorted by path,
 * added to *files (grown; the names are kept in *owned for freeing). */
void bench_files_free(const char **files, char **owned, size_t nown)
{
    for (size_t k = 0; k < nown; k++)
        free(owned[k]);
    free(owned);
    free(files);
}

bool bench_add_folder(const char *dir, bool recursive, const char ***files, size_t *nf, size_t *cap, char ***owned,
                      size_t *nown)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "clformer: %s: cannot open the folder: %s\n", dir, strerror(errno));
        return false;
    }
    size_t first = *nf;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (recursive && e->d_name[0] != '.') {
            char sub[4096];
            struct stat st;
            snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
            if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
                if (!bench_add_folder(sub, true, files, nf, cap, owned, nown)) {
                    closedir(d);
                    return false;
                }
                continue;
            }
        }
        if (!(l > 5 && !strcmp(e->d_name + l - 5, ".json")) && !(l > 6 && !strcmp(e->d_name + l - 6, ".jsonl")))
            continue;
        char *path = malloc(strlen(dir) + l + 2);
        if (*nf == *cap) {
            size_t nc = *cap * 2 + 16;
            const char **f = realloc(*files, nc * sizeof *f);
            char **o = realloc(*owned, nc * sizeof *o);
            if (f)
                *files = f;
            if (o)
                *owned = o;
            if (!f || !o) {
                free(path);
                closedir(d);
                return false;
            }
            *cap = nc;
        }
        if (!path) {
            closedir(d);
            return false;
        }
        size_t dl = strlen(dir);
        sprintf(path, "%.*s/%s", (int)(dl > 1 && dir[dl - 1] == '/' ? dl - 1 : dl), dir, e->d_name);
        (*owned)[(*nown)++] = path;
        (*files)[(*nf)++] = path;
    }
    closedir(d);
    qsort(*files + first, *nf - first, sizeof **files, by_name);
    if (*nf == first && !recursive)
        fprintf(stderr, "clformer: %s: no .json or .jsonl reports in the folder\n", dir);
    return true;
}

/* md: a pipe inside a cell would end it */
static void md_text(const char *s)
{
    for (; *s; s++)
        fputs(*s == '|' ? "\\|" : (char[2]){*s, 0}, stdout);
}

/* --format md: the reports as a Markdown table, one column of absolute
 * values (median, ±spread) per report and one of ratios to the baseline
 * per other report, under a list naming each column's machine: the table
 * bench/README.md shows for bench/results/. */
static void write_md(const struct report *reports, const char *const *files, size_t nf, size_t base,
                     const struct comparison *cmp, bool ratios)
{
    char cname[24], bname[24];
    column(base, bname, sizeof bname);
    for (size_t j = 0; j < nf; j++) {
        column(j, cname, sizeof cname);
        printf("- **%s**: ", cname);
        md_text(reports[j].label);
        printf(" (`%s`%s)\n", files[j], j == base && ratios ? ", the baseline" : "");
    }
    printf("\n| bench | case | params | metric | unit | better |");
    for (size_t j = 0; j < nf; j++) {
        column(j, cname, sizeof cname);
        printf(" %s |", cname);
    }
    for (size_t j = 0; j < nf && ratios; j++)
        if (j != base) {
            column(j, cname, sizeof cname);
            printf(" %s/%s |", cname, bname);
        }
    printf("\n|---|---|---|---|---|---|");
    for (size_t j = 0; j < (ratios ? 2 * nf - 1 : nf); j++)
        printf("--:|");
    printf("\n");
    for (size_t r = 0; r < cmp->nrows; r++) {
        const struct compare_row *row = &cmp->rows[r];
        const char *cells[] = {row->item->bench, row->item->name, row->item->params[0] ? row->item->params : "-",
                               row->item->metric, row->item->unit, row->item->higher_better ? "higher" : "lower"};
        for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++) {
            printf("| ");
            md_text(cells[c]);
            printf(" ");
        }
        for (size_t j = 0; j < nf; j++) {
            const struct report_item *x = row->of[j];
            if (!x || isnan(x->value))
                printf("| - ");
            else if (isfinite(x->st.spread))
                printf("| %.4g ±%.0f%% ", x->value, 100 * x->st.spread);
            else
                printf("| %.4g ", x->value);
        }
        for (size_t j = 0; j < nf && ratios; j++) {
            if (j == base)
                continue;
            if (row->unit_mismatch[j])
                printf("| unit≠ ");
            else if (isnan(row->ratio[j]))
                printf("| - ");
            else
                printf("| %.2fx%s ", row->ratio[j], row->noise[j] ? " ~" : "");
        }
        printf("|\n");
    }
    if (ratios)
        printf("\nValues are medians, ±spread = " REPORT_SPREAD_KIND " over the runs. X/%s: speed relative to %s, "
               "above 1 faster; ~: inside the noise (the [min, max] ranges overlap).\n", bname, bname);
    else
        printf("\nValues are medians, ±spread = " REPORT_SPREAD_KIND " over the runs; - where a report has no "
               "such figure. Absolute values only: set two reports side by side with `clformer bench compare`.\n");
}

const char bench_db_usage[] = "clformer bench db [DIR|FILE ...] [--format md] (default bench/results: every v1 "
                              "report under it, subfolders included, as a Markdown table of absolute values)";
const char bench_compare_usage[] =
    "clformer bench compare A.json B.jsonl FOLDER ... [--baseline N|FILE] [--format table|md] [--svg FILE] "
    "(the table's default compare.svg; md writes none unless named; a folder: its .json and .jsonl reports, by name)";

int bench_compare(int argc, char **argv)
{
    /* `bench db DIR`: the results database, its folders walked whole and
     * only v1 reports kept, as a device × case table of absolute values */
    bool db = argc > 0 && !strcmp(argv[0], "db");
    const char *db_usage = bench_db_usage, *usage = bench_compare_usage;
    const char *svg = NULL, *baseline = NULL, *format = db ? "md" : "table";
    size_t cap = (size_t)argc + 1, nf = 0, base = 0, nown = 0;
    const char **files = calloc(cap, sizeof *files);
    char **owned = calloc(cap, sizeof *owned);  /* the folders' file names */
    bool bad = !files || !owned;
    for (int i = 1; i < argc && !bad; i++) {
        if (!db && (cli_opt(argc, argv, &i, "--svg", &svg, &bad) ||
                    cli_opt(argc, argv, &i, "--baseline", &baseline, &bad)))
            continue;
        if (cli_opt(argc, argv, &i, "--format", &format, &bad)) {
            if (!bad && db && strcmp(format, "md")) {
                fprintf(stderr, "clformer bench db: --format %s: only md\n", format);
                bad = true;
            } else if (!bad && strcmp(format, "table") && strcmp(format, "md")) {
                fprintf(stderr, "clformer bench compare: --format %s: not one of table, md\n", format);
                bad = true;
            }
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "clformer: unknown option '%s'\n", argv[i]);
            bad = true;
        } else {
            struct stat st;
            if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
                if (!bench_add_folder(argv[i], db, &files, &nf, &cap, &owned, &nown))
                    bad = true;
            } else {
                files[nf++] = argv[i];
            }
        }
    }
    if (!bad && baseline) {  /* a position (1 = the first file) or one of the files */
        char *end;
        long k = strtol(baseline, &end, 10);
        bool found = false;
        for (size_t j = 0; j < nf && !found; j++)
            if (!strcmp(files[j], baseline))
                base = j, found = true;
        if (!found && !*end && k >= 1 && (size_t)k <= nf)
            base = (size_t)k - 1, found = true;
        if (!found) {
            fprintf(stderr, "clformer: --baseline %s: neither one of the %zu files nor a position 1..%zu\n", baseline,
                    nf, nf);
            bad = true;
        }
    }
    if (!bad && db && nf == 0 && !bench_add_folder("bench/results", true, &files, &nf, &cap, &owned, &nown))
        bad = true;
    if (bad || nf == 0) {
        fprintf(stderr, "usage: %s\n", db ? db_usage : usage);
        bench_files_free(files, owned, nown);
        return 2;
    }
    struct report *reports = calloc(nf, sizeof *reports);
    struct comparison cmp = {0};
    char err[512], bname[24], cname[24];
    int rc = 1;
    if (!reports) {
        nf = 0;
        goto out;
    }
    /* a file named is a report or an error; a folder's file that is not
     * one (another tool's JSON, a report of a format this build does not
     * read) is skipped with the reason */
    size_t kept = 0;
    const char *base_file = files[base];
    for (size_t j = 0; j < nf; j++) {
        bool in_folder = false;
        for (size_t k = 0; k < nown && !in_folder; k++)
            in_folder = files[j] == owned[k];
        if (report_load(files[j], &reports[kept], err, sizeof err)) {
            if (db && !reports[kept].format[0]) {  /* the database holds v1 reports only: units as written */
                fprintf(stderr, "clformer: skipped: %s: a report from before format v1\n", files[j]);
                report_free(&reports[kept]);
                memset(&reports[kept], 0, sizeof reports[kept]);
                if (j == base)
                    base_file = NULL;
                continue;
            }
            files[kept++] = files[j];
        } else if (in_folder) {
            fprintf(stderr, "clformer: skipped: %s\n", err);
        } else {
            fprintf(stderr, "clformer: reading a report: %s\n", err);
            nf = kept;
            goto out;
        }
    }
    nf = kept;
    if (nf == 0) {
        fprintf(stderr, "clformer: no reports to compare\n");
        goto out;
    }
    for (base = 0; base < nf && files[base] != base_file; base++)
        ;
    if (db)
        base = 0;  /* no ratios: any report will do */
    if (base == nf) {
        fprintf(stderr, "clformer: the baseline, %s, was skipped\n", base_file);
        goto out;
    }
    if (!report_compare(reports, nf, base, &cmp, err, sizeof err)) {
        fprintf(stderr, "clformer: comparing: %s\n", err);
        goto out;
    }
    column(base, bname, sizeof bname);
    if (!strcmp(format, "md")) {
        write_md(reports, files, nf, base, &cmp, !db);
        rc = 0;
        if (!svg)
            goto out;
    } else if (!svg) {
        svg = "compare.svg";
    }
    for (size_t j = 0; j < nf && strcmp(format, "md"); j++) {
        column(j, cname, sizeof cname);
        printf("%s: %s  (%s, %zu figures%s%s)\n", cname, reports[j].label, files[j], reports[j].count,
               reports[j].units_guessed ? ", an older report: units guessed from key names" : "",
               j == base ? "; the baseline" : "");
    }
    bool table = strcmp(format, "md") != 0;
    if (!table)
        goto chart;
    printf("\n%-10s %-40s %-14s %-16s %-11s", "bench", "case", "params", "metric", "unit");
    for (size_t j = 0; j < nf; j++) {
        column(j, cname, sizeof cname);
        printf(" %9s %5s", cname, "±");
    }
    for (size_t j = 0; j < nf; j++) {
        if (j == base)
            continue;
        char head[64];
        column(j, cname, sizeof cname);
        snprintf(head, sizeof head, "%s/%s", cname, bname);
        printf(" %8s", head);
    }
    printf("\n");
    size_t inside = 0;
    for (size_t r = 0; r < cmp.nrows; r++) {
        const struct compare_row *row = &cmp.rows[r];
        printf("%-10.10s %-40.40s %-14.14s %-16.16s %-11.11s", row->item->bench, row->item->name,
               row->item->params[0] ? row->item->params : "-", row->item->metric, row->item->unit);
        for (size_t j = 0; j < nf; j++) {
            const struct report_item *x = row->of[j];
            char spread[16] = "-";
            if (x && isfinite(x->st.spread))
                snprintf(spread, sizeof spread, "%.0f%%", 100 * x->st.spread);
            if (!x || isnan(x->value))
                printf(" %9s %5s", "-", "");
            else
                printf(" %9.4g %5s", x->value, spread);
        }
        for (size_t j = 0; j < nf; j++) {
            if (j == base)
                continue;
            if (row->unit_mismatch[j])
                printf(" %8s", "unit≠");
            else if (isnan(row->ratio[j]))
                printf(" %8s", "-");
            else
                printf(" %6.2fx%c", row->ratio[j], row->noise[j] ? '~' : ' ');
            inside += row->noise[j];
        }
        printf("\n");
    }
    printf("\nX/%s is the speed relative to %s: above 1 is faster (rates divided, times inverted; each report's "
           "own direction for each figure). ± is the spread, " REPORT_SPREAD_KIND ", over the figure's runs. "
           "~ marks a difference inside the noise: the two figures' [min, max] ranges overlap (%zu such); "
           "figures of one run have no range and are never marked. unit≠: the units differ, no ratio.\n",
           bname, bname, inside);

chart:;
    /* the chart: every row's ratio against A, one bar per report */
    struct barplot_row *rows = calloc(cmp.nrows ? cmp.nrows : 1, sizeof *rows);
    char (*labels)[200] = calloc(cmp.nrows ? cmp.nrows : 1, sizeof *labels);
    const char **series = calloc(nf, sizeof *series);
    char (*names)[300] = calloc(nf, sizeof *names);
    if (!rows || !labels || !series || !names) {
        free(rows);
        free(labels);
        free(series);
        free(names);
        goto out;
    }
    for (size_t j = 0; j < nf; j++) {
        column(j, cname, sizeof cname);
        snprintf(names[j], sizeof names[j], "%s: %.200s (%.60s)", cname, reports[j].label, files[j]);
        series[j] = names[j];
    }
    /* panels must be contiguous: order rows by bench, keeping first appearance */
    size_t nrows = 0;
    for (size_t r = 0; r < cmp.nrows; r++) {
        bool first = true;
        for (size_t q = 0; q < r; q++)
            if (!strcmp(cmp.rows[q].item->bench, cmp.rows[r].item->bench))
                first = false;
        if (!first)
            continue;
        for (size_t q = r; q < cmp.nrows; q++) {
            const struct compare_row *row = &cmp.rows[q];
            if (strcmp(row->item->bench, cmp.rows[r].item->bench))
                continue;
            snprintf(labels[nrows], sizeof labels[nrows], "%.100s%s%.48s [%.40s]", row->item->name,
                     row->item->params[0] ? " " : "", row->item->params, row->item->metric);
            rows[nrows] = (struct barplot_row){row->item->bench, labels[nrows], row->ratio};
            nrows++;
        }
    }
    char xlabel[64];
    snprintf(xlabel, sizeof xlabel, "speed relative to %s (above 1: faster)", bname);
    if (barplot_svg(svg, "clformer bench compare", xlabel, 1.0, series, nf, rows, nrows)) {
        fprintf(stderr, "clformer: cannot write %s\n", svg);
        rc = 1;
    } else {
        fprintf(table ? stdout : stderr, "chart: %s\n", svg);
        rc = 0;
    }
    free(rows);
    free(labels);
    free(series);
    free(names);
out:
    comparison_free(&cmp);
    for (size_t j = 0; j < nf; j++)
        report_free(&reports[j]);
    free(reports);
    bench_files_free(files, owned, nown);
    return rc;
}
