/* clformer/train.h: training as a library object (host/train/), the one
 * step that `clformer train`, its benchmarks and studies share.
 *
 * A trainer owns a model and its Adam state and knows where the run is:
 * the epoch, the epoch's next batch, the target tokens seen. One call of
 * clf_trainer_step is one update: the batches that reach the target tokens
 * per update (at least one per process), this process's contiguous share
 * of them accumulated, a reduce hook (the sum across processes, when there
 * are several; MPI stays with the caller), the learning rate of the
 * paper's schedule, Adam. Checkpoints are ckpt-<step>.safetensors and
 * ckpt-<step>.optim.safetensors in a folder; their metadata goes through
 * struct clf_ckpt_meta (clformer/model.h), carried on from the checkpoint
 * the run started from.
 *
 * The trainer prints nothing; every call that can fail returns clf_status
 * with its message on the context. Logs, the console, signals and the
 * budget are the caller's. */
#ifndef CLFORMER_TRAIN_H
#define CLFORMER_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clformer/device.h"
#include "clformer/model.h"
#include "clformer/status.h"
#include "clformer/text.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

typedef struct clf_trainer clf_trainer_t;

/* One update as the hooks see it: its number (1 for the first), its
 * batches [first, first + batches) of the epoch, this process's share
 * [lo, hi) of them, and the target tokens of the whole update (over every
 * process: each batch's loss is scaled by 1/tokens). */
struct clf_train_update {
    uint32_t step;
    size_t first, batches, lo, hi;
    double tokens;
};

/* How several processes share an update (each forms the same batches):
 * all optional. */
struct clf_train_hooks {
    void *user;
    /* Before this process's last batch of an update (none when its share
     * is empty): the backward hook of that batch (clf_model_backward_hook),
     * or NULL. */
    const struct clf_backward_hook *(*backward)(void *user, const struct clf_train_update *u);
    /* Once per update, after every batch's backward and the loss's read,
     * before Adam: sum the gradients (clf_model_grads), *loss and *tokens
     * (this process's, summed in place) across the processes. */
    clf_status (*reduce)(void *user, const struct clf_train_update *u, double *loss, double *tokens);
};

struct clf_train_opts {
    /* the model: a new one of config, or (init) a checkpoint fine-tuned
     * with Adam afresh from update 0; clf_trainer_resume ignores both */
    const struct clf_model_config *config;
    const char *init;
    float dropout, label_smoothing;  /* init: < 0 keeps the checkpoint's */
    uint64_t seed;                   /* parameters, Adam, batch order, dropout */
    long max_tokens;                 /* padded tokens per batch */
    long update_tokens;              /* target tokens per update (0: one batch) */
    int warmup;                      /* updates of the schedule's warm-up */
    double lr_scale;                 /* multiplies the paper's schedule */
    double clip;                     /* global gradient-norm clipping, 0: off */
    int rank, ranks;                 /* this process among those sharing each update (0 of 1) */
    struct clf_train_hooks hooks;
};

/* The options `clformer train` and Python's Trainer start from; a caller
 * sets config or init (and hooks for several processes) over them:
 * dropout and label_smoothing -1 (the config's: every preset has the
 * paper's label smoothing 0.1, and its dropout, 0.1 for base and small,
 * 0.3 for big; a checkpoint's for init), seed 1, max_tokens 4096, update_tokens 0 (one
 * batch an update), warmup 800 (the paper's 4000 was for 25,000-token
 * updates of a far larger corpus), lr_scale 1 (the paper's schedule,
 * clf_lr_schedule), clip 0 (off), rank 0 of 1. Adam's beta1 0.9, beta2 0.98
 * and epsilon 1e-9 (the paper's) are fixed in the library, not options. */
struct clf_train_opts clf_train_opts_default(void);

/* Where a run is: what a checkpoint carries for an exact resume, and what
 * the last update made. */
struct clf_train_state {
    long step;          /* updates done */
    long epoch;         /* 0-based */
    size_t batch;       /* next batch of the epoch */
    double tokens;      /* target tokens seen */
    double seconds;     /* training time so far (the clock starts at clf_trainer_data) */
    double epochs;      /* epochs of data done, a fraction from 0 (6.57: 57% into the seventh) */
    size_t epoch_batches;  /* batches of this epoch */
    /* the last update */
    double loss;        /* per target token */
    double update_tokens_seen;  /* its target tokens (every process's) */
    float lr;
    /* the run's settings in force: a resumed run's come from its checkpoint */
    uint64_t seed;
    long max_tokens, update_tokens;
};

/* A trainer of a new model (o->config) or of o->init's checkpoint on ctx.
 * The model is the trainer's (clf_trainer_model). */
