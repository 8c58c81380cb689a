/* compare_quality.c: the quality half of `clformer compare-attention`.
 *   Multi30k: two runs of the library's trainer (clformer_train.h, the
 *   step `clformer train` takes, with its defaults), full and restricted
 *   encoder self-attention, same preset, seed, BPE model and budget; then
 *   the validation loss and greedy BLEU of each.
 *   Synthetic, two tasks on a model of d_model 64 trained in process:
 *   reverse  n/2..n random symbols + EOS, restricted ENCODER. Where a symbol
 *            goes depends on its distance from the end, which an encoder
 *            position sees only within L·r; but the decoder's cross-
 *            attention is full, so a restricted encoder is not cut off:
 *            this measures whether the route around is learned.
 *   repeat   the target is n symbols then the same n again (the source is
 *            EOS alone), restricted causal DECODER: the second half needs a
 *            look n-1 positions back, out of reach once n-1 > L·r, where it
 *            must fall to chance (1/16).
 *   Batches of SYN_B sequences, vocab 4 + SYN_SYMBOLS. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clformer/advanced/files.h>
#include "cli.h"
#include "compare.h"

#ifndef CLF_DATA_DIR
#define CLF_DATA_DIR "data/multi30k"
#endif

/* ------------------------------------------------------------ Multi30k */

enum { MT_MAX_LEN = 100 };  /* clformer train's --max-len */

/* One Multi30k run as `clformer train --preset P --enc-window W --seed 1
 * --val-every 0` makes it (its defaults: 4096 tokens a batch, one batch an
 * update, warm-up 800, no clipping), to o's budget, then validated; its
 * last checkpoint goes to dir. */
static int mt_one(clf_ctx_t *ctx, const struct cmp_opts *o, const clf_tok_t *tok, const struct clf_corpus *train,
                  const struct clf_corpus *val, const char *dir, struct cmp_mt_result *r)
{
    struct clf_model_config c;
    clf_trainer_t *tr = NULL;
    clf_status st = clf_model_config_preset(&c, o->mt_preset);
    if (st != CLF_OK)
        return cli_fail(NULL, st, "--mt-preset");
    c.vocab = clf_tok_vocab_size(tok, CLF_TOK_SOURCE);
    c.enc_window = r->window;
    if (c.max_len < MT_MAX_LEN + 2)
        c.max_len = MT_MAX_LEN + 2;
    struct clf_train_opts to = clf_train_opts_default();  /* clformer train's */
    to.config = &c;
    double t0 = clf_now();
    if ((st = clf_trainer_init(&tr, ctx, &to)) != CLF_OK || (st = clf_trainer_data(tr, train)) != CLF_OK)
        goto fail;
    const struct clf_train_state *s = clf_trainer_state(tr);
    bool done = false;
    while (!done) {
        if ((st = clf_trainer_step(tr)) != CLF_OK)
            goto fail;
        done = o->mt_minutes > 0 ? s->seconds >= o->mt_minutes * 60 : s->step >= o->mt_steps;
    }
    r->steps = s->step;
    if ((st = clf_trainer_validate(tr, val, &r->val_loss)) != CLF_OK)
        goto fail;
    if ((st = clf_translate_bleu(ctx, clf_trainer_model(tr), tok, val, (size_t)to.max_tokens, &r->val_bleu)) !=
        CLF_OK) {
        cli_fail_memory(ctx, st, "translating", "--max-tokens");
        goto out;
    }
    if (clf_mkdir_p(dir) == 0 && (st = clf_trainer_save(tr, dir, tok, 1)) != CLF_OK)
        goto fail;
    r->rc = 0;
    goto out;
fail:
    cli_fail(ctx, st, "a Multi30k run");
out:
    r->seconds = clf_now() - t0;
    clf_trainer_free(tr);
    return r->rc;
}

/* The first n lines of a (gzip) text file into a plain file. */
static int head_lines(const char *from, const char *to, size_t n)
{
    struct clf_lines l;
    clf_status st = clf_lines_read(&l, from);
    if (st != CLF_OK)
        return cli_fail(NULL, st, "reading the validation data");
    FILE *f = fopen(to, "w");
    int rc = !f;
    for (size_t i = 0; f && i < n && i < l.n; i++)
        fprintf(f, "%s\n", l.line[i]);
    if (f && fclose(f))
        rc = 1;
    if (rc)
        fprintf(stderr, "clformer compare-attention: cannot write %s\n", to);
    clf_lines_free(&l);
    return rc;
}

