/* cmd_train.c: `clformer train`: the paper's recipe on parallel text.
 * Here: the options, signals, the loop, which reads as the list of duties
 * of one update, and what the command tells: log.jsonl (rewound on
 * resume), the progress line, the budget, the summary and loss.svg. The
 * work is the library's trainer (clformer_train.h: batches, updates, Adam,
 * checkpoints, the resumed position), set up by train_setup.c and called
 * by trainer.c. Under mpirun every rank runs this loop; a rank whose duty
 * fails ends the whole job (dist_abort), naming itself and the duty,
 * instead of leaving the others waiting for it. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buckets.h"
#include <clformer/advanced/files.h>
#include "cli.h"
#include "commands.h"
#include "dist.h"
#include "json_out.h"
#include "plot.h"
#include "trainer.h"

#ifndef CLF_DATA_DIR
#define CLF_DATA_DIR "data/multi30k"
#endif

static void usage(FILE *f)
{
    const struct clf_train_opts d = clf_train_opts_default();  /* the library's defaults, shown as they are */
    fprintf(f,
            "usage: clformer train [options]\n"
            "  --src FILE --tgt FILE           training pairs (plain or gzip; default: bundled Multi30k EN->DE)\n"
            "  --val-src FILE --val-tgt FILE   validation pairs (default: bundled Multi30k val)\n"
            "  --out DIR                       checkpoints, BPE model, log and plot (default runs/train)\n"
            "  --init CKPT                     fine-tune CKPT (ours or `clformer import`'s): its weights, config\n"
            "                                  and tokenizer (copied into DIR); Adam afresh from update 0, so the\n"
            "                                  warm-up applies again (lower --lr-scale to fine-tune gently)\n"
            "  --preset NAME                   base, big, small (default) or tiny\n"
            "  --layers N --d-model N --heads N --d-ff N --dropout P --label-smoothing E\n"
            "  --norm post|pre --enc-window R --dec-window R   restricted self-attention radius\n"
            "  --steps N | --epochs N | --minutes M   the budget (default: 1 epoch)\n"
            "  --bpe MODEL                     a SentencePiece model to use (default: learn one into DIR; with\n"
            "                                  --init, the checkpoint's, or the directory of Marian's files)\n"
            "  --vocab N                       pieces of a learned BPE model (default 8000)\n"
            "  --max-len N                     skip pairs with a side longer than N subwords (default 100)\n"
            "  --max-tokens N                  padded tokens per batch (default %ld)\n"
            "  --update-tokens N               target tokens per update, accumulated (default: one batch;\n"
            "                                  under mpirun at least one batch per rank, split among them)\n"
            "  --warmup N                      warm-up updates (default %d)\n"
            "  --lr-scale X                    multiplies the paper's schedule (default %g)\n"
            "  --clip X                        global gradient-norm clipping (default %g: off)\n"
            "  --bucket-mb MB                  under mpirun: sum the gradients in buckets of MB while the\n"
            "                                  backward runs (default 3); 0: all at once after it\n"
            "  --save-minutes M --keep K       checkpoint every M minutes, keep the last K (10, 5)\n"
            "  --val-every N                   validate every N updates (default 500; 0: only at the end)\n"
            "  --val-minutes M                 validate every M minutes too (default 0: off)\n"
            "  --val-sentences N               validate on the first N validation pairs (default 0: all)\n"
            "  --log-every N                   progress line every N updates when not on a terminal (50)\n"
            "  --seed N (default %llu) --device D --resume --quiet\n",
            d.max_tokens, d.warmup, d.lr_scale, d.clip, (unsigned long long)d.seed);
}

/* --init takes the model's shape and vocabulary from its checkpoint: the
 * options that would set them are refused (the first one named), as is
 * --resume, which continues a run of its own. */
static bool init_conflicts(const struct train_args *a)
{
    const struct {
        const char *flag;
        bool set;
    } shape[] = {{"--preset", a->preset != NULL}, {"--layers", a->layers != -1}, {"--d-model", a->d_model != -1},
                 {"--heads", a->heads != -1}, {"--d-ff", a->d_ff != -1}, {"--norm", a->norm != -1},
                 {"--enc-window", a->enc_window != -2}, {"--dec-window", a->dec_window != -2},
                 {"--vocab", a->vocab != 0}, {"--resume", a->resume}};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        if (!shape[i].set)
            continue;
        if (!strcmp(shape[i].flag, "--resume"))
            fprintf(stderr, "clformer train: --init and --resume: --init starts a fine-tuning run in --out, --resume "
                            "continues the run already there (a fine-tuning run too): pass one of them\n");
        else
            fprintf(stderr, "clformer train: %s with --init %s: the model's shape and vocabulary come from the "
                            "checkpoint; leave %s out\n", shape[i].flag, a->init, shape[i].flag);
        return true;
    }
    return false;
}

