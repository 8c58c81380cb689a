/* files.h: the library's file helpers, free of OpenCL (files.c): folders,
 * paths, reading a file whole, and the one way to write one, so that a
 * reader sees the old file or the new one, never half of one: a temporary
 * name beside it, flushed to disk and renamed over it. clf_mkdir_p and
 * clf_file_copy are public (clformer.h) and declared again here, so that
 * host/text/ needs nothing from the runtime; tools/ and bench/ include
 * this header too. */
#ifndef CLF_BASE_FILES_H
#define CLF_BASE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "clformer_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The size of a path buffer: Linux's PATH_MAX. */
#define CLF_PATH_MAX 4096

/* mkdir -p: 0, or -1 with errno set. Exported, as clformer.h declares it
 * (files.c sees only this declaration). */
#pragma GCC visibility push(default)
int clf_mkdir_p(const char *dir);
#pragma GCC visibility pop
/* mkdir -p of the folder a file path names (nothing for a path with no
 * folder, or one in /): 0, or -1 with errno set. */
int clf_mkdir_parent(const char *path);

/* dir + "/" + name, malloc'd (caller frees); NULL when out of memory. */
char *clf_path_join(const char *dir, const char *name);

/* The whole file into *text (malloc'd, NUL-terminated, caller frees) and
 * its length into *len; refused (CLF_ERR_FORMAT) past `limit` bytes. */
clf_status clf_file_read(const char *path, size_t limit, char **text, size_t *len);
/* The same for a file that may be absent: one that does not exist sets
 * *missing, leaves *text NULL and returns CLF_OK. */
clf_status clf_file_read_opt(const char *path, size_t limit, char **text, size_t *len, bool *missing);

/* Writes len bytes of data as the file `path`, atomically as above: on
 * failure ("cannot write PATH: ...", errno kept) the old file, if any,
 * is as it was and no temporary stays behind. */
clf_status clf_file_write_atomic(const char *path, const void *data, size_t len);

/* The same for a file written as a stream. clf_file_out_open creates the
 * temporary beside `path` and opens it as o->f, for fprintf and fwrite.
 * clf_file_out_close closes it and, when `ok` (the caller's writes
 * succeeded) and the flush succeeds, renames it over `path`; otherwise it
 * removes it and fails as clf_file_write_atomic does. Call it once after
 * every successful open; a failed open leaves nothing to close. */
struct clf_file_out {
    FILE *f;
    char path[CLF_PATH_MAX];
    char tmp[CLF_PATH_MAX];
};
clf_status clf_file_out_open(struct clf_file_out *o, const char *path);
clf_status clf_file_out_close(struct clf_file_out *o, bool ok);

/* Copies a file whole to `to` with clf_file_write_atomic (so copying a
 * file onto itself leaves it as it was). Exported, as clf_mkdir_p. */
#pragma GCC visibility push(default)
clf_status clf_file_copy(const char *from, const char *to);
#pragma GCC visibility pop

/* Case-insensitive substring search (device and platform names). */
bool clf_contains_nocase(const char *hay, const char *needle);

#ifdef __cplusplus
}
#endif

#endif
