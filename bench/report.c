/* report.c: report.h's reader: benchmark reports read back as flat lists
 * of figures, and lined up for `clformer bench compare`.
 *
 * A v1 report ("format": "clformer-bench/1", bench/README.md) is one JSON
 * object whose "rows" each carry their unit, direction and spread, or the
 * same as jsonl: a header line, then one row a line. Those are read as
 * written; any other "format" is refused.
 *
 * A pre-v1 report, and a benchmark's own record (`--json`), is either one
 * benchmark's object {"bench": NAME, "results": [{…}, …]} or `bench all`'s
 * {"suite": …, "meta": {…}, "benches": [those objects], "peers": [{…}]}.
 * Each result (or a benchmark object without "results", as one result)
 * yields one figure per metric field it holds (the list below, which also
 * gives its unit and direction), times left out where it also gives a
 * rate; its name is made of its string fields and its whole-number fields.
 * The v1 writer flattens each benchmark's record the same way. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clformer/advanced/json.h>
#include "report.h"

/* Fields that are figures, with the unit and direction the writer gives
 * them: rates first (higher is better), then times. A key ending in _per_s
 * not listed is a rate of its stem ("steps_per_s": steps/s). */
static const struct {
    const char *name, *unit;
    bool higher_better;
} metrics[] = {
    {"gflops", "GFLOP/s", true},          {"openblas_gflops", "GFLOP/s", true},
    {"onednn_packed_gflops", "GFLOP/s", true}, {"gbps", "GB/s", true},
    {"gb_per_s", "GB/s", true},           {"copy_gbps", "GB/s", true},
    {"tokens_per_s", "tokens/s", true},   {"tgt_tokens_per_s", "tokens/s", true},
    {"src_tokens_per_s", "tokens/s", true}, {"sentences_per_s", "sentences/s", true},
    {"steps_per_s", "steps/s", true},     {"seconds", "s", false},
    {"seconds_per_step", "s", false},     {"s_per_step", "s", false},
    {"ms", "ms", false},                  {"ms_per_step", "ms", false},
    {"s", "s", false},                   {"us", "us", false},
    {"device_peak_mib", "MiB", false},   {"max_rss_mib", "MiB", false},
    {"bleu", "BLEU", true},               {"chrf", "chrF", true},
    /* bench serve: latency percentiles, the Server verdict (1 pass, 0
     * fail), failed requests, the highest rate under the p99 bound */
    {"p50_ms", "ms", false},             {"p90_ms", "ms", false},
    {"p99_ms", "ms", false},             {"pass", "pass", true},
    {"errors", "requests", false},       {"max_rate_per_s", "sentences/s", true},
    {"energy_j", "J", false},  /* RAPL package energy over a benchmark (bench/energy.h) */
    /* bench peak: the CPU's theoretical float32 peak (its basis in the
     * record's "theoretical_gflops_basis") and the FMA figure's share of it */
    {"theoretical_gflops", "GFLOP/s", true}, {"of_theoretical", "fraction", true},
    /* bench attention's full attention at each n: the tiled forward, the
     * forward and backward (2.5x the forward's FLOP), the naive forward,
     * the time of forward+backward over the forward's, and the largest
     * buffer each path allocates */
    {"tiled_fwd_gflops", "GFLOP/s", true}, {"tiled_fwd_bwd_gflops", "GFLOP/s", true},
    {"naive_fwd_gflops", "GFLOP/s", true}, {"fwd_bwd_over_fwd", "x", false},
    {"largest_buffer_bytes", "bytes", false}, {"naive_largest_buffer_bytes", "bytes", false},
};

static int metric_index(const char *key)
{
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
        if (!strcmp(key, metrics[i].name))
            return (int)i;
    return -1;
}

static bool is_metric_key(const char *key)
{
    size_t n = strlen(key);
    return metric_index(key) >= 0 || (n > 6 && !strcmp(key + n - 6, "_per_s"));
}

