/* tok.c: clf_tok_*, one interface over a model's vocabulary (clformer_text.h).
 * Ours is one SentencePiece model whose piece ids are the model's ids, the
 * same for both sides; Marian's (marian.c) has a SentencePiece model per
 * side and a piece -> id table. Ids are int32, text is UTF-8. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "clformer_text.h"
#include "text/text_internal.h"

static bool side_ok(int side) { return side == CLF_TOK_SOURCE || side == CLF_TOK_TARGET; }

clf_status clf_tok_spm_load(clf_tok_t **out, const char *model_path)
{
    if (!out || !model_path) return clf_error_set(NULL, CLF_ERR_ARG, "clf_tok_spm_load: NULL argument");
    *out = NULL;
    struct clf_tok *t = calloc(1, sizeof *t);
    if (!t) return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", model_path);
    clf_status st = clf_spm_load(&t->spm[0], model_path);
    if (st != CLF_OK) {
        free(t);
        return st;
    }
    t->kind = CLF_TOK_KIND_SPM;
    t->spm[1] = t->spm[0];
    t->ids = (struct clf_tok_ids){.pad = CLF_SPM_PAD, .bos = CLF_SPM_BOS, .eos = CLF_SPM_EOS,
                                  .unk = CLF_SPM_UNK};
    t->hash = clf_spm_hash(t->spm[0]);
    *out = t;
    return CLF_OK;
}

clf_status clf_tok_marian_load(clf_tok_t **out, const char *dir)
{
    if (!out || !dir) return clf_error_set(NULL, CLF_ERR_ARG, "clf_tok_marian_load: NULL argument");
    *out = NULL;
    struct clf_tok *t = calloc(1, sizeof *t);
    if (!t) return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", dir);
    t->kind = CLF_TOK_KIND_MARIAN;
    clf_status st = clf_marian_load(t, dir);
    if (st != CLF_OK) {
        clf_marian_free(t);
        free(t);
        return st;
    }
    *out = t;
    return CLF_OK;
}

enum clf_tok_kind clf_tok_kind(const clf_tok_t *t) { return t->kind; }

void clf_tok_free(clf_tok_t *t)
{
    if (!t) return;
    if (t->kind == CLF_TOK_KIND_MARIAN)
        clf_marian_free(t);
    else
        clf_spm_free(t->spm[0]);
    free(t);
}

static const struct clf_vocab *marian_vocab(const clf_tok_t *t, enum clf_tok_side side)
{
    return &t->vocab[side == CLF_TOK_TARGET && t->separate ? 1 : 0];
}

int clf_tok_vocab_size(const clf_tok_t *t, enum clf_tok_side side)
{
    if (!t || !side_ok(side)) return 0;
    if (t->kind == CLF_TOK_KIND_SPM) return clf_spm_vocab_size(t->spm[0]);
    return (int)marian_vocab(t, side)->n;
}

struct clf_tok_ids clf_tok_specials(const clf_tok_t *t)
{
    if (!t) return (struct clf_tok_ids){-1, -1, -1, -1};
    return t->ids;
}

uint64_t clf_tok_hash(const clf_tok_t *t) { return t ? t->hash : 0; }

const clf_spm_t *clf_tok_spm(const clf_tok_t *t, enum clf_tok_side side)
{
    return t && side_ok(side) ? t->spm[side] : NULL;
}

const char *clf_tok_piece(const clf_tok_t *t, enum clf_tok_side side, int32_t id)
{
    if (!t || !side_ok(side)) return "";
    if (t->kind == CLF_TOK_KIND_SPM) return clf_spm_piece(t->spm[0], id);
    const struct clf_vocab *v = marian_vocab(t, side);
    return id >= 0 && (size_t)id < v->n ? v->piece[id] : "";
}

clf_status clf_tok_encode(const clf_tok_t *t, enum clf_tok_side side, const char *text, size_t len,
                          bool add_eos, int32_t **ids, size_t *n)
{
    if (!t || !side_ok(side) || (!text && len) || !ids || !n)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_tok_encode: bad argument");
    *ids = NULL;
    *n = 0;
    if (t->kind == CLF_TOK_KIND_MARIAN) return clf_marian_encode(t, side, text, len, add_eos, ids, n);

    int32_t *v = NULL;
    size_t m = 0;
    clf_status st = clf_spm_encode(t->spm[0], text, len, &v, &m);
    if (st != CLF_OK) return st;
    if (add_eos) {
        int32_t *w = realloc(v, (m + 1) * sizeof *w);
        if (!w) {
            free(v);
            return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory encoding");
        }
        v = w;
        v[m++] = t->ids.eos;
    }
    *ids = v;
    *n = m;
    return CLF_OK;
}

clf_status clf_tok_decode(const clf_tok_t *t, enum clf_tok_side side, const int32_t *ids, size_t n,
                          char **text)
{
    if (!t || !side_ok(side) || (!ids && n) || !text)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_tok_decode: bad argument");
    *text = NULL;
    if (t->kind == CLF_TOK_KIND_MARIAN) return clf_marian_decode(t, side, ids, n, text);
    return clf_spm_decode(t->spm[0], ids, n, text);
}
