/* clformer/advanced/runtime.h: the advanced tier's runtime, what takes
 * OpenCL's own types: the context's cl_context and queue, programs and
 * kernels, device tensors and events, the roof probes and GEMM. Unstable:
 * it may change between minor versions (docs/c-api.md). Devices, settings
 * and the context's life are the stable tier's (clformer/device.h).
 *
 * Ops only enqueue work on the context's queue; clf_ctx_finish() waits.
 * Tensors are row-major f32 or int32 (token ids, lengths), shapes given
 * outermost first.
 */
#ifndef CLFORMER_ADVANCED_RUNTIME_H
#define CLFORMER_ADVANCED_RUNTIME_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clformer/device.h"
#include "clformer/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* ------------------------------------------------------- OpenCL objects */

/* Devices, settings, the context's life and statistics: clformer/device.h. */

/* The name of an OpenCL error code, such as "CL_OUT_OF_RESOURCES". */
const char *clf_cl_error_str(cl_int err);

/* The context's OpenCL context and queue, for work of one's own on them. */
cl_context clf_ctx_cl_context(const clf_ctx_t *ctx);
cl_command_queue clf_ctx_queue(const clf_ctx_t *ctx);

/* Whether the device lists `name` (cl_khr_fp16, cl_khr_fp64, …) among
 * its CL_DEVICE_EXTENSIONS, as a whole word. */
bool clf_device_has_extension(const struct clf_device_info *di, const char *name);

/* Kernels the context has enqueued through clf_kernel_launch since it was
 * opened (every op's launch: GEMMs that CLBlast or the host's BLAS run are
 * not counted). Always on and one increment a launch: read it before and
 * after a piece of work to count its launches (`clformer bench translate`
 * predicts the host's share of a decoder step from it). */
uint64_t clf_ctx_launches(const clf_ctx_t *ctx);

/* ---------------------------------------------------------------- programs */

/* Builds (or fetches from the caches) the program made of cl/<file> and the
 * shared prelude, compiled with `options` (may be NULL), and returns one of
 * its kernels. The kernel belongs to the context: do not release it. */
clf_status clf_kernel_get(clf_ctx_t *ctx, const char *file, const char *options,
                          const char *kernel_name, cl_kernel *out);

/* Builds a program from the given source text (no prelude), through the same
 * caches. For tools and tests; ops use clf_kernel_get. */
clf_status clf_program_from_source(clf_ctx_t *ctx, const char *source, const char *options,
                                   cl_program *out);

/* ----------------------------------------------------------------- tensors */

#define CLF_MAX_DIMS 4

/* What a tensor's elements are. Both are four bytes wide, so offsets and
 * shapes count elements alike; a zero-initialised tensor is f32. */
enum clf_dtype {
    CLF_F32 = 0, /* float: activations, parameters, gradients */
    CLF_I32,     /* int32_t: token ids, targets, lengths */
};

/* A device tensor: a buffer, an offset into it (in elements), a row-major
 * shape and an element type. A view shares its parent's buffer and type
 * and does not own the buffer. */
typedef struct clf_tensor {
    cl_mem buf;
    size_t offset;                /* in elements */
    int ndim;
    size_t shape[CLF_MAX_DIMS];
    bool owns;
    enum clf_dtype dtype;
} clf_tensor;

/* Allocates an f32 tensor of the given shape (ndim 1..4), contents undefined. */
clf_status clf_tensor_init(clf_ctx_t *ctx, clf_tensor *t, int ndim, const size_t *shape);
/* The same for any element type. */
clf_status clf_tensor_init_dtype(clf_ctx_t *ctx, clf_tensor *t, enum clf_dtype dtype, int ndim,
                                 const size_t *shape);
void clf_tensor_free(clf_tensor *t);
size_t clf_tensor_numel(const clf_tensor *t);
/* A view of `count` elements starting `offset` elements into t, with a new
 * shape whose product must equal count. */
clf_status clf_tensor_view(clf_ctx_t *ctx, const clf_tensor *t, size_t offset, int ndim,
                           const size_t *shape, clf_tensor *view);
/* Blocking copies between host and device of the tensor's whole extent;
 * the tensor's dtype must match the host array's (CLF_ERR_ARG otherwise). */
clf_status clf_tensor_upload(clf_ctx_t *ctx, clf_tensor *t, const float *src);
clf_status clf_tensor_download(clf_ctx_t *ctx, const clf_tensor *t, float *dst);
clf_status clf_tensor_upload_i32(clf_ctx_t *ctx, clf_tensor *t, const int32_t *src);
clf_status clf_tensor_download_i32(clf_ctx_t *ctx, const clf_tensor *t, int32_t *dst);
/* Enqueues a read of t's whole extent (f32) into dst without waiting and
 * flushes the queue so that the device starts on it; *done is its event:
 * dst holds the elements once clf_event_done says so, and must be left
 * alone until then. Release the event with clf_event_release. */
