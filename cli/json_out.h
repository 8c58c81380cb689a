/* json_out.h: the tools' JSON writer, streamed to a FILE: objects, arrays,
 * keys, strings (escaped by clf_json_write_str), numbers in the format the
 * caller names, with the commas placed for it. Two spacings: the reports'
 * `{"key": 1, "other": [2, 3]}` and log.jsonl's compact `{"key":1}`. A
 * line break before an element (cli_json_break) lays out long reports;
 * the element's comma comes before it. */
#ifndef CLF_JSON_OUT_H
#define CLF_JSON_OUT_H

#include <stdbool.h>
#include <stdio.h>

#define CLI_JSON_DEPTH 16

struct cli_json {
    FILE *f;
    bool compact;
    int depth;
    bool more[CLI_JSON_DEPTH];   /* an element was written at this depth */
    char close[CLI_JSON_DEPTH];  /* what ends the object or array at this depth */
    const char *brk;             /* written before the next element, or the end */
};

void cli_json_init(struct cli_json *w, FILE *f, bool compact);

/* Each value takes a key inside an object and NULL inside an array or at
 * the top. */
void cli_json_obj(struct cli_json *w, const char *key);
void cli_json_arr(struct cli_json *w, const char *key);
/* Closes the innermost object or array. */
void cli_json_end(struct cli_json *w);

void cli_json_str(struct cli_json *w, const char *key, const char *s);  /* NULL: null */
void cli_json_bool(struct cli_json *w, const char *key, bool b);
void cli_json_null(struct cli_json *w, const char *key);
/* A number as fmt prints it (one conversion: "%d", "%zu", "%.6g"). */
void cli_json_num(struct cli_json *w, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A double as "%.6g", or null when it is not finite. */
void cli_json_real(struct cli_json *w, const char *key, double x);
/* A value that is JSON already (a peer's record). */
void cli_json_raw(struct cli_json *w, const char *key, const char *json);
/* The comma (or break) and key of a value the caller then writes itself,
 * whole (a benchmark's record, from its own writer). */
void cli_json_key(struct cli_json *w, const char *key);

/* The next element (or the end) starts after `text`, a line break and its
 * indent, in place of the space after its comma. */
void cli_json_break(struct cli_json *w, const char *text);

#endif
