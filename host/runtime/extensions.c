/* extensions.c: whether a device lists an OpenCL extension
 * (clf_device_has_extension), the one reading of CL_DEVICE_EXTENSIONS
 * that the float16 GEMMs and bench peak's float16 and float64 probes ask.
 * Its own file, below the context and GEMM, which both reach it. */
#include <stdlib.h>
#include <string.h>

#include "clformer/advanced/runtime.h"

bool clf_device_has_extension(const struct clf_device_info *di, const char *name)
{
    size_t len = 0, n = strlen(name);
    if (!n || clGetDeviceInfo(di->device, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS || len == 0)
        return false;
    char *ext = malloc(len + 1);
    bool yes = false;
    if (ext && clGetDeviceInfo(di->device, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
        ext[len] = 0;
        /* a whole word: cl_khr_fp16 and not a longer name beginning so */
        for (const char *p = ext; !yes && (p = strstr(p, name)); p += n)
            yes = (p == ext || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ');
    }
    free(ext);
    return yes;
}
