/* kept.h: what clf_trainer_open (setup.c) hands the trainer (trainer.c)
 * to keep: the tokenizer, the encoded pairs, the report. trainer.c frees
 * them with the trainer; setup.c reads them through clf_trainer_kept, so
 * that the dependency runs one way, setup.c -> trainer.c. */
#ifndef CLF_TRAIN_KEPT_H
#define CLF_TRAIN_KEPT_H

#include "clformer/text.h"
#include "clformer/train.h"

struct clf_trainer_kept {
    clf_tok_t *tok;
    struct clf_corpus *train, *val;  /* val NULL: none */
    struct clf_train_setup_report report;
};

/* The trainer takes k (malloc'd) and frees it, and what it holds, with
 * itself; NULL for a trainer that keeps nothing. */
void clf_trainer_keep(clf_trainer_t *t, struct clf_trainer_kept *k);
struct clf_trainer_kept *clf_trainer_kept(const clf_trainer_t *t);
/* Frees k and what it holds (k may be NULL). */
void clf_trainer_kept_free(struct clf_trainer_kept *k);

#endif