clf_status clf_tensor_download_start(clf_ctx_t *ctx, const clf_tensor *t, float *dst, cl_event *done);
/* Whether the command of event e has completed, without waiting; one that
 * ended in error is CLF_ERR_OPENCL naming it. */
clf_status clf_event_done(clf_ctx_t *ctx, cl_event e, bool *done);
void clf_event_release(cl_event e);  /* NULL: nothing */
/* Enqueues a copy of src's elements into dst (same numel and dtype). */
clf_status clf_tensor_copy(clf_ctx_t *ctx, clf_tensor *dst, const clf_tensor *src);
/* Enqueues a fill of an f32 tensor with one value. */
clf_status clf_tensor_fill(clf_ctx_t *ctx, clf_tensor *t, float value);

/* A model's device tensors (clformer/model.h): the parameters in one flat
 * buffer, clf_model_numel floats in clf_model_params' layout. */
clf_tensor *clf_model_weights(clf_model_t *m);    /* (numel) */
/* (numel), same layout; made (zeroed) at the first call that needs them
 * (this one, clf_model_accumulate, clf_model_zero_grad, clf_model_reserve,
 * clf_model_side_grad), so a model that only translates holds none; buf
 * NULL when they could not be made (clf_ctx_error says why). */
clf_tensor *clf_model_grads(clf_model_t *m);
/* Logits of the last forward: (batch·tgt_len, vocab), for tests and
 * scoring. NULL unless the last call was clf_model_forward. */
const clf_tensor *clf_model_logits(const clf_model_t *m);
/* One stack of the model alone, for studies of the stack itself
 * (tools/reach.c: how far information travels through the layers): one
 * sequence (batch 1, no padding, no dropout) through the encoder's or the
 * decoder's layers (and pre-norm's final norm), x (n, d_model) standing
 * for the embeddings; the decoder's encoder-decoder attention reads mem
 * (n_mem, d_model) as the encoder's output (NULL for the encoder). Then
 * the backward from dy (n, d_model), the gradient at the side's output, to
 * dx (n, d_model), the gradient at x. The side's parameter gradients are
 * added into the model's (clf_model_zero_grad clears them). n and n_mem
 * are at most the config's max_len. Blocks nothing: read dx after the
 * queue is done (a download waits). */
clf_status clf_model_side_grad(clf_model_t *m, enum clf_side side, const clf_tensor *x, const clf_tensor *mem,
                               const clf_tensor *dy, clf_tensor *dx);

/* Probes of the device's roofs (host/ops/peak.c, cl/peak.cl), for
 * `clformer bench peak`. clf_peak_fma enqueues, over out's numel
 * work-items, `iters` rounds of 8 independent multiply-add chains on
 * vectors of precision t held in registers (float8, half8, double4:
 * clf_peak_fma_flop(t) FLOP an item a round, 128 for float32, so
 * clf_peak_fma_flop × iters × numel in all), each item's sum written to
 * out (f32). float16 needs cl_khr_fp16 and float64 cl_khr_fp64
 * (clf_peak_fma_supported; without, CLF_ERR_UNSUPPORTED and nothing is
 * built). clf_peak_fma_items says how many items fill the device: its
 * compute units times the kernel's work-group size (at most 256) times 8
 * groups each. clf_peak_empty enqueues an empty kernel on one work-item:
 * its enqueue and completion time is the launch latency, which
 * clf_peak_launch_latency measures: n empty kernels one at a time (after 8
 * left out), each enqueue timed alone and to its completion
 * (clf_ctx_finish), the medians in µs; it waits for the queue first.
 * clf_peak_triad enqueues STREAM's triad, a = b + s·c over float32
 * tensors of one size (a multiple of 4; whole tensors): 12 bytes moved
 * an element. None of them waits but clf_peak_launch_latency. */
