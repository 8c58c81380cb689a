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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clformer_json.h"
#include "energy.h"
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
    cr_assert(report_compare(r, 2, 0, &c, err, sizeof err), "%s", err);
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

/* The statistics on known numbers: median of an odd and an even count,
 * extremes, and the spread as (max-min)/median; none from one value. */
Test(report, stats_on_known_numbers)
{
    const double x[] = {3, 1, 2, 10, 4};
    struct report_stats s;
    report_stats_of(x, 5, &s);
    cr_assert_eq(s.n, 5);
    cr_assert_float_eq(s.median, 3.0, 1e-12);
    cr_assert_float_eq(s.min, 1.0, 1e-12);
    cr_assert_float_eq(s.max, 10.0, 1e-12);
    cr_assert_float_eq(s.spread, 3.0, 1e-12);  /* (10 - 1) / 3 */
    cr_assert_float_eq(x[0], 3.0, 1e-12);      /* the input left as it was */
    const double y[] = {8, 2, 4, 6};
    report_stats_of(y, 4, &s);
    cr_assert_float_eq(s.median, 5.0, 1e-12);
    cr_assert_float_eq(s.spread, 1.2, 1e-12);  /* (8 - 2) / 5 */
    report_stats_of(y, 1, &s);
    cr_assert(s.n == 1 && s.median == 8 && isnan(s.spread));
}

static const struct report_identity ident = {
    .version = "0.1.0", .commit = "abc123-dirty", .build_type = "Release", .compiler = "GNU 12",
    .cpu = "Some CPU, \"quoted\"", .isa = "avx2 fma", .threads = 2, .os = "Linux", .device = "Dev 'A'",
    .platform = "Plat", .driver = "1.0", .device_type = "cpu", .date = "2026-12-07T00:00:00Z",
    .repetitions = 3, .load1 = NAN};

/* Two figures as a runner makes them: n 3 with a spread, and a time. */
static void two_items(struct report_item it[2])
{
    memset(it, 0, 2 * sizeof *it);
    it[0] = (struct report_item){.bench = "gemm", .name = "sq, m=4", .params = "--batch 8", .metric = "gflops",
                                 .unit = "GFLOP/s", .higher_better = true, .value = 10,
                                 .st = {3, 10, 9, 12, 0.3}};
    it[1] = (struct report_item){.bench = "train", .name = "small", .metric = "s_per_step", .unit = "s",
                                 .value = 2, .st = {1, 2, 2, 2, NAN}};
}

static char *written(enum report_format fmt, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    cr_assert_not_null(f);
    struct report_writer w;
    struct report_item it[2];
    two_items(it);
    report_write_begin(&w, f, fmt, &ident);
    report_write_rows(&w, it, 2);
    cr_assert(report_write_end(&w));
    fclose(f);
    return text;
}

/* json and jsonl written, then read back: every field as written. */
Test(report, v1_round_trip_json_and_jsonl)
{
    enum report_format fmts[2] = {REPORT_JSON, REPORT_JSONL};
    for (int k = 0; k < 2; k++) {
        size_t len;
        char *text = written(fmts[k], &len), err[512];
        struct report r;
        cr_assert(report_parse(text, len, "rt.json", &r, err, sizeof err), "%s\n%s", err, text);
        cr_assert_str_eq(r.format, REPORT_FORMAT);
        cr_assert_not(r.units_guessed);
        cr_assert_str_eq(r.device, "Dev 'A'");
        cr_assert_not_null(strstr(r.label, "abc123-dirty"), "%s", r.label);
        cr_assert_null(strstr(r.label, "caps"), "no caps, none named: %s", r.label);
        cr_assert_eq(r.count, 2);
        struct report_item it[2];
        two_items(it);
        for (int i = 0; i < 2; i++) {
            cr_assert_str_eq(r.items[i].bench, it[i].bench);
            cr_assert_str_eq(r.items[i].name, it[i].name);
            cr_assert_str_eq(r.items[i].params, it[i].params);
            cr_assert_str_eq(r.items[i].unit, it[i].unit);
            cr_assert_eq(r.items[i].higher_better, it[i].higher_better);
            cr_assert_eq(r.items[i].st.n, it[i].st.n);
            cr_assert_float_eq(r.items[i].value, it[i].st.median, 1e-9);
            cr_assert_float_eq(r.items[i].st.min, it[i].st.min, 1e-9);
            cr_assert_float_eq(r.items[i].st.max, it[i].st.max, 1e-9);
        }
        cr_assert_float_eq(r.items[0].st.spread, 0.3, 1e-9);
        cr_assert(isnan(r.items[1].st.spread));  /* null, not 0 */
        report_free(&r);
        if (fmts[k] == REPORT_JSONL) {  /* a killed run: the last line cut short still reads */
            size_t cut = len - 10;
            cr_assert(report_parse(text, cut, "cut.jsonl", &r, err, sizeof err), "%s", err);
            cr_assert_eq(r.count, 1);
            report_free(&r);
        }
        free(text);
    }
}

/* A v1 row's unit and direction are the report's: a key the writer would
 * call a rate is read as the lower-is-better "widgets" it says. */
