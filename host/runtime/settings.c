/* settings.c: every environment variable the library reads, and the one
 * place it reads them (clf_setting_get), over the values this process set
 * for itself (clf_setting_set). Each row says what the variable changes
 * and who reads it; the tunables' own variables (CLF_ATTN_TILE_Q,
 * CLF_ATTN_TILE_K, CLF_ATTN_LANES, CLF_OPS_CPU_WG) are rows here too, and
 * the table of tunables (tunables.c) names them, so settings.c depends on
 * nothing above it. Each reader keeps its own parsing and its own
 * messages. The docs are read back by clf_setting_row, from which
 * `clformer settings` prints them and docs/environment_variables.md is
 * generated. */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "settings.h"

static const struct {
    const char *name;
    const char *doc;
} settings[] = {
    {"CLF_DEVICE", "the device clf_ctx_init opens when its caller names none: an index, gpu, cpu, accelerator, or part "
                   "of a platform or device name (ctx.c)"},
    {"CLF_DEVICE_LIMITS", "shapes every device as a smaller one (gpu, local_mem=, max_work_group=, max_alloc=, "
                          "global_mem=, unified=; limits.c), read when devices are listed and opened (ctx.c)"},
    {"CLF_GEMM", "the GEMM backend, host or clblast, when the caller asks for none (gemm_host.c)"},
    {"CLF_GEMM_MAP", "always: the host backend maps its operands on every GEMM instead of using recorded host "
                     "addresses (host_ptrs.c)"},
    {"CLF_GEMM_PACK", "off, 0 or no: float32 decoding on CPU devices keeps the host BLAS on the plain weights "
                      "instead of oneDNN on weights packed once (gemm.c, gemm_dnnl.c)"},
    {"CLF_GEMM_F32_OWN", "off, 0 or no: packed float32 decoding runs oneDNN's matmul even where oneDNN's ISA stops "
                         "below AVX-512 (no brgemm there), instead of clformer's AVX2 kernel (gemm_dnnl.c, "
                         "gemm_f32.c)"},
    {"CLF_GEMM_F32", "openblas: the host backend's large float32 GEMMs (training's) stay on the host BLAS instead of "
                     "oneDNN's matmul (gemm_dnnl_f32.c)"},
    {"CLF_BLAS_THREADS", "OpenBLAS's thread count for the process, 1 to 4096, and oneDNN's for the large float32 "
                         "GEMMs (gemm_host.c, gemm_dnnl_f32.c)"},
    {"OPENBLAS_THREAD_TIMEOUT", "OpenBLAS's own, which it reads from the environment; when unset the library sets it "
                                "to 4 as it loads, so that idle BLAS threads sleep (gemm_host.c)"},
    {"CLF_PROFILE", "anything but empty or 0: every context profiles its kernels from clf_ctx_init (ctx.c)"},
    {"CLF_TUNING", "off, 0 or no: neither the tuning file nor the table's GEMM parameters apply (tuning_file.c)"},
    {"CLF_KERNEL_DIR", "a folder to read the kernel sources from instead of the built-in ones, for editing them "
                       "without rebuilding (program.c)"},
    {"XDG_CACHE_HOME", "the system's; the cache folder for compiled kernels and tuning files is its clformer/ "
                       "(program.c)"},
    {"HOME", "the system's; without XDG_CACHE_HOME the cache folder is ~/.cache/clformer (program.c)"},
    {"CLF_KERNEL_CACHE", "off: no disk cache of kernel binaries, every process compiles (or takes its driver's "
                         "own cache); on or unset: the cache folder's (program.c)"},
    {"POCL_LLVM_CPU_NAME", "PoCL's: the CPU its kernels are compiled for (haswell: AVX2 on a newer CPU); part of "
                           "the kernel cache's key, as another value compiles other code (program.c)"},
    {"POCL_EXTRA_BUILD_FLAGS", "PoCL's: flags added to every kernel build; part of the kernel cache's key "
                               "(program.c)"},
    {"CLF_ATTN_BWD", "split: the attention backward runs attn_bwd_dkdv and attn_bwd_dq even where attn_bwd_fused "
                     "(one group per (b, h), dQ and dK/dV from one recomputation; lanes 1 and local memory allowing) "
                     "would run (host/attention/attention.c)"},
    {"CLF_DECODE_ATTN", "tiled: decoding's attention runs the tiled forward instead of the decode kernels, a "
                        "reference for tests and measurements (host/attention/decode_attn.c)"},
    {"CLF_SEARCH", "host: the searches download every log-probability and rank on the host instead of taking the "
                   "device's best candidates, the reference the tests compare with (host/model/search.c)"},
    {"CLF_ATTN_TILE_Q", "overrides the kernel tunable ATTN_TILE_Q: query rows per work-group of attention's "
                        "forward and dQ kernels, 1 to 1024, a power of two (floored at 4; tunables.c)"},
    {"CLF_ATTN_TILE_K", "overrides the kernel tunable ATTN_TILE_K: key rows per local-memory tile of attention (and "
                        "per work-group of dK/dV), 8 to 1024, a power of two (tunables.c)"},
    {"CLF_ATTN_LANES", "overrides the kernel tunable ATTN_LANES: work-items per query row of attn_fwd and "
                       "attn_bwd_dq, per key row of attn_bwd_dkdv, 1 to 8, a power of two (halved until they divide "
                       "d_k; tunables.c)"},
    {"CLF_OPS_CPU_WG", "on CPU devices, overrides the kernel tunable ROWS_WG: the work-group cap of the row-wise "
                       "ops, 1 to 1024, a power of two (tunables.c)"},
    {"CLF_FAULT_QUEUE", "for tests of a translation queue's health, read by clf_queue_init: fail-after:N makes every "
                        "translator call after the first N batches fail as a dead device's would, stall makes every "
                        "call hang until the queue drains (host/translate/queue.c)"},
};