static bool parse(int argc, char **argv, struct train_args *a)
{
    const struct clf_train_opts d = clf_train_opts_default();
    *a = (struct train_args){.src = CLF_DATA_DIR "/train.en.gz", .tgt = CLF_DATA_DIR "/train.de.gz",
                             .val_src = CLF_DATA_DIR "/val.en.gz", .val_tgt = CLF_DATA_DIR "/val.de.gz",
                             .out = "runs/train", .preset = NULL, .epochs = 0, .save_minutes = 10,
                             .vocab = 0, .max_len = -1, .warmup = d.warmup, .keep = 5, .val_every = 500,
                             .log_every = 50, .max_tokens = d.max_tokens, .update_tokens = d.update_tokens,
                             .lr_scale = d.lr_scale, .clip = d.clip, .bucket_mb = GRAD_BUCKET_MB, .seed = d.seed, .layers = -1,
                             .d_model = -1, .heads = -1, .d_ff = -1, .norm = -1, .enc_window = -2,
                             .dec_window = -2, .dropout = d.dropout, .smoothing = d.label_smoothing};
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        const char *v = NULL;
        double x = 0;
#define STR(name, field) if (cli_opt(argc, argv, &i, name, &v, &bad)) { a->field = v; continue; }
#define NUM(name, field, lo, hi, integer)                                              \
    if (cli_opt_number(argc, argv, &i, name, lo, hi, integer, &x, &bad)) {             \
        a->field = x;  /* the field's own type (int, long, double, uint64_t) */       \
        continue;                                                                      \
    }
#define INT(name, field) NUM(name, field, INT_MIN, INT_MAX, true)
#define LONG(name, field) NUM(name, field, -1e15, 1e15, true)
#define REAL(name, field) NUM(name, field, -1e300, 1e300, false)
        STR("--src", src) STR("--tgt", tgt) STR("--val-src", val_src) STR("--val-tgt", val_tgt) STR("--out", out)
        STR("--bpe", bpe) STR("--device", device) STR("--preset", preset) STR("--init", init)
        LONG("--steps", steps) LONG("--epochs", epochs) REAL("--minutes", minutes)
        REAL("--save-minutes", save_minutes) NUM("--val-minutes", val_minutes, 0, 1e6, false)
        NUM("--val-sentences", val_pairs, 0, 1e9, true)
        INT("--vocab", vocab) INT("--max-len", max_len)
        INT("--warmup", warmup) INT("--keep", keep) INT("--val-every", val_every)
        INT("--log-every", log_every) LONG("--max-tokens", max_tokens)
        LONG("--update-tokens", update_tokens) REAL("--lr-scale", lr_scale) REAL("--clip", clip)
        REAL("--bucket-mb", bucket_mb)
        NUM("--seed", seed, 0, 9007199254740992.0, true) INT("--layers", layers) INT("--d-model", d_model)
        INT("--heads", heads) INT("--d-ff", d_ff) INT("--enc-window", enc_window)
        INT("--dec-window", dec_window) REAL("--dropout", dropout)
        REAL("--label-smoothing", smoothing)
        if (cli_opt(argc, argv, &i, "--norm", &v, &bad)) {
            a->norm = !v ? a->norm : !strcmp(v, "pre") ? CLF_NORM_PRE : !strcmp(v, "post") ? CLF_NORM_POST : -2;
            continue;
        }
#undef STR
#undef NUM
#undef INT
#undef LONG
#undef REAL
        if (!strcmp(argv[i], "--resume")) a->resume = true;
        else if (!strcmp(argv[i], "--quiet")) a->quiet = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); exit(0); }
        else { fprintf(stderr, "clformer train: unknown option '%s'\n", argv[i]); bad = true; }
    }
    if (!bad && a->norm == -2) {
        fprintf(stderr, "clformer train: --norm takes post or pre\n");
        bad = true;
    }
    if (!bad && a->init)
        bad = init_conflicts(a);
    if (!bad && (a->max_tokens < 1 || a->warmup < 1 || a->keep < 1 || a->log_every < 1 ||
                 (a->max_len < 2 && a->max_len != -1) || a->vocab < 0 || a->steps < 0 || a->epochs < 0 ||
                 a->minutes < 0 || a->val_every < 0 || a->save_minutes < 0 || a->bucket_mb < 0)) {
        fprintf(stderr, "clformer train: --max-tokens, --warmup, --keep, --log-every must be >= 1, --max-len >= 2, "
                        "budgets, --vocab, --val-every, --save-minutes and --bucket-mb >= 0\n");
        bad = true;
    }
    if (bad)
        usage(stderr);
    if (!a->steps && !a->epochs && !a->minutes)
        a->epochs = 1;
    return !bad;
}