Test(report, units_and_directions_are_read_not_guessed)
{
    const char *a = "{\"format\": \"clformer-bench/1\", \"device\": {\"name\": \"X\"}, \"rows\": ["
                    "{\"bench\": \"b\", \"case\": \"c\", \"metric\": \"gflops\", \"unit\": \"widgets\", "
                    "\"better\": \"lower\", \"n\": 3, \"median\": 4, \"min\": 3, \"max\": 5, \"spread\": 0.5}]}";
    const char *b = "{\"format\": \"clformer-bench/1\", \"device\": {\"name\": \"Y\"}, \"rows\": ["
                    "{\"bench\": \"b\", \"case\": \"c\", \"metric\": \"gflops\", \"unit\": \"widgets\", "
                    "\"better\": \"lower\", \"n\": 3, \"median\": 2, \"min\": 1.9, \"max\": 2.1, \"spread\": 0.1}]}";
    struct report r[2];
    char err[512];
    cr_assert(report_parse(a, strlen(a), "a.json", &r[0], err, sizeof err), "%s", err);
    cr_assert(report_parse(b, strlen(b), "b.json", &r[1], err, sizeof err), "%s", err);
    cr_assert_str_eq(r[0].items[0].unit, "widgets");
    cr_assert_not(r[0].items[0].higher_better);
    struct comparison c;
    cr_assert(report_compare(r, 2, 0, &c, err, sizeof err), "%s", err);
    cr_assert_float_eq(c.rows[0].ratio[1], 2.0, 1e-12);  /* lower is better: half is twice as fast */
    cr_assert_not(c.rows[0].noise[1]);                   /* [1.9, 2.1] and [3, 5] apart */
    comparison_free(&c);
    /* B as the baseline */
    cr_assert(report_compare(r, 2, 1, &c, err, sizeof err), "%s", err);
    cr_assert_float_eq(c.rows[0].ratio[0], 0.5, 1e-12);
    comparison_free(&c);
    /* ranges that overlap: inside the noise */
    r[1].items[0].st.max = 3.5;
    cr_assert(report_compare(r, 2, 0, &c, err, sizeof err), "%s", err);
    cr_assert(c.rows[0].noise[1]);
    comparison_free(&c);
    /* another unit: no ratio */
    snprintf(r[1].items[0].unit, sizeof r[1].items[0].unit, "gadgets");
    cr_assert(report_compare(r, 2, 0, &c, err, sizeof err), "%s", err);
    cr_assert(c.rows[0].unit_mismatch[1] && isnan(c.rows[0].ratio[1]));
    comparison_free(&c);
    cr_assert_not(report_compare(r, 2, 2, &c, err, sizeof err));
    report_free(&r[0]);
    report_free(&r[1]);
    const char *bad = "{\"format\": \"clformer-bench/1\", \"rows\": [{\"bench\": \"b\", \"case\": \"c\", "
                      "\"metric\": \"m\", \"unit\": \"s\", \"better\": \"faster\", \"n\": 1, \"median\": 1}]}";
    cr_assert_not(report_parse(bad, strlen(bad), "bad.json", &r[0], err, sizeof err));
    cr_assert_not_null(strstr(err, "bad.json: rows[0]: \"better\" is \"faster\""), "%s", err);
}

/* A record's split of a step (translate's step_ms) becomes figures of
 * their own, in ms, lower is better; the sweep's params ride on each. */
Test(report, a_records_step_split_is_figures)
{
    const char *rec = "{\"bench\": \"translate\", \"results\": [{\"search\": \"greedy\", \"beam\": 1, "
                      "\"sentences_per_s\": 5, \"step_ms\": {\"wall\": 2.5, \"host\": 0.5}}]}";
    struct report r = {0};
    char err[512];
    cr_assert(report_add_record(&r, rec, strlen(rec), "--batch 8", err, sizeof err), "%s", err);
    cr_assert_eq(r.count, 3);
    cr_assert_str_eq(r.items[0].unit, "sentences/s");
    cr_assert(r.items[0].higher_better);
    cr_assert_str_eq(r.items[2].metric, "step_ms.host");
    cr_assert_str_eq(r.items[2].unit, "ms");
    cr_assert_not(r.items[2].higher_better);
    cr_assert_str_eq(r.items[2].params, "--batch 8");
    cr_assert_str_eq(r.items[2].name, "greedy beam=1");
    report_free(&r);
}

Test(report, unknown_format_is_refused)
{
    struct report r;
    char err[512];
    const char *v2 = "{\"format\": \"clformer-bench/2\", \"rows\": []}";
    cr_assert_not(report_parse(v2, strlen(v2), "new.json", &r, err, sizeof err));
    cr_assert_not_null(strstr(err, "new.json: report format \"clformer-bench/2\" is not one this clformer reads"),
                       "%s", err);
    const char *v2l = "{\"format\": \"other/9\", \"record\": \"header\"}\n{\"bench\": \"b\"}\n";
    cr_assert_not(report_parse(v2l, strlen(v2l), "new.jsonl", &r, err, sizeof err));
    cr_assert_not_null(strstr(err, "new.jsonl:1: report format \"other/9\""), "%s", err);
}

/* csv: a header and one line per row, every line with as many fields, the
 * quotes in a field doubled; sql: loaded by sqlite3 where python3 has it. */
