/* marian.c: Marian's tokenizer, the Marian side of clf_tok_* (tok.c), as
 * transformers' MarianTokenizer (4.40; docs/marian.md cites each rule)
 * reads a model directory and turns text into ids and back:
 *   encode  literal special tokens ("</s>", "<unk>", "<pad>") are split out
 *           and become their ids; in each other chunk a leading language
 *           code (the regex >>.+<<) is one piece and every such code is
 *           removed from the text; the side's SentencePiece model splits
 *           the rest; pieces map through vocab.json (target_vocab.json for
 *           a separate target side), unknown ones to <unk>; eos appended.
 *   decode  pad, eos and unk ids dropped; ids -> pieces -> the side's
 *           SentencePiece decode; "▁" -> " "; Python's str.strip(); then
 *           transformers' clean_up_tokenization (" ." -> "." and so on).
 * Special ids are the source vocabulary's, as MarianTokenizer's added
 * tokens are; unknown pieces take the side's own <unk>. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"
#include "base/hash.h"
#include "base/status.h"
#include "clformer_json.h"
#include "clformer_text.h"
#include "text/text_internal.h"

enum { SP_UNK, SP_EOS, SP_PAD, N_SPECIAL };
static const char *const special_default[N_SPECIAL] = {"<unk>", "</s>", "<pad>"};
static const char *const special_key[N_SPECIAL] = {"unk_token", "eos_token", "pad_token"};
/* vocab.json and tokenizer_config.json are a few MB in any Marian model */
#define FILE_LIMIT ((size_t)1 << 30)

/* ------------------------------------------------------------------- json */

static clf_status parse_json(const char *path, const char *buf, size_t len, struct clf_json *j)
{
    char err[256];
    if (!clf_json_parse(buf, len, j, err, sizeof err))
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: invalid JSON: %s", path, err);
    return CLF_OK;
}

/* ------------------------------------------------------------- vocabulary */

static size_t vocab_hash(const char *s, size_t len)
{
    return (size_t)clf_fnv1a(CLF_FNV_INIT, s, len);
}

int32_t clf_vocab_find(const struct clf_vocab *v, const char *s, size_t len)
{
    if (!v->cap) return -1;
    size_t mask = v->cap - 1;
    for (size_t i = vocab_hash(s, len) & mask;; i = (i + 1) & mask) {
        int32_t id = v->slot[i];
        if (id < 0) return -1;
        if (v->len[id] == len && !memcmp(v->piece[id], s, len)) return id;
    }
}

static void vocab_free(struct clf_vocab *v)
{
    if (v->piece)
        for (size_t i = 0; i < v->n; i++) free(v->piece[i]);
    free(v->piece);
    free(v->len);
    free(v->slot);
    memset(v, 0, sizeof *v);
}

/* vocab.json: one object, piece -> id, the ids 0..n-1 each once. The
 * file's bytes go into *hash. */
static clf_status vocab_load(const char *path, struct clf_vocab *v, uint64_t *hash)
{
    clf_status st = CLF_OK;
    char *buf = NULL;
    size_t len = 0;
    struct clf_json j;
    memset(&j, 0, sizeof j);
    CLF_TRY(clf_file_read(path, FILE_LIMIT, &buf, &len));
    *hash = clf_fnv1a(*hash, buf, len);
    CLF_TRY(parse_json(path, buf, len, &j));
    if (j.type != CLF_JSON_OBJECT || j.count == 0) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not a JSON object of pieces and their ids",
                           path);
        goto fail;
    }
    if (j.count > INT32_MAX) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: %zu pieces, more than ids can hold", path,
                           j.count);
        goto fail;
    }
    size_t n = j.count;
    v->n = n;
    v->cap = 16;
    while (v->cap < 2 * n) v->cap *= 2;
    v->piece = calloc(n, sizeof *v->piece);
    v->len = calloc(n, sizeof *v->len);
    v->slot = malloc(v->cap * sizeof *v->slot);
    if (!v->piece || !v->len || !v->slot) {
        st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < v->cap; i++) v->slot[i] = -1;
    for (size_t i = 0; i < n; i++) {
        const char *key = j.keys[i];
        const struct clf_json *x = &j.items[i];
        size_t kl = strlen(key);
        if (x->type != CLF_JSON_NUMBER || !(x->number >= 0) ||
            (x->number < (double)n && x->number != (double)(int32_t)x->number)) {
            st = clf_error_set(NULL, CLF_ERR_FORMAT,
                               "%s: the id of piece \"%.80s\" is not a whole number >= 0", path, key);
            goto fail;
        }
        if (x->number >= (double)n) {
            st = clf_error_set(NULL, CLF_ERR_FORMAT,
                               "%s: piece \"%.80s\" has id %.0f, but the file holds %zu pieces: "
                               "the ids must run from 0 to %zu without a gap",
                               path, key, x->number, n, n - 1);
            goto fail;
        }
        int32_t id = (int32_t)x->number;
        if (clf_vocab_find(v, key, kl) >= 0) {
            st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: piece \"%.80s\" appears twice", path, key);
            goto fail;
        }
        if (v->piece[id]) {
            st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: pieces \"%.80s\" and \"%.80s\" both have id %d",
                               path, v->piece[id], key, (int)id);
            goto fail;
        }
        if (!(v->piece[id] = strdup(key))) {
            st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
            goto fail;
        }
        v->len[id] = kl;
        size_t mask = v->cap - 1, s = vocab_hash(key, kl) & mask;
        while (v->slot[s] >= 0) s = (s + 1) & mask;
        v->slot[s] = id;
    }
