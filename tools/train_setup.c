/* train_setup.c: what `clformer train` does before its first update: the
 * run's folder, the checkpoint it resumes (or fine-tunes: finetune.c), the
 * subwords, the device, the library's trainer with its model (new, --init's
 * or resumed), the data, and under MPI the way the ranks sum. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clformer/advanced/files.h>
#include "buckets.h"
#include "cli.h"
#include "dist.h"
#include "trainer.h"

/* The metadata of the checkpoint the run starts from: --init's, or the
 * one it resumes; none for a fresh run. */
static int source_meta(struct trainer *t)
{
    char path[CLF_PATH_MAX], optim[CLF_PATH_MAX];
    const char *from = t->a.init;
    if (!from && t->resume_step >= 0) {
        clf_trainer_ckpt_paths(t->a.out, t->resume_step, path, optim, sizeof path);
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
    char resumed[CLF_PATH_MAX], optim[CLF_PATH_MAX];
    if (a->init)
        return trainer_open_tokenizer(t, a->init);
    if (t->resume_step >= 0 && t->source.tokenizer == CLF_TOK_KIND_MARIAN) {
        clf_trainer_ckpt_paths(a->out, t->resume_step, resumed, optim, sizeof resumed);
        return trainer_open_tokenizer(t, resumed);
    }
    snprintf(t->bpe_path, sizeof t->bpe_path, "%s/bpe.model", a->out);
    if (a->bpe) {
        snprintf(t->bpe_path, sizeof t->bpe_path, "%s", a->bpe);
    } else if (t->writer && (access(t->bpe_path, R_OK) != 0 || t->resume_step < 0)) {
        struct clf_spm_learn_opts lo;
        clf_spm_learn_defaults(&lo);
        lo.vocab_size = a->vocab ? a->vocab : 8000;  /* --vocab 0 (unset): 8000 */
        if (t->talk)
            fprintf(stderr, "learning a %d-piece BPE model on %s and %s ...\n", lo.vocab_size, a->src, a->tgt);
        double t0 = clf_now();
        const char *files[] = {a->src, a->tgt};
        st = clf_spm_learn(files, 2, t->bpe_path, &lo);
        if (st != CLF_OK) {  /* SentencePiece's message names its limit, the flag is ours */
            char what[96];
            snprintf(what, sizeof what, "learning the BPE model of --vocab %d%s", lo.vocab_size,
                     a->vocab ? "" : " (the default)");
            return cli_fail(NULL, st, what);
        }
        if (t->talk)
            fprintf(stderr, "  %s in %.1f s\n", t->bpe_path, clf_now() - t0);
    }
    dist_barrier();  /* a writer that failed above ends the job instead (cmd_train.c) */
    if ((st = clf_tok_spm_load(&t->tok, t->bpe_path)) != CLF_OK)
        return cli_fail(NULL, st, "loading the BPE model");
    return 0;
}

/* The pairs are read (line counts, UTF-8) before anything is learned from
 * them, so a bad corpus is named before minutes of BPE learning; they are
 * encoded once the tokenizer and the model's --max-len are known. */
static int read_data(struct trainer *t)
{
    const struct train_args *a = &t->a;
    clf_status st;
    if ((st = clf_corpus_load(&t->train, a->src, a->tgt)))
        return cli_fail(NULL, st, "reading the training data");
    if (a->val_src && a->val_tgt && *a->val_src && (st = clf_corpus_load(&t->val, a->val_src, a->val_tgt)))
        return cli_fail(NULL, st, "reading the validation data");
    return 0;
}

static int encode_data(struct trainer *t)
{
    const struct train_args *a = &t->a;
    struct clf_corpus_summary sum, vsum;
    clf_status st;
    if ((st = clf_corpus_encode_tok(t->train, t->tok, a->max_len, &sum)))
        return cli_fail(NULL, st, "reading the training data");
    if (t->talk)
        fprintf(stderr, "train: %zu pairs, %zu kept (%zu empty, %zu longer than %d), %zu + %zu subwords\n",
                sum.lines, sum.kept, sum.skipped_empty, sum.skipped_long, a->max_len, sum.src_tokens, sum.tgt_tokens);
    if (sum.kept == 0) {
        fprintf(stderr, "clformer train: no usable pairs in %s / %s\n", a->src, a->tgt);
        return 1;
    }
    if (t->val && (st = clf_corpus_encode_tok(t->val, t->tok, a->max_len, &vsum)))
        return cli_fail(NULL, st, "reading the validation data");
    /* --val-sentences N: the first N kept pairs (the encoding's arrays hold
     * them in file order), the same ones at every validation */
    if (t->val && a->val_pairs > 0 && t->val->n_pairs > (size_t)a->val_pairs)
        t->val->n_pairs = (size_t)a->val_pairs;
    if (t->val && t->talk && a->val_pairs > 0)
        fprintf(stderr, "validation: the first %zu of %zu pairs (--val-sentences)\n", t->val->n_pairs, vsum.kept);
    return 0;
}

/* After the trainer's creation: what failed (flags: the options that size
 * the model, when they do), or the model and its state at hand. */
static int took(struct trainer *t, clf_status st, const char *what, const char *flags)
{
    if (st != CLF_OK)
        return flags ? cli_fail_memory(t->ctx, st, what, flags) : cli_fail(t->ctx, st, what);
    t->m = clf_trainer_model(t->tr);
    t->s = clf_trainer_state(t->tr);
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
    struct clf_train_opts o = trainer_opts(t, &c);
    return took(t, clf_trainer_init(&t->tr, t->ctx, &o), "creating the model", TRAIN_MODEL_FLAGS);
}

/* --init's model with a fresh optimizer, checked against the tokenizer. */
static int init_model(struct trainer *t)
{
    struct clf_train_opts o = trainer_opts(t, NULL);
    if (took(t, clf_trainer_init(&t->tr, t->ctx, &o), "--init: loading the checkpoint", NULL))
        return 1;
    return trainer_check_tokenizer(t, t->a.init) || trainer_fit_max_len(t, t->a.init);
}

/* The model, its optimizer state and the position of the newest checkpoint. */
static int resumed_model(struct trainer *t)
{
    struct train_args *a = &t->a;
    char path[CLF_PATH_MAX], optim[CLF_PATH_MAX];
    clf_trainer_ckpt_paths(a->out, t->resume_step, path, optim, sizeof path);
    struct clf_train_opts o = trainer_opts(t, NULL);
    if (took(t, clf_trainer_resume(&t->tr, t->ctx, a->out, t->resume_step, &o), "resuming", NULL))
        return 1;
    if (trainer_check_tokenizer(t, path) || trainer_fit_max_len(t, path))
        return 1;
    a->seed = t->s->seed, a->max_tokens = t->s->max_tokens, a->update_tokens = t->s->update_tokens;
    const struct clf_ckpt_position *was = &t->source.train;
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

/* The host buffer or the buckets the sum across ranks goes through. */
static int ranks_setup(struct trainer *t)
{
    size_t n = clf_model_numel(t->m);
    if (!(t->grads = malloc(n * sizeof *t->grads))) {
        fprintf(stderr, "clformer: out of host memory\n");
        return 1;
    }
    if (t->a.bucket_mb > 0 && !(t->buckets = grad_buckets_init(t->ctx, t->m, (size_t)(t->a.bucket_mb * 1e6))))
        return 1;
    if (t->talk && t->buckets)
        fprintf(stderr, "%d ranks, gradients of %.1f MB summed per update in buckets of %g MB during the "
                "backward\n", t->ranks, (double)n * sizeof(float) / 1e6, t->a.bucket_mb);
    else if (t->talk)
        fprintf(stderr, "%d ranks, gradients of %.1f MB summed per update after the backward\n", t->ranks,
                (double)n * sizeof(float) / 1e6);
    return 0;
}

int trainer_setup(struct trainer *t)
{
    const struct train_args *a = &t->a;
    if (clf_mkdir_p(a->out)) {
        fprintf(stderr, "clformer train: cannot create --out %s: %s\n", a->out, strerror(errno));
        return 1;
    }
    long *steps;
    int n = a->resume ? clf_trainer_checkpoints(a->out, &steps) : 0;
    t->resume_step = n > 0 ? steps[n - 1] : -1;
    if (a->resume)
        free(steps);
    if (a->resume && t->resume_step < 0)
        fprintf(stderr, "clformer train: --resume: no checkpoint in %s, starting afresh\n", a->out);
    if (source_meta(t) || read_data(t) || subwords(t))
        return 1;
    if (t->a.max_len < 0 && !a->init && t->resume_step < 0)
        t->a.max_len = 100;  /* a new model's positions are made to fit it */
    char device[64];
    if (!(t->ctx = cli_open(dist_device(a->device, device, sizeof device))))
        return 1;
    /* the model before the data: a checkpoint's positions decide --max-len */
    if (a->init ? init_model(t) : t->resume_step >= 0 ? resumed_model(t) : new_model(t))
        return 1;
    if (encode_data(t) || (t->writer && a->init && trainer_copy_tokenizer(t)))
        return 1;
    if (t->talk && a->init)
        fprintf(stderr, "fine-tuning %s: its weights and config, tokenizer %s; Adam afresh from update 0 (warm-up "
                "of %d updates)\n", a->init, t->bpe_path, t->a.warmup);
    t->cfg = clf_model_config(t->m);
    if (t->talk)
        describe_model(t);
    return t->ranks > 1 && ranks_setup(t);
}

int trainer_data(struct trainer *t)
{
    clf_status st = clf_trainer_data(t->tr, t->train);
    return st != CLF_OK ? cli_fail_memory(t->ctx, st, "forming batches", TRAIN_BATCH_FLAGS) : 0;
}


