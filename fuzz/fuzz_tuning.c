/* fuzz_tuning.c: the tuning file (clf_tuning_load): JSON syntax (the
 * library's reader, host/base/json.c), the format and version, the
 * key strings, every GEMM and kernel parameter in range, the constraints
 * between them, the shapes measured; once without a device to match and
 * once against a fake one, so that the key comparison runs too. */
#include <stdlib.h>
#include <string.h>

#include "clformer.h"
#include "clformer_tune.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(0, data, size);
    struct clf_tuning_record *r = malloc(sizeof *r);
    if (!r)
        return 0;
    if (clf_tuning_load(path, NULL, r) == CLF_OK) {
        char why[256];
        if (!clf_gemm_params_check(&r->gemm, NULL, why, sizeof why) ||
            !clf_kernel_params_check(&r->kernels, why, sizeof why) || r->nshapes < 0 ||
            r->nshapes > CLF_TUNING_MAX_SHAPES)
            abort();  /* loaded, yet not what the checks accept */
        struct clf_device_info dev;
        memset(&dev, 0, sizeof dev);
        memcpy(dev.platform_name, r->platform, strlen(r->platform) + 1);
        memcpy(dev.device_name, r->device, strlen(r->device) + 1);
        memcpy(dev.driver_version, r->driver, strlen(r->driver) + 1);
        dev.type = CL_DEVICE_TYPE_CPU;
        dev.max_work_group = (size_t)1 << 30;  /* no limit refuses what passed without a device */
        dev.local_mem = (cl_ulong)1 << 40;
        if (clf_tuning_load(path, &dev, r) != CLF_OK)
            abort();  /* the key it was written for must match */
    }
    free(r);
    return 0;
}
