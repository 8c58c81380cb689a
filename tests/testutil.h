/* testutil.h: helpers for the Criterion tests: a context on the test
 * device, tolerance checks with NaN/inf handling, and random data. */
#ifndef CLF_TESTUTIL_H
#define CLF_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "clformer.h"

/* Criterion's per-test time limit in seconds, scaled for slow builds
 * (CMake sets CLF_TEST_TIME_SCALE to 4 under AddressSanitizer). */
#ifndef CLF_TEST_TIME_SCALE
#define CLF_TEST_TIME_SCALE 1
#endif
#define TU_TIMEOUT(seconds) ((seconds) * CLF_TEST_TIME_SCALE)

/* Opens the device CLF_DEVICE names (default device otherwise); fails the
 * test with the library's message if it cannot. */
clf_ctx_t *tu_ctx(void);
/* Gives the library's setting name the value (NULL: unset) for this
 * process through clf_setting_set, never the environment: PoCL's worker
 * threads read the environment while kernels of an earlier call compile
 * and run, and setenv may free the array they read. */
void tu_setting(const char *name, const char *value);
/* The device's own description, whatever CLF_DEVICE_LIMITS the run has
 * (unsets it). */
struct clf_device_info tu_own_device(void);
/* The calls of kernel (or GEMM) `name` in a profile report (one entry per
 * name, clf_ctx_profile_report); 0 where it did not run. */
unsigned tu_profile_calls(const struct clf_profile_entry *p, size_t n, const char *name);

/* Compares got against want elementwise with |g - w| ≤ atol + rtol·|w|.
 * NaN matches only NaN and an infinity only the same infinity. On the
 * first mismatch it reports index and values through Criterion and
 * returns false. */
bool tu_close(const char *what, const float *got, const float *want, size_t n, double atol, double rtol);

/* Uniform floats in [lo, hi) from a seed (splitmix64). */
void tu_fill(float *x, size_t n, unsigned long long seed, float lo, float hi);

/* Allocates a device tensor holding the given host data (1-D of n). */
clf_tensor tu_upload(clf_ctx_t *ctx, const float *x, size_t n);
/* The same for int32 data: an i32 tensor (n). */
clf_tensor tu_upload_ints(clf_ctx_t *ctx, const int32_t *v, size_t n);
/* Downloads n floats of t into a malloc'd array. */
float *tu_download(clf_ctx_t *ctx, const clf_tensor *t, size_t n);

/* Creates an empty temporary directory and returns its path (static); it
 * is removed, with what it holds, when the test's process exits. */
const char *tu_tmpdir(void);

/* Runs a shell command with its stderr into the file err (stdout dropped)
 * and returns its exit status (-1 if it did not exit). */
int tu_run(const char *cmd, const char *err);
/* A whole file as a malloc'd string ("" for a missing file). */
char *tu_slurp(const char *path);
/* A file that must exist, as bytes: *out is malloc'd (one spare byte);
 * returns the size. */
size_t tu_file_bytes(const char *path, unsigned char **out);
/* Writes n bytes to path (fails the test if it cannot). */
void tu_write_bytes(const char *path, const unsigned char *b, size_t n);
/* DIR/NAME.src and DIR/NAME.tgt: n lines of a copy task in eight words, the
 * same on both sides (seed chooses them). */
void tu_write_copy_corpus(const char *dir, const char *name, int n, unsigned seed);

/* Fixture files of tests/fixtures (make_parity.py, make_marian.py). A
 * .parity file: magic "CLFPARIT", u32 version 1, u32 count, then per entry
 * u32 name length, name, u32 ndim, u64 dims, float32 data (LE). */
struct tu_entry {
    char name[128];
    size_t numel;
    float *data;
};

struct tu_parity {
    struct tu_entry *e;
    unsigned n;
};
void tu_parity_read(const char *path, struct tu_parity *p);
/* The entry called name (fails the test when missing). */
const struct tu_entry *tu_parity_get(const struct tu_parity *p, const char *name);
/* An entry of ids stored as floats, as int32 (malloc'd). */
int32_t *tu_entry_ids(const struct tu_entry *e);
void tu_parity_free(struct tu_parity *p);
/* Splits line at tabs in place into at most max fields; returns the count. */
int tu_fields(char *line, char **f, int max);
/* "3 17 0" -> ids (malloc'd, may be empty). */
int32_t *tu_parse_ids(const char *s, size_t *n);
bool tu_same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb);
/* ids as "3 17 0" (malloc'd). */
char *tu_ids_str(const int32_t *ids, size_t n);

#endif
