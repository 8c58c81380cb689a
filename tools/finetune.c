/* finetune.c: `clformer train --init CKPT`, fine-tuning a checkpoint (ours
 * or one `clformer import` made of a Marian / OPUS-MT model). The model
 * with its weights and config and a fresh optimizer at step 0 are the
 * library's (clf_trainer_init with init); here: the tokenizer the
 * checkpoint names (clf_ckpt_tok_open) checked against the model (also
 * on --resume), and that tokenizer's files copied into --out so that the
 * run's directory holds all a later --resume or `clformer translate`
 * needs. */
#include <stdio.h>
#include <string.h>

#include <clformer/advanced/files.h>
#include "cli.h"
#include "trainer.h"

int trainer_open_tokenizer(struct trainer *t, const char *ckpt)
{
    clf_status st = clf_ckpt_tok_open(ckpt, &t->source, t->a.bpe, &t->tok, t->bpe_path, sizeof t->bpe_path);
    return st != CLF_OK ? cli_fail(NULL, st, "opening the checkpoint's tokenizer (pass the one it was made with: "
                                   "--bpe)") : 0;
}

int trainer_check_tokenizer(const struct trainer *t, const char *ckpt)
{
    /* size, recorded hash, pad and eos */
    clf_status st = clf_ckpt_tok_check(ckpt, &t->source, t->tok, clf_model_config(t->m), t->bpe_path);
    return st != CLF_OK ? fprintf(stderr, "clformer train: %s (--bpe)\n", clf_ctx_error(NULL)), 1 : 0;
}

int trainer_fit_max_len(struct trainer *t, const char *ckpt)
{
    const int asked = t->a.max_len;
    clf_status st = clf_model_max_len_fit(clf_model_config(t->m), &t->a.max_len);
    if (st != CLF_OK)
        return fprintf(stderr, "clformer train: --max-len %d: %s (%s)\n", asked, clf_ctx_error(NULL), ckpt), 1;
    return 0;
}

int trainer_copy_tokenizer(const struct trainer *t)
{
    char dst[CLF_PATH_MAX];
    snprintf(dst, sizeof dst, "%s/bpe.model", t->a.out);
    clf_status st = clf_tok_kind(t->tok) == CLF_TOK_KIND_MARIAN ? clf_marian_copy_tokenizer(t->bpe_path, t->a.out)
                                                                : clf_file_copy(t->bpe_path, dst);
    return st != CLF_OK ? cli_fail(NULL, st, "copying the tokenizer into --out") : 0;
}
