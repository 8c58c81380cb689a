/* barplot.c: grouped horizontal bar charts and line charts as plain SVG (see barplot.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barplot.h"
#include <clformer/advanced/files.h>

static const char *colours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

static void text_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* The width the legend needs from x: about 6.5 px a character at 11 px
 * sans-serif, so that long report labels are not cut at the edge. */
static double legend_right(double x, const char *const *series, size_t nseries)
{
    size_t most = 0;
    for (size_t s = 0; s < nseries; s++)
        if (strlen(series[s]) > most)
            most = strlen(series[s]);
    return x + 18 + 6.5 * (double)most + 20;
}

/* A round step giving about five ticks up to max. */
/* The legend under a chart: a swatch and a name a series, from y down. */
static void legend(FILE *f, double left, double y, const char *const *series, size_t nseries)
{
    for (size_t s = 0; s < nseries; s++, y += 18) {
        fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", left, y - 10,
                colours[s % 8]);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\">", left + 18, y);
        text_escaped(f, series[s]);
        fprintf(f, "</text>\n");
    }
}

static double tick_step(double max)
{
    double raw = max / 5, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

int barplot_svg(const char *path, const char *title, const char *xlabel, double reference,
                const char *const *series, size_t nseries, const struct barplot_row *rows, size_t nrows)
{
    const double bar_h = 12, gap = 8, panel_gap = 30, left = 300, plot_w = 520, top = 60;
    double max = reference > 0 ? reference : 0;
    size_t npanels = 0;
    for (size_t r = 0; r < nrows; r++) {
        for (size_t s = 0; s < nseries; s++)
            if (isfinite(rows[r].value[s]) && rows[r].value[s] > max)
                max = rows[r].value[s];
        if (r == 0 || strcmp(rows[r].panel, rows[r - 1].panel))
            npanels++;
    }
    if (!(max > 0))
        max = 1;
    double step = tick_step(max);
    max = ceil(max / step) * step;
    double group_h = nseries * bar_h + gap;
    double height = top + nrows * group_h + npanels * panel_gap + 40 + 18 * nseries;
    double width = fmax(left + plot_w + 40, legend_right(left, series, nseries));

    struct clf_file_out out;
    if (clf_file_out_open(&out, path) != CLF_OK)
        return -1;
    FILE *f = out.f;
    if (!f)
        return -1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height);
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">", width / 2);
    text_escaped(f, title);
    fprintf(f, "</text>\n<text x=\"%.0f\" y=\"40\" text-anchor=\"middle\" fill=\"#555\">", left + plot_w / 2);
    text_escaped(f, xlabel);
    fprintf(f, "</text>\n");
    double y = top;
    for (size_t r = 0; r < nrows; r++) {
        if (r == 0 || strcmp(rows[r].panel, rows[r - 1].panel)) {
            y += panel_gap;
            fprintf(f, "<text x=\"10\" y=\"%.1f\" font-weight=\"bold\" font-size=\"13\">", y - 10);
            text_escaped(f, rows[r].panel);
            fprintf(f, "</text>\n");
            /* the panel's extent, for the grid */
            size_t end = r;
            while (end < nrows && !strcmp(rows[end].panel, rows[r].panel))
                end++;
            double y1 = y + (end - r) * group_h;
            for (double t = 0; t <= max * 1.0001; t += step) {
                double x = left + t / max * plot_w;
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, y - 4, x,
                        y1);
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">%g</text>\n", x, y1 + 12,
                        t);
            }
            if (reference > 0) {
                double x = left + reference / max * plot_w;
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
                           "stroke-dasharray=\"4,3\"/>\n", x, y - 4, x, y1);
            }
        }
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", left - 8, y + nseries * bar_h / 2 + 4);
        text_escaped(f, rows[r].label);
        fprintf(f, "</text>\n");
        for (size_t s = 0; s < nseries; s++) {
            double v = rows[r].value[s];
            if (isfinite(v) && v > 0)
                fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\">"
                           "<title>%.3g</title></rect>\n",
                        left, y + s * bar_h, v / max * plot_w, bar_h - 1, colours[s % 8], v);
        }
        y += group_h;
    }
    y += 30;
    legend(f, left, y, series, nseries);
    fprintf(f, "</svg>\n");
    return clf_file_out_close(&out, true) == CLF_OK ? 0 : -1;
}

