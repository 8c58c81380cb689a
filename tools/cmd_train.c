/* cmd_train.c: `clformer train`: the paper's recipe on parallel text.
 * Learns (or loads) the joint BPE model, forms batches by tokens, and
 * trains with Adam under the warm-up / inverse-square-root schedule,
 * accumulating gradients up to a target number of tokens per update. It
 * logs every update as JSON lines, validates (loss and greedy BLEU) at
 * intervals, writes checkpoints atomically every few minutes and on Ctrl-C,
 * resumes exactly, and plots the loss curve at the end. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "plot.h"
#include "textgen.h"

#ifndef CLF_DATA_DIR
#define CLF_DATA_DIR "data/multi30k"
#endif

struct train_args {
    const char *src, *tgt, *val_src, *val_tgt, *out, *bpe, *device, *preset;
    long steps, epochs;
    double minutes, save_minutes;
    int vocab, max_len, warmup, keep, val_every, log_every;
    long max_tokens, update_tokens;
    double lr_scale, clip;
    uint64_t seed;
    bool resume, quiet;
    int layers, d_model, heads, d_ff, norm, enc_window, dec_window;
    double dropout, smoothing;
};

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clformer train [options]\n"
            "  --src FILE --tgt FILE           training pairs (plain or gzip; default: bundled Multi30k EN->DE)\n"
            "  --val-src FILE --val-tgt FILE   validation pairs (default: bundled Multi30k val)\n"
            "  --out DIR                       checkpoints, BPE model, log and plot (default runs/train)\n"
            "  --preset NAME                   base, big, small (default) or tiny\n"
            "  --layers N --d-model N --heads N --d-ff N --dropout P --label-smoothing E\n"
            "  --norm post|pre --enc-window R --dec-window R   restricted self-attention radius\n"
            "  --steps N | --epochs N | --minutes M   the budget (default: 1 epoch)\n"
            "  --bpe MODEL                     a SentencePiece model to use (default: learn one into DIR)\n"
            "  --vocab N                       pieces of a learned BPE model (default 8000)\n"
            "  --max-len N                     skip pairs with a side longer than N subwords (default 100)\n"
            "  --max-tokens N                  padded tokens per batch (default 4096)\n"
            "  --update-tokens N               target tokens per update, accumulated (default: one batch)\n"
            "  --warmup N                      warm-up updates (default 800)\n"
            "  --lr-scale X                    multiplies the paper's schedule (default 1)\n"
            "  --clip X                        global gradient-norm clipping (default 0: off)\n"
            "  --save-minutes M --keep K       checkpoint every M minutes, keep the last K (10, 5)\n"
            "  --val-every N                   validate every N updates (default 500; 0: only at the end)\n"
            "  --log-every N                   progress line every N updates when not on a terminal (50)\n"
            "  --seed N --device D --resume --quiet\n");
}

static bool parse(int argc, char **argv, struct train_args *a)
{
    *a = (struct train_args){.src = CLF_DATA_DIR "/train.en.gz", .tgt = CLF_DATA_DIR "/train.de.gz",
                             .val_src = CLF_DATA_DIR "/val.en.gz", .val_tgt = CLF_DATA_DIR "/val.de.gz",
                             .out = "runs/train", .preset = "small", .epochs = 0, .save_minutes = 10,
                             .vocab = 8000, .max_len = 100, .warmup = 800, .keep = 5, .val_every = 500,
                             .log_every = 50, .max_tokens = 4096, .lr_scale = 1, .seed = 1, .layers = -1,
                             .d_model = -1, .heads = -1, .d_ff = -1, .norm = -1, .enc_window = -2,
                             .dec_window = -2, .dropout = -1, .smoothing = -1};
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        const char *v = NULL;
#define STR(name, field) if (cli_opt(argc, argv, &i, name, &v, &bad)) { a->field = v; continue; }
#define NUM(name, field, conv) if (cli_opt(argc, argv, &i, name, &v, &bad)) { if (!bad) a->field = conv; continue; }
        STR("--src", src) STR("--tgt", tgt) STR("--val-src", val_src) STR("--val-tgt", val_tgt) STR("--out", out)
        STR("--bpe", bpe) STR("--device", device) STR("--preset", preset)
        NUM("--steps", steps, atol(v)) NUM("--epochs", epochs, atol(v)) NUM("--minutes", minutes, atof(v))
        NUM("--save-minutes", save_minutes, atof(v)) NUM("--vocab", vocab, atoi(v)) NUM("--max-len", max_len, atoi(v))
        NUM("--warmup", warmup, atoi(v)) NUM("--keep", keep, atoi(v)) NUM("--val-every", val_every, atoi(v))
        NUM("--log-every", log_every, atoi(v)) NUM("--max-tokens", max_tokens, atol(v))
        NUM("--update-tokens", update_tokens, atol(v)) NUM("--lr-scale", lr_scale, atof(v)) NUM("--clip", clip, atof(v))
        NUM("--seed", seed, strtoull(v, NULL, 10)) NUM("--layers", layers, atoi(v)) NUM("--d-model", d_model, atoi(v))
        NUM("--heads", heads, atoi(v)) NUM("--d-ff", d_ff, atoi(v)) NUM("--enc-window", enc_window, atoi(v))
        NUM("--dec-window", dec_window, atoi(v)) NUM("--dropout", dropout, atof(v))
        NUM("--label-smoothing", smoothing, atof(v))
        NUM("--norm", norm, !strcmp(v, "pre") ? CLF_NORM_PRE : !strcmp(v, "post") ? CLF_NORM_POST : -2)
#undef STR
#undef NUM
        if (!strcmp(argv[i], "--resume")) a->resume = true;
        else if (!strcmp(argv[i], "--quiet")) a->quiet = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); exit(0); }
        else { fprintf(stderr, "clformer train: unknown option '%s'\n", argv[i]); bad = true; }
    }
    if (!bad && a->norm == -2) {
        fprintf(stderr, "clformer train: --norm takes post or pre\n");
        bad = true;
    }
    if (!bad && (a->max_tokens < 1 || a->warmup < 1 || a->keep < 1 || a->max_len < 2 || a->steps < 0 ||
                 a->epochs < 0 || a->minutes < 0)) {
        fprintf(stderr, "clformer train: --max-tokens, --warmup, --keep must be >= 1, --max-len >= 2, budgets >= 0\n");
        bad = true;
    }
    if (bad)
        usage(stderr);
    if (!a->steps && !a->epochs && !a->minutes)
        a->epochs = 1;
    return !bad;
}

/* Training position: what a checkpoint must carry for an exact resume. */
struct position {
    long step;       /* updates done */
    long epoch;      /* 0-based */
    size_t batch;    /* next batch of the epoch */
    double tokens;   /* target tokens seen */
    double seconds;  /* training time so far */
};