fail:
    clf_json_free(&j);
    free(buf);
    return st;
}

/* ----------------------------------------------------------------- config */

/* A special token in tokenizer_config.json: a string, or an added token
 * saved as an object with "content". */
static clf_status special_from(const char *path, const struct clf_json *cfg, int k, char **out)
{
    const struct clf_json *x = clf_json_get(cfg, special_key[k]);
    const char *s = special_default[k];
    if (x && x->type == CLF_JSON_STRING)
        s = x->string;
    else if (x && x->type == CLF_JSON_OBJECT && clf_json_str(x, "content"))
        s = clf_json_str(x, "content");
    else if (x && x->type != CLF_JSON_NULL)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: %s is neither a string nor a token with "
                             "\"content\"", path, special_key[k]);
    if (!*s) return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: %s is empty", path, special_key[k]);
    free(*out);
    if (!(*out = strdup(s))) return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
    return CLF_OK;
}

static clf_status config_bool(const char *path, const struct clf_json *cfg, const char *key,
                              bool *out)
{
    const struct clf_json *x = clf_json_get(cfg, key);
    if (!x || x->type == CLF_JSON_NULL) return CLF_OK;
    if (x->type != CLF_JSON_BOOL)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: %s is not true or false", path, key);
    *out = x->boolean;
    return CLF_OK;
}

/* tokenizer_config.json is optional (older OPUS-MT repositories hold only
 * source_lang and target_lang): without it the vocabulary is shared, the
 * specials are MarianTokenizer's defaults and clean-up is on. */
static clf_status config_load(struct clf_tok *t, const char *dir)
{
    clf_status st = CLF_OK;
    char *path = clf_path_join(dir, "tokenizer_config.json"), *buf = NULL;
    size_t len = 0;
    bool missing = false;
    struct clf_json j;
    memset(&j, 0, sizeof j);
    t->clean_up = true;
    if (!path) return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", dir);
    for (int k = 0; k < N_SPECIAL; k++)
        if (!(t->special[k] = strdup(special_default[k]))) {
            st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", dir);
            goto fail;
        }
    CLF_TRY(clf_file_read_opt(path, FILE_LIMIT, &buf, &len, &missing));
    if (missing) goto fail;
    CLF_TRY(parse_json(path, buf, len, &j));
    if (j.type != CLF_JSON_OBJECT) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not a JSON object", path);
        goto fail;
    }
    CLF_TRY(config_bool(path, &j, "separate_vocabs", &t->separate));
    CLF_TRY(config_bool(path, &j, "clean_up_tokenization_spaces", &t->clean_up));
    for (int k = 0; k < N_SPECIAL; k++) CLF_TRY(special_from(path, &j, k, &t->special[k]));
fail:
    clf_json_free(&j);
    free(buf);
    free(path);
    return st;
}

/* ------------------------------------------------------------------- load */

static clf_status special_id(const struct clf_vocab *v, const char *path, const char *piece,
                             int32_t *id)
{
    if ((*id = clf_vocab_find(v, piece, strlen(piece))) < 0)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: no piece \"%.80s\", which MarianTokenizer "
                             "needs", path, piece);
    return CLF_OK;
}

