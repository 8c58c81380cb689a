/* safetensors.h: reading and writing the safetensors format: an 8-byte
 * little-endian header length, a JSON header naming each tensor's dtype,
 * shape and [begin, end) byte offsets into the data that follows, and a
 * __metadata__ object of string pairs. Tensors are F32, or, in a
 * quantized checkpoint, I8, BF16 or F16; each reader says which it
 * accepts. Reading checks everything and names the fault. */
#ifndef CLF_MODEL_SAFETENSORS_H
#define CLF_MODEL_SAFETENSORS_H

#include <stddef.h>

#include "clformer.h"

#define CLF_ST_MAX_DIMS 4

/* The dtypes clformer reads and writes (safetensors' names: "F32", ...). */
enum clf_st_dtype { CLF_ST_F32 = 0, CLF_ST_I8, CLF_ST_BF16, CLF_ST_F16, CLF_ST_NDTYPES };
/* A set of dtypes, for the readers: (1u << dtype) each. */
#define CLF_ST_ONLY_F32 (1u << CLF_ST_F32)
#define CLF_ST_ANY ((1u << CLF_ST_NDTYPES) - 1)
const char *clf_st_dtype_name(enum clf_st_dtype d);
size_t clf_st_dtype_size(enum clf_st_dtype d);

struct clf_st_tensor {
    char name[128];
    int ndim;
    size_t shape[CLF_ST_MAX_DIMS];
    const void *data;    /* reading: points into the file's bytes (aligned to its dtype); writing: the caller's */
    size_t numel;
    enum clf_st_dtype dtype; /* F32 (0) unless set */
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

/* Reads and validates path, whose tensors must all be F32. Free with
 * clf_st_free. */
clf_status clf_st_read(const char *path, struct clf_st_file *f);
/* The same, accepting the dtypes in the set `accept` (CLF_ST_ANY: all);
 * another is refused naming the tensor, its dtype and the set. */
clf_status clf_st_read_as(const char *path, struct clf_st_file *f, unsigned accept);
void clf_st_free(struct clf_st_file *f);
const struct clf_st_tensor *clf_st_find(const struct clf_st_file *f, const char *name);
const char *clf_st_meta_get(const struct clf_st_file *f, const char *key);

/* Writes the tensors with the given metadata, to a temporary file that is
 * renamed over path once complete. The data holds them in the given order
 * within each element size, the widest first (as the safetensors library
 * orders them), so that each starts aligned to its dtype with no gap. */
clf_status clf_st_write(const char *path, const struct clf_st_tensor *t, size_t count,
                        const struct clf_st_meta *meta, size_t meta_count);

#endif
