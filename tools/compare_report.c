/* compare_report.c: what `clformer compare-attention` measured, as
 * tables on stdout, as JSON (--json) and as an SVG plot of time against n
 * (--plot); the records come from cmd_compare_attention.c and
 * compare_quality.c. */
#include <math.h>
#include <stdio.h>

#include "cli.h"
#include "compare.h"
#include "json_out.h"
#include "measure.h"
#include "plot.h"

void cmp_print_tables(clf_ctx_t *ctx, const struct cmp_opts *o, const struct clf_model_config *c,
                         const struct cost *r, const struct reach_row *rr, size_t nrr)
{
    const struct clf_device_info *dev = clf_ctx_device(ctx);
    const int nv = 1 + o->nwindows;
    printf("compare-attention on %s (%s, driver %s)\n", dev->device_name, dev->platform_name, dev->driver_version);
    printf("one self-attention layer (clf_mha): preset %s, d_model %d, %d heads, batch %zu; ms per call, "
           "forward / forward+backward\n", o->preset, c->d_model, c->heads, o->batch);
    printf("%6s", "n");
    for (int v = 0; v < nv; v++) {
        char h[32];
        snprintf(h, sizeof h, v ? "r=%d" : "full", v ? o->windows[v - 1] : 0);
        printf(" %17s", h);
    }
    printf(" %10s %10s %10s\n", "largest", "layer", "naive S+P");
    printf("%6s", "");
    for (int v = 0; v < nv; v++)
        printf(" %17s", "fwd / fwd+bwd");
    printf(" %10s %10s %10s\n", "buf MiB", "MiB", "MiB");
    for (size_t i = 0; i < o->nlengths; i++) {
        printf("%6zu", o->lengths[i]);
        for (int v = 0; v < nv; v++) {
            char cell[40];
            if (r->fwd[v][i] > 0)
                snprintf(cell, sizeof cell, "%.3g / %.3g", r->fwd[v][i] * 1e3, r->both[v][i] * 1e3);
            else
                snprintf(cell, sizeof cell, "-");
            printf(" %17s", cell);
        }
        printf(" %10.2f %10.2f %10.1f\n", r->largest[i] / 1048576.0, r->total[i] / 1048576.0,
               r->naive_scores[i] / 1048576.0);
    }
    printf("growth exponent of time in n (least squares, log-log, n >= %zu):\n", o->lengths[cmp_fit_from(o->nlengths)]);
    for (int v = 0; v < nv; v++) {
        char h[32], cr[96] = "";
        snprintf(h, sizeof h, v ? "r=%d" : "full", v ? o->windows[v - 1] : 0);
        if (v && r->cross[v] && isfinite(r->cross_interp[v]))
            snprintf(cr, sizeof cr, "  restricting pays (>=10%% faster fwd+bwd) from n = %zu (interpolated %.0f)",
                     r->cross[v], r->cross_interp[v]);
        else if (v && r->cross[v])
            snprintf(cr, sizeof cr, "  restricting pays (>=10%% faster fwd+bwd) already at n = %zu, the smallest",
                     r->cross[v]);
        else if (v)
            snprintf(cr, sizeof cr, "  restricting never paid 10%% on these lengths");
        printf("  %-6s exponent fwd %.2f  fwd+bwd %.2f%s\n", h, r->slope_fwd[v], r->slope_both[v], cr);
    }
    printf("(the layer's memory is O(B·n·d) for every variant: the tiled kernels keep no n×n matrix; the naive\n"
           " path would add the scores and probabilities shown as 'naive S+P')\n");
    printf("\nreach at n = %zu: input positions one output depends on, measured by backpropagation\n", o->reach_len);
    printf("%3s %6s %12s %12s %12s %12s\n", "L", "r", "encoder", "min(n,1+2Lr)", "decoder", "min(i+1,1+Lr)");
    for (size_t i = 0; i < nrr; i++) {
        char w[16];
        snprintf(w, sizeof w, rr[i].window < 0 ? "full" : "%d", rr[i].window);
        printf("%3d %6s %12zu %12zu %12zu %12zu%s\n", rr[i].layers, w, rr[i].enc, rr[i].enc_formula, rr[i].dec,
               rr[i].dec_formula, rr[i].enc == rr[i].enc_formula && rr[i].dec == rr[i].dec_formula ? "" : "  MISMATCH");
    }
    printf("(encoder: output at position n/2; decoder: output at i = n-1, causal)\n");
}