bool report_metric_unit(const char *key, char *unit, size_t len, bool *higher_better)
{
    int mi = metric_index(key);
    if (mi >= 0) {
        snprintf(unit, len, "%s", metrics[mi].unit);
        *higher_better = metrics[mi].higher_better;
        return true;
    }
    if (!is_metric_key(key))
        return false;
    snprintf(unit, len, "%.*s/s", (int)(strlen(key) - 6), key);
    *higher_better = true;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void report_stats_of(const double *x, int n, struct report_stats *s)
{
    double small[64], *v = n <= 64 ? small : malloc((size_t)n * sizeof *v);
    memset(s, 0, sizeof *s);
    s->n = n;
    s->median = s->min = s->max = s->spread = NAN;
    if (n < 1 || !v)
        return;
    memcpy(v, x, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    /* the middle one, or the mean of the two middle ones */
    s->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s->min = v[0];
    s->max = v[n - 1];
    if (n >= 2 && s->median != 0)
        s->spread = (s->max - s->min) / fabs(s->median);
    if (v != small)
        free(v);
}

static void append(char *out, size_t len, const char *s)
{
    size_t used = strlen(out);
    if (used + 1 < len)
        snprintf(out + used, len - used, "%s%s", used ? " " : "", s);
}

/* Numbers that are figures derived from others, never part of a case's
 * name even when whole (a roof fraction of exactly 1). */
static bool is_derived_key(const char *key)
{
    return strstr(key, "fraction") || strstr(key, "ratio") || !strcmp(key, "scaling");
}

/* A string that says what a figure rests on ("theoretical_gflops_basis"):
 * the row's "basis", never part of the case's name. */
static bool is_basis_key(const char *key)
{
    size_t n = strlen(key);
    return n > 6 && !strcmp(key + n - 6, "_basis");
}

/* The case's name: string fields, else whole-number fields as k=v. */
static void case_name(const struct clf_json *r, char *out, size_t len)
{
    out[0] = 0;
    for (size_t i = 0; i < r->count; i++)
        if (r->items[i].type == CLF_JSON_STRING && strcmp(r->keys[i], "peer") && strcmp(r->keys[i], "version") &&
            strcmp(r->keys[i], "bench") && !is_basis_key(r->keys[i]))
            append(out, len, r->items[i].string);
    for (size_t i = 0; i < r->count; i++) {
        const struct clf_json *v = &r->items[i];
        if (v->type == CLF_JSON_NUMBER && !is_metric_key(r->keys[i]) && !is_derived_key(r->keys[i]) &&
            v->number == floor(v->number) &&
            fabs(v->number) < 1e12) {
            char kv[96];
            snprintf(kv, sizeof kv, "%s=%.0f", r->keys[i], v->number);
            append(out, len, kv);
        } else if (v->type == CLF_JSON_BOOL && v->boolean) {
            append(out, len, r->keys[i]);
        }
    }
    if (!out[0])
        snprintf(out, len, "-");
}

/* Every reader below fails through this: the reason into err, false back. */
struct why {
    char *err;
    size_t len;
};

static bool failed(struct why *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, w->len, fmt, ap);
    va_end(ap);
    return false;
}

/* Room for one more item: capacity doubles at each power of two from 32. */
static bool grow(struct report *r, struct why *w)
{
    size_t n = r->count;
    if (n != 0 && (n < 32 || (n & (n - 1))))
        return true;
    size_t nc = n < 32 ? 32 : 2 * n;
    struct report_item *items = realloc(r->items, nc * sizeof *items);
    if (!items)
        return failed(w, "out of memory reading a report");
    r->items = items;
    return true;
}

/* A new item at the end of r, zeroed, with its names; NULL (and w says
 * why) when r cannot grow. */
static struct report_item *item_new(struct report *r, struct why *w, const char *bench, const char *name,
                                    const char *params, const char *metric)
{
    if (!grow(r, w))
        return NULL;
    struct report_item *it = &r->items[r->count++];
    memset(it, 0, sizeof *it);
    snprintf(it->bench, sizeof it->bench, "%s", bench);
    snprintf(it->name, sizeof it->name, "%s", name);
    snprintf(it->params, sizeof it->params, "%s", params ? params : "");
    snprintf(it->metric, sizeof it->metric, "%s", metric);
    return it;
}

/* A pre-v1 figure (or one flattened from a record): one value, n 1, the
 * unit and direction from its key. */
static bool add_item(struct report *r, struct why *w, const char *bench, const char *name, const char *params,
                     const char *metric, double value)
{
    struct report_item *it = item_new(r, w, bench, name, params, metric);
    if (!it)
        return false;
    report_metric_unit(metric, it->unit, sizeof it->unit, &it->higher_better);
    it->value = value;
    it->st = (struct report_stats){1, value, value, value, NAN};
    return true;
}

static bool add_results(struct report *r, struct why *w, const char *bench, const char *params,
                        const struct clf_json *res)
{
    char name[160];
    case_name(res, name, sizeof name);
    /* a result that gives a rate (a unit per second) gives its time only as
     * another view of it, left out; its other figures (a size, a ratio of
     * times) stay. A verdict or a score beside times is no rate */
    bool has_rate = false;
    for (size_t i = 0; i < res->count; i++) {
        char unit[24];
        bool higher;
        has_rate |= res->items[i].type == CLF_JSON_NUMBER &&
                    report_metric_unit(res->keys[i], unit, sizeof unit, &higher) && higher &&
                    strlen(unit) > 2 && !strcmp(unit + strlen(unit) - 2, "/s");
    }
    for (size_t i = 0; i < res->count; i++) {
        const char *key = res->keys[i];
        const struct clf_json *v = &res->items[i];
        /* a figure that is null was not measurable here (energy without a
         * counter): a row of no value, which says so, rather than none */
        if ((v->type != CLF_JSON_NUMBER && v->type != CLF_JSON_NULL) || !is_metric_key(key))
            continue;
        int mi = metric_index(key);
        if (has_rate && mi >= 0 && !metrics[mi].higher_better &&
            (!strcmp(metrics[mi].unit, "s") || !strcmp(metrics[mi].unit, "ms") || !strcmp(metrics[mi].unit, "us")))
            continue;
        if (!add_item(r, w, bench, name, params, key, v->type == CLF_JSON_NULL ? NAN : v->number))
            return false;
        char bkey[64];
        snprintf(bkey, sizeof bkey, "%.50s_basis", key);
        const char *basis = clf_json_str(res, bkey);
        if (basis)
            snprintf(r->items[r->count - 1].basis, sizeof r->items[0].basis, "%s", basis);
    }
    /* groups of times that split a figure (translate's per-step split into
     * device and host, train's device seconds): each member a figure
     * "group.member" in the group's unit, lower is better */
    static const struct {
        const char *group, *unit;
    } groups[] = {{"step_ms", "ms"}, {"device_seconds", "s"}};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        const struct clf_json *o = clf_json_get(res, groups[g].group);
        for (size_t i = 0; o && o->type == CLF_JSON_OBJECT && i < o->count; i++) {
            if (o->items[i].type != CLF_JSON_NUMBER)
                continue;
            char metric[40];
            snprintf(metric, sizeof metric, "%.20s.%.18s", groups[g].group, o->keys[i]);
            if (!add_item(r, w, bench, name, params, metric, o->items[i].number))
                return false;
            struct report_item *it = &r->items[r->count - 1];
            snprintf(it->unit, sizeof it->unit, "%s", groups[g].unit);
            it->higher_better = false;
        }
    }
    return true;
}