static int by_x(const void *a, const void *b)
{
    double x = ((const struct lineplot_point *)a)->x, y = ((const struct lineplot_point *)b)->x;
    return (x > y) - (x < y);
}

int lineplot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
                 const char *const *panels, size_t npanels, const char *const *series, size_t nseries,
                 const struct lineplot_point *points, size_t npoints)
{
    const double left = 90, plot_w = 560, plot_h = 220, top = 50, panel_gap = 80;
    /* x range, shared by the panels: whole powers of two around the points */
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < npoints; i++) {
        lo = fmin(lo, points[i].x);
        hi = fmax(hi, points[i].x);
    }
    if (!(lo > 0))
        lo = hi = 1;
    double l2lo = floor(log2(lo)), l2hi = ceil(log2(hi));
    if (l2hi <= l2lo)
        l2hi = l2lo + 1;
    double height = top + npanels * (plot_h + panel_gap) + 20 + 18 * nseries,
           width = fmax(left + plot_w + 40, legend_right(left, series, nseries));
    struct lineplot_point *pts = malloc((npoints ? npoints : 1) * sizeof *pts);
    if (!pts)
        return -1;
    struct clf_file_out out;
    if (clf_file_out_open(&out, path) != CLF_OK || !out.f) {
        free(pts);
        return -1;
    }
    FILE *f = out.f;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height);
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">", width / 2);
    text_escaped(f, title);
    fprintf(f, "</text>\n");
    for (size_t p = 0; p < npanels; p++) {
        double y0 = top + p * (plot_h + panel_gap) + 20, y1 = y0 + plot_h;  /* the plot area's top, bottom */
        double max = 0;
        for (size_t i = 0; i < npoints; i++)
            if (points[i].panel == p && points[i].y > max)
                max = points[i].y;
        if (!(max > 0))
            max = 1;
        double step = tick_step(max);
        max = ceil(max / step) * step;
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" font-weight=\"bold\" font-size=\"13\">", left, y0 - 8);
        text_escaped(f, panels[p]);
        fprintf(f, "</text>\n");
        for (double t = 0; t <= max * 1.0001; t += step) {
            double y = y1 - t / max * plot_h;
            fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y,
                    left + plot_w, y);
            fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">%g</text>\n", left - 6, y + 4,
                    t);
        }
        for (double e = l2lo; e <= l2hi; e++) {
            double x = left + (e - l2lo) / (l2hi - l2lo) * plot_w;
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", x, y0, x, y1);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">%g</text>\n", x, y1 + 14,
                    exp2(e));
        }
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">", left + plot_w / 2, y1 + 30);
        text_escaped(f, xlabel);
        fprintf(f, "</text>\n<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\" "
                   "transform=\"rotate(-90 16 %.1f)\">", (y0 + y1) / 2, (y0 + y1) / 2);
        text_escaped(f, ylabel);
        fprintf(f, "</text>\n");
        for (size_t s = 0; s < nseries; s++) {
            size_t n = 0;
            for (size_t i = 0; i < npoints; i++)
                if (points[i].panel == p && points[i].series == s && points[i].x > 0 && isfinite(points[i].y))
                    pts[n++] = points[i];
            if (!n)
                continue;
            qsort(pts, n, sizeof *pts, by_x);
            /* the series's name on the group, for readers of the file (and the tests) */
            fprintf(f, "<g class=\"series\" data-series=\"");
            text_escaped(f, series[s]);
            fprintf(f, "\"><polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colours[s % 8]);
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%.1f,%.1f", i ? " " : "",
                        left + (log2(pts[i].x) - l2lo) / (l2hi - l2lo) * plot_w, y1 - pts[i].y / max * plot_h);
            fprintf(f, "\"/>\n");
            for (size_t i = 0; i < n; i++)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%g: %.4g</title></circle>\n",
                        left + (log2(pts[i].x) - l2lo) / (l2hi - l2lo) * plot_w, y1 - pts[i].y / max * plot_h,
                        colours[s % 8], pts[i].x, pts[i].y);
            fprintf(f, "</g>\n");
        }
    }
    double y = top + npanels * (plot_h + panel_gap) + 10;
    legend(f, left, y, series, nseries);
    fprintf(f, "</svg>\n");
    free(pts);
    return clf_file_out_close(&out, true) == CLF_OK ? 0 : -1;
}
