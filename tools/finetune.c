/* finetune.c: `clformer train --init CKPT`, fine-tuning a checkpoint (ours
 * or one `clformer import` made of a Marian / OPUS-MT model): the model
 * with its weights and config, a fresh optimizer at step 0, the tokenizer
 * the checkpoint names (cli_tok_open) checked against the model, and that
 * tokenizer's files copied into --out so that the run's directory holds
 * all a later --resume or `clformer translate` needs. */
#define _XOPEN_SOURCE 700  /* realpath */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "textgen.h"
#include "trainer.h"

bool trainer_ckpt_is_marian(const char *ckpt)
{
    char kind[64] = "";
    return clf_checkpoint_meta(ckpt, "tokenizer", kind, sizeof kind) == CLF_OK && !strcmp(kind, "marian");
}

/* Where the tokenizer cli_tok_open read lives: for Marian the directory of
 * its files, for ours the SentencePiece model's path (the rule of
 * tools/tok_open.c: --bpe, else beside the checkpoint). */
static void tok_source(const struct trainer *t, char *out, size_t len)
{
    char tmp[4200], name[256] = "bpe.model";
    if (t->a.bpe) {
        snprintf(out, len, "%s", t->a.bpe);
        return;
    }
    snprintf(tmp, sizeof tmp, "%s", t->a.init);
    const char *dir = dirname(tmp);
    if (t->marian) {
        snprintf(out, len, "%s", dir);
        return;
    }
    clf_checkpoint_meta(t->a.init, "bpe", name, sizeof name);
    snprintf(out, len, "%s/%s", dir, name);
}

int trainer_init_tokenizer(struct trainer *t)
{
    t->marian = trainer_ckpt_is_marian(t->a.init);
    tok_source(t, t->bpe_path, sizeof t->bpe_path);
    return cli_tok_open(t->a.init, t->a.bpe, &t->tok);
}

int trainer_check_tokenizer(const struct trainer *t, const char *ckpt)
{
    const struct clf_model_config *c = clf_model_config(t->m);
    struct clf_tok_ids sp = clf_tok_specials(t->tok);
    if (textgen_check_vocab(ckpt, t->tok, c->vocab, t->bpe_path))  /* its size and the hash it records */
        return 1;
    if (sp.pad != c->pad_id || sp.eos != c->eos_id) {
        fprintf(stderr, "clformer train: %s: the tokenizer in %s has pad %d and eos %d, the model pad %d and eos %d: "
                "pass the tokenizer the model was made with (--bpe)\n", ckpt, t->bpe_path, sp.pad, sp.eos, c->pad_id,
                c->eos_id);
        return 1;
    }
    return 0;
}

int trainer_fit_max_len(struct trainer *t, const char *ckpt)
{
    /* a sentence and its eos, and one position to spare as for new models */
    const int positions = clf_model_config(t->m)->max_len, longest = positions - 2;
    int *max_len = &t->a.max_len;
    if (*max_len < 0)
        *max_len = longest < 100 ? longest : 100;
    if (*max_len > longest || *max_len < 2) {
        fprintf(stderr, "clformer train: --max-len %d: %s has positions for %d tokens, so --max-len may be 2..%d\n",
                *max_len, ckpt, positions, longest);
        return 1;
    }
    return 0;
}

int trainer_init_model(struct trainer *t)
{
    struct train_args *a = &t->a;
    clf_status st;
    if ((st = clf_model_load(t->ctx, &t->m, a->init)) != CLF_OK)
        return cli_fail(t->ctx, st, "--init: loading the checkpoint");
    const struct clf_model_config *c = clf_model_config(t->m);
    if (trainer_check_tokenizer(t, a->init) || trainer_fit_max_len(t, a->init))
        return 1;
    float dropout = a->dropout >= 0 ? (float)a->dropout : c->dropout;
    float smoothing = a->smoothing >= 0 ? (float)a->smoothing : c->label_smoothing;
    if ((st = clf_model_set_regularization(t->m, dropout, smoothing)) != CLF_OK)
        return cli_fail(NULL, st, "--dropout / --label-smoothing");
    clf_model_optimizer_reset(t->m, a->seed);
    trainer_take_meta(t, a->init, true);
    return 0;
}

void trainer_take_meta(struct trainer *t, const char *ckpt, bool init)
{
    struct {
        const char *key;
        char *value;
    } kept[] = {{"init", t->init_from}, {"generation", t->generation}, {"imported_from", t->imported_from}};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (clf_checkpoint_meta(ckpt, kept[i].key, kept[i].value, 4200) != CLF_OK)
            kept[i].value[0] = 0;
    if (init)
        snprintf(t->init_from, sizeof t->init_from, "%s", ckpt);
}

/* Copies src to dst through a temporary name renamed over it. */
static int copy_file(const char *src, const char *dst)
{
    char tmp[4300], buf[65536];
    snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    FILE *in = fopen(src, "rb"), *out = in ? fopen(tmp, "wb") : NULL;
    int rc = 0;
    size_t n;
    if (!in || !out)
        rc = -1;
    while (!rc && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            rc = -1;
    if (in && ferror(in))
        rc = -1;
    if (in)
        fclose(in);
    if (out && fclose(out))
        rc = -1;
    if (!rc && rename(tmp, dst))
        rc = -1;
    if (rc) {
        fprintf(stderr, "clformer train: cannot copy %s to %s: %s\n", src, dst, strerror(errno));
        if (out)
            unlink(tmp);
    }
    return rc;
}

/* src to dst unless they are one file already (--init from a checkpoint in
 * --out itself). */
static int copy_unless_same(const char *src, const char *dst)
{
    char *a = realpath(src, NULL), *b = realpath(dst, NULL);
    bool same = a && b && !strcmp(a, b);
    free(a);
    free(b);
    return same ? 0 : copy_file(src, dst);
}

int trainer_copy_tokenizer(const struct trainer *t)
{
    char src[4400], dst[4400];
    if (!t->marian) {
        snprintf(dst, sizeof dst, "%s/bpe.model", t->a.out);
        return copy_unless_same(t->bpe_path, dst);
    }
    /* what clf_tok_marian_load reads; the last two only some models have */
    static const char *const files[] = {"source.spm", "target.spm", "vocab.json", "target_vocab.json",
                                        "tokenizer_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(src, sizeof src, "%s/%s", t->bpe_path, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", t->a.out, files[i]);
        if (i >= 3 && access(src, F_OK) != 0)
            continue;
        if (copy_unless_same(src, dst))
            return 1;
    }
    return 0;
}
