/* trainer.c: the duties of `clformer train`'s loop (trainer.h lists them).
 * Learns (or loads) the joint BPE model, forms batches by tokens, and
 * trains with Adam under the warm-up / inverse-square-root schedule,
 * accumulating gradients up to a target number of tokens per update. It
 * logs every update as JSON lines, validates (loss and greedy BLEU) at
 * intervals, writes checkpoints atomically every few minutes and on Ctrl-C,
 * resumes exactly, and plots the loss curve at the end. Under MPI
 * (dist.h) each rank trains on its share of every update's batches and
 * the gradients are summed before Adam (trainer_step), in buckets that
 * start while the backward runs (buckets.h) unless --bucket-mb is 0. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hash.h"
#include "buckets.h"
#include "cli.h"
#include "dist.h"
#include "plot.h"
#include "textgen.h"
#include "clformer_json.h"
#include "trainer.h"

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static int validate_now(struct trainer *t);

/* ------------------------------------------------------------ checkpoints */

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

static clf_status save_checkpoint(const struct trainer *t)
{
    clf_model_t *m = t->m;
    const struct train_args *a = &t->a;
    const struct position *p = &t->pos;
    char model[4200], optim[4200];
    ckpt_paths(a->out, p->step, model, optim, sizeof model);
    /* what the checkpoint the run started from passes on; the tokenizer is
     * the run's, its files beside the checkpoint (trainer_copy_tokenizer) */
    struct clf_ckpt_meta meta;
    clf_ckpt_meta_init(&meta, m);
    clf_ckpt_meta_carry(&meta, &t->source);
    if (a->init)
        snprintf(meta.init, sizeof meta.init, "%s", a->init);
    meta.tokenizer = clf_tok_kind(t->tok);
    snprintf(meta.bpe, sizeof meta.bpe, "%s", meta.tokenizer == CLF_TOK_KIND_SPM ? "bpe.model" : "");
    meta.has_tokenizer_hash = true;
    meta.tokenizer_hash = clf_tok_hash(t->tok);
    meta.train = (struct clf_ckpt_position){.present = true, .epoch = p->epoch, .batch = p->batch,
                                            .tokens = p->tokens, .seconds = p->seconds,
                                            .max_tokens = a->max_tokens, .update_tokens = a->update_tokens,
                                            .ranks = dist_size()};
    clf_status st = clf_model_save_optimizer(m, optim);
    if (st == CLF_OK)
        st = clf_model_save(m, model, &meta);
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
static int form_batches(struct trainer *t)
{
    clf_status st;
    clf_batches_free(&t->batches);
    if ((st = clf_batches_make(t->train, (size_t)t->a.max_tokens, t->a.seed, (uint64_t)t->pos.epoch, &t->batches)))
        return cli_fail(NULL, st, "forming batches");
    if ((st = reserve_for(t->m, &t->batches)) != CLF_OK)
        return cli_fail(t->ctx, st, "planning activation memory");
    return 0;
}

/* Batch x of corpus c as model m takes it (its pad, eos and decoder start
 * ids): its ids in *ids (grown as needed), which mb points into. */
static int batch_load(int32_t **ids, const clf_model_t *m, const struct clf_corpus *c, const struct clf_batch *x,
                      struct clf_model_batch *mb, const char *what)
{
    const struct clf_model_config *cfg = clf_model_config(m);
    const struct clf_batch_ids model_ids = {cfg->pad_id, cfg->eos_id, cfg->decoder_start_id};
    size_t ns = x->n * (size_t)x->src_len, nt = x->n * (size_t)x->tgt_len;
    int32_t *g = realloc(*ids, (ns + 2 * nt) * sizeof *g);
    if (!g) {
        fprintf(stderr, "clformer: out of host memory\n");
        return 1;
    }
    *ids = g;
    clf_status st = clf_batch_fill_ids(c, x, &model_ids, g, g + ns, g + ns + nt);
    if (st != CLF_OK)
        return cli_fail(NULL, st, what);
    *mb = (struct clf_model_batch){x->n, (size_t)x->src_len, (size_t)x->tgt_len, g, g + ns, g + ns + nt};
    return 0;
}

/* ------------------------------------------------------------- validation */

/* Loss per target token over the whole corpus, without dropout. */
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
        struct clf_model_batch mb;
        struct clf_step_opts o = {false, 0, 0.0f};
        if ((rc = batch_load(&ids, m, c, &b.batch[i], &mb, "validation batch")))
            break;
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

/* Greedy BLEU of the validation pairs against their raw target lines,
 * translated in batches of training's token budget (so that a device that
 * holds the training batches holds these). */
static int validate_bleu(clf_ctx_t *ctx, clf_model_t *m, const clf_tok_t *tok, const struct clf_corpus *c,
                         long max_tokens, double *bleu)
{
    size_t n = c->n_pairs;
    const int32_t **src = malloc(n * sizeof *src);
    size_t *len = malloc(n * sizeof *len);
    char **hyp = calloc(n, sizeof *hyp);
    const char **refs = malloc(n * sizeof *refs);
    int rc = 1;
    if (!src || !len || !hyp || !refs) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        src[i] = c->src_ids + c->src_off[i];
        len[i] = c->src_off[i + 1] - c->src_off[i];
        refs[i] = c->tgt.line[c->pair_line[i]];
    }
    struct clf_translate_opts o = clf_translate_opts_default();
    o.greedy = true;
    if (textgen_translate(ctx, m, tok, src, len, n, &o, (struct textgen_batching){128, (size_t)max_tokens}, hyp, NULL, NULL, NULL))
        goto out;
    struct clf_bleu_opts bo = {false, CLF_BLEU_TOK_13A};
    struct clf_bleu_score s;
    const char *const *r1[1] = {refs};
    clf_status st = clf_bleu_corpus((const char *const *)hyp, n, r1, 1, &bo, &s);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "validation BLEU");
        goto out;
    }
    *bleu = s.score;
    rc = 0;