/* The newest ckpt-<step>.safetensors in dir (step -1 when none). */
static long latest_checkpoint(const char *dir)
{
    long *steps, best;
    int n = cli_checkpoints(dir, &steps);
    best = n > 0 ? steps[n - 1] : -1;
    free(steps);
    return best;
}

static void ckpt_paths(const char *dir, long step, char *model, char *optim, size_t len)
{
    snprintf(model, len, "%s/ckpt-%ld.safetensors", dir, step);
    snprintf(optim, len, "%s/ckpt-%ld.optim.safetensors", dir, step);
}

static clf_status save_checkpoint(clf_model_t *m, const struct train_args *a, const clf_spm_t *spm,
                                  const struct position *p)
{
    char model[4200], optim[4200], hash[32], epoch[32], batch[32], tokens[48], secs[48], mt[32], ut[32];
    ckpt_paths(a->out, p->step, model, optim, sizeof model);
    snprintf(hash, sizeof hash, "%016" PRIx64, clf_spm_hash(spm));
    snprintf(epoch, sizeof epoch, "%ld", p->epoch);
    snprintf(batch, sizeof batch, "%zu", p->batch);
    snprintf(tokens, sizeof tokens, "%.0f", p->tokens);
    snprintf(secs, sizeof secs, "%.3f", p->seconds);
    snprintf(mt, sizeof mt, "%ld", a->max_tokens);
    snprintf(ut, sizeof ut, "%ld", a->update_tokens);
    const char *meta[] = {"tokenizer_hash", hash, "bpe", "bpe.model", "epoch", epoch, "batch", batch,
                          "tokens", tokens, "seconds", secs, "max_tokens", mt,
                          "update_tokens", ut, NULL};
    clf_status st = clf_model_save_optimizer(m, optim);
    if (st == CLF_OK)
        st = clf_model_save(m, model, meta);
    if (st != CLF_OK)
        return st;
    /* keep the last K */
    long *steps;
    int n = cli_checkpoints(a->out, &steps);
    for (int i = 0; i < n - a->keep; i++) {
        ckpt_paths(a->out, steps[i], model, optim, sizeof model);
        unlink(model);
        unlink(optim);
    }
    free(steps);
    return CLF_OK;
}

