/* clformer.h: the public interface of libclformer.
 *
 * A context (clf_ctx_t) owns one OpenCL device, its context and one in-order
 * queue. Every call that can fail returns clf_status; the context keeps a
 * detailed message of the last failure (clf_ctx_error). Calls made before a
 * context exists (or with ctx == NULL) leave their message in a per-thread
 * buffer that clf_ctx_error(NULL) returns. The library never prints and
 * never exits.
 *
 * Ops only enqueue work on the context's queue; clf_ctx_finish() waits.
 * Tensors are row-major f32 or int32 (token ids, lengths), shapes given
 * outermost first.
 */
#ifndef CLFORMER_H
#define CLFORMER_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clformer_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything these public headers declare is libclformer.so's exported
 * API, and nothing else is: the library builds with -fvisibility=hidden
 * (CMakeLists.txt) and each header asks for default visibility. */
#pragma GCC visibility push(default)

/* ---------------------------------------------------------------- status */

/* clf_status, clf_status_str and clf_ctx_error: clformer_status.h. */

/* The name of an OpenCL error code, such as "CL_OUT_OF_RESOURCES". */
const char *clf_cl_error_str(cl_int err);

/* --------------------------------------------------------------- devices */

struct clf_device_info {
    int index;            /* position in the global list, as `clformer devices` shows */
    int platform_index;
    cl_platform_id platform;
    cl_device_id device;
    char platform_name[128];
    char device_name[128];
    char vendor[128];
    char driver_version[64];
    char device_version[128]; /* "OpenCL 3.0 PoCL ..." */
    char c_version[64];       /* "OpenCL C 1.2 ..." */
    cl_device_type type;
    cl_uint compute_units;
    cl_ulong global_mem;
    cl_ulong local_mem;
    cl_ulong max_alloc;
    size_t max_work_group;
    bool host_unified;    /* CL_DEVICE_HOST_UNIFIED_MEMORY: device memory is the host's */
    bool is_default;
    /* The CLF_DEVICE_LIMITS text that shaped type and limits above (see
     * clf_device_shape), or "" when they are the device's own. */
    char shaped[96];
};

/* Lists every device of every platform into *out (malloc'd, caller frees
 * with free()); *n receives the count. is_default marks the device that
 * clf_ctx_init(…, NULL) would choose. */
clf_status clf_devices_list(struct clf_device_info **out, int *n);

/* Makes di look like a device with other limits: spec is a comma-separated
 * list of key=value items, as the CLF_DEVICE_LIMITS environment variable
 * holds: type (gpu|cpu|accelerator), local_mem (bytes; K, M suffixes),
 * max_wg (work-items), max_alloc (bytes), global_mem (bytes: the device
 * memory the planners count against; max_alloc follows it down), unified
 * (0|1: host-unified memory); the word "gpu" stands for type=gpu,local_mem=48K,max_wg=256,
 * unified=0 and later items override it ("gpu,local_mem=32K"). Limits can
 * only be lowered: a value above the device's own, or a malformed item, is
 * CLF_ERR_ARG with a message naming the variable, the item and the device's
 * value, and leaves di unchanged. NULL or "" changes nothing.
 * clf_devices_list applies CLF_DEVICE_LIMITS to every device it can (a
 * device it would raise keeps its own limits, and clf_ctx_init refuses to
 * open it), so the default device, the tuning tables and every launcher see
 * the shaped device: CI runs the GPU code paths on a CPU this way. */
clf_status clf_device_shape(struct clf_device_info *di, const char *spec);

/* Resolves a device request against the list: NULL or "" picks the default
 * (the GPU with the most global memory, ties broken by compute units, else
 * the CPU the tuning table prefers (clf_tuning_prefer: the driver measured
 * to train fastest where two offer the same processor), then likewise by
 * memory and compute units, else the first device); a decimal index; "gpu",
 * "cpu" or "accelerator" (the best of that type by the same rule); or a
 * case-insensitive substring of the platform or device name (a device
 * whose whole name it is first, else the first that holds it). Returns the
 * list index or a negative value with the reason in clf_ctx_error(NULL). */
int clf_devices_match(const struct clf_device_info *devs, int n, const char *request);

/* --------------------------------------------------------------- settings */

/* The library reads its settings (CLF_DEVICE, CLF_GEMM, CLF_ATTN_TILE_Q and
 * the others that host/runtime/settings.c lists) from the environment as it
 * works. clf_setting_set gives one a value for this process instead: it
 * takes precedence over the environment from the next read on, value NULL
 * makes the setting read as unset, and it may be called while other
 * threads work. Changing the environment itself (setenv, unsetenv) while a
 * device has work in flight is not safe: PoCL's worker threads read the
 * environment as they compile and run kernels, and glibc's setenv may free
 * the array they are reading. A name the library does not read is
 * CLF_ERR_ARG, with the reason in clf_ctx_error(NULL). */