int cmp_quality_mt(clf_ctx_t *ctx, const struct cmp_opts *o, struct cmp_mt_result res[2])
{
    char val_src[CLF_PATH_MAX] = CLF_DATA_DIR "/val.en.gz", val_tgt[CLF_PATH_MAX] = CLF_DATA_DIR "/val.de.gz";
    char bpe[CLF_PATH_MAX], dir[2][CLF_PATH_MAX];
    const int vocab = o->mt_vocab;
    if (clf_mkdir_p(o->out)) {
        fprintf(stderr, "clformer compare-attention: cannot create %s: %s\n", o->out, strerror(errno));
        return 1;
    }
    /* one BPE model for both runs, kept between runs of the tool */
    snprintf(bpe, sizeof bpe, "%s/bpe-%d.model", o->out, vocab);
    if (access(bpe, R_OK)) {
        if (!o->quiet)
            fprintf(stderr, "quality: learning a %d-piece BPE model on Multi30k ...\n", vocab);
        struct clf_spm_learn_opts lo;
        clf_spm_learn_defaults(&lo);
        lo.vocab_size = vocab;
        const char *files[] = {CLF_DATA_DIR "/train.en.gz", CLF_DATA_DIR "/train.de.gz"};
        clf_status st = clf_spm_learn(files, 2, bpe, &lo);
        if (st != CLF_OK)
            return cli_fail(NULL, st, "learning the BPE model");
    }
    if (o->mt_val) {
        snprintf(val_src, sizeof val_src, "%s/val-%zu.en", o->out, o->mt_val);
        snprintf(val_tgt, sizeof val_tgt, "%s/val-%zu.de", o->out, o->mt_val);
        if (head_lines(CLF_DATA_DIR "/val.en.gz", val_src, o->mt_val) ||
            head_lines(CLF_DATA_DIR "/val.de.gz", val_tgt, o->mt_val))
            return 1;
    }
    clf_tok_t *tok = NULL;
    struct clf_corpus *train = NULL, *val = NULL;
    struct clf_corpus_summary sum;
    clf_status st;
    int rc = 1;
    if ((st = clf_tok_spm_load(&tok, bpe)) != CLF_OK ||
        (st = clf_corpus_load(&train, CLF_DATA_DIR "/train.en.gz", CLF_DATA_DIR "/train.de.gz")) != CLF_OK ||
        (st = clf_corpus_encode_tok(train, tok, MT_MAX_LEN, &sum)) != CLF_OK ||
        (st = clf_corpus_load(&val, val_src, val_tgt)) != CLF_OK ||
        (st = clf_corpus_encode_tok(val, tok, MT_MAX_LEN, &sum)) != CLF_OK) {
        cli_fail(NULL, st, "Multi30k");
        goto done;
    }
    for (int i = 0; i < 2; i++) {
        int w = i ? o->mt_window : -1;
        res[i] = (struct cmp_mt_result){w, NAN, NAN, 0, 0, 1};
        if (w < 0)
            snprintf(dir[i], sizeof dir[i], "%s/mt-full", o->out);
        else
            snprintf(dir[i], sizeof dir[i], "%s/mt-r%d", o->out, w);
        if (!o->quiet) {
            char budget[48];
            snprintf(budget, sizeof budget, o->mt_minutes > 0 ? "%g minutes" : "%.0f updates",
                     o->mt_minutes > 0 ? o->mt_minutes : (double)o->mt_steps);
            fprintf(stderr, "quality: Multi30k, preset %s, encoder window %d, %s -> %s\n", o->mt_preset, w, budget,
                    dir[i]);
        }
        if (mt_one(ctx, o, tok, train, val, dir[i], &res[i]))
            fprintf(stderr, "clformer compare-attention: the training run for %s failed\n", dir[i]);
    }
    rc = res[0].rc || res[1].rc;
done:
    clf_corpus_free(train);
    clf_corpus_free(val);
    clf_tok_free(tok);
    return rc;
}

/* ----------------------------------------------------------- synthetic */

