/* finetune.c: `clformer train --init CKPT`, fine-tuning a checkpoint (ours
 * or one `clformer import` made of a Marian / OPUS-MT model). The model
 * with its weights and config, a fresh optimizer at step 0, the tokenizer
 * the checkpoint names checked against the model (also on --resume) are
 * the library's (clf_trainer_open with opts.init); here: that tokenizer's
 * files copied into --out so that the run's directory holds all a later
 * --resume or `clformer translate` needs. */
#include <stdio.h>
#include <string.h>

#include <clformer/advanced/files.h>
#include "cli.h"
#include "trainer.h"

int trainer_copy_tokenizer(const struct trainer *t, const char *from)
{
    char dst[CLF_PATH_MAX];
    snprintf(dst, sizeof dst, "%s/bpe.model", t->a.out);
    clf_status st = clf_tok_kind(t->tok) == CLF_TOK_KIND_MARIAN ? clf_marian_copy_tokenizer(from, t->a.out)
                                                                : clf_file_copy(from, dst);
    return st != CLF_OK ? cli_fail(NULL, st, "copying the tokenizer into --out") : 0;
}
