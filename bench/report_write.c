/* report_write.c: report.h's writer: a v1 report ("clformer-bench/1",
 * bench/README.md) as a table, json, jsonl, csv, md or sql. Every row names
 * its build, host and device (csv, md, sql: the columns that tell machines
 * apart; json and jsonl: the whole record once, in the header), and every
 * figure its unit, direction, n, median, min, max and spread. jsonl writes
 * and flushes each row as it comes, so that a killed run leaves data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "report.h"

static const struct {
    const char *name;
    enum report_format fmt;
} formats[] = {{"table", REPORT_TABLE}, {"json", REPORT_JSON}, {"jsonl", REPORT_JSONL},
               {"csv", REPORT_CSV},     {"md", REPORT_MD},     {"sql", REPORT_SQL}};

bool report_format_parse(const char *name, enum report_format *f)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(name, formats[i].name)) {
            *f = formats[i].fmt;
            return true;
        }
    return false;
}

/* The identity's members, into the object open in w. */
static void json_identity(struct cli_json *w, const struct report_identity *id)
{
    cli_json_str(w, "spread_kind", REPORT_SPREAD_KIND);
    cli_json_str(w, "date", id->date);
    cli_json_obj(w, "build");
    cli_json_str(w, "version", id->version);
    cli_json_str(w, "commit", id->commit);
    cli_json_str(w, "build_type", id->build_type);
    cli_json_str(w, "compiler", id->compiler);
    cli_json_obj(w, "options");
    cli_json_bool(w, "onednn", id->onednn);
    cli_json_bool(w, "mpi", id->mpi);
    cli_json_bool(w, "mhd", id->mhd);
    cli_json_bool(w, "sanitize", id->sanitize);
    cli_json_end(w);
    cli_json_end(w);
    cli_json_obj(w, "host");
    cli_json_str(w, "cpu", id->cpu);
    cli_json_str(w, "isa", id->isa);
    cli_json_num(w, "threads", "%d", id->threads);
    cli_json_str(w, "os", id->os);
    cli_json_real(w, "load_average_1m", id->load1);
    cli_json_str(w, "note", id->note);
    cli_json_str(w, "caps", id->caps);
    cli_json_end(w);
    cli_json_obj(w, "device");
    cli_json_str(w, "name", id->device);
    cli_json_str(w, "platform", id->platform);
    cli_json_str(w, "vendor", id->vendor);
    cli_json_str(w, "driver", id->driver);
    cli_json_str(w, "version", id->device_version);
    cli_json_str(w, "opencl_c", id->opencl_c);
    cli_json_str(w, "type", id->device_type);
    cli_json_num(w, "compute_units", "%u", id->compute_units);
    cli_json_num(w, "clock_mhz", "%u", id->clock_mhz);
    cli_json_num(w, "global_mem_bytes", "%llu", id->global_mem);
    cli_json_num(w, "local_mem_bytes", "%llu", id->local_mem);
    cli_json_num(w, "max_alloc_bytes", "%llu", id->max_alloc);
    cli_json_bool(w, "fp16", id->fp16);
    cli_json_bool(w, "subgroups", id->subgroups);
    cli_json_str(w, "gemm", id->gemm);
    cli_json_num(w, "blas_threads", "%d", id->blas_threads);
    cli_json_end(w);
    cli_json_obj(w, "libraries");
    cli_json_str(w, "clblast", id->clblast);
    cli_json_str(w, "openblas", id->openblas);
    cli_json_end(w);
    cli_json_obj(w, "settings");
    cli_json_num(w, "repetitions", "%d", id->repetitions);
    cli_json_num(w, "warmup", "%d", id->warmup);
    cli_json_bool(w, "quick", id->quick);
    cli_json_str(w, "command", id->command);
    cli_json_str(w, "weights", id->weights);
    cli_json_end(w);
}