/* What clf_setting_set gave: a slot per setting it was called for, and
 * every distinct value it was given, kept to the end of the process, so a
 * value that clf_setting_get returned stays valid while other threads give
 * others. Memory grows with the distinct values, not with the calls. */
struct given_value {
    struct given_value *next;
    char text[];
};
static struct {
    const char *name;  /* a name from the table above, not a copy */
    const char *value; /* an entry of given_values, or NULL: reads as unset */
} slots[64];
static size_t nslots;
static struct given_value *given_values;
static pthread_mutex_t given_lock = PTHREAD_MUTEX_INITIALIZER;

/* The table's own spelling of name, or NULL when it is not listed. */
static const char *listed(const char *name)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        if (!strcmp(settings[i].name, name))
            return settings[i].name;
    return NULL;
}

/* The kept copy of value, made on its first use; the caller holds the lock. */
static const char *kept(const char *value)
{
    for (struct given_value *g = given_values; g; g = g->next)
        if (!strcmp(g->text, value))
            return g->text;
    size_t n = strlen(value) + 1;
    struct given_value *g = malloc(sizeof *g + n);
    if (!g)
        return NULL;
    memcpy(g->text, value, n);
    g->next = given_values;
    given_values = g;
    return g->text;
}

/* The slot of name, or nslots when it has none; the caller holds the lock. */
static size_t slot_of(const char *name)
{
    size_t i = 0;
    while (i < nslots && strcmp(slots[i].name, name))
        i++;
    return i;
}

clf_status clf_setting_set(const char *name, const char *value)
{
    const char *own = name ? listed(name) : NULL;
    if (!own)
        return clf_error_set(NULL, CLF_ERR_ARG,
                             "clf_setting_set: '%s' is not a setting the library reads (host/runtime/settings.c "
                             "lists them)",
                             name ? name : "(null)");
    clf_status st = CLF_OK;
    pthread_mutex_lock(&given_lock);
    const char *v = value ? kept(value) : NULL;
    size_t i = slot_of(own);
    if (value && !v)
        st = CLF_ERR_MEMORY;
    else if (i == sizeof slots / sizeof slots[0]) /* the table lists fewer names than there are slots */
        st = CLF_ERR_ARG;
    else {
        slots[i].name = own;
        slots[i].value = v;
        nslots += i == nslots;
    }
    pthread_mutex_unlock(&given_lock);
    if (st == CLF_ERR_MEMORY)
        return clf_error_set(NULL, st, "clf_setting_set: out of host memory for %s", own);
    if (st != CLF_OK)
        return clf_error_set(NULL, st, "clf_setting_set: more settings than its %zu slots",
                             sizeof slots / sizeof slots[0]);
    return CLF_OK;
}

const char *clf_setting_get(const char *name)
{
    assert(listed(name));
    pthread_mutex_lock(&given_lock);
    size_t i = slot_of(name);
    const char *v = i < nslots ? slots[i].value : NULL;
    pthread_mutex_unlock(&given_lock);
    return i < nslots ? v : getenv(name);
}

bool clf_setting_row(size_t i, struct clf_setting_row *row)
{
    if (i >= sizeof settings / sizeof settings[0])
        return false;
    *row = (struct clf_setting_row){.name = settings[i].name, .doc = settings[i].doc};
    row->value = clf_setting_get(row->name);
    return true;
}