static bool add_bench(struct report *r, struct why *w, const struct clf_json *b, const char *params,
                      const char *origin)
{
    const char *bench = clf_json_str(b, "bench");
    if (!bench)
        return failed(w, "%s: a benchmark object without \"bench\"", origin);
    /* the memory and energy a benchmark took (bench_memory_json): the
     * cases "memory" and "energy" */
    const struct clf_json *mem = clf_json_get(b, "memory"), *energy = clf_json_get(b, "energy");
    if (mem && mem->type == CLF_JSON_OBJECT && !add_results(r, w, bench, params, mem))
        return false;
    if (energy && energy->type == CLF_JSON_OBJECT && !add_results(r, w, bench, params, energy))
        return false;
    const struct clf_json *res = clf_json_get(b, "results");
    if (!res)  /* figures at the top level (one case), or none: an "error" says why */
        return clf_json_get(b, "error") ? true : add_results(r, w, bench, params, b);
    if (res->type != CLF_JSON_ARRAY)
        return failed(w, "%s: \"%s\".results is not an array", origin, bench);
    for (size_t i = 0; i < res->count; i++)
        if (res->items[i].type == CLF_JSON_OBJECT && !add_results(r, w, bench, params, &res->items[i]))
            return false;
    return true;
}

/* A pre-v1 document: one benchmark's record or bench all's report. */
static bool add_legacy(struct report *r, struct why *w, const struct clf_json *root, const char *params,
                       const char *origin)
{
    bool ok = true;
    const struct clf_json *benches = clf_json_get(root, "benches");
    if (benches) {
        if (benches->type != CLF_JSON_ARRAY)
            return failed(w, "%s: \"benches\" is not an array", origin);
        for (size_t i = 0; i < benches->count && ok; i++)
            ok = add_bench(r, w, &benches->items[i], params, origin);
    } else if (clf_json_get(root, "bench")) {
        ok = add_bench(r, w, root, params, origin);
    } else {
        return failed(w, "%s: neither \"format\", \"benches\" nor \"bench\": not a clformer report", origin);
    }
    const struct clf_json *peers = clf_json_get(root, "peers");
    if (ok && peers && peers->type == CLF_JSON_ARRAY) {
        for (size_t i = 0; i < peers->count && ok; i++) {
            const struct clf_json *p = &peers->items[i];
            if (p->type != CLF_JSON_OBJECT)
                continue;
            const char *who = clf_json_str(p, "peer");
            char bench[32];
            snprintf(bench, sizeof bench, "peer:%s", who ? who : "?");
            ok = add_results(r, w, bench, params, p);
        }
    }
    return ok;
}