out:
    if (hyp)
        for (size_t i = 0; i < n; i++)
            free(hyp[i]);
    free(src), free(len), free(hyp), free(refs);
    return rc;
}

/* ---------------------------------------------------------------- helpers */

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

/* ------------------------------------------------------------------ setup */

/* The metadata of the checkpoint the run starts from: --init's, or the
 * one it resumes; none for a fresh run. */
static int source_meta(struct trainer *t)
{
    char path[4200], optim[4200];
    const char *from = t->a.init;
    if (!from && t->resume_step >= 0) {
        ckpt_paths(t->a.out, t->resume_step, path, optim, sizeof path);
        from = path;
    }
    clf_status st = from ? clf_ckpt_meta_read(from, &t->source) : CLF_OK;
    return st != CLF_OK ? cli_fail(NULL, st, t->a.init ? "--init: reading the checkpoint" : "resuming") : 0;
}

/* Subwords: the tokenizer of --init's checkpoint (or of a resumed one that
 * names Marian's), given, kept from an earlier run in this folder, or
 * learned (by the writer; the other ranks wait for its file, then load it). */
static int subwords(struct trainer *t)
{
    const struct train_args *a = &t->a;
    clf_status st;
    char resumed[4200], optim[4200];
    if (a->init)
        return trainer_open_tokenizer(t, a->init);
    if (t->resume_step >= 0 && t->source.tokenizer == CLF_TOK_KIND_MARIAN) {
        ckpt_paths(a->out, t->resume_step, resumed, optim, sizeof resumed);
        return trainer_open_tokenizer(t, resumed);
    }
    snprintf(t->bpe_path, sizeof t->bpe_path, "%s/bpe.model", a->out);
    if (a->bpe) {
        snprintf(t->bpe_path, sizeof t->bpe_path, "%s", a->bpe);
    } else if (t->writer && (access(t->bpe_path, R_OK) != 0 || t->resume_step < 0)) {
        if (t->talk)
            fprintf(stderr, "learning a %d-piece BPE model on %s and %s ...\n", a->vocab, a->src, a->tgt);
        double t0 = clf_now();
        struct clf_spm_learn_opts lo;
        clf_spm_learn_defaults(&lo);
        lo.vocab_size = a->vocab ? a->vocab : 8000;
        const char *files[] = {a->src, a->tgt};
        if ((st = clf_spm_learn(files, 2, t->bpe_path, &lo)) != CLF_OK)
            return cli_fail(NULL, st, "learning the BPE model");
        if (t->talk)
            fprintf(stderr, "  %s in %.1f s\n", t->bpe_path, clf_now() - t0);
    }
    dist_barrier();  /* a writer that failed above ends the job instead (cmd_train.c) */
    if ((st = clf_tok_spm_load(&t->tok, t->bpe_path)) != CLF_OK)
        return cli_fail(NULL, st, "loading the BPE model");
    return 0;
}

