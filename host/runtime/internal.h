/* internal.h: what the runtime shares with ops and the model, but not with
 * users: the context's layout, error helpers and launch helpers. */
#ifndef CLF_RUNTIME_INTERNAL_H
#define CLF_RUNTIME_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "base/files.h"
#include "base/hash.h"
#include "base/status.h"
#include "clformer.h"

struct clf_program_entry;

/* The types a model's weights compute in (gemm.c, below). */
/* CLF_GEMM_W_F32P: float32 weights packed by oneDNN (decoding on CPU
 * devices: gemm_dnnl.c), the arithmetic of float32 in another order */
enum clf_gemm_weights { CLF_GEMM_W_FLOAT32, CLF_GEMM_W_INT8, CLF_GEMM_W_BF16, CLF_GEMM_W_F16, CLF_GEMM_W_F32P };

/* The scratch arena's slots (scratch.c). Each is one grow-only buffer; an
 * op holds a slot only while it enqueues its users, and two temporaries
 * alive at once (in one op and the ops it calls) take two slots. */
enum clf_scratch_slot {
    CLF_SCRATCH_GEMM,   /* CLBlast's temporary matrices: inside clf_gemm only */
    CLF_SCRATCH_PART,   /* partial sums of a two-stage reduction (column sums, the loss) */
    CLF_SCRATCH_PART2,  /* a second one beside it (layer norm's gain and bias) */
    CLF_SCRATCH_WIDE,   /* an op's activation-sized temporary (FFN's dh, sinusoids, row lists) */
    CLF_SCRATCH_HALF_A, /* float16 GEMMs' A and C in half: inside clf_gemm only (gemm_half.c) */
    CLF_SCRATCH_HALF_C,
    CLF_SCRATCH_SLOTS
};

struct clf_scratch {
    cl_mem buf;
    size_t bytes;
};

struct clf_ctx {
    char error[CLF_ERRMSG_LEN];          /* first: host/base/status.c finds it there */
    struct clf_device_info dev;
    cl_context context;
    cl_command_queue queue;
    struct clf_cache_stats stats;
    struct clf_program_entry *programs;  /* memory cache, a list */
    struct clf_kernel_memo *memo;        /* (file, options, kernel) -> kernel, before any source is read */
    size_t max_local_mem;                /* bytes, from the device */
    size_t max_wg;                       /* work-items, from the device */
    bool fp_fma;                         /* CL_FP_FMA: kernels build with -DCLF_FMA (common.h) */
    unsigned native_vec_float;           /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, 16 where unknown (attention.c) */
    struct clf_params_found params;      /* every tunable: the table's, GEMM's as CLBlast was given them */
    struct clf_kernel_params kparams;    /* our kernels': the tuning file's (zeros: the table's) */
    clf_status tuning_status;            /* clf_tuning_apply's at init: CLF_OK or why CLBlast's defaults run */
    char tuning_message[512];
    bool profiling;
    struct clf_profile_event *events;    /* while profiling: launches not yet folded */
    size_t nevents, cap_events;
    struct clf_scratch scratch[CLF_SCRATCH_SLOTS];
    unsigned scratch_allocs;             /* buffers the arena has created */
    struct clf_profile_entry *totals;    /* finished launches, summed per name */
    size_t ntotals, cap_totals;
    enum clf_gemm_backend gemm;          /* who runs clf_gemm (gemm.c, gemm_host.c) */
    bool host_ptrs;                      /* host GEMMs use recorded addresses, no maps (host_ptrs.c) */
    cl_mem packed_weights;               /* a model's weights in packed_type (gemm.c); NULL: none */
    enum clf_gemm_weights packed_type;
    struct clf_dnnl *dnnl;               /* int8/bfloat16 GEMMs' packed weights (gemm_dnnl.c); NULL: none */
    struct clf_half *half;               /* float16 GEMMs' half weights (gemm_half.c); NULL: none */
    struct clf_dnnl_f32 *dnnl_f32;       /* large float32 GEMMs' primitives (gemm_dnnl_f32.c); NULL: none yet */
};

_Static_assert(offsetof(struct clf_ctx, error) == 0, "base/status.c reads a context's message at its start");

/* A buffer of at least `bytes` for slot, kept by ctx: the same one on
 * every call once it is large enough (grown by half again at least). */
clf_status clf_scratch_get(clf_ctx_t *ctx, enum clf_scratch_slot slot, size_t bytes, cl_mem *buf);
/* The setting name (settings.c lists every one the library reads, the
 * tunables' too): the value clf_setting_set last gave it in this
 * process, else the environment's, or NULL when it is not set. */
