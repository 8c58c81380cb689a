/* clformer/translate.h: translating text with a checkpoint, the one path
 * `clformer translate`, training's validation BLEU and programs that link
 * libclformer share.
 *
 * A translator (clf_translator_t) holds a model loaded on a context, the
 * tokenizer the checkpoint names (ours or an imported Marian model's) and
 * the checkpoint's generation defaults. It sorts sources by length, cuts
 * them into batches (struct clf_batching), searches (clf_model_translate)
 * and decodes the hypotheses to text.
 *
 *     clf_ctx_t *ctx;  clf_translator_t *t;
 *     clf_ctx_init(&ctx, NULL);   (CLF_DEVICE or the best device; or "gpu", "cpu", an index, a name)
 *     clf_translator_init(ctx, "model.safetensors", NULL, &t);
 *     struct clf_translate_opts o = clf_translator_opts(t);   (adjust)
 *     clf_translator_translate(t, lines, n, &o, CLF_BATCHING_DEFAULT, out, NULL, NULL, NULL);
 *     ... free(out[i]) ...; clf_translator_free(t); clf_ctx_free(ctx);
 *
 * Errors: every call that can fail returns clf_status; the message is on
 * the translator's context (clf_ctx_error(ctx)), or in the calling
 * thread's buffer (clf_ctx_error(NULL)) for calls that take no context.
 * Nothing here prints or exits.
 *
 * Threads: one translator per thread, each on its own context, may
 * translate at the same time. A context is one device queue with one
 * scratch arena and one message buffer, so a context and everything made
 * on it (translators, models, tensors) belong to one thread at a time;
 * several translators may share a context, one call after another. One
 * context or translator used from two threads at once is not supported.
 * What the library holds for the whole process is locked: listing devices
 * and clf_ctx_init (in a rehearsal of CI, PoCL 3.1 found no device when
 * two threads queried at once), every call into CLBlast (Debian 12's
 * CLBlast 1.5.3 fills its kernel cache without a lock,
 * CNugteren/CLBlast#486), the host backend's record of buffer addresses;
 * OpenBLAS's and SentencePiece's settings are made once.
 * tests/test_threads.c checks it: 2, 3 and 4 threads opening their
 * contexts at once (all on the same device) and translating the same
 * lines for three rounds each give one thread's output, and
 * contexts opened from four threads at once open the same device, on
 * PoCL, PoCL shaped as a GPU (GEMMs on CLBlast) and Intel's CPU runtime.
 * The library reads its settings (CLF_*) from the environment as it
 * works: change one with clf_setting_set (clformer/device.h), not setenv, while
 * other threads or a device work. The library sets OPENBLAS_THREAD_TIMEOUT
 * when it is unset, as it loads (setenv, before any thread reads it).
 * Messages of calls without a context are per thread
 * (clf_ctx_error(NULL)).
 */
#ifndef CLFORMER_TRANSLATE_H
#define CLFORMER_TRANSLATE_H

#include <stdio.h>  /* FILE, for clf_shards_join */

#include "clformer/device.h"
#include "clformer/model.h"
#include "clformer/status.h"
#include "clformer/text.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* How sources are cut into batches after sorting them by length: at most
 * `sentences` a batch (0: 1) and, when `tokens` is not 0, at most that
 * many padded source tokens (sentences × the longest one's subwords with
 * its EOS); a source longer than the budget goes alone. */
struct clf_batching {
    size_t sentences, tokens;
    bool continuous;  /* the sorted sources join one decoding as others finish (at most `sentences` at once) */
};

/* `clformer translate`'s: 32 sentences at once, no token budget,
 * continuous (greedy decoding of test_2016_flickr 1.25 times as fast as
 * rounds, which spend most steps on the last few rows of a batch; beam 4
 * par: 0.97-1.01). */
#define CLF_BATCHING_DEFAULT ((struct clf_batching){.sentences = 32, .tokens = 0, .continuous = true})

/* Called after each batch with the sentences done so far, of n. */
typedef void (*clf_translate_progress)(size_t done, size_t n, void *arg);

typedef struct clf_translator clf_translator_t;

/* The generation defaults checkpoint ckpt asks for (an imported model's
 * num_beams, length penalty, max and min length over
 * clf_translate_opts_default's; ours have none), without a device or its
 * weights: what clf_translator_opts gives once it is loaded. A file that
 * is not a clformer checkpoint is refused naming it (clf_ckpt_meta_read). */