static int load_data(struct trainer *t)
{
    const struct train_args *a = &t->a;
    struct clf_corpus_summary sum, vsum;
    clf_status st;
    if ((st = clf_corpus_load(&t->train, a->src, a->tgt)) ||
        (st = clf_corpus_encode_tok(t->train, t->tok, a->max_len, &sum)))
        return cli_fail(NULL, st, "reading the training data");
    if (t->talk)
        fprintf(stderr, "train: %zu pairs, %zu kept (%zu empty, %zu longer than %d), %zu + %zu subwords\n",
                sum.lines, sum.kept, sum.skipped_empty, sum.skipped_long, a->max_len, sum.src_tokens, sum.tgt_tokens);
    if (sum.kept == 0) {
        fprintf(stderr, "clformer train: no usable pairs in %s / %s\n", a->src, a->tgt);
        return 1;
    }
    if (a->val_src && a->val_tgt && *a->val_src &&
        ((st = clf_corpus_load(&t->val, a->val_src, a->val_tgt)) ||
         (st = clf_corpus_encode_tok(t->val, t->tok, a->max_len, &vsum))))
        return cli_fail(NULL, st, "reading the validation data");
    return 0;
}

/* A new model: the preset, changed by the options. */
static int new_model(struct trainer *t)
{
    const struct train_args *a = &t->a;
    struct clf_model_config c;
    clf_status st;
    if ((st = clf_model_config_preset(&c, a->preset ? a->preset : "small")) != CLF_OK)
        return cli_fail(NULL, st, "--preset");
    c.vocab = clf_tok_vocab_size(t->tok, CLF_TOK_SOURCE);
    if (a->layers > 0) c.enc_layers = c.dec_layers = a->layers;
    if (a->d_model > 0) c.d_model = a->d_model;
    if (a->heads > 0) c.heads = a->heads;
    if (a->d_ff > 0) c.d_ff = a->d_ff;
    if (a->norm >= 0) c.norm = a->norm;
    if (a->enc_window >= -1) c.enc_window = a->enc_window;
    if (a->dec_window >= -1) c.dec_window = a->dec_window;
    if (a->dropout >= 0) c.dropout = (float)a->dropout;
    if (a->smoothing >= 0) c.label_smoothing = (float)a->smoothing;
    if (c.max_len < a->max_len + 2) c.max_len = a->max_len + 2;
    if ((st = clf_model_init(t->ctx, &t->m, &c, a->seed)) != CLF_OK)
        return cli_fail(t->ctx, st, "creating the model");
    return 0;
}

/* The model, its optimizer state and the position of the newest checkpoint. */
static int resumed_model(struct trainer *t)
{
    struct train_args *a = &t->a;
    char path[4200], optim[4200];
    clf_status st;
    ckpt_paths(a->out, t->resume_step, path, optim, sizeof path);
    if ((st = clf_model_load(t->ctx, &t->m, path)) || (st = clf_model_load_optimizer(t->m, optim)))
        return cli_fail(t->ctx, st, "resuming");
    if (trainer_check_tokenizer(t, path) || trainer_fit_max_len(t, path))
        return 1;
    const struct clf_ckpt_position *was = &t->source.train;
    t->pos = (struct position){t->resume_step, was->epoch, was->batch, was->tokens, was->seconds};
    a->seed = t->source.seed;
    if (was->present) {
        a->max_tokens = was->max_tokens;
        a->update_tokens = was->update_tokens;
    }
    long ranks = was->present ? was->ranks : 1;
    if (ranks != t->ranks && t->talk)
        fprintf(stderr, "note: %s was written by %ld rank%s, resuming with %d: an update takes at least one batch "
                "per rank, so updates that held fewer than %d batches now hold more (unchanged where "
                "--update-tokens %ld already gave every update %d or more)\n", path, ranks, ranks == 1 ? "" : "s",
                t->ranks, t->ranks, a->update_tokens, t->ranks);
    return 0;
}

