/* clformer/text.h: the text pipeline (subwords, parallel data, BLEU).
 * None of it touches OpenCL. Failures return a
 * clf_status and leave their message in clf_ctx_error(NULL).
 *
 *   subwords   clf_spm_*      SentencePiece BPE models (host/text/spm.cc)
 *   tokenizers clf_tok_*      one interface over a model's vocabulary: ours (one
 *                             SentencePiece model) or Marian's (host/text/tok.c, marian.c)
 *   data       clf_corpus_*   parallel files -> ids -> padded batches (host/text/data.c)
 *   metrics    clf_bleu_*     corpus BLEU and chrF as sacreBLEU 2.x computes them
 *              clf_chrf_*     (host/text/bleu.c, host/text/chrf.c)
 */
#ifndef CLFORMER_TEXT_H
#define CLFORMER_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clformer/status.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* ------------------------------------------------------------- subwords */

/* Fixed ids of every model clf_spm_learn writes. Byte-fallback pieces
 * <0x00>..<0xFF> follow them (ids 4..259), then the learned merges. */
#define CLF_SPM_PAD 0
#define CLF_SPM_BOS 1
#define CLF_SPM_EOS 2
#define CLF_SPM_UNK 3

typedef struct clf_spm clf_spm_t;

struct clf_spm_learn_opts {
    int vocab_size;             /* pieces in all, specials included (default 8000) */
    int threads;                /* trainer threads (default 2) */
    bool byte_fallback;         /* unknown characters become byte pieces (default true) */
    double character_coverage;  /* default 1.0 */
    size_t max_sentences;       /* lines sampled for training, 0 = all (default 0) */
};
void clf_spm_learn_defaults(struct clf_spm_learn_opts *o);

/* Learns one BPE model jointly on all `files` (plain or gzip, one sentence a
 * line) and writes it to model_path, an ordinary SentencePiece .model file
 * (spm_encode and Python's sentencepiece read it). Normalisation is
 * SentencePiece's default nmt_nfkc. The trainer's logging is silenced. */
clf_status clf_spm_learn(const char *const *files, int nfiles, const char *model_path,
                         const struct clf_spm_learn_opts *opts);

/* Loads a .model file. clf_spm_hash is FNV-1a 64 of the file's bytes, for
 * checkpoints to record which vocabulary they were trained with. */
clf_status clf_spm_load(clf_spm_t **spm, const char *model_path);
void clf_spm_free(clf_spm_t *spm);
int clf_spm_vocab_size(const clf_spm_t *spm);
uint64_t clf_spm_hash(const clf_spm_t *spm);
/* The piece of an id ("▁the", "<0xE2>", "<unk>"); "" when out of range. */
const char *clf_spm_piece(const clf_spm_t *spm, int32_t id);

/* text (len bytes, need not be NUL-terminated) -> ids; *ids is malloc'd
 * (caller frees; NULL when *n is 0). No bos/eos are added. */
clf_status clf_spm_encode(const clf_spm_t *spm, const char *text, size_t len, int32_t **ids,
                          size_t *n);
/* text -> pieces joined by single spaces (as spm_encode prints), malloc'd. */
clf_status clf_spm_encode_pieces(const clf_spm_t *spm, const char *text, size_t len,
                                 char **pieces);
/* ids -> text, malloc'd and NUL-terminated. pad/bos/eos are dropped. */
clf_status clf_spm_decode(const clf_spm_t *spm, const int32_t *ids, size_t n, char **text);
/* space-separated pieces -> text, malloc'd. */
clf_status clf_spm_decode_pieces(const clf_spm_t *spm, const char *pieces, char **text);

/* ------------------------------------------------------------- tokenizers */

/* A model's vocabulary, whichever kind it is, behind one interface:
 *   clf_tok_spm_load     ours: one SentencePiece model for both sides, the
 *                        ids its piece ids, the specials CLF_SPM_*.
 *   clf_tok_marian_load  a Marian / OPUS-MT model directory as transformers'
 *                        MarianTokenizer reads it (docs/marian.md): source.spm
 *                        and target.spm split each side's text into pieces,
 *                        vocab.json maps pieces to the model's ids (and
 *                        target_vocab.json the target side's when
 *                        tokenizer_config.json says "separate_vocabs": true);
 *                        a piece missing from the map is <unk>.
 * Side: the encoder's text (SOURCE) or the decoder's (TARGET). */
