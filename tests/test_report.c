/* test_report.c: benchmark reports (bench/report.c, the reader behind
 * `clformer bench compare`): two reports lined up figure by figure, bad
 * ones refused by name, the JSON reader's checks, and the writer of the
 * reports and log.jsonl (cli/json_out.c). Nothing here is timed and
 * nothing touches a device. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clformer_json.h"
#include "json_out.h"
#include "report.h"

static const char *report_a =
    "{\"suite\": \"clformer bench all\", \"meta\": {\"device\": {\"name\": \"Dev A\"}, "
    "\"tuning\": {\"source\": \"clblast\"}},\n"
    "\"benches\": [{\"bench\": \"gemm\", \"device\": {\"name\": \"Dev A\"}, \"results\": [\n"
    "  {\"shape\": \"sq\", \"m\": 4, \"n\": 4, \"k\": 4, \"seconds\": 0.5, \"gflops\": 10.0, \"openblas_gflops\": 40},\n"
    "  {\"shape\": \"only in A\", \"gflops\": 5}]},\n"
    " {\"bench\": \"train\", \"device\": {\"name\": \"Dev A\"}, \"preset\": \"small\", \"s_per_step\": 2.0},\n"
    " {\"bench\": \"ops\", \"error\": \"exit status 1\"}],\n"
    "\"peers\": [{\"peer\": \"torch\", \"what\": \"train_step\", \"d\": 256, \"tgt_tokens_per_s\": 1000.0, "
    "\"s_per_step\": 2.56}]}";
static const char *report_b =
    "{\"suite\": \"clformer bench all\", \"meta\": {\"device\": {\"name\": \"Dev B\"}, "
    "\"tuning\": {\"source\": \"file\"}},\n"
    "\"benches\": [{\"bench\": \"gemm\", \"results\": [\n"
    "  {\"shape\": \"sq\", \"m\": 4, \"n\": 4, \"k\": 4, \"seconds\": 0.2, \"gflops\": 25.0, \"openblas_gflops\": 40},\n"
    "  {\"shape\": \"only in B\", \"gflops\": 7}]},\n"
    " {\"bench\": \"train\", \"results\": [{\"preset\": \"small\", \"s_per_step\": 0.5}]}]}";

static const struct compare_row *find_row(const struct comparison *c, const char *bench, const char *name,
                                              const char *metric)
{
    for (size_t r = 0; r < c->nrows; r++)
        if (!strcmp(c->rows[r].item->bench, bench) && !strcmp(c->rows[r].item->name, name) &&
            !strcmp(c->rows[r].item->metric, metric))
            return &c->rows[r];
    cr_assert_fail("no row %s / %s / %s", bench, name, metric);
    return NULL;
}

Test(report, compare_two_reports)
{
    struct report r[2];
    char err[512];
    cr_assert(report_parse(report_a, strlen(report_a), "a.json", &r[0], err, sizeof err), "%s", err);
    cr_assert(report_parse(report_b, strlen(report_b), "b.json", &r[1], err, sizeof err), "%s", err);
    cr_assert_str_eq(r[0].device, "Dev A");
    cr_assert_str_eq(r[1].tuning, "file");
    cr_assert_not_null(strstr(r[1].label, "Dev B"));
    /* gemm sq: gflops and openblas_gflops (seconds is the same figure, left out); only-in-A;
     * train; the peer's rate (its time is the same figure) */
    cr_assert_eq(r[0].count, 5);

    struct comparison c;
    cr_assert(report_compare(r, 2, &c, err, sizeof err), "%s", err);
    cr_assert_eq(c.nreports, 2);
    cr_assert_eq(c.nrows, 6);  /* the five of A and "only in B" */
    const struct compare_row *row = find_row(&c, "gemm", "sq m=4 n=4 k=4", "gflops");
    cr_assert_float_eq(row->value[0], 10.0, 1e-12);
    cr_assert_float_eq(row->value[1], 25.0, 1e-12);
    cr_assert_float_eq(row->ratio[0], 1.0, 1e-12);
    cr_assert_float_eq(row->ratio[1], 2.5, 1e-12);
    row = find_row(&c, "gemm", "sq m=4 n=4 k=4", "openblas_gflops");
    cr_assert_float_eq(row->ratio[1], 1.0, 1e-12);
    /* a time: four times shorter is four times faster */
    row = find_row(&c, "train", "small", "s_per_step");
    cr_assert_not(row->item->higher_better);
    cr_assert_float_eq(row->ratio[1], 4.0, 1e-12);
    row = find_row(&c, "gemm", "only in A", "gflops");
    cr_assert(isnan(row->value[1]) && isnan(row->ratio[1]));
    row = find_row(&c, "gemm", "only in B", "gflops");
    cr_assert(isnan(row->value[0]) && isnan(row->ratio[1]));
    cr_assert_float_eq(row->value[1], 7.0, 1e-12);
    row = find_row(&c, "peer:torch", "train_step d=256", "tgt_tokens_per_s");
    cr_assert_float_eq(row->value[0], 1000.0, 1e-9);
    comparison_free(&c);
    report_free(&r[0]);
    report_free(&r[1]);
}

