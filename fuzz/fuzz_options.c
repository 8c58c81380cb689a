/* fuzz_options.c: the library's parsers of option and environment text
 * that `clformer` hands on: CLF_DEVICE_LIMITS (a comma-separated list of
 * key=size items with K/M/G suffixes, clf_device_shape and
 * clf_device_limits_check), the --device request (an index, a type or a
 * name, clf_devices_match) and --gemm / CLF_GEMM
 * (clf_gemm_backend_choose). The input is the three texts separated by
 * NUL bytes, tried on fake devices: no OpenCL is called. A shaped device
 * must never come out with a limit above its own. */
#include <stdlib.h>
#include <string.h>

#include "clformer.h"
#include "fuzz.h"
#include "runtime/settings.h"

static struct clf_device_info fake(int i, cl_device_type type, const char *name, cl_ulong mem, bool unified)
{
    struct clf_device_info d;
    memset(&d, 0, sizeof d);
    d.index = i;
    d.type = type;
    strcpy(d.platform_name, "Portable Computing Language");
    strcpy(d.device_name, name);
    strcpy(d.vendor, "Fuzz");
    strcpy(d.driver_version, "1.0");
    d.compute_units = 2;
    d.global_mem = mem;
    d.max_alloc = mem / 4;
    d.local_mem = 64 * 1024;
    d.max_work_group = 4096;
    d.host_unified = unified;
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[3];
    size_t len[3] = {0, 0, 0};
    int np = fuzz_split(data, size, part, len, 3);
    char *spec = fuzz_text(part[0], len[0]);
    char *request = fuzz_text(np > 1 ? part[1] : data, np > 1 ? len[1] : 0);
    char *gemm = fuzz_text(np > 2 ? part[2] : data, np > 2 ? len[2] : 0);

    struct clf_device_info devs[3] = {
        fake(0, CL_DEVICE_TYPE_CPU, "cpu-pthread-fuzz", 8ULL << 30, true),
        fake(1, CL_DEVICE_TYPE_GPU, "Fuzz GPU", 16ULL << 30, false),
        fake(2, CL_DEVICE_TYPE_ACCELERATOR, "Fuzz Accelerator", 1ULL << 30, false),
    };
    bool well_formed = clf_device_limits_check(spec) == CLF_OK;
    for (int i = 0; i < 3; i++) {
        struct clf_device_info before = devs[i];
        clf_status st = clf_device_shape(&devs[i], spec);
        if (st == CLF_OK && !well_formed)
            abort();  /* a spec refused outright yet applied */
        if (st != CLF_OK) {
            devs[i] = before;
            continue;
        }
        if (devs[i].local_mem > before.local_mem || devs[i].max_work_group > before.max_work_group ||
            devs[i].max_alloc > before.max_alloc || devs[i].global_mem > before.global_mem ||
            devs[i].max_alloc > devs[i].global_mem || (devs[i].host_unified && !before.host_unified))
            abort();  /* limits can only be lowered */
    }
    int m = clf_devices_match(devs, 3, request);
    if (m < -1 || m >= 3)
        abort();
    for (int i = 0; i < 3; i++) {
        enum clf_gemm_backend b;
        if (clf_gemm_backend_choose(&devs[i], gemm, &b) == CLF_OK && b == CLF_GEMM_HOST && !devs[i].host_unified)
            abort();
    }
    free(spec), free(request), free(gemm);
    return 0;
}
