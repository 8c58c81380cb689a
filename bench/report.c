/* report.c: report.h: benchmark reports read back as flat lists of
 * figures, and lined up for `clformer bench compare`. A report is either one benchmark's object
 * {"bench": NAME, "results": [{…}, …]} or `bench all`'s
 * {"suite": …, "meta": {…}, "benches": [those objects], "peers": [{…}]}.
 * Each result (or a benchmark object without "results", as one result)
 * yields one figure per metric field it holds (the list below), times left
 * out where it also gives a rate; its name is made of its string fields and
 * its whole-number fields. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clformer_json.h"
#include "report.h"

/* Fields that are figures to compare: rates first (higher is better), then times. */
static const struct {
    const char *name;
    bool higher_better;
} metrics[] = {
    {"gflops", true},          {"openblas_gflops", true}, {"gbps", true},           {"gb_per_s", true},
    {"tokens_per_s", true},    {"tgt_tokens_per_s", true}, {"src_tokens_per_s", true}, {"sentences_per_s", true},
    {"steps_per_s", true},     {"seconds", false},        {"seconds_per_step", false},        {"s_per_step", false},    {"ms", false},
    {"ms_per_step", false},    {"s", false},
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

static void append(char *out, size_t len, const char *s)
{
    size_t used = strlen(out);
    if (used + 1 < len)
        snprintf(out + used, len - used, "%s%s", used ? " " : "", s);
}

/* The case's name: string fields, else whole-number fields as k=v. */
static void case_name(const struct clf_json *r, char *out, size_t len)
{
    out[0] = 0;
    for (size_t i = 0; i < r->count; i++)
        if (r->items[i].type == CLF_JSON_STRING && strcmp(r->keys[i], "peer") && strcmp(r->keys[i], "version") &&
            strcmp(r->keys[i], "bench"))
            append(out, len, r->items[i].string);
    for (size_t i = 0; i < r->count; i++) {
        const struct clf_json *v = &r->items[i];
        if (v->type == CLF_JSON_NUMBER && !is_metric_key(r->keys[i]) && v->number == floor(v->number) &&
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

static bool add_item(struct report *r, size_t *cap, struct why *w, const char *bench, const char *name,
                     const char *metric, bool higher, double value)
{
    if (r->count == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        struct report_item *items = realloc(r->items, nc * sizeof *items);
        if (!items)
            return failed(w, "out of memory reading a report");
        r->items = items;
        *cap = nc;
    }
    struct report_item *it = &r->items[r->count++];
    memset(it, 0, sizeof *it);
    snprintf(it->bench, sizeof it->bench, "%s", bench);
    snprintf(it->name, sizeof it->name, "%s", name);
    snprintf(it->metric, sizeof it->metric, "%s", metric);
    it->higher_better = higher;
    it->value = value;
    return true;
}

static bool add_results(struct report *r, size_t *cap, struct why *w, const char *bench, const struct clf_json *res)
{
    char name[160];
    case_name(res, name, sizeof name);
    /* a result that gives a rate gives its time only as another view of it */
    bool has_rate = false;
    for (size_t i = 0; i < res->count; i++) {
        int mi = metric_index(res->keys[i]);
        has_rate |= res->items[i].type == CLF_JSON_NUMBER && is_metric_key(res->keys[i]) &&
                    (mi < 0 || metrics[mi].higher_better);
    }
    for (size_t i = 0; i < res->count; i++) {
        const char *key = res->keys[i];
        const struct clf_json *v = &res->items[i];
        if (v->type != CLF_JSON_NUMBER || !is_metric_key(key))
            continue;
        int mi = metric_index(key);
        if (has_rate && mi >= 0 && !metrics[mi].higher_better)
            continue;
        if (!add_item(r, cap, w, bench, name, key, mi < 0 ? true : metrics[mi].higher_better, v->number))
            return false;
    }
    return true;
}

static bool add_bench(struct report *r, size_t *cap, struct why *w, const struct clf_json *b, const char *origin)
{
    const char *bench = clf_json_str(b, "bench");
    if (!bench)
        return failed(w, "%s: a benchmark object without \"bench\"", origin);
    const struct clf_json *res = clf_json_get(b, "results");
    if (!res)  /* figures at the top level (one case), or none: an "error" says why */
        return clf_json_get(b, "error") ? true : add_results(r, cap, w, bench, b);
    if (res->type != CLF_JSON_ARRAY)
        return failed(w, "%s: \"%s\".results is not an array", origin, bench);
    for (size_t i = 0; i < res->count; i++)
        if (res->items[i].type == CLF_JSON_OBJECT && !add_results(r, cap, w, bench, &res->items[i]))
            return false;
    return true;
}

bool report_parse(const char *text, size_t len, const char *origin, struct report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    struct why w = {err, errlen};
    struct clf_json root;
    char jerr[256];
    if (!clf_json_parse(text, len, &root, jerr, sizeof jerr))
        return failed(&w, "%s: not valid JSON: %s", origin, jerr);
    bool ok = true;
    size_t cap = 0;
    const struct clf_json *meta = clf_json_get(&root, "meta");
    const struct clf_json *dev = clf_json_get(meta ? meta : &root, "device");
    const char *dname = clf_json_str(dev, "name");
    snprintf(r->device, sizeof r->device, "%s", dname ? dname : "unknown device");
    const char *tuning = clf_json_str(clf_json_get(meta, "tuning"), "source");
    snprintf(r->tuning, sizeof r->tuning, "%s", tuning ? tuning : "");
    snprintf(r->label, sizeof r->label, "%s%s%s%s", r->device, r->tuning[0] ? " (tuning: " : "", r->tuning,
             r->tuning[0] ? ")" : "");
    if (root.type != CLF_JSON_OBJECT) {
        ok = failed(&w, "%s: a report is a JSON object", origin);
        goto done;
    }
    const struct clf_json *benches = clf_json_get(&root, "benches");
    if (benches) {
        if (benches->type != CLF_JSON_ARRAY) {
            ok = failed(&w, "%s: \"benches\" is not an array", origin);
            goto done;
        }
        for (size_t i = 0; i < benches->count && ok; i++)
            ok = add_bench(r, &cap, &w, &benches->items[i], origin);
    } else if (clf_json_get(&root, "bench")) {
        ok = add_bench(r, &cap, &w, &root, origin);
    } else {
        ok = failed(&w, "%s: neither \"benches\" nor \"bench\": not a clformer report", origin);
    }
    const struct clf_json *peers = clf_json_get(&root, "peers");
    if (ok && peers && peers->type == CLF_JSON_ARRAY) {
        for (size_t i = 0; i < peers->count && ok; i++) {
            const struct clf_json *p = &peers->items[i];
            if (p->type != CLF_JSON_OBJECT)
                continue;
            const char *who = clf_json_str(p, "peer");
            char bench[32];
            snprintf(bench, sizeof bench, "peer:%s", who ? who : "?");
            ok = add_results(r, &cap, &w, bench, p);
        }
    }
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
    return !strcmp(a->bench, b->bench) && !strcmp(a->name, b->name) && !strcmp(a->metric, b->metric);
}

bool report_compare(const struct report *reports, size_t n, struct comparison *out, char *err, size_t errlen)
{
    struct why w = {err, errlen};
    memset(out, 0, sizeof *out);
    if (n == 0)
        return failed(&w, "nothing to compare: no reports");
    size_t total = 0;
    for (size_t j = 0; j < n; j++)
        total += reports[j].count;
    out->nreports = n;
    out->rows = calloc(total ? total : 1, sizeof *out->rows);
    out->store = calloc((total ? total : 1) * n * 2, sizeof *out->store);
    if (!out->rows || !out->store) {
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
                for (size_t k = 0; k < n; k++)
                    row->value[k] = row->ratio[k] = NAN;
            }
            if (isnan(out->rows[r].value[j]))
                out->rows[r].value[j] = it->value;
        }
    }
    for (size_t r = 0; r < out->nrows; r++) {
        struct compare_row *row = &out->rows[r];
        double base = row->value[0];
        for (size_t j = 0; j < n; j++) {
            double v = row->value[j];
            if (isnan(v) || isnan(base) || v <= 0 || base <= 0)
                row->ratio[j] = NAN;
            else
                row->ratio[j] = row->item->higher_better ? v / base : base / v;
        }
    }
    return true;
}

void comparison_free(struct comparison *c)
{
    free(c->rows);
    free(c->store);
    memset(c, 0, sizeof *c);
}