static void json_row(struct cli_json *w, const struct report_item *it)
{
    cli_json_obj(w, NULL);
    cli_json_str(w, "bench", it->bench);
    cli_json_str(w, "case", it->name);
    cli_json_str(w, "params", it->params);
    cli_json_str(w, "metric", it->metric);
    cli_json_str(w, "unit", it->unit);
    cli_json_str(w, "better", it->higher_better ? "higher" : "lower");
    cli_json_num(w, "n", "%d", it->st.n);
    cli_json_real(w, "median", it->st.median);
    cli_json_real(w, "min", it->st.min);
    cli_json_real(w, "max", it->st.max);
    cli_json_real(w, "spread", it->st.spread);
    if (it->of_peak > 0)
        cli_json_real(w, "of_peak", it->of_peak);
    if (it->flag[0])
        cli_json_str(w, "flag", it->flag);
    if (it->basis[0])
        cli_json_str(w, "basis", it->basis);
    cli_json_end(w);
}

void report_write_begin(struct report_writer *w, FILE *f, enum report_format fmt, const struct report_identity *id)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    w->fmt = fmt;
    w->id = id;
    if (fmt == REPORT_JSONL) {
        struct cli_json j;
        cli_json_init(&j, f, true);
        cli_json_obj(&j, NULL);
        cli_json_str(&j, "format", REPORT_FORMAT);
        cli_json_str(&j, "record", "header");
        json_identity(&j, id);
        cli_json_end(&j);
        fputc('\n', f);
        fflush(f);
    }
}

/* The peaks bench peak measured, and each later row's share of its unit's. */
static void note_peak(struct report_writer *w, struct report_item *it)
{
    bool gflops = !strcmp(it->unit, "GFLOP/s"), gbps = !strcmp(it->unit, "GB/s");
    if (!strcmp(it->bench, "peak")) {
        /* the peak is float32's FMA, measured: not float16's nor float64's,
         * nor the CPU's theoretical figure beside it */
        if (gflops && !strcmp(it->name, "fma float32") && !strcmp(it->metric, "gflops"))
            w->peak_gflops = it->st.median;
        else if (gbps && !strncmp(it->name, "copy", 4))  /* the roof is the copy's, not the triad's */
            w->peak_gbps = it->st.median;
        return;
    }
    double peak = gflops ? w->peak_gflops : gbps ? w->peak_gbps : 0;
    if (peak > 0 && isfinite(it->st.median))
        it->of_peak = it->st.median / peak;
}

/* The value of `--compute-type` in a row's params into type, and the
 * params with float32 in its place into f32 ("" and false without one). */
static bool compute_of(const char *params, char *type, size_t tlen, char *f32, size_t flen)
{
    const char *at = strstr(params, "--compute-type ");
    type[0] = f32[0] = 0;
    if (!at)
        return false;
    const char *v = at + strlen("--compute-type "), *end = v + strcspn(v, " ");
    snprintf(type, tlen, "%.*s", (int)(end - v), v);
    snprintf(f32, flen, "%.*sfloat32%s", (int)(v - params), params, end);
    return true;
}

/* BLEU rows: float32's kept; another compute type's flagged when float32's
 * row of the same case and otherwise the same settings, written before
 * it, scored more than REPORT_BLEU_DROP higher. The runner runs float32
 * first in a --compute-type list, so that jsonl, written as it goes, gets
 * its flags too. */
static void note_bleu(struct report_writer *w, struct report_item *it)
{
    char type[32], f32[sizeof it->params + 8];
    if (strcmp(it->metric, "bleu") || !compute_of(it->params, type, sizeof type, f32, sizeof f32) ||
        !isfinite(it->st.median))
        return;
    if (!strcmp(type, "float32")) {
        if (w->bleu.count == w->bleu_cap) {
            size_t nc = w->bleu_cap ? 2 * w->bleu_cap : 8;
            struct report_item *r = realloc(w->bleu.items, nc * sizeof *r);
            if (!r) {
                w->failed = true;
                return;
            }
            w->bleu.items = r;
            w->bleu_cap = nc;
        }
        w->bleu.items[w->bleu.count++] = *it;
        return;
    }
    for (size_t i = 0; i < w->bleu.count; i++) {
        const struct report_item *ref = &w->bleu.items[i];
        if (strcmp(ref->bench, it->bench) || strcmp(ref->name, it->name) || strcmp(ref->params, f32))
            continue;
        double drop = ref->st.median - it->st.median;
        if (drop > REPORT_BLEU_DROP)
            snprintf(it->flag, sizeof it->flag, "BLEU %.2f below float32's", drop);
    }
}