clf_status clf_translator_defaults(const char *ckpt, struct clf_translate_opts *o);

/* Loads checkpoint ckpt on ctx with its tokenizer: the one its metadata
 * names beside it, or `tokenizer` (may be NULL) instead: a SentencePiece
 * model file for ours, a directory for an imported Marian model's. The
 * tokenizer must be the one the model was trained with (its size, and its
 * hash where the checkpoint records one: CLF_ERR_ARG otherwise). It
 * decodes in the default compute type (clf_translator_compute_set(t,
 * NULL)) until told otherwise. ctx stays the caller's and must outlive the
 * translator. */
clf_status clf_translator_init(clf_ctx_t *ctx, const char *ckpt, const char *tokenizer, clf_translator_t **t);
void clf_translator_free(clf_translator_t *t);

/* Decoding's compute type by CTranslate2's name (default, auto, float32,
 * int8, bfloat16, float16; NULL: default), as clf_model_compute_set
 * chooses and refuses it; clf_translator_compute says which runs. */
clf_status clf_translator_compute_set(clf_translator_t *t, const char *compute_type);
enum clf_compute_type clf_translator_compute(const clf_translator_t *t);

/* The checkpoint's generation defaults (clf_translator_defaults'), to
 * adjust and pass to the calls below. */
struct clf_translate_opts clf_translator_opts(const clf_translator_t *t);
/* The most source subwords the model takes (its positions less EOS). */
size_t clf_translator_max_source(const clf_translator_t *t);
const clf_model_t *clf_translator_model(const clf_translator_t *t);
/* The context it was loaded on, which holds its calls' messages. */
clf_ctx_t *clf_translator_ctx(const clf_translator_t *t);
const clf_tok_t *clf_translator_tok(const clf_translator_t *t);

/* Source text -> subword ids without EOS (malloc'd), as the calls below
 * take them; a line longer than clf_translator_max_source is not cut
 * here. */
clf_status clf_translator_encode(clf_translator_t *t, const char *text, int32_t **ids, size_t *n);

/* Translates n source lines: each is encoded, cut to
 * clf_translator_max_source subwords, and the n-best hypotheses (o->nbest;
 * 1 when o->greedy) are decoded to text into out[i·nbest + k], best first
 * (malloc'd: the caller frees each; "" where the search found nothing),
 * their scores (log-probability over the length penalty) into scores
 * likewise (may be NULL). progress may be NULL. On failure every out[] is
 * NULL. */
clf_status clf_translator_translate(clf_translator_t *t, const char *const *src, size_t n,
                                    const struct clf_translate_opts *o, struct clf_batching b, char **out,
                                    float *scores, clf_translate_progress progress, void *arg);
/* The same for sources given as subword ids without EOS (src[i] of len[i],
 * at most clf_translator_max_source each). */
clf_status clf_translator_translate_ids(clf_translator_t *t, const int32_t *const *src, const size_t *len, size_t n,
                                        const struct clf_translate_opts *o, struct clf_batching b, char **out,
                                        float *scores, clf_translate_progress progress, void *arg);
/* Continuous translation (clf_model_translate_stream): take gives sources
 * as subword ids (at most width each, width <= clf_translator_max_source)
 * between decoding steps, up to room at once; give hands over each
 * sentence's best translation as text (malloc'd, the callee frees it; NULL
 * when its subwords could not be decoded to text, with the context's
 * message) as soon as it finishes, in any order. The stream ends when take
 * returns 0 with nothing decoding. o->nbest is taken as 1. */
clf_status clf_translator_translate_stream(clf_translator_t *t, const struct clf_translate_opts *o, size_t room,
                                           size_t width,
                                           size_t (*take)(void *user, size_t room, size_t live, const int32_t **src,
                                                          size_t *len, void **tag),
                                           void (*give)(void *user, void *tag, char *text), void *user);

/* Greedy corpus BLEU (sacreBLEU's 13a) of model m with tokenizer tok on
 * corpus c's encoded pairs against their raw target lines, translated in
 * batches of at most max_tokens source tokens: the validation of a
 * training run, whose batches the device holds. m is on ctx. */
clf_status clf_translate_bleu(clf_ctx_t *ctx, clf_model_t *m, const clf_tok_t *tok, const struct clf_corpus *c,
                              size_t max_tokens, double *bleu);

/* Checks that tok, read from tok_path, is the vocabulary checkpoint ckpt
 * (its metadata meta, its model's config cfg) was trained with: its size,
 * its hash where meta records one, and its pad and EOS ids against the
 * model's. CLF_ERR_ARG with a message naming both in clf_ctx_error(NULL)
 * otherwise. */
