/* settings.c: every environment variable the library reads, and the one
 * place it reads them (clf_setting_get). The tunables' own variables
 * (CLF_ATTN_TILE_Q, CLF_ATTN_TILE_K, CLF_ATTN_LANES, CLF_OPS_CPU_WG) are
 * rows of the table of tunables (tunables.c), which says what each takes;
 * the others are listed here with what they change and who reads them.
 * Each reader keeps its own parsing and its own messages. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
    {"CLF_GEMM_F32", "openblas: the host backend's large float32 GEMMs (training's) stay on the host BLAS instead of "
                     "oneDNN's matmul (gemm_dnnl_f32.c)"},
    {"CLF_BLAS_THREADS", "OpenBLAS's thread count for the process, 1 to 4096, and oneDNN's for the large float32 "
                         "GEMMs (gemm_host.c, gemm_dnnl_f32.c)"},
    {"OPENBLAS_THREAD_TIMEOUT", "OpenBLAS's own; when unset the host backend sets it to 4 so that idle BLAS threads "
                                "sleep (gemm_host.c)"},
    {"CLF_PROFILE", "anything but empty or 0: every context profiles its kernels from clf_ctx_init (ctx.c)"},
    {"CLF_TUNING", "off, 0 or no: neither the tuning file nor the table's GEMM parameters apply (tuning_file.c)"},
    {"CLF_KERNEL_DIR", "a folder to read the kernel sources from instead of the built-in ones, for editing them "
                       "without rebuilding (program.c)"},
    {"XDG_CACHE_HOME", "the system's; the cache folder for compiled kernels and tuning files is its clformer/ "
                       "(program.c)"},
    {"HOME", "the system's; without XDG_CACHE_HOME the cache folder is ~/.cache/clformer (program.c)"},
    {"CLF_ATTN_BWD", "split: the attention backward runs attn_bwd_dkdv and attn_bwd_dq even where attn_bwd_fused "
                     "(one group per (b, h), dQ and dK/dV from one recomputation; lanes 1 and local memory allowing) "
                     "would run (host/attention/attention.c)"},
    {"CLF_DECODE_ATTN", "tiled: decoding's attention runs the tiled forward instead of the decode kernels, a "
                        "reference for tests and measurements (host/attention/decode_attn.c)"},
    {"CLF_SEARCH", "host: the searches download every log-probability and rank on the host instead of taking the "
                   "device's best candidates, the reference the tests compare with (host/model/search.c)"},
};

/* Whether name is listed here or is a tunable's variable. */
static bool known(const char *name)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        if (!strcmp(settings[i].name, name))
            return true;
    size_t n;
    const struct clf_param_def *defs = clf_param_defs(&n);
    for (size_t i = 0; i < n; i++)
        if (defs[i].setting && !strcmp(defs[i].setting, name))
            return true;
    return false;
}

const char *clf_setting_get(const char *name)
{
    assert(known(name));
    (void)known;
    return getenv(name);
}