static void describe_model(const struct trainer *t)
{
    const struct clf_model_config *cfg = t->cfg;
    char gemm[96];
    cli_gemm_describe(t->ctx, gemm, sizeof gemm);
    fprintf(stderr, "model: %d+%d layers, d_model %d, %d heads, d_ff %d, vocab %d, %s-norm, %zu parameters on %s; "
            "GEMM: %s\n",
            cfg->enc_layers, cfg->dec_layers, cfg->d_model, cfg->heads, cfg->d_ff, cfg->vocab,
            cfg->norm == CLF_NORM_PRE ? "pre" : "post", clf_model_numel(t->m), clf_ctx_device(t->ctx)->device_name,
            gemm);
}

static double epochs_done(const struct trainer *t)
{
    return (double)t->pos.epoch + (double)t->pos.batch / (double)t->batches.n;
}

/* A resumed run's log.jsonl keeps the records up to the checkpoint it
 * resumes from: a run killed after that checkpoint logged updates that
 * will be made again (and may have left half a line). The kept lines go
 * to a temporary file renamed over the log. */
static int log_rewind(const char *path, long step)
{
    char tmp[4300];
    FILE *in = fopen(path, "r"), *out;
    if (!in)
        return errno == ENOENT ? 0 : -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(out = fopen(tmp, "w"))) {
        fclose(in);
        return -1;
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
            fputs(line, out);
    }
    free(line);
    fclose(in);
    if (fclose(out) || rename(tmp, path)) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int open_log(struct trainer *t)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/log.jsonl", t->a.out);
    if (t->resume_step >= 0 && log_rewind(path, t->resume_step)) {
        fprintf(stderr, "clformer train: cannot rewind %s to update %ld: %s\n", path, t->resume_step, strerror(errno));
        return 1;
    }
    if (!(t->log = fopen(path, t->resume_step >= 0 ? "a" : "w"))) {
        fprintf(stderr, "clformer train: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

int trainer_init(struct trainer *t, const struct train_args *a)
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
    if (clf_mkdir_p(a->out)) {
        fprintf(stderr, "clformer train: cannot create --out %s: %s\n", a->out, strerror(errno));
        return 1;
    }
    t->resume_step = a->resume ? latest_checkpoint(a->out) : -1;
    if (a->resume && t->resume_step < 0)
        fprintf(stderr, "clformer train: --resume: no checkpoint in %s, starting afresh\n", a->out);
    if (source_meta(t) || subwords(t))
        return 1;
    if (t->a.max_len < 0 && !a->init && t->resume_step < 0)
        t->a.max_len = 100;  /* a new model's positions are made to fit it */
    char device[64];
    if (!(t->ctx = cli_open(dist_device(a->device, device, sizeof device))))
        return 1;
    /* the model before the data: a checkpoint's positions decide --max-len */
    if (a->init ? trainer_init_model(t) : t->resume_step >= 0 ? resumed_model(t) : new_model(t))
        return 1;
    if (load_data(t) || (t->writer && a->init && trainer_copy_tokenizer(t)))
        return 1;
    if (t->talk && a->init)
        fprintf(stderr, "fine-tuning %s: its weights and config, tokenizer %s; Adam afresh from update 0 (warm-up "
                "of %d updates)\n", a->init, t->bpe_path, t->a.warmup);
    t->cfg = clf_model_config(t->m);
    if (t->talk)
        describe_model(t);
    if (t->ranks > 1) {
        size_t n = clf_model_numel(t->m);
        if (!(t->grads = malloc(n * sizeof *t->grads))) {
            fprintf(stderr, "clformer: out of host memory\n");
            return 1;
        }
        if (a->bucket_mb > 0 && !(t->buckets = grad_buckets_init(t->ctx, t->m, (size_t)(a->bucket_mb * 1e6))))
            return 1;
        if (t->talk && t->buckets)
            fprintf(stderr, "%d ranks, gradients of %.1f MB summed per update in buckets of %g MB during the "
                    "backward\n", t->ranks, (double)n * sizeof(float) / 1e6, a->bucket_mb);
        else if (t->talk)
            fprintf(stderr, "%d ranks, gradients of %.1f MB summed per update after the backward\n", t->ranks,
                    (double)n * sizeof(float) / 1e6);
    }
    if (t->writer && open_log(t))
        return 1;
    /* sigaction, not signal(): under strict C11 glibc's signal() has System
     * V semantics and resets the handler after one delivery, so a second
     * Ctrl-C killed the run in the middle of its last checkpoint */
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    t->start = clf_now() - t->pos.seconds;
    t->last_save = t->window_t0 = clf_now();
    if (form_batches(t))
        return 1;
    if (t->talk && t->resume_step >= 0)
        fprintf(stderr, "resuming from update %ld at epoch %.2f (%zu of %zu batches of that epoch done)\n",
                t->pos.step, epochs_done(t), t->pos.batch, t->batches.n);
    /* a run resumed from a checkpoint that already spent the budget (one
     * killed after its last save) makes no update beyond it */
    t->epochs = epochs_done(t);
    if (a->init && t->writer && t->val && validate_now(t))
        return 1;
    trainer_budget(t);
    if (t->stop && t->talk)
        fprintf(stderr, "nothing to do: update %ld already spends the budget (--steps, --epochs, --minutes)\n",
                t->pos.step);
    return 0;
}

/* ------------------------------------------------------------ one update */

/* How many batches from the next one make this update: enough for the
 * target tokens and at least one per rank, not past the epoch's end;
 * *tokens: theirs. Every rank counts the same batches. */
static size_t update_batches(const struct trainer *t, double *tokens)
{
    size_t nb = 0;
    *tokens = 0;
    for (size_t i = t->pos.batch; i < t->batches.n; i++) {
        const struct clf_batch *x = &t->batches.batch[i];
        for (size_t j = 0; j < x->n; j++) {
            size_t p = x->pairs[j];
            *tokens += (double)(t->train->tgt_off[p + 1] - t->train->tgt_off[p]) + 1;  /* + EOS */
        }
        nb++;
        if (*tokens >= (double)t->a.update_tokens && nb >= (size_t)t->ranks)
            break;
    }
    return nb;
}

/* After an update of nb batches: the position, the next epoch's batches
 * when this one is done, and the clock. */
static int advance(struct trainer *t, size_t nb)
{
    t->pos.step++;
    t->pos.batch += nb;
    t->pos.tokens += t->tokens;
    if (t->pos.batch >= t->batches.n) {
        t->pos.epoch++;
        t->pos.batch = 0;
        if (form_batches(t))
            return 1;
    }
    t->now = clf_now();
    t->pos.seconds = t->now - t->start;
    t->epochs = epochs_done(t);
    return 0;
}

/* Sums the loss and tokens of every rank's share of the update, and its
 * gradients unless the buckets did (on the host: the device buffer goes
 * down, is summed in place, and goes back), so that every rank's Adam
 * step sees the whole update's. */
static int sum_across_ranks(struct trainer *t, double *loss, bool grads)
{
    clf_status st = grads ? grads_sum_after(t->ctx, t->m, t->grads) : CLF_OK;
    if (st != CLF_OK)
        return cli_fail(t->ctx, st, "summing the gradients");
    double x[2] = {*loss, t->tokens};
    dist_sum_doubles(x, 2);
    *loss = x[0], t->tokens = x[1];
    return 0;
}

/* CLF_DIST_CHECK=K: every K updates the ranks compare a hash of their
 * parameters, which the identical Adam steps must have kept equal. */
static int check_same_parameters(struct trainer *t)
{
    size_t n = clf_model_numel(t->m);
    float *w = malloc(n * sizeof *w);
    clf_status st = w ? clf_tensor_download(t->ctx, clf_model_weights(t->m), w) : CLF_ERR_MEMORY;
    uint64_t h = st == CLF_OK ? clf_fnv1a(1469598103934665603ULL, w, n * sizeof *w) : 0;
    free(w);
    if (st != CLF_OK)
        return cli_fail(t->ctx, st, "CLF_DIST_CHECK: reading the parameters");
    if (!dist_agree(h)) {
        fprintf(stderr, "clformer train: CLF_DIST_CHECK: the ranks' parameters differ after update %ld "
                "(rank %d's hash %016" PRIx64 ")\n", t->pos.step + 1, t->rank, h);
        return 1;
    }
    return 0;
}

int trainer_step(struct trainer *t)
{
    double update_tok;  /* the update's target tokens over every rank: each batch's loss is scaled by 1/update_tok */
    const size_t first = t->pos.batch, nb = update_batches(t, &update_tok);
    /* this rank's share: a contiguous run of the update's batches, the
     * larger shares first (with two ranks the update's gradients are then
     * summed nearly in the order one process adds them: (g0 + g1) + g2) */
    const size_t r = (size_t)t->rank, n = (size_t)t->ranks, lo = first + (nb * r + n - 1) / n,
                 hi = first + (nb * (r + 1) + n - 1) / n;
    const uint32_t step = (uint32_t)t->pos.step + 1;
    /* buckets need every rank to run a backward (a short update at an
     * epoch's end may leave a rank none): all ranks decide alike */
    const bool buckets = t->buckets && nb >= n;
    double loss = 0;
    clf_status st;
    if (t->fail_step == (long)step) {
        fprintf(stderr, "clformer train: CLF_DIST_FAIL_RANK=%d: failing at update %u on purpose (a test of the "
                "fault path)\n", t->rank, step);
        return 1;
    }
    if ((st = clf_model_zero_grad(t->m)) != CLF_OK)
        return cli_fail(t->ctx, st, "zeroing gradients");
    for (size_t i = lo; i < hi && st == CLF_OK; i++) {
        struct clf_model_batch mb;
        struct clf_step_opts o = {t->cfg->dropout > 0, step, (float)(1.0 / update_tok)};
        if (buckets && i + 1 == hi)
            clf_model_backward_hook(t->m, grad_buckets_begin(t->buckets));
        if (batch_load(&t->ids, t->m, t->train, &t->batches.batch[i], &mb, "filling a batch"))
            return 1;
        st = clf_model_accumulate(t->m, &mb, &o);
    }
    if (buckets && st == CLF_OK && (st = grad_buckets_finish(t->buckets)) != CLF_OK)
        return cli_fail(t->ctx, st, "summing the gradients in buckets");
    /* the host waits for the device once per update, here */
    if (st == CLF_OK)
        st = clf_model_loss_take(t->m, &loss, &t->tokens);
    if (st != CLF_OK)
        return cli_fail(t->ctx, st, "training step");
    if (t->ranks > 1 && sum_across_ranks(t, &loss, !buckets))
        return 1;
    t->lr = (float)(t->a.lr_scale * clf_lr_schedule((size_t)t->cfg->d_model, step, (size_t)t->a.warmup));
    if ((st = clf_model_adam_step(t->m, t->lr, (float)t->a.clip)) != CLF_OK)
        return cli_fail(t->ctx, st, "Adam step");
    if (t->check_every > 0 && (long)step % t->check_every == 0 && check_same_parameters(t))
        return 1;
    t->loss = loss / t->tokens;
    return advance(t, nb);
}

/* ------------------------------------------------- what each update tells */

void trainer_log(struct trainer *t)
{
    curve_add(&t->train_curve, (double)t->pos.step, t->loss);
    if (!t->writer)
        return;
    fprintf(t->log, "{\"step\":%ld,\"epoch\":%.4f,\"loss\":%.6f,\"lr\":%.6g,\"tokens\":%.0f,\"elapsed\":%.2f}\n",
            t->pos.step, t->epochs, t->loss, t->lr, t->tokens, t->pos.seconds);
    fflush(t->log);
}

void trainer_budget(struct trainer *t)
{
    const struct train_args *a = &t->a;
    double frac = 0, budget_s = a->minutes * 60;
    if (a->steps) frac = fmax(frac, (double)t->pos.step / (double)a->steps);
    if (a->epochs) frac = fmax(frac, t->epochs / (double)a->epochs);
    if (budget_s > 0) frac = fmax(frac, t->pos.seconds / budget_s);
    t->frac = frac;
    /* every rank stops at the same update (a --minutes budget is read on
     * each rank's clock, Ctrl-C may reach one) */
    t->stop = dist_any(frac >= 1 || interrupted);
}

/* Rewritten in place on a terminal; else every --log-every updates. */
void trainer_progress(struct trainer *t)
{
    t->window_tok += t->tokens;
    t->smooth = isnan(t->smooth) ? t->loss : 0.95 * t->smooth + 0.05 * t->loss;
    double tps = t->window_tok / fmax(t->now - t->window_t0, 1e-9);
    if (t->now - t->window_t0 > 30) {
        t->window_t0 = t->now;
        t->window_tok = 0;
    }
    if (!t->talk || !(t->tty || t->stop || t->pos.step % t->a.log_every == 0))
        return;
    char eta[32];
    double elapsed = t->pos.seconds;
    fmt_time(t->frac > 0 ? elapsed * (1 - t->frac) / t->frac : NAN, eta, sizeof eta);
    fprintf(stderr, "%sstep %ld  epoch %.2f  loss %.3f  lr %.2e  %.0f tok/s  left %s%s", t->tty ? "\r" : "",
            t->pos.step, t->epochs, t->smooth, t->lr, tps, eta, t->tty ? "   " : "\n");
}

/* Validation loss and greedy BLEU now (the writer, with validation data). */
static int validate_now(struct trainer *t)
{
    double vl = NAN, vb = NAN, v0 = clf_now();
    if (validate_loss(t->ctx, t->m, t->val, t->a.max_tokens, &vl) ||
        validate_bleu(t->ctx, t->m, t->tok, t->val, t->a.max_tokens, &vb))
        return 1;
    curve_add(&t->val_curve, (double)t->pos.step, vl);
    fprintf(t->log, "{\"step\":%ld,\"val_loss\":%.6f,\"val_bleu\":%.2f,\"val_seconds\":%.1f}\n", t->pos.step, vl,
            vb, clf_now() - v0);
    fflush(t->log);
    if (t->talk)
        fprintf(stderr, "%sstep %ld  validation loss %.3f  greedy BLEU %.2f (%.0f s)\n", t->tty ? "\n" : "",
                t->pos.step, vl, vb, clf_now() - v0);
    return 0;
}

/* Every --val-every updates and at the end, when there is validation data;
 * before the first update of a fine-tuning run, the model as it came. */
int trainer_validate(struct trainer *t)
{
    const long every = t->a.val_every;
    if (!t->writer || !t->val || !(t->stop || (every > 0 && t->pos.step % every == 0)))
        return 0;
    return validate_now(t);
}

/* Every --save-minutes and at the end. */
int trainer_checkpoint(struct trainer *t)
{
    if (!t->writer || !(t->stop || clf_now() - t->last_save > t->a.save_minutes * 60))
        return 0;
    clf_status st = save_checkpoint(t);
    if (st != CLF_OK)
        return cli_fail(t->ctx, st, "saving a checkpoint");
    t->last_save = clf_now();
    if (t->talk && (t->stop || !t->tty))
        fprintf(stderr, "%ssaved %s/ckpt-%ld.safetensors\n", t->tty && !t->stop ? "\n" : "", t->a.out,
                t->pos.step);
    return 0;
}

/* ------------------------------------------------------------------ end */

static void plot(const struct trainer *t)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/loss.svg", t->a.out);
    const struct curve *tc = &t->train_curve, *vc = &t->val_curve;
    struct plot_series series[2] = {{"train loss", tc->x, tc->y, tc->n, false},
                                    {"validation loss", vc->x, vc->y, vc->n, true}};
    struct plot_opts po = {"clformer train: loss per target token", "update", "loss", false, false};
    if (plot_svg(path, &po, series, vc->n ? 2 : 1) == 0 && t->talk)
        fprintf(stderr, "loss curve: %s\n", path);
}

int trainer_finish(struct trainer *t)
{
    const struct position *p = &t->pos;
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
            fprintf(stderr, "gradient buckets per update: %zu\n",
                    grad_buckets_count(t->buckets));
        if (interrupted)
            fprintf(stderr, "interrupted: the checkpoint above holds update %ld; --resume continues from it\n",
                    p->step);
    }
    if (t->writer && t->train_curve.n)
        plot(t);
    return interrupted ? 130 : 0;
}

void trainer_free(struct trainer *t)
{
    if (t->log)
        fclose(t->log);
    free(t->ids);
    free(t->grads);
    grad_buckets_free(t->buckets);
    free(t->train_curve.x), free(t->train_curve.y), free(t->val_curve.x), free(t->val_curve.y);
    clf_batches_free(&t->batches);
    clf_model_free(t->m);
    clf_ctx_free(t->ctx);
    clf_corpus_free(t->train);
    clf_corpus_free(t->val);
    clf_tok_free(t->tok);
}
