/* plot.c: see plot.h. */
#include <math.h>
#include <stdio.h>

#include <clformer/advanced/files.h>
#include "plot.h"

/* The frame: W × H, margins L, R (the legend), T, B; a right-hand axis
 * widens the picture by G for its ticks and label, the plot area stays. */
enum { W = 720, H = 440, L = 70, R = 180, T = 40, B = 50, G = 60 };

static const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static bool usable(double v, bool log) { return isfinite(v) && (!log || v > 0); }
static double tr(double v, bool log) { return log ? log10(v) : v; }

void plot_ema(double *out, const double *y, size_t n, double w)
{
    double m = 0, wk = 1, last = NAN;  /* wk = w^k */
    for (size_t i = 0; i < n; i++) {
        if (isfinite(y[i])) {
            m = w * m + (1 - w) * y[i];
            wk *= w;
            last = m / (1 - wk);
        }
        out[i] = last;
    }
}

double plot_ema_weight(size_t n)
{
    return n <= 30 ? 0 : n >= 300000 ? 0.9999 : 1 - 30.0 / (double)n;
}

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
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

/* A range [lo, hi] that is never empty, with 5% room above and below
 * (vpad). */
static void range_fix(double *lo, double *hi, bool vpad)
{
    if (!(*lo <= *hi)) *lo = 0, *hi = 1;
    if (*hi - *lo < 1e-12) *lo -= 0.5, *hi += 0.5;
    if (vpad) {
        double pad = (*hi - *lo) * 0.05;
        *lo -= pad, *hi += pad;
    }
}

int plot_svg(const char *path, const struct plot_opts *o, const struct plot_series *s, size_t ns)
{
    /* x, then y on the left and y on the right (linear) */
    double x0 = INFINITY, x1 = -INFINITY, y0[2] = {INFINITY, INFINITY}, y1[2] = {-INFINITY, -INFINITY};
    bool right = false;
    for (size_t i = 0; i < ns; i++) {
        const int a = s[i].right;
        const bool logy = !a && o->logy;
        right |= s[i].right;
        for (size_t j = 0; j < s[i].n; j++) {
            if (!usable(s[i].x[j], o->logx) || !usable(s[i].y[j], logy))
                continue;
            double x = tr(s[i].x[j], o->logx), y = tr(s[i].y[j], logy);
            x0 = fmin(x0, x), x1 = fmax(x1, x), y0[a] = fmin(y0[a], y), y1[a] = fmax(y1[a], y);
        }
    }
    range_fix(&x0, &x1, false);
    range_fix(&y0[0], &y1[0], true);
    range_fix(&y0[1], &y1[1], true);
    const int w = W + (right ? G : 0), pr = w - R - (right ? G : 0);  /* the plot area's right edge */
    struct clf_file_out out;
    if (clf_file_out_open(&out, path) != CLF_OK)
        return -1;
    FILE *f = out.f;
#define PX(x) (L + ((x) - x0) / (x1 - x0) * (pr - L))
#define PY(y, a) (H - B - ((y) - y0[a]) / (y1[a] - y0[a]) * (H - T - B))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", w, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\">", L);
    escape(f, o->title);
    fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", L, T,
            pr - L, H - T - B);
    for (int axis = 0; axis < 3; axis++) {  /* x, left y, right y */
        if (axis == 2 && !right)
            break;
        const int a = axis == 2;
        double lo = axis ? y0[a] : x0, hi = axis ? y1[a] : x1, st = tick_step(hi - lo);
        bool log = axis == 0 ? o->logx : axis == 1 && o->logy;
        if (log && st < 1)
            st = 1;
        for (double v = ceil(lo / st) * st; v <= hi + 1e-9; v += st) {
            double shown = log ? pow(10, v) : v;
            if (fabs(shown) < st * 1e-9)
                shown = 0;  /* not -1.4e-17 */
            if (axis == 2)
                fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/><text x=\"%d\" "
                           "y=\"%.1f\" text-anchor=\"start\">%g</text>\n",
                        pr, pr + 4, PY(v, 1), PY(v, 1), pr + 7, PY(v, 1) + 4, shown);
            else if (axis)
                fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" "
                           "y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                        L, pr, PY(v, 0), PY(v, 0), L - 6, PY(v, 0) + 4, shown);
            else
                fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%.1f\" "
                           "y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                        PX(v), PX(v), T, H - B, PX(v), H - B + 16, shown);
        }
    }
    const int mid = T + (H - T - B) / 2;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", L + (pr - L) / 2, H - 12);
    escape(f, o->xlabel);
    fprintf(f, "%s</text>\n<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">",
            o->logx ? " (log)" : "", mid, mid);
    escape(f, o->ylabel);
    fprintf(f, "%s</text>\n", o->logy ? " (log)" : "");
    if (right) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" transform=\"rotate(90 %d %d)\" text-anchor=\"middle\">", pr + 45, mid,
                pr + 45, mid);
        escape(f, o->y2label);
        fprintf(f, "</text>\n");
    }
    for (size_t i = 0; i < ns; i++) {
        const size_t ci = s[i].color > 0 ? (size_t)s[i].color - 1 : i;
        const char *c = colors[ci % (sizeof colors / sizeof colors[0])];
        const int a = s[i].right;
        const bool logy = !a && o->logy;
        const char *look = s[i].faded ? "stroke-width=\"1\" stroke-opacity=\"0.3\"" : "stroke-width=\"1.5\"";
        if (s[i].points) {
            for (size_t j = 0; j < s[i].n; j++)
                if (usable(s[i].x[j], o->logx) && usable(s[i].y[j], logy))
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
                            PX(tr(s[i].x[j], o->logx)), PY(tr(s[i].y[j], logy), a), c);
        } else {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" %s points=\"", c, look);
            for (size_t j = 0; j < s[i].n; j++)
                if (usable(s[i].x[j], o->logx) && usable(s[i].y[j], logy))
                    fprintf(f, "%.1f,%.1f ", PX(tr(s[i].x[j], o->logx)), PY(tr(s[i].y[j], logy), a));
            fprintf(f, "\"/>\n");
        }
        /* the legend: a marker or a stroke like the series' own */
        const int ly = T + 14 + 18 * (int)i, lx = w - R + 10;
        if (s[i].points)
            fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"3.5\" fill=\"%s\"/>", lx + 7, ly - 4, c);
        else
            fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" %s/>", lx, lx + 14, ly - 4, ly - 4,
                    c, look);
        fprintf(f, "<text x=\"%d\" y=\"%d\">", lx + 20, ly);
        escape(f, s[i].label);
        fprintf(f, "%s</text>\n", a ? " (right)" : "");
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    return clf_file_out_close(&out, true) == CLF_OK ? 0 : -1;
}