Test(report, csv_and_sql_are_well_formed)
{
    size_t len;
    char *csv = written(REPORT_CSV, &len);
    int lines = 0;
    size_t fields = 0;
    for (char *line = csv; *line; lines++) {
        char *end = strchr(line, '\n');
        cr_assert_not_null(end, "every line ends: %s", line);
        size_t n = 1;
        bool quoted = false;
        for (char *p = line; p < end; p++) {
            if (*p == '"')
                quoted = !quoted;
            else if (*p == ',' && !quoted)
                n++;
        }
        cr_assert_not(quoted, "a quote left open: %.*s", (int)(end - line), line);
        if (lines == 0)
            fields = n;
        cr_assert_eq(n, fields, "line %d has %zu fields, the header %zu", lines + 1, n, fields);
        line = end + 1;
    }
    cr_assert_eq(lines, 3);
    cr_assert_eq(fields, 21);
    cr_assert_not_null(strstr(csv, "\"Some CPU, \"\"quoted\"\"\""));
    free(csv);

    char *sql = written(REPORT_SQL, &len);
    cr_assert_not_null(strstr(sql, "CREATE TABLE IF NOT EXISTS clformer_bench"));
    cr_assert_not_null(strstr(sql, "'Dev ''A'''"));
    if (system("python3 -c 'import sqlite3' 2>/dev/null") != 0) {
        free(sql);
        cr_skip_test("python3 with sqlite3 is not here: the sql was checked as text only");
    }
    char path[] = "/tmp/clf_report_sqlXXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fwrite(sql, 1, len, f);
    fwrite(sql, 1, len, f);  /* twice: IF NOT EXISTS lets a second report into the same table */
    fclose(f);
    char cmd[768];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import sqlite3,sys; c=sqlite3.connect(':memory:'); c.executescript(open('%s').read()); "
             "r=c.execute('select count(*), sum(spread is null), max(median) from clformer_bench where "
             "commit_id=?', ('abc123-dirty',)).fetchone(); sys.exit(0 if r==(4,2,10.0) else 1)\"",
             path);
    int rc = system(cmd);
    unlink(path);
    free(sql);
    cr_assert_eq(rc, 0, "sqlite3 did not load the sql as written");
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

/* The command's side, without timing anything: `bench all` with its budget
 * already spent writes a v1 report of no rows whose header names the build,
 * host and device; bad options and an unknown format are refused, named. */
