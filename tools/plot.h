/* plot.h: line plots written as SVG by hand (no dependency): loss curves,
 * benchmark scaling on log-log axes. */
#ifndef CLF_PLOT_H
#define CLF_PLOT_H

#include <stdbool.h>
#include <stddef.h>

struct plot_series {
    const char *label;
    const double *x, *y;
    size_t n;
    bool points;  /* markers instead of a line */
};

struct plot_opts {
    const char *title, *xlabel, *ylabel;
    bool logx, logy;
};

/* Writes the plot to path (via a temporary file and rename); returns 0, or
 * -1 with errno set. Non-finite points and, on log axes, points <= 0 are
 * left out. */
int plot_svg(const char *path, const struct plot_opts *o, const struct plot_series *s, size_t ns);

#endif
