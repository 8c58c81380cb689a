/* test_sentences.c: clf_text_sentences, the rule texts are cut into
 * sentences by before translation (clformer_text.h): terminators before a
 * capital, a digit or a quote cut; abbreviations, initials, decimals and
 * lower case do not; newlines always cut and the gaps between spans keep
 * the text's own whitespace. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "clformer_text.h"

/* The spans of text joined with '|', and a check that they cover it with
 * only whitespace between. */
static char *cut(const char *text)
{
    struct clf_span *v = NULL;
    size_t n = 0, len = strlen(text);
    cr_assert_eq(clf_text_sentences(text, len, &v, &n), CLF_OK, "%s", clf_ctx_error(NULL));
    char *s = calloc(len + n + 1, 1);
    cr_assert_not_null(s);
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(v[i].at >= end && v[i].len > 0 && v[i].at + v[i].len <= len, "span %zu", i);
        for (size_t j = end; j < v[i].at; j++)
            cr_assert(strchr(" \t\r\n", text[j]), "byte %zu between spans of \"%s\" is '%c'", j, text, text[j]);
        if (i)
            strcat(s, "|");
        strncat(s, text + v[i].at, v[i].len);
        end = v[i].at + v[i].len;
    }
    for (size_t j = end; j < len; j++)
        cr_assert(strchr(" \t\r\n", text[j]), "byte %zu after the last span of \"%s\"", j, text);
    free(v);
    return s;
}

#define EXPECT_CUT(text, want)                                                                                   \
    do {                                                                                                         \
        char *got_ = cut(text);                                                                                  \
        cr_expect_str_eq(got_, want, "cutting \"%s\"", text);                                                    \
        free(got_);                                                                                              \
    } while (0)

Test(sentences, follow_the_rule)
{
    EXPECT_CUT("A dog runs. A cat sleeps.", "A dog runs.|A cat sleeps.");
    EXPECT_CUT("Really?! Yes… 3 men came.", "Really?!|Yes…|3 men came.");
    EXPECT_CUT("He said \"stop.\" Then he left.", "He said \"stop.\"|Then he left.");
    EXPECT_CUT("Wait. \"Who?\" she asked.", "Wait.|\"Who?\" she asked.");
    EXPECT_CUT("Ende. Über den Berg.", "Ende.|Über den Berg.");
    EXPECT_CUT("Mr. Smith met Dr. Jones. J. R. Tolkien wrote e.g. this.",
               "Mr. Smith met Dr. Jones.|J. R. Tolkien wrote e.g. this.");
    /* test_2016_flickr's line 361: dotted initials do not end a sentence */
    EXPECT_CUT("A man is walking past a large sign that says E.S.E. Electronics.",
               "A man is walking past a large sign that says E.S.E. Electronics.");
    EXPECT_CUT("The U.S. Army came. U.K. troops left.", "The U.S. Army came.|U.K. troops left.");
    EXPECT_CUT("It costs 3.50 dollars. ok. then", "It costs 3.50 dollars. ok. then");
    EXPECT_CUT("www.example.com is a site.", "www.example.com is a site.");
    EXPECT_CUT("", "");
    EXPECT_CUT("   \n\n  ", "");
    EXPECT_CUT("One.", "One.");
}

Test(sentences, keep_newlines_and_paragraphs)
{
    const char *text = "First line. Second one\n\n  A paragraph here.\tAnd more.\r\nlast";
    EXPECT_CUT(text, "First line.|Second one|A paragraph here.|And more.|last");
    struct clf_span *v = NULL;
    size_t n = 0;
    cr_assert_eq(clf_text_sentences(text, strlen(text), &v, &n), CLF_OK);
    cr_assert_eq(n, 5);
    /* what lies between the spans is the text's own */
    cr_expect_eq(v[2].at - (v[1].at + v[1].len), 4, "\"\\n\\n  \" kept between the paragraphs");
    cr_expect_eq(text[v[4].at - 1], '\n');
    cr_expect_eq(text[v[4].at - 2], '\r');
    free(v);
}
