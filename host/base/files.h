/* files.h: the library's file helpers, free of OpenCL (files.c): folders,
 * paths, reading a file whole, copying one. clf_mkdir_p and clf_file_copy
 * are public (clformer.h) and declared again here, so that host/text/
 * needs nothing from the runtime. */
#ifndef CLF_BASE_FILES_H
#define CLF_BASE_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "clformer_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mkdir -p: 0, or -1 with errno set. */
int clf_mkdir_p(const char *dir);

/* dir + "/" + name, malloc'd (caller frees); NULL when out of memory. */
char *clf_path_join(const char *dir, const char *name);

/* The whole file into *text (malloc'd, NUL-terminated, caller frees) and
 * its length into *len; refused (CLF_ERR_FORMAT) past `limit` bytes. */
clf_status clf_file_read(const char *path, size_t limit, char **text, size_t *len);
/* The same for a file that may be absent: one that does not exist sets
 * *missing, leaves *text NULL and returns CLF_OK. */
clf_status clf_file_read_opt(const char *path, size_t limit, char **text, size_t *len, bool *missing);

/* Copies a file whole to `to`, written to a temporary name and renamed
 * over it (so copying a file onto itself leaves it as it was). */
clf_status clf_file_copy(const char *from, const char *to);

/* Case-insensitive substring search (device and platform names). */
bool clf_contains_nocase(const char *hay, const char *needle);

#ifdef __cplusplus
}
#endif

#endif
