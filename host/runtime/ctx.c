/* ctx.c: finding OpenCL devices, choosing one, and the context that owns
 * it (one cl_context, one in-order queue). */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"
#include "cl_error.h"
#include "ctx.h"
#include "gemm_paths.h"
#include "host_ptrs.h"
#include "profile.h"
#include "program.h"
#include "scratch.h"
#include "settings.h"

static void info_str(cl_device_id d, cl_device_info what, char *out, size_t len)
{
    /* a longer value than the field (PoCL's device version runs past 64
     * characters) is read whole and cut, not lost */
    size_t need = 0;
    out[0] = 0;
    if (clGetDeviceInfo(d, what, 0, NULL, &need) != CL_SUCCESS || need == 0)
        return;
    char *tmp = malloc(need);
    if (tmp && clGetDeviceInfo(d, what, need, tmp, NULL) == CL_SUCCESS)
        snprintf(out, len, "%.*s", (int)(need - 1), tmp);
    free(tmp);
    /* some drivers pad names with spaces */
    for (size_t n = strlen(out); n > 0 && isspace((unsigned char)out[n - 1]); n--)
        out[n - 1] = 0;
}

static void fill_info(struct clf_device_info *di, cl_platform_id p, cl_device_id d)
{
    memset(di, 0, sizeof *di);
    di->platform = p;
    di->device = d;
    if (clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof di->platform_name, di->platform_name, NULL))
        di->platform_name[0] = 0;
    di->platform_name[sizeof di->platform_name - 1] = 0;
    info_str(d, CL_DEVICE_NAME, di->device_name, sizeof di->device_name);
    info_str(d, CL_DEVICE_VENDOR, di->vendor, sizeof di->vendor);
    info_str(d, CL_DRIVER_VERSION, di->driver_version, sizeof di->driver_version);
    info_str(d, CL_DEVICE_VERSION, di->device_version, sizeof di->device_version);
    info_str(d, CL_DEVICE_OPENCL_C_VERSION, di->c_version, sizeof di->c_version);
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof di->type, &di->type, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof di->compute_units, &di->compute_units, NULL);
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof di->global_mem, &di->global_mem, NULL);
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof di->local_mem, &di->local_mem, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof di->max_alloc, &di->max_alloc, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof di->max_work_group, &di->max_work_group, NULL);
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    di->host_unified = unified == CL_TRUE;
    /* a CPU device runs on the host's processor, whichever driver offers
     * it: the tuning table keys it on what that processor has */
    if (di->type & CL_DEVICE_TYPE_CPU)
        di->cpu_features = clf_cpu_features();
    /* CLF_DEVICE_LIMITS: a device it would raise keeps its own limits here
     * (the list stays usable); clf_ctx_init refuses to open that one */
    struct clf_device_info shaped = *di;
    if (clf_device_shape(&shaped, clf_setting_get("CLF_DEVICE_LIMITS")) == CLF_OK)
        *di = shaped;
}

/* Listing devices and opening one hold this process-wide lock: PoCL 3.1
 * found no device when two threads queried the platforms at once, and
 * opening a context also applies process-wide settings (OpenBLAS's thread
 * count, CLBlast's parameters for the device). Both are rare and short
 * beside the work a context then does. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

static clf_status devices_list(struct clf_device_info **out, int *n)
{
    cl_uint np = 0;
    cl_platform_id *plats = NULL;
    struct clf_device_info *devs = NULL;
    int count = 0;
    clf_status st = CLF_OK;

    *out = NULL;
    *n = 0;
    if ((st = clf_device_limits_check(clf_setting_get("CLF_DEVICE_LIMITS"))) != CLF_OK)
        return st;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && np == 0))
        return clf_error_set(NULL, CLF_ERR_NO_DEVICE,
                             "no OpenCL platform found: install a driver (for the CPU: "
                             "apt-get install pocl-opencl-icd) and check /etc/OpenCL/vendors");
    CLF_CL_CHECK(NULL, err, "clGetPlatformIDs");
    plats = calloc(np, sizeof *plats);
    if (!plats)
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory listing platforms");
    CLF_CL_TRY(NULL, clGetPlatformIDs(np, plats, NULL));

    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0)
            continue;  /* a platform without devices is not an error */
        cl_device_id *ids = calloc(nd, sizeof *ids);
        struct clf_device_info *grown = realloc(devs, (count + nd) * sizeof *devs);
        if (!ids || !grown) {
            free(ids);
            if (grown)
                devs = grown;
            st = clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory listing devices");
            goto fail;
        }
        devs = grown;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) == CL_SUCCESS) {
            for (cl_uint d = 0; d < nd; d++) {
                fill_info(&devs[count], plats[p], ids[d]);
                devs[count].index = count;
                devs[count].platform_index = (int)p;
                count++;
            }
        }
        free(ids);
    }
    free(plats);
    plats = NULL;
    if (count == 0) {
        st = clf_error_set(NULL, CLF_ERR_NO_DEVICE,
                           "OpenCL platforms were found but none has a device: check the driver "
                           "(for the CPU: apt-get install pocl-opencl-icd)");
        goto fail;
    }
    int def = clf_devices_match(devs, count, NULL);
    if (def >= 0)
        devs[def].is_default = true;
    *out = devs;
    *n = count;
    return CLF_OK;