int cmp_write_json(clf_ctx_t *ctx, const struct cmp_opts *o, const struct clf_model_config *c,
                      const struct cost *r, const struct reach_row *rr, size_t nrr,
                      const struct cmp_mt_result *mt, const struct cmp_syn_result *syn, size_t nsyn)
{
    FILE *f = fopen(o->json, "w");
    if (!f) {
        fprintf(stderr, "clformer compare-attention: cannot write %s\n", o->json);
        return 1;
    }
    const int nv = 1 + o->nwindows;
    struct measure_device dev;
    measure_device_get(ctx, &dev);
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "tool", "compare-attention");
    measure_device_json(&w, &dev);
    cli_json_bool(&w, "quick", o->quick);
    cli_json_str(&w, "preset", o->preset);
    cli_json_num(&w, "d_model", "%d", c->d_model);
    cli_json_num(&w, "heads", "%d", c->heads);
    cli_json_num(&w, "batch", "%zu", o->batch);
    cli_json_break(&w, "\n ");
    cli_json_arr(&w, "cost");
    for (int v = 0; v < nv; v++) {
        cli_json_break(&w, "\n  ");
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "variant", v ? "restricted" : "full");
        cli_json_num(&w, "window", "%d", v ? o->windows[v - 1] : -1);
        cli_json_arr(&w, "points");
        for (size_t i = 0; i < o->nlengths; i++) {
            if (!(r->fwd[v][i] > 0))
                continue;
            cli_json_obj(&w, NULL);
            cli_json_num(&w, "n", "%zu", o->lengths[i]);
            cli_json_num(&w, "fwd_s", "%.6g", r->fwd[v][i]);
            cli_json_num(&w, "fwd_bwd_s", "%.6g", r->both[v][i]);
            cli_json_num(&w, "largest_alloc_bytes", "%zu", r->largest[i]);
            cli_json_num(&w, "layer_bytes", "%zu", r->total[i]);
            cli_json_end(&w);
        }
        cli_json_end(&w);
        cli_json_break(&w, "\n   ");
        cli_json_obj(&w, "fit");
        cli_json_num(&w, "from_n", "%zu", o->lengths[cmp_fit_from(o->nlengths)]);
        cli_json_real(&w, "exponent", r->slope_fwd[v]);
        cli_json_real(&w, "exponent_fwd_bwd", r->slope_both[v]);
        cli_json_end(&w);
        if (v) {
            if (r->cross[v])
                cli_json_num(&w, "crossover_n", "%zu", r->cross[v]);
            else
                cli_json_null(&w, "crossover_n");
            cli_json_real(&w, "crossover_n_interpolated", r->cross_interp[v]);
        }
        cli_json_end(&w);
    }
    cli_json_end(&w);
    cli_json_break(&w, "\n ");
    cli_json_arr(&w, "naive_scores_bytes");
    for (size_t i = 0; i < o->nlengths; i++) {
        cli_json_obj(&w, NULL);
        cli_json_num(&w, "n", "%zu", o->lengths[i]);
        cli_json_num(&w, "bytes", "%.0f", r->naive_scores[i]);
        cli_json_end(&w);
    }
    cli_json_end(&w);
    cli_json_break(&w, "\n ");
    cli_json_obj(&w, "reach");
    cli_json_num(&w, "n", "%zu", o->reach_len);
    cli_json_num(&w, "encoder_pos", "%zu", o->reach_len / 2);
    cli_json_num(&w, "decoder_pos", "%zu", o->reach_len - 1);
    cli_json_arr(&w, "rows");
    for (size_t i = 0; i < nrr; i++) {
        cli_json_break(&w, "\n  ");
        cli_json_obj(&w, NULL);
        cli_json_num(&w, "layers", "%d", rr[i].layers);
        cli_json_num(&w, "window", "%d", rr[i].window);
        cli_json_obj(&w, "encoder");
        cli_json_num(&w, "measured", "%zu", rr[i].enc);
        cli_json_num(&w, "formula", "%zu", rr[i].enc_formula);
        cli_json_end(&w);
        cli_json_obj(&w, "decoder");
        cli_json_num(&w, "measured", "%zu", rr[i].dec);
        cli_json_num(&w, "formula", "%zu", rr[i].dec_formula);
        cli_json_end(&w);
        cli_json_end(&w);
    }
    cli_json_end(&w);
    cli_json_end(&w);
    if (mt) {
        cli_json_break(&w, "\n ");
        cli_json_obj(&w, "quality_multi30k");
        cli_json_str(&w, "preset", o->mt_preset);
        cli_json_num(&w, "steps", "%ld", o->mt_minutes > 0 ? 0 : o->mt_steps);
        cli_json_num(&w, "minutes", "%g", o->mt_minutes);
        cli_json_num(&w, "bpe_vocab", "%d", o->mt_vocab);
        cli_json_num(&w, "val_pairs", "%zu", o->mt_val);
        cli_json_arr(&w, "runs");
        for (int i = 0; i < 2; i++) {
            cli_json_obj(&w, NULL);
            cli_json_num(&w, "enc_window", "%d", mt[i].window);
            cli_json_num(&w, "updates", "%ld", mt[i].steps);
            cli_json_real(&w, "val_loss", mt[i].val_loss);
            cli_json_real(&w, "val_bleu", mt[i].val_bleu);
            cli_json_num(&w, "seconds", "%.1f", mt[i].seconds);
            cli_json_num(&w, "rc", "%d", mt[i].rc);
            cli_json_end(&w);
        }
        cli_json_end(&w);
        cli_json_end(&w);
    }
    if (syn) {
        cli_json_break(&w, "\n ");
        cli_json_obj(&w, "quality_synthetic");
        cli_json_num(&w, "layers", "%d", o->syn_layers);
        cli_json_num(&w, "steps", "%ld", o->syn_steps);
        cli_json_arr(&w, "runs");
        for (size_t i = 0; i < nsyn; i++) {
            cli_json_break(&w, "\n  ");
            cli_json_obj(&w, NULL);
            cli_json_str(&w, "task", cmp_task_name(syn[i].task));
            cli_json_str(&w, "restricted", syn[i].task == CMP_TASK_REPEAT ? "decoder" : "encoder");
            cli_json_num(&w, "n", "%zu", syn[i].n);
            cli_json_num(&w, "window", "%d", syn[i].window);
            cli_json_real(&w, "token_accuracy", syn[i].accuracy);
            cli_json_real(&w, "sequence_accuracy", syn[i].exact);
            cli_json_real(&w, "val_loss", syn[i].loss);
            cli_json_num(&w, "seconds", "%.1f", syn[i].seconds);
            cli_json_end(&w);
        }
        cli_json_end(&w);
        cli_json_end(&w);
    }
    cli_json_end(&w);
    fprintf(f, "\n");
    int bad = ferror(f);
    bad |= fclose(f);
    if (bad)
        fprintf(stderr, "clformer compare-attention: error writing %s\n", o->json);
    return bad ? 1 : 0;
}