clf_status clf_setting_set(const char *name, const char *value);

/* One setting the library reads, as clf_setting_row gives it. */
struct clf_setting_row {
    const char *name;    /* the environment variable, e.g. "CLF_DEVICE" */
    const char *doc;     /* what it changes and which file reads it */
    const char *value;   /* what the library reads now (clf_setting_set's
                            value, else the environment's), or NULL: unset */
};
/* The i-th setting (from 0) into *row, in host/runtime/settings.c's
 * order. Returns false past the last. name and doc stay valid to the end
 * of the process, value until the environment changes (one that
 * clf_setting_set gave stays valid). `clformer settings` prints the rows, and
 * docs/environment_variables.md is its --markdown output. */
bool clf_setting_row(size_t i, struct clf_setting_row *row);

/* ---------------------------------------------------------------- context */

/* clf_ctx_t and clf_ctx_error are declared in clformer_status.h. */

/* Opens the device that `request` names (see clf_devices_match). When
 * request is NULL the CLF_DEVICE environment variable is consulted. */
clf_status clf_ctx_init(clf_ctx_t **ctx, const char *request);
void clf_ctx_free(clf_ctx_t *ctx);

const struct clf_device_info *clf_ctx_device(const clf_ctx_t *ctx);
cl_context clf_ctx_cl_context(const clf_ctx_t *ctx);
cl_command_queue clf_ctx_queue(const clf_ctx_t *ctx);
/* Waits for all work enqueued so far. */
clf_status clf_ctx_finish(clf_ctx_t *ctx);

/* Counters that let callers (and tests) watch the program cache work. */
struct clf_cache_stats {
    unsigned programs_built;     /* compiled from source */
    unsigned programs_loaded;    /* loaded from a binary in the disk cache */
    unsigned programs_reused;    /* served from this context's memory cache */
    unsigned disk_rejected;      /* disk entries found corrupt and rebuilt */
};
void clf_ctx_cache_stats(const clf_ctx_t *ctx, struct clf_cache_stats *out);

/* Device memory in the library's buffers (tensors, scratch, uploads,
 * float16 copies of weights), for the whole process, every context
 * together: bytes held now and the most held at once since the start or
 * the last clf_memory_peak_reset (which sets it to what is held now).
 * Memory the driver takes for itself (programs, queues) is not in it. */
struct clf_memory_stats {
    size_t device_bytes;
    size_t device_peak_bytes;
};
void clf_memory_stats(struct clf_memory_stats *out);
void clf_memory_peak_reset(void);

/* Profiling: after clf_ctx_profile_start every kernel and GEMM enqueued
 * on the context records an event (the queue is recreated with profiling
 * on); clf_ctx_profile_report waits for the device, sums device time per
 * kernel name into *out (malloc'd, longest first) and starts counting
 * afresh. CLF_PROFILE=1 in the environment starts it at clf_ctx_init. */
struct clf_profile_entry {
    char name[64];
    unsigned calls;
    double seconds;
};
clf_status clf_ctx_profile_start(clf_ctx_t *ctx);
clf_status clf_ctx_profile_report(clf_ctx_t *ctx, struct clf_profile_entry **out, size_t *n);

/* The disk cache folder: $XDG_CACHE_HOME/clformer or ~/.cache/clformer. */
clf_status clf_cache_dir(char *out, size_t len);

/* mkdir -p, for the cache and for tools' output folders: 0, or -1 with
 * errno set. */
int clf_mkdir_p(const char *dir);
/* Copies a file whole to `to`, written to a temporary name and renamed
 * over it (so copying a file onto itself leaves it as it was). */
clf_status clf_file_copy(const char *from, const char *to);

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

/* Probes of the device's roofs (host/ops/peak.c, cl/peak.cl), for
 * `clformer bench peak`. clf_peak_fma enqueues, over out's numel
 * work-items, `iters` rounds of 64 float32 multiply-adds each (8 float8:
 * CLF_PEAK_FLOP_PER_ROUND, 128 FLOP, times iters times numel in all) held
 * in registers, each item's sum
 * written to out (f32). clf_peak_fma_items says how many items fill the
 * device: its compute units times the kernel's work-group size (at most
 * 256) times 8 groups each. clf_peak_empty enqueues an empty kernel on one
 * work-item: its enqueue and completion time is the launch latency.
 * Neither waits. */
#define CLF_PEAK_FLOP_PER_ROUND 128
clf_status clf_peak_fma_items(clf_ctx_t *ctx, size_t *items);
clf_status clf_peak_fma(clf_ctx_t *ctx, clf_tensor *out, unsigned iters);
clf_status clf_peak_empty(clf_ctx_t *ctx);

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

#include "clformer_ops.h"
#include "clformer_attention.h"
#include "clformer_text.h"
#include "clformer_model.h"
#include "clformer_train.h"
#include "clformer_translate.h"
#include "clformer_tune.h"

#endif
