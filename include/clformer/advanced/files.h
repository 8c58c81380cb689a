/* clformer/advanced/files.h: the file helpers a program built over the
 * library needs to write its outputs as the library writes its own (the
 * clformer command's tools and benchmarks use them): folders made whole,
 * and files written to a temporary name beside them, flushed and renamed,
 * so that a reader sees the old file or the new one, never half of one.
 * No OpenCL; advanced tier, so it may change between minor versions
 * (docs/c-api.md). The library's own helpers are host/base/files.h. */
#ifndef CLFORMER_ADVANCED_FILES_H
#define CLFORMER_ADVANCED_FILES_H

#include <stdbool.h>
#include <stdio.h>

#include "clformer/status.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* The size of a path buffer: Linux's PATH_MAX. */
#define CLF_PATH_MAX 4096

/* mkdir -p: 0, or -1 with errno set. */
int clf_mkdir_p(const char *dir);
/* mkdir -p of the folder a file path names (nothing for a path with no
 * folder, or one in /): 0, or -1 with errno set. */
int clf_mkdir_parent(const char *path);

/* A file written as a stream. clf_file_out_open creates the temporary
 * beside `path` and opens it as o->f, for fprintf and fwrite.
 * clf_file_out_close closes it and, when `ok` (the caller's writes
 * succeeded) and the flush succeeds, renames it over `path`; otherwise it
 * removes it and fails ("cannot write PATH: ...", errno kept), leaving the
 * old file, if any, as it was. Call it once after every successful open;
 * a failed open leaves nothing to close. */
struct clf_file_out {
    FILE *f;
    char path[CLF_PATH_MAX];
    char tmp[CLF_PATH_MAX];
};
clf_status clf_file_out_open(struct clf_file_out *o, const char *path);
clf_status clf_file_out_close(struct clf_file_out *o, bool ok);

/* Copies a file whole to `to`, written as above (so copying a file onto
 * itself leaves it as it was). */
clf_status clf_file_copy(const char *from, const char *to);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
