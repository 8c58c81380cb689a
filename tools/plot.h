/* plot.h: line plots written as SVG by hand (no dependency): loss curves
 * (smoothed, with a second axis on the right for BLEU), benchmark scaling
 * on log-log axes. */
#ifndef CLF_PLOT_H
#define CLF_PLOT_H

#include <stdbool.h>
#include <stddef.h>

struct plot_series {
    const char *label;
    const double *x, *y;
    size_t n;
    bool points;  /* markers instead of a line */
    bool right;   /* against the right-hand axis (plot_opts.y2label) */
    bool faded;   /* a thin, pale line under others (the raw values of a smoothed one) */
    int color;    /* 1 + an index into the palette; 0: the series' own index */
};

struct plot_opts {
    const char *title, *xlabel, *ylabel;
    bool logx, logy;
    const char *y2label;  /* the right-hand axis (linear), for series with right set */
};

/* Writes the plot to path (via a temporary file and rename); returns 0, or
 * -1 with errno set. Non-finite points and, on log axes, points <= 0 are
 * left out. */
/* The exponential moving average TensorBoard draws: out[i] = m_i / (1 - w^k)
 * with m_i = w·m_(i-1) + (1 - w)·y_i over the k finite values so far (the
 * debiasing keeps the first points from starting at 0); a non-finite y_i
 * repeats the previous average (NAN before the first). out may be y. */
void plot_ema(double *out, const double *y, size_t n, double w);
/* The weight for n points: a window of about n/30 points (1/(1 - w)), so
 * the line is as smooth at any run length: 0.98 at 1500 points; 0 (no
 * smoothing) at 30 or fewer; at most 0.9999 (a window of 10,000 points,
 * which the legend's four digits still show). */
double plot_ema_weight(size_t n);

int plot_svg(const char *path, const struct plot_opts *o, const struct plot_series *s, size_t ns);

#endif
