/* trainer.c: training as a library object (clformer_train.h). A trainer
 * owns the model and its Adam state, forms each epoch's batches by tokens,
 * groups them into updates of update_tokens target tokens (at least one
 * batch per process), accumulates this process's share, lets the reduce
 * hook sum across processes, and steps Adam under the warm-up / inverse
 * square root schedule. It resumes exactly from its checkpoints, whose
 * metadata goes through struct clf_ckpt_meta. No printing, no exit. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/files.h"
#include "base/status.h"
#include "clformer.h"
#include "clformer_json.h"
#include "clformer_train.h"
#include "train/kept.h"

struct clf_trainer {
    clf_ctx_t *ctx;
    clf_model_t *m;
    struct clf_train_opts o;           /* a resumed run's seed and batch sizes: its checkpoint's */
    char init[sizeof ((struct clf_ckpt_meta *)0)->init];  /* o.init, for the metadata ("" none) */
    struct clf_ckpt_meta source;       /* the checkpoint the run starts from (zeros: none) */
    const struct clf_corpus *train;
    struct clf_batches batches;        /* this epoch's, in order */
    int32_t *ids;                      /* one batch's ids on the host */
    struct clf_train_state s;
    double start;                      /* the clock, less the seconds of a resumed run */
    struct clf_trainer_kept *kept;     /* clf_trainer_open's tokenizer, pairs, report (kept.h); NULL: none */
};

/* A failure of a call without a context (the text layer, the checkpoint
 * metadata) with its message moved onto ctx, where the trainer's caller
 * reads every message. */
static clf_status on_ctx(clf_ctx_t *ctx, clf_status st)
{
    return st == CLF_OK ? st : clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
}

/* ------------------------------------------------------------ checkpoints */

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int clf_trainer_checkpoints(const char *dir, long **steps)
{
    DIR *d = opendir(dir);
    *steps = NULL;
    if (!d)
        return -1;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long s;
        char tail[64];
        if (sscanf(e->d_name, "ckpt-%ld.%63s", &s, tail) != 2 || strcmp(tail, "safetensors"))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            long *g = realloc(*steps, (size_t)cap * sizeof *g);
            if (!g)
                break;
            *steps = g;
        }
        (*steps)[n++] = s;
    }
    closedir(d);
    if (n)
        qsort(*steps, (size_t)n, sizeof **steps, cmp_long);
    return n;
}

void clf_trainer_ckpt_paths(const char *dir, long step, char *model, char *optim, size_t len)
{
    snprintf(model, len, "%s/ckpt-%ld.safetensors", dir, step);
    snprintf(optim, len, "%s/ckpt-%ld.optim.safetensors", dir, step);
}

clf_status clf_trainer_save(clf_trainer_t *t, const char *dir, const clf_tok_t *tok, int keep)
{
    const struct clf_train_state *p = &t->s;
    char model[CLF_PATH_MAX], optim[CLF_PATH_MAX];
    clf_trainer_ckpt_paths(dir, p->step, model, optim, sizeof model);
    /* what the checkpoint the run started from passes on; the tokenizer is
     * the run's, its files beside the checkpoint */
    struct clf_ckpt_meta meta;
    clf_ckpt_meta_init(&meta, t->m);
    clf_ckpt_meta_carry(&meta, &t->source);
    if (t->init[0])
        snprintf(meta.init, sizeof meta.init, "%s", t->init);
    meta.tokenizer = clf_tok_kind(tok);
    snprintf(meta.bpe, sizeof meta.bpe, "%s", meta.tokenizer == CLF_TOK_KIND_SPM ? "bpe.model" : "");
    meta.has_tokenizer_hash = true;
    meta.tokenizer_hash = clf_tok_hash(tok);
    meta.train = (struct clf_ckpt_position){.present = true, .epoch = p->epoch, .batch = p->batch,
                                            .tokens = p->tokens, .seconds = p->seconds,
                                            .max_tokens = t->o.max_tokens, .update_tokens = t->o.update_tokens,
                                            .ranks = t->o.ranks};
    clf_status st = clf_model_save_optimizer(t->m, optim);
    if (st == CLF_OK)
        st = clf_model_save(t->m, model, &meta);
    if (st != CLF_OK)
        return st;
    /* keep the last K */
    long *steps;
    int n = clf_trainer_checkpoints(dir, &steps);
    for (int i = 0; i < n - keep; i++) {
        clf_trainer_ckpt_paths(dir, steps[i], model, optim, sizeof model);
        unlink(model);
        unlink(optim);
    }
    free(steps);
    return CLF_OK;
}