Test(report, bad_reports_are_refused)
{
    struct report r;
    char err[512];
    const char *bad = "{\"benches\": [{\"bench\": \"gemm\", \"results\": [}]}";
    cr_assert_not(report_parse(bad, strlen(bad), "bad.json", &r, err, sizeof err));
    cr_assert_not_null(strstr(err, "bad.json: not valid JSON: line 1, column"), "%s", err);
    const char *other = "{\"hello\": 1}";
    cr_assert_not(report_parse(other, strlen(other), "other.json", &r, err, sizeof err));
    cr_assert_not_null(strstr(err, "other.json: neither"), "%s", err);
    const char *good = "[1, 2.5e3, \"\\u00e9\\ud83d\\ude00\", true, null, {}]";
    cr_assert(clf_json_check(good, strlen(good), err, sizeof err), "%s", err);
    cr_assert_not(clf_json_check("[1, 2,]", 7, err, sizeof err));
    cr_assert_not(clf_json_check("\"\\ud83d\"", 8, err, sizeof err));
    cr_assert_not(clf_json_check("01", 2, err, sizeof err));
    cr_assert_not(report_load("/nonexistent/report.json", &r, err, sizeof err));
    cr_assert_not_null(strstr(err, "/nonexistent/report.json: cannot open"), "%s", err);
}

/* The writer's commas, keys, escapes, nulls and breaks, in both spacings:
 * the bytes the reports and log.jsonl have always had. */
Test(json_out, places_commas_and_breaks_as_the_reports_had_them)
{
    char *text;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "name", "a \"b\"\n");
    cli_json_arr(&w, "xs");
    cli_json_num(&w, NULL, "%d", 1);
    cli_json_real(&w, NULL, NAN);
    cli_json_real(&w, NULL, 0.25);
    cli_json_obj(&w, NULL);
    cli_json_end(&w);
    cli_json_end(&w);
    cli_json_break(&w, "\n ");
    cli_json_obj(&w, "o");
    cli_json_bool(&w, "t", true);
    cli_json_null(&w, "n");
    cli_json_str(&w, "s", NULL);
    cli_json_end(&w);
    cli_json_key(&w, "own");
    fputs("[]", f);
    cli_json_raw(&w, "raw", "{\"x\": 2}");
    cli_json_arr(&w, "lines");
    for (int i = 0; i < 2; i++) {
        cli_json_break(&w, "\n  ");
        cli_json_num(&w, NULL, "%d", i);
    }
    cli_json_break(&w, "\n");
    cli_json_end(&w);
    cli_json_end(&w);
    fputc('\n', f);
    cli_json_init(&w, f, true);
    cli_json_obj(&w, NULL);
    cli_json_num(&w, "step", "%ld", 12L);
    cli_json_num(&w, "loss", "%.6f", 1.5);
    cli_json_end(&w);
    fclose(f);
    cr_assert_str_eq(text, "{\"name\": \"a \\\"b\\\"\\u000a\", \"xs\": [1, null, 0.25, {}],\n"
                           " \"o\": {\"t\": true, \"n\": null, \"s\": null}, \"own\": [], \"raw\": {\"x\": 2}, "
                           "\"lines\": [\n  0,\n  1\n]}\n"
                           "{\"step\":12,\"loss\":1.500000}");
    char err[256];
    size_t report = (size_t)(strrchr(text, '\n') - text);
    cr_assert(clf_json_check(text, report, err, sizeof err), "%s", err);
    cr_assert(clf_json_check(text + report + 1, strlen(text + report + 1), err, sizeof err), "%s", err);
    free(text);
}
