/* fuzz_lines.c: reading a text file whole (clf_lines_read), the one door
 * for every text input (parallel data, BLEU's hypotheses and references,
 * `clformer bpe` and `translate` input): plain or gzip (zlib decides by
 * the magic bytes, so the corpus holds both), split into lines, a trailing
 * '\r' dropped, strict UTF-8 validation. What it accepts must be n lines
 * of valid UTF-8 without NUL or '\n'. */
#include <stdlib.h>
#include <string.h>

#include "clformer_text.h"
#include "fuzz.h"
#include "text/text_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct clf_lines l;
    if (clf_lines_read(&l, fuzz_file(0, data, size)) != CLF_OK)
        return 0;
    for (size_t i = 0; i < l.n; i++) {
        size_t len = strlen(l.line[i]);
        if (memchr(l.line[i], '\n', len) || clf_utf8_validate(l.line[i], len, 0, NULL) != CLF_UTF8_VALID)
            abort();
    }
    clf_lines_free(&l);
    return 0;
}