bool report_add_record(struct report *r, const char *text, size_t len, const char *params, char *err, size_t errlen)
{
    struct why w = {err, errlen};
    struct clf_json root;
    char jerr[256];
    if (!clf_json_parse(text, len, &root, jerr, sizeof jerr))
        return failed(&w, "a benchmark's record is not valid JSON: %s", jerr);
    bool ok = root.type == CLF_JSON_OBJECT ? add_legacy(r, &w, &root, params, "a benchmark's record")
                                           : failed(&w, "a benchmark's record is not a JSON object");
    clf_json_free(&root);
    return ok;
}

/* A number member, or NaN where it is null or absent. */
static double num_or_nan(const struct clf_json *j, const char *key)
{
    double v;
    return clf_json_num(j, key, &v) ? v : NAN;
}

/* One v1 row: every field read from the report, none guessed. */
static bool add_v1_row(struct report *r, struct why *w, const struct clf_json *row, const char *where)
{
    const char *bench = clf_json_str(row, "bench"), *name = clf_json_str(row, "case");
    const char *metric = clf_json_str(row, "metric"), *unit = clf_json_str(row, "unit");
    const char *better = clf_json_str(row, "better"), *params = clf_json_str(row, "params");
    double n, median;
    if (row->type != CLF_JSON_OBJECT || !bench || !name || !metric || !unit || !better)
        return failed(w, "%s: a row wants the strings \"bench\", \"case\", \"metric\", \"unit\" and \"better\"", where);
    if (strcmp(better, "higher") && strcmp(better, "lower"))
        return failed(w, "%s: \"better\" is \"%s\"; a report says \"higher\" or \"lower\"", where, better);
    /* a median of null: a figure this machine could not give (energy
     * without a counter), kept as a row of no value */
    const struct clf_json *med = clf_json_get(row, "median");
    bool none = med && med->type == CLF_JSON_NULL;
    if (!clf_json_num(row, "n", &n) || n < 1 || n != floor(n) || n > 1e9 ||
        !(none || clf_json_num(row, "median", &median)))
        return failed(w, "%s: a row wants \"n\" (a whole number >= 1) and a \"median\" (a number, or null)", where);
    if (none)
        median = NAN;
    struct report_item *it = item_new(r, w, bench, name, params, metric);
    if (!it)
        return false;
    snprintf(it->unit, sizeof it->unit, "%s", unit);
    it->higher_better = !strcmp(better, "higher");
    it->value = median;
    it->st = (struct report_stats){(int)n, median, num_or_nan(row, "min"), num_or_nan(row, "max"),
                                   num_or_nan(row, "spread")};
    double of_peak = num_or_nan(row, "of_peak");
    it->of_peak = isfinite(of_peak) && of_peak > 0 ? of_peak : 0;
    const char *flag = clf_json_str(row, "flag");
    snprintf(it->flag, sizeof it->flag, "%s", flag ? flag : "");
    const char *basis = clf_json_str(row, "basis");
    snprintf(it->basis, sizeof it->basis, "%s", basis ? basis : "");
    return true;
}

