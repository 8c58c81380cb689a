/* text_internal.h: helpers the text pipeline's files share (not public). */
#ifndef CLF_TEXT_INTERNAL_H
#define CLF_TEXT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* The text layer needs no device: what it includes (base/, clformer_text.h)
 * must not bring in OpenCL. Each text source includes this header last. */
#ifdef CL_SUCCESS
#error "host/text must not include OpenCL headers: use base/status.h and clformer_text.h"
#endif

/* Offset of the first byte of s[0..len) that is not part of valid UTF-8
 * (strict: no overlongs, surrogates or code points past U+10FFFF) or is a
 * NUL byte; (size_t)-1 when the text is valid. */
size_t clf_utf8_invalid(const unsigned char *s, size_t len);

/* Decodes the code point at *s (valid UTF-8 assumed) and advances *s. */
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

/* splitmix64: the pipeline's only random source, so runs repeat exactly. */
static inline uint64_t clf_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

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