typedef struct clf_tok clf_tok_t;

enum clf_tok_side { CLF_TOK_SOURCE, CLF_TOK_TARGET };
/* Which of the two a tokenizer is (a checkpoint's metadata names it). */
enum clf_tok_kind { CLF_TOK_KIND_SPM, CLF_TOK_KIND_MARIAN };

/* The special ids. bos is -1 for Marian (the decoder starts from the
 * config's decoder_start_token_id, which is pad). */
struct clf_tok_ids {
    int32_t pad, bos, eos, unk;
};

clf_status clf_tok_spm_load(clf_tok_t **tok, const char *model_path);
/* Missing or unreadable files, invalid JSON, a vocabulary without the
 * special pieces, two pieces with one id or ids with a gap fail with the
 * file named. */
clf_status clf_tok_marian_load(clf_tok_t **tok, const char *dir);
void clf_tok_free(clf_tok_t *tok);
enum clf_tok_kind clf_tok_kind(const clf_tok_t *tok);

/* Ids of a side run from 0 to vocab_size - 1. */
int clf_tok_vocab_size(const clf_tok_t *tok, enum clf_tok_side side);
struct clf_tok_ids clf_tok_specials(const clf_tok_t *tok);
/* FNV-1a 64 of the files read (for checkpoints to record the vocabulary). */
uint64_t clf_tok_hash(const clf_tok_t *tok);
/* The SentencePiece model that splits a side's text. */
const clf_spm_t *clf_tok_spm(const clf_tok_t *tok, enum clf_tok_side side);
/* The piece of an id on a side; "" when out of range. */
const char *clf_tok_piece(const clf_tok_t *tok, enum clf_tok_side side, int32_t id);

/* text (len bytes of UTF-8, need not be NUL-terminated) -> ids of a side;
 * *ids is malloc'd (caller frees; NULL when *n is 0). add_eos appends the
 * eos id: MarianTokenizer always does (for the source and for labels);
 * our corpus adds it when it fills a batch. For Marian, literal special
 * tokens in the text ("</s>", "<unk>", "<pad>") become their ids and a
 * leading language code (">>fra<<") its own piece, as MarianTokenizer does. */
clf_status clf_tok_encode(const clf_tok_t *tok, enum clf_tok_side side, const char *text,
                          size_t len, bool add_eos, int32_t **ids, size_t *n);
/* ids -> text, malloc'd. Special ids are skipped: pad, bos and eos for
 * ours; pad, eos and unk for Marian, whose text then is as
 * MarianTokenizer.decode(ids, skip_special_tokens=True) gives it. An id
 * outside the side's vocabulary fails. */
clf_status clf_tok_decode(const clf_tok_t *tok, enum clf_tok_side side, const int32_t *ids,
                          size_t n, char **text);

/* ------------------------------------------------------------------ UTF-8 */

/* What clf_utf8_validate returns for text that is valid throughout. */
#define CLF_UTF8_VALID ((size_t)-1)
/* clf_utf8_validate's flag: a NUL byte is the character U+0000. Without
 * it a NUL is refused as invalid: text handed on as a C string (every
 * function here that takes a const char * without a length) would end at
 * it without a word. A caller that refuses NUL itself with a message of
 * its own (the server names the field), or that keeps lengths, passes it. */
#define CLF_UTF8_ALLOW_NUL 1u

/* Checks s[0..len) (need not be NUL-terminated) as strict UTF-8 (RFC
 * 3629: no overlong form, no surrogate U+D800..U+DFFF, no code point past
 * U+10FFFF, no sequence cut short by a bad byte or by the end). Returns
 * the byte offset (from 0) of the first byte that does not begin a valid
 * character: the lead byte of a bad or truncated sequence, a stray
 * continuation byte, or a NUL (without CLF_UTF8_ALLOW_NUL); else
 * CLF_UTF8_VALID. *chars (NULL: not wanted) is set to the number of
 * characters before that offset: all of them when the text is valid.
 * flags: 0 or CLF_UTF8_ALLOW_NUL. */
