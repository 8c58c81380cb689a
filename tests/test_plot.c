/* test_plot.c: loss.svg (tools/plot.c and `clformer train`'s plot): the
 * moving average against its closed form, the SVG well-formed (Python's
 * XML parser reads it), a series on the right-hand axis placed by its own
 * range, and a tiny training run's plot with its validation points and
 * BLEU axis; train's validation flags refuse bad values by name. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"
#define DATA CLF_SOURCE_DIR "/data/multi30k"

/* The debiased average as a weighted sum: the k-th finite value of y_0..y_i
 * (k = 1..K) weighs (1 - w)·w^(K-k), the sum divided by 1 - w^K. */
static double ema_closed_form(const double *y, size_t i, double w)
{
    double sum = 0, wk = 1;
    size_t K = 0;
    for (size_t j = 0; j <= i; j++)
        K += isfinite(y[j]) != 0;
    if (K == 0)
        return NAN;
    size_t k = K;
    for (size_t j = i + 1; j-- > 0;) {
        if (!isfinite(y[j]))
            continue;
        sum += (1 - w) * pow(w, (double)(K - k)) * y[j];
        k--;
    }
    for (size_t j = 0; j < K; j++)
        wk *= w;
    return sum / (1 - wk);
}

Test(plot, ema_matches_its_closed_form_and_skips_non_finite_values)
{
    enum { N = 300 };
    double y[N], got[N];
    for (size_t i = 0; i < N; i++)
        y[i] = 3 + sin(0.37 * (double)i) + 0.002 * (double)((i * 7919) % 101);
    y[0] = NAN, y[17] = INFINITY, y[18] = NAN;
    const double ws[] = {0, 0.6, 0.9, 0.98};
    for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) {
        plot_ema(got, y, N, ws[k]);
        cr_assert(isnan(got[0]), "w %g: nothing finite yet, NAN, not %g", ws[k], got[0]);
        for (size_t i = 1; i < N; i++) {
            double want = ema_closed_form(y, i, ws[k]);
            cr_assert(fabs(got[i] - want) <= 1e-12 * fabs(want), "w %g, point %zu: %.15g, want %.15g", ws[k], i,
                      got[i], want);
        }
        cr_assert_eq(got[17], got[16], "a non-finite value repeats the average before it");
    }
    /* the first finite value is the average itself (debiased), not (1 - w)·y */
    plot_ema(got, y, 2, 0.98);
    cr_assert(fabs(got[1] - y[1]) < 1e-12, "%g, want %g", got[1], y[1]);
    /* in place */
    double z[N];
    memcpy(z, y, sizeof z);
    plot_ema(z, z, N, 0.9);
    plot_ema(got, y, N, 0.9);
    cr_assert(!memcmp(z + 1, got + 1, (N - 1) * sizeof *z), "out may be y");
    cr_assert_float_eq(plot_ema_weight(1500), 0.98, 1e-12);
    cr_assert_eq(plot_ema_weight(30), 0);
    cr_assert_eq(plot_ema_weight(0), 0);
    cr_assert_float_eq(plot_ema_weight(3000000), 0.9999, 1e-12);
}

/* Python's XML parser: 0 when path is well-formed XML whose root is svg. */
static int xml_check(const char *path)
{
    char cmd[1024], err[512];
    snprintf(err, sizeof err, "%s.err", path);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
             "sys.exit(r.tag != \"{http://www.w3.org/2000/svg}svg\")' '%s'", path);
    int rc = tu_run(cmd, err);
    if (rc)
        fprintf(stderr, "%s: %s\n", path, tu_slurp(err));
    return rc;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

Test(plot, two_axes_well_formed_each_series_on_its_own_range)
{
    char path[512];
    snprintf(path, sizeof path, "%s/two.svg", tu_tmpdir());
    double x[] = {1, 2, 3, 4}, loss[] = {4, 3, 2.5, 2}, vx[] = {2.5, 4}, bleu[] = {100, 200};
    struct plot_series s[] = {
        {.label = "loss <raw> & \"faded\"", .x = x, .y = loss, .n = 4, .faded = true, .color = 1},
        {.label = "bleu", .x = vx, .y = bleu, .n = 2, .points = true, .right = true, .color = 3}};
    struct plot_opts o = {.title = "a & b", .xlabel = "update", .ylabel = "loss", .y2label = "BLEU axis"};
    cr_assert_eq(plot_svg(path, &o, s, 2), 0);
    cr_assert_eq(xml_check(path), 0, "not well-formed: %s", tu_slurp(path));
    char *svg = tu_slurp(path);
    cr_assert(strstr(svg, ">BLEU axis</text>"), "the right axis's label:\n%s", svg);
    cr_assert(strstr(svg, "stroke-opacity=\"0.3\""), "the faded line:\n%s", svg);
    cr_assert(strstr(svg, "text-anchor=\"start\">200</text>"), "a right-hand tick of BLEU's range:\n%s", svg);
    /* the points are placed by the right axis's range (100..200 padded by
     * 5%), not the left one's (2..4): top and bottom of the frame */
    cr_assert(strstr(svg, "<circle cx=\"305.0\" cy=\"374.1\""), "BLEU 100 near the bottom:\n%s", svg);
    cr_assert(strstr(svg, "<circle cx=\"540.0\" cy=\"55.9\""), "BLEU 200 near the top:\n%s", svg);
    free(svg);

    /* no right-hand series: no right axis, the plot as wide as before */
    cr_assert_eq(plot_svg(path, &o, s, 1), 0);
    svg = tu_slurp(path);
    cr_assert_null(strstr(svg, "BLEU axis"), "%s", svg);
    cr_assert(strstr(svg, "width=\"720\""), "%s", svg);
    free(svg);
}

