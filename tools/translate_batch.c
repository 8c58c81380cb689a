/* translate_batch.c: see translate_batch.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "translate_batch.h"

static const size_t *sort_len;
static int by_length(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (sort_len[x] != sort_len[y])
        return sort_len[x] < sort_len[y] ? -1 : 1;
    return (x > y) - (x < y);
}

size_t translate_batch_size(const size_t *len, size_t n, struct translate_batching b)
{
    size_t c = 1, longest = len[0] + 1;
    while (c < n && c < b.sentences) {
        size_t l = len[c] + 1 > longest ? len[c] + 1 : longest;
        if (b.tokens && (c + 1) * l > b.tokens)
            break;
        longest = l, c++;
    }
    return c;
}

int translate_batches(clf_ctx_t *ctx, clf_model_t *m, const clf_tok_t *tok, const int32_t *const *src,
                      const size_t *len, size_t n, const struct clf_translate_opts *o, struct translate_batching b,
                      char **out, float *scores, void (*progress)(size_t done, size_t n, void *arg), void *arg)
{
    const size_t nbest = o->greedy ? 1 : (size_t)o->nbest;
    const size_t chunk = b.sentences ? b.sentences : 1;
    size_t *order = malloc(n * sizeof *order);
    size_t *olen = malloc(n * sizeof *olen);
    const int32_t **csrc = malloc(chunk * sizeof *csrc);
    size_t *clen = malloc(chunk * sizeof *clen);
    struct clf_hypothesis *h = calloc(chunk * nbest, sizeof *h);
    int rc = 1;
    for (size_t i = 0; i < n * nbest; i++)
        out[i] = NULL;
    if (!order || !olen || !csrc || !clen || !h) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    sort_len = len;
    qsort(order, n, sizeof *order, by_length);
    for (size_t i = 0; i < n; i++)
        olen[i] = len[order[i]];
    b.sentences = chunk;
    for (size_t at = 0, c; at < n; at += c) {
        c = translate_batch_size(olen + at, n - at, b);
        for (size_t j = 0; j < c; j++) {
            csrc[j] = src[order[at + j]];
            clen[j] = len[order[at + j]];
        }
        clf_status st = clf_model_translate(m, csrc, clen, c, o, h);
        if (st != CLF_OK) {
            b.flags ? cli_fail_memory(ctx, st, "translating", b.flags) : cli_fail(ctx, st, "translating");
            goto done;
        }
        for (size_t j = 0; j < c; j++)
            for (size_t k = 0; k < nbest; k++) {
                struct clf_hypothesis *x = &h[j * nbest + k];
                size_t i = order[at + j] * nbest + k;
                if ((st = clf_tok_decode(tok, CLF_TOK_TARGET, x->ids, x->n, &out[i])) != CLF_OK) {
                    cli_fail(NULL, st, "decoding subwords");
                    clf_hypotheses_free(h, c * nbest);
                    goto done;
                }
                if (scores)
                    scores[i] = x->score;
            }
        clf_hypotheses_free(h, c * nbest);
        if (progress)
            progress(at + c, n, arg);
    }
    rc = 0;
done:
    if (rc)
        for (size_t i = 0; i < n * nbest; i++) {
            free(out[i]);
            out[i] = NULL;
        }
    free(order), free(olen), free(csrc), free(clen), free(h);
    return rc;
}

int translate_check_vocab(const char *ckpt, const struct clf_ckpt_meta *meta, const clf_tok_t *tok, int model_vocab,
                          const char *spm_path)
{
    const int vs = clf_tok_vocab_size(tok, CLF_TOK_SOURCE), vt = clf_tok_vocab_size(tok, CLF_TOK_TARGET);
    /* ours: one model whose pieces are the vocabulary; Marian's vocab.json may hold fewer ids than the model */
    const bool fits = clf_tok_spm(tok, CLF_TOK_SOURCE) == clf_tok_spm(tok, CLF_TOK_TARGET) && vs == vt
                          ? vt == model_vocab : vs <= model_vocab && vt <= model_vocab;
    if (!fits)
        return fprintf(stderr, "clformer: %s has %d pieces but the model %s was trained with %d: pass the subword model it "
                             "was trained with (--bpe)\n",
                spm_path, vt > vs ? vt : vs, ckpt, model_vocab), 1;
    const uint64_t got = clf_tok_hash(tok);
    if (meta->has_tokenizer_hash && meta->tokenizer_hash != got)
        return fprintf(stderr, "clformer: %s (hash %016" PRIx64 ") is not the subword model %s was trained with (hash "
                             "%016" PRIx64 "): pass the right one with --bpe\n",
                spm_path, got, ckpt, meta->tokenizer_hash), 1;
    return 0;
}

int translate_bleu(clf_ctx_t *ctx, clf_model_t *m, const clf_tok_t *tok, const struct clf_corpus *c, size_t max_tokens,
                   double *bleu)
{
    size_t n = c->n_pairs;
    const int32_t **src = malloc(n * sizeof *src);
    size_t *len = malloc(n * sizeof *len);
    char **hyp = calloc(n, sizeof *hyp);
    const char **refs = malloc(n * sizeof *refs);
    int rc = 1;
    if (!src || !len || !hyp || !refs) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        src[i] = c->src_ids + c->src_off[i];
        len[i] = c->src_off[i + 1] - c->src_off[i];
        refs[i] = c->tgt.line[c->pair_line[i]];
    }
    struct clf_translate_opts o = clf_translate_opts_default();
    o.greedy = true;
    if (translate_batches(ctx, m, tok, src, len, n, &o, (struct translate_batching){.sentences = 128, .tokens = max_tokens, .flags = "--max-tokens"}, hyp, NULL, NULL,
                          NULL))
        goto out;
    struct clf_bleu_opts bo = {false, CLF_BLEU_TOK_13A};
    struct clf_bleu_score s;
    const char *const *r1[1] = {refs};
    clf_status st = clf_bleu_corpus((const char *const *)hyp, n, r1, 1, &bo, &s);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "validation BLEU");
        goto out;
    }
    *bleu = s.score;
    rc = 0;
out:
    if (hyp)
        for (size_t i = 0; i < n; i++)
            free(hyp[i]);
    free(src), free(len), free(hyp), free(refs);
    return rc;
}
