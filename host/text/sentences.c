/* sentences.c: cutting a text into the sentences a translator takes
 * (clf_text_sentences; the rule is in clformer_text.h). Bytes of UTF-8
 * throughout: the rule looks only at ASCII, '…' (E2 80 A6), the Latin-1
 * capitals (C3 80..C3 9E) and the typographic quotes. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "clformer_text.h"

static bool space(unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* The closing quote or bracket at s[0..), its length; 0 if none. */
static size_t closer(const unsigned char *s, size_t n)
{
    if (n >= 1 && (s[0] == '"' || s[0] == '\'' || s[0] == ')' || s[0] == ']'))
        return 1;
    /* ’ ” » */
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] == 0x99 || s[2] == 0x9D))
        return 3;
    if (n >= 2 && s[0] == 0xC2 && s[1] == 0xBB)
        return 2;
    return 0;
}

/* Whether a sentence may start at s[0..n). */
static bool starter(const unsigned char *s, size_t n)
{
    if (n == 0)
        return false;
    if ((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= '0' && s[0] <= '9') || s[0] == '"' || s[0] == '\'' || s[0] == '(')
        return true;
    if (n >= 2 && s[0] == 0xC3 && s[1] >= 0x80 && s[1] <= 0x9E && s[1] != 0x97) /* À..Þ but × */
        return true;
    if (n >= 2 && s[0] == 0xC2 && (s[1] == 0xBF || s[1] == 0xA1 || s[1] == 0xAB)) /* ¿ ¡ « */
        return true;
    return n >= 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] == 0x9C || s[2] == 0x98); /* “ ‘ */
}

/* Whether the word ending at s[end) (before a '.') is an abbreviation or
 * a single letter, or letters each followed by a '.'. */
static bool abbreviation(const unsigned char *s, size_t from, size_t end)
{
    static const char *const list[] = {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "mt", "no", "fig",
                                       "vs", "etc"};
    size_t b = end;
    while (b > from && !space(s[b - 1]) && s[b - 1] != '(' && s[b - 1] != '"')
        b--;
    const size_t w = end - b;
    if (w == 1 && ((s[b] | 0x20) >= 'a' && (s[b] | 0x20) <= 'z'))
        return true;
    /* dotted initials: single letters with a '.' after each ("E.S.E",
     * "U.S", "e.g") */
    bool dotted = w >= 3;
    for (size_t i = b; dotted && i < end; i++)
        dotted = (i - b) % 2 ? s[i] == '.' : ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z');
    if (dotted && w % 2)
        return true;
    for (size_t i = 0; i < sizeof list / sizeof *list; i++)
        if (strlen(list[i]) == w && strncasecmp((const char *)s + b, list[i], w) == 0)
            return true;
    return false;
}

static clf_status push(struct clf_span **v, size_t *n, size_t *cap, const unsigned char *s, size_t a, size_t b)
{
    while (a < b && space(s[a]))
        a++;
    while (b > a && space(s[b - 1]))
        b--;
    if (a == b)
        return CLF_OK;
    if (*n == *cap) {
        const size_t c = *cap ? 2 * *cap : 16;
        struct clf_span *x = realloc(*v, c * sizeof *x);
        if (!x)
            return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory for %zu sentences", c);
        *v = x, *cap = c;
    }
    (*v)[(*n)++] = (struct clf_span){.at = a, .len = b - a};
    return CLF_OK;
}

clf_status clf_text_sentences(const char *text, size_t len, struct clf_span **spans, size_t *n)
{
    const unsigned char *s = (const unsigned char *)text;
    struct clf_span *v = NULL;
    size_t cnt = 0, cap = 0, start = 0;
    clf_status st = CLF_OK;
    for (size_t i = 0; i < len && st == CLF_OK;) {
        if (s[i] == '\n') {
            st = push(&v, &cnt, &cap, s, start, i);
            start = ++i;
            continue;
        }
        size_t e = i; /* past a run of terminators */
        while (e < len && (s[e] == '.' || s[e] == '!' || s[e] == '?' ||
                           (e + 2 < len && s[e] == 0xE2 && s[e + 1] == 0x80 && s[e + 2] == 0xA6)))
            e += s[e] == 0xE2 ? 3 : 1;
        if (e == i) {
            i++;
            continue;
        }
        const bool one_dot = e - i == 1 && s[i] == '.';
        for (size_t c; (c = closer(s + e, len - e)) != 0;)
            e += c;
        size_t w = e;
        while (w < len && space(s[w]))
            w++;
        if (w > e && starter(s + w, len - w) && !(one_dot && abbreviation(s, start, i))) {
            st = push(&v, &cnt, &cap, s, start, e);
            start = e;
        }
        i = e;
    }
    if (st == CLF_OK)
        st = push(&v, &cnt, &cap, s, start, len);
    if (st != CLF_OK) {
        free(v);
        v = NULL, cnt = 0;
    }
    *spans = v, *n = cnt;
    return st;
}
