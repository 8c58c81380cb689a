/* json.c: a recursive-descent JSON reader (RFC 8259), clformer_json.h:
 * tuning files, safetensors headers, checkpoint configs, and the tools'
 * reports. Nesting is limited to 64 levels; numbers are doubles; \u
 * escapes are decoded to UTF-8. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "clformer_json.h"

#define MAX_DEPTH 64

struct parser {
    const char *s, *end, *p;
    char *err;
    size_t errlen;
    bool failed;
};

static void fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = true;
    int line = 1, col = 1;
    for (const char *q = ps->s; q < ps->p && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    int n = snprintf(ps->err, ps->errlen, "line %d, column %d: ", line, col);
    if (n < 0 || (size_t)n >= ps->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->errlen - n, fmt, ap);
    va_end(ap);
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static bool literal(struct parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, word, n)) {
        ps->p += n;
        return true;
    }
    return false;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool hex4(struct parser *ps, unsigned *out)
{
    if (ps->end - ps->p < 4) {
        fail(ps, "a \\u escape needs four hex digits");
        return false;
    }
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(ps->p[i]);
        if (h < 0) {
            fail(ps, "a \\u escape needs four hex digits");
            return false;
        }
        v = v * 16 + (unsigned)h;
    }
    ps->p += 4;
    *out = v;
    return true;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* At the opening quote; returns a malloc'd decoded string, its length in
 * *len (a \u0000 escape decodes to a NUL byte inside it). */
static char *parse_string(struct parser *ps, size_t *len)
{
    ps->p++;
    const char *start = ps->p;
    /* the decoded text is never longer than the escaped text */
    size_t cap = 1;
    while (ps->p < ps->end && *ps->p != '"') {
        if (*ps->p == '\\')
            ps->p++;
        ps->p++;
        cap++;
    }
    cap += (size_t)(ps->p - start);
    ps->p = start;
    char *out = malloc(cap), *o = out;
    if (!out) {
        fail(ps, "out of memory");
        return NULL;
    }
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            fail(ps, "a control character inside a string");
            goto bad;
        }
        if (c != '\\') {
            *o++ = (char)c;
            ps->p++;
            continue;
        }
        ps->p++;
        if (ps->p >= ps->end)
            break;
        char e = *ps->p++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!hex4(ps, &cp))
                goto bad;
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (!literal(ps, "\\u") || !hex4(ps, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    fail(ps, "an unpaired UTF-16 surrogate in a \\u escape");
                    goto bad;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                fail(ps, "an unpaired UTF-16 surrogate in a \\u escape");
                goto bad;
            }
            o += put_utf8(o, cp);
            break;
        }
        default:
            ps->p--;
            fail(ps, "unknown escape '\\%c'", e);
            goto bad;
        }
    }
    if (ps->p >= ps->end) {
        fail(ps, "a string is not closed");
        goto bad;
    }
    ps->p++;
    *o = 0;
    *len = (size_t)(o - out);
    return out;
bad:
    free(out);
    return NULL;
}

static bool parse_value(struct parser *ps, struct clf_json *out, int depth);

static bool add_member(struct parser *ps, struct clf_json *out, size_t *cap, char *key, int depth)
{
    if (out->count == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        struct clf_json *items = realloc(out->items, nc * sizeof *items);
        if (items)
            out->items = items;
        char **keys = out->keys;
        if (out->type == CLF_JSON_OBJECT && items) {
            keys = realloc(out->keys, nc * sizeof *keys);
            if (keys)
                out->keys = keys;
        }
        if (!items || (out->type == CLF_JSON_OBJECT && !keys)) {
            fail(ps, "out of memory");
            free(key);
            return false;
        }
        *cap = nc;
    }
    memset(&out->items[out->count], 0, sizeof out->items[0]);
    if (out->type == CLF_JSON_OBJECT)
        out->keys[out->count] = key;
    out->count++;
    return parse_value(ps, &out->items[out->count - 1], depth);
}