enum { SYN_SYMBOLS = 16, SYN_B = 32, SYN_EVAL_BATCHES = 4 };

/* The shapes of one task at length n: source and target row widths. */
static void syn_shape(int task, size_t n, size_t *ws, size_t *wt)
{
    *ws = task == CMP_TASK_REVERSE ? n + 1 : 1;
    *wt = task == CMP_TASK_REVERSE ? n + 1 : 2 * n + 1;
}

/* One batch. reverse: n/2..n symbols + EOS, reversed on the target side.
 * repeat: the source is EOS alone; the target is n symbols, the same n
 * again, EOS; the second half is predictable only by looking n-1
 * positions back. Rows padded with 0. */
static void syn_batch(int task, size_t n, uint32_t *s, int32_t *src, int32_t *tin, int32_t *tout)
{
    size_t ws, w;
    syn_shape(task, n, &ws, &w);
    memset(src, 0, SYN_B * ws * sizeof *src);
    memset(tin, 0, SYN_B * w * sizeof *tin);
    memset(tout, 0, SYN_B * w * sizeof *tout);
    for (size_t b = 0; b < SYN_B; b++) {
        int32_t *x = src + b * ws, *ti = tin + b * w, *to = tout + b * w;
        ti[0] = CLF_BOS_ID;
        if (task == CMP_TASK_REPEAT) {
            x[0] = CLF_EOS_ID;
            for (size_t i = 0; i < n; i++)
                to[i] = to[n + i] = 4 + (int32_t)(clf_rand24(s) % SYN_SYMBOLS);
            to[2 * n] = CLF_EOS_ID;
            for (size_t i = 0; i < 2 * n; i++)
                ti[i + 1] = to[i];
            continue;
        }
        size_t len = n / 2 + clf_rand24(s) % (n - n / 2 + 1);
        if (!len)
            len = 1;
        for (size_t i = 0; i < len; i++)
            x[i] = 4 + (int32_t)(clf_rand24(s) % SYN_SYMBOLS);
        x[len] = CLF_EOS_ID;
        for (size_t i = 0; i < len; i++) {
            to[i] = x[len - 1 - i];
            ti[i + 1] = to[i];
        }
        to[len] = CLF_EOS_ID;
    }
}

