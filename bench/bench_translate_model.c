/* bench_translate_model.c: `clformer bench translate --model CKPT --src FILE
 * --ref FILE`: speed and quality on one row. The first --lines lines of
 * FILE (200; 64 with --quick) translated with a trained checkpoint and its
 * tokenizer (clf_translator_*, as `clformer translate` does: batches of
 * --batch, continuous), greedy and with beam --beam, each timed whole
 * (after a warm-up on a few lines that compiles the kernels) and scored
 * against the same lines of --ref with corpus BLEU (sacreBLEU's 13a,
 * clf_bleu_corpus) and chrF2 (sacreBLEU's defaults, clf_chrf_corpus). The report's rows say "weights": "model" in the
 * header's settings. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include <clformer/text.h>
#include <clformer/advanced.h>

struct model_result {
    const char *search;
    int beam;
    double seconds, bleu, chrf;
};

struct model_record {
    struct measure_device dev;
    char model[160], compute[16];
    size_t lines;
    int batch;
    struct model_result r[2];
    struct bench_memory mem;
};

static void model_json(FILE *f, const void *p)
{
    const struct model_record *t = p;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "translate");
    measure_device_json(&w, &t->dev);
    cli_json_str(&w, "weights", "model");
    cli_json_num(&w, "lines", "%zu", t->lines);
    cli_json_arr(&w, "results");
    for (int k = 0; k < 2; k++) {
        const struct model_result *x = &t->r[k];
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "search", x->search);
        cli_json_str(&w, "model", t->model);  /* in the case's name: never lined up with random weights */
        cli_json_num(&w, "beam", "%d", x->beam);
        cli_json_num(&w, "seconds", "%.3f", x->seconds);
        cli_json_num(&w, "sentences_per_s", "%.2f", (double)t->lines / x->seconds);
        cli_json_num(&w, "bleu", "%.2f", x->bleu);
        cli_json_num(&w, "chrf", "%.2f", x->chrf);
        cli_json_end(&w);
    }
    cli_json_end(&w);
    bench_memory_json(&w, &t->mem);
    cli_json_end(&w);
}

static void model_table(FILE *f, const void *p)
{
    const struct model_record *t = p;
    fprintf(f, "translation with %s (compute type %s), %zu lines in batches of %d, on %s\n", t->model, t->compute,
            t->lines, t->batch, t->dev.info.device_name);
    fprintf(f, "  %-8s %8s %12s %7s %7s\n", "search", "seconds", "sentences/s", "BLEU", "chrF");
    for (int k = 0; k < 2; k++)
        fprintf(f, "  %-6s%2d %8.2f %12.2f %7.2f %7.2f\n", t->r[k].search, t->r[k].beam, t->r[k].seconds,
                (double)t->lines / t->r[k].seconds, t->r[k].bleu, t->r[k].chrf);
    fprintf(f, "  memory: %.1f MiB of device buffers at most, %.1f MiB resident at most\n", t->mem.device_peak_mib,
            t->mem.max_rss_mib);
}

static void free_outputs(char **out, size_t n)
{
    for (size_t i = 0; out && i < n; i++)
        free(out[i]);
}

int bench_translate_model(const struct bench_model_opts *mo, struct bench_result *out)
{
    if (!mo->src || !mo->ref) {
        fprintf(stderr, "clformer bench translate: --model wants --src FILE and --ref FILE (its references)\n");
        return 2;
    }
    struct bench_memory mem;
    bench_memory_begin(&mem);
    struct clf_lines src = {0}, ref = {0};
    clf_status st;
    if ((st = clf_lines_read(&src, mo->src)) || (st = clf_lines_read(&ref, mo->ref))) {
        fprintf(stderr, "clformer bench translate: %s\n", clf_ctx_error(NULL));
        clf_lines_free(&src);
        clf_lines_free(&ref);
        return 1;
    }
    size_t n = src.n < mo->lines ? src.n : mo->lines;
    if (n == 0 || ref.n < n) {
        fprintf(stderr, "clformer bench translate: --src %s has %zu lines and --ref %s %zu: want as many, at least 1\n",
                mo->src, src.n, mo->ref, ref.n);
        clf_lines_free(&src);
        clf_lines_free(&ref);
        return 2;
    }
    clf_ctx_t *ctx = cli_open(mo->device);
    clf_translator_t *t = NULL;
    char **hyp = calloc(n, sizeof *hyp);
    struct model_record *rec = calloc(1, sizeof *rec);
    int rc = 1;
    if (!ctx || !hyp || !rec)
        goto done;
    if ((st = clf_translator_init(ctx, mo->model, NULL, &t)) || (st = clf_translator_compute_set(t, mo->compute))) {
        cli_fail(ctx, st, "--model");
        goto done;
    }
    struct clf_batching b = CLF_BATCHING_DEFAULT;
    b.sentences = mo->batch;
    rec->r[0] = (struct model_result){.search = "greedy", .beam = 1};
    rec->r[1] = (struct model_result){.search = "beam", .beam = mo->beam};
    for (int k = 0; k < 2; k++) {
        struct clf_translate_opts o = clf_translator_opts(t);
        o.greedy = k == 0;
        o.beam = rec->r[k].beam;
        o.nbest = 1;
        size_t warm = n < 8 ? n : 8;  /* compiles (or loads) the kernels */
        if ((st = clf_translator_translate(t, (const char *const *)src.line, warm, &o, b, hyp, NULL, NULL, NULL)))
            goto failed;
        free_outputs(hyp, warm);
        double t0 = clf_now();
        if ((st = clf_translator_translate(t, (const char *const *)src.line, n, &o, b, hyp, NULL, NULL, NULL)))
            goto failed;
        rec->r[k].seconds = clf_now() - t0;
        const char *const *refs[1] = {(const char *const *)ref.line};
        struct clf_bleu_opts bo = {.tok = CLF_BLEU_TOK_13A};
        struct clf_bleu_score s;
        st = clf_bleu_corpus((const char *const *)hyp, n, refs, 1, &bo, &s);
        if (st == CLF_OK)  /* chrF2 as sacreBLEU's defaults, cased */
            st = clf_chrf_corpus((const char *const *)hyp, n, refs, 1, false, &rec->r[k].chrf);
        free_outputs(hyp, n);
        if (st)
            goto failed;
        rec->r[k].bleu = s.score;
    }
    measure_device_get(ctx, &rec->dev);
    const char *slash = strrchr(mo->model, '/');  /* its file name: a case's name, not a path */
    snprintf(rec->model, sizeof rec->model, "%s", slash ? slash + 1 : mo->model);
    snprintf(rec->compute, sizeof rec->compute, "%s", clf_compute_type_str(clf_translator_compute(t)));
    rec->lines = n;
    rec->batch = (int)mo->batch;
    bench_memory_end(&mem);
    rec->mem = mem;
    *out = (struct bench_result){rec, model_json, model_table};
    rec = NULL;
    rc = 0;
    goto done;
failed:
    cli_fail(ctx, st, "translating --src");
done:
    free(rec);
    free(hyp);
    clf_translator_free(t);
    clf_ctx_free(ctx);
    clf_lines_free(&src);
    clf_lines_free(&ref);
    return rc;
}