int cmp_write_plot(const struct cmp_opts *o, const struct cost *r)
{
    const int nv = 1 + o->nwindows;
    struct plot_series s[NV];
    char labels[NV][96];
    double x[NV][CMP_MAX_LIST], y[NV][CMP_MAX_LIST];
    for (int v = 0; v < nv; v++) {
        size_t k = 0;
        for (size_t i = 0; i < o->nlengths; i++)
            if (r->both[v][i] > 0)
                x[v][k] = (double)o->lengths[i], y[v][k++] = r->both[v][i] * 1e3;
        if (v)
            snprintf(labels[v], sizeof labels[v], "r=%d (slope %.2f)", o->windows[v - 1], r->slope_both[v]);
        else
            snprintf(labels[v], sizeof labels[v], "full (slope %.2f)", r->slope_both[v]);
        s[v] = (struct plot_series){.label = labels[v], .x = x[v], .y = y[v], .n = k};
    }
    char title[160];
    snprintf(title, sizeof title, "self-attention layer, forward+backward: full vs restricted (preset %s, batch %zu)",
             o->preset, o->batch);
    struct plot_opts po = {.title = title, .xlabel = "sequence length n", .ylabel = "ms per call", .logx = true, .logy = true};
    if (plot_svg(o->plot, &po, s, (size_t)nv)) {
        fprintf(stderr, "clformer compare-attention: cannot write %s\n", o->plot);
        return 1;
    }
    return 0;
}