clf_status clf_trainer_log_rewind(const char *path, long step)
{
    struct clf_file_out out;
    FILE *in = fopen(path, "r");
    if (!in)
        return errno == ENOENT ? CLF_OK : clf_error_set(NULL, CLF_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    clf_status st = clf_file_out_open(&out, path);
    if (st != CLF_OK) {
        fclose(in);
        return st;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0) {
        struct clf_json j;
        double s;
        if (line[n - 1] != '\n' || !clf_json_parse(line, (size_t)n, &j, NULL, 0))
            continue;  /* the half line of a killed run */
        bool keep = clf_json_num(&j, "step", &s) && s <= (double)step;
        clf_json_free(&j);
        if (keep)
            fputs(line, out.f);
    }
    free(line);
    fclose(in);
    if (clf_file_out_close(&out, true) != CLF_OK)
        return clf_error_set(NULL, CLF_ERR_IO, "cannot rewind %s to update %ld: %s", path, step, strerror(errno));
    return CLF_OK;
}

/* ---------------------------------------------------------------- batches */

/* Plans the model's activations once for the largest of these batches:
 * the most sentences and the most rows of each side, each taken alone. */
static clf_status reserve_for(clf_model_t *m, const struct clf_batches *b)
{
    struct clf_model_shape max = {0, 0, 0};
    for (size_t i = 0; i < b->n; i++)
        clf_model_shape_add(&max, b->batch[i].n, (size_t)b->batch[i].src_len, (size_t)b->batch[i].tgt_len);
    return b->n ? clf_model_reserve(m, &max) : CLF_OK;
}

/* This epoch's batches, and activation memory planned for them. */
static clf_status form_batches(clf_trainer_t *t)
{
    clf_batches_free(&t->batches);
    clf_status st = on_ctx(t->ctx, clf_batches_make(t->train, (size_t)t->o.max_tokens, t->o.seed,
                                                    (uint64_t)t->s.epoch, &t->batches));
    if (st == CLF_OK)
        st = reserve_for(t->m, &t->batches);
    t->s.epoch_batches = t->batches.n;
    return st;
}

/* Batch x of corpus c as model m takes it (its pad, eos and decoder start
 * ids): its ids in *ids (grown as needed), which mb points into. */
static clf_status batch_load(clf_ctx_t *ctx, int32_t **ids, const clf_model_t *m, const struct clf_corpus *c,
                             const struct clf_batch *x, struct clf_model_batch *mb)
{
    const struct clf_model_config *cfg = clf_model_config(m);
    const struct clf_batch_ids model_ids = {cfg->pad_id, cfg->eos_id, cfg->decoder_start_id};
    size_t ns = x->n * (size_t)x->src_len, nt = x->n * (size_t)x->tgt_len;
    int32_t *g = realloc(*ids, (ns + 2 * nt) * sizeof *g);
    if (!g)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for a batch's ids");
    *ids = g;
    clf_status st = on_ctx(ctx, clf_batch_fill_ids(c, x, &model_ids, g, g + ns, g + ns + nt));
    if (st == CLF_OK)
        *mb = (struct clf_model_batch){x->n, (size_t)x->src_len, (size_t)x->tgt_len, g, g + ns, g + ns + nt};
    return st;
}

static double epochs_done(const clf_trainer_t *t)
{
    return (double)t->s.epoch + (double)t->s.batch / (double)t->batches.n;
}

/* ------------------------------------------------------------------ setup */

static clf_status trainer_new(clf_trainer_t **out, clf_ctx_t *ctx, const struct clf_train_opts *o)
{
    clf_trainer_t *t = calloc(1, sizeof *t);
    *out = t;  /* the caller's local: clf_trainer_init hands it on when all went well */
    if (!t)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for a trainer");
    t->ctx = ctx;
    t->start = clf_now();
    t->o = *o;
    if (t->o.ranks < 1)
        t->o.ranks = 1;
    if (o->init)
        snprintf(t->init, sizeof t->init, "%s", o->init);
    t->o.init = NULL;
    t->o.config = NULL;
    t->s.seed = o->seed;
    t->s.max_tokens = o->max_tokens;
    t->s.update_tokens = o->update_tokens;
    return CLF_OK;
}

/* Training stays float32: a quantized checkpoint (clformer quantize's)
 * holds rounded copies of weights whose float32 originals exist, and its
 * optimizer state, if any lies beside it, is of those originals. */
static clf_status refuse_quantized(clf_ctx_t *ctx, const char *path, const struct clf_ckpt_meta *meta, bool resume)
{
    if (meta->compute_type == CLF_COMPUTE_FLOAT32)
        return CLF_OK;
    return clf_error_set(ctx, CLF_ERR_ARG, "%s stores its weights as %s (clformer quantize): %s; %s", path,
                         clf_compute_type_str(meta->compute_type),
                         resume ? "training resumes from the float32 checkpoint and its .optim state"
                                : "training starts from float32 weights",
                         resume ? "resume from the float32 checkpoint" :
                                  "fine-tune the float32 checkpoint it was made from, then quantize the result");
}

struct clf_train_opts clf_train_opts_default(void)
{
    /* clformer/train.h says what each means; the command's usage text and
     * Python's Trainer print or take these, never copies of them */
    return (struct clf_train_opts){.dropout = -1, .label_smoothing = -1, .seed = 1, .max_tokens = 4096,
                                   .update_tokens = 0, .warmup = 800, .lr_scale = 1, .clip = 0,
                                   .rank = 0, .ranks = 1};
}

clf_status clf_trainer_init(clf_trainer_t **out, clf_ctx_t *ctx, const struct clf_train_opts *o)
{
    clf_status st;
    clf_trainer_t *t = NULL;
    CLF_TRY(trainer_new(&t, ctx, o));
    if (!o->init) {
        if (!o->config) {
            st = clf_error_set(ctx, CLF_ERR_ARG, "clf_trainer_init: neither a model config nor a checkpoint");
            goto fail;
        }
        CLF_TRY(clf_model_init(ctx, &t->m, o->config, o->seed));
        *out = t;
        return CLF_OK;
    }
    CLF_TRY(on_ctx(ctx, clf_ckpt_meta_read(o->init, &t->source)));
    CLF_TRY(refuse_quantized(ctx, o->init, &t->source, false));
    CLF_TRY(clf_model_load(ctx, &t->m, o->init));
    const struct clf_model_config *c = clf_model_config(t->m);
    float dropout = o->dropout >= 0 ? o->dropout : c->dropout;
    float smoothing = o->label_smoothing >= 0 ? o->label_smoothing : c->label_smoothing;
    CLF_TRY(clf_model_regularization_set(t->m, dropout, smoothing));
    clf_model_optimizer_reset(t->m, o->seed);
    *out = t;
    return CLF_OK;
fail:
    clf_trainer_free(t);
    *out = NULL;
    return st;
}

clf_status clf_trainer_resume(clf_trainer_t **out, clf_ctx_t *ctx, const char *dir, long step,
                              const struct clf_train_opts *o)
{
    char path[CLF_PATH_MAX], optim[CLF_PATH_MAX];
    clf_status st;
    clf_trainer_t *t = NULL;
    CLF_TRY(trainer_new(&t, ctx, o));
    t->init[0] = 0;
    clf_trainer_ckpt_paths(dir, step, path, optim, sizeof path);
    CLF_TRY(on_ctx(ctx, clf_ckpt_meta_read(path, &t->source)));
    CLF_TRY(refuse_quantized(ctx, path, &t->source, true));
    CLF_TRY(clf_model_load(ctx, &t->m, path));
    CLF_TRY(clf_model_load_optimizer(t->m, optim));
    const struct clf_ckpt_position *was = &t->source.train;
    t->s.step = step, t->s.epoch = was->epoch, t->s.batch = was->batch, t->s.tokens = was->tokens;
    t->s.seconds = was->seconds;
    t->o.seed = t->s.seed = t->source.seed;
    if (was->present) {
        t->o.max_tokens = t->s.max_tokens = was->max_tokens;
        t->o.update_tokens = t->s.update_tokens = was->update_tokens;
    }
    *out = t;
    return CLF_OK;
fail:
    clf_trainer_free(t);
    *out = NULL;
    return st;
}

void clf_trainer_free(clf_trainer_t *t)
{
    if (!t)
        return;
    free(t->ids);
    clf_batches_free(&t->batches);
    clf_model_free(t->m);
    clf_trainer_kept_free(t->kept);
    free(t);
}

void clf_trainer_kept_free(struct clf_trainer_kept *k)
{
    if (!k)
        return;
    clf_tok_free(k->tok);
    clf_corpus_free(k->train);
    clf_corpus_free(k->val);
    free(k);
}

void clf_trainer_keep(clf_trainer_t *t, struct clf_trainer_kept *k) { t->kept = k; }
struct clf_trainer_kept *clf_trainer_kept(const clf_trainer_t *t) { return t->kept; }

clf_model_t *clf_trainer_model(clf_trainer_t *t) { return t->m; }
const struct clf_train_state *clf_trainer_state(const clf_trainer_t *t) { return &t->s; }
const struct clf_ckpt_meta *clf_trainer_source(const clf_trainer_t *t) { return &t->source; }

/* Whether every pair of c fits one batch of max_tokens padded tokens (its
 * wider side with EOS): a pair that does not would be a batch of its own,
 * past the budget the memory plan and the user chose. Fairseq refuses such
 * a pair too; here the message names the first such line and the bound. */
static clf_status pairs_fit(const clf_trainer_t *t, const struct clf_corpus *c, const char *what)
{
    for (size_t p = 0; p < c->n_pairs; p++) {
        const size_t s = c->src_off[p + 1] - c->src_off[p] + 1, g = c->tgt_off[p + 1] - c->tgt_off[p] + 1;
        if ((s > g ? s : g) > (size_t)t->o.max_tokens)
            return clf_error_set(t->ctx, CLF_ERR_ARG,
                                 "%s pair at line %zu has %zu source and %zu target tokens with EOS, more than "
                                 "max_tokens %ld, the padded tokens of one batch: raise max_tokens to %zu or more, "
                                 "or keep shorter pairs (max_len)",
                                 what, c->pair_line[p] + 1, s, g, t->o.max_tokens, s > g ? s : g);
    }
    return CLF_OK;
}

clf_status clf_trainer_data(clf_trainer_t *t, const struct clf_corpus *train)
{
    clf_status st = pairs_fit(t, train, "training");
    if (st != CLF_OK)
        return st;
    t->train = train;
    t->start = clf_now() - t->s.seconds;
    st = form_batches(t);
    if (st == CLF_OK)
        t->s.epochs = epochs_done(t);
    return st;
}

/* ------------------------------------------------------------ one update */

/* How many batches from the next one make this update: enough for the
 * target tokens and at least one per process, not past the epoch's end;
 * *tokens: theirs. Every process counts the same batches. */
static size_t update_batches(const clf_trainer_t *t, double *tokens)
{
    size_t nb = 0;
    *tokens = 0;
    for (size_t i = t->s.batch; i < t->batches.n; i++) {
        const struct clf_batch *x = &t->batches.batch[i];
        for (size_t j = 0; j < x->n; j++) {
            size_t p = x->pairs[j];
            *tokens += (double)(t->train->tgt_off[p + 1] - t->train->tgt_off[p]) + 1;  /* + EOS */
        }
        nb++;
        if (*tokens >= (double)t->o.update_tokens && nb >= (size_t)t->o.ranks)
            break;
    }
    return nb;
}

/* After an update of nb batches: the position, the next epoch's batches
 * when this one is done, and the clock. */
static clf_status advance(clf_trainer_t *t, size_t nb)
{
    clf_status st = CLF_OK;
    t->s.step++;
    t->s.batch += nb;
    t->s.tokens += t->s.update_tokens_seen;
    if (t->s.batch >= t->batches.n) {
        t->s.epoch++;
        t->s.batch = 0;
        st = form_batches(t);
    }
    t->s.seconds = clf_now() - t->start;
    t->s.epochs = epochs_done(t);
    return st;
}

/* The i-th batch of an update: the epoch's (arg NULL) or the caller's. */
static clf_status update_batch(clf_trainer_t *t, size_t i, const struct clf_model_batch *given,
                               struct clf_model_batch *mb)
{
    if (given) {
        *mb = given[i];
        return CLF_OK;
    }
    return batch_load(t->ctx, &t->ids, t->m, t->train, &t->batches.batch[i], mb);
}

/* One update u: this process's share accumulated, the reduce hook, Adam
 * at lr (< 0: the schedule's), what it made in t->s. */
static clf_status update(clf_trainer_t *t, const struct clf_train_update *u, const struct clf_model_batch *given,
                         float lr)
{
    const struct clf_model_config *cfg = clf_model_config(t->m);
    const struct clf_train_hooks *h = &t->o.hooks;
    double loss = 0, tokens = 0;
    clf_status st;
    CLF_TRY(clf_model_zero_grad(t->m));
    for (size_t i = u->lo; i < u->hi; i++) {
        struct clf_model_batch mb;
        struct clf_step_opts so = {cfg->dropout > 0, u->step, (float)(1.0 / u->tokens)};
        const struct clf_backward_hook *bh = h->backward && i + 1 == u->hi ? h->backward(h->user, u) : NULL;
        if (bh)
            clf_model_backward_hook(t->m, bh);
        CLF_TRY(update_batch(t, i, given, &mb));
        CLF_TRY(clf_model_accumulate(t->m, &mb, &so));
    }
    /* the host waits for the device once per update, here */
    CLF_TRY(clf_model_loss_take(t->m, &loss, &tokens));
    if (h->reduce)
        CLF_TRY(h->reduce(h->user, u, &loss, &tokens));
    t->s.lr = lr >= 0 ? lr
                      : (float)(t->o.lr_scale * clf_lr_schedule((size_t)cfg->d_model, u->step, (size_t)t->o.warmup));
    CLF_TRY(clf_model_adam_step(t->m, t->s.lr, (float)t->o.clip));
    t->s.update_tokens_seen = tokens;
    t->s.loss = loss / tokens;
fail:
    return st;
}

clf_status clf_trainer_step(clf_trainer_t *t)
{
    if (!t->train || !t->batches.n)
        return clf_error_set(t->ctx, CLF_ERR_ARG, "clf_trainer_step: no training batches (clf_trainer_data)");
    struct clf_train_update u = {.step = (uint32_t)t->s.step + 1, .first = t->s.batch};
    u.batches = update_batches(t, &u.tokens);
    /* this process's share: a contiguous run of the update's batches, the
     * larger shares first (with two processes the update's gradients are
     * then summed nearly in the order one process adds them: (g0 + g1) + g2) */
    const size_t r = (size_t)t->o.rank, n = (size_t)t->o.ranks, nb = u.batches;
    u.lo = u.first + (nb * r + n - 1) / n;
    u.hi = u.first + (nb * (r + 1) + n - 1) / n;
    clf_status st = update(t, &u, NULL, -1.0f);
    return st != CLF_OK ? st : advance(t, nb);
}

clf_status clf_trainer_step_batches(clf_trainer_t *t, const struct clf_model_batch *b, size_t n, double tokens,
                                    float lr)
{
    if (!n || !(tokens > 0))
        return clf_error_set(t->ctx, CLF_ERR_ARG, "clf_trainer_step_batches: %zu batches of %g target tokens", n,
                             tokens);
    struct clf_train_update u = {.step = (uint32_t)t->s.step + 1, .batches = n, .lo = 0, .hi = n, .tokens = tokens};
    clf_status st = update(t, &u, b, lr);
    if (st == CLF_OK) {
        t->s.step++;
        t->s.tokens += t->s.update_tokens_seen;
        t->s.seconds = clf_now() - t->start;
    }
    return st;
}

/* ------------------------------------------------------------- validation */

clf_status clf_trainer_validate(clf_trainer_t *t, const struct clf_corpus *c, double *loss)
{
    struct clf_batches b = {0};
    double sum = 0, tok = 0;
    int32_t *ids = NULL;
    clf_status st;
    *loss = NAN;
    CLF_TRY(pairs_fit(t, c, "validation"));
    CLF_TRY(on_ctx(t->ctx, clf_batches_make(c, (size_t)t->o.max_tokens, 0, 0, &b)));
    CLF_TRY(reserve_for(t->m, &b));
    for (size_t i = 0; i < b.n; i++) {
        struct clf_model_batch mb;
        CLF_TRY(batch_load(t->ctx, &ids, t->m, c, &b.batch[i], &mb));
        CLF_TRY(clf_model_forward(t->m, &mb));
    }
    /* one wait for the whole corpus; the sums are those of batch after batch */
    CLF_TRY(clf_model_loss_take(t->m, &sum, &tok));
    *loss = tok > 0 ? sum / tok : NAN;
fail:
    free(ids);
    clf_batches_free(&b);
    return st;
}
