/* barplot.h: charts written as SVG by hand: grouped horizontal bar charts
 * (`clformer bench compare`'s ratios and `bench plot`'s absolute values:
 * one panel per benchmark, one group of bars per case, one bar per
 * report) and line charts (`bench plot`'s sweeps: one panel per group of
 * cases, one line per report, x on a log-2 axis). */
#ifndef CLF_BARPLOT_H
#define CLF_BARPLOT_H

#include <stddef.h>

struct barplot_row {
    const char *panel;    /* rows with the same panel are drawn together */
    const char *label;    /* the case */
    const double *value;  /* nseries values; NaN draws no bar */
};

/* Writes the chart to path through a temporary file and a rename; the
 * x axis starts at 0 and a dashed line marks `reference` (0: none).
 * Returns 0, or -1 with errno set. */
int barplot_svg(const char *path, const char *title, const char *xlabel, double reference,
                const char *const *series, size_t nseries, const struct barplot_row *rows, size_t nrows);

/* One point of a line chart: series `series` of panel `panel` at (x, y);
 * x > 0 (a log-2 axis), y finite. */
struct lineplot_point {
    size_t panel, series;
    double x, y;
};

/* Writes the line chart, one panel per name in panels (stacked), each
 * series's points joined in order of x, through a temporary file and a
 * rename. Each panel's y axis starts at 0. Returns 0, or -1 with errno set. */
int lineplot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
                 const char *const *panels, size_t npanels, const char *const *series, size_t nseries,
                 const struct lineplot_point *points, size_t npoints);

#endif
