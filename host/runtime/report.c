/* report.c: benchmark reports (`clformer bench … --json`) read back as flat
 * lists of figures, and several reports lined up against the first, for
 * `clformer bench compare`. A report is either one benchmark's object
 * {"bench": NAME, "results": [{…}, …]} or `bench all`'s
 * {"suite": …, "meta": {…}, "benches": [those objects], "peers": [{…}]}.
 * Each result (or a benchmark object without "results", as one result)
 * yields one figure per metric field it holds (the list below), times left
 * out where it also gives a rate; its name is made of its string fields and
 * its whole-number fields. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json.h"

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

static clf_status add_item(struct clf_report *r, size_t *cap, const char *bench, const char *name,
                           const char *metric, bool higher, double value)
{
    if (r->count == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        struct clf_report_item *items = realloc(r->items, nc * sizeof *items);
        if (!items)
            return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory reading a report");
        r->items = items;
        *cap = nc;
    }
    struct clf_report_item *it = &r->items[r->count++];
    memset(it, 0, sizeof *it);
    snprintf(it->bench, sizeof it->bench, "%s", bench);
    snprintf(it->name, sizeof it->name, "%s", name);
    snprintf(it->metric, sizeof it->metric, "%s", metric);
    it->higher_better = higher;
    it->value = value;
    return CLF_OK;
}

static clf_status add_results(struct clf_report *r, size_t *cap, const char *bench, const struct clf_json *res)
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
        clf_status st = add_item(r, cap, bench, name, key, mi < 0 ? true : metrics[mi].higher_better, v->number);
        if (st)
            return st;
    }
    return CLF_OK;
}

static clf_status add_bench(struct clf_report *r, size_t *cap, const struct clf_json *b, const char *origin)
{
    const char *bench = clf_json_str(b, "bench");
    if (!bench)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: a benchmark object without \"bench\"", origin);
    const struct clf_json *res = clf_json_get(b, "results");
    if (!res)  /* figures at the top level (one case), or none: an "error" says why */
        return clf_json_get(b, "error") ? CLF_OK : add_results(r, cap, bench, b);
    if (res->type != CLF_JSON_ARRAY)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"%s\".results is not an array", origin, bench);
    for (size_t i = 0; i < res->count; i++) {
        if (res->items[i].type != CLF_JSON_OBJECT)
            continue;
        clf_status st = add_results(r, cap, bench, &res->items[i]);
        if (st)
            return st;
    }
    return CLF_OK;
}

clf_status clf_report_parse(const char *text, size_t len, const char *origin, struct clf_report *r)
{
    memset(r, 0, sizeof *r);
    struct clf_json root;
    char err[256];
    if (!clf_json_parse(text, len, &root, err, sizeof err))
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not valid JSON: %s", origin, err);
    clf_status st = CLF_OK;
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
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: a report is a JSON object", origin);
        goto done;
    }
    const struct clf_json *benches = clf_json_get(&root, "benches");
    if (benches) {
        if (benches->type != CLF_JSON_ARRAY) {
            st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"benches\" is not an array", origin);
            goto done;
        }
        for (size_t i = 0; i < benches->count && !st; i++)
            st = add_bench(r, &cap, &benches->items[i], origin);
    } else if (clf_json_get(&root, "bench")) {
        st = add_bench(r, &cap, &root, origin);
    } else {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: neither \"benches\" nor \"bench\": not a clformer report",
                           origin);
    }
    const struct clf_json *peers = clf_json_get(&root, "peers");
    if (!st && peers && peers->type == CLF_JSON_ARRAY) {
        for (size_t i = 0; i < peers->count && !st; i++) {
            const struct clf_json *p = &peers->items[i];
            if (p->type != CLF_JSON_OBJECT)
                continue;
            const char *who = clf_json_str(p, "peer");
            char bench[32];
            snprintf(bench, sizeof bench, "peer:%s", who ? who : "?");
            st = add_results(r, &cap, bench, p);
        }
    }
done:
    clf_json_free(&root);
    if (st)
        clf_report_free(r);
    return st;
}

clf_status clf_report_load(const char *path, struct clf_report *r)
{
    memset(r, 0, sizeof *r);
    char *text;
    size_t len;
    clf_status rst = clf_file_read(path, (size_t)256 << 20, &text, &len);
    if (rst != CLF_OK)
        return rst;
    clf_status st = clf_report_parse(text, len, path, r);
    free(text);
    return st;
}

void clf_report_free(struct clf_report *r)
{
    free(r->items);
    r->items = NULL;
    r->count = 0;
}

static bool same_row(const struct clf_report_item *a, const struct clf_report_item *b)
{
    return !strcmp(a->bench, b->bench) && !strcmp(a->name, b->name) && !strcmp(a->metric, b->metric);
}

clf_status clf_report_compare(const struct clf_report *reports, size_t n, struct clf_comparison *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return clf_error_set(NULL, CLF_ERR_ARG, "nothing to compare: no reports");
    size_t total = 0;
    for (size_t j = 0; j < n; j++)
        total += reports[j].count;
    out->nreports = n;
    out->rows = calloc(total ? total : 1, sizeof *out->rows);
    out->store = calloc((total ? total : 1) * n * 2, sizeof *out->store);
    if (!out->rows || !out->store) {
        clf_comparison_free(out);
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory comparing %zu reports", n);
    }
    /* rows in order of first appearance; a later duplicate of the same
     * figure within a report is ignored */
    for (size_t j = 0; j < n; j++) {
        for (size_t i = 0; i < reports[j].count; i++) {
            const struct clf_report_item *it = &reports[j].items[i];
            size_t r = 0;
            while (r < out->nrows && !same_row(out->rows[r].item, it))
                r++;
            if (r == out->nrows) {
                struct clf_compare_row *row = &out->rows[out->nrows++];
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
        struct clf_compare_row *row = &out->rows[r];
        double base = row->value[0];
        for (size_t j = 0; j < n; j++) {
            double v = row->value[j];
            if (isnan(v) || isnan(base) || v <= 0 || base <= 0)
                row->ratio[j] = NAN;
            else
                row->ratio[j] = row->item->higher_better ? v / base : base / v;
        }
    }
    return CLF_OK;
}

void clf_comparison_free(struct clf_comparison *c)
{
    free(c->rows);
    free(c->store);
    memset(c, 0, sizeof *c);
}

bool clf_json_check(const char *text, size_t len, char *err, size_t errlen)
{
    struct clf_json j;
    if (!clf_json_parse(text, len, &j, err, errlen))
        return false;
    clf_json_free(&j);
    return true;
}