static long meta_long(const char *path, const char *key, long fallback)
{
    char v[64];
    return clf_checkpoint_meta(path, key, v, sizeof v) == CLF_OK ? atol(v) : fallback;
}

static double meta_double(const char *path, const char *key)
{
    char v[64];
    return clf_checkpoint_meta(path, key, v, sizeof v) == CLF_OK ? atof(v) : 0;
}

/* Plans the model's activations once for the largest of these batches:
 * the most sentences and the most rows of each side, each taken alone. */
static clf_status reserve_for(clf_model_t *m, const struct clf_batches *b)
{
    struct clf_model_shape max = {0, 0, 0};
    for (size_t i = 0; i < b->n; i++)
        clf_model_shape_add(&max, b->batch[i].n, (size_t)b->batch[i].src_len, (size_t)b->batch[i].tgt_len);
    return b->n ? clf_model_reserve(m, &max) : CLF_OK;
}

/* Loss per target token over the whole corpus, without dropout. Returns 0,
 * or 1 after printing what failed. */
static int validate_loss(clf_ctx_t *ctx, clf_model_t *m, const struct clf_corpus *c, long max_tokens, double *loss)
{
    struct clf_batches b;
    clf_status st = clf_batches_make(c, (size_t)max_tokens, 0, 0, &b);
    if (st != CLF_OK)
        return cli_fail(NULL, st, "validation batches");
    if ((st = reserve_for(m, &b)) != CLF_OK) {
        clf_batches_free(&b);
        return cli_fail(ctx, st, "planning activation memory");
    }
    double sum = 0, tok = 0;
    int32_t *ids = NULL;
    int rc = 0;
    for (size_t i = 0; i < b.n && !rc; i++) {
        const struct clf_batch *x = &b.batch[i];
        size_t ns = x->n * (size_t)x->src_len, nt = x->n * (size_t)x->tgt_len;
        int32_t *g = realloc(ids, (ns + 2 * nt) * sizeof *ids);
        if (!g) {
            rc = 1;
            fprintf(stderr, "clformer: out of host memory\n");
            break;
        }
        ids = g;
        if ((st = clf_batch_fill(c, x, ids, ids + ns, ids + ns + nt)) != CLF_OK) {
            rc = cli_fail(NULL, st, "validation batch");
            break;
        }
        struct clf_model_batch mb = {x->n, (size_t)x->src_len, (size_t)x->tgt_len, ids, ids + ns, ids + ns + nt};
        struct clf_step_opts o = {false, 0, 0.0f};
        if ((st = clf_model_accumulate(m, &mb, &o)) != CLF_OK)
            rc = cli_fail(ctx, st, "validation loss");
    }
    /* one wait for the whole corpus; the sums are those of batch after batch */
    if ((st = clf_model_loss_take(m, &sum, &tok)) != CLF_OK && !rc)
        rc = cli_fail(ctx, st, "validation loss");
    free(ids);
    clf_batches_free(&b);
    *loss = tok > 0 ? sum / tok : NAN;
    return rc;
}

