/* clformer/advanced/json.h: the one JSON reader of the library and its tools
 * (RFC 8259): the whole text parsed into a tree of nodes. The library reads
 * its tuning files, safetensors headers and checkpoint configs with it; the
 * tools read benchmark reports and peer files. Numbers are doubles, \u
 * escapes are decoded to UTF-8, nesting stops at 64 levels. */
#ifndef CLFORMER_JSON_H
#define CLFORMER_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

enum clf_json_type {
    CLF_JSON_NULL,
    CLF_JSON_BOOL,
    CLF_JSON_NUMBER,
    CLF_JSON_STRING,
    CLF_JSON_ARRAY,
    CLF_JSON_OBJECT,
};

struct clf_json {
    enum clf_json_type type;
    bool boolean;
    double number;
    char *string;            /* STRING: the decoded text (UTF-8), NUL-terminated */
    size_t length;           /* STRING: its bytes; more than strlen when it holds a \u0000 */
    size_t count;            /* ARRAY, OBJECT: number of members */
    struct clf_json *items;  /* ARRAY, OBJECT: the members' values */
    char **keys;             /* OBJECT: the members' names */
};

/* Parses text[0..len) into *out (free with clf_json_free). On failure
 * returns false with "line L, column C: <what was expected>" in err. */
bool clf_json_parse(const char *text, size_t len, struct clf_json *out, char *err, size_t errlen);
void clf_json_free(struct clf_json *j);

/* Whether text[0..len) is one JSON value; if not, err says where and why. */
bool clf_json_check(const char *text, size_t len, char *err, size_t errlen);

/* The member `key` of an object, or NULL (also when j is not an object);
 * of a name given twice, the last (as Python and JavaScript read it). A
 * member name holding U+0000 is refused by the parser. */
const struct clf_json *clf_json_get(const struct clf_json *j, const char *key);
/* The member's string, or NULL when absent or not a string. */
const char *clf_json_str(const struct clf_json *j, const char *key);
/* The member's number into *out; false when absent or not a number. */
bool clf_json_num(const struct clf_json *j, const char *key, double *out);

/* Writes s as a JSON string literal, quotes included (", \ and control
 * characters escaped): the one writer for the library's files and the
 * tools' and benchmarks' JSON. */
void clf_json_write_str(FILE *f, const char *s);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