size_t clf_utf8_validate(const char *s, size_t len, unsigned flags, size_t *chars);

/* ------------------------------------------------------------------ lines */

/* A text file read whole: plain or gzip, "-" for stdin. Lines are split at
 * '\n' (a final newline is optional, a trailing '\r' is dropped) and
 * NUL-terminated in place. Invalid UTF-8 or a NUL byte fails with the file,
 * line and byte column in the message. An empty file gives n == 0. */
struct clf_lines {
    size_t n;
    char **line;
    char *text;
};
clf_status clf_lines_read(struct clf_lines *out, const char *path);
void clf_lines_free(struct clf_lines *lines);

/* ---------------------------------------------------------- parallel data */

/* Two files read whole (clf_lines_read): line i of src translates line i
 * of tgt, and both have the same number of lines. */
struct clf_corpus {
    struct clf_lines src, tgt;

    /* Filled by clf_corpus_encode: the pairs kept, in file order. Pair i's
     * source ids are src_ids[src_off[i] .. src_off[i+1]) (no bos/eos). */
    size_t n_pairs;
    size_t *pair_line;             /* n_pairs: 0-based line of each pair */
    int32_t *src_ids, *tgt_ids;
    size_t *src_off, *tgt_off;     /* n_pairs + 1 each */
};

struct clf_corpus_summary {
    size_t lines;          /* pairs read */
    size_t kept;
    size_t skipped_empty;  /* a side with no subwords */
    size_t skipped_long;   /* a side with more than max_len subwords */
    size_t src_tokens, tgt_tokens;  /* subwords of the kept pairs */
    int max_src_len, max_tgt_len;   /* longest kept side */
};

/* Reads a source and a target file (plain or gzip). Missing, unreadable or
 * empty files, differing line counts and invalid UTF-8 fail with a message
 * that names the file (and line and byte column). */
clf_status clf_corpus_load(struct clf_corpus **corpus, const char *src_path,
                           const char *tgt_path);
void clf_corpus_free(struct clf_corpus *corpus);

/* Encodes every pair with spm; pairs with an empty side or a side longer
 * than max_len subwords (0: no limit) are skipped and counted. Replaces any
 * earlier encoding. summary may be NULL. */
clf_status clf_corpus_encode(struct clf_corpus *corpus, const clf_spm_t *spm, int max_len,
                             struct clf_corpus_summary *summary);
/* The same with a model's tokenizer: the source side with its source
 * model, the target side with its target model, no eos (the batch appends
 * the model's eos, as MarianTokenizer appends </s> to the source and the
 * labels). */
clf_status clf_corpus_encode_tok(struct clf_corpus *corpus, const clf_tok_t *tok, int max_len,
                                 struct clf_corpus_summary *summary);

/* One batch: pairs by index into the corpus, padded lengths. The source
 * rows are ids+eos (src_len = longest + 1); the target rows are bos+ids
 * (decoder input) and ids+eos (decoder output), tgt_len = longest + 1. */
struct clf_batch {
    size_t n;
    const size_t *pairs;
    int src_len, tgt_len;
};

struct clf_batches {
    size_t n;
    struct clf_batch *batch;
    size_t *storage;   /* the pairs arrays point into this */
};

/* Splits the encoded corpus into batches of at most max_tokens padded
 * tokens per side (n * max(src_len, tgt_len) <= max_tokens; a single pair
 * longer than that is a batch of its own). Pairs are shuffled, then sorted
 * by length so that a batch holds pairs of similar length, and the batch
 * order is shuffled; both shuffles come from (seed, epoch) alone, so the
 * same arguments always give the same batches. */
clf_status clf_batches_make(const struct clf_corpus *corpus, size_t max_tokens, uint64_t seed,
                            uint64_t epoch, struct clf_batches *out);
void clf_batches_free(struct clf_batches *b);