/* Greedy BLEU of the validation pairs against their raw target lines. */
static int validate_bleu(clf_ctx_t *ctx, clf_model_t *m, const clf_spm_t *spm, const struct clf_corpus *c,
                         double *bleu)
{
    size_t n = c->n_pairs;
    const int32_t **src = malloc(n * sizeof *src);
    size_t *len = malloc(n * sizeof *len);
    char **hyp = calloc(n, sizeof *hyp);
    const char **refs = malloc(n * sizeof *refs);
    int rc = 1;
    if (!src || !len || !hyp || !refs) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        src[i] = c->src_ids + c->src_off[i];
        len[i] = c->src_off[i + 1] - c->src_off[i];
        refs[i] = c->tgt.line[c->pair_line[i]];
    }
    struct clf_translate_opts o = clf_translate_opts_default();
    o.greedy = true;
    if (textgen_translate(ctx, m, spm, src, len, n, &o, (struct textgen_batching){128, 0}, hyp, NULL, NULL, NULL))
        goto done;
    struct clf_bleu_opts bo = {false, CLF_BLEU_TOK_13A};
    struct clf_bleu_score s;
    const char *const *r1[1] = {refs};
    clf_status st = clf_bleu_corpus((const char *const *)hyp, n, r1, 1, &bo, &s);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "validation BLEU");
        goto done;
    }
    *bleu = s.score;
    rc = 0;
done:
    if (hyp)
        for (size_t i = 0; i < n; i++)
            free(hyp[i]);
    free(src), free(len), free(hyp), free(refs);
    return rc;
}

struct curve {
    double *x, *y, *vx, *vy;
    size_t n, cap, vn, vcap;
};

static void curve_add(double **x, double **y, size_t *n, size_t *cap, double a, double b)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *x = realloc(*x, *cap * sizeof **x);
        *y = realloc(*y, *cap * sizeof **y);
    }
    if (*x && *y) {
        (*x)[*n] = a;
        (*y)[(*n)++] = b;
    }
}

static void fmt_time(double s, char *out, size_t len)
{
    if (!isfinite(s) || s < 0)
        snprintf(out, len, "--:--");
    else if (s >= 3600)
        snprintf(out, len, "%d:%02d:%02d", (int)(s / 3600), (int)fmod(s / 60, 60), (int)fmod(s, 60));
    else
        snprintf(out, len, "%d:%02d", (int)(s / 60), (int)fmod(s, 60));
}

