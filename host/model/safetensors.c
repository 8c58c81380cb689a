/* safetensors.c: see safetensors.h. The JSON reader accepts exactly what
 * the format needs (objects, arrays, strings, non-negative integers) and
 * reports the byte offset of anything else. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/internal.h"
#include "safetensors.h"

#define MAX_HEADER (100u << 20)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this host is not"
#endif

struct json {
    const char *start, *s, *end, *path;
    char err[256];
};

static void ws(struct json *j)
{
    while (j->s < j->end && isspace((unsigned char)*j->s))
        j->s++;
}

static int fail(struct json *j, const char *what)
{
    if (!j->err[0])
        snprintf(j->err, sizeof j->err, "%s at header byte %ld", what, (long)(j->s - j->start));
    return -1;
}

static int expect(struct json *j, char c)
{
    ws(j);
    if (j->s >= j->end || *j->s != c) {
        char what[32];
        snprintf(what, sizeof what, "expected '%c'", c);
        return fail(j, what);
    }
    j->s++;
    return 0;
}

/* Reads a JSON string into out (escapes \" \\ \/ \n \t \uXXXX for ASCII). */
static int str(struct json *j, char *out, size_t len)
{
    if (expect(j, '"'))
        return -1;
    size_t n = 0;
    while (j->s < j->end && *j->s != '"') {
        char c = *j->s++;
        if (c == '\\') {
            if (j->s >= j->end)
                return fail(j, "unterminated string");
            char e = *j->s++;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned v;
                if (j->end - j->s < 4 || sscanf(j->s, "%4x", &v) != 1 || v > 0x7f)
                    return fail(j, "unsupported \\u escape");
                j->s += 4;
                c = (char)v;
                break;
            }
            default: return fail(j, "bad escape");
            }
        }
        if (n + 1 >= len)
            return fail(j, "string too long");
        out[n++] = c;
    }
    if (j->s >= j->end)
        return fail(j, "unterminated string");
    j->s++;
    out[n] = 0;
    return 0;
}

