/* plot.c: see plot.h. */
#include <math.h>
#include <stdio.h>

#include "base/files.h"
#include "plot.h"

enum { W = 720, H = 440, L = 70, R = 180, T = 40, B = 50 };

static const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static bool usable(double v, bool log) { return isfinite(v) && (!log || v > 0); }
static double tr(double v, bool log) { return log ? log10(v) : v; }

/* "Nice" tick step for a range. */
static double tick_step(double span)
{
    double raw = span / 6, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

static void escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

int plot_svg(const char *path, const struct plot_opts *o, const struct plot_series *s, size_t ns)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < s[i].n; j++) {
            if (!usable(s[i].x[j], o->logx) || !usable(s[i].y[j], o->logy))
                continue;
            double x = tr(s[i].x[j], o->logx), y = tr(s[i].y[j], o->logy);
            x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
        }
    if (!(x0 <= x1)) x0 = 0, x1 = 1;
    if (!(y0 <= y1)) y0 = 0, y1 = 1;
    if (x1 - x0 < 1e-12) x0 -= 0.5, x1 += 0.5;
    if (y1 - y0 < 1e-12) y0 -= 0.5, y1 += 0.5;
    double pad = (y1 - y0) * 0.05;
    y0 -= pad, y1 += pad;
    struct clf_file_out out;
    if (clf_file_out_open(&out, path) != CLF_OK)
        return -1;
    FILE *f = out.f;
#define PX(x) (L + ((x) - x0) / (x1 - x0) * (W - L - R))
#define PY(y) (H - B - ((y) - y0) / (y1 - y0) * (H - T - B))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\">", L);
    escape(f, o->title);
    fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", L, T,
            W - L - R, H - T - B);
    for (int axis = 0; axis < 2; axis++) {
        double lo = axis ? y0 : x0, hi = axis ? y1 : x1, st = tick_step(hi - lo);
        bool log = axis ? o->logy : o->logx;
        if (log && st < 1)
            st = 1;
        for (double v = ceil(lo / st) * st; v <= hi + 1e-9; v += st) {
            double shown = log ? pow(10, v) : v;
            if (axis)
                fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" "
                           "y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                        L, W - R, PY(v), PY(v), L - 6, PY(v) + 4, shown);
            else
                fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%.1f\" "
                           "y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                        PX(v), PX(v), T, H - B, PX(v), H - B + 16, shown);
        }
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", L + (W - L - R) / 2, H - 12);
    escape(f, o->xlabel);
    fprintf(f, "%s</text>\n<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">",
            o->logx ? " (log)" : "", T + (H - T - B) / 2, T + (H - T - B) / 2);
    escape(f, o->ylabel);
    fprintf(f, "%s</text>\n", o->logy ? " (log)" : "");
    for (size_t i = 0; i < ns; i++) {
        const char *c = colors[i % (sizeof colors / sizeof colors[0])];
        if (s[i].points) {
            for (size_t j = 0; j < s[i].n; j++)
                if (usable(s[i].x[j], o->logx) && usable(s[i].y[j], o->logy))
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                            PX(tr(s[i].x[j], o->logx)), PY(tr(s[i].y[j], o->logy)), c);
        } else {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", c);
            for (size_t j = 0; j < s[i].n; j++)
                if (usable(s[i].x[j], o->logx) && usable(s[i].y[j], o->logy))
                    fprintf(f, "%.1f,%.1f ", PX(tr(s[i].x[j], o->logx)), PY(tr(s[i].y[j], o->logy)));
            fprintf(f, "\"/>\n");
        }
        int ly = T + 14 + 18 * (int)i;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"3\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">", W - R + 10,
                ly - 4, c, W - R + 30, ly);
        escape(f, s[i].label);
        fprintf(f, "</text>\n");
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    return clf_file_out_close(&out, true) == CLF_OK ? 0 : -1;
}
