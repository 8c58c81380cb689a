/* test_runtime.c: device selection, the program caches (memory and disk,
 * including a corrupted disk entry), build failures, tensors and the
 * atomic file write. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "runtime/ctx.h" /* to watch the profiler's list of launches */
#include "runtime/profile.h"
#include "runtime/settings.h"
#include "testutil.h"

static const char *good_src =
    "__kernel void scale(__global float *x, float s) { x[get_global_id(0)] *= s; }\n";

/* Each test gets its own cache folder so counters start from nothing. */
static void fresh_cache(void)
{
    tu_setting("XDG_CACHE_HOME", tu_tmpdir());
    tu_setting("CLF_KERNEL_CACHE", "on");  /* ours, on PoCL too (program.c, disk_cache_on) */
}

Test(devices, list_has_a_default)
{
    struct clf_device_info *d;
    int n;
    cr_assert_eq(clf_devices_list(&d, &n), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_gt(n, 0);
    int defaults = 0;
    for (int i = 0; i < n; i++) {
        defaults += d[i].is_default;
        cr_assert_gt(d[i].max_work_group, 0);
        cr_assert_gt(d[i].local_mem, 0);
        cr_assert_eq(d[i].index, i);
    }
    cr_assert_eq(defaults, 1);
    free(d);
}

/* The default is the GPU with the most global memory (ties: most compute
 * units), else likewise among CPUs: no device needed, the list is made up. */
Test(devices, default_prefers_the_largest_gpu_then_cpu)
{
    const cl_ulong GiB = 1ull << 30;
    struct clf_device_info d[5] = {
        {.type = CL_DEVICE_TYPE_CPU, .global_mem = 64 * GiB, .compute_units = 16},
        {.type = CL_DEVICE_TYPE_GPU, .global_mem = 2 * GiB, .compute_units = 96},   /* integrated */
        {.type = CL_DEVICE_TYPE_GPU, .global_mem = 16 * GiB, .compute_units = 40},
        {.type = CL_DEVICE_TYPE_GPU, .global_mem = 16 * GiB, .compute_units = 80},  /* same memory, more units */
        {.type = CL_DEVICE_TYPE_CPU, .global_mem = 128 * GiB, .compute_units = 8},
    };
    for (int i = 0; i < 5; i++)
        d[i].index = i;
    cr_assert_eq(clf_devices_match(d, 5, NULL), 3);
    cr_assert_eq(clf_devices_match(d, 5, ""), 3);
    cr_assert_eq(clf_devices_match(d, 5, "gpu"), 3);
    cr_assert_eq(clf_devices_match(d, 3, NULL), 2);   /* the integrated GPU comes first but is smaller */
    cr_assert_eq(clf_devices_match(d, 2, NULL), 1);   /* the only GPU, however small */
    cr_assert_eq(clf_devices_match(d, 1, NULL), 0);
    /* no GPU: the CPU with the most memory */
    struct clf_device_info cpus[3] = {d[0], d[4], d[0]};
    cr_assert_eq(clf_devices_match(cpus, 3, NULL), 1);
    cr_assert_eq(clf_devices_match(cpus, 3, "cpu"), 1);
    /* equal in everything: the first listed */
    struct clf_device_info twins[2] = {d[2], d[2]};
    cr_assert_eq(clf_devices_match(twins, 2, NULL), 0);
    /* neither GPU nor CPU: the first device; none at all: an error */
    struct clf_device_info acc[2] = {{.type = CL_DEVICE_TYPE_ACCELERATOR}, {.type = CL_DEVICE_TYPE_ACCELERATOR}};
    cr_assert_eq(clf_devices_match(acc, 2, NULL), 0);
    cr_assert_lt(clf_devices_match(acc, 0, NULL), 0);
    cr_assert(strstr(clf_ctx_error(NULL), "no OpenCL device"), "%s", clf_ctx_error(NULL));
}

/* Two drivers of one CPU, named as PoCL 3.1 and Intel's CPU runtime 2026.2
 * name themselves: the default is the one the tuning table prefers (PoCL,
 * measured to train and translate faster), whatever memory each reports; a
 * GPU still comes first, and Intel's runtime is still chosen by index or
 * name. */
Test(devices, default_cpu_follows_the_tables_preference)
{
    const cl_ulong GiB = 1ull << 30;
    struct clf_device_info d[3] = {
        {.type = CL_DEVICE_TYPE_CPU, .global_mem = 8 * GiB, .compute_units = 2},
        {.type = CL_DEVICE_TYPE_CPU, .global_mem = 12 * GiB, .compute_units = 2},
        {.type = CL_DEVICE_TYPE_GPU, .global_mem = 4 * GiB, .compute_units = 20},
    };
    snprintf(d[0].platform_name, sizeof d[0].platform_name, "Portable Computing Language");
    snprintf(d[0].vendor, sizeof d[0].vendor, "AuthenticAMD");
    snprintf(d[0].device_name, sizeof d[0].device_name, "pthread-skylake-avx512-AMD EPYC");
    snprintf(d[1].platform_name, sizeof d[1].platform_name, "Intel(R) OpenCL");
    snprintf(d[1].vendor, sizeof d[1].vendor, "Intel(R) Corporation");
    snprintf(d[1].device_name, sizeof d[1].device_name, "AMD EPYC");
    for (int i = 0; i < 3; i++)
        d[i].index = i;
    const struct clf_tuning_entry *e = NULL;
    cr_assert_gt(clf_tuning_prefer(&d[0], &e), clf_tuning_prefer(&d[1], NULL));
    cr_assert_not_null(e);
    cr_assert_not_null(strstr(e->name, "PoCL"), "%s", e->name);
    cr_assert_eq(clf_devices_match(d, 2, NULL), 0);  /* less memory reported, preferred */
    cr_assert_eq(clf_devices_match(d, 2, "cpu"), 0);
    cr_assert_eq(clf_devices_match(d, 2, "1"), 1);
    cr_assert_eq(clf_devices_match(d, 2, "Intel"), 1);
    cr_assert_eq(clf_devices_match(d, 3, NULL), 2);  /* a GPU before either */
    /* listed the other way round: the same device */
    struct clf_device_info swapped[2] = {d[1], d[0]};
    cr_assert_eq(clf_devices_match(swapped, 2, NULL), 1);
    /* PoCL on an Intel processor (vendor GenuineIntel) is PoCL still */
    struct clf_device_info pocl_intel = d[0];
    snprintf(pocl_intel.vendor, sizeof pocl_intel.vendor, "GenuineIntel");
    cr_assert_gt(clf_tuning_prefer(&pocl_intel, NULL), clf_tuning_prefer(&d[1], NULL));
}

Test(devices, select_by_index_name_and_type)
{
    struct clf_device_info *d;
    int n;
    cr_assert_eq(clf_devices_list(&d, &n), CLF_OK);
    char idx[16], part[8];
    snprintf(idx, sizeof idx, "%d", n - 1);
    cr_assert_eq(clf_devices_match(d, n, idx), n - 1);
    /* a case-swapped piece of the device's name finds it */
    snprintf(part, sizeof part, "%.4s", d[0].device_name);
    for (char *p = part; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    int m = clf_devices_match(d, n, part);
    cr_assert_geq(m, 0, "%s: %s", part, clf_ctx_error(NULL));
    cr_assert_eq(strncasecmp(d[m].device_name, part, 4), 0);
    if (d[0].type & CL_DEVICE_TYPE_CPU)
        cr_assert_geq(clf_devices_match(d, n, "cpu"), 0);
    free(d);

    clf_ctx_t *ctx = NULL;
    cr_assert_eq(clf_ctx_init(&ctx, idx), CLF_OK);
    cr_assert_eq(clf_ctx_device(ctx)->index, n - 1);
    clf_ctx_free(ctx);
}

/* A device's whole name chooses it even where an earlier device's name
 * contains it (Intel's runtime's "AMD EPYC" after PoCL's
 * "pthread-skylake-avx512-AMD EPYC"); a piece still takes the first. */
Test(devices, whole_name_before_a_piece)
{
    struct clf_device_info d[3] = {0};
    snprintf(d[0].device_name, sizeof d[0].device_name, "pthread-skylake-avx512-AMD EPYC");
    snprintf(d[0].platform_name, sizeof d[0].platform_name, "Portable Computing Language");
    snprintf(d[1].device_name, sizeof d[1].device_name, "AMD EPYC");
    snprintf(d[1].platform_name, sizeof d[1].platform_name, "Intel(R) OpenCL");
    snprintf(d[2].device_name, sizeof d[2].device_name, "gfx1100");
    snprintf(d[2].platform_name, sizeof d[2].platform_name, "AMD Accelerated Parallel Processing");
    for (int i = 0; i < 3; i++)
        d[i].index = i, d[i].type = i < 2 ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_GPU;
    cr_assert_eq(clf_devices_match(d, 3, "amd epyc"), 1);
    cr_assert_eq(clf_devices_match(d, 3, "EPYC"), 0);
    cr_assert_eq(clf_devices_match(d, 3, "intel"), 1);
    cr_assert_eq(clf_devices_match(d, 3, "AMD"), 0);
    cr_assert_eq(clf_devices_match(d, 3, "gfx1100"), 2);
}

Test(devices, unknown_name_is_a_clear_error)
{
    clf_ctx_t *ctx = NULL;
    cr_assert_eq(clf_ctx_init(&ctx, "no-such-device-xyz"), CLF_ERR_NO_DEVICE);
    cr_assert_null(ctx);
    cr_assert(strstr(clf_ctx_error(NULL), "no-such-device-xyz"), "%s", clf_ctx_error(NULL));
    cr_assert(strstr(clf_ctx_error(NULL), "clformer devices"), "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_ctx_init(&ctx, "99"), CLF_ERR_NO_DEVICE);
    cr_assert(strstr(clf_ctx_error(NULL), "device 99 does not exist"), "%s", clf_ctx_error(NULL));
}

/* The environment itself (setenv here only before any device works), then
 * the same setting given for the process, which wins over it. */
Test(devices, env_variable_chooses)
{
    cr_assert_eq(setenv("CLF_DEVICE", "nothing-matches-this", 1), 0);
    clf_ctx_t *ctx = NULL;
    cr_assert_eq(clf_ctx_init(&ctx, NULL), CLF_ERR_NO_DEVICE);
    /* the refusal names where the request came from */
    cr_assert(strstr(clf_ctx_error(NULL), "CLF_DEVICE=nothing-matches-this: no device matches"), "%s",
              clf_ctx_error(NULL));
    tu_setting("CLF_DEVICE", "0");
    cr_assert_eq(clf_ctx_init(&ctx, NULL), CLF_OK, "%s", clf_ctx_error(NULL));
    clf_ctx_free(ctx);
    cr_assert_str_eq(clf_setting_get("CLF_DEVICE"), "0");
    tu_setting("CLF_DEVICE", NULL); /* unset for the process, though the environment holds it */
    cr_assert_null(clf_setting_get("CLF_DEVICE"));
    cr_assert_str_eq(getenv("CLF_DEVICE"), "nothing-matches-this");
    cr_assert_eq(clf_ctx_init(&ctx, NULL), CLF_OK, "%s", clf_ctx_error(NULL));
    clf_ctx_free(ctx);
    cr_assert_eq(clf_setting_set("CLF_NO_SUCH_SETTING", "1"), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(NULL), "'CLF_NO_SUCH_SETTING' is not a setting"), "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_setting_set(NULL, "1"), CLF_ERR_ARG);
}

/* Settings given and read from four threads at once: every read sees a
 * value that was given (never a freed or torn one). */
struct setter {
    int id, bad;
};

static void *set_and_read(void *arg)
{
    struct setter *s = arg;
    static const char *values[] = {"host", "tiled", NULL};
    for (int i = 0; i < 20000; i++) {
        if (s->id < 2)
            clf_setting_set(s->id ? "CLF_SEARCH" : "CLF_DECODE_ATTN", values[i % 3]);
        const char *v = clf_setting_get(s->id & 1 ? "CLF_SEARCH" : "CLF_DECODE_ATTN");
        s->bad += v && strcmp(v, "host") && strcmp(v, "tiled");
    }
    return NULL;
}

Test(settings, given_and_read_from_threads_at_once, .timeout = TU_TIMEOUT(60))
{
    pthread_t t[4];
    struct setter s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (struct setter){i, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, set_and_read, &s[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(s[i].bad, 0, "thread %d read %d values that were never given", i, s[i].bad);
    }
    cr_assert_str_eq(clf_setting_get("CLF_SEARCH"), "tiled"); /* the last given: i = 19999, values[1] */
    cr_assert_str_eq(clf_setting_get("CLF_DECODE_ATTN"), "tiled");
}

Test(cache, memory_then_disk)
{
    fresh_cache();
    struct clf_cache_stats s;
    clf_ctx_t *ctx = tu_ctx();
    cl_program p1, p2;
    cr_assert_eq(clf_program_from_source(ctx, good_src, "-DX=1", &p1), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_program_from_source(ctx, good_src, "-DX=1", &p2), CLF_OK);
    cr_assert_eq(p1, p2);
    clf_ctx_cache_stats(ctx, &s);
    cr_assert_eq(s.programs_built, 1);
    cr_assert_eq(s.programs_reused, 1);
    /* other options are another program */
    cr_assert_eq(clf_program_from_source(ctx, good_src, "-DX=2", &p2), CLF_OK);
    cr_assert_neq(p1, p2);
    clf_ctx_free(ctx);

    /* a second context (a second run) compiles nothing */
    ctx = tu_ctx();
    cr_assert_eq(clf_program_from_source(ctx, good_src, "-DX=1", &p1), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_ctx_cache_stats(ctx, &s);
    cr_assert_eq(s.programs_built, 0);
    cr_assert_eq(s.programs_loaded, 1);

    /* and the loaded binary runs */
    cl_int err;
    cl_kernel k = clCreateKernel(p1, "scale", &err);
    cr_assert_eq(err, CL_SUCCESS);
    float x[5] = {1, 2, 3, 4, 5};
    clf_tensor t = tu_upload(ctx, x, 5);
    float s2 = 2;
    clSetKernelArg(k, 0, sizeof t.buf, &t.buf);
    clSetKernelArg(k, 1, sizeof s2, &s2);
    size_t g = 5;
    cr_assert_eq(clEnqueueNDRangeKernel(clf_ctx_queue(ctx), k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
    float *y = tu_download(ctx, &t, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_float_eq(y[i], 2 * x[i], 0);
    free(y);
    clReleaseKernel(k);
    clf_tensor_free(&t);
    clf_ctx_free(ctx);
}

/* Damages every entry of the cache folder with `how`. */
static int damage(const char *how)
{
    char dir[4096];
    cr_assert_eq(clf_cache_dir(dir, sizeof dir), CLF_OK);
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".bin"))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r+b");
        cr_assert_not_null(f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        if (!strcmp(how, "truncate")) {
            cr_assert_eq(truncate(path, size / 2), 0);
        } else {  /* flip a byte in the middle of the binary */
            fseek(f, size / 2, SEEK_SET);
            int c = fgetc(f);
            fseek(f, size / 2, SEEK_SET);
            fputc(c ^ 0x5a, f);
        }
        fclose(f);
        n++;
    }
    closedir(d);
    return n;
}

static void survives(const char *how)
{
    fresh_cache();
    clf_ctx_t *ctx = tu_ctx();
    cl_program p;
    cr_assert_eq(clf_program_from_source(ctx, good_src, NULL, &p), CLF_OK);
    clf_ctx_free(ctx);
    cr_assert_eq(damage(how), 1);

    struct clf_cache_stats s;
    ctx = tu_ctx();
    cr_assert_eq(clf_program_from_source(ctx, good_src, NULL, &p), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_ctx_cache_stats(ctx, &s);
    cr_assert_eq(s.disk_rejected, 1, "%s entry was trusted", how);
    cr_assert_eq(s.programs_built, 1);
    clf_ctx_free(ctx);

    /* the rebuilt entry replaced the bad one */
    ctx = tu_ctx();
    cr_assert_eq(clf_program_from_source(ctx, good_src, NULL, &p), CLF_OK);
    clf_ctx_cache_stats(ctx, &s);
    cr_assert_eq(s.programs_loaded, 1);
    cr_assert_eq(s.disk_rejected, 0);
    clf_ctx_free(ctx);
}

Test(cache, truncated_entry_is_rebuilt) { survives("truncate"); }
Test(cache, corrupted_entry_is_rebuilt) { survives("flip"); }

Test(build, failure_returns_the_log)
{
    fresh_cache();
    clf_ctx_t *ctx = tu_ctx();
    cl_program p;
    const char *bad = "__kernel void broken(__global float *x) { x[0] = undeclared_thing; }\n";
    cr_assert_eq(clf_program_from_source(ctx, bad, NULL, &p), CLF_ERR_BUILD);
    cr_assert(strstr(clf_ctx_error(ctx), "build log"), "%s", clf_ctx_error(ctx));
    cr_assert(strstr(clf_ctx_error(ctx), "undeclared_thing"), "log lacks the culprit: %s", clf_ctx_error(ctx));
    /* the context is still usable */
    cr_assert_eq(clf_program_from_source(ctx, good_src, NULL, &p), CLF_OK);
    clf_ctx_free(ctx);
}

Test(build, kernel_dir_overrides_embedded_sources)
{
    fresh_cache();
    const char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/common.h", dir);
    FILE *f = fopen(path, "w");
    fputs("#define SCALE 3.0f\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/probe.cl", dir);
    f = fopen(path, "w");
    fputs("#include \"common.h\"\n__kernel void probe(__global float *x) { x[0] = SCALE; }\n", f);
    fclose(f);
    tu_setting("CLF_KERNEL_DIR", dir);
    clf_ctx_t *ctx = tu_ctx();
    cl_kernel k;
    cr_assert_eq(clf_kernel_get(ctx, "probe.cl", NULL, "probe", &k), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_kernel_get(ctx, "missing.cl", NULL, "probe", &k), CLF_ERR_IO);
    cr_assert(strstr(clf_ctx_error(ctx), "missing.cl"), "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_kernel_get(ctx, "probe.cl", NULL, "nope", &k), CLF_ERR_BUILD);
    clf_ctx_free(ctx);
}

Test(tensor, views_and_round_trip)
{
    clf_ctx_t *ctx = tu_ctx();
    size_t shape[2] = {3, 5};
    clf_tensor t, v;
    cr_assert_eq(clf_tensor_init(ctx, &t, 2, shape), CLF_OK);
    float x[15];
    for (int i = 0; i < 15; i++)
        x[i] = (float)i;
    cr_assert_eq(clf_tensor_upload(ctx, &t, x), CLF_OK);
    size_t vs[1] = {5};
    cr_assert_eq(clf_tensor_view(ctx, &t, 5, 1, vs, &v), CLF_OK);
    cr_assert_eq(clf_tensor_fill(ctx, &v, -1.0f), CLF_OK);
    float y[15];
    cr_assert_eq(clf_tensor_download(ctx, &t, y), CLF_OK);
    for (int i = 0; i < 15; i++)
        cr_assert_float_eq(y[i], i >= 5 && i < 10 ? -1.0f : (float)i, 0);
    size_t big[1] = {11};
    cr_assert_eq(clf_tensor_view(ctx, &t, 5, 1, big, &v), CLF_ERR_ARG);
    size_t zero[2] = {0, 4};
    clf_tensor z;
    cr_assert_eq(clf_tensor_init(ctx, &z, 2, zero), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "dimension 0 is zero"), "%s", clf_ctx_error(ctx));
    clf_tensor_free(&t);
    clf_ctx_free(ctx);
}

/* int32 tensors: a round trip, views that keep the type, and the checks
 * that keep floats and ints apart (sizes in elements of the dtype). */
Test(tensor, int32_round_trip_and_dtype_checks)
{
    clf_ctx_t *ctx = tu_ctx();
    size_t n = 7, two = 2;
    int32_t ids[7] = {3, -1, 0, 2147483647, -2147483647 - 1, 42, 5}, back[7] = {0};
    clf_tensor t, v, f;
    cr_assert_eq(clf_tensor_init_dtype(ctx, &t, CLF_I32, 1, &n), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(t.dtype, CLF_I32);
    cr_assert_eq(clf_tensor_upload_i32(ctx, &t, ids), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_tensor_download_i32(ctx, &t, back), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_arr_eq(back, ids, sizeof ids);
    cr_assert_eq(clf_tensor_view(ctx, &t, 5, 1, &two, &v), CLF_OK);
    cr_assert_eq(v.dtype, CLF_I32);
    int32_t tail[2];
    cr_assert_eq(clf_tensor_download_i32(ctx, &v, tail), CLF_OK);
    cr_assert(tail[0] == 42 && tail[1] == 5);
    /* floats into an int tensor, ints out of a float one, a float fill */
    float x[7] = {0};
    cr_assert_eq(clf_tensor_upload(ctx, &t, x), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "is i32, want f32"), "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_tensor_fill(ctx, &t, 1.0f), CLF_ERR_ARG);
    cr_assert_eq(clf_tensor_init(ctx, &f, 1, &n), CLF_OK);
    cr_assert_eq(f.dtype, CLF_F32);
    cr_assert_eq(clf_tensor_download_i32(ctx, &f, back), CLF_ERR_ARG);
    cr_assert_eq(clf_tensor_copy(ctx, &f, &t), CLF_ERR_ARG);
    clf_tensor_free(&f);
    clf_tensor_free(&t);
    clf_ctx_free(ctx);
}

/* Wrapping the last message in a new one reads the buffer it writes: the
 * result must be the plain concatenation (it once garbled checkpoint errors
 * into "m.safetensors: m.safetensors: l/heads ..."). */
Test(errors, wrapping_an_earlier_message)
{
    clf_error_set(NULL, CLF_ERR_ARG, "d_model/heads is %d; attention supports head sizes up to %d", 25000, 256);
    clf_error_set(NULL, CLF_ERR_FORMAT, "%s: %s", "model.safetensors", clf_ctx_error(NULL));
    cr_assert_str_eq(clf_ctx_error(NULL),
                     "model.safetensors: d_model/heads is 25000; attention supports head sizes up to 256");
    clf_ctx_t *ctx = tu_ctx();
    clf_error_set(ctx, CLF_ERR_ARG, "inner");
    clf_error_set(ctx, CLF_ERR_ARG, "outer: %s (%s)", clf_ctx_error(ctx), clf_ctx_error(ctx));
    cr_assert_str_eq(clf_ctx_error(ctx), "outer: inner (inner)");
    clf_ctx_free(ctx);
}

/* The file's whole text, or NULL when it cannot be read. */
static char *slurp(const char *path)
{
    char *text;
    size_t len;
    return clf_file_read(path, 1 << 20, &text, &len) == CLF_OK ? text : NULL;
}

/* The names in dir besides . and .., joined by spaces in sorted order. */
static void dir_names(const char *dir, char *out, size_t len)
{
    struct dirent **e;
    int n = scandir(dir, &e, NULL, alphasort);
    cr_assert_geq(n, 0, "scandir %s", dir);
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(e[i]->d_name, ".") && strcmp(e[i]->d_name, ".."))
            k += (size_t)snprintf(out + k, len - k, "%s%s", k ? " " : "", e[i]->d_name);
        free(e[i]);
    }
    free(e);
}

/* The atomic write (base/files.h): the new file whole, or the old one as
 * it was, and never a temporary left behind, whichever step fails. */
Test(files, atomic_write_replaces_whole_or_not_at_all)
{
    const char *dir = tu_tmpdir();
    char *path = clf_path_join(dir, "f.txt"), *sub = clf_path_join(dir, "sub"), *text;
    cr_assert(path && sub);
    cr_assert_eq(clf_file_write_atomic(path, "old\n", 4), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_str_eq(text = slurp(path), "old\n");
    free(text);

    /* the writer gives up half way: the old file stays */
    struct clf_file_out out;
    cr_assert_eq(clf_file_out_open(&out, path), CLF_OK, "%s", clf_ctx_error(NULL));
    fputs("half of the new", out.f);
    errno = ENOSPC;
    cr_assert_eq(clf_file_out_close(&out, false), CLF_ERR_IO);
    cr_assert(strstr(clf_ctx_error(NULL), "f.txt: No space left on device"), "%s",
              clf_ctx_error(NULL));
    cr_assert_eq(errno, ENOSPC);
    cr_assert_str_eq(text = slurp(path), "old\n");
    free(text);

    /* the rename fails (a folder is in the way): the folder stays */
    cr_assert_eq(mkdir(sub, 0755), 0);
    cr_assert_eq(clf_file_write_atomic(sub, "x", 1), CLF_ERR_IO);
    cr_assert(strstr(clf_ctx_error(NULL), "cannot write ") && strstr(clf_ctx_error(NULL), "/sub: "), "%s",
              clf_ctx_error(NULL));
    struct stat st;
    cr_assert(stat(sub, &st) == 0 && S_ISDIR(st.st_mode));

    /* the temporary cannot be created: nothing is */
    char *nowhere = clf_path_join(sub, "no/such/folder/f.txt");
    cr_assert_eq(clf_file_write_atomic(nowhere, "x", 1), CLF_ERR_IO);
    cr_assert_eq(errno, ENOENT);

    /* a streamed write that succeeds replaces the file */
    cr_assert_eq(clf_file_out_open(&out, path), CLF_OK);
    fprintf(out.f, "new %d\n", 2);
    cr_assert_eq(clf_file_out_close(&out, true), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_str_eq(text = slurp(path), "new 2\n");
    free(text);

    char names[256];
    dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "f.txt sub", "left behind in %s: %s", dir, names);
    dir_names(sub, names, sizeof names);
    cr_assert_str_eq(names, "");
    free(nowhere);
    free(sub);
    free(path);
}

/* A long profiled run folds finished launches into per-name totals instead
 * of keeping every event: the list stays bounded, the counts exact. */
Test(profile, long_runs_keep_bounded_lists, .timeout = TU_TIMEOUT(120))
{
    clf_ctx_t *ctx = tu_ctx();
    cr_assert_eq(clf_ctx_profile_start(ctx), CLF_OK, "%s", clf_ctx_error(ctx));
    float x[64];
    tu_fill(x, 64, 3, -1, 1);
    clf_tensor a = tu_upload(ctx, x, 64), y = tu_upload(ctx, x, 64);
    const size_t launches = 2 * CLF_PROFILE_FOLD_AT + 100;
    for (size_t i = 0; i < launches; i++) {
        cr_assert_eq(clf_add(ctx, &y, &a, &a), CLF_OK, "%s", clf_ctx_error(ctx));
        if (i % 256 == 255)
            cr_assert_eq(clf_ctx_finish(ctx), CLF_OK);
    }
    cr_assert_leq(ctx->cap_events, CLF_PROFILE_FOLD_AT, "the profiler kept %zu events", ctx->cap_events);
    struct clf_profile_entry *e;
    size_t n;
    cr_assert_eq(clf_ctx_profile_report(ctx, &e, &n), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(n, 1, "%zu kernel names for one op", n);
    cr_assert_eq(e[0].calls, launches, "%s: %u calls", e[0].name, e[0].calls);
    cr_assert_geq(e[0].seconds, 0);
    free(e);
    /* the report starts counting afresh */
    cr_assert_eq(clf_add(ctx, &y, &a, &a), CLF_OK);
    cr_assert_eq(clf_ctx_profile_report(ctx, &e, &n), CLF_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(e[0].calls, 1);
    free(e);
    clf_tensor_free(&a), clf_tensor_free(&y);
    clf_ctx_free(ctx);
}

/* The context counts every kernel it enqueues, profiled or not, and a
 * launch of nothing (an empty grid) is none; an extension is matched as
 * a whole word (bench peak's float16 and float64 ask for theirs). */
Test(profile, kernel_launches_are_counted_always)
{
    clf_ctx_t *ctx = tu_ctx();
    float x[64];
    tu_fill(x, 64, 3, -1, 1);
    clf_tensor a = tu_upload(ctx, x, 64), y = tu_upload(ctx, x, 64);
    uint64_t n0 = clf_ctx_launches(ctx);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(clf_add(ctx, &y, &a, &a), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_ctx_launches(ctx) - n0, 5);
    cr_assert_eq(clf_ctx_profile_start(ctx), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_peak_empty(ctx), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_ctx_launches(ctx) - n0, 6, "profiling on or off");
    cr_assert_eq(clf_ctx_finish(ctx), CLF_OK);
    const struct clf_device_info *di = clf_ctx_device(ctx);
    cr_assert_not(clf_device_has_extension(di, "cl_khr_fp"), "a prefix is not an extension");
    cr_assert_not(clf_device_has_extension(di, ""));
    cr_assert_not(clf_device_has_extension(di, "cl_clformer_no_such_extension"));
    /* every OpenCL 1.2 device lists this one (section 9 of the spec) */
    cr_assert(clf_device_has_extension(di, "cl_khr_global_int32_base_atomics"));
    clf_tensor_free(&a), clf_tensor_free(&y);
    clf_ctx_free(ctx);
}