static int uint_(struct json *j, size_t *v)
{
    ws(j);
    if (j->s >= j->end || !isdigit((unsigned char)*j->s))
        return fail(j, "expected a non-negative integer");
    size_t x = 0;
    while (j->s < j->end && isdigit((unsigned char)*j->s)) {
        size_t d = (size_t)(*j->s++ - '0');
        if (x > (SIZE_MAX - d) / 10)
            return fail(j, "integer too large");
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

static bool peek(struct json *j, char c)
{
    ws(j);
    return j->s < j->end && *j->s == c;
}

/* [a, b, ...] of integers, at most max. */
static int uint_array(struct json *j, size_t *out, int max, int *n)
{
    if (expect(j, '['))
        return -1;
    *n = 0;
    if (peek(j, ']'))
        return expect(j, ']');
    for (;;) {
        if (*n >= max)
            return fail(j, "array too long");
        if (uint_(j, &out[(*n)++]))
            return -1;
        if (peek(j, ','))
            j->s++;
        else
            return expect(j, ']');
    }
}

struct entry {
    char dtype[16];
    size_t begin, end;
};

static int tensor_entry(struct json *j, struct clf_st_tensor *t, struct entry *e)
{
    bool have_dtype = false, have_shape = false, have_off = false;
    if (expect(j, '{'))
        return -1;
    while (!peek(j, '}')) {
        char key[32];
        if (str(j, key, sizeof key) || expect(j, ':'))
            return -1;
        if (!strcmp(key, "dtype")) {
            if (str(j, e->dtype, sizeof e->dtype))
                return -1;
            have_dtype = true;
        } else if (!strcmp(key, "shape")) {
            if (uint_array(j, t->shape, CLF_ST_MAX_DIMS, &t->ndim))
                return -1;
            have_shape = true;
        } else if (!strcmp(key, "data_offsets")) {
            size_t off[2];
            int n;
            if (uint_array(j, off, 2, &n))
                return -1;
            if (n != 2)
                return fail(j, "data_offsets needs two numbers");
            e->begin = off[0];
            e->end = off[1];
            have_off = true;
        } else {
            return fail(j, "unknown tensor field");
        }
        if (peek(j, ','))
            j->s++;
    }
    if (!have_dtype || !have_shape || !have_off)
        return fail(j, "tensor lacks dtype, shape or data_offsets");
    return expect(j, '}');
}

static int meta_object(struct json *j, struct clf_st_file *f)
{
    if (expect(j, '{'))
        return -1;
    while (!peek(j, '}')) {
        struct clf_st_meta *g = realloc(f->meta, (f->meta_count + 1) * sizeof *g);
        if (!g)
            return fail(j, "out of memory");
        f->meta = g;
        struct clf_st_meta *m = &f->meta[f->meta_count++];
        if (str(j, m->key, sizeof m->key) || expect(j, ':') || str(j, m->value, sizeof m->value))
            return -1;
        if (peek(j, ','))
            j->s++;
    }
    return expect(j, '}');
}

static int cmp_begin(const void *a, const void *b)
{
    const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

void clf_st_free(struct clf_st_file *f)
{
    free(f->tensors);
    free(f->meta);
    free(f->bytes);
    memset(f, 0, sizeof *f);
}

clf_status clf_st_read(const char *path, struct clf_st_file *f)
{
    memset(f, 0, sizeof *f);
    struct entry *entries = NULL, **order = NULL;
    clf_status st = CLF_ERR_FORMAT;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    long size;
    if (fseek(fp, 0, SEEK_END) || (size = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET)) {
        fclose(fp);
        return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot read", path);
    }
    f->size = (size_t)size;
    f->bytes = malloc(f->size + 1);
    if (!f->bytes || fread(f->bytes, 1, f->size, fp) != f->size) {
        fclose(fp);
        clf_st_free(f);
        return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot read %ld bytes", path, size);
    }
    fclose(fp);
    if (f->size < 8) {
        clf_error_set(NULL, st, "%s: truncated: %zu bytes, not even a header length", path, f->size);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f->bytes[i];
    if (hlen > f->size - 8 || hlen > MAX_HEADER) {
        clf_error_set(NULL, st, "%s: header length %llu runs past the end of the file (%zu bytes): "
                      "truncated or not a safetensors file", path, (unsigned long long)hlen, f->size);
        goto fail;
    }
    const unsigned char *data = f->bytes + 8 + hlen;
    size_t data_size = f->size - 8 - hlen;

    struct json j = {(const char *)f->bytes + 8, (const char *)f->bytes + 8, (const char *)f->bytes + 8 + hlen,
                     path, {0}};
    size_t cap = 0;
    if (expect(&j, '{'))
        goto bad_json;
    while (!peek(&j, '}')) {
        char name[128];
        if (str(&j, name, sizeof name) || expect(&j, ':'))
            goto bad_json;
        if (!strcmp(name, "__metadata__")) {
            if (meta_object(&j, f))
                goto bad_json;
        } else {
            if (f->count == cap) {
                cap = cap ? cap * 2 : 64;
                struct clf_st_tensor *g = realloc(f->tensors, cap * sizeof *g);
                struct entry *ge = realloc(entries, cap * sizeof *ge);
                if (g)
                    f->tensors = g;
                if (ge)
                    entries = ge;
                if (!g || !ge) {
                    st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
                    goto fail;
                }
            }
            struct clf_st_tensor *t = &f->tensors[f->count];
            memset(t, 0, sizeof *t);
            snprintf(t->name, sizeof t->name, "%s", name);
            if (tensor_entry(&j, t, &entries[f->count]))
                goto bad_json;
            f->count++;
        }
        if (peek(&j, ','))
            j.s++;
    }
    if (expect(&j, '}'))
        goto bad_json;

    order = malloc((f->count + 1) * sizeof *order);
    if (!order) {
        st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < f->count; i++) {
        struct clf_st_tensor *t = &f->tensors[i];
        struct entry *e = &entries[i];
        if (strcmp(e->dtype, "F32")) {
            clf_error_set(NULL, st, "%s: tensor %s has dtype %s; clformer reads F32 only", path, t->name, e->dtype);
            goto fail;
        }
        t->numel = 1;
        for (int d = 0; d < t->ndim; d++) {
            if (t->shape[d] && t->numel > SIZE_MAX / 4 / t->shape[d]) {
                clf_error_set(NULL, st, "%s: tensor %s: a shape of more than 2^62 floats", path, t->name);
                goto fail;
            }
            t->numel *= t->shape[d];
        }
        if (e->end < e->begin || e->end > data_size) {
            clf_error_set(NULL, st, "%s: tensor %s: data_offsets [%zu, %zu) lie outside the %zu data bytes "
                          "(truncated file?)", path, t->name, e->begin, e->end, data_size);
            goto fail;
        }
        if (e->end - e->begin != t->numel * 4) {
            clf_error_set(NULL, st, "%s: tensor %s: %zu bytes for a shape of %zu floats", path, t->name,
                          e->end - e->begin, t->numel);
            goto fail;
        }
        if (e->begin % 4) {
            clf_error_set(NULL, st, "%s: tensor %s: data offset %zu is not 4-byte aligned", path, t->name, e->begin);
            goto fail;
        }
        t->data = (const float *)(data + e->begin);
        order[i] = e;
    }
    qsort(order, f->count, sizeof *order, cmp_begin);
    for (size_t i = 1; i < f->count; i++) {
        if (order[i]->begin < order[i - 1]->end) {
            clf_error_set(NULL, st, "%s: tensors %s and %s overlap (bytes %zu..%zu and %zu..%zu)", path,
                          f->tensors[order[i - 1] - entries].name, f->tensors[order[i] - entries].name,
                          order[i - 1]->begin, order[i - 1]->end, order[i]->begin, order[i]->end);
            goto fail;
        }
    }
    /* data must be 4-byte aligned in memory for the float views */
    if ((8 + hlen) % 4) {
        memmove(f->bytes, f->bytes + 8 + hlen, data_size);  /* header no longer needed */
        for (size_t i = 0; i < f->count; i++)
            f->tensors[i].data = (const float *)(f->bytes + entries[i].begin);
    }
    free(entries);
    free(order);
    return CLF_OK;
bad_json:
    clf_error_set(NULL, st, "%s: malformed header: %s", path, j.err[0] ? j.err : "bad JSON");
fail:
    free(entries);
    free(order);
    clf_st_free(f);
    return st;
}

const struct clf_st_tensor *clf_st_find(const struct clf_st_file *f, const char *name)
{
    for (size_t i = 0; i < f->count; i++)
        if (!strcmp(f->tensors[i].name, name))
            return &f->tensors[i];
    return NULL;
}

const char *clf_st_meta_get(const struct clf_st_file *f, const char *key)
{
    for (size_t i = 0; i < f->meta_count; i++)
        if (!strcmp(f->meta[i].key, key))
            return f->meta[i].value;
    return NULL;
}

static void put_json_str(char **p, const char *s)
{
    *(*p)++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            *(*p)++ = '\\';
            *(*p)++ = *s;
        } else if ((unsigned char)*s < 0x20) {
            *p += sprintf(*p, "\\u%04x", (unsigned char)*s);
        } else {
            *(*p)++ = *s;
        }
    }
    *(*p)++ = '"';
}

clf_status clf_st_write(const char *path, const struct clf_st_tensor *t, size_t count,
                        const struct clf_st_meta *meta, size_t meta_count)
{
    size_t cap = 256 + count * 256;
    for (size_t i = 0; i < meta_count; i++)
        cap += 6 * (strlen(meta[i].key) + strlen(meta[i].value)) + 8;
    char *h = malloc(cap), *p = h;
    if (!h)
        return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
    *p++ = '{';
    if (meta_count) {
        p += sprintf(p, "\"__metadata__\":{");
        for (size_t i = 0; i < meta_count; i++) {
            put_json_str(&p, meta[i].key);
            *p++ = ':';
            put_json_str(&p, meta[i].value);
            if (i + 1 < meta_count)
                *p++ = ',';
        }
        *p++ = '}';
    }
    size_t off = 0;
    for (size_t i = 0; i < count; i++) {
        if (meta_count || i)
            *p++ = ',';
        put_json_str(&p, t[i].name);
        p += sprintf(p, ":{\"dtype\":\"F32\",\"shape\":[");
        for (int d = 0; d < t[i].ndim; d++)
            p += sprintf(p, "%s%zu", d ? "," : "", t[i].shape[d]);
        p += sprintf(p, "],\"data_offsets\":[%zu,%zu]}", off, off + t[i].numel * 4);
        off += t[i].numel * 4;
    }
    *p++ = '}';
    /* pad with spaces so the data starts 8-byte aligned, as the format recommends */
    while ((p - h) % 8)
        *p++ = ' ';
    uint64_t hlen = (uint64_t)(p - h);
    unsigned char lenbytes[8];
    for (int i = 0; i < 8; i++)
        lenbytes[i] = (unsigned char)(hlen >> (8 * i));

    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(lenbytes, 1, 8, f) == 8 && fwrite(h, 1, hlen, f) == hlen;
    /* float data is written as stored: little-endian on every host we build for */
    for (size_t i = 0; ok && i < count; i++)
        ok = fwrite(t[i].data, 4, t[i].numel, f) == t[i].numel;
    if (f) {
        ok = fflush(f) == 0 && ok;
        ok = fsync(fileno(f)) == 0 && ok;
        ok = fclose(f) == 0 && ok;
    }
    free(h);
    if (!ok || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot write: %s (the previous file, if any, is untouched)",
                             path, strerror(e));
    }
    return CLF_OK;
}