static int syn_one(clf_ctx_t *ctx, const struct cmp_opts *o, int task, size_t n, int window,
                   struct cmp_syn_result *r)
{
    struct clf_model_config c;
    if (clf_model_config_preset(&c, "tiny") != CLF_OK) {
        fprintf(stderr, "compare quality: %s\n", clf_ctx_error(NULL));
        return 1;
    }
    c.enc_layers = c.dec_layers = o->syn_layers;
    c.d_model = 64, c.heads = 4, c.d_ff = 128;
    c.vocab = 4 + SYN_SYMBOLS;
    c.max_len = 2 * (int)n + 2;
    c.dropout = 0, c.label_smoothing = 0;
    if (task == CMP_TASK_REVERSE)
        c.enc_window = window;
    else
        c.dec_window = window;
    size_t ws, w;
    syn_shape(task, n, &ws, &w);
    const size_t srcsz = SYN_B * ws, rowsz = SYN_B * w;
    int32_t *ids = malloc((srcsz + 2 * rowsz) * sizeof *ids);
    float *logits = malloc(rowsz * (size_t)c.vocab * sizeof *logits);
    int32_t *src = ids, *tin = ids + srcsz, *tout = ids + srcsz + rowsz;
    clf_trainer_t *tr = NULL;
    clf_model_t *m = NULL;
    clf_status st = CLF_OK;
    int rc = 1;
    double t0 = clf_now();
    *r = (struct cmp_syn_result){task, n, window, NAN, NAN, NAN, 0};
    if (!ids || !logits) {
        fprintf(stderr, "clformer compare-attention: out of host memory\n");
        goto done;
    }
    /* the library's step (clformer_train.h), as `clformer train` takes it,
     * on batches of this task's own; gradient norms clipped at 1 */
    const struct clf_train_opts to = {.config = &c, .seed = 11, .clip = 1.0, .ranks = 1};
    if ((st = clf_trainer_init(&tr, ctx, &to)) != CLF_OK)
        goto fail;
    m = clf_trainer_model(tr);
    uint32_t seed = 99;  /* the same training stream for every variant */
    struct clf_model_batch mb = {SYN_B, ws, w, src, tin, tout};
    const size_t warmup = (size_t)(o->syn_steps / 10 > 1 ? o->syn_steps / 10 : 1);
    for (long step = 1; step <= o->syn_steps; step++) {
        syn_batch(task, n, &seed, src, tin, tout);
        double tokens = 0;
        for (size_t i = 0; i < rowsz; i++)
            tokens += tout[i] != CLF_PAD_ID;
        /* linear warm-up to a constant 2e-3: the paper's schedule peaks far
         * too high for d_model 64 and a warm-up this short */
        float lr = 2e-3f * ((size_t)step < warmup ? (float)step / (float)warmup : 1.0f);
        if ((st = clf_trainer_step_batches(tr, &mb, 1, tokens, lr)) != CLF_OK)
            goto fail;
    }
    /* held out: another stream; scored where the task is determined (the
     * whole target for reverse, the second half for repeat) */
    uint32_t eseed = 12345 + (uint32_t)n;
    double right = 0, total = 0, seq_ok = 0, seqs = 0, loss = 0, ltok = 0;
    for (int e = 0; e < SYN_EVAL_BATCHES; e++) {
        syn_batch(task, n, &eseed, src, tin, tout);
        double l, t;
        if ((st = clf_model_forward(m, &mb)) || (st = clf_model_loss_take(m, &l, &t)))
            goto fail;
        loss += l, ltok += t;
        const clf_tensor *lg = clf_model_logits(m);
        clf_tensor view;
        size_t shape[2] = {rowsz, (size_t)c.vocab};
        if (!lg) {
            fprintf(stderr, "clformer compare-attention: synthetic task: no logits after the forward pass\n");
            goto done;
        }
        if ((st = clf_tensor_view(ctx, lg, 0, 2, shape, &view)) || (st = clf_tensor_download(ctx, &view, logits)))
            goto fail;
        for (size_t b = 0; b < SYN_B; b++) {
            bool all = true;
            for (size_t i = task == CMP_TASK_REPEAT ? n : 0; i < (task == CMP_TASK_REPEAT ? 2 * n : w); i++) {
                int32_t want = tout[b * w + i];
                if (want == CLF_PAD_ID)
                    continue;
                const float *row = logits + (b * w + i) * (size_t)c.vocab;
                int best = 0;
                for (int v = 1; v < c.vocab; v++)
                    if (row[v] > row[best])
                        best = v;
                right += best == want;
                all = all && best == want;
                total++;
            }
            seq_ok += all, seqs++;
        }
    }
    r->accuracy = right / total;
    r->exact = seq_ok / seqs;
    r->loss = loss / ltok;
    r->seconds = clf_now() - t0;
    rc = 0;
    goto done;
fail:
    rc = cli_fail(ctx, st, "synthetic task");
done:
    clf_trainer_free(tr);
    free(ids);
    free(logits);
    return rc;
}

const char *cmp_task_name(int task) { return task == CMP_TASK_REPEAT ? "repeat" : "reverse"; }

int cmp_quality_synthetic(clf_ctx_t *ctx, const struct cmp_opts *o, struct cmp_syn_result *res)
{
    size_t k = 0, total = 2 * o->nsyn * (1 + (size_t)o->nsyn_windows);
    for (int task = 0; task < 2; task++)
        for (size_t i = 0; i < o->nsyn; i++)
            for (int v = 0; v <= o->nsyn_windows; v++, k++) {
                int w = v ? o->syn_windows[v - 1] : -1;
                if (!o->quiet) {
                    char wv[16];
                    snprintf(wv, sizeof wv, v ? "r=%d" : "full", w);
                    fprintf(stderr, "%s[%3zu%%] synthetic: %s n=%zu %s, %ld updates%-12s%s", isatty(2) ? "\r" : "",
                            100 * k / total, cmp_task_name(task), o->syn_lengths[i], wv, o->syn_steps, "",
                            isatty(2) ? "" : "\n");
                }
                if (syn_one(ctx, o, task, o->syn_lengths[i], w, &res[k]))
                    return 1;
            }
    if (!o->quiet)
        fprintf(stderr, "%s[100%%] synthetic: done%-40s\n", isatty(2) ? "\r" : "", "");
    return 0;
}
