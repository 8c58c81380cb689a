/* files.h: the library's file helpers, free of OpenCL (files.c): folders,
 * paths, reading a file whole, and the one way to write one, so that a
 * reader sees the old file or the new one, never half of one: a temporary
 * name beside it, flushed to disk and renamed over it. What the clformer
 * command's tools call (clf_mkdir_p, clf_mkdir_parent, clf_file_copy,
 * struct clf_file_out) is public, clformer/advanced/files.h, declared
 * there once; the rest is the library's own. */
#ifndef CLF_BASE_FILES_H
#define CLF_BASE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "clformer/advanced/files.h"
#include "clformer/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dir + "/" + name, malloc'd (caller frees); NULL when out of memory. */
char *clf_path_join(const char *dir, const char *name);

/* The whole file into *text (malloc'd, NUL-terminated, caller frees) and
 * its length into *len; refused (CLF_ERR_FORMAT) past `limit` bytes. */
clf_status clf_file_read(const char *path, size_t limit, char **text, size_t *len);
/* The same for a file that may be absent: one that does not exist sets
 * *missing, leaves *text NULL and returns CLF_OK. */
clf_status clf_file_read_opt(const char *path, size_t limit, char **text, size_t *len, bool *missing);

/* Writes len bytes of data as the file `path`, atomically as above (the
 * stream form, struct clf_file_out, is public): on failure ("cannot write
 * PATH: ...", errno kept) the old file, if any, is as it was and no
 * temporary stays behind. */
clf_status clf_file_write_atomic(const char *path, const void *data, size_t len);

/* Case-insensitive substring search (device and platform names). */
bool clf_contains_nocase(const char *hay, const char *needle);

#ifdef __cplusplus
}
#endif

#endif