void report_write_rows(struct report_writer *w, const struct report_item *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct report_item items[1] = {in[i]};
        note_peak(w, &items[0]);
        note_bleu(w, &items[0]);
        if (w->fmt == REPORT_JSONL) {
            struct cli_json j;
            cli_json_init(&j, w->f, true);
            json_row(&j, &items[0]);
            fputc('\n', w->f);
            continue;
        }
        if (w->rows.count == w->cap) {
            size_t nc = w->cap ? 2 * w->cap : 64;
            struct report_item *r = realloc(w->rows.items, nc * sizeof *r);
            if (!r) {
                w->failed = true;
                return;
            }
            w->rows.items = r;
            w->cap = nc;
        }
        w->rows.items[w->rows.count++] = items[0];
    }
    if (w->fmt == REPORT_JSONL)
        fflush(w->f);
}

/* csv: every text field quoted, quotes doubled (RFC 4180); a number with
 * no value (NaN) is an empty field. */
static void csv_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputs("\",", f);
}

/* sql: a text literal with its quotes doubled; NaN is NULL. */
static void sql_text(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputs("', ", f);
}

static void number(FILE *f, double x, const char *none, const char *sep)
{
    if (isfinite(x))
        fprintf(f, "%.6g%s", x, sep);
    else
        fprintf(f, "%s%s", none, sep);
}

/* md: a pipe inside a cell would end it */
static void md_cell(FILE *f, const char *s)
{
    fputs("| ", f);
    for (; *s; s++)
        if (*s == '|')
            fputs("\\|", f);
        else
            fputc(*s, f);
    fputc(' ', f);
}

/* The identity columns each csv and sql row repeats: enough to tell
 * machines and builds apart without the header. */
#define ID_COLUMNS "format, date, version, commit_id, build_type, device, driver, cpu, isa, threads"
#define ROW_COLUMNS "bench, case_name, params, metric, unit, better, n, median, min, max, spread"

static void id_values(FILE *f, const struct report_identity *id, void (*text)(FILE *, const char *), const char *sep)
{
    const char *v[] = {REPORT_FORMAT, id->date,   id->version, id->commit, id->build_type,
                       id->device,    id->driver, id->cpu,     id->isa};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        text(f, v[i]);
    fprintf(f, "%d%s", id->threads, sep);
}

static void row_values(FILE *f, const struct report_item *it, void (*text)(FILE *, const char *), const char *none,
                       const char *sep, const char *last)
{
    text(f, it->bench);
    text(f, it->name);
    text(f, it->params);
    text(f, it->metric);
    text(f, it->unit);
    text(f, it->higher_better ? "higher" : "lower");
    fprintf(f, "%d%s", it->st.n, sep);
    number(f, it->st.median, none, sep);
    number(f, it->st.min, none, sep);
    number(f, it->st.max, none, sep);
    number(f, it->st.spread, none, last);
}

