/* lines.c: reading a text file whole into lines (clf_lines_read), plain or
 * gzip through zlib, with strict UTF-8 validation that names the file, the
 * line and the byte column of the first bad byte. */
#define _POSIX_C_SOURCE 200809L /* dup */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/status.h"
#include "clformer_text.h"
#include "text/text_internal.h"

/* Reads the whole stream; *buf is malloc'd with one spare byte. */
static clf_status read_all(gzFile gz, const char *path, char **buf, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap);
    if (!p) return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
    for (;;) {
        if (cap - n < (1 << 15)) {
            char *q = realloc(p, cap * 2);
            if (!q) {
                free(p);
                return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
            }
            p = q;
            cap *= 2;
        }
        int got = gzread(gz, p + n, (unsigned)(cap - n - 1));
        if (got < 0) {
            int err;
            const char *msg = gzerror(gz, &err);
            free(p);
            return clf_error_set(NULL, err == Z_ERRNO ? CLF_ERR_IO : CLF_ERR_FORMAT,
                                 "%s: read error: %s", path,
                                 err == Z_ERRNO ? strerror(errno) : msg);
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    *buf = p;
    *len = n;
    return CLF_OK;
}

clf_status clf_lines_read(struct clf_lines *out, const char *path)
{
    clf_status st = CLF_OK;
    char *text = NULL;
    size_t len = 0;
    gzFile gz = NULL;
    if (!out || !path) return clf_error_set(NULL, CLF_ERR_ARG, "clf_lines_read: NULL argument");
    memset(out, 0, sizeof *out);

    const char *name = strcmp(path, "-") ? path : "<stdin>";
    if (!strcmp(path, "-")) {
        int fd = dup(0);
        gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
        if (!gz && fd >= 0) close(fd);
    } else {
        errno = 0;
        gz = gzopen(path, "rb");
    }
    if (!gz)
        return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot open: %s", name,
                             strerror(errno ? errno : ENOENT));
    st = read_all(gz, name, &text, &len);
    gzclose(gz);
    if (st != CLF_OK) return st;

    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += text[i] == '\n';
    if (len && text[len - 1] != '\n') n++;
    char **line = malloc((n ? n : 1) * sizeof *line);
    if (!line) {
        st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", name);
        goto fail;
    }
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        char *s = text + at;
        char *nl = memchr(s, '\n', len - at);
        size_t l = nl ? (size_t)(nl - s) : len - at;
        at += l + 1;
        size_t bad = clf_utf8_validate(s, l, 0, NULL);
        if (bad != CLF_UTF8_VALID) {
            st = clf_error_set(NULL, CLF_ERR_FORMAT,
                               "%s:%zu: %s at byte column %zu (byte 0x%02X)", name, k + 1,
                               s[bad] ? "invalid UTF-8" : "NUL byte", bad + 1,
                               (unsigned char)s[bad]);
            free(line);
            goto fail;
        }
        if (l && s[l - 1] == '\r') l--;
        s[l] = '\0';
        line[k] = s;
    }
    if (len == 0) text[0] = '\0';
    out->n = n;
    out->line = line;
    out->text = text;
    return CLF_OK;
fail:
    free(text);
    return st;
}

void clf_lines_free(struct clf_lines *lines)
{
    if (!lines) return;
    free(lines->line);
    free(lines->text);
    memset(lines, 0, sizeof *lines);
}
