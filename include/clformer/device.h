/* clformer/device.h: devices, settings and contexts (the stable tier: no
 * OpenCL header needed).
 *
 * A context (clf_ctx_t, opaque) owns one OpenCL device, its context and one
 * in-order queue. Every call that can fail returns clf_status; the context
 * keeps a detailed message of the last failure (clf_ctx_error). Calls made
 * before a context exists (or with ctx == NULL) leave their message in a
 * per-thread buffer that clf_ctx_error(NULL) returns. The library never
 * prints and never exits. What takes OpenCL's own types (the context's
 * cl_context and queue, tensors, programs, GEMM) is the advanced tier,
 * clformer/advanced/runtime.h. */
#ifndef CLFORMER_DEVICE_H
#define CLFORMER_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clformer/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything the public headers declare is libclformer.so's exported API,
 * and nothing else is: the library builds with -fvisibility=hidden
 * (CMakeLists.txt) and each header asks for default visibility. */
#pragma GCC visibility push(default)

/* OpenCL's handle types, declared as <CL/cl.h> declares them
 * (cl_platform_id is struct _cl_platform_id *), so that struct
 * clf_device_info keeps its handles without that header. */
struct _cl_platform_id;
struct _cl_device_id;

/* --------------------------------------------------------------- devices */

struct clf_device_info {
    int index;            /* position in the global list, as `clformer devices` shows */
    int platform_index;
    /* OpenCL's handles: the types cl_platform_id and cl_device_id are,
     * named without <CL/cl.h> */
    struct _cl_platform_id *platform;
    struct _cl_device_id *device;
    char platform_name[128];
    char device_name[128];
    char vendor[128];
    char driver_version[64];
    char device_version[128]; /* "OpenCL 3.0 PoCL ..." */
    char c_version[64];       /* "OpenCL C 1.2 ..." */
    uint64_t type;        /* a cl_device_type: CL_DEVICE_TYPE_GPU, _CPU, ... */
    uint32_t compute_units;
    uint64_t global_mem;
    uint64_t local_mem;
    uint64_t max_alloc;
    size_t max_work_group;
    bool host_unified;    /* CL_DEVICE_HOST_UNIFIED_MEMORY: device memory is the host's */
    bool is_default;
    /* The CLF_DEVICE_LIMITS text that shaped type and limits above (see
     * clf_device_shape), or "" when they are the device's own. */
    char shaped[96];
    /* A CPU device's: what the host processor has (CLF_CPU_* bits of
     * clf_cpu_features, <clformer/advanced/tune.h>: every CPU device runs
     * on it, whichever driver offers it), which the tuning table keys CPUs
     * on; 0 for other devices. */
    uint32_t cpu_features;
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

/* clf_ctx_t and clf_ctx_error are declared in clformer/status.h. */

/* Opens the device that `request` names (see clf_devices_match). When
 * request is NULL the CLF_DEVICE environment variable is consulted. */
clf_status clf_ctx_init(clf_ctx_t **ctx, const char *request);
void clf_ctx_free(clf_ctx_t *ctx);

const struct clf_device_info *clf_ctx_device(const clf_ctx_t *ctx);
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

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
