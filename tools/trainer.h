/* trainer.h: the training loop of `clformer train` as one struct and a
 * list of duties, llm.c's loop being the model. cmd_train.c parses the
 * options and calls, once per update:
 *
 *   trainer_step       accumulate batches up to the update's tokens, Adam
 *   trainer_log        one line of log.jsonl, a point of the loss curve
 *   trainer_budget     how far along the budget is; stop when it is spent
 *   trainer_progress   the progress line on stderr
 *   trainer_validate   validation loss and greedy BLEU, when due
 *   trainer_checkpoint a checkpoint, when due
 *
 * between trainer_init (subwords, data, model, the resumed position) and
 * trainer_finish (the summary and loss.svg) / trainer_free.
 *
 * Several processes (MPI, tools/dist.h: `mpirun -np N clformer train`)
 * train one model data-parallel: every rank forms the same batches, takes
 * a contiguous share of each update's batches, and the gradients, loss and
 * tokens are summed across ranks in trainer_step, between the backward
 * passes and Adam, which every rank then runs alike. `writer` (rank 0,
 * decided once in trainer_init) is what every write of logs, checkpoints,
 * the plot and the console asks; it alone validates. */
#ifndef CLF_TRAINER_H
#define CLF_TRAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clformer.h"

/* The options of `clformer train` (cmd_train.c: usage and defaults). */
struct train_args {
    const char *src, *tgt, *val_src, *val_tgt, *out, *bpe, *device, *preset;
    const char *init;  /* --init CKPT: fine-tune it (finetune.c) */
    long steps, epochs;
    double minutes, save_minutes;
    int vocab, max_len, warmup, keep, val_every, log_every;
    long max_tokens, update_tokens;
    double lr_scale, clip;
    double bucket_mb;     /* under MPI: gradient buckets summed during the backward; 0: after it, at once */
    uint64_t seed;
    bool resume, quiet;
    int layers, d_model, heads, d_ff, norm, enc_window, dec_window;
    double dropout, smoothing;
};

/* Training position: what a checkpoint must carry for an exact resume. */
struct position {
    long step;       /* updates done */
    long epoch;      /* 0-based */
    size_t batch;    /* next batch of the epoch */
    double tokens;   /* target tokens seen */
    double seconds;  /* training time so far */
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
    long check_every;     /* CLF_DIST_CHECK: compare the parameters' hash every K updates */
    long fail_step;       /* CLF_DIST_FAIL_RANK (tests only): fail at this update */

    /* what it trains on and with */
    char bpe_path[4200];  /* our SentencePiece model, or the directory of Marian's tokenizer files */
    clf_tok_t *tok;
    /* the metadata of the checkpoint the run starts from, --init's or the
     * one it resumes (zeros: a fresh run); its checkpoints carry it on
     * (clf_ckpt_meta_carry: an imported model's generation defaults,
     * init, imported_from) */
    struct clf_ckpt_meta source;
    struct clf_corpus *train, *val;  /* val NULL: no validation */
    clf_ctx_t *ctx;
    clf_model_t *m;
    const struct clf_model_config *cfg;
    struct clf_batches batches;      /* this epoch's, in order */
    int32_t *ids;                    /* one batch's ids on the host */

    /* where it is */
    long resume_step;     /* the checkpoint resumed from, -1: a fresh start */
    struct position pos;
    double epochs;        /* epochs of data completed, a fraction counting from 0
                           * (6.57: 57% into the seventh): log.jsonl and progress */

    /* the last update */
    double loss;          /* per target token */
    double tokens;        /* target tokens */
    float lr;

    /* the clock and the budget */
    double start, now;    /* now: read once per update, after the step */
    double frac;          /* of the budget spent */
    bool stop;
    double last_save;
    double window_t0, window_tok, smooth;  /* the progress line's tokens/s and loss */

    FILE *log;            /* log.jsonl */
    struct curve train_curve, val_curve;
};

/* Each int function returns 0, or 1 after printing what failed. After
 * trainer_init, successful or not, trainer_free releases everything. */
int trainer_init(struct trainer *t, const struct train_args *a);
int trainer_step(struct trainer *t);
void trainer_log(struct trainer *t);
void trainer_budget(struct trainer *t);
void trainer_progress(struct trainer *t);
int trainer_validate(struct trainer *t);
int trainer_checkpoint(struct trainer *t);
/* The summary and the loss curve; returns the exit status: 130 after
 * Ctrl-C, else 0. */
int trainer_finish(struct trainer *t);
void trainer_free(struct trainer *t);

/* --init (finetune.c), for trainer_init. The tokenizer the checkpoint the
 * run starts from names (t->source: --init's, or a resumed one's), or
 * --bpe, into t->tok and t->bpe_path. */
int trainer_open_tokenizer(struct trainer *t, const char *ckpt);
/* The model of --init with a fresh optimizer (step 0, --seed), checked
 * as below; applies --dropout and --label-smoothing. */
int trainer_init_model(struct trainer *t);
/* For a checkpoint's model (t->m, from ckpt, whose metadata is t->source):
 * that t->tok is the tokenizer it was made with (the same special ids, no
 * id beyond its vocabulary, the tokenizer_hash it records); --max-len
 * within its positions (default 100 or what they allow). Return 0, or 1
 * after saying why not. */
int trainer_check_tokenizer(const struct trainer *t, const char *ckpt);
int trainer_fit_max_len(struct trainer *t, const char *ckpt);
/* The tokenizer's files into --out (bpe.model, or Marian's source.spm,
 * target.spm, vocab.json ...). */
int trainer_copy_tokenizer(const struct trainer *t);

#endif
