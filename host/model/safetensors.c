/* safetensors.c: see safetensors.h. The header is read with the library's
 * one JSON reader (clformer_json.h) and then checked against what the
 * format allows: an object of tensors {dtype, shape, data_offsets} and an
 * optional __metadata__ object of strings. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "clformer_json.h"
#include "safetensors.h"

#define MAX_HEADER (100u << 20)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this host is not"
#endif

struct entry {
    char dtype[16];
    size_t begin, end;
};

static const struct {
    const char *name;
    size_t size;
} dtypes[CLF_ST_NDTYPES] = {[CLF_ST_F32] = {"F32", 4}, [CLF_ST_I8] = {"I8", 1}, [CLF_ST_BF16] = {"BF16", 2},
                            [CLF_ST_F16] = {"F16", 2}};

const char *clf_st_dtype_name(enum clf_st_dtype d)
{
    return d < CLF_ST_NDTYPES ? dtypes[d].name : "?";
}

size_t clf_st_dtype_size(enum clf_st_dtype d)
{
    return d < CLF_ST_NDTYPES ? dtypes[d].size : 0;
}

/* The dtype named s, or CLF_ST_NDTYPES. */
static enum clf_st_dtype dtype_of(const char *s)
{
    enum clf_st_dtype d = 0;
    while (d < CLF_ST_NDTYPES && strcmp(dtypes[d].name, s))
        d++;
    return d;
}

/* The names in the set, "F32" or "F32, I8, BF16 or F16", into out. */
static void dtype_list(unsigned set, char *out, size_t len)
{
    size_t n = 0, at = 0, total = 0;
    for (int d = 0; d < CLF_ST_NDTYPES; d++)
        total += set >> d & 1;
    out[0] = 0;
    for (int d = 0; d < CLF_ST_NDTYPES; d++) {
        if (!(set >> d & 1))
            continue;
        const char *sep = n == 0 ? "" : n + 1 == total ? " or " : ", ";
        at += (size_t)snprintf(out + at, at < len ? len - at : 0, "%s%s", sep, dtypes[d].name);
        n++;
    }
}

/* v as a size: a whole number from 0 to 2^53 (a double holds those exactly). */
static bool whole(const struct clf_json *v, size_t *out)
{
    if (v->type != CLF_JSON_NUMBER || !(v->number >= 0) || v->number > 9007199254740992.0 ||
        v->number != floor(v->number))
        return false;
    *out = (size_t)v->number;
    return true;
}

/* One tensor's {dtype, shape, data_offsets}; on failure the reason in why. */
static bool tensor_entry(const struct clf_json *v, struct clf_st_tensor *t, struct entry *e, char *why, size_t len)
{
    const struct clf_json *dtype = clf_json_get(v, "dtype"), *shape = clf_json_get(v, "shape"),
                          *off = clf_json_get(v, "data_offsets");
    if (v->type != CLF_JSON_OBJECT) {
        snprintf(why, len, "tensor %s is not an object", t->name);
        return false;
    }
    for (size_t i = 0; i < v->count; i++) {
        if (strcmp(v->keys[i], "dtype") && strcmp(v->keys[i], "shape") && strcmp(v->keys[i], "data_offsets")) {
            snprintf(why, len, "tensor %s: unknown field \"%.32s\"", t->name, v->keys[i]);
            return false;
        }
    }
    if (!dtype || !shape || !off) {
        snprintf(why, len, "tensor %s lacks dtype, shape or data_offsets", t->name);
        return false;
    }
    if (dtype->type != CLF_JSON_STRING || strlen(dtype->string) >= sizeof e->dtype) {
        snprintf(why, len, "tensor %s: dtype is not a short string", t->name);
        return false;
    }
    snprintf(e->dtype, sizeof e->dtype, "%s", dtype->string);
    if (shape->type != CLF_JSON_ARRAY || shape->count > CLF_ST_MAX_DIMS) {
        snprintf(why, len, "tensor %s: shape is not an array of at most %d sizes", t->name, CLF_ST_MAX_DIMS);
        return false;
    }
    t->ndim = (int)shape->count;
    for (size_t d = 0; d < shape->count; d++) {
        if (!whole(&shape->items[d], &t->shape[d])) {
            snprintf(why, len, "tensor %s: shape holds something other than a non-negative integer", t->name);
            return false;
        }
    }
    if (off->type != CLF_JSON_ARRAY || off->count != 2 || !whole(&off->items[0], &e->begin) ||
        !whole(&off->items[1], &e->end)) {
        snprintf(why, len, "tensor %s: data_offsets needs two non-negative integers", t->name);
        return false;
    }
    return true;
}