/* The identity's words for the report's label: device, CPU, commit. */
static void v1_label(struct report *r, const struct clf_json *hdr)
{
    const char *dev = clf_json_str(clf_json_get(hdr, "device"), "name");
    const char *cpu = clf_json_str(clf_json_get(hdr, "host"), "cpu");
    const char *commit = clf_json_str(clf_json_get(hdr, "build"), "commit");
    const char *isa = clf_json_str(clf_json_get(hdr, "host"), "isa");
    double load;
    char lbuf[32] = "";
    if (clf_json_num(clf_json_get(hdr, "host"), "load_average_1m", &load))
        snprintf(lbuf, sizeof lbuf, ", load %.1f", load);  /* how shared the machine was */
    snprintf(r->device, sizeof r->device, "%s", dev ? dev : "unknown device");
    /* a run under ISA caps names them: it is this CPU emulating an older one */
    const char *caps = clf_json_str(clf_json_get(hdr, "host"), "caps");
    char cbuf[96] = "";
    if (caps && *caps)
        snprintf(cbuf, sizeof cbuf, ", caps %.80s", caps);
    snprintf(r->label, sizeof r->label, "%.70s, %.50s [%.50s]%s, %.20s%s", r->device, cpu ? cpu : "unknown CPU",
             isa ? isa : "", cbuf, commit ? commit : "unknown commit", lbuf);
}

/* The format a document names: true for ours; false (refused, named) for
 * any other; *has false when it names none (a pre-v1 report). */
static bool known_format(const struct clf_json *root, bool *has, struct report *r, struct why *w, const char *origin)
{
    const struct clf_json *f = clf_json_get(root, "format");
    *has = f != NULL;
    if (!f)
        return true;
    if (f->type != CLF_JSON_STRING || strcmp(f->string, REPORT_FORMAT))
        return failed(w,
                      "%s: report format %s%s%s is not one this clformer reads (it reads \"" REPORT_FORMAT
                      "\" and older reports without \"format\")",
                      origin, f->type == CLF_JSON_STRING ? "\"" : "", f->type == CLF_JSON_STRING ? f->string : "(not a string)",
                      f->type == CLF_JSON_STRING ? "\"" : "");
    snprintf(r->format, sizeof r->format, "%s", REPORT_FORMAT);
    return true;
}

/* jsonl: a header line naming the format, then one row a line; a line cut
 * short by a killed run is the last, and is left out with a warning. */
