/* bench_compare.c: `clformer bench compare A.json B.json …`: reports of
 * `bench all --json` (or of one benchmark's --json) side by side, each
 * figure with its speed relative to the first report, and an SVG chart of
 * those ratios, one panel per benchmark. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "barplot.h"
#include "bench.h"
#include "cli.h"
#include "report.h"

int bench_compare(int argc, char **argv)
{
    static const char *usage = "clformer bench compare A.json B.json ... [--svg FILE] (default compare.svg)";
    const char *svg = "compare.svg";
    const char *files[16];
    size_t nf = 0;
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "--svg", &svg, &bad))
            continue;
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "clformer: unknown option '%s'\n", argv[i]);
            bad = true;
        } else if (nf == sizeof files / sizeof files[0]) {
            fprintf(stderr, "clformer: at most %zu reports at once\n", nf);
            bad = true;
        } else {
            files[nf++] = argv[i];
        }
    }
    if (bad || nf == 0) {
        fprintf(stderr, "usage: %s\n", usage);
        return 2;
    }
    struct report reports[16];
    memset(reports, 0, sizeof reports);
    struct comparison cmp = {0};
    char err[512];
    int rc = 1;
    for (size_t j = 0; j < nf; j++) {
        if (!report_load(files[j], &reports[j], err, sizeof err)) {
            fprintf(stderr, "clformer: reading a report: %s\n", err);
            goto out;
        }
    }
    if (!report_compare(reports, nf, &cmp, err, sizeof err)) {
        fprintf(stderr, "clformer: comparing: %s\n", err);
        goto out;
    }
    for (size_t j = 0; j < nf; j++)
        printf("%c: %s  (%s, %zu figures)\n", (int)('A' + j), reports[j].label, files[j], reports[j].count);
    printf("\n%-10s %-44s %-16s", "bench", "case", "metric");
    for (size_t j = 0; j < nf; j++)
        printf(" %9c", (int)('A' + j));
    for (size_t j = 1; j < nf; j++)
        printf("   %c/A", (int)('A' + j));
    printf("\n");
    for (size_t r = 0; r < cmp.nrows; r++) {
        const struct compare_row *row = &cmp.rows[r];
        printf("%-10.10s %-44.44s %-16.16s", row->item->bench, row->item->name, row->item->metric);
        for (size_t j = 0; j < nf; j++) {
            if (isnan(row->value[j]))
                printf(" %9s", "-");
            else
                printf(" %9.4g", row->value[j]);
        }
        for (size_t j = 1; j < nf; j++) {
            if (isnan(row->ratio[j]))
                printf(" %6s", "-");
            else
                printf(" %5.2fx", row->ratio[j]);
        }
        printf("\n");
    }
    printf("\nX/A is the speed relative to A: above 1 is faster (rates divided, times inverted).\n");

    /* the chart: every row's ratio against A, one bar per report */
    struct barplot_row *rows = calloc(cmp.nrows ? cmp.nrows : 1, sizeof *rows);
    char (*labels)[200] = calloc(cmp.nrows ? cmp.nrows : 1, sizeof *labels);
    const char *series[16];
    char names[16][300];
    if (!rows || !labels) {
        free(rows);
        free(labels);
        goto out;
    }
    for (size_t j = 0; j < nf; j++) {
        snprintf(names[j], sizeof names[j], "%c: %.200s (%.90s)", (int)('A' + j), reports[j].label, files[j]);
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
            snprintf(labels[nrows], sizeof labels[nrows], "%.150s [%.40s]", row->item->name, row->item->metric);
            rows[nrows] = (struct barplot_row){row->item->bench, labels[nrows], row->ratio};
            nrows++;
        }
    }
    if (barplot_svg(svg, "clformer bench compare", "speed relative to A (above 1: faster)", 1.0, series, nf, rows,
                    nrows)) {
        fprintf(stderr, "clformer: cannot write %s\n", svg);
    } else {
        printf("chart: %s\n", svg);
        rc = 0;
    }
    free(rows);
    free(labels);
out:
    comparison_free(&cmp);
    for (size_t j = 0; j < nf; j++)
        report_free(&reports[j]);
    return rc;
}