clf_status clf_marian_load(struct clf_tok *t, const char *dir)
{
    static const char *const spm_name[2] = {"source.spm", "target.spm"};
    static const char *const vocab_name[2] = {"vocab.json", "target_vocab.json"};
    clf_status st = CLF_OK;
    char *path = NULL;
    uint64_t h = CLF_FNV_INIT;
    CLF_TRY(config_load(t, dir));
    for (int side = 0; side < 2; side++) {
        if (!(path = clf_path_join(dir, spm_name[side]))) goto oom;
        CLF_TRY(clf_spm_load(&t->spm[side], path));
        free(path);
        path = NULL;
    }
    for (int k = 0; k < (t->separate ? 2 : 1); k++) {
        if (!(path = clf_path_join(dir, vocab_name[k]))) goto oom;
        CLF_TRY(vocab_load(path, &t->vocab[k], &h));
        if (k == 0) {
            CLF_TRY(special_id(&t->vocab[0], path, t->special[SP_UNK], &t->ids.unk));
            CLF_TRY(special_id(&t->vocab[0], path, t->special[SP_EOS], &t->ids.eos));
            CLF_TRY(special_id(&t->vocab[0], path, t->special[SP_PAD], &t->ids.pad));
            t->unk[0] = t->unk[1] = t->ids.unk;
        } else {
            CLF_TRY(special_id(&t->vocab[1], path, t->special[SP_UNK], &t->unk[1]));
        }
        free(path);
        path = NULL;
    }
    t->ids.bos = -1;
    for (int side = 0; side < 2; side++) {
        uint64_t sh = clf_spm_hash(t->spm[side]);
        h = clf_fnv1a(h, &sh, sizeof sh);
    }
    t->hash = h;
    return CLF_OK;
oom:
    st = clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", dir);
fail:
    free(path);
    return st;
}

void clf_marian_free(struct clf_tok *t)
{
    clf_spm_free(t->spm[0]);
    clf_spm_free(t->spm[1]);
    t->spm[0] = t->spm[1] = NULL;
    vocab_free(&t->vocab[0]);
    vocab_free(&t->vocab[1]);
    for (int k = 0; k < N_SPECIAL; k++) {
        free(t->special[k]);
        t->special[k] = NULL;
    }
}

/* ----------------------------------------------------------------- encode */

struct id_list {
    int32_t *v;
    size_t n, cap;
};

static clf_status id_push(struct id_list *l, int32_t id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        int32_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory encoding");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return CLF_OK;
}

static const struct clf_vocab *side_vocab(const struct clf_tok *t, int side)
{
    return &t->vocab[side == CLF_TOK_TARGET && t->separate ? 1 : 0];
}

/* The end of a match of MarianTokenizer's language_code_re, >>.+<<, that
 * starts at s[p] (Python's re: '.' is any character but '\n', `+` greedy),
 * or 0 when none starts there. */
static size_t code_match(const char *s, size_t n, size_t p)
{
    if (p + 2 > n || s[p] != '>' || s[p + 1] != '>') return 0;
    size_t line_end = p + 2;
    while (line_end < n && s[line_end] != '\n') line_end++;
    if (line_end < p + 5) return 0;  /* ">>", one character, "<<" */
    for (size_t q = line_end - 2;; q--) {
        if (s[q] == '<' && s[q + 1] == '<') return q + 2;
        if (q == p + 3) return 0;
    }
}

/* One chunk between special tokens, as MarianTokenizer._tokenize: the
 * language code that starts it (re.match) is a piece of its own, every
 * code is cut from the text (re.sub), SentencePiece splits the rest. */
static clf_status encode_chunk(const struct clf_tok *t, int side, const char *s, size_t n,
                               struct id_list *out)
{
    clf_status st = CLF_OK;
    const struct clf_vocab *v = side_vocab(t, side);
    char *rest = malloc(n + 1), *pieces = NULL;
    size_t m = 0, np = 0;
    if (!rest) return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory encoding");
    size_t code = code_match(s, n, 0);
    if (code) {
        int32_t id = clf_vocab_find(v, s, code);
        CLF_TRY(id_push(out, id >= 0 ? id : t->unk[side]));
    }
    for (size_t p = 0; p < n;) {
        size_t end = code_match(s, n, p);
        if (end) {
            p = end;
            continue;
        }
        rest[m++] = s[p++];
    }
    CLF_TRY(clf_spm_encode_list(t->spm[side], rest, m, &pieces, &np));
    const char *q = pieces;
    for (size_t i = 0; i < np; i++) {
        size_t l = strlen(q);
        int32_t id = clf_vocab_find(v, q, l);
        CLF_TRY(id_push(out, id >= 0 ? id : t->unk[side]));
        q += l + 1;
    }
fail:
    free(pieces);
    free(rest);
    return st;
}

/* The first occurrence of pat[0..pl) in s[from..n), or n. */
static size_t find_from(const char *s, size_t n, size_t from, const char *pat, size_t pl)
{
    for (size_t i = from; i + pl <= n; i++)
        if (s[i] == pat[0] && !memcmp(s + i, pat, pl)) return i;
    return n;
}

