/* cli.c: helpers shared by the subcommands (see cli.h). */
#include <string.h>

#include "cli.h"

clf_ctx_t *cli_open(const char *device)
{
    clf_ctx_t *ctx = NULL;
    clf_status st = clf_ctx_init(&ctx, device);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "opening the device");
        return NULL;
    }
    return ctx;
}

int cli_fail(const clf_ctx_t *ctx, clf_status st, const char *what)
{
    fprintf(stderr, "clformer: %s: %s: %s\n", what, clf_status_str(st), clf_ctx_error(ctx));
    return 1;
}

void cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
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
