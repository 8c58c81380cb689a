/* fuzz_safetensors.c: the safetensors reader (clf_st_read), which every
 * checkpoint, optimizer state and `clformer average` input goes through:
 * the 8-byte header length, the JSON header (tensor entries and
 * __metadata__) and the offsets into the data. A file it accepts must
 * keep its promises: every tensor's numel floats lie inside the file's
 * bytes (read here in full, so that AddressSanitizer sees any that do
 * not), and the names and keys it returns are found again. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct clf_st_file f;
    if (clf_st_read(fuzz_file(0, data, size), &f) != CLF_OK)
        return 0;
    volatile float sink = 0;
    for (size_t i = 0; i < f.count; i++) {
        const struct clf_st_tensor *t = &f.tensors[i];
        if (t->ndim < 0 || t->ndim > CLF_ST_MAX_DIMS)
            abort();
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++)
            numel *= t->shape[d];
        if (numel != t->numel)
            abort();
        for (size_t k = 0; k < t->numel; k++)
            sink += t->data[k];
        if (!clf_st_find(&f, t->name))
            abort();
    }
    for (size_t i = 0; i < f.meta_count; i++)
        if (!clf_st_meta_get(&f, f.meta[i].key))
            abort();
    clf_st_free(&f);
    return 0;
}
