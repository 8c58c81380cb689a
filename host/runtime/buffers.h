/* buffers.h: device memory below the tensors: every buffer the library
 * creates, counted (devmem.c); a buffer's size and the checks and reads
 * on tensors that only the library needs (tensor.c); and uploads that do
 * not block (upload.c). */
#ifndef CLF_RUNTIME_BUFFERS_H
#define CLF_RUNTIME_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "clformer/advanced/runtime.h"

/* devmem.c: every device buffer the library makes goes through these, so
 * that clf_memory_stats counts it (held now, most held at once). create
 * returns NULL with the OpenCL error in *err; release takes NULL. */
cl_mem clf_buffer_create(clf_ctx_t *ctx, cl_mem_flags flags, size_t bytes, cl_int *err);
void clf_buffer_release(cl_mem b);

/* A device buffer filled from the host without blocking (upload.c): each
 * write copies the data into `host` and enqueues a non-blocking write from
 * it; the next write first waits for that write only, not for the rest of
 * the queue. Grows as needed; zero-initialise, free with clf_upload_free. */
struct clf_upload {
    cl_mem buf;
    void *host;
    size_t cap;      /* bytes of buf and host */
    cl_event done;   /* the last write, or NULL */
};
/* tensor.c: enqueues a read of t's elements (its dtype) into dst without
 * waiting: dst holds them once a later blocking read, map or clFinish on the
 * queue returns (in-order queue), and must stay valid until then. */
clf_status clf_tensor_read_enqueue(clf_ctx_t *ctx, const clf_tensor *t, void *dst);
clf_status clf_upload_write(clf_ctx_t *ctx, struct clf_upload *u, const void *src, size_t bytes);
/* The same for n int32s, handing back an i32 view (n) of the buffer, valid
 * until the next write. */
clf_status clf_upload_ints(clf_ctx_t *ctx, struct clf_upload *u, const int32_t *src, size_t n, clf_tensor *view);
void clf_upload_free(struct clf_upload *u);

/* tensor.c: checks that t is an i32 tensor of at least n elements starting
 * at its buffer's first element (kernels take int buffers without an
 * offset); names op and the tensor's role in the message. */
clf_status clf_tensor_check_ints(clf_ctx_t *ctx, const char *op, const char *role, const clf_tensor *t, size_t n);
/* The size of a buffer in bytes (0 if OpenCL will not say). */
size_t clf_mem_bytes(cl_mem m);

#endif
