/* fuzz_safetensors.c: the safetensors reader (clf_st_read), which every
 * checkpoint, optimizer state and `clformer average` input goes through:
 * the 8-byte header length, the JSON header (tensor entries and
 * __metadata__) and the offsets into the data. A file it accepts must
 * keep its promises: every tensor's numel is the product of its shape and
 * its numel floats lie inside the file's bytes (checked, and read in full
 * for AddressSanitizer), and the names and keys it returns are found
 * again. */
#include <stdbool.h>
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
        bool wrapped = false;
        for (int d = 0; d < t->ndim; d++)
            wrapped |= __builtin_mul_overflow(numel, t->shape[d], &numel);
        if (wrapped || numel != t->numel)
            abort();  /* a shape whose count of floats wraps around */
        /* the floats lie inside the file's bytes (a wrapped numel would not) */
        const unsigned char *at = (const unsigned char *)t->data;
        if (t->numel && (at < f.bytes || at > f.bytes + f.size || t->numel > (size_t)(f.bytes + f.size - at) / 4))
            abort();
        for (size_t k = 0; k < t->numel; k++)
            sink += ((const float *)t->data)[k];  /* clf_st_read: F32 only */
        if (!clf_st_find(&f, t->name))
            abort();
    }
    for (size_t i = 0; i < f.meta_count; i++)
        if (!clf_st_meta_get(&f, f.meta[i].key))
            abort();
    (void)sink;
    clf_st_free(&f);
    return 0;
}