int clf_cmd_train(int argc, char **argv)
{
    struct train_args a;
    if (!parse(argc, argv, &a))
        return 2;
    int rc = 1;
    clf_status st;
    clf_spm_t *spm = NULL;
    struct clf_corpus *train = NULL, *val = NULL;
    clf_ctx_t *ctx = NULL;
    clf_model_t *m = NULL;
    struct clf_batches batches = {0};
    int32_t *ids = NULL;
    FILE *log = NULL;
    struct curve cv = {0};
    char path[4200], bpe_path[4200];

    if (clf_mkdir_p(a.out)) {
        fprintf(stderr, "clformer train: cannot create --out %s: %s\n", a.out, strerror(errno));
        return 1;
    }
    long resume_step = a.resume ? latest_checkpoint(a.out) : -1;
    if (a.resume && resume_step < 0)
        fprintf(stderr, "clformer train: --resume: no checkpoint in %s, starting afresh\n", a.out);

    /* subwords: given, kept from an earlier run in this folder, or learned */
    snprintf(bpe_path, sizeof bpe_path, "%s/bpe.model", a.out);
    if (a.bpe) {
        snprintf(bpe_path, sizeof bpe_path, "%s", a.bpe);
    } else if (access(bpe_path, R_OK) != 0 || resume_step < 0) {
        if (!a.quiet)
            fprintf(stderr, "learning a %d-piece BPE model on %s and %s ...\n", a.vocab, a.src, a.tgt);
        double t0 = cli_now();
        struct clf_spm_learn_opts lo;
        clf_spm_learn_defaults(&lo);
        lo.vocab_size = a.vocab;
        const char *files[] = {a.src, a.tgt};
        if ((st = clf_spm_learn(files, 2, bpe_path, &lo)) != CLF_OK) {
            cli_fail(NULL, st, "learning the BPE model");
            goto done;
        }
        if (!a.quiet)
            fprintf(stderr, "  %s in %.1f s\n", bpe_path, cli_now() - t0);
    }
    if ((st = clf_spm_load(&spm, bpe_path)) != CLF_OK) {
        cli_fail(NULL, st, "loading the BPE model");
        goto done;
    }

    /* data */
    struct clf_corpus_summary sum, vsum;
    if ((st = clf_corpus_load(&train, a.src, a.tgt)) || (st = clf_corpus_encode(train, spm, a.max_len, &sum))) {
        cli_fail(NULL, st, "reading the training data");
        goto done;
    }
    if (!a.quiet)
        fprintf(stderr, "train: %zu pairs, %zu kept (%zu empty, %zu longer than %d), %zu + %zu subwords\n",
                sum.lines, sum.kept, sum.skipped_empty, sum.skipped_long, a.max_len, sum.src_tokens, sum.tgt_tokens);
    if (sum.kept == 0) {
        fprintf(stderr, "clformer train: no usable pairs in %s / %s\n", a.src, a.tgt);
        goto done;
    }
    if (a.val_src && a.val_tgt && *a.val_src) {
        if ((st = clf_corpus_load(&val, a.val_src, a.val_tgt)) || (st = clf_corpus_encode(val, spm, a.max_len, &vsum))) {
            cli_fail(NULL, st, "reading the validation data");
            goto done;
        }
    }

    /* model */
    if (!(ctx = cli_open(a.device)))
        goto done;
    if (resume_step >= 0) {
        char optim[4200];
        ckpt_paths(a.out, resume_step, path, optim, sizeof path);
        if ((st = clf_model_load(ctx, &m, path)) || (st = clf_model_load_optimizer(m, optim))) {
            cli_fail(ctx, st, "resuming");
            goto done;
        }
        if (textgen_check_vocab(path, spm, clf_model_config(m)->vocab, bpe_path))
            goto done;
    } else {
        struct clf_model_config c;
        if ((st = clf_model_config_preset(&c, a.preset)) != CLF_OK) {
            cli_fail(NULL, st, "--preset");
            goto done;
        }
        c.vocab = clf_spm_vocab_size(spm);
        if (a.layers > 0) c.enc_layers = c.dec_layers = a.layers;
        if (a.d_model > 0) c.d_model = a.d_model;
        if (a.heads > 0) c.heads = a.heads;
        if (a.d_ff > 0) c.d_ff = a.d_ff;
        if (a.norm >= 0) c.norm = a.norm;
        if (a.enc_window >= -1) c.enc_window = a.enc_window;
        if (a.dec_window >= -1) c.dec_window = a.dec_window;
        if (a.dropout >= 0) c.dropout = (float)a.dropout;
        if (a.smoothing >= 0) c.label_smoothing = (float)a.smoothing;
        if (c.max_len < a.max_len + 2) c.max_len = a.max_len + 2;
        if ((st = clf_model_init(ctx, &m, &c, a.seed)) != CLF_OK) {
            cli_fail(ctx, st, "creating the model");
            goto done;
        }
    }
    const struct clf_model_config *cfg = clf_model_config(m);
    struct position pos = {0, 0, 0, 0, 0};
    if (resume_step >= 0) {
        pos.step = resume_step;
        pos.epoch = meta_long(path, "epoch", 0);
        pos.batch = (size_t)meta_long(path, "batch", 0);
        pos.tokens = meta_double(path, "tokens");
        pos.seconds = meta_double(path, "seconds");
        a.seed = (uint64_t)meta_long(path, "seed", (long)a.seed);
        a.max_tokens = meta_long(path, "max_tokens", a.max_tokens);
        a.update_tokens = meta_long(path, "update_tokens", a.update_tokens);
    }
    if (!a.quiet) {
        char gemm[96];
        cli_gemm_describe(ctx, gemm, sizeof gemm);
        fprintf(stderr, "model: %d+%d layers, d_model %d, %d heads, d_ff %d, vocab %d, %s-norm, %zu parameters on %s; "
                "GEMM: %s\n",
                cfg->enc_layers, cfg->dec_layers, cfg->d_model, cfg->heads, cfg->d_ff, cfg->vocab,
                cfg->norm == CLF_NORM_PRE ? "pre" : "post", clf_model_numel(m), clf_ctx_device(ctx)->device_name, gemm);
        if (resume_step >= 0)
            fprintf(stderr, "resuming from update %ld (epoch %ld, batch %zu)\n", pos.step, pos.epoch + 1, pos.batch);
    }

    snprintf(path, sizeof path, "%s/log.jsonl", a.out);
    if (!(log = fopen(path, resume_step >= 0 ? "a" : "w"))) {
        fprintf(stderr, "clformer train: cannot write %s: %s\n", path, strerror(errno));
        goto done;
    }
    signal(SIGINT, on_sigint);
    signal(SIGTERM, on_sigint);
    const bool tty = isatty(2);
    const double start = cli_now() - pos.seconds, budget_s = a.minutes * 60;
    double last_save = cli_now(), window_t0 = cli_now(), window_tok = 0, smooth = NAN;
    if ((st = clf_batches_make(train, (size_t)a.max_tokens, a.seed, (uint64_t)pos.epoch, &batches)) != CLF_OK) {
        cli_fail(NULL, st, "forming batches");
        goto done;
    }
    if ((st = reserve_for(m, &batches)) != CLF_OK) {
        cli_fail(ctx, st, "planning activation memory");
        goto done;
    }
    const long total_steps = a.steps;
    bool stop = false;
    while (!stop) {
        /* one update: batches until the target token count is reached */
        size_t first = pos.batch;
        double want = (double)a.update_tokens, tok_in_update = 0;
        size_t nb = 0;
        for (size_t i = first; i < batches.n; i++) {
            const struct clf_batch *x = &batches.batch[i];
            double t = 0;
            for (size_t j = 0; j < x->n; j++) {
                size_t p = x->pairs[j];
                t += (double)(train->tgt_off[p + 1] - train->tgt_off[p]) + 1;  /* + EOS */
            }
            tok_in_update += t;
            nb++;
            if (tok_in_update >= want)
                break;
        }
        double loss = 0, tokens = 0;
        const uint32_t step = (uint32_t)pos.step + 1;
        if ((st = clf_model_zero_grad(m)) != CLF_OK) {
            cli_fail(ctx, st, "zeroing gradients");
            goto done;
        }
        for (size_t i = first; i < first + nb && st == CLF_OK; i++) {
            const struct clf_batch *x = &batches.batch[i];
            size_t ns = x->n * (size_t)x->src_len, nt = x->n * (size_t)x->tgt_len;
            int32_t *g = realloc(ids, (ns + 2 * nt) * sizeof *ids);
            if (!g) {
                fprintf(stderr, "clformer: out of host memory\n");
                goto done;
            }
            ids = g;
            if ((st = clf_batch_fill(train, x, ids, ids + ns, ids + ns + nt)) != CLF_OK) {
                cli_fail(NULL, st, "filling a batch");
                goto done;
            }
            struct clf_model_batch mb = {x->n, (size_t)x->src_len, (size_t)x->tgt_len, ids, ids + ns, ids + ns + nt};
            struct clf_step_opts o = {cfg->dropout > 0, step, (float)(1.0 / tok_in_update)};
            st = clf_model_accumulate(m, &mb, &o);
        }
        /* the host waits for the device once per update, here */
        if (st == CLF_OK)
            st = clf_model_loss_take(m, &loss, &tokens);
        if (st != CLF_OK) {
            cli_fail(ctx, st, "training step");
            goto done;
        }
        float lr = (float)(a.lr_scale * clf_lr_schedule((size_t)cfg->d_model, step, (size_t)a.warmup));
        if ((st = clf_model_adam_step(m, lr, (float)a.clip)) != CLF_OK) {
            cli_fail(ctx, st, "Adam step");
            goto done;
        }
        pos.step++;
        pos.batch = first + nb;
        pos.tokens += tokens;
        window_tok += tokens;
        double per_tok = loss / tokens;
        smooth = isnan(smooth) ? per_tok : 0.95 * smooth + 0.05 * per_tok;
        if (pos.batch >= batches.n) {  /* next epoch */
            pos.epoch++;
            pos.batch = 0;
            clf_batches_free(&batches);
            if ((st = clf_batches_make(train, (size_t)a.max_tokens, a.seed, (uint64_t)pos.epoch, &batches))) {
                cli_fail(NULL, st, "forming batches");
                goto done;
            }
            if ((st = reserve_for(m, &batches)) != CLF_OK) {
                cli_fail(ctx, st, "planning activation memory");
                goto done;
            }
        }
        double t = cli_now(), elapsed = t - start;
        pos.seconds = elapsed;
        double epoch_f = pos.epoch + (double)pos.batch / (double)batches.n;
        fprintf(log, "{\"step\":%ld,\"epoch\":%.4f,\"loss\":%.6f,\"lr\":%.6g,\"tokens\":%.0f,\"elapsed\":%.2f}\n",
                pos.step, epoch_f, per_tok, lr, tokens, elapsed);
        curve_add(&cv.x, &cv.y, &cv.n, &cv.cap, (double)pos.step, per_tok);

        /* budget and time left */
        double frac = 0;
        if (total_steps) frac = fmax(frac, (double)pos.step / (double)total_steps);
        if (a.epochs) frac = fmax(frac, epoch_f / (double)a.epochs);
        if (budget_s > 0) frac = fmax(frac, elapsed / budget_s);
        stop = frac >= 1 || interrupted;
        double tps = window_tok / fmax(t - window_t0, 1e-9);
        if (t - window_t0 > 30) {
            window_t0 = t;
            window_tok = 0;
        }
        if (!a.quiet && (tty || stop || pos.step % a.log_every == 0)) {
            char eta[32];
            fmt_time(frac > 0 ? elapsed * (1 - frac) / frac : NAN, eta, sizeof eta);
            fprintf(stderr, "%sstep %ld  epoch %.2f  loss %.3f  lr %.2e  %.0f tok/s  left %s%s", tty ? "\r" : "",
                    pos.step, epoch_f + 1, smooth, lr, tps, eta, tty ? "   " : "\n");
        }
        bool val_now = val && a.val_every > 0 && pos.step % a.val_every == 0;
        if (val_now || (stop && val)) {
            double vl = NAN, vb = NAN, v0 = cli_now();
            if (validate_loss(ctx, m, val, a.max_tokens, &vl) || validate_bleu(ctx, m, spm, val, &vb))
                goto done;
            fprintf(log, "{\"step\":%ld,\"val_loss\":%.6f,\"val_bleu\":%.2f,\"val_seconds\":%.1f}\n", pos.step, vl,
                    vb, cli_now() - v0);
            curve_add(&cv.vx, &cv.vy, &cv.vn, &cv.vcap, (double)pos.step, vl);
            if (!a.quiet)
                fprintf(stderr, "%sstep %ld  validation loss %.3f  greedy BLEU %.2f (%.0f s)\n", tty ? "\n" : "",
                        pos.step, vl, vb, cli_now() - v0);
        }
        fflush(log);
        if (stop || cli_now() - last_save > a.save_minutes * 60) {
            if ((st = save_checkpoint(m, &a, spm, &pos)) != CLF_OK) {
                cli_fail(ctx, st, "saving a checkpoint");
                goto done;
            }
            last_save = cli_now();
            if (!a.quiet && (stop || !tty))
                fprintf(stderr, "%ssaved %s/ckpt-%ld.safetensors\n", tty && !stop ? "\n" : "", a.out, pos.step);
        }
    }
    if (!a.quiet) {
        struct clf_cache_stats cs;
        clf_ctx_cache_stats(ctx, &cs);
        fprintf(stderr, "%.0f target tokens in %.1f minutes (%.0f tokens/s); kernel programs: %u compiled, %u from "
                        "the disk cache\n", pos.tokens, pos.seconds / 60, pos.tokens / fmax(pos.seconds, 1e-9),
                cs.programs_built, cs.programs_loaded);
    }
    if (interrupted && !a.quiet)
        fprintf(stderr, "interrupted: the checkpoint above holds update %ld; --resume continues from it\n", pos.step);

    /* the loss curve */
    snprintf(path, sizeof path, "%s/loss.svg", a.out);
    struct plot_series series[2] = {{"train loss", cv.x, cv.y, cv.n, false}, {"validation loss", cv.vx, cv.vy, cv.vn, true}};
    struct plot_opts po = {"clformer train: loss per target token", "update", "loss", false, false};
    if (plot_svg(path, &po, series, cv.vn ? 2 : 1) == 0 && !a.quiet)
        fprintf(stderr, "loss curve: %s\n", path);
    rc = interrupted ? 130 : 0;
done:
    if (log)
        fclose(log);
    free(ids);
    free(cv.x), free(cv.y), free(cv.vx), free(cv.vy);
    clf_batches_free(&batches);
    clf_model_free(m);
    clf_ctx_free(ctx);
    clf_corpus_free(train);
    clf_corpus_free(val);
    clf_spm_free(spm);
    return rc;
}