clf_status clf_marian_encode(const struct clf_tok *t, int side, const char *text, size_t len,
                             bool add_eos, int32_t **ids, size_t *n)
{
    clf_status st = CLF_OK;
    struct id_list out = {0};
    const int32_t special_ids[N_SPECIAL] = {t->ids.unk, t->ids.eos, t->ids.pad};
    size_t bad = clf_utf8_validate(text, len, 0, NULL);
    if (bad != CLF_UTF8_VALID)
        return clf_error_set(NULL, CLF_ERR_ARG, "text to encode: %s at byte %zu",
                             text[bad] ? "invalid UTF-8" : "NUL byte", bad);
    /* the added tokens split the text first: leftmost, then longest */
    for (size_t i = 0; i < len;) {
        size_t at = len, plen = 0;
        int which = -1;
        for (int k = 0; k < N_SPECIAL; k++) {
            size_t pl = strlen(t->special[k]);
            size_t j = find_from(text, len, i, t->special[k], pl);
            if (j < at || (j == at && j < len && pl > plen)) {
                at = j;
                plen = pl;
                which = k;
            }
        }
        if (at > i) CLF_TRY(encode_chunk(t, side, text + i, at - i, &out));
        if (at == len) break;
        CLF_TRY(id_push(&out, special_ids[which]));
        i = at + plen;
    }
    if (add_eos) CLF_TRY(id_push(&out, t->ids.eos));
    *ids = out.v;
    *n = out.n;
    return CLF_OK;
fail:
    free(out.v);
    return st;
}

/* ----------------------------------------------------------------- decode */

struct str_buf {
    char *s;
    size_t n, cap;
};

static clf_status str_add(struct str_buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory decoding");
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
    return CLF_OK;
}

/* Python's str.strip() in place. */
static void py_strip(char *s)
{
    size_t n = clf_py_rstrip_len(s, strlen(s));
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        const unsigned char *q = p;
        if (!clf_py_isspace(clf_utf8_next(&q))) break;
        p = q;
    }
    memmove(s, p, (size_t)(end - p));
    s[end - p] = '\0';
}

/* transformers' PreTrainedTokenizerBase.clean_up_tokenization. */
static void clean_up(char *s)
{
    static const char *const rule[][2] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) clf_py_replace(s, rule[i][0], rule[i][1]);
}

static clf_status flush_pieces(const struct clf_tok *t, int side, const char **pieces, size_t *m,
                               struct str_buf *out)
{
    char *text = NULL;
    clf_status st = clf_spm_decode_list(t->spm[side], pieces, *m, &text);
    if (st != CLF_OK) return st;
    st = str_add(out, text, strlen(text));
    free(text);
    *m = 0;
    return st;
}

clf_status clf_marian_decode(const struct clf_tok *t, int side, const int32_t *ids, size_t n,
                             char **text)
{
    clf_status st = CLF_OK;
    const struct clf_vocab *v = side_vocab(t, side);
    const char **pieces = malloc((n ? n : 1) * sizeof *pieces);
    struct str_buf out = {0};
    size_t m = 0;
    if (!pieces) return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory decoding");
    CLF_TRY(str_add(&out, "", 0));
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t)id >= v->n) {
            st = clf_error_set(NULL, CLF_ERR_ARG, "id %d out of range (vocabulary of %zu)", (int)id,
                               v->n);
            goto fail;
        }
        if (id == t->ids.pad || id == t->ids.eos || id == t->ids.unk) continue;
        const char *p = v->piece[id];
        bool special = false;
        for (int k = 0; k < N_SPECIAL; k++) special |= !strcmp(p, t->special[k]);
        if (special) {
            /* a special piece under another id (a separate target vocabulary
             * may number them differently): kept verbatim, as
             * MarianTokenizer.convert_tokens_to_string keeps it */
            CLF_TRY(flush_pieces(t, side, pieces, &m, &out));
            CLF_TRY(str_add(&out, p, strlen(p)));
            CLF_TRY(str_add(&out, " ", 1));
        } else {
            pieces[m++] = p;
        }
    }
    CLF_TRY(flush_pieces(t, side, pieces, &m, &out));
    clf_py_replace(out.s, "\xe2\x96\x81", " ");
    py_strip(out.s);
    if (t->clean_up) clean_up(out.s);
    free(pieces);
    *text = out.s;
    return CLF_OK;
fail:
    free(pieces);
    free(out.s);
    return st;
}