Test(report, command_writes_v1_headers_and_refuses_bad_input)
{
    char dir[] = "/tmp/clf_report_cliXXXXXX", cmd[1024], path[256], err[512];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/all.jsonl", dir);
    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench all --quick --seconds 0 --format jsonl > %s 2>/dev/null",
             path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    struct report r;
    cr_assert(report_load(path, &r, err, sizeof err), "%s", err);
    cr_assert_str_eq(r.format, REPORT_FORMAT);
    cr_assert_eq(r.count, 0);
    report_free(&r);
    FILE *f = fopen(path, "r");
    char line[8192];
    cr_assert(f && fgets(line, sizeof line, f));
    fclose(f);
    struct clf_json j;
    cr_assert(clf_json_parse(line, strcspn(line, "\n"), &j, err, sizeof err), "%s", err);
    const char *commit = clf_json_str(clf_json_get(&j, "build"), "commit");
    cr_assert(commit && commit[0], "a commit, or \"unknown\"");
    cr_assert_not_null(clf_json_str(clf_json_get(&j, "host"), "isa"));
    cr_assert_null(clf_json_get(clf_json_get(&j, "host"), "name"), "no host name in a shared report");
    double mem;
    cr_assert(clf_json_num(clf_json_get(&j, "device"), "global_mem_bytes", &mem) && mem > 0);
    cr_assert_str_eq(clf_json_str(&j, "spread_kind"), REPORT_SPREAD_KIND);
    clf_json_free(&j);

    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench ops --format yaml 2>%s/err.txt", dir);
    cr_assert_eq(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof cmd, "grep -q 'format yaml: not one of' %s/err.txt", dir);
    cr_assert_eq(system(cmd), 0, "the bad --format is named");
    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench ops --json --repetitions 2 2>/dev/null");
    cr_assert_eq(WEXITSTATUS(system(cmd)), 2);
    snprintf(path, sizeof path, "%s/v9.json", dir);
    f = fopen(path, "w");
    fputs("{\"format\": \"clformer-bench/9\", \"rows\": []}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench compare %s --svg %s/c.svg 2>%s/err.txt", path, dir, dir);
    cr_assert_eq(WEXITSTATUS(system(cmd)), 1);
    snprintf(cmd, sizeof cmd, "grep -q 'v9.json: report format \"clformer-bench/9\" is not one' %s/err.txt", dir);
    cr_assert_eq(system(cmd), 0, "the file and the format are named");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* issue 47's figures as the reader gives them: a record's "memory" object
 * is the case "memory" in MiB, lower better, beside the record's own
 * figures; bench peak's latencies are µs, lower better. */
Test(report, memory_and_latency_figures_carry_their_units)
{
    const char *train = "{\"bench\": \"train\", \"preset\": \"tiny\", \"tgt_tokens_per_s\": 900.5, "
                        "\"memory\": {\"case\": \"memory\", \"device_peak_mib\": 12.5, \"max_rss_mib\": 300}}";
    const char *peak = "{\"bench\": \"peak\", \"fma_iters\": 77, \"results\": [{\"probe\": \"fma float32\", "
                       "\"gflops\": 40}, {\"probe\": \"launch enqueue+finish\", \"us\": 35.5}]}";
    struct report r = {0};
    char err[256];
    cr_assert(report_add_record(&r, train, strlen(train), "", err, sizeof err), "%s", err);
    cr_assert(report_add_record(&r, peak, strlen(peak), "", err, sizeof err), "%s", err);
    const char *want[][4] = {{"memory", "device_peak_mib", "MiB", "lower"}, {"memory", "max_rss_mib", "MiB", "lower"},
                             {"tiny", "tgt_tokens_per_s", "tokens/s", "higher"},
                             {"fma float32", "gflops", "GFLOP/s", "higher"},
                             {"launch enqueue+finish", "us", "us", "lower"}};
    cr_assert_eq(r.count, 5);
    for (size_t i = 0; i < 5; i++) {
        cr_assert_str_eq(r.items[i].name, want[i][0], "the sizes chosen stay out of the case's name");
        cr_assert_str_eq(r.items[i].metric, want[i][1]);
        cr_assert_str_eq(r.items[i].unit, want[i][2]);
        cr_assert_eq(r.items[i].higher_better, !strcmp(want[i][3], "higher"), "%s", want[i][1]);
    }
    report_free(&r);
}

/* bench attention's full rows: beside its rates, a time is another view
 * of one and is left out, but a ratio of times and a buffer's size are
 * figures of their own, each with its unit and direction; the sizes stay
 * out of the case's name. */
Test(report, attention_keeps_its_ratio_and_sizes_beside_its_rates)
{
    const char *att = "{\"bench\": \"attention\", \"results\": [{\"kind\": \"full\", \"n\": 1024, "
                      "\"tiled_fwd_s\": 0.25, \"tiled_fwd_gflops\": 68.7, \"tiled_fwd_bwd_s\": 0.85, "
                      "\"tiled_fwd_bwd_gflops\": 50.5, \"fwd_bwd_over_fwd\": 3.4, "
                      "\"largest_buffer_bytes\": 16777216}]}";
    struct report r = {0};
    char err[256];
    cr_assert(report_add_record(&r, att, strlen(att), "", err, sizeof err), "%s", err);
    const char *want[][3] = {{"tiled_fwd_gflops", "GFLOP/s", "higher"},
                             {"tiled_fwd_bwd_gflops", "GFLOP/s", "higher"},
                             {"fwd_bwd_over_fwd", "x", "lower"},
                             {"largest_buffer_bytes", "bytes", "lower"}};
    cr_assert_eq(r.count, 4, "the two times are left out, the rest kept: %zu rows", r.count);
    for (size_t i = 0; i < 4; i++) {
        cr_assert_str_eq(r.items[i].name, "full n=1024");
        cr_assert_str_eq(r.items[i].metric, want[i][0]);
        cr_assert_str_eq(r.items[i].unit, want[i][1]);
        cr_assert_eq(r.items[i].higher_better, !strcmp(want[i][2], "higher"), "%s", want[i][0]);
    }
    report_free(&r);
}

/* bench peak's per-precision figures: the theoretical peak's basis goes to
 * its row, never into the case's name, and is written and read back; the
 * peak later rows are read against is float32's measured FMA, not the
 * theoretical one nor float64's written after it; float16 null stays a
 * row of no value. */
Test(report, peak_precisions_and_the_theoretical_basis)
{
    const char *peak = "{\"bench\": \"peak\", \"results\": [{\"probe\": \"fma float32\", \"gflops\": 80, "
                       "\"theoretical_gflops\": 160, \"of_theoretical\": 0.5, "
                       "\"theoretical_gflops_basis\": \"2 cores x 2500 MHz x 32\"}, "
                       "{\"probe\": \"fma float16\", \"gflops\": null}, {\"probe\": \"fma float64\", \"gflops\": 40}]}";
    const char *ops = "{\"bench\": \"ops\", \"results\": [{\"op\": \"ffn\", \"gflops\": 20}]}";
    struct report r = {0};
    char err[256];
    cr_assert(report_add_record(&r, peak, strlen(peak), "", err, sizeof err), "%s", err);
    cr_assert(report_add_record(&r, ops, strlen(ops), "", err, sizeof err), "%s", err);
    cr_assert_eq(r.count, 6);
    cr_assert_str_eq(r.items[1].name, "fma float32", "the basis stays out of the case's name");
    cr_assert_str_eq(r.items[1].metric, "theoretical_gflops");
    cr_assert_str_eq(r.items[1].basis, "2 cores x 2500 MHz x 32");
    cr_assert_str_eq(r.items[0].basis, "", "the measured figure has none");
    cr_assert_str_eq(r.items[2].unit, "fraction");
    cr_assert(isnan(r.items[3].value), "float16 is null");
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    struct report_writer w;
    report_write_begin(&w, f, REPORT_JSONL, &ident);
    report_write_rows(&w, r.items, r.count);
    cr_assert(report_write_end(&w));
    fclose(f);
    report_free(&r);
    cr_assert(report_parse(text, len, "peak.jsonl", &r, err, sizeof err), "%s", err);
    cr_assert_eq(r.count, 6);
    cr_assert_str_eq(r.items[1].basis, "2 cores x 2500 MHz x 32", "%s", text);
    cr_assert(isnan(r.items[3].value));
    cr_assert_float_eq(r.items[5].of_peak, 0.25, 1e-9, "float32's measured 80, not 160 nor float64's 40");
    report_free(&r);
    free(text);
}

/* Rows after bench peak's carry their share of its peak (GFLOP/s of the
 * FMA, GB/s of the copy), written and read back; other units get none. */
Test(report, rows_after_peak_carry_their_share_of_it)
{
    struct report_item it[4];
    memset(it, 0, sizeof it);
    it[0] = (struct report_item){.bench = "peak", .name = "fma float32", .metric = "gflops", .unit = "GFLOP/s",
                                 .higher_better = true, .value = 80, .st = {1, 80, 80, 80, NAN}};
    it[1] = (struct report_item){.bench = "peak", .name = "copy 64MiB", .metric = "gbps", .unit = "GB/s",
                                 .higher_better = true, .value = 10, .st = {1, 10, 10, 10, NAN}};
    it[2] = (struct report_item){.bench = "ops", .name = "ffn", .metric = "gflops", .unit = "GFLOP/s",
                                 .higher_better = true, .value = 20, .st = {1, 20, 20, 20, NAN}};
    it[3] = (struct report_item){.bench = "ops", .name = "add", .metric = "gbps", .unit = "GB/s",
                                 .higher_better = true, .value = 5, .st = {1, 5, 5, 5, NAN}};
    /* bench peak's triad, after its copy, is a figure, not the roof */
    struct report_item triad = {.bench = "peak", .name = "triad 64MiB", .metric = "gbps", .unit = "GB/s",
                                .higher_better = true, .value = 40, .st = {1, 40, 40, 40, NAN}};
    struct report_identity id = ident;
    snprintf(id.note, sizeof id.note, "shared with other jobs");
    snprintf(id.weights, sizeof id.weights, "random");
    /* a run under ISA caps (an older CPU emulated) says so in its host record and label */
    snprintf(id.caps, sizeof id.caps, "POCL_LLVM_CPU_NAME=x86-64 OPENBLAS_CORETYPE=Nehalem");
    char *text = NULL, err[256];
    size_t len;
    FILE *f = open_memstream(&text, &len);
    struct report_writer w;
    report_write_begin(&w, f, REPORT_JSONL, &id);
    report_write_rows(&w, it, 2);
    report_write_rows(&w, &triad, 1);
    report_write_rows(&w, it + 2, 2);
    cr_assert(report_write_end(&w));
    fclose(f);
    cr_assert_not_null(strstr(text, "\"note\":\"shared with other jobs\""), "%s", text);
    cr_assert_not_null(strstr(text, "\"weights\":\"random\""), "%s", text);
    struct report r;
    cr_assert(report_parse(text, len, "peak.jsonl", &r, err, sizeof err), "%s", err);
    cr_assert_not_null(strstr(text, "\"caps\":\"POCL_LLVM_CPU_NAME=x86-64 OPENBLAS_CORETYPE=Nehalem\""), "%s", text);
    cr_assert_not_null(strstr(r.label, ", caps POCL_LLVM_CPU_NAME=x86-64 OPENBLAS_CORETYPE=Nehalem,"), "%s", r.label);
    cr_assert_eq(r.count, 5);
    cr_assert_eq(r.items[0].of_peak, 0, "the peak is not a share of itself");
    cr_assert_eq(r.items[2].of_peak, 0, "nor the triad a share of the copy");
    cr_assert_float_eq(r.items[3].of_peak, 0.25, 1e-9);
    cr_assert_float_eq(r.items[4].of_peak, 0.5, 1e-9, "the copy's roof, not the triad's");
    report_free(&r);
    free(text);
}

/* A compute type's BLEU row is flagged when it falls more than 0.3 below
 * float32's of the same case and settings (issue 47): written as the rows
 * come (jsonl), read back; a drop of 0.2, another case or other settings
 * without a float32 row of their own, and the other metrics are not. */
Test(report, a_bleu_drop_below_float32_is_flagged)
{
    struct report_item it[6];
    memset(it, 0, sizeof it);
    const char *params[6] = {"--batch 8 --compute-type float32", "--batch 8 --compute-type int8",
                             "--batch 8 --compute-type bfloat16", "--batch 32 --compute-type int8",
                             "--batch 8 --compute-type int8", "--batch 8 --compute-type int8"};
    const double bleu[6] = {30, 29.5, 29.8, 20, 10, 10};
    for (int i = 0; i < 6; i++) {
        it[i] = (struct report_item){.bench = "translate", .name = "greedy ckpt.safetensors beam=1",
                                     .metric = "bleu", .unit = "BLEU", .higher_better = true, .value = bleu[i],
                                     .st = {1, bleu[i], bleu[i], bleu[i], NAN}};
        snprintf(it[i].params, sizeof it[i].params, "%s", params[i]);
    }
    snprintf(it[4].name, sizeof it[4].name, "beam ckpt.safetensors beam=4");  /* another case */
    snprintf(it[5].metric, sizeof it[5].metric, "chrf");                       /* another metric */
    snprintf(it[5].unit, sizeof it[5].unit, "chrF");
    char *text = NULL, err[256];
    size_t len;
    FILE *f = open_memstream(&text, &len);
    struct report_writer w;
    report_write_begin(&w, f, REPORT_JSONL, &ident);
    report_write_rows(&w, it, 6);
    cr_assert(report_write_end(&w));
    fclose(f);
    struct report r;
    cr_assert(report_parse(text, len, "flag.jsonl", &r, err, sizeof err), "%s", err);
    cr_assert_eq(r.count, 6);
    cr_assert_str_eq(r.items[1].flag, "BLEU 0.50 below float32's");
    for (int i = 0; i < 6; i++)
        if (i != 1)
            cr_assert_str_empty(r.items[i].flag, "row %d: '%s'", i, r.items[i].flag);
    report_free(&r);
    free(text);
}

/* RAPL's counters read from a made-up powercap folder: the packages
 * summed, their subzones and other zones left out, a wrap at
 * max_energy_range_uj allowed for; no folder, or a counter gone at the
 * end, gives NaN (null in a report), never 0. */
static void put(const char *dir, const char *file, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
}

Test(report, energy_from_rapl_counters_or_none)
{
    char root[] = "/tmp/clf_report_raplXXXXXX", d[256];
    cr_assert_not_null(mkdtemp(root));
    const char *zones[] = {"intel-rapl:0", "intel-rapl:1", "intel-rapl:0:0", "intel-rapl-mmio:0"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(d, sizeof d, "%s/%s", root, zones[i]);
        cr_assert_eq(mkdir(d, 0700), 0, "%s", d);
        put(d, "max_energy_range_uj", "1000000000");
    }
    snprintf(d, sizeof d, "%s/intel-rapl:0", root);
    put(d, "energy_uj", "5000000");
    snprintf(d, sizeof d, "%s/intel-rapl:1", root);
    put(d, "energy_uj", "999000000");  /* wraps: 1 J before the range's end */
    snprintf(d, sizeof d, "%s/intel-rapl:0:0", root);
    put(d, "energy_uj", "0");
    snprintf(d, sizeof d, "%s/intel-rapl-mmio:0", root);
    put(d, "energy_uj", "0");
    struct bench_energy e;
    bench_energy_begin(&e, root);
    cr_assert_eq(e.n, 2, "the two packages");
    snprintf(d, sizeof d, "%s/intel-rapl:0", root);
    put(d, "energy_uj", "7500000");  /* 2.5 J */
    snprintf(d, sizeof d, "%s/intel-rapl:1", root);
    put(d, "energy_uj", "500000");  /* 1 J to the wrap, 0.5 J after */
    snprintf(d, sizeof d, "%s/intel-rapl:0:0", root);
    put(d, "energy_uj", "900000000");  /* a subzone: the package counts it already */
    cr_assert_float_eq(bench_energy_end(&e), 4.0, 1e-9);
    snprintf(d, sizeof d, "%s/intel-rapl:1/energy_uj", root);
    cr_assert_eq(unlink(d), 0);
    cr_assert(isnan(bench_energy_end(&e)), "a package gone at the end: no sum");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
    bench_energy_begin(&e, "/nonexistent/powercap");
    cr_assert_eq(e.n, 0);
    cr_assert(isnan(bench_energy_end(&e)), "no counter: NaN, never 0");
}

/* The command: bench attention --n times that one length (full and
 * restricted), its full row with the ratio of forward+backward to forward;
 * a length out of range is a usage error naming --n. */
Test(report, attention_at_one_length_from_the_command, .timeout = 120)
{
    char dir[] = "/tmp/clf_report_attnXXXXXX", cmd[1024], path[256], err[512];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/attn.jsonl", dir);
    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench attention --quick --n 64 --format jsonl > %s", path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    struct report r;
    cr_assert(report_load(path, &r, err, sizeof err), "%s", err);
    size_t full = 0, restricted = 0;
    for (size_t i = 0; i < r.count; i++) {
        const struct report_item *it = &r.items[i];
        if (!strcmp(it->name, "full n=64")) {
            full++;
            cr_assert(it->value > 0, "%s: %g", it->metric, it->value);
            if (!strcmp(it->metric, "fwd_bwd_over_fwd"))
                cr_assert(!it->higher_better && !strcmp(it->unit, "x"));
        } else if (!strncmp(it->name, "restricted n=64 r=", 18)) {
            restricted++;
        } else {
            cr_assert_fail("a case of another length: %s", it->name);
        }
    }
    cr_assert_eq(full, 6, "tiled fwd, fwd+bwd, their ratio, the naive fwd and two sizes: %zu", full);
    cr_assert_eq(restricted, 3);
    report_free(&r);
    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench attention --n 10 >/dev/null 2>%s/err.txt", dir);
    cr_assert_eq(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof cmd, "grep -q -- '--n wants a sequence length' %s/err.txt", dir);
    cr_assert_eq(system(cmd), 0, "the message names --n");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The command: bench peak gives its four figures, each positive, and bench
 * translate its memory (tiny preset, quick input: a few seconds). No bound
 * on any figure: the machine may be shared. */
Test(report, peak_and_memory_from_the_command, .timeout = 120)
{
    char dir[] = "/tmp/clf_report_peakXXXXXX", cmd[1024], path[256], err[512];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/peak.jsonl", dir);
    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench peak --quick --format jsonl > %s", path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    struct report r;
    cr_assert(report_load(path, &r, err, sizeof err), "%s", err);
    const char *want[][3] = {{"fma float32", "gflops", "GFLOP/s"},
                             {"fma float32", "theoretical_gflops", "GFLOP/s"},
                             {"fma float32", "of_theoretical", "fraction"},
                             {"fma float16", "gflops", "GFLOP/s"},
                             {"fma float64", "gflops", "GFLOP/s"},
                             {"copy 64MiB", "gbps", "GB/s"},
                             {"triad 64MiB", "gbps", "GB/s"}, {"launch enqueue", "us", "us"},
                             {"launch enqueue+finish", "us", "us"}};
    cr_assert_eq(r.count, 9);
    /* PoCL has cl_khr_fp64 and a CPU with AVX2 and FMA under it (every
     * machine this suite runs on): those figures are numbers there */
    snprintf(cmd, sizeof cmd, "grep -q '\"platform\":\"Portable Computing Language\"' %s", path);
    bool pocl = system(cmd) == 0;
    snprintf(cmd, sizeof cmd, "grep -q '\"type\":\"cpu\"' %s && grep -q '\"isa\":\"[^\"]*avx2 fma' %s", path,
             path);
    bool cpu_avx2 = system(cmd) == 0;
    for (size_t i = 0; i < 9; i++) {
        cr_assert_str_eq(r.items[i].name, want[i][0]);
        cr_assert_str_eq(r.items[i].metric, want[i][1]);
        cr_assert_str_eq(r.items[i].unit, want[i][2]);
        cr_assert(r.items[i].higher_better == (i < 7), "%s %s", want[i][0], want[i][1]);
        /* a precision or a peak the device cannot give is null, never 0 */
        bool optional = (i >= 1 && i <= 3) || (i == 4 && !pocl);
        if (optional && isnan(r.items[i].value))
            continue;
        cr_assert(r.items[i].value > 0, "%s %s: %g", want[i][0], want[i][1], r.items[i].value);
    }
    if (cpu_avx2) {
        cr_assert(r.items[1].value > 0 && r.items[2].value > 0, "a CPU of AVX2+FMA has a theoretical peak");
        cr_assert_not_null(strstr(r.items[1].basis, "FLOP a cycle"), "%s", r.items[1].basis);
        cr_assert_not_null(strstr(r.items[1].basis, "MHz ("), "the clock names its source: %s", r.items[1].basis);
    }
    if (isfinite(r.items[2].value))  /* above 1 only by clocks past the one read; never by 2x */
        cr_assert(r.items[2].value < 2 && fabs(r.items[2].value - r.items[0].value / r.items[1].value) < 1e-3,
                  "%g", r.items[2].value);
    cr_assert(r.items[8].value >= r.items[7].value, "to completion takes at least the enqueue");
    report_free(&r);
    snprintf(path, sizeof path, "%s/tr.json", dir);
    snprintf(cmd, sizeof cmd,
             CLF_BINARY_DIR "/clformer bench translate --quick --preset tiny --format json --note shared > %s", path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    cr_assert(report_load(path, &r, err, sizeof err), "%s", err);
    int found = 0;
    for (size_t i = 0; i < r.count; i++)
        if (!strcmp(r.items[i].name, "memory")) {
            cr_assert_str_eq(r.items[i].unit, "MiB");
            cr_assert_not(r.items[i].higher_better);
            cr_assert(r.items[i].value > 0, "%s: %g", r.items[i].metric, r.items[i].value);
            found++;
        }
    cr_assert_eq(found, 2, "device_peak_mib and max_rss_mib");
    /* the host's share of a decoder step, measured and predicted from
     * launches x enqueue latency, for both searches: ms, lower better */
    int measured = 0, predicted = 0;
    for (size_t i = 0; i < r.count; i++) {
        bool pred = !strcmp(r.items[i].metric, "step_ms.host_pred");
        if (!pred && strcmp(r.items[i].metric, "step_ms.host"))
            continue;
        cr_assert_str_eq(r.items[i].unit, "ms");
        cr_assert_not(r.items[i].higher_better);
        /* measured: wall minus device, which a loaded machine's rounding can
         * take a hair below 0; predicted: launches were made, so above 0 */
        cr_assert(pred ? r.items[i].value > 0 : isfinite(r.items[i].value), "%s %s: %g", r.items[i].name,
                  r.items[i].metric, r.items[i].value);
        predicted += pred, measured += !pred;
    }
    cr_assert(measured == 2 && predicted == 2, "greedy and beam: %d measured, %d predicted", measured, predicted);
    /* energy: a figure where this machine's package counter is readable,
     * else a row of no value (null), never 0 */
    FILE *rapl = fopen("/sys/class/powercap/intel-rapl:0/energy_uj", "r");
    found = 0;
    for (size_t i = 0; i < r.count; i++)
        if (!strcmp(r.items[i].name, "energy")) {
            cr_assert_str_eq(r.items[i].metric, "energy_j");
            cr_assert_str_eq(r.items[i].unit, "J");
            cr_assert(rapl ? r.items[i].value > 0 : isnan(r.items[i].value), "%g", r.items[i].value);
            found++;
        }
    if (rapl)
        fclose(rapl);
    cr_assert_eq(found, 1, "energy_j");
    report_free(&r);
    snprintf(cmd, sizeof cmd, "grep -q '\"weights\": \"random\"' %s && grep -q '\"note\": \"shared\"' %s", path, path);
    cr_assert_eq(system(cmd), 0, "the header says the weights are random and carries the note");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* compare --format md over a folder: the results database's table, one
 * column of values per report (machine named with its ISA and load) and
 * the ratios, and no chart unless --svg names one. */
Test(report, compare_writes_a_markdown_table_of_a_folder)
{
    char dir[] = "/tmp/clf_report_mdXXXXXX", cmd[1024], path[256];
    cr_assert_not_null(mkdtemp(dir));
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/m%d.jsonl", dir, k);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        struct report_item it[2];
        two_items(it);
        if (k)  /* twice as fast, ranges apart: a ratio outside the noise */
            it[0].st = (struct report_stats){3, 20, 18, 24, 0.3}, it[0].value = 20;
        struct report_writer w;
        report_write_begin(&w, f, REPORT_JSONL, &ident);
        report_write_rows(&w, it, 2);
        cr_assert(report_write_end(&w));
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "cd %s && " CLF_BINARY_DIR "/clformer bench compare %s --format md > %s/t.md", dir, dir,
             dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd,
             "grep -q '^| bench | case | params | metric | unit | better | A | B | B/A |$' %s/t.md && "
             "grep -q '^| gemm | sq, m=4 | --batch 8 | gflops | GFLOP/s | higher | 10 ±30%% | 20 ±30%% | 2.00x |$' "
             "%s/t.md && grep -q 'avx2 fma' %s/t.md && test ! -e %s/compare.svg",
             dir, dir, dir, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* bench translate --model: speed and BLEU on the same rows. A tiny model
 * trained for two updates (a few seconds) translates 8 lines; with
 * `clformer translate --greedy`'s output of those lines as the reference,
 * the greedy row's BLEU is 100: the benchmark translated exactly those rows
 * as the command does and scored them. The header says weights: model. */
Test(report, translate_with_a_model_gives_bleu_on_its_rows, .timeout = 180)
{
    char dir[] = "/tmp/clf_report_bleuXXXXXX", cmd[2048], path[256], err[512];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             CLF_BINARY_DIR "/clformer train --src " CLF_SOURCE_DIR "/data/multi30k/val.en.gz --tgt " CLF_SOURCE_DIR
             "/data/multi30k/val.de.gz --val-src '' --val-tgt '' --preset tiny --vocab 400 --steps 2 --quiet "
             "--out %s/m > %s/train.log 2>&1 && zcat " CLF_SOURCE_DIR "/data/multi30k/val.en.gz | head -n 8 > %s/s.en "
             "&& " CLF_BINARY_DIR "/clformer translate --model %s/m/ckpt-2.safetensors --greedy < %s/s.en > %s/h.de "
             "2>/dev/null",
             dir, dir, dir, dir, dir, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/b.jsonl", dir);
    snprintf(cmd, sizeof cmd,
             CLF_BINARY_DIR "/clformer bench translate --model %s/m/ckpt-2.safetensors --src %s/s.en --ref %s/h.de "
             "--lines 8 --format jsonl > %s",
             dir, dir, dir, path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    struct report r;
    cr_assert(report_load(path, &r, err, sizeof err), "%s", err);
    int bleu = 0, chrf = 0, speed = 0;
    for (size_t i = 0; i < r.count; i++) {
        const struct report_item *it = &r.items[i];
        bool metric_bleu = !strcmp(it->metric, "bleu"), metric_chrf = !strcmp(it->metric, "chrf");
        if (metric_bleu || metric_chrf) {
            cr_assert_str_eq(it->unit, metric_bleu ? "BLEU" : "chrF");
            cr_assert(it->higher_better);
            if (!strncmp(it->name, "greedy ckpt-2.safetensors", 25))  /* the reference is its own output */
                cr_assert_float_eq(it->value, 100, 1e-9, "%s %s: %g", it->name, it->metric, it->value);
            bleu += metric_bleu;
            chrf += metric_chrf;
        }
        speed += !strcmp(it->metric, "sentences_per_s") && it->value > 0;
    }
    cr_assert_eq(bleu, 2, "greedy and beam each give BLEU");
    cr_assert_eq(chrf, 2, "and chrF");
    cr_assert_eq(speed, 2, "beside their sentences/s");
    report_free(&r);
    /* a compute-type sweep: float32 runs first whatever the list's order,
     * and int8's BLEU row is flagged exactly when it falls more than 0.3
     * below float32's (either may happen: the int8 outputs of a 2-step
     * model may or may not differ from float32's) */
    snprintf(cmd, sizeof cmd,
             CLF_BINARY_DIR "/clformer bench translate --model %s/m/ckpt-2.safetensors --src %s/s.en --ref %s/h.de "
             "--lines 8 --compute-type int8,float32 --format jsonl > %s",
             dir, dir, dir, path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    cr_assert(report_load(path, &r, err, sizeof err), "%s", err);
    cr_assert(r.count > 0 && strstr(r.items[0].params, "--compute-type float32"), "%s", r.items[0].params);
    int pairs = 0;
    for (size_t i = 0; i < r.count; i++) {
        const struct report_item *q = &r.items[i];
        if (strcmp(q->metric, "bleu") || !strstr(q->params, "int8"))
            continue;
        for (size_t j = 0; j < i; j++) {
            const struct report_item *f = &r.items[j];
            if (!strcmp(f->metric, "bleu") && !strcmp(f->name, q->name) && strstr(f->params, "float32")) {
                cr_assert_eq(q->flag[0] != 0, f->value - q->value > REPORT_BLEU_DROP, "%s: %g against %g, flag '%s'",
                             q->name, q->value, f->value, q->flag);
                pairs++;
            }
        }
    }
    cr_assert_eq(pairs, 2, "greedy and beam of int8 each beside float32's");
    report_free(&r);
    snprintf(cmd, sizeof cmd, "head -n 1 %s | grep -q '\"weights\":\"model\"'", path);
    cr_assert_eq(system(cmd), 0, "the header says the weights are a model's");
    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench translate --src %s/s.en 2>%s/err.txt", dir, dir);
    cr_assert_eq(WEXITSTATUS(system(cmd)), 2, "--src without --model is refused");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