static bool parse_container(struct parser *ps, struct clf_json *out, int depth)
{
    bool object = *ps->p == '{';
    char close = object ? '}' : ']';
    out->type = object ? CLF_JSON_OBJECT : CLF_JSON_ARRAY;
    if (depth >= MAX_DEPTH) {
        fail(ps, "nested more than %d levels deep", MAX_DEPTH);
        return false;
    }
    ps->p++;
    size_t cap = 0;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return true;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, "expected a member name in quotes");
                return false;
            }
            size_t key_len;
            if (!(key = parse_string(ps, &key_len)))
                return false;
            /* a name is looked up as a C string: one with a NUL would
             * match a shorter name ("api_key\u0000x" as "api_key") */
            if (strlen(key) != key_len) {
                free(key);
                fail(ps, "a member name holds U+0000");
                return false;
            }
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                fail(ps, "expected ':' after a member name");
                return false;
            }
            ps->p++;
        }
        if (!add_member(ps, out, &cap, key, depth))
            return false;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return true;
        }
        fail(ps, "expected ',' or '%c'", close);
        return false;
    }
}

static bool parse_number(struct parser *ps, struct clf_json *out)
{
    const char *q = ps->p;
    if (q < ps->end && *q == '-')
        q++;
    if (q >= ps->end || *q < '0' || *q > '9') {
        fail(ps, "expected a value");
        return false;
    }
    if (*q == '0')
        q++;
    else
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    if (q < ps->end && *q == '.') {
        q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            fail(ps, "a digit must follow the decimal point");
            return false;
        }
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            fail(ps, "a digit must follow the exponent");
            return false;
        }
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    char buf[64];
    size_t n = (size_t)(q - ps->p);
    if (n >= sizeof buf) {
        fail(ps, "a number of more than 63 characters");
        return false;
    }
    memcpy(buf, ps->p, n);
    buf[n] = 0;
    out->type = CLF_JSON_NUMBER;
    out->number = strtod(buf, NULL);
    ps->p = q;
    return true;
}

static bool parse_value(struct parser *ps, struct clf_json *out, int depth)
{
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of the text");
        return false;
    }
    switch (*ps->p) {
    case '{':
    case '[':
        return parse_container(ps, out, depth + 1);
    case '"':
        out->type = CLF_JSON_STRING;
        return (out->string = parse_string(ps, &out->length)) != NULL;
    case 't':
    case 'f':
    case 'n':
        if (literal(ps, "true") || literal(ps, "false")) {
            out->type = CLF_JSON_BOOL;
            out->boolean = ps->p[-1] == 'e' && ps->p[-2] == 'u';
            return true;
        }
        if (literal(ps, "null")) {
            out->type = CLF_JSON_NULL;
            return true;
        }
        fail(ps, "expected a value");
        return false;
    default:
        return parse_number(ps, out);
    }
}

void clf_json_free(struct clf_json *j)
{
    if (!j)
        return;
    free(j->string);
    for (size_t i = 0; i < j->count; i++) {
        clf_json_free(&j->items[i]);
        if (j->keys)
            free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    memset(j, 0, sizeof *j);
}

bool clf_json_parse(const char *text, size_t len, struct clf_json *out, char *err, size_t errlen)
{
    struct parser ps = {text, text + len, text, err, errlen, false};
    memset(out, 0, sizeof *out);
    if (errlen)
        err[0] = 0;
    if (parse_value(&ps, out, 0)) {
        skip_ws(&ps);
        if (ps.p == ps.end)
            return true;
        fail(&ps, "text after the end of the value");
    }
    clf_json_free(out);
    return false;
}

bool clf_json_check(const char *text, size_t len, char *err, size_t errlen)
{
    struct clf_json j;
    if (!clf_json_parse(text, len, &j, err, errlen))
        return false;
    clf_json_free(&j);
    return true;
}

/* The last member of that name, as Python's json, JavaScript's JSON.parse
 * and so most writers and gateways read a repeated name: two readers of one
 * text must not see two different values. */
const struct clf_json *clf_json_get(const struct clf_json *j, const char *key)
{
    if (!j || j->type != CLF_JSON_OBJECT)
        return NULL;
    for (size_t i = j->count; i-- > 0;)
        if (!strcmp(j->keys[i], key))
            return &j->items[i];
    return NULL;
}

const char *clf_json_str(const struct clf_json *j, const char *key)
{
    const struct clf_json *v = clf_json_get(j, key);
    return v && v->type == CLF_JSON_STRING ? v->string : NULL;
}

bool clf_json_num(const struct clf_json *j, const char *key, double *out)
{
    const struct clf_json *v = clf_json_get(j, key);
    if (!v || v->type != CLF_JSON_NUMBER)
        return false;
    *out = v->number;
    return true;
}

void clf_json_write_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
