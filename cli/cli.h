/* cli.h: what the subcommands share: opening the device the user asked
 * for, reporting errors, and small option-parsing helpers. */
#ifndef CLF_CLI_H
#define CLF_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <clformer/advanced/clock.h>
#include <clformer/advanced/rand.h>
#include <clformer/advanced.h>
#include <clformer/advanced/json.h>  /* clf_json_write_str for the tools' JSON */

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

/* The one clock (base/clock.h: clf_now) and the one stream of made-up
 * data (base/rand.h: clf_rand24, clf_uniform, clf_rand_fill) serve the
 * library, the tools and the benchmarks alike. */

/* The installed CLBlast package's version (dpkg's libclblast1), or "" when
 * it cannot be told: recorded with tuning results and benchmarks. */
void cli_clblast_version(char *out, size_t len);

/* Prints "clformer: <what>: <status>: <message>" to stderr, returns 1. */
int cli_fail(const clf_ctx_t *ctx, clf_status st, const char *what);
/* cli_fail for a call the device's memory may refuse: the library names
 * the limit it hit and what to lower, the command its own flags that
 * lower it, so a CLF_ERR_MEMORY message ends with " (<flags>)". */
int cli_fail_memory(const clf_ctx_t *ctx, clf_status st, const char *what, const char *flags);

/* Makes the folder of the file path `out` (-o OUT) if it is missing, as
 * train makes --out; returns 0, or 1 after printing why not, naming cmd. */
int cli_make_folder_of(const char *cmd, const char *out);

/* If argv[*i] is `name`, stores the next argument in *value, advances *i
 * and returns true; a missing value prints a usage error and sets *bad. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char **value, bool *bad);

/* Reads an option's value as a whole number (integer: decimal digits with
 * an optional sign; else anything strtod takes, not NaN) within [lo, hi]
 * into *out; on anything else (trailing text, an empty string, out of
 * range) prints "clformer: NAME wants …, not 'TEXT'" and returns false. */
bool cli_number(const char *name, const char *text, double lo, double hi, bool integer, double *out);
/* cli_opt for a numeric option: when argv[*i] is name, reads its value
 * with cli_number into *out (left as it was, and *bad set, when missing
 * or malformed) and returns true. */
bool cli_opt_number(int argc, char **argv, int *i, const char *name, double lo, double hi, bool integer,
                    double *out, bool *bad);
/* The same for a long in [lo, hi]. */
bool cli_long(const char *name, const char *text, long lo, long hi, long *out);

#endif