static bool parse_jsonl(const char *text, size_t len, const char *origin, struct report *r, struct why *w)
{
    size_t pos = 0;
    int lineno = 0;
    bool header = false;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        lineno++;
        size_t l = end - pos;
        while (l && (text[pos + l - 1] == '\r' || text[pos + l - 1] == ' '))
            l--;
        if (l) {
            struct clf_json j;
            char jerr[256], where[300];
            snprintf(where, sizeof where, "%s:%d", origin, lineno);
            if (!clf_json_parse(text + pos, l, &j, jerr, sizeof jerr)) {
                if (end >= len && header) {  /* the last line, cut short: keep what came before */
                    fprintf(stderr, "clformer: %s: an unfinished last line, left out\n", where);
                    break;
                }
                return failed(w, "%s: not valid JSON: %s", where, jerr);
            }
            bool has, ok = true;
            if (!header) {
                ok = known_format(&j, &has, r, w, where);
                if (ok && !has)
                    ok = failed(w, "%s: a jsonl report opens with a header naming its \"format\"", where);
                if (ok)
                    v1_label(r, &j);
                header = true;
            } else {
                ok = add_v1_row(r, w, &j, where);
            }
            clf_json_free(&j);
            if (!ok)
                return false;
        }
        pos = end + 1;
    }
    return header ? true : failed(w, "%s: empty", origin);
}

bool report_parse(const char *text, size_t len, const char *origin, struct report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    struct why w = {err, errlen};
    struct clf_json root;
    char jerr[256];
    if (!clf_json_parse(text, len, &root, jerr, sizeof jerr)) {
        /* not one document: a jsonl report if its first line is a header */
        const char *nl = memchr(text, '\n', len); /* text holds len bytes, not a C string */
        size_t first = nl ? (size_t)(nl - text) : len;
        struct clf_json h;
        bool jsonl = first < len && clf_json_parse(text, first, &h, err, errlen);
        if (jsonl) {
            jsonl = clf_json_get(&h, "format") != NULL;
            clf_json_free(&h);
        }
        if (!jsonl)
            return failed(&w, "%s: not valid JSON: %s", origin, jerr);
        bool ok = parse_jsonl(text, len, origin, r, &w);
        if (!ok)
            report_free(r);
        return ok;
    }
    bool ok = true, has = false;
    if (root.type != CLF_JSON_OBJECT) {
        ok = failed(&w, "%s: a report is a JSON object", origin);
        goto done;
    }
    if (!(ok = known_format(&root, &has, r, &w, origin)))
        goto done;
    if (has) {
        v1_label(r, &root);
        const struct clf_json *rows = clf_json_get(&root, "rows");
        const char *rec = clf_json_str(&root, "record");
        if (!rows && rec && !strcmp(rec, "header"))  /* a jsonl report with no row yet */
            goto done;
        if (!rows || rows->type != CLF_JSON_ARRAY) {
            ok = failed(&w, "%s: a " REPORT_FORMAT " report without a \"rows\" array", origin);
            goto done;
        }
        for (size_t i = 0; i < rows->count && ok; i++) {
            char where[300];
            snprintf(where, sizeof where, "%s: rows[%zu]", origin, i);
            ok = add_v1_row(r, &w, &rows->items[i], where);
        }
        goto done;
    }
    r->units_guessed = true;
    const struct clf_json *meta = clf_json_get(&root, "meta");
    const struct clf_json *dev = clf_json_get(meta ? meta : &root, "device");
    const char *dname = clf_json_str(dev, "name");
    snprintf(r->device, sizeof r->device, "%s", dname ? dname : "unknown device");
    const char *tuning = clf_json_str(clf_json_get(meta, "tuning"), "source");
    snprintf(r->tuning, sizeof r->tuning, "%s", tuning ? tuning : "");
    snprintf(r->label, sizeof r->label, "%s%s%s%s", r->device, r->tuning[0] ? " (tuning: " : "", r->tuning,
             r->tuning[0] ? ")" : "");
    ok = add_legacy(r, &w, &root, "", origin);
done:
    clf_json_free(&root);
    if (!ok)
        report_free(r);
    return ok;
}