const char *clf_setting_get(const char *name);
/* The origin of f's value for our kernels' parameter called name
 * (tunables.c); the name must exist. */
const struct clf_param_origin *clf_param_origin(const struct clf_params_found *f, const char *name);

/* How many buffers the arena has created since clf_ctx_init (for tests). */
unsigned clf_scratch_allocs(const clf_ctx_t *ctx);

/* devmem.c: every device buffer the library makes goes through these, so
 * that clf_memory_stats counts it (held now, most held at once). create
 * returns NULL with the OpenCL error in *err; release takes NULL. */
cl_mem clf_buffer_create(clf_ctx_t *ctx, cl_mem_flags flags, size_t bytes, cl_int *err);
void clf_buffer_release(cl_mem b);
/* Releases the arena (clf_ctx_free). */
void clf_scratch_free(clf_ctx_t *ctx);

/* Past this many recorded launches the finished ones are folded into the
 * per-name totals, so a long profiled run holds only those in flight. */
#define CLF_PROFILE_FOLD_AT 4096

struct clf_profile_event {
    const char *name;  /* a kernel's name (static for the program's life) */
    cl_event event;    /* or NULL, and then: */
    double seconds;    /* wall time measured around a call */
};

/* Where to put a launch's event: NULL unless profiling. record() files it. */
cl_event *clf_profile_slot(clf_ctx_t *ctx, cl_event *ev);
void clf_profile_record(clf_ctx_t *ctx, const char *name, cl_event ev);
/* For calls that enqueue several kernels and report one event (CLBlast):
 * while profiling, begin() waits for the queue and returns a time stamp,
 * end() waits again and files the wall time in between under name. */
double clf_profile_begin(clf_ctx_t *ctx);
void clf_profile_end(clf_ctx_t *ctx, const char *name, double t0);

/* gemm_host.c: the host-BLAS backend of clf_gemm and clf_gemm_batched, on
 * arguments gemm.c has already checked; and CLF_BLAS_THREADS, applied by
 * clf_ctx_init (a malformed value is CLF_ERR_ARG, message in the
 * per-thread buffer). */
clf_status clf_gemm_host(clf_ctx_t *ctx, size_t m, size_t n, size_t k, float alpha, const struct clf_mat *a,
                         const struct clf_mat *b, float beta, const struct clf_mat *c, size_t batch,
                         const struct clf_mat *bias);
/* gemm.c: C = op(A)·op(B) + bias (a row of n floats added to every row)
 * in one call, arguments checked as clf_gemm checks them: where
 * clf_gemm_fuses_bias says so (the host backend, or B in a model's
 * weights of another type); the ops' clf_gemm_bias calls it there and
 * the GEMM and bias_add elsewhere. */
bool clf_gemm_fuses_bias(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b);
clf_status clf_gemm_bias_fused(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                               const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c);
/* C = max(A·B + bias, 0) in one call, where clf_gemm_fuses_relu says so
 * (B in a model's weights that oneDNN multiplies: float32 packed, int8,
 * bfloat16); the FFN's first GEMM when no dropout follows it (decoding). */
bool clf_gemm_fuses_relu(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b);
clf_status clf_gemm_bias_relu_fused(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                                    const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c);
clf_status clf_blas_threads_apply(enum clf_gemm_backend b);
/* CLF_BLAS_THREADS's count, 0 when unset, -1 when malformed (gemm_common.c). */
long clf_blas_threads_setting(void);
/* gemm_common.c: the process-wide lock every call into CLBlast holds
 * (gemm_common.c says why). */
void clf_blast_lock(void);
void clf_blast_unlock(void);
/* CLBlast's status s (a CLBlastStatusCode) of a call named what: CLF_OK,
 * or the mapped clf_status with the code named in the message. */
clf_status clf_blast_status(clf_ctx_t *ctx, int s, const char *what, size_t m, size_t n, size_t k, size_t batch);

/* gemm.c: a model's weights in another type. clf_gemm_weights_set names
 * the buffer holding a model's weights and their compute type (float32:
 * none; views packed before are dropped; one such buffer per context,
 * another is refused); clf_gemm and clf_gemm_bias then send the GEMMs whose
 * B lies in it (clf_gemm_packed_takes) to the type's path, which packs each
 * B view at its first use: int8 and bfloat16 to gemm_dnnl.c, float16 to
 * gemm_half.c. clf_gemm_weights_supports says why a device cannot run a
 * type (CLF_ERR_UNSUPPORTED, the reason in why). The type's name and
 * clf_gemm_packed_takes are gemm_common.c's, for the paths to use. */