fail:
    free(plats);
    free(devs);
    return st;
}

clf_status clf_devices_list(struct clf_device_info **out, int *n)
{
    pthread_mutex_lock(&open_lock);
    clf_status st = devices_list(out, n);
    pthread_mutex_unlock(&open_lock);
    return st;
}

/* Whether a is a better default than b, both of type t: among CPUs the
 * tuning table's preference first (every CPU device runs on the host's
 * processor; their memories are each driver's accounting of the same RAM),
 * then the most global memory (a discrete GPU before an integrated one),
 * then the most compute units. */
static bool better_default(const struct clf_device_info *a, const struct clf_device_info *b, cl_device_type t)
{
    /* two devices CLF_DEVICE_LIMITS shaped (CPUs run as GPUs: CI's gpu
     * runs) keep their preference as CPUs, so that shaping does not change
     * which driver is the default */
    if ((t & CL_DEVICE_TYPE_CPU) || (a->shaped[0] && b->shaped[0])) {
        struct clf_device_info ca = *a, cb = *b;
        ca.type = cb.type = CL_DEVICE_TYPE_CPU;
        int pa = clf_tuning_prefer(&ca, NULL), pb = clf_tuning_prefer(&cb, NULL);
        if (pa != pb)
            return pa > pb;
    }
    return a->global_mem > b->global_mem ||
           (a->global_mem == b->global_mem && a->compute_units > b->compute_units);
}

/* The best device of type t by better_default (ties: the first listed).
 * -1 when there is none. */
static int best_of_type(const struct clf_device_info *devs, int n, cl_device_type t)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if ((devs[i].type & t) && (best < 0 || better_default(&devs[i], &devs[best], t)))
            best = i;
    return best;
}

int clf_devices_match(const struct clf_device_info *devs, int n, const char *req)
{
    if (!req || !*req) {
        int i = best_of_type(devs, n, CL_DEVICE_TYPE_GPU);
        if (i < 0)
            i = best_of_type(devs, n, CL_DEVICE_TYPE_CPU);
        if (i < 0 && n > 0)
            i = 0;
        if (i < 0)
            clf_error_set(NULL, CLF_ERR_NO_DEVICE, "no OpenCL device found");
        return i;
    }
    char *end = NULL;
    long idx = strtol(req, &end, 10);
    if (end != req && *end == 0) {
        if (idx >= 0 && idx < n)
            return (int)idx;
        clf_error_set(NULL, CLF_ERR_NO_DEVICE,
                      "device %ld does not exist: there are %d (0..%d); run 'clformer devices'",
                      idx, n, n - 1);
        return -1;
    }
    static const struct { const char *name; cl_device_type type; } kinds[] = {
        {"gpu", CL_DEVICE_TYPE_GPU}, {"cpu", CL_DEVICE_TYPE_CPU},
        {"accelerator", CL_DEVICE_TYPE_ACCELERATOR}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (clf_contains_nocase(req, kinds[k].name) && strlen(req) == strlen(kinds[k].name)) {
            int i = best_of_type(devs, n, kinds[k].type);
            if (i < 0)
                clf_error_set(NULL, CLF_ERR_NO_DEVICE,
                              "no %s device found among %d; run 'clformer devices'", req, n);
            return i;
        }
    }
    /* a device's whole name first (Intel's runtime calls this CPU "AMD
     * EPYC", which PoCL's "pthread-skylake-avx512-AMD EPYC" contains), then
     * the first device with the request in its device or platform name */
    for (int i = 0; i < n; i++)
        if (clf_contains_nocase(devs[i].device_name, req) && strlen(devs[i].device_name) == strlen(req))
            return i;
    for (int i = 0; i < n; i++)
        if (clf_contains_nocase(devs[i].device_name, req) || clf_contains_nocase(devs[i].platform_name, req))
            return i;
    clf_error_set(NULL, CLF_ERR_NO_DEVICE,
                  "no device matches '%s': give an index, gpu, cpu, or part of a platform or "
                  "device name from 'clformer devices'", req);
    return -1;
}