bool report_load(const char *path, struct report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    struct why w = {err, errlen};
    FILE *f = fopen(path, "rb");
    if (!f)
        return failed(&w, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0, got;
    char *text = malloc(cap);
    while (text && (got = fread(text + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *t = cap < ((size_t)256 << 20) ? realloc(text, cap *= 2) : NULL;
            if (!t)
                free(text);
            text = t;
        }
    }
    bool read_ok = text && !ferror(f);
    fclose(f);
    if (!read_ok) {
        free(text);
        return failed(&w, "%s: cannot read (or larger than 256 MiB)", path);
    }
    bool ok = report_parse(text, len, path, r, err, errlen);
    free(text);
    return ok;
}

void report_free(struct report *r)
{
    free(r->items);
    r->items = NULL;
    r->count = 0;
}

static bool same_row(const struct report_item *a, const struct report_item *b)
{
    return !strcmp(a->bench, b->bench) && !strcmp(a->name, b->name) && !strcmp(a->params, b->params) &&
           !strcmp(a->metric, b->metric);
}

bool report_compare(const struct report *reports, size_t n, size_t base, struct comparison *out, char *err,
                    size_t errlen)
{
    struct why w = {err, errlen};
    memset(out, 0, sizeof *out);
    if (n == 0)
        return failed(&w, "nothing to compare: no reports");
    if (base >= n)
        return failed(&w, "the baseline is report %zu of %zu", base + 1, n);
    size_t total = 0;
    for (size_t j = 0; j < n; j++)
        total += reports[j].count;
    total = total ? total : 1;
    out->nreports = n;
    out->base = base;
    out->rows = calloc(total, sizeof *out->rows);
    out->store = calloc(total * n * 2, sizeof *out->store);
    out->flags = calloc(total * n * 2, sizeof *out->flags);
    out->ofs = calloc(total * n, sizeof *out->ofs);
    if (!out->rows || !out->store || !out->flags || !out->ofs) {
        comparison_free(out);
        return failed(&w, "out of memory comparing %zu reports", n);
    }
    /* rows in order of first appearance; a later duplicate of the same
     * figure within a report is ignored */
    for (size_t j = 0; j < n; j++) {
        for (size_t i = 0; i < reports[j].count; i++) {
            const struct report_item *it = &reports[j].items[i];
            size_t r = 0;
            while (r < out->nrows && !same_row(out->rows[r].item, it))
                r++;
            if (r == out->nrows) {
                struct compare_row *row = &out->rows[out->nrows++];
                row->item = it;
                row->value = out->store + r * 2 * n;
                row->ratio = row->value + n;
                row->noise = out->flags + r * 2 * n;
                row->unit_mismatch = row->noise + n;
                row->of = out->ofs + r * n;
                for (size_t k = 0; k < n; k++)
                    row->value[k] = row->ratio[k] = NAN;
            }
            if (!out->rows[r].of[j]) {
                out->rows[r].of[j] = it;
                out->rows[r].value[j] = it->value;
            }
        }
    }
    for (size_t r = 0; r < out->nrows; r++) {
        struct compare_row *row = &out->rows[r];
        const struct report_item *b = row->of[base];
        for (size_t j = 0; j < n; j++) {
            const struct report_item *x = row->of[j];
            if (!x || !b || isnan(x->value) || isnan(b->value) || x->value <= 0 || b->value <= 0)
                continue;
            if (strcmp(x->unit, b->unit)) {
                row->unit_mismatch[j] = true;
                continue;
            }
            /* the baseline's direction: a report that says otherwise for
             * the same unit and metric is still lined up with it */
            row->ratio[j] = b->higher_better ? x->value / b->value : b->value / x->value;
            row->noise[j] = j != base && x->st.n >= 2 && b->st.n >= 2 && x->st.min <= b->st.max &&
                            b->st.min <= x->st.max;
        }
    }
    return true;
}

void comparison_free(struct comparison *c)
{
    free(c->rows);
    free(c->store);
    free(c->flags);
    free(c->ofs);
    memset(c, 0, sizeof *c);
}