/* ------------------------------------------------------------ what it tells */

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Adds (a, b) to c; a point that finds no memory is left out. */
static void curve_add(struct curve *c, double a, double b)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        double *x = realloc(c->x, cap * sizeof *x);
        if (x)
            c->x = x;
        double *y = x ? realloc(c->y, cap * sizeof *y) : NULL;
        if (y)
            c->y = y;
        if (!x || !y)
            return;
        c->cap = cap;
    }
    c->x[c->n] = a;
    c->y[c->n++] = b;
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

/* log.jsonl; a resumed run's keeps the records up to the checkpoint it
 * resumes from (a run killed after it logged updates that will be made
 * again, and may have left half a line). */
static int open_log(struct trainer *t)
{
    char path[CLF_PATH_MAX];
    clf_status st;
    snprintf(path, sizeof path, "%s/log.jsonl", t->a.out);
    if (t->resume_step >= 0 && (st = clf_trainer_log_rewind(path, t->resume_step)) != CLF_OK)
        return cli_fail(NULL, st, "resuming log.jsonl");
    if (!(t->log = fopen(path, t->resume_step >= 0 ? "a" : "w"))) {
        fprintf(stderr, "clformer train: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* One line of log.jsonl, a point of the loss curve. */
static void log_update(struct trainer *t)
{
    const struct clf_train_state *s = t->s;
    curve_add(&t->train_curve, (double)s->step, s->loss);
    if (!t->writer)
        return;
    struct cli_json w;
    cli_json_init(&w, t->log, true);
    cli_json_obj(&w, NULL);
    cli_json_num(&w, "step", "%ld", s->step);
    cli_json_num(&w, "epoch", "%.4f", s->epochs);
    cli_json_num(&w, "loss", "%.6f", s->loss);
    cli_json_num(&w, "lr", "%.6g", s->lr);
    cli_json_num(&w, "tokens", "%.0f", s->update_tokens_seen);
    cli_json_num(&w, "elapsed", "%.2f", s->seconds);
    cli_json_end(&w);
    fputc('\n', t->log);
    fflush(t->log);
}

/* How far along the budget is; stop when it is spent or on Ctrl-C. */
static void budget(struct trainer *t)
{
    const struct train_args *a = &t->a;
    double frac = 0, budget_s = a->minutes * 60;
    if (a->steps) frac = fmax(frac, (double)t->s->step / (double)a->steps);
    if (a->epochs) frac = fmax(frac, t->s->epochs / (double)a->epochs);
    if (budget_s > 0) frac = fmax(frac, t->s->seconds / budget_s);
    t->frac = frac;
    /* every rank stops at the same update (a --minutes budget is read on
     * each rank's clock, Ctrl-C may reach one) */
    t->stop = dist_any(frac >= 1 || interrupted);
}

/* The progress line: rewritten in place on a terminal; else every
 * --log-every updates. */
static void progress(struct trainer *t)
{
    const struct clf_train_state *s = t->s;
    t->window_tok += s->update_tokens_seen;
    t->smooth = isnan(t->smooth) ? s->loss : 0.95 * t->smooth + 0.05 * s->loss;
    double tps = t->window_tok / fmax(t->now - t->window_t0, 1e-9);
    if (t->now - t->window_t0 > 30) {
        t->window_t0 = t->now;
        t->window_tok = 0;
    }
    if (!t->talk || !(t->tty || t->stop || s->step % t->a.log_every == 0))
        return;
    char eta[32];
    fmt_time(t->frac > 0 ? s->seconds * (1 - t->frac) / t->frac : NAN, eta, sizeof eta);
    fprintf(stderr, "%sstep %ld  epoch %.2f  loss %.3f  lr %.2e  %.0f tok/s  left %s%s", t->tty ? "\r" : "",
            s->step, s->epochs, t->smooth, s->lr, tps, eta, t->tty ? "   " : "\n");
}

/* Validation loss and greedy BLEU now (the writer, with validation data):
 * log.jsonl, the plot's points, the cost. */
static int validate_now(struct trainer *t)
{
    double vl = NAN, vb = NAN, v0 = clf_now();
    if (trainer_validate_now(t, &vl, &vb))
        return 1;
    t->last_val = clf_now();
    const double took = t->last_val - v0;
    t->val_seconds += took;
    t->val_runs++;
    curve_add(&t->val_curve, (double)t->s->step, vl);
    curve_add(&t->bleu_curve, (double)t->s->step, vb);
    struct cli_json w;
    cli_json_init(&w, t->log, true);
    cli_json_obj(&w, NULL);
    cli_json_num(&w, "step", "%ld", t->s->step);
    cli_json_num(&w, "val_loss", "%.6f", vl);
    cli_json_num(&w, "val_bleu", "%.2f", vb);
    cli_json_num(&w, "val_pairs", "%zu", t->val->n_pairs);
    cli_json_num(&w, "val_seconds", "%.1f", took);
    cli_json_end(&w);
    fputc('\n', t->log);
    fflush(t->log);
    if (t->talk)
        fprintf(stderr, "%sstep %ld  validation loss %.3f  greedy BLEU %.2f (%zu pairs, %.0f s)\n", t->tty ? "\n" : "",
                t->s->step, vl, vb, t->val->n_pairs, took);
    return 0;
}

/* Every --val-every updates, every --val-minutes after the last one ended,
 * and at the end, when there is validation data; before the first update
 * of a fine-tuning run, the model as it came. */
static int validate(struct trainer *t)
{
    const long every = t->a.val_every;
    const bool by_time = t->a.val_minutes > 0 && t->now - t->last_val >= t->a.val_minutes * 60;
    if (!t->writer || !t->val || !(t->stop || by_time || (every > 0 && t->s->step % every == 0)))
        return 0;
    return validate_now(t);
}

/* Every --save-minutes and at the end. */
static int checkpoint(struct trainer *t)
{
    if (!t->writer || !(t->stop || clf_now() - t->last_save > t->a.save_minutes * 60))
        return 0;
    if (trainer_save(t))
        return 1;
    t->last_save = clf_now();
    if (t->talk && (t->stop || !t->tty))
        fprintf(stderr, "%ssaved %s/ckpt-%ld.safetensors\n", t->tty && !t->stop ? "\n" : "", t->a.out, t->s->step);
    return 0;
}

/* ------------------------------------------------------------ start, end */

static int start(struct trainer *t, const struct train_args *a)
{
    *t = (struct trainer){.a = *a, .smooth = NAN, .rank = dist_rank(), .ranks = dist_size()};
    /* the one place that decides whether this process writes: under MPI,
     * rank 0 alone (the others wait for its bpe.model) */
    t->writer = t->rank == 0;
    const char *check = getenv("CLF_DIST_CHECK"), *fail = getenv("CLF_DIST_FAIL_RANK");
    t->check_every = check ? atol(check) : 0;
    t->fail_step = fail && *fail && atoi(fail) == t->rank ? 3 : 0;
    t->talk = t->writer && !a->quiet;
    t->tty = isatty(2);
    /* the batches before log.jsonl: data the batches cannot hold is refused
     * before the run's folder gets a log */
    if (trainer_setup(t) || (t->writer && open_log(t)))
        return 1;
    /* sigaction, not signal(): under strict C11 glibc's signal() has System
     * V semantics and resets the handler after one delivery, so a second
     * Ctrl-C killed the run in the middle of its last checkpoint */
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    t->last_save = t->last_val = t->window_t0 = t->started = clf_now();
    if (t->talk && t->resume_step >= 0)
        fprintf(stderr, "resuming from update %ld at epoch %.2f (%zu of %zu batches of that epoch done)\n",
                t->s->step, t->s->epochs, t->s->batch, t->s->epoch_batches);
    if (a->init && t->writer && t->val && validate_now(t))
        return 1;
    /* a run resumed from a checkpoint that already spent the budget (one
     * killed after its last save) makes no update beyond it */
    budget(t);
    if (t->stop && t->talk)
        fprintf(stderr, "nothing to do: update %ld already spends the budget (--steps, --epochs, --minutes)\n",
                t->s->step);
    return 0;
}

/* loss.svg: the raw losses faded under their moving average (plot.h),
 * validation loss and greedy BLEU (right-hand axis) as points. */
static void plot(const struct trainer *t)
{
    char path[CLF_PATH_MAX], ema_label[64];
    snprintf(path, sizeof path, "%s/loss.svg", t->a.out);
    const struct curve *tc = &t->train_curve, *vc = &t->val_curve, *bc = &t->bleu_curve;
    double *ema = malloc(tc->n * sizeof *ema);
    if (!ema)
        return;
    const double wt = plot_ema_weight(tc->n);
    plot_ema(ema, tc->y, tc->n, wt);
    snprintf(ema_label, sizeof ema_label, "smoothed (EMA %.4g)", wt);
    struct plot_series series[4] = {
        {.label = "train loss", .x = tc->x, .y = tc->y, .n = tc->n, .faded = true, .color = 1},
        {.label = ema_label, .x = tc->x, .y = ema, .n = tc->n, .color = 1},
        {.label = "validation loss", .x = vc->x, .y = vc->y, .n = vc->n, .points = true, .color = 2},
        {.label = "greedy BLEU", .x = bc->x, .y = bc->y, .n = bc->n, .points = true, .right = true, .color = 3}};
    struct plot_opts po = {.title = "clformer train: loss per target token", .xlabel = "update", .ylabel = "loss",
                           .y2label = "greedy BLEU (validation)"};
    if (plot_svg(path, &po, series, vc->n ? 4 : 2) == 0 && t->talk)
        fprintf(stderr, "loss curve: %s\n", path);
    free(ema);
}

/* The summary and the loss curve; the exit status: 130 after Ctrl-C. */
static int finish(struct trainer *t)
{
    const struct clf_train_state *p = t->s;
    if (t->talk) {
        struct clf_cache_stats cs;
        clf_ctx_cache_stats(t->ctx, &cs);
        fprintf(stderr, "%.0f target tokens in %.1f minutes (%.0f tokens/s); kernel programs: %u compiled, %u from "
                        "the disk cache\n", p->tokens, p->seconds / 60, p->tokens / fmax(p->seconds, 1e-9),
                cs.programs_built, cs.programs_loaded);
        if (t->ranks > 1)
            fprintf(stderr, "%d ranks: %.1f s of rank 0's time in summing gradients (MPI_Allreduce, or starting "
                    "and waiting for the buckets' MPI_Iallreduce; waiting for the other ranks included)\n", t->ranks,
                    dist_sum_seconds());
        if (t->buckets)
            fprintf(stderr, "gradient buckets per update: %zu\n", grad_buckets_count(t->buckets));
        const double ran = clf_now() - t->started;  /* since the setup: updates, validations, checkpoints */
        if (t->val_runs)
            fprintf(stderr, "validation: %d run%s on %zu pairs, %.1f s: %.1f%% of the run's %.1f minutes\n",
                    t->val_runs, t->val_runs == 1 ? "" : "s", t->val->n_pairs, t->val_seconds,
                    100 * t->val_seconds / fmax(ran, 1e-9), ran / 60);
        if (interrupted)
            fprintf(stderr, "interrupted: the checkpoint above holds update %ld; --resume continues from it\n",
                    p->step);
    }
    if (t->writer && t->train_curve.n)
        plot(t);
    return interrupted ? 130 : 0;
}

static void release(struct trainer *t)
{
    if (t->log)
        fclose(t->log);
    free(t->grads);
    grad_buckets_free(t->buckets);
    free(t->train_curve.x), free(t->train_curve.y), free(t->val_curve.x), free(t->val_curve.y);
    free(t->bleu_curve.x), free(t->bleu_curve.y);
    clf_trainer_free(t->tr);  /* and the tokenizer and pairs it keeps */
    clf_ctx_free(t->ctx);
}

int clf_cmd_train(int argc, char **argv)
{
    struct train_args a;
    if (!parse(argc, argv, &a))
        return 2;
    dist_init(&argc, &argv);
    struct trainer t;
    const char *duty = "setting up (subwords, data, device, model)";
    int rc = start(&t, &a);
    while (!rc && !t.stop) {
        duty = "training step";
        if ((rc = trainer_step(&t)))  /* one update: its batches, backward, the sum across ranks, Adam */
            break;
        log_update(&t);               /* log.jsonl, the loss curve */
        budget(&t);                   /* how far along; stop when spent or on Ctrl-C */
        progress(&t);                 /* the progress line */
        duty = "validation";
        if ((rc = validate(&t)))      /* when due: loss and greedy BLEU */
            break;
        duty = "checkpoint";
        rc = checkpoint(&t);          /* when due, and at the end */
    }
    char msg[160];
    snprintf(msg, sizeof msg, "%s failed (its message is above); ending the job", duty);
    dist_fail_if(rc, msg);
    if (!rc)
        rc = finish(&t);
    release(&t);
    dist_finalize();
    return rc;
}