/* __metadata__: an object of strings, each key and value within clf_st_meta's arrays. */
static bool meta_object(const struct clf_json *v, struct clf_st_file *f, char *why, size_t len)
{
    if (v->type != CLF_JSON_OBJECT) {
        snprintf(why, len, "__metadata__ is not an object");
        return false;
    }
    struct clf_st_meta *g = realloc(f->meta, (f->meta_count + v->count + 1) * sizeof *g);
    if (!g) {
        snprintf(why, len, "out of memory");
        return false;
    }
    f->meta = g;
    for (size_t i = 0; i < v->count; i++) {
        struct clf_st_meta *m = &f->meta[f->meta_count++];
        const struct clf_json *x = &v->items[i];
        if (x->type != CLF_JSON_STRING) {
            snprintf(why, len, "__metadata__ value of %.64s is not a string", v->keys[i]);
            return false;
        }
        if (strlen(v->keys[i]) >= sizeof m->key || strlen(x->string) >= sizeof m->value) {
            snprintf(why, len, "__metadata__ %.64s: key or value too long", v->keys[i]);
            return false;
        }
        snprintf(m->key, sizeof m->key, "%s", v->keys[i]);
        snprintf(m->value, sizeof m->value, "%s", x->string);
    }
    return true;
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
    return clf_st_read_as(path, f, CLF_ST_ONLY_F32);
}