clf_status clf_trainer_init(clf_trainer_t **t, clf_ctx_t *ctx, const struct clf_train_opts *o);
/* A trainer that continues the run of dir's checkpoint of update step:
 * its model, Adam state, position, seed and batch sizes (o gives the
 * rest: the schedule, clipping, the processes, the hooks). */
clf_status clf_trainer_resume(clf_trainer_t **t, clf_ctx_t *ctx, const char *dir, long step,
                              const struct clf_train_opts *o);
void clf_trainer_free(clf_trainer_t *t);

clf_model_t *clf_trainer_model(clf_trainer_t *t);
const struct clf_train_state *clf_trainer_state(const clf_trainer_t *t);
/* The metadata of the checkpoint the run started from (--init's or the
 * resumed one's; zeros for a new model). */
const struct clf_ckpt_meta *clf_trainer_source(const clf_trainer_t *t);

/* The training pairs (kept by pointer, encoded for the model): forms the
 * epoch's batches and plans activation memory for them; starts the clock.
 * A pair wider than max_tokens (its longer side with EOS) is refused
 * (CLF_ERR_ARG naming its line and the max_tokens it needs). */
clf_status clf_trainer_data(clf_trainer_t *t, const struct clf_corpus *train);
/* One update (above). */
clf_status clf_trainer_step(clf_trainer_t *t);
/* One update on batches the caller made (a benchmark's, a study's), all
 * of them this process's, outside the epoch's order: the gradients
 * zeroed, each batch accumulated with its loss scaled by 1/tokens (the
 * update's target tokens, over every process), the hooks, Adam at lr
 * (< 0: the schedule's); the step and tokens seen counted. */
clf_status clf_trainer_step_batches(clf_trainer_t *t, const struct clf_model_batch *b, size_t n, double tokens,
                                    float lr);
/* Loss per target token over c, without dropout, in batches of
 * max_tokens (NAN when c has no tokens; a pair wider than max_tokens is
 * refused as clf_trainer_data refuses it). */
clf_status clf_trainer_validate(clf_trainer_t *t, const struct clf_corpus *c, double *loss);
/* Writes dir/ckpt-<step>.safetensors and its .optim: the metadata carried
 * on from the source checkpoint, the tokenizer tok (its files beside the
 * checkpoint: bpe.model for ours), the position; then deletes all but the
 * newest keep checkpoints of dir. */
clf_status clf_trainer_save(clf_trainer_t *t, const char *dir, const clf_tok_t *tok, int keep);

/* ------------------------------------------------------------ the set-up
 *
 * clf_trainer_open prepares a run as `clformer train` and Python's
 * Trainer do, in this order (enum clf_train_stage): the metadata of the
 * checkpoint the run starts from (opts.init's, or the newest of run's with
 * resume); the training and validation pairs read (line counts, UTF-8)
 * before anything is learned from them; the subwords (the checkpoint's
 * tokenizer, `tokenizer`, or a SentencePiece model learned into
 * learn_path, or kept there by an earlier run that is resumed); a new
 * model (the preset or opts.config, the tokenizer's vocabulary, positions
 * for max_len), opts.init's, or the resumed one with its Adam state; a
 * checkpoint's tokenizer checked against its model and max_len fitted to
 * its positions; the pairs encoded; the epoch's batches (clf_trainer_data).
 * The trainer keeps the pairs and the tokenizer (clf_trainer_free frees
 * them). Several processes (MPI stays with the caller): one learns the
 * subwords (learner), every one waits in subwords_ready before reading
 * them. */
enum clf_train_stage {
    CLF_TRAIN_STAGE_SOURCE,          /* the checkpoint's metadata (opts.init's or the resumed one's) */
    CLF_TRAIN_STAGE_READ,            /* reading the training pairs */
    CLF_TRAIN_STAGE_READ_VAL,        /* reading the validation pairs */
    CLF_TRAIN_STAGE_CKPT_TOKENIZER,  /* opening the tokenizer the checkpoint names (or `tokenizer`) */
    CLF_TRAIN_STAGE_LEARN,           /* learning the subwords into learn_path */
    CLF_TRAIN_STAGE_TOKENIZER,       /* reading the SentencePiece model */
    CLF_TRAIN_STAGE_CONFIG,          /* a new model's config: the preset, the configure hook */
    CLF_TRAIN_STAGE_MODEL,           /* the model: new, opts.init's, or resumed with its Adam state */
    CLF_TRAIN_STAGE_CHECK,           /* a checkpoint's tokenizer against its model */
    CLF_TRAIN_STAGE_MAX_LEN,         /* max_len within a checkpoint's positions */
    CLF_TRAIN_STAGE_ENCODE,          /* encoding the training pairs (none kept: CLF_ERR_ARG) */
    CLF_TRAIN_STAGE_ENCODE_VAL,      /* encoding the validation pairs */
    CLF_TRAIN_STAGE_BATCHES          /* the epoch's batches (clf_trainer_data) */
};