clf_status clf_ckpt_tok_check(const char *ckpt, const struct clf_ckpt_meta *meta, const clf_tok_t *tok,
                              const struct clf_model_config *cfg, const char *tok_path);

/* ------------------------------------------------------------- shards
 * A corpus translated in pieces (`mpirun -np N clformer translate`: shard
 * k for rank k): n shards of contiguous lines, in order, so that the
 * output is their files joined in order. Each shard's file is written
 * whole to a temporary name and renamed, so a file under a shard's name
 * is a finished shard; a job that failed is resumed by translating only
 * the shards whose files are missing. Shards are numbered from 0 in the
 * calls (k, as MPI numbers ranks) and from 1 in file names and messages
 * ("shard 2 of 2"). A file holds `per_source` lines a source line (the
 * n-best count). Messages are in clf_ctx_error(NULL). */

/* Shard k (0 <= k < n) of `total` lines: lines [*first, *first + *count)
 * (0-based), the first total % n shards one line longer than the rest.
 * CLF_ERR_ARG for n < 1 or k outside [0, n). */
clf_status clf_shard_range(size_t total, int k, int n, size_t *first, size_t *count);
/* The file of shard k of n beside `base` (an output file's path, or a
 * folder's path + "/" + a name): "<base>.shard-<k+1>-of-<n>" into out
 * (len bytes); CLF_ERR_ARG when it does not fit. */
clf_status clf_shard_path(const char *base, int k, int n, char *out, size_t len);
/* Whether `path` holds a finished shard of `lines` lines: *done false
 * (CLF_OK) when no file is there; true when it holds exactly that many
 * lines, each ended by a newline; CLF_ERR_FORMAT, naming the file and both
 * counts, when it holds another count (another job's shard: another input
 * or --nbest). */
clf_status clf_shard_done(const char *path, size_t lines, bool *done);
/* Writes the n shards of a corpus of `total` source lines beside base, in
 * order, to out, each first checked with clf_shard_done (a missing or
 * short one fails, naming it, before anything is written); CLF_ERR_IO when
 * reading or writing fails. The shards stay. */
clf_status clf_shards_join(const char *base, int n, size_t total, size_t per_source, FILE *out);
/* The same into the file `output`, written whole to a temporary name and
 * renamed (nothing is left there on failure). */
clf_status clf_shards_join_file(const char *base, int n, size_t total, size_t per_source, const char *output);
/* Writes the translations of `count` sources, the first being the
 * input's line `first` (0-based), as `clformer translate` writes them: a
 * line per source, or with nbest > 1 nbest lines a source,
 * "index<TAB>score<TAB>text" (index: the input's line from 0; score with
 * 4 decimals). text and scores as clf_translator_translate gives them
 * (text[i·nbest + k]; NULL reads as ""). CLF_ERR_IO when writing fails. */
clf_status clf_translations_write(FILE *out, char *const *text, const float *scores, size_t count, size_t nbest,
                                  size_t first);

/* A text file translated to a file: `input` (plain or gzip, as
 * clf_lines_read reads it), shard `shard` of `shards` of its lines (0 of
 * 1: all of them) into `output` (one shard) or into the shard's file
 * beside it (clf_shard_path(output, shard, shards)), written whole to a
 * temporary name and renamed, by clf_translations_write. */
struct clf_translate_file {
    const char *input, *output;
    int shard, shards;
};
/* Translates f's lines with t (sources cut to clf_translator_max_source
 * subwords) and writes them as above; *lines (may be NULL) gets the
 * input's line count, which clf_shards_join wants. An empty input is
 * CLF_ERR_ARG, naming it. */
clf_status clf_translator_translate_file(clf_translator_t *t, const struct clf_translate_file *f,
                                         const struct clf_translate_opts *o, struct clf_batching b, size_t *lines);

/* Another job's shards beside base: *other gets the shard count M of a
 * file "<base>.shard-K-of-M" there with M != n, or 0 when there is none
 * (--resume with another number of ranks finds none of its own). */
clf_status clf_shards_other(const char *base, int n, int *other);

/* Removes the n shards' files beside base (missing ones are no error),
 * and the temporaries of writers that died before renaming theirs;
 * CLF_ERR_IO, naming the first that could not be removed. */
clf_status clf_shards_remove(const char *base, int n);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