enum clf_peak_type { CLF_PEAK_FLOAT32, CLF_PEAK_FLOAT16, CLF_PEAK_FLOAT64 };
const char *clf_peak_type_str(enum clf_peak_type t);  /* "float32", "float16", "float64" */
unsigned clf_peak_fma_flop(enum clf_peak_type t);
bool clf_peak_fma_supported(clf_ctx_t *ctx, enum clf_peak_type t);
clf_status clf_peak_fma_items(clf_ctx_t *ctx, enum clf_peak_type t, size_t *items);
clf_status clf_peak_fma(clf_ctx_t *ctx, enum clf_peak_type t, clf_tensor *out, unsigned iters);
clf_status clf_peak_empty(clf_ctx_t *ctx);
clf_status clf_peak_launch_latency(clf_ctx_t *ctx, int n, double *enqueue_us, double *finish_us);
clf_status clf_peak_triad(clf_ctx_t *ctx, clf_tensor *a, const clf_tensor *b, const clf_tensor *c, float s);

/* -------------------------------------------------------------------- GEMM */

/* Who computes clf_gemm and clf_gemm_batched on a context. CLF_GEMM_HOST
 * maps the buffers (on a device whose memory is the host's, a map hands
 * back the buffer's own memory), waits for the queue, calls the host's
 * BLAS (OpenBLAS's cblas_sgemm) and unmaps; CLF_GEMM_CLBLAST enqueues
 * CLBlast's kernels. The default is the host's BLAS on a CPU device with
 * host-unified memory and CLBlast elsewhere. */
enum clf_gemm_backend {
    CLF_GEMM_CLBLAST,
    CLF_GEMM_HOST,
};

/* "clblast" or "host", the words CLF_GEMM and --gemm take. */
const char *clf_gemm_backend_str(enum clf_gemm_backend b);

/* The backend for device di: `request` is "host" or "clblast"; NULL or ""
 * consults the CLF_GEMM environment variable, then the default above. A
 * word that is neither is CLF_ERR_ARG; "host" on a device without
 * host-unified memory (also one that CLF_DEVICE_LIMITS shaped so) is
 * CLF_ERR_UNSUPPORTED with a message naming the device. clf_ctx_init
 * chooses with request NULL. */
clf_status clf_gemm_backend_choose(const struct clf_device_info *di, const char *request,
                                   enum clf_gemm_backend *out);

/* Switches ctx's GEMMs to backend b (refused as above); work already
 * enqueued is unaffected. */
clf_status clf_ctx_gemm_set(clf_ctx_t *ctx, enum clf_gemm_backend b);
enum clf_gemm_backend clf_ctx_gemm(const clf_ctx_t *ctx);

/* The host BLAS's threads: CLF_BLAS_THREADS (a count from 1 to 4096) sets
 * OpenBLAS's thread count for the whole process at clf_ctx_init (another
 * value makes clf_ctx_init fail with CLF_ERR_ARG); unset, OpenBLAS keeps
 * its own default (OPENBLAS_NUM_THREADS, else one per core). Returns the
 * count in force, or the one clf_ctx_init will set. */
int clf_blas_threads(void);
/* Whether the host backend's large float32 products (training's, of at
 * least 2^25 multiply-adds) run on oneDNN's matmul instead of the host
 * BLAS: a build with oneDNN, and CLF_GEMM_F32 not openblas. */
bool clf_gemm_f32_onednn(void);

/* What the host CPU offers the packed GEMMs (int8, bfloat16, packed
 * float32): oneDNN's effective ISA, so ONEDNN_MAX_CPU_ISA caps it as it
 * caps oneDNN (all false in a build without oneDNN). vnni: AVX512-VNNI or
 * AVX-VNNI; bf16: AVX512-BF16; amx: AMX int8 and bf16. */
struct clf_cpu_isa {
    bool avx2, avx512, vnni, bf16, amx;
};
struct clf_cpu_isa clf_cpu_isa_effective(void);

/* One operand of a GEMM: a row-major matrix inside a buffer. */
struct clf_mat {
    cl_mem buf;
    size_t offset;   /* in floats */
    size_t ld;       /* leading dimension: the row length as stored */
    bool trans;      /* use the transpose (ignored for C) */
    size_t stride;   /* batched form: floats between consecutive matrices */
};

/* C (m×n) = alpha·op(A)·op(B) + beta·C, op(A) m×k, op(B) k×n, through the
 * context's backend. A, B and C may lie in one buffer (views of a fused
 * weight or activation). Both backends refuse the same bad arguments
 * (k = 0, a leading dimension below the stored row length, a matrix that
 * runs past its buffer) with CLF_ERR_ARG and a message naming the operand. */
clf_status clf_gemm(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha,
                    const struct clf_mat *a, const struct clf_mat *b, float beta,
                    const struct clf_mat *c);

/* The same for `batch` independent products, matrix i at offset + i·stride. */
clf_status clf_gemm_batched(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha,
                            const struct clf_mat *a, const struct clf_mat *b, float beta,
                            const struct clf_mat *c, size_t batch);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