/* What clf_trainer_open did, filled as it goes: the caller's copy stays
 * after a failure (stage: the one that failed), the trainer keeps one
 * (clf_trainer_report). */
struct clf_train_setup_report {
    enum clf_train_stage stage;      /* the stage begun last */
    long resume_step;                /* the checkpoint resumed, -1: none */
    bool learned;                    /* the subwords were learned into learn_path by this call */
    double learn_seconds;
    int max_len;                     /* in force: the given, the default, or a checkpoint's fit */
    bool encoded;                    /* train holds the training pairs' summary (also with none kept) */
    struct clf_corpus_summary train, val;
    char tokenizer_path[4096];       /* our SentencePiece model, or the folder of Marian's files */
    clf_trainer_t *trainer;          /* for the hooks from the model's making on; NULL before */
};

/* The caller's part in the set-up: all optional. */
struct clf_train_setup_hooks {
    void *user;
    /* As each stage begins (r->stage), with the report so far: a caller's
     * progress messages. Another status than CLF_OK ends clf_trainer_open
     * with it (the caller said why). */
    clf_status (*stage)(void *user, const struct clf_train_setup_report *r);
    /* A new model's config from the preset (or opts.config) with the
     * tokenizer's vocabulary, before opts' dropout and label smoothing and
     * the positions for max_len: the caller's changes (a command's
     * --layers, --d-model ...). */
    clf_status (*configure)(void *user, struct clf_model_config *c);
    /* After this process learned the subwords (learner) or not, before
     * it reads them: where processes wait for the learner's file (an MPI
     * barrier). Called whenever the SentencePiece model is read from a
     * path (tokenizer or learn_path). */
    clf_status (*subwords_ready)(void *user);
};

struct clf_train_setup {
    const char *source, *target;          /* the training pairs (plain or gzip), line i of one translating line i of the other */
    const char *val_source, *val_target;  /* validation pairs; NULL or "": none */
    long val_pairs;                       /* keep the first N kept validation pairs (0: all) */
    /* Our SentencePiece model file; with a checkpoint's tokenizer (opts.init,
     * or a resumed run made with Marian's) it stands for the checkpoint's:
     * a file for ours, a folder for Marian's. NULL: the checkpoint's, or
     * learn_path. */
    const char *tokenizer;
    /* Without tokenizer or a checkpoint's: the SentencePiece model learned
     * jointly on source and target (learn_vocab pieces, 0: 8000) when the
     * learner, unless a resumed run finds one there. */
    const char *learn_path;
    int learn_vocab;
    bool learner;                         /* this process learns (the others wait in subwords_ready) */
    const char *run;                      /* the run's folder, where resume looks */
    bool resume;                          /* continue run's newest checkpoint (none: a new model) */
    const char *preset;                   /* a new model: NULL "small"; opts.config instead: a whole config */
    int max_len;                          /* skip pairs with a side longer (subwords); < 0: 100, or what a checkpoint's positions allow */
    struct clf_train_opts opts;           /* opts.init: fine-tune that checkpoint (preset and opts.config unused) */
    struct clf_train_setup_hooks hooks;
    struct clf_train_setup_report *report;  /* NULL: none */
};

/* learner true, max_len -1, opts clf_train_opts_default(), the rest zeros. */
struct clf_train_setup clf_train_setup_default(void);
/* The whole set-up (above) on ctx: *t a trainer ready for clf_trainer_step,
 * or NULL and the message on ctx (naming the file, the line, the limit). */
clf_status clf_trainer_open(clf_ctx_t *ctx, const struct clf_train_setup *s, clf_trainer_t **t);
/* What clf_trainer_open kept (NULL, or zeros, for a trainer of
 * clf_trainer_init or clf_trainer_resume): the tokenizer, the encoded
 * training or validation pairs (NULL: none), the report. */
const clf_tok_t *clf_trainer_tokenizer(const clf_trainer_t *t);
const struct clf_corpus *clf_trainer_corpus(const clf_trainer_t *t, bool validation);
const struct clf_train_setup_report *clf_trainer_report(const clf_trainer_t *t);

/* Checkpoints of dir: their steps, ascending, in *steps (malloc'd, the
 * caller frees); the count, -1 when dir cannot be read. */
int clf_trainer_checkpoints(const char *dir, long **steps);
/* The paths of dir's checkpoint of update step and of its Adam state. */
void clf_trainer_ckpt_paths(const char *dir, long step, char *model, char *optim, size_t len);
/* Cuts a log of JSON lines back to the records of updates up to step
 * (their "step"): a run resumed from there makes the later ones again.
 * Half lines (of a killed run) go; a missing log is no error. */
clf_status clf_trainer_log_rewind(const char *path, long step);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