clf_status clf_st_read_as(const char *path, struct clf_st_file *f, unsigned accept)
{
    memset(f, 0, sizeof *f);
    struct entry *entries = NULL, **order = NULL;
    struct clf_json root = {0};
    clf_status st = CLF_ERR_FORMAT;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) == 0 && !S_ISREG(sb.st_mode)) {
        fclose(fp);
        return clf_error_set(NULL, CLF_ERR_ARG, "%s: %s, not a checkpoint: give a .safetensors file", path,
                             S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file");
    }
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

    char why[256];
    if (!clf_json_parse((const char *)f->bytes + 8, hlen, &root, why, sizeof why))
        goto bad_header;
    if (root.type != CLF_JSON_OBJECT) {
        snprintf(why, sizeof why, "not a JSON object");
        goto bad_header;
    }
    f->tensors = calloc(root.count ? root.count : 1, sizeof *f->tensors);
    entries = calloc(root.count ? root.count : 1, sizeof *entries);
    if (!f->tensors || !entries) {
        st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < root.count; i++) {
        const char *name = root.keys[i];
        if (!strcmp(name, "__metadata__")) {
            if (!meta_object(&root.items[i], f, why, sizeof why))
                goto bad_header;
            continue;
        }
        struct clf_st_tensor *t = &f->tensors[f->count];
        if (strlen(name) >= sizeof t->name) {
            snprintf(why, sizeof why, "tensor name %.40s... longer than %zu bytes", name, sizeof t->name - 1);
            goto bad_header;
        }
        snprintf(t->name, sizeof t->name, "%s", name);
        if (!tensor_entry(&root.items[i], t, &entries[f->count], why, sizeof why))
            goto bad_header;
        f->count++;
    }

    order = malloc((f->count + 1) * sizeof *order);
    if (!order) {
        st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < f->count; i++) {
        struct clf_st_tensor *t = &f->tensors[i];
        struct entry *e = &entries[i];
        t->dtype = dtype_of(e->dtype);
        if (t->dtype == CLF_ST_NDTYPES || !(accept >> t->dtype & 1)) {
            char list[64];
            dtype_list(accept, list, sizeof list);
            clf_error_set(NULL, st, "%s: tensor %s has dtype %s; clformer reads %s only", path, t->name, e->dtype,
                          list);
            goto fail;
        }
        const size_t size = dtypes[t->dtype].size;
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
        if (e->end - e->begin != t->numel * size) {
            if (t->dtype == CLF_ST_F32)
                clf_error_set(NULL, st, "%s: tensor %s: %zu bytes for a shape of %zu floats", path, t->name,
                              e->end - e->begin, t->numel);
            else
                clf_error_set(NULL, st, "%s: tensor %s: %zu bytes for a shape of %zu %s values (%zu bytes each)",
                              path, t->name, e->end - e->begin, t->numel, e->dtype, size);
            goto fail;
        }
        if (e->begin % size) {
            clf_error_set(NULL, st, "%s: tensor %s: data offset %zu is not %zu-byte aligned", path, t->name,
                          e->begin, size);
            goto fail;
        }
        t->data = data + e->begin;
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
    /* data must be 4-byte aligned in memory for the float views (and so
     * for every dtype's: offsets are multiples of their element size) */
    if ((8 + hlen) % 4) {
        memmove(f->bytes, f->bytes + 8 + hlen, data_size);  /* header no longer needed */
        for (size_t i = 0; i < f->count; i++)
            f->tensors[i].data = f->bytes + entries[i].begin;
    }
    free(entries);
    free(order);
    clf_json_free(&root);
    return CLF_OK;
bad_header:
    clf_error_set(NULL, st, "%s: malformed header: %s", path, why);
fail:
    free(entries);
    free(order);
    clf_json_free(&root);
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
    /* the data's order: the given one within each element size, widest first */
    const struct clf_st_tensor **order = malloc((count + 1) * sizeof *order);
    if (!order)
        return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
    size_t k = 0;
    for (size_t size = 4; size; size /= 2)
        for (size_t i = 0; i < count; i++)
            if (clf_st_dtype_size(t[i].dtype) == size)
                order[k++] = &t[i];
    if (k != count) {
        free(order);
        return clf_error_set(NULL, CLF_ERR_ARG, "%s: a tensor of unknown dtype to write", path);
    }
    size_t cap = 256 + count * 256;
    for (size_t i = 0; i < meta_count; i++)
        cap += 6 * (strlen(meta[i].key) + strlen(meta[i].value)) + 8;
    char *h = malloc(cap), *p = h;
    if (!h) {
        free(order);
        return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
    }
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
        const struct clf_st_tensor *x = order[i];
        const size_t bytes = x->numel * clf_st_dtype_size(x->dtype);
        if (meta_count || i)
            *p++ = ',';
        put_json_str(&p, x->name);
        p += sprintf(p, ":{\"dtype\":\"%s\",\"shape\":[", clf_st_dtype_name(x->dtype));
        for (int d = 0; d < x->ndim; d++)
            p += sprintf(p, "%s%zu", d ? "," : "", x->shape[d]);
        p += sprintf(p, "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
        off += bytes;
    }
    *p++ = '}';
    /* pad with spaces so the data starts 8-byte aligned, as the format recommends */
    while ((p - h) % 8)
        *p++ = ' ';
    uint64_t hlen = (uint64_t)(p - h);
    unsigned char lenbytes[8];
    for (int i = 0; i < 8; i++)
        lenbytes[i] = (unsigned char)(hlen >> (8 * i));

    struct clf_file_out out;
    clf_status st = clf_file_out_open(&out, path);
    if (st == CLF_OK) {
        bool ok = fwrite(lenbytes, 1, 8, out.f) == 8 && fwrite(h, 1, hlen, out.f) == hlen;
        /* data is written as stored: little-endian on every host we build for */
        for (size_t i = 0; ok && i < count; i++)
            ok = fwrite(order[i]->data, clf_st_dtype_size(order[i]->dtype), order[i]->numel, out.f) ==
                 order[i]->numel;
        st = clf_file_out_close(&out, ok);
    }
    int e = errno;  /* the helper's, kept */
    free(h);
    free(order);
    if (st != CLF_OK)
        return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot write: %s (the previous file, if any, is untouched)",
                             path, strerror(e));
    return CLF_OK;
}
