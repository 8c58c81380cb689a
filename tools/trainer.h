/* trainer.h: `clformer train` as one struct and a list of duties, llm.c's
 * loop being the model. The work is the library's trainer
 * (clformer_train.h: batches grouped into updates, the step, Adam,
 * checkpoints, the resumed position); the command around it asks and
 * tells. cmd_train.c parses the options and calls, once per update:
 *
 *   trainer_step       the library's step, with the sum across ranks in its hooks
 *   log_update         one line of log.jsonl, a point of the loss curve
 *   budget             how far along the budget is; stop when it is spent
 *   progress           the progress line on stderr
 *   validate           validation loss and greedy BLEU, when due
 *   checkpoint         a checkpoint, when due
 *
 * after trainer_setup (train_setup.c: the device, then the library's
 * set-up: subwords, model, data, the resumed position) and before the
 * summary and loss.svg.
 *
 * Several processes (MPI, cli/dist.h: `mpirun -np N clformer train`)
 * train one model data-parallel: every rank forms the same batches, takes
 * a contiguous share of each update's batches, and the gradients, loss and
 * tokens are summed across ranks by the hooks trainer.c gives the library's
 * trainer (clf_train_hooks), between the backward passes and Adam, which
 * every rank then runs alike. `writer` (rank 0, decided once at the start)
 * is what every write of logs, checkpoints, the plot and the console asks;
 * it alone validates. */
#ifndef CLF_TRAINER_H
#define CLF_TRAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <clformer/advanced/files.h>
#include <clformer/advanced.h>
#include <clformer/train.h>

/* The options that size what the device's memory may refuse (the library
 * names the limit, cli_fail_memory these): the model, and the batches
 * with it. */
#define TRAIN_MODEL_FLAGS "--preset, --layers, --d-model, --d-ff, --vocab"
#define TRAIN_BATCH_FLAGS "--max-tokens for the batches; " TRAIN_MODEL_FLAGS " for the model"

/* The options of `clformer train` (cmd_train.c: usage and defaults). */
struct train_args {
    const char *src, *tgt, *val_src, *val_tgt, *out, *bpe, *device, *preset;
    const char *init;  /* --init CKPT: fine-tune it (finetune.c) */
    long steps, epochs;
    double minutes, save_minutes;
    double val_minutes;   /* validate every M minutes too (0: off) */
    long val_pairs;       /* validate on the first N kept validation pairs (0: all) */
    int vocab, max_len, warmup, keep, val_every, log_every;
    long max_tokens, update_tokens;
    double lr_scale, clip;
    double bucket_mb;     /* under MPI: gradient buckets summed during the backward; 0: after it, at once */
    uint64_t seed;
    bool resume, quiet;
    int layers, d_model, heads, d_ff, norm, enc_window, dec_window;
    double dropout, smoothing;
};

/* Points of one line of the loss plot. */
struct curve {
    double *x, *y;
    size_t n, cap;
};

struct trainer {
    struct train_args a;  /* a resumed run takes seed and batch sizes from its checkpoint */
    bool writer;          /* this process writes logs, checkpoints, the plot, the console */
    bool talk;            /* writer and not --quiet */
    bool tty;             /* stderr is a terminal: one progress line, rewritten */
    int rank, ranks;      /* this process among the job's (0 of 1 without MPI) */
    float *grads;         /* the gradients on the host while ranks sum them (ranks > 1, no buckets) */
    struct grad_buckets *buckets;  /* ranks > 1 and --bucket-mb > 0 */
    bool bucketed;        /* this update's sum runs in the buckets */
    long check_every;     /* CLF_DIST_CHECK: compare the parameters' hash every K updates */
    long fail_step;       /* CLF_DIST_FAIL_RANK (tests only): fail at this update */

    /* what it trains on and with: the library's trainer holds the
     * tokenizer and the pairs (clf_trainer_open), these are its */
    const clf_tok_t *tok;
    const struct clf_corpus *val;    /* NULL: no validation */
    clf_ctx_t *ctx;
    clf_trainer_t *tr;               /* the library's trainer: the model, the data, the batches, the position */
    struct clf_train_setup_report setup;  /* what clf_trainer_open did (the stage that failed) */
    struct {
        bool resume, learned, ranks, train, val;
    } told;                          /* the set-up's messages said so far (train_setup.c) */
    bool said;                       /* a duty of the set-up's hook failed and said why */
    clf_model_t *m;                  /* tr's */
    const struct clf_train_state *s; /* tr's: where the run is, the last update */
    const struct clf_model_config *cfg;
    long resume_step;     /* the checkpoint resumed from, -1: a fresh start */

    /* the clock and the budget */
    double now;           /* read once per update, after the step */
    double frac;          /* of the budget spent */
    bool stop;
    double last_save;
    double window_t0, window_tok, smooth;  /* the progress line's tokens/s and loss */

    /* validation: when the last one ended, what all of them cost, of the
     * seconds since the start */
    double last_val, val_seconds, started;
    int val_runs;

    FILE *log;            /* log.jsonl */
    struct curve train_curve, val_curve, bleu_curve;
};

/* Each int function returns 0, or 1 after printing what failed.
 * train_setup.c: the folder, the device, the library's set-up
 * (clf_trainer_open: the resumed checkpoint, the data, the subwords, the
 * model, the epoch's batches; t->tr, t->m, t->s, t->tok, t->val), and
 * under MPI the host buffer or buckets of the sum. */
int trainer_setup(struct trainer *t);
/* trainer.c: the library trainer's options from the command's, with the
 * sum across ranks as its hooks when there are several; one update; the
 * validation loss and greedy BLEU now; a checkpoint now. */
struct clf_train_opts trainer_opts(struct trainer *t, const struct clf_model_config *config);
int trainer_step(struct trainer *t);
int trainer_validate_now(struct trainer *t, double *loss, double *bleu);
int trainer_save(struct trainer *t);

/* --init (finetune.c), for trainer_setup: the tokenizer's files, read
 * from `from` (bpe.model, or the folder of Marian's source.spm,
 * target.spm, vocab.json ...), into --out. */
int trainer_copy_tokenizer(const struct trainer *t, const char *from);

#endif
