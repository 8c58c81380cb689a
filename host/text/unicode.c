/* unicode.c: UTF-8 itself (the one validator, clf_utf8_validate in
 * clformer/text.h, which the library's readers and the server share; the
 * encoder) and the few pieces of Python's str semantics that sacreBLEU's
 * scores depend on, on UTF-8 text: isspace (what split() and rstrip()
 * remove), and lower() with full case mapping and the final-sigma rule.
 * The tables come from host/text/gen_unicode.py. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"
#include "text/unicode_tables.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < r[mid][0])
            hi = mid;
        else if (c > r[mid][1])
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

int clf_py_isspace(uint32_t c)
{
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return in_ranges(clf_space_ranges, COUNT(clf_space_ranges), c);
}

size_t clf_utf8_validate(const char *text, size_t len, unsigned flags, size_t *chars)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, n = 0, bad = CLF_UTF8_VALID;
    while (i < len) {
        const unsigned c = s[i];
        if (c < 0x80) {
            if (c == 0 && !(flags & CLF_UTF8_ALLOW_NUL)) {
                bad = i;
                break;
            }
            i++, n++;
            continue;
        }
        size_t need;
        unsigned lo = 0x80, hi = 0xBF; /* the second byte's range: RFC 3629's table */
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1; /* C0 and C1 would be overlong forms of ASCII */
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0; /* overlong */
            if (c == 0xED) hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90; /* overlong */
            if (c == 0xF4) hi = 0x8F; /* past U+10FFFF */
        } else {
            bad = i; /* a continuation byte with no lead, or F5..FF */
            break;
        }
        if (need >= len - i || s[i + 1] < lo || s[i + 1] > hi) {
            bad = i; /* cut short by the end, or a second byte out of range */
            break;
        }
        size_t k = 2;
        while (k <= need && (s[i + k] & 0xC0) == 0x80)
            k++;
        if (k <= need) {
            bad = i;
            break;
        }
        i += need + 1, n++;
    }
    if (chars)
        *chars = n;
    return bad;
}

size_t clf_utf8_put(uint32_t c, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | (c >> 6));
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (c >> 12));
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

size_t clf_py_rstrip_len(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    while (len > 0) {
        size_t start = len - 1;
        while (start > 0 && (p[start] & 0xC0) == 0x80) start--;
        const unsigned char *q = p + start;
        if (!clf_py_isspace(clf_utf8_next(&q))) break;
        len = start;
    }
    return len;
}

/* Returns the table row of c, or NULL when c lowercases to itself. */
static const uint32_t *lower_row(uint32_t c)
{
    size_t lo = 0, hi = COUNT(clf_lower_table);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < clf_lower_table[mid][0])
            hi = mid;
        else if (c > clf_lower_table[mid][0])
            lo = mid + 1;
        else
            return clf_lower_table[mid];
    }
    return NULL;
}

static int ignorable(uint32_t c)
{
    return in_ranges(clf_ignorable_ranges, COUNT(clf_ignorable_ranges), c);
}

static int cased(uint32_t c)
{
    return in_ranges(clf_cased_ranges, COUNT(clf_cased_ranges), c);
}

/* CPython's handle_capital_sigma: Σ is final when a cased letter precedes
 * it and none follows, both looking past case-ignorable characters. cps is
 * the decoded text, i the position of the Σ. */
static int final_sigma(const uint32_t *cps, size_t n, size_t i)
{
    size_t j = i;
    while (j > 0 && ignorable(cps[j - 1])) j--;
    if (j == 0 || !cased(cps[j - 1])) return 0;
    for (j = i + 1; j < n && ignorable(cps[j]); j++) {
    }
    return j == n || !cased(cps[j]);
}

char *clf_py_lower(const char *s, size_t len)
{
    /* Decode first: final sigma looks both ways. Lowercasing at most
     * doubles the code points (U+0130) and each takes at most 4 bytes. */
    uint32_t *cps = malloc((len + 1) * sizeof *cps);
    char *out = malloc(len * 2 + 4 + 1);
    if (!cps || !out) {
        free(cps);
        free(out);
        return NULL;
    }
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) cps[n++] = clf_utf8_next(&p);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = cps[i];
        if (c < 0x80) {
            out[o++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        } else if (c == 0x3A3) {
            o += clf_utf8_put(final_sigma(cps, n, i) ? 0x3C2 : 0x3C3, out + o);
        } else {
            const uint32_t *row = lower_row(c);
            if (!row) {
                o += clf_utf8_put(c, out + o);
            } else {
                o += clf_utf8_put(row[1], out + o);
                if (row[2]) o += clf_utf8_put(row[2], out + o);
            }
        }
    }
    out[o] = '\0';
    free(cps);
    return out;
}

void clf_py_replace(char *s, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to);
    char *r = s, *w = s;
    while (*r) {
        if (!strncmp(r, from, fl)) {
            memcpy(w, to, tl);
            w += tl;
            r += fl;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}
