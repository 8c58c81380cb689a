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

#include "base/files.h"
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
    const struct clf_model_config *c = clf_model_config(t->m);
    struct clf_tok_ids sp = clf_tok_specials(t->tok);
    clf_status st = clf_ckpt_tok_check(ckpt, &t->source, t->tok, c->vocab, t->bpe_path);  /* size, recorded hash */
    if (st != CLF_OK)
        return fprintf(stderr, "clformer: %s (--bpe)\n", clf_ctx_error(NULL)), 1;
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

int trainer_copy_tokenizer(const struct trainer *t)
{
    char dst[CLF_PATH_MAX];
    snprintf(dst, sizeof dst, "%s/bpe.model", t->a.out);
    clf_status st = clf_tok_kind(t->tok) == CLF_TOK_KIND_MARIAN ? clf_marian_copy_tokenizer(t->bpe_path, t->a.out)
                                                                : clf_file_copy(t->bpe_path, dst);
    return st != CLF_OK ? cli_fail(NULL, st, "copying the tokenizer into --out") : 0;
}
