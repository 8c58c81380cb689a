/* safetensors.h: reading and writing the safetensors format: an 8-byte
 * little-endian header length, a JSON header naming each tensor's dtype,
 * shape and [begin, end) byte offsets into the data that follows, and a
 * __metadata__ object of string pairs. Only F32 tensors are written or
 * accepted. Reading checks everything and names the fault. */
#ifndef CLF_MODEL_SAFETENSORS_H
#define CLF_MODEL_SAFETENSORS_H

#include <stddef.h>

#include "clformer.h"

#define CLF_ST_MAX_DIMS 4

struct clf_st_tensor {
    char name[128];
    int ndim;
    size_t shape[CLF_ST_MAX_DIMS];
    const float *data;   /* reading: points into the file's bytes; writing: the caller's */
    size_t numel;
};

struct clf_st_meta {
    char key[64];
    char value[2048];
};

struct clf_st_file {
    struct clf_st_tensor *tensors;
    size_t count;
    struct clf_st_meta *meta;
    size_t meta_count;
    unsigned char *bytes;   /* the whole file (reading) */
    size_t size;
};

/* Reads and validates path. Free with clf_st_free. */
clf_status clf_st_read(const char *path, struct clf_st_file *f);
void clf_st_free(struct clf_st_file *f);
const struct clf_st_tensor *clf_st_find(const struct clf_st_file *f, const char *name);
const char *clf_st_meta_get(const struct clf_st_file *f, const char *key);

/* Writes the tensors in the given order with the given metadata, to a
 * temporary file that is renamed over path once complete. */
clf_status clf_st_write(const char *path, const struct clf_st_tensor *t, size_t count,
                        const struct clf_st_meta *meta, size_t meta_count);

#endif