/* A tiny run validating every few updates on 20 pairs: log.jsonl's
 * validation records, and loss.svg with the raw line, its average, the
 * validation points on both axes and the legend; then one validating by
 * the clock. */
Test(plot, train_plots_validation_points_and_the_bleu_axis, .timeout = TU_TIMEOUT(300))
{
    const char *dir = tu_tmpdir();
    char cmd[2048], err[512], path[512];
    snprintf(err, sizeof err, "%s/train.err", dir);
    snprintf(cmd, sizeof cmd,
             "%s train --src %s/val.en.gz --tgt %s/val.de.gz --val-src %s/val.en.gz --val-tgt %s/val.de.gz "
             "--preset tiny --vocab 400 --steps 12 --val-every 5 --val-sentences 20 --max-tokens 512 "
             "--save-minutes 100 --out %s/m",
             CLI, DATA, DATA, DATA, DATA, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    char *msg = tu_slurp(err);
    cr_assert(strstr(msg, "validation: the first 20 of "), "%s", msg);
    cr_assert(strstr(msg, "validation: 3 runs on 20 pairs, "), "updates 5, 10 and the end:\n%s", msg);
    free(msg);
    snprintf(path, sizeof path, "%s/m/log.jsonl", dir);
    char *log = tu_slurp(path);
    cr_assert_eq(count(log, "\"val_pairs\":20,"), 3, "%s", log);
    cr_assert_eq(count(log, "\"val_bleu\":"), 3, "%s", log);
    free(log);
    snprintf(path, sizeof path, "%s/m/loss.svg", dir);
    cr_assert_eq(xml_check(path), 0, "not well-formed");
    char *svg = tu_slurp(path);
    cr_assert_eq(count(svg, "<polyline"), 2, "the raw losses and their average:\n%s", svg);
    cr_assert(strstr(svg, ">smoothed (EMA 0)</text>"), "12 points: no smoothing, and the legend says so:\n%s", svg);
    /* three validations, each a loss and a BLEU point, plus a legend marker each */
    cr_assert_eq(count(svg, "<circle"), 3 * 2 + 2, "%s", svg);
    cr_assert(strstr(svg, ">greedy BLEU (validation)</text>"), "the right-hand axis:\n%s", svg);
    cr_assert(strstr(svg, ">greedy BLEU (right)</text>"), "the legend:\n%s", svg);
    free(svg);

    /* --val-minutes: a period shorter than any update validates after each */
    snprintf(cmd, sizeof cmd,
             "%s train --src %s/val.en.gz --tgt %s/val.de.gz --val-src %s/val.en.gz --val-tgt %s/val.de.gz "
             "--preset tiny --bpe %s/m/bpe.model --steps 3 --val-every 0 --val-minutes 1e-9 --val-sentences 5 "
             "--max-tokens 512 --save-minutes 100 --out %s/t",
             CLI, DATA, DATA, DATA, DATA, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    msg = tu_slurp(err);
    cr_assert(strstr(msg, "validation: 3 runs on 5 pairs, "), "%s", msg);
    free(msg);
}

Test(plot, validation_flags_refuse_bad_values_by_name)
{
    const struct { const char *args, *says; } cases[] = {
        {"--val-minutes -1", "--val-minutes wants a number from 0 to"},
        {"--val-minutes soon", "--val-minutes wants a number, not 'soon'"},
        {"--val-sentences 2.5", "--val-sentences wants an integer, not '2.5'"},
        {"--val-sentences -3", "--val-sentences wants an integer from 0 to"},
    };
    char cmd[512], err[512];
    snprintf(err, sizeof err, "%s/err.txt", tu_tmpdir());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s train %s", CLI, cases[i].args);
        cr_assert_eq(tu_run(cmd, err), 2, "train %s did not exit with 2", cases[i].args);
        char *msg = tu_slurp(err);
        cr_assert(strstr(msg, cases[i].says), "train %s:\n%s", cases[i].args, msg);
        free(msg);
    }
}
