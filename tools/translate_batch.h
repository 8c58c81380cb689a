/* translate_batch.h: translating many sentences in batches of similar
 * length with a model and its tokenizer (clf_tok_t: ours or an imported
 * Marian model's), shared by
 * `clformer translate`, the validation BLEU of `clformer train` and
 * compare-attention's. */
#ifndef CLF_TRANSLATE_BATCH_H
#define CLF_TRANSLATE_BATCH_H

#include "clformer.h"

/* How sources are cut into batches, after sorting them by length: at most
 * `sentences` a batch and, when `tokens` is not 0, at most that many
 * padded source tokens (sentences × the longest one's subwords with its
 * EOS); a source longer than the budget goes alone. flags: the
 * command's options that set these, named when the device cannot hold a
 * batch (NULL: none). */
struct translate_batching {
    size_t sentences, tokens;
    const char *flags;
};

/* The first batch of sorted lengths len[0..n): how many sources it takes. */
size_t translate_batch_size(const size_t *len, size_t n, struct translate_batching b);

/* Translates n sources given as subword ids (without EOS) in batches of
 * similar length (b), and decodes the hypotheses to text: out[i·nbest + k]
 * (malloc'd; "" where the search found nothing), scores likewise (may be
 * NULL). progress, if not NULL, is called after each batch with the
 * sentences done so far. Returns 0, or 1 after printing what failed. */
int translate_batches(clf_ctx_t *ctx, clf_model_t *m, const clf_tok_t *tok, const int32_t *const *src,
                      const size_t *len, size_t n, const struct clf_translate_opts *o, struct translate_batching b,
                      char **out, float *scores, void (*progress)(size_t done, size_t n, void *arg), void *arg);

/* Greedy BLEU of corpus c's pairs against their raw target lines (the
 * validation of `clformer train` and of compare-attention's runs),
 * translated in batches of max_tokens source tokens (a training run's
 * budget: a device that holds its batches holds these). Returns 0, or 1
 * after printing what failed. */
int translate_bleu(clf_ctx_t *ctx, clf_model_t *m, const clf_tok_t *tok, const struct clf_corpus *c, size_t max_tokens,
                   double *bleu);

/* Checks that tok is the vocabulary checkpoint ckpt (its metadata meta)
 * was trained with (its size, and its hash when the checkpoint records
 * one); returns 0, or 1 after printing why not, naming spm_path. */
int translate_check_vocab(const char *ckpt, const struct clf_ckpt_meta *meta, const clf_tok_t *tok, int model_vocab,
                          const char *spm_path);

#endif
