/* json_out.c: see json_out.h. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>

#include <clformer/advanced/json.h>
#include "json_out.h"

void cli_json_init(struct cli_json *w, FILE *f, bool compact)
{
    *w = (struct cli_json){.f = f, .compact = compact};
}

void cli_json_key(struct cli_json *w, const char *key)
{
    if (w->more[w->depth])
        fputs(w->brk || w->compact ? "," : ", ", w->f);
    if (w->brk)
        fputs(w->brk, w->f);
    w->brk = NULL;
    w->more[w->depth] = true;
    if (key) {
        clf_json_write_str(w->f, key);
        fputs(w->compact ? ":" : ": ", w->f);
    }
}

static void begin(struct cli_json *w, const char *key, char c)
{
    cli_json_key(w, key);
    fputc(c, w->f);
    assert(w->depth + 1 < CLI_JSON_DEPTH);
    w->close[++w->depth] = c == '{' ? '}' : ']';
    w->more[w->depth] = false;
}

void cli_json_obj(struct cli_json *w, const char *key) { begin(w, key, '{'); }
void cli_json_arr(struct cli_json *w, const char *key) { begin(w, key, '['); }

void cli_json_end(struct cli_json *w)
{
    assert(w->depth > 0);
    if (w->brk)
        fputs(w->brk, w->f);
    w->brk = NULL;
    fputc(w->close[w->depth--], w->f);
}

void cli_json_str(struct cli_json *w, const char *key, const char *s)
{
    cli_json_key(w, key);
    if (s)
        clf_json_write_str(w->f, s);
    else
        fputs("null", w->f);
}

void cli_json_bool(struct cli_json *w, const char *key, bool b)
{
    cli_json_key(w, key);
    fputs(b ? "true" : "false", w->f);
}

void cli_json_null(struct cli_json *w, const char *key)
{
    cli_json_key(w, key);
    fputs("null", w->f);
}

void cli_json_num(struct cli_json *w, const char *key, const char *fmt, ...)
{
    cli_json_key(w, key);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(w->f, fmt, ap);
    va_end(ap);
}

void cli_json_real(struct cli_json *w, const char *key, double x)
{
    if (isfinite(x))
        cli_json_num(w, key, "%.6g", x);
    else
        cli_json_null(w, key);
}

void cli_json_raw(struct cli_json *w, const char *key, const char *json)
{
    cli_json_key(w, key);
    fputs(json, w->f);
}

void cli_json_break(struct cli_json *w, const char *text) { w->brk = text; }