/* Fills the batch's padded id arrays (pad = CLF_SPM_PAD):
 * src is (n, src_len), tgt_in and tgt_out are (n, tgt_len), row-major. */
clf_status clf_batch_fill(const struct clf_corpus *corpus, const struct clf_batch *b,
                          int32_t *src, int32_t *tgt_in, int32_t *tgt_out);
/* The ids a batch is built with: pad fills the rows, eos ends every source
 * and target output, start begins every target input (the model's
 * decoder_start_id: BOS for ours, pad for Marian's). */
struct clf_batch_ids {
    int32_t pad, eos, start;
};
/* clf_batch_fill with the model's ids instead of CLF_SPM_PAD, _EOS, _BOS. */
clf_status clf_batch_fill_ids(const struct clf_corpus *corpus, const struct clf_batch *b,
                              const struct clf_batch_ids *ids, int32_t *src, int32_t *tgt_in, int32_t *tgt_out);

/* ---------------------------------------------------------------- metrics */

/* The sacreBLEU release whose behaviour (and output) we reproduce; it is the
 * `version:` field of our signatures. */
#define CLF_SACREBLEU_VERSION "2.6.0"

enum clf_bleu_tok {
    CLF_BLEU_TOK_13A,   /* mteval-v13a, sacreBLEU's default */
    CLF_BLEU_TOK_NONE,  /* split on whitespace only */
};

struct clf_bleu_opts {
    bool lowercase;          /* sacreBLEU -lc */
    enum clf_bleu_tok tok;   /* sacreBLEU -tok */
};

/* Corpus statistics and score, as sacreBLEU's BLEUScore. */
struct clf_bleu_score {
    double score;            /* 0..100 */
    double precisions[4];    /* percent */
    double bp;
    double ratio;            /* hyp_len / ref_len */
    long counts[4], totals[4];
    long hyp_len, ref_len;
};

/* Corpus BLEU of n hypotheses against nrefs reference streams:
 * refs[r][i] is reference r of hypothesis i. Lines are taken as read (a
 * trailing newline or whitespace is stripped as sacreBLEU does). Exponential
 * smoothing, closest reference length, n-gram order 4, no effective order. */
clf_status clf_bleu_corpus(const char *const *hyps, size_t n, const char *const *const *refs,
                           int nrefs, const struct clf_bleu_opts *opts,
                           struct clf_bleu_score *out);
/* "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0" */
void clf_bleu_signature(const struct clf_bleu_opts *opts, int nrefs, char *buf, size_t len);
/* "21.0/3.2/0.6/0.3 (BP = 1.000 ratio = 1.042 hyp_len = 50 ref_len = 48)" */
void clf_bleu_verbose(const struct clf_bleu_score *s, char *buf, size_t len);

/* chrF2 as sacreBLEU's defaults: character n-grams 1..6 without
 * whitespace, no word n-grams, beta 2, effective-order averaging; with
 * several references each sentence takes the best one. */
clf_status clf_chrf_corpus(const char *const *hyps, size_t n, const char *const *const *refs,
                           int nrefs, bool lowercase, double *score);
/* "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0" */
void clf_chrf_signature(bool lowercase, int nrefs, char *buf, size_t len);

/* Sentences of a text, for translating texts a sentence at a time: the
 * spans of text[0..len) to translate, in order (malloc'd into *spans, *n
 * of them); what lies between and around them (whitespace and newlines) is
 * to be kept as it is. The rule: lines (cut at each newline) are cut
 * further after a run of '.', '!', '?' or '…' (with any closing quotes
 * or brackets after it) that whitespace and then an upper-case letter
 * (ASCII or Latin-1), a digit or an opening quote follow, except after a
 * single letter ("J. Smith"), dotted initials ("E.S.E. Electronics",
 * "U.S. Army") or an abbreviation (Mr Mrs Ms Dr Prof St Jr Sr Mt No Fig vs
 * etc, in either case). Each span is trimmed of
 * whitespace; blank lines give none. */
struct clf_span {
    size_t at, len;
};
clf_status clf_text_sentences(const char *text, size_t len, struct clf_span **spans, size_t *n);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
