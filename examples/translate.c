/* translate.c: translates stdin with a model through libclformer's
 * translator, as `clformer translate --model CKPT --device D` does with
 * its defaults. Usage: translate CKPT [DEVICE: an index, a name, gpu, cpu
 * or auto]. Build: cc translate.c $(pkg-config --cflags --libs clformer) */
#include <clformer/clformer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return fprintf(stderr, "usage: %s CKPT [DEVICE]\n", argv[0]), 2;
    const char *device = argc > 2 && strcmp(argv[2], "auto") ? argv[2] : NULL;  /* NULL: CLF_DEVICE or the best */
    struct clf_lines in;
    clf_ctx_t *ctx = NULL;
    clf_translator_t *t = NULL;
    clf_status st = clf_lines_read(&in, "-");
    if (st != CLF_OK)
        return fprintf(stderr, "stdin: %s\n", clf_ctx_error(NULL)), 1;
    char **out = calloc(in.n ? in.n : 1, sizeof *out);
    if (!out)
        return fprintf(stderr, "out of memory\n"), 1;
    if ((st = clf_ctx_init(&ctx, device)) == CLF_OK && (st = clf_translator_init(ctx, argv[1], NULL, &t)) == CLF_OK) {
        struct clf_translate_opts o = clf_translator_opts(t);  /* the checkpoint's defaults */
        st = clf_translator_translate(t, (const char *const *)in.line, in.n, &o, CLF_BATCHING_DEFAULT, out, NULL,
                                      NULL, NULL);
    }
    if (st != CLF_OK)
        fprintf(stderr, "%s: %s\n", clf_status_str(st), clf_ctx_error(ctx));
    for (size_t i = 0; st == CLF_OK && i < in.n; i++)
        printf("%s\n", out[i]);
    for (size_t i = 0; i < in.n; i++)
        free(out[i]);
    free(out);
    clf_translator_free(t);
    clf_ctx_free(ctx);
    clf_lines_free(&in);
    return st != CLF_OK;
}
