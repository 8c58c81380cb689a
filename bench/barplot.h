/* barplot.h: grouped horizontal bar charts written as SVG by hand, for
 * `clformer bench compare`: one panel per benchmark, one group of bars per
 * case, one bar per report. */
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

#endif