const char *clf_gemm_weights_str(enum clf_gemm_weights t);
clf_status clf_gemm_weights_supports(const struct clf_device_info *di, enum clf_gemm_weights t, char *why, size_t n);
clf_status clf_gemm_weights_set(clf_ctx_t *ctx, cl_mem weights, enum clf_gemm_weights t);
/* Whether float32 decoding on ctx runs on packed weights (CLF_GEMM_W_F32P):
 * a build with oneDNN, the host backend at recorded addresses, a CPU with
 * AVX2, and CLF_GEMM_PACK not off; why says which is missing. */
bool clf_gemm_f32_packs(const clf_ctx_t *ctx, char *why, size_t n);
bool clf_gemm_packed_takes(const clf_ctx_t *ctx, const struct clf_mat *a, const struct clf_mat *b, float alpha,
                           float beta);
void clf_gemm_packed_free(clf_ctx_t *ctx);
/* gemm_common.c: how the types' paths find the copy they keep of a B view: its
 * key (B's offset and row length, orientation, k×n) opens each kept item,
 * items of `size` bytes in an array grown by doubling. */
struct clf_view_key {
    size_t offset, ld, k, n;
    bool trans;
};
struct clf_view_key clf_view_key_of(const struct clf_mat *b, size_t k, size_t n);
/* The one of n items keyed `key`, else NULL. */
void *clf_view_find(void *items, size_t n, size_t size, struct clf_view_key key);
/* items with room for one more after n (*cap grown, items moved): NULL
 * when out of host memory, items left as they were. */
void *clf_view_room(void *items, size_t n, size_t *cap, size_t size);

/* gemm_dnnl.c: int8 and bfloat16 through oneDNN on the host backend (the
 * host's memory at recorded addresses; _init refuses other contexts). */
bool clf_gemm_dnnl_built(void);
/* The largest |q| of int8 weights: 127, or 63 (7 bits) where oneDNN's int8
 * products saturate at full scale (CPUs without VNNI: gemm_dnnl.c's probe,
 * run once per process); 127 in a build without oneDNN. */
int clf_gemm_int8_weight_max(void);
/* Which int8 kernel runs, in words (gemm_dnnl.c's probe decides). */
const char *clf_gemm_int8_kernel(void);

/* gemm_i8.c: int8 products in AVX2 with 8-bit operands, exact sums (no
 * 16-bit saturation), dequantization, bias and ReLU fused into the store;
 * for CPUs whose oneDNN sums int8 pairs in 16 bits. */
bool clf_i8_runs(void);
size_t clf_i8_kp(size_t k);                   /* k rounded up to 4 */
size_t clf_i8_packed_bytes(size_t k, size_t n);
/* dst (clf_i8_packed_bytes) from q, a plain row-major (k×n) s8 array */
void clf_i8_pack(int8_t *dst, const int8_t *q, size_t k, size_t n);
/* C (m×n, ldc) = qa·W · inv_sa_i · inv_sw_j + bias_j (ReLU after when relu);
 * qa (m×kp) s8 with zeros past k; bias may be NULL; threads ≥ 1 */
void clf_i8_gemm(float *C, size_t ldc, const int8_t *qa, const float *inv_sa, const int8_t *packed,
                 const float *inv_sw, const float *bias, size_t m, size_t n, size_t k, bool relu, int threads);
clf_status clf_gemm_dnnl_supports(const struct clf_device_info *di, enum clf_gemm_weights t, char *why, size_t n);
clf_status clf_gemm_dnnl_init(clf_ctx_t *ctx, enum clf_gemm_weights t);
clf_status clf_gemm_dnnl(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                         const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c, bool relu);
void clf_gemm_dnnl_free(clf_ctx_t *ctx);

/* gemm_dnnl_f32.c: a host-backend GEMM on resolved pointers: C (m×n, ldc)
 * = alpha·op(A)·op(B) + beta·C, plus a row of bias when bias is not NULL;
 * op(A) is m×k (A k×m, lda, when ta), op(B) k×n (B n×k, ldb, when tb). */
struct clf_gemm_ptrs {
    size_t m, n, k, lda, ldb, ldc;
    bool ta, tb;
    float alpha, beta;
    const float *a, *b, *bias;
    float *c;
};
/* Whether a GEMM goes to oneDNN's float32 matmul instead of the host BLAS
 * (the file's comment says when and why); then clf_gemm_dnnl_f32 runs it. */
