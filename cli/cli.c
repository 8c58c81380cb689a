/* cli.c: helpers shared by the subcommands (see cli.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <clformer/advanced/files.h>
#include "cli.h"

static const char *gemm_request;  /* --gemm, for cli_open */

bool cli_gemm_take(int *argc, char **argv)
{
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        if (strcmp(argv[i], "--gemm")) {
            argv[out++] = argv[i];
            continue;
        }
        if (i + 1 >= *argc || (strcmp(argv[i + 1], "host") && strcmp(argv[i + 1], "clblast"))) {
            fprintf(stderr, "clformer: --gemm takes host (the host's BLAS, CPU devices) or clblast%s%s\n",
                    i + 1 < *argc ? ", not " : "", i + 1 < *argc ? argv[i + 1] : "");
            return false;
        }
        gemm_request = argv[++i];
    }
    *argc = out;
    argv[out] = NULL;
    return true;
}

const char *cli_gemm(void) { return gemm_request; }

void cli_gemm_describe(const clf_ctx_t *ctx, char *out, size_t len)
{
    if (clf_ctx_gemm(ctx) == CLF_GEMM_HOST)
        snprintf(out, len, "host BLAS (OpenBLAS, %d threads%s)", clf_blas_threads(),
                 clf_gemm_f32_onednn() ? "; oneDNN for the large float32 products" : "");
    else
        snprintf(out, len, "CLBlast");
}

clf_ctx_t *cli_open(const char *device)
{
    clf_ctx_t *ctx = NULL;
    clf_status st = clf_ctx_init(&ctx, device);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "opening the device");
        return NULL;
    }
    enum clf_gemm_backend b;
    if (gemm_request &&
        ((st = clf_gemm_backend_choose(clf_ctx_device(ctx), gemm_request, &b)) || (st = clf_ctx_gemm_set(ctx, b)))) {
        char what[64];
        snprintf(what, sizeof what, "--gemm %s", gemm_request);
        cli_fail(NULL, st, what);
        clf_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void cli_clblast_version(char *out, size_t len)
{
    out[0] = 0;
    FILE *p = popen("dpkg-query -W -f='${Version}' libclblast1 2>/dev/null", "r");
    if (!p)
        return;
    if (!fgets(out, (int)len, p))
        out[0] = 0;
    pclose(p);
    out[strcspn(out, "\n")] = 0;
}

int cli_fail(const clf_ctx_t *ctx, clf_status st, const char *what)
{
    fprintf(stderr, "clformer: %s: %s: %s\n", what, clf_status_str(st), clf_ctx_error(ctx));
    return 1;
}

int cli_fail_memory(const clf_ctx_t *ctx, clf_status st, const char *what, const char *flags)
{
    if (st != CLF_ERR_MEMORY)
        return cli_fail(ctx, st, what);
    fprintf(stderr, "clformer: %s: %s: %s (%s)\n", what, clf_status_str(st), clf_ctx_error(ctx), flags);
    return 1;
}

int cli_make_folder_of(const char *cmd, const char *out)
{
    if (clf_mkdir_parent(out)) {
        fprintf(stderr, "clformer %s: cannot create the folder of -o %s: %s\n", cmd, out, strerror(errno));
        return 1;
    }
    return 0;
}

bool cli_opt(int argc, char **argv, int *i, const char *name, const char **value, bool *bad)
{
    if (strcmp(argv[*i], name))
        return false;
    if (*i + 1 >= argc) {
        fprintf(stderr, "clformer: %s needs a value\n", name);
        *bad = true;
        return true;
    }
    *value = argv[++*i];
    return true;
}

bool cli_number(const char *name, const char *text, double lo, double hi, bool integer, double *out)
{
    const char *want = integer ? "an integer" : "a number";
    char *end = NULL;
    errno = 0;
    double v = integer ? (double)strtoll(text, &end, 10) : strtod(text, &end);
    bool ok = text && *text && !isspace((unsigned char)*text) && end && !*end && errno == 0 && v == v && v >= lo &&
              v <= hi;
    if (!ok) {
        if (text && *text && !isspace((unsigned char)*text) && end && !*end && errno == 0 && v == v)
            fprintf(stderr, "clformer: %s wants %s from %.17g to %.17g, not %s\n", name, want, lo, hi, text);
        else
            fprintf(stderr, "clformer: %s wants %s, not '%s'\n", name, want, text ? text : "");
        return false;
    }
    *out = v;
    return true;
}

bool cli_long(const char *name, const char *text, long lo, long hi, long *out)
{
    double v;
    if (!cli_number(name, text, (double)lo, (double)hi, true, &v))
        return false;
    *out = strtol(text, NULL, 10);
    return true;
}

bool cli_opt_number(int argc, char **argv, int *i, const char *name, double lo, double hi, bool integer,
                    double *out, bool *bad)
{
    const char *v = NULL;
    if (!cli_opt(argc, argv, i, name, &v, bad))
        return false;
    double x;
    if (v && !*bad) {
        if (cli_number(name, v, lo, hi, integer, &x))
            *out = x;
        else
            *bad = true;
    }
    return true;
}
