/* fuzz_bleu.c: BLEU and chrF on text read as `clformer bleu` reads it: the
 * input is the hypotheses, then up to three reference files, separated by
 * NUL bytes (each read with clf_lines_read, so plain or gzip, and only
 * valid UTF-8 reaches the metrics). One part alone is scored against
 * itself. Where the line counts differ the shortest count is scored (the
 * tool refuses such files; the metrics would not see them). Both
 * tokenizers, both cases; scores must be finite and within 0..100. */
#include <math.h>
#include <stdlib.h>

#include "clformer_text.h"
#include "fuzz.h"

#define MAXREF 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[1 + MAXREF];
    size_t len[1 + MAXREF];
    int np = fuzz_split(data, size, part, len, 1 + MAXREF);
    struct clf_lines l[1 + MAXREF] = {{0}};
    int nread = 0;
    for (; nread < np; nread++)
        if (clf_lines_read(&l[nread], fuzz_file(nread, part[nread], len[nread])) != CLF_OK)
            goto done;
    size_t n = l[0].n;
    for (int i = 1; i < np; i++)
        n = l[i].n < n ? l[i].n : n;
    int nrefs = np > 1 ? np - 1 : 1;
    const char *const *refs[MAXREF];
    for (int r = 0; r < nrefs; r++)
        refs[r] = (const char *const *)l[np > 1 ? r + 1 : 0].line;
    const char *const *hyps = (const char *const *)l[0].line;
    for (int v = 0; v < 4; v++) {
        struct clf_bleu_opts o = {.lowercase = v & 1, .tok = v & 2 ? CLF_BLEU_TOK_NONE : CLF_BLEU_TOK_13A};
        struct clf_bleu_score s;
        char buf[512];
        if (clf_bleu_corpus(hyps, n, refs, nrefs, &o, &s) == CLF_OK) {
            if (!(s.score >= 0 && s.score <= 100.0000001))
                abort();
            clf_bleu_verbose(&s, buf, sizeof buf);
        }
        clf_bleu_signature(&o, nrefs, buf, sizeof buf);
        if (v < 2) {
            double chrf;
            if (clf_chrf_corpus(hyps, n, refs, nrefs, v & 1, &chrf) == CLF_OK && !(chrf >= 0 && chrf <= 100.0000001))
                abort();
        }
    }
done:
    for (int i = 0; i < nread; i++)
        clf_lines_free(&l[i]);
    return 0;
}
