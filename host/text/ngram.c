/* ngram.c: the open-addressing hash map of n-gram counts that BLEU and chrF
 * share (struct clf_ngram_map in text_internal.h). A generation counter
 * empties it in O(1) between sentences. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"

static uint64_t hash_bytes(const char *p, uint32_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint32_t i = 0; i < len; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

int clf_ngram_map_reset(struct clf_ngram_map *m, size_t max_keys)
{
    size_t want = 64;
    while (want < 2 * max_keys) want *= 2;
    if (want > m->cap || m->gen == UINT32_MAX) {
        struct clf_ngram_slot *s = calloc(want, sizeof *s);
        if (!s) return 0;
        free(m->slot);
        m->slot = s;
        m->cap = want;
        m->gen = 0;
    }
    m->gen++;
    return 1;
}

struct clf_ngram_slot *clf_ngram_map_get(struct clf_ngram_map *m, const char *key, uint32_t len)
{
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)hash_bytes(key, len) & mask;; i = (i + 1) & mask) {
        struct clf_ngram_slot *s = &m->slot[i];
        if (s->gen != m->gen) {
            s->key = key;
            s->len = len;
            s->gen = m->gen;
            s->a = s->b = s->c = 0;
            return s;
        }
        if (s->len == len && !memcmp(s->key, key, len)) return s;
    }
}

void clf_ngram_map_free(struct clf_ngram_map *m)
{
    free(m->slot);
    memset(m, 0, sizeof *m);
}
