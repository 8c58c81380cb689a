/* test_utf8.c: clf_utf8_validate (clformer/text.h), the one UTF-8 check
 * the library's readers and the server share, on the inputs a validator
 * gets wrong: boundaries of each sequence length, overlong forms,
 * surrogates, code points past U+10FFFF, sequences cut short by the end or
 * by a bad byte, stray continuation bytes, and NUL with and without
 * CLF_UTF8_ALLOW_NUL. Each case checks the offset of the first bad byte
 * and the characters counted before it. */
#include <criterion/criterion.h>
#include <string.h>

#include "clformer/text.h"

struct utf8_case {
    const char *what, *s;
    size_t len;      /* 0: strlen(s) */
    unsigned flags;
    size_t bad;      /* CLF_UTF8_VALID when valid */
    size_t chars;    /* characters before bad (all when valid) */
};

static void run(const struct utf8_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const size_t len = c[i].len ? c[i].len : strlen(c[i].s);
        size_t chars = 12345;
        const size_t bad = clf_utf8_validate(c[i].s, len, c[i].flags, &chars);
        cr_expect_eq(bad, c[i].bad, "%s: offset %lld, want %lld (-1: valid)", c[i].what,
                     (long long)bad, (long long)c[i].bad);
        cr_expect_eq(chars, c[i].chars, "%s: %zu characters, want %zu", c[i].what, chars, c[i].chars);
        cr_expect_eq(clf_utf8_validate(c[i].s, len, c[i].flags, NULL), bad, "%s: without chars", c[i].what);
    }
}

#define V CLF_UTF8_VALID

Test(utf8, valid)
{
    static const struct utf8_case c[] = {
        {"empty", "", 0, 0, V, 0},
        {"ASCII", "A dog runs.", 0, 0, V, 11},
        {"2, 3 and 4 bytes", "\xC3\xA4\xE2\x82\xAC\xF0\x9F\x98\x80", 0, 0, V, 3},
        {"U+007F U+0080 U+07FF", "\x7F\xC2\x80\xDF\xBF", 0, 0, V, 3},
        {"U+0800 U+D7FF U+E000 U+FFFF", "\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF", 0, 0, V, 4},
        {"U+10000 U+10FFFF", "\xF0\x90\x80\x80\xF4\x8F\xBF\xBF", 0, 0, V, 2},
        {"only len bytes are read", "abc\xFF", 3, 0, V, 3},
    };
    run(c, sizeof c / sizeof *c);
}

Test(utf8, overlong)
{
    static const struct utf8_case c[] = {
        {"C0 AF ('/')", "a\xC0\xAF", 0, 0, 1, 1},
        {"C1 BF", "\xC1\xBF", 0, 0, 0, 0},
        {"E0 80 AF", "\xE0\x80\xAF", 0, 0, 0, 0},
        {"E0 9F BF (U+07FF in 3)", "ab\xE0\x9F\xBF", 0, 0, 2, 2},
        {"F0 8F BF BF (U+FFFF in 4)", "\xC3\xA4\xF0\x8F\xBF\xBF", 0, 0, 2, 1},
        {"C0 80 (a NUL, Java's)", "\xC0\x80", 0, CLF_UTF8_ALLOW_NUL, 0, 0},
    };
    run(c, sizeof c / sizeof *c);
}

Test(utf8, surrogates_and_past_u10ffff)
{
    static const struct utf8_case c[] = {
        {"U+D800", "x\xED\xA0\x80", 0, 0, 1, 1},
        {"U+DFFF", "\xED\xBF\xBF", 0, 0, 0, 0},
        {"a surrogate pair (CESU-8)", "\xED\xA0\xBD\xED\xB8\x80", 0, 0, 0, 0},
        {"U+110000", "\xF4\x90\x80\x80", 0, 0, 0, 0},
        {"F5", "ok\xF5\x80\x80\x80", 0, 0, 2, 2},
        {"F8 (5 bytes)", "\xF8\x88\x80\x80\x80", 0, 0, 0, 0},
        {"FE", "\xFE", 0, 0, 0, 0},
        {"FF", "\xC3\xA4\xFF", 0, 0, 2, 1},
    };
    run(c, sizeof c / sizeof *c);
}

Test(utf8, cut_short)
{
    static const struct utf8_case c[] = {
        {"2 of 2 cut by the end", "ab\xC3", 0, 0, 2, 2},
        {"3 of 3 cut by the end", "\xE2\x82", 0, 0, 0, 0},
        {"4 of 4 cut by the end", "\xC3\xA4\xF0\x9F\x98", 0, 0, 2, 1},
        {"len cuts a valid sequence", "\xC3\xA4", 1, 0, 0, 0},
        {"bad second byte", "a\xC3(b", 0, 0, 1, 1},
        {"bad third byte", "\xE2\x82(", 0, 0, 0, 0},
        {"bad fourth byte", "\xF0\x9F\x98(", 0, 0, 0, 0},
        {"lead after lead", "\xE2\xE2\x82\xAC", 0, 0, 0, 0},
        {"stray continuation", "\x80", 0, 0, 0, 0},
        {"continuation after a whole character", "\xC3\xA4\xA4", 0, 0, 2, 1},
    };
    run(c, sizeof c / sizeof *c);
}

Test(utf8, nul)
{
    static const struct utf8_case c[] = {
        {"NUL refused", "a\0b", 3, 0, 1, 1},
        {"NUL after a 2-byte character", "\xC3\xA4\0", 3, 0, 2, 1},
        {"NUL allowed", "a\0b", 3, CLF_UTF8_ALLOW_NUL, V, 3},
        {"NUL allowed, a bad byte after it", "\0\xFF", 2, CLF_UTF8_ALLOW_NUL, 1, 1},
        {"only NUL", "\0", 1, 0, 0, 0},
    };
    run(c, sizeof c / sizeof *c);
}
