/* text_internal.h: helpers the text pipeline's files share (not public). */
#ifndef CLF_TEXT_INTERNAL_H
#define CLF_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clformer_text.h"

/* The text layer needs no device: what it includes (base/, clformer_text.h)
 * must not bring in OpenCL. Each text source includes this header last. */
#ifdef CL_SUCCESS
#error "host/text must not include OpenCL headers: use base/status.h and clformer_text.h"
#endif

/* Decodes the code point at *s (valid UTF-8 assumed: clf_utf8_validate in
 * clformer/text.h) and advances *s. */
static inline uint32_t clf_utf8_next(const unsigned char **s)
{
    const unsigned char *p = *s;
    uint32_t c = p[0];
    if (c < 0x80) {
        *s = p + 1;
    } else if (c < 0xE0) {
        c = ((c & 0x1F) << 6) | (p[1] & 0x3F);
        *s = p + 2;
    } else if (c < 0xF0) {
        c = ((c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        *s = p + 3;
    } else {
        c = ((c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
            ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        *s = p + 4;
    }
    return c;
}

/* Writes c as UTF-8 to out (room for 4 bytes); returns the bytes written. */
size_t clf_utf8_put(uint32_t c, char *out);

/* Python's str.isspace(): the separators of str.split() and str.rstrip(). */
int clf_py_isspace(uint32_t c);

/* Python's str.lower() of s[0..len) as a malloc'd NUL-terminated string
 * (full case mapping, final sigma included); NULL when out of memory. */
char *clf_py_lower(const char *s, size_t len);

/* Length of s[0..len) without trailing Python whitespace (str.rstrip()). */
size_t clf_py_rstrip_len(const char *s, size_t len);
/* Every from -> to in s, left to right, as Python's str.replace, in
 * place: to must be no longer than from. */
void clf_py_replace(char *s, const char *from, const char *to);

/* SentencePiece on lists of pieces (spm.cc), for tokenizers that map pieces
 * to ids of their own (marian.c). clf_spm_encode_list: the pieces of
 * text[0..len), each NUL-terminated, back to back in one malloc'd *buf
 * (NULL when *n is 0). clf_spm_decode_list: pieces -> text, malloc'd, by
 * SentencePiece's rules (a piece the model does not know is kept as it
 * is, its own <unk> piece becomes " ⁇ "). */
struct clf_spm;
clf_status clf_spm_encode_list(const struct clf_spm *spm, const char *text, size_t len,
                               char **buf, size_t *n);
clf_status clf_spm_decode_list(const struct clf_spm *spm, const char *const *pieces, size_t n,
                               char **text);

/* A piece -> id table whose ids run from 0 to n - 1 (marian.c). */
struct clf_vocab {
    size_t n;
    char **piece;      /* n: id -> piece, owned */
    size_t *len;       /* n: the pieces' lengths in bytes */
    int32_t *slot;     /* cap: open addressing over ids, -1 empty */
    size_t cap;        /* a power of two, at least 2n */
};
/* The id of s[0..len), or -1. */
int32_t clf_vocab_find(const struct clf_vocab *v, const char *s, size_t len);

/* The tokenizer behind clf_tok_* (tok.c dispatches, marian.c does Marian). */
struct clf_tok {
    enum clf_tok_kind kind;
    struct clf_spm *spm[2];          /* per side; ours: one model in both, owned once */
    struct clf_vocab vocab[2];       /* Marian: [1] is used only when separate */
    bool separate;                   /* Marian: the target side has its own vocabulary */
    char *special[3];                /* Marian: the unk, eos and pad strings */
    int32_t unk[2];                  /* Marian: <unk>'s id in each side's vocabulary */
    bool clean_up;                   /* Marian: clean_up_tokenization_spaces */
    struct clf_tok_ids ids;
    uint64_t hash;
};
clf_status clf_marian_load(struct clf_tok *t, const char *dir);
void clf_marian_free(struct clf_tok *t);
clf_status clf_marian_encode(const struct clf_tok *t, int side, const char *text, size_t len,
                             bool add_eos, int32_t **ids, size_t *n);
clf_status clf_marian_decode(const struct clf_tok *t, int side, const int32_t *ids, size_t n,
                             char **text);

/* A hash map from byte strings (n-grams as substrings of a longer text) to
 * counters, for BLEU and chrF. Keys are not copied: the text must outlive
 * the generation. clf_ngram_map_reset starts a new generation (all keys
 * gone, O(1) unless the table must grow) with room for max_keys keys. */
struct clf_ngram_slot {
    const char *key;
    uint32_t len;
    uint32_t gen;
    long a, b, c;   /* zero on insertion */
};
struct clf_ngram_map {
    struct clf_ngram_slot *slot;
    size_t cap;     /* a power of two */
    uint32_t gen;
};
int clf_ngram_map_reset(struct clf_ngram_map *m, size_t max_keys);   /* 0 = out of memory */
struct clf_ngram_slot *clf_ngram_map_get(struct clf_ngram_map *m, const char *key, uint32_t len);
void clf_ngram_map_free(struct clf_ngram_map *m);

#endif