static void write_table(FILE *f, const struct report_identity *id, const struct report *rows, bool md)
{
    fprintf(f, "%sclformer %s (%s, %s, %s) on %s (%s, driver %s), CPU %s [%s], %d threads; " REPORT_FORMAT
               ", %d repetitions after %d warm-up, spread = " REPORT_SPREAD_KIND "\n%s",
            md ? "" : "# ", id->version, id->commit, id->build_type, id->compiler, id->device, id->platform,
            id->driver, id->cpu, id->isa, id->threads, id->repetitions, id->warmup, md ? "\n" : "");
    if (id->note[0])
        fprintf(f, "%snote: %s\n%s", md ? "" : "# ", id->note, md ? "\n" : "");
    if (id->caps[0])
        fprintf(f, "%sISA caps: %s\n%s", md ? "" : "# ", id->caps, md ? "\n" : "");
    if (md) {
        fprintf(f, "| bench | case | params | metric | unit | better | n | median | min | max | spread |\n"
                   "|---|---|---|---|---|---|--:|--:|--:|--:|--:|\n");
        for (size_t i = 0; i < rows->count; i++) {
            const struct report_item *it = &rows->items[i];
            const char *cells[] = {it->bench, it->name, it->params, it->metric, it->unit,
                                   it->higher_better ? "higher" : "lower"};
            for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++)
                md_cell(f, cells[c]);
            fprintf(f, "| %d ", it->st.n);
            const double nums[] = {it->st.median, it->st.min, it->st.max, it->st.spread};
            for (size_t c = 0; c < 4; c++) {
                fputs("| ", f);
                number(f, nums[c], "-", " ");
            }
            fputs("|\n", f);
        }
        return;
    }
    fprintf(f, "%-10s %-40s %-24s %-26s %11s %-12s %7s %3s %11s %11s  %-6s %s\n", "bench", "case", "params", "metric",
            "median", "unit", "spread", "n", "min", "max", "better", "%peak");
    for (size_t i = 0; i < rows->count; i++) {
        const struct report_item *it = &rows->items[i];
        char spread[16] = "-";
        if (isfinite(it->st.spread))
            snprintf(spread, sizeof spread, "%.1f%%", 100 * it->st.spread);
        char of_peak[16] = "-";
        if (it->of_peak > 0)
            snprintf(of_peak, sizeof of_peak, "%.1f%%", 100 * it->of_peak);
        char v[3][16];  /* a figure not measurable here (no energy counter): null, as in json */
        const double x[3] = {it->st.median, it->st.min, it->st.max};
        for (int k = 0; k < 3; k++)
            snprintf(v[k], sizeof v[k], isnan(x[k]) ? "null" : "%.4g", x[k]);
        fprintf(f, "%-10.10s %-40.40s %-24.24s %-26.26s %11s %-12.12s %7s %3d %11s %11s  %-6s %s%s%s\n", it->bench,
                it->name, it->params[0] ? it->params : "-", it->metric, v[0], it->unit, spread, it->st.n, v[1], v[2],
                it->higher_better ? "higher" : "lower", of_peak, it->flag[0] ? "  ! " : "", it->flag);
    }
}

bool report_write_end(struct report_writer *w)
{
    FILE *f = w->f;
    const struct report *rows = &w->rows;
    switch (w->fmt) {
    case REPORT_JSONL:
        break;
    case REPORT_JSON: {
        struct cli_json j;
        cli_json_init(&j, f, false);
        cli_json_obj(&j, NULL);
        cli_json_str(&j, "format", REPORT_FORMAT);
        json_identity(&j, w->id);
        cli_json_break(&j, "\n");
        cli_json_arr(&j, "rows");
        for (size_t i = 0; i < rows->count; i++) {
            cli_json_break(&j, "\n  ");
            json_row(&j, &rows->items[i]);
        }
        cli_json_break(&j, "\n");
        cli_json_end(&j);
        cli_json_end(&j);
        fputc('\n', f);
        break;
    }
    case REPORT_CSV:
        for (const char *c = ID_COLUMNS ", " ROW_COLUMNS; *c; c++)  /* no spaces in csv's header */
            if (*c != ' ')
                fputc(*c, f);
        fputc('\n', f);
        for (size_t i = 0; i < rows->count; i++) {
            id_values(f, w->id, csv_text, ",");
            row_values(f, &rows->items[i], csv_text, "", ",", "\n");
        }
        break;
    case REPORT_SQL:
        fprintf(f, "CREATE TABLE IF NOT EXISTS clformer_bench (format TEXT, date TEXT, version TEXT, commit_id "
                   "TEXT, build_type TEXT, device TEXT, driver TEXT, cpu TEXT, isa TEXT, threads INTEGER, bench "
                   "TEXT, case_name TEXT, params TEXT, metric TEXT, unit TEXT, better TEXT, n INTEGER, median REAL, "
                   "min REAL, max REAL, spread REAL);\n");
        for (size_t i = 0; i < rows->count; i++) {
            fprintf(f, "INSERT INTO clformer_bench (%s, %s) VALUES (", ID_COLUMNS, ROW_COLUMNS);
            id_values(f, w->id, sql_text, ", ");
            row_values(f, &rows->items[i], sql_text, "NULL", ", ", ");\n");
        }
        break;
    case REPORT_MD:
    case REPORT_TABLE:
        write_table(f, w->id, rows, w->fmt == REPORT_MD);
        break;
    }
    fflush(f);
    bool ok = !w->failed;
    report_free(&w->rows);
    report_free(&w->bleu);
    w->cap = w->bleu_cap = 0;
    return ok;
}
