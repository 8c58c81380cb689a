/* textgen.h: translating text with a model and a subword model, shared by
 * `clformer translate` and the validation BLEU of `clformer train`. */
#ifndef CLF_TEXTGEN_H
#define CLF_TEXTGEN_H

#include "clformer.h"

/* Translates n sources given as subword ids (without EOS), `chunk`
 * sentences at a time in order of length, and decodes the hypotheses to
 * text: out[i·nbest + k] (malloc'd; "" where the search found nothing),
 * scores likewise (may be NULL). progress, if not NULL, is called after
 * each chunk with the sentences done so far. Returns 0, or 1 after printing
 * what failed. */
int textgen_translate(clf_ctx_t *ctx, clf_model_t *m, const clf_spm_t *spm, const int32_t *const *src, const size_t *len,
                             size_t n, const struct clf_translate_opts *o, size_t chunk, char **out, float *scores,
                             void (*progress)(size_t done, size_t n, void *arg), void *arg);

/* Checks that spm is the vocabulary the checkpoint was trained with;
 * returns 0, or 1 after printing why not. */
int textgen_check_vocab(const char *ckpt, const clf_spm_t *spm, int model_vocab, const char *spm_path);

#endif