void cmp_print_quality(const struct cmp_opts *o, const struct cmp_mt_result *mt, const struct cmp_syn_result *syn,
                          size_t nsyn)
{
    if (mt) {
    printf("\nquality on Multi30k (preset %s, encoder self-attention, same budget: ", o->mt_preset);
    if (o->mt_minutes > 0)
        printf("%g minutes each", o->mt_minutes);
    else
        printf("%ld updates each", o->mt_steps);
    if (o->mt_val)
        printf("; validation on the first %zu pairs)\n", o->mt_val);
    else
        printf("; validation on all of Multi30k val)\n");
    printf("%10s %8s %10s %10s %8s\n", "encoder", "updates", "val loss", "val BLEU", "seconds");
    for (int i = 0; i < 2; i++) {
        char w[16];
        snprintf(w, sizeof w, mt[i].window < 0 ? "full" : "r=%d", mt[i].window);
        printf("%10s %8ld %10.3f %10.2f %8.0f%s\n", w, mt[i].steps, mt[i].val_loss, mt[i].val_bleu, mt[i].seconds,
               mt[i].rc ? "  (failed)" : "");
    }
    }
    if (!syn)
        return;
    printf("\nsynthetic tasks (d_model 64, %d+%d layers, %ld updates each); held-out teacher-forced accuracy, "
           "chance 1/16\n  reverse: n/2..n symbols reversed, restricted ENCODER (cross-attention stays full)\n"
           "  repeat:  n symbols then the same n again, restricted causal DECODER; scored on the second half,\n"
           "           which needs a look n-1 back: out of reach when n-1 > L*r\n", o->syn_layers, o->syn_layers,
           o->syn_steps);
    printf("%8s %6s %8s %8s %10s %10s %10s\n", "task", "n", "window", "L*r", "token acc", "seq acc", "val loss");
    for (size_t i = 0; i < nsyn; i++) {
        char w[16], lr[16];
        snprintf(w, sizeof w, syn[i].window < 0 ? "full" : "r=%d", syn[i].window);
        snprintf(lr, sizeof lr, syn[i].window < 0 ? "-" : "%d", syn[i].window * o->syn_layers);
        printf("%8s %6zu %8s %8s %10.3f %10.3f %10.3f%s\n", cmp_task_name(syn[i].task), syn[i].n, w, lr,
               syn[i].accuracy, syn[i].exact, syn[i].loss,
               syn[i].task == CMP_TASK_REPEAT && syn[i].window >= 0 &&
                       syn[i].n - 1 > (size_t)(syn[i].window * o->syn_layers) ? "  (out of reach)" : "");
    }
}

