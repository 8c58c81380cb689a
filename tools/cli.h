/* cli.h: what the subcommands share: opening the device the user asked
 * for, reporting errors, and small option-parsing helpers. */
#ifndef CLF_CLI_H
#define CLF_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "clformer.h"

/* Opens the device named by --device (may be NULL: CLF_DEVICE, then the
 * default) with the GEMM backend --gemm asked for (else CLF_GEMM, then the
 * device's default). Prints the error and returns NULL on failure. */
clf_ctx_t *cli_open(const char *device);

/* Takes every `--gemm host|clblast` out of argv (main calls it for the
 * commands that take --device, so each of them accepts it) and keeps the
 * last for cli_open. Returns false, having printed why, on a missing or
 * unknown value. */
bool cli_gemm_take(int *argc, char **argv);
/* The --gemm value taken, or NULL. */
const char *cli_gemm(void);

/* "host BLAS (OpenBLAS, 2 threads)" or "CLBlast": the backend in force. */
void cli_gemm_describe(const clf_ctx_t *ctx, char *out, size_t len);

/* Seconds on the monotonic clock: the one clock of the tools and benchmarks. */
double cli_now(void);

/* The one stream of made-up data of the tools and benchmarks: a 32-bit
 * LCG (Numerical Recipes' constants). cli_rand24 steps *s and returns its
 * high 24 bits, cli_uniform those as a float in [0, 1). Reproducible from
 * the seed, which is all test inputs need. */
static inline unsigned cli_rand24(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}
static inline float cli_uniform(unsigned *s)
{
    return (float)(cli_rand24(s) * (1.0 / 16777216.0));
}
/* x[i] = (uniform - 0.5)·scale for n values from seed. */
void cli_fill_random(float *x, size_t n, unsigned seed, float scale);

/* The installed CLBlast package's version (dpkg's libclblast1), or "" when
 * it cannot be told: recorded with tuning results and benchmarks. */
void cli_clblast_version(char *out, size_t len);

/* Prints "clformer: <what>: <status>: <message>" to stderr, returns 1. */
int cli_fail(const clf_ctx_t *ctx, clf_status st, const char *what);

/* Writes s as a JSON string literal (with quotes). */
void cli_json_str(FILE *f, const char *s);

/* If argv[*i] is `name`, stores the next argument in *value, advances *i
 * and returns true; a missing value prints a usage error and sets *bad. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char **value, bool *bad);

/* The update numbers of the ckpt-<step>.safetensors files in dir, sorted
 * ascending, into *steps (malloc'd, caller frees). Returns the count, 0 when
 * there are none, -1 when dir cannot be read. */
int cli_checkpoints(const char *dir, long **steps);

#endif