static clf_status ctx_open(clf_ctx_t **out, const char *request)
{
    struct clf_device_info *devs = NULL;
    int n = 0;
    clf_status st;
    cl_int err;
    clf_ctx_t *ctx = NULL;

    *out = NULL;
    bool from_env = !request;
    if (from_env)
        request = clf_setting_get("CLF_DEVICE");
    if ((st = devices_list(&devs, &n)) != CLF_OK)
        return st;
    int i = clf_devices_match(devs, n, request);
    if (i < 0) {
        free(devs);
        if (!from_env || !request || !*request)
            return CLF_ERR_NO_DEVICE;
        /* the request came from the environment: say so */
        char why[CLF_ERRMSG_LEN];
        snprintf(why, sizeof why, "%s", clf_ctx_error(NULL));
        return clf_error_set(NULL, CLF_ERR_NO_DEVICE, "CLF_DEVICE=%s: %s", request, why);
    }
    ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        free(devs);
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory creating a context");
    }
    ctx->dev = devs[i];
    free(devs);
    const char *limits = clf_setting_get("CLF_DEVICE_LIMITS");
    if (limits && *limits && !ctx->dev.shaped[0]) {
        /* fill_info left this device unshaped: say why */
        struct clf_device_info own;
        fill_info(&own, ctx->dev.platform, ctx->dev.device);
        st = clf_device_shape(&own, limits);
        free(ctx);
        return st ? st : clf_error_set(NULL, CLF_ERR_ARG, "CLF_DEVICE_LIMITS '%s' was not applied", limits);
    }
    ctx->max_local_mem = (size_t)ctx->dev.local_mem;
    ctx->max_wg = ctx->dev.max_work_group;
    cl_device_fp_config fp = 0;
    if (clGetDeviceInfo(ctx->dev.device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS)
        ctx->fp_fma = (fp & CL_FP_FMA) != 0;
    /* attn_bwd_fused blocks its rows by it (-DNATIVE_VEC); 16 is the kernels' default */
    cl_uint vec = 0;
    if (clGetDeviceInfo(ctx->dev.device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof vec, &vec, NULL) != CL_SUCCESS ||
        vec == 0)
        vec = 16;
    ctx->native_vec_float = vec;
    /* GEMMs: the host's BLAS on a CPU's own memory, or CLBlast (CLF_GEMM) */
    if ((st = clf_gemm_backend_choose(&ctx->dev, NULL, &ctx->gemm)) || (st = clf_blas_threads_apply(ctx->gemm))) {
        free(ctx);
        return st;
    }

    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ctx->dev.platform, 0};
    ctx->context = clCreateContext(props, 1, &ctx->dev.device, NULL, NULL, &err);
    CLF_CL_CHECK(NULL, err, "clCreateContext");
    ctx->queue = clCreateCommandQueue(ctx->context, ctx->dev.device, 0, &err);
    CLF_CL_CHECK(NULL, err, "clCreateCommandQueue");
    clf_host_ptrs_probe(ctx);
    /* GEMM parameters for this device. A refused tuning must not stop a
     * user: the context runs on CLBlast's defaults and clf_tuning_query
     * reports the refusal (clformer tune --show, bench) */
    if ((st = clf_tuning_apply(ctx)) != CLF_OK) {
        if (ctx->tuning_status == CLF_OK) {  /* not a refusal: out of host memory */
            clf_error_set(NULL, st, "%s", ctx->error);
            goto fail;
        }
        ctx->error[0] = 0;  /* the refusal stays in tuning_status and tuning_message */
        st = CLF_OK;
    }
    const char *prof = clf_setting_get("CLF_PROFILE");
    if (prof && *prof && strcmp(prof, "0") && (st = clf_ctx_profile_start(ctx)) != CLF_OK) {
        clf_error_set(NULL, st, "%s", ctx->error);
        goto fail;
    }
    *out = ctx;
    return CLF_OK;
fail:
    clf_ctx_free(ctx);
    return st;
}

clf_status clf_ctx_init(clf_ctx_t **out, const char *request)
{
    pthread_mutex_lock(&open_lock);
    clf_status st = ctx_open(out, request);
    pthread_mutex_unlock(&open_lock);
    return st;
}

const struct clf_device_info *clf_ctx_device(const clf_ctx_t *ctx) { return &ctx->dev; }
cl_context clf_ctx_cl_context(const clf_ctx_t *ctx) { return ctx->context; }
cl_command_queue clf_ctx_queue(const clf_ctx_t *ctx) { return ctx->queue; }
uint64_t clf_ctx_launches(const clf_ctx_t *ctx) { return ctx->launches; }

void clf_ctx_cache_stats(const clf_ctx_t *ctx, struct clf_cache_stats *out)
{
    *out = ctx->stats;
}

clf_status clf_ctx_finish(clf_ctx_t *ctx)
{
    clf_status st = CLF_OK;
    CLF_CL_TRY(ctx, clFinish(ctx->queue));
fail:
    return st;
}

void clf_ctx_free(clf_ctx_t *ctx)
{
    if (!ctx)
        return;
    if (ctx->queue)
        clFinish(ctx->queue);
    for (size_t i = 0; i < ctx->nevents; i++)
        if (ctx->events[i].event)
            clReleaseEvent(ctx->events[i].event);
    free(ctx->events);
    clf_gemm_packed_free(ctx);
    clf_gemm_dnnl_f32_free(ctx);
    clf_scratch_free(ctx);
    free(ctx->totals);
    clf_programs_release(ctx);
    if (ctx->queue)
        clReleaseCommandQueue(ctx->queue);
    if (ctx->context)
        clReleaseContext(ctx->context);
    free(ctx);
}
