/* fuzz_corpus.c: parallel data from the files to the padded batches: the
 * input is the source file, a NUL byte, then the target file (either may
 * be gzip). clf_corpus_load reads and pairs them; when it accepts, they
 * are encoded with a small SentencePiece model (learned at start from the
 * first 20 pairs of the bundled Multi30k: 350 pieces, a tenth of a second), split
 * into batches and every batch filled, with max_len and max_tokens taken
 * from the input's length so that the fuzzer varies them too. Checks the
 * batching's promises: every kept pair in exactly one batch, a batch of
 * several pairs within max_tokens, every row filled within its length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clformer_text.h"
#include "fuzz.h"

static clf_spm_t *spm;

static void spm_cleanup(void)
{
    clf_spm_free(spm);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *side[2] = {CLF_FUZZ_DATA "/train.de.gz", CLF_FUZZ_DATA "/train.en.gz"};
    const char *files[2];
    char *text = malloc(1 << 16);
    for (int s = 0; s < 2; s++) {
        struct clf_lines l;
        if (!text || clf_lines_read(&l, side[s]) != CLF_OK || l.n < 20)
            goto fail;
        size_t n = 0;
        for (size_t i = 0; i < 20 && n + strlen(l.line[i]) + 2 < (1 << 16); i++)
            n += (size_t)sprintf(text + n, "%s\n", l.line[i]);
        clf_lines_free(&l);
        files[s] = fuzz_file(6 + s, (const uint8_t *)text, n);
    }
    free(text);
    char model[600];
    snprintf(model, sizeof model, "%s.model", files[0]);
    struct clf_spm_learn_opts o;
    clf_spm_learn_defaults(&o);
    o.vocab_size = 350;
    o.threads = 1;
    if (clf_spm_learn(files, 2, model, &o) != CLF_OK || clf_spm_load(&spm, model) != CLF_OK)
        goto fail;
    remove(model);
    atexit(spm_cleanup);
    return 0;
fail:
    fprintf(stderr, "fuzz_corpus: no SentencePiece model: %s\n", clf_ctx_error(NULL));
    abort();
}

static void batches_check(const struct clf_corpus *c, size_t max_tokens, uint64_t seed)
{
    struct clf_batches b;
    if (clf_batches_make(c, max_tokens, seed, 1, &b) != CLF_OK)
        return;
    unsigned char *seen = calloc(c->n_pairs + 1, 1);
    for (size_t i = 0; i < b.n; i++) {
        const struct clf_batch *x = &b.batch[i];
        size_t wide = (size_t)(x->src_len > x->tgt_len ? x->src_len : x->tgt_len);
        if (x->n == 0 || (x->n > 1 && x->n * wide > max_tokens))
            abort();
        for (size_t k = 0; k < x->n; k++) {
            if (x->pairs[k] >= c->n_pairs || seen[x->pairs[k]]++)
                abort();
        }
        int32_t *src = malloc(x->n * (size_t)x->src_len * sizeof *src);
        int32_t *tin = malloc(x->n * (size_t)x->tgt_len * sizeof *tin);
        int32_t *tout = malloc(x->n * (size_t)x->tgt_len * sizeof *tout);
        if (src && tin && tout && clf_batch_fill(c, x, src, tin, tout) != CLF_OK)
            abort();
        free(src), free(tin), free(tout);
    }
    for (size_t p = 0; p < c->n_pairs; p++)
        if (seen[p] != 1)
            abort();
    free(seen);
    clf_batches_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[2];
    size_t len[2];
    if (fuzz_split(data, size, part, len, 2) != 2)
        return 0;
    const char *src = fuzz_file(0, part[0], len[0]);
    const char *tgt = fuzz_file(1, part[1], len[1]);
    struct clf_corpus *c = NULL;
    if (clf_corpus_load(&c, src, tgt) != CLF_OK)
        return 0;
    if (c->src.n != c->tgt.n)
        abort();
    struct clf_corpus_summary s;
    int max_len = (int)(size % 24);  /* 0: no limit */
    if (clf_corpus_encode(c, spm, max_len, &s) == CLF_OK) {
        if (s.kept != c->n_pairs || s.kept + s.skipped_empty + s.skipped_long != s.lines)
            abort();
        batches_check(c, 1 + size % 97, size);
    }
    clf_corpus_free(c);
    return 0;
}