bool clf_gemm_dnnl_f32_takes(const clf_ctx_t *ctx, size_t m, size_t n, size_t k, size_t batch, float alpha,
                             bool bias);
clf_status clf_gemm_dnnl_f32(clf_ctx_t *ctx, const struct clf_gemm_ptrs *g);
void clf_gemm_dnnl_f32_free(clf_ctx_t *ctx);

/* gemm_half.c: float16 on the device, for devices with cl_khr_fp16, on
 * either backend: weights converted to half at first use, activations per
 * call, CLBlast's Hgemm, back to float32 with the bias. */
clf_status clf_gemm_half_supports(const struct clf_device_info *di, char *why, size_t n);
clf_status clf_gemm_half_init(clf_ctx_t *ctx);
clf_status clf_gemm_half(clf_ctx_t *ctx, size_t m, size_t n, size_t k, const struct clf_mat *a,
                         const struct clf_mat *b, const struct clf_mat *bias, const struct clf_mat *c);
void clf_gemm_half_free(clf_ctx_t *ctx);

/* host_ptrs.c: sets ctx->host_ptrs when the host backend may use a
 * buffer's recorded address outside a map (the device keeps buffers at the
 * address a map gives, which a probe checks; CLF_GEMM_MAP=always: never);
 * clf_host_ptr gives buf's address, recording it at the first call. */
void clf_host_ptrs_probe(clf_ctx_t *ctx);
clf_status clf_host_ptr(clf_ctx_t *ctx, cl_mem buf, char **base);

/* A GEMM operand as stored: op(X) is r×c, so X is c×r when transposed.
 * end is one past the last float of its last matrix (batch of them). */
struct clf_mat_extent {
    size_t rows, cols, end;
};
static inline struct clf_mat_extent clf_mat_extent(const struct clf_mat *x, size_t r, size_t c, size_t batch)
{
    struct clf_mat_extent e = {x->trans ? c : r, x->trans ? r : c, 0};
    e.end = x->offset + (batch - 1) * x->stride + (e.rows - 1) * x->ld + e.cols;
    return e;
}

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

/* Records a failed OpenCL call: its text, the error's name, file and line. */
clf_status clf_error_cl(clf_ctx_t *ctx, cl_int err, const char *call, const char *file, int line);

/* Evaluates an OpenCL call returning cl_int; on failure records it and
 * jumps to the function's `fail` label with `st` set. */
#define CLF_CL_TRY(ctx, call)                                               \
    do {                                                                    \
        cl_int clf_err_ = (call);                                           \
        if (clf_err_ != CL_SUCCESS) {                                       \
            st = clf_error_cl((ctx), clf_err_, #call, __FILE__, __LINE__);  \
            goto fail;                                                      \
        }                                                                   \
    } while (0)

/* Same for a call that reports through its last argument. */
#define CLF_CL_CHECK(ctx, err, what)                                        \
    do {                                                                    \
        if ((err) != CL_SUCCESS) {                                          \
            st = clf_error_cl((ctx), (err), (what), __FILE__, __LINE__);    \
            goto fail;                                                      \
        }                                                                   \
    } while (0)

/* Sets kernel arguments from a list of (size, pointer) pairs. */
struct clf_arg {
    size_t size;
    const void *value;
};
#define CLF_ARG(x) ((struct clf_arg){sizeof(x), &(x)})
#define CLF_ARG_LOCAL(bytes) ((struct clf_arg){(bytes), NULL})

clf_status clf_kernel_set_args(clf_ctx_t *ctx, cl_kernel k, const char *name,
                               const struct clf_arg *args, int nargs);

/* Enqueues k over `dims` dimensions; global sizes are rounded up to a
 * multiple of local (local NULL lets the driver choose). */
clf_status clf_kernel_launch(clf_ctx_t *ctx, cl_kernel k, const char *name, cl_uint dims,
                             const size_t *global, const size_t *local);

/* The largest power of two ≤ want that the kernel and device allow. */
size_t clf_kernel_wg_limit(clf_ctx_t *ctx, cl_kernel k, size_t want);

/* Returns the file of cl/ with this name: from CLF_KERNEL_DIR when set,
 * else the embedded copy. *text is malloc'd, caller frees. */
clf_status clf_kernel_source(clf_ctx_t *ctx, const char *file, char **text, size_t *len);

/* limits.c: refuses a malformed CLF_DEVICE_LIMITS whatever the device. */
clf_status clf_device_limits_check(const char *spec);

#endif
