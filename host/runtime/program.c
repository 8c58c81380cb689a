/* program.c: run-time compilation of cl/ kernels, cached twice: in memory
 * per context (source + options → cl_program and its kernels), and on disk
 * as program binaries keyed by a hash of source, options, platform, device
 * and driver. A disk entry is checked (magic, key, size, checksum) and a
 * bad one is rebuilt, never trusted. Entries are written to a temporary
 * file and renamed, so a crash never leaves half an entry. CLF_KERNEL_CACHE=off
 * turns the disk cache off (disk_cache_on). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "cl_error.h"
#include "clformer.h"
#include "ctx.h"
#include "kernels.h"
#include "profile.h"
#include "program.h"
#include "settings.h"

#define CACHE_MAGIC "CLFBIN01"
#define MAX_INCLUDE_DEPTH 4

struct clf_kernel_entry {
    char name[64];
    cl_kernel kernel;
    struct clf_kernel_entry *next;
};

struct clf_program_entry {
    uint64_t key[2];
    cl_program program;
    struct clf_kernel_entry *kernels;
    struct clf_program_entry *next;
};

/* The fast path of clf_kernel_get: a kernel asked for before is found by
 * its (file, options, name) without reading, expanding or hashing source. */
struct clf_kernel_memo {
    uint64_t key;
    char *file, *options, *name;
    cl_kernel kernel;  /* owned by its program entry */
    struct clf_kernel_memo *next;
};

struct cache_header {
    char magic[8];
    uint64_t key[2];
    uint64_t size;      /* bytes of binary that follow */
    uint64_t checksum;  /* FNV-1a of those bytes */
};

void clf_programs_release(clf_ctx_t *ctx)
{
    for (struct clf_kernel_memo *m = ctx->memo, *next; m; m = next) {
        next = m->next;
        free(m->file), free(m->options), free(m->name), free(m);
    }
    ctx->memo = NULL;
    struct clf_program_entry *p = ctx->programs;
    while (p) {
        struct clf_kernel_entry *k = p->kernels;
        while (k) {
            struct clf_kernel_entry *kn = k->next;
            clReleaseKernel(k->kernel);
            free(k);
            k = kn;
        }
        struct clf_program_entry *pn = p->next;
        clReleaseProgram(p->program);
        free(p);
        p = pn;
    }
    ctx->programs = NULL;
}

static clf_status read_file(clf_ctx_t *ctx, const char *path, char **text, size_t *len)
{
    clf_status st = clf_file_read(path, (size_t)64 << 20, text, len);
    if (st != CLF_OK)
        return clf_error_set(ctx, st, "%s (CLF_KERNEL_DIR should name the project's cl/ folder)", clf_ctx_error(NULL));
    return CLF_OK;
}

clf_status clf_kernel_source(clf_ctx_t *ctx, const char *file, char **text, size_t *len)
{
    const char *dir = clf_setting_get("CLF_KERNEL_DIR");
    if (dir && *dir) {
        char path[CLF_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        return read_file(ctx, path, text, len);
    }
    for (const struct clf_embedded_file *e = clf_embedded_files; e->name; e++) {
        if (!strcmp(e->name, file)) {
            *text = malloc(e->size + 1);
            if (!*text)
                return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
            memcpy(*text, e->data, e->size + 1);
            *len = e->size;
            return CLF_OK;
        }
    }
    return clf_error_set(ctx, CLF_ERR_ARG, "no kernel file '%s' is built in", file);
}

/* Appends src to *out, replacing each line `#include "X"` by the file X of
 * cl/, so that the program text is self-contained (and hashes as such). */
static clf_status expand(clf_ctx_t *ctx, const char *src, char **out, size_t *len, size_t *cap, int depth)
{
    const char *p = src;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p + 1) : strlen(p);
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        char inc[256];
        if (!strncmp(q, "#include \"", 10) && sscanf(q + 10, "%255[^\"]", inc) == 1) {
            if (depth >= MAX_INCLUDE_DEPTH)
                return clf_error_set(ctx, CLF_ERR_BUILD, "#include \"%s\" nested too deep", inc);
            char *text;
            size_t tl;
            clf_status st = clf_kernel_source(ctx, inc, &text, &tl);
            if (st != CLF_OK)
                return st;
            st = expand(ctx, text, out, len, cap, depth + 1);
            free(text);
            if (st != CLF_OK)
                return st;
        } else {
            if (*len + n + 2 > *cap) {
                size_t nc = (*cap + n + 2) * 2;
                char *g = realloc(*out, nc);
                if (!g)
                    return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
                *out = g;
                *cap = nc;
            }
            memcpy(*out + *len, p, n);
            *len += n;
            (*out)[*len] = 0;
        }
        p += n;
    }
    if (*len && (*out)[*len - 1] != '\n') {
        (*out)[(*len)++] = '\n';
        (*out)[*len] = 0;
    }
    return CLF_OK;
}

clf_status clf_cache_dir(char *out, size_t len)
{
    const char *x = clf_setting_get("XDG_CACHE_HOME");
    const char *home = clf_setting_get("HOME");
    int n;
    if (x && *x)
        n = snprintf(out, len, "%s/clformer", x);
    else if (home && *home)
        n = snprintf(out, len, "%s/.cache/clformer", home);
    else
        return clf_error_set(NULL, CLF_ERR_IO, "neither XDG_CACHE_HOME nor HOME is set: no cache folder");
    if (n < 0 || (size_t)n >= len)
        return clf_error_set(NULL, CLF_ERR_IO, "cache folder path too long");
    return CLF_OK;
}

static void entry_path(const uint64_t key[2], char *out, size_t len)
{
    char dir[CLF_PATH_MAX];
    if (clf_cache_dir(dir, sizeof dir) != CLF_OK) {
        out[0] = 0;
        return;
    }
    if (snprintf(out, len, "%s/%016llx%016llx.bin", dir, (unsigned long long)key[0], (unsigned long long)key[1]) >=
        (int)len)
        out[0] = 0;  /* too long a path: no disk cache */
}

/* Whether this context keeps program binaries on disk: yes, unless
 * CLF_KERNEL_CACHE is off. Measured on PoCL 3.1 (2-vCPU Zen 3), the driver
 * with a kernel cache of its own: asking it for a binary compiles every
 * kernel of the program for any work-group size first, so a cold build
 * costs more with ours (all of test_attention: 288 s of CPU against 133),
 * but every later process loads faster from ours (test_model warm: 3.7 s
 * against 8.2, PoCL hashing and loading each program from source), and
 * warm loads are most of a machine's runs. So ours stays on everywhere. */
static bool disk_cache_on(void)
{
    const char *v = clf_setting_get("CLF_KERNEL_CACHE");
    return !(v && !strcmp(v, "off"));
}

/* Loads a cached binary; returns NULL (and counts a rejection where a file
 * was there but bad) when there is nothing usable. */
static cl_program disk_load(clf_ctx_t *ctx, const uint64_t key[2], const char *options)
{
    char path[CLF_PATH_MAX];
    entry_path(key, path, sizeof path);
    FILE *f = path[0] ? fopen(path, "rb") : NULL;
    if (!f)
        return NULL;
    struct cache_header h;
    unsigned char *bin = NULL;
    cl_program prog = NULL;
    long fsize;
    if (fseek(f, 0, SEEK_END) || (fsize = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
        fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, CACHE_MAGIC, 8) ||
        h.key[0] != key[0] || h.key[1] != key[1] || h.size == 0 ||
        h.size != (uint64_t)fsize - sizeof h)
        goto bad;
    bin = malloc(h.size);
    if (!bin || fread(bin, 1, h.size, f) != h.size || clf_fnv1a(CLF_FNV_INIT, bin, h.size) != h.checksum)
        goto bad;
    cl_int err, bstatus;
    size_t sz = h.size;
    const unsigned char *bins[1] = {bin};
    prog = clCreateProgramWithBinary(ctx->context, 1, &ctx->dev.device, &sz, bins, &bstatus, &err);
    if (err != CL_SUCCESS || bstatus != CL_SUCCESS)
        goto bad;
    /* The options went into the key and into the binary; a driver that
     * refuses compile options (-D, -cl-std) for a binary would otherwise
     * reject every entry, and the cache would be rebuilt in every process
     * without a word: such a binary is built again without them. */
    if (clBuildProgram(prog, 1, &ctx->dev.device, options, NULL, NULL) != CL_SUCCESS &&
        clBuildProgram(prog, 1, &ctx->dev.device, "", NULL, NULL) != CL_SUCCESS)
        goto bad;
    free(bin);
    fclose(f);
    ctx->stats.programs_loaded++;
    return prog;
bad:
    if (prog)
        clReleaseProgram(prog);
    free(bin);
    fclose(f);
    ctx->stats.disk_rejected++;
    unlink(path);
    return NULL;
}

/* Best effort: a cache that cannot be written only costs a recompile. */
static void disk_store(const uint64_t key[2], cl_program prog)
{
    size_t size = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS || !size)
        return;
    unsigned char *bin = malloc(size);
    if (!bin)
        return;
    unsigned char *bins[1] = {bin};
    char dir[CLF_PATH_MAX], path[CLF_PATH_MAX];
    entry_path(key, path, sizeof path);
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS || !path[0] ||
        clf_cache_dir(dir, sizeof dir) != CLF_OK || clf_mkdir_p(dir)) {
        free(bin);
        return;
    }
    struct cache_header h;
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.key[0] = key[0];
    h.key[1] = key[1];
    h.size = size;
    h.checksum = clf_fnv1a(CLF_FNV_INIT, bin, size);
    struct clf_file_out out;  /* a failed write leaves no entry: the next run compiles again */
    if (clf_file_out_open(&out, path) == CLF_OK)
        clf_file_out_close(&out, fwrite(&h, sizeof h, 1, out.f) == 1 && fwrite(bin, 1, size, out.f) == size);
    free(bin);
}

static void program_key(const clf_ctx_t *ctx, const char *src, const char *options, uint64_t key[2])
{
    /* the driver's own settings that change the code it compiles: PoCL's
     * target CPU (ISA caps in tests) is not in its device name */
    const char *cpu = clf_setting_get("POCL_LLVM_CPU_NAME"), *extra = clf_setting_get("POCL_EXTRA_BUILD_FLAGS");
    const char *parts[] = {src, options, ctx->dev.platform_name, ctx->dev.device_name,
                           ctx->dev.driver_version, ctx->dev.device_version, cpu ? cpu : "", extra ? extra : ""};
    /* two independent 64-bit hashes: a collision would need both to agree */
    uint64_t a = CLF_FNV_INIT, b = 0x84222325cbf29ce4ULL;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        size_t n = strlen(parts[i]) + 1;  /* the NUL separates parts */
        a = clf_fnv1a(a, parts[i], n);
        b = clf_fnv1a(b ^ (0x9e3779b97f4a7c15ULL * (i + 1)), parts[i], n);
    }
    key[0] = a;
    key[1] = b;
}

static clf_status build_from_source(clf_ctx_t *ctx, const char *src, const char *options,
                                    const char *what, cl_program *out)
{
    clf_status st = CLF_OK;
    cl_int err;
    cl_program prog = clCreateProgramWithSource(ctx->context, 1, &src, NULL, &err);
    CLF_CL_CHECK(ctx, err, "clCreateProgramWithSource");
    err = clBuildProgram(prog, 1, &ctx->dev.device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        size_t loglen = 0;
        clGetProgramBuildInfo(prog, ctx->dev.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen);
        char *log = malloc(loglen + 1);
        if (log) {
            log[0] = 0;
            clGetProgramBuildInfo(prog, ctx->dev.device, CL_PROGRAM_BUILD_LOG, loglen, log, NULL);
            log[loglen] = 0;
        }
        st = clf_error_set(ctx, CLF_ERR_BUILD,
                           "building %s (options \"%s\") for %s failed: %s (%d)\nbuild log:\n%s",
                           what, options, ctx->dev.device_name, clf_cl_error_str(err), (int)err,
                           log && log[0] ? log : "(empty)");
        free(log);
        goto fail;
    }
    ctx->stats.programs_built++;
    *out = prog;
    return CLF_OK;
fail:
    if (prog)
        clReleaseProgram(prog);
    return st;
}

static clf_status program_get(clf_ctx_t *ctx, const char *src, const char *user_options,
                              const char *what, struct clf_program_entry **out)
{
    char options[2048];
    /* -DCLF_FMA: the device has a fused multiply-add (common.h's CLF_MAD) */
    if (snprintf(options, sizeof options, "-cl-std=CL1.2%s %s", ctx->fp_fma ? " -DCLF_FMA" : "",
                 user_options ? user_options : "") >= (int)sizeof options)
        return clf_error_set(ctx, CLF_ERR_ARG, "build options for %s too long", what);
    uint64_t key[2];
    program_key(ctx, src, options, key);
    for (struct clf_program_entry *p = ctx->programs; p; p = p->next) {
        if (p->key[0] == key[0] && p->key[1] == key[1]) {
            ctx->stats.programs_reused++;
            *out = p;
            return CLF_OK;
        }
    }
    struct clf_program_entry *e = calloc(1, sizeof *e);
    if (!e)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
    e->key[0] = key[0];
    e->key[1] = key[1];
    bool disk = disk_cache_on();
    e->program = disk ? disk_load(ctx, key, options) : NULL;
    if (!e->program) {
        clf_status st = build_from_source(ctx, src, options, what, &e->program);
        if (st != CLF_OK) {
            free(e);
            return st;
        }
        if (disk)
            disk_store(key, e->program);
    }
    e->next = ctx->programs;
    ctx->programs = e;
    *out = e;
    return CLF_OK;
}

clf_status clf_program_from_source(clf_ctx_t *ctx, const char *source, const char *options,
                                   cl_program *out)
{
    struct clf_program_entry *e;
    clf_status st = program_get(ctx, source, options, "program from source", &e);
    if (st == CLF_OK)
        *out = e->program;
    return st;
}

static uint64_t memo_key(const char *file, const char *options, const char *name)
{
    uint64_t h = clf_fnv1a(CLF_FNV_INIT, file, strlen(file) + 1);
    h = clf_fnv1a(h, options, strlen(options) + 1);
    return clf_fnv1a(h, name, strlen(name) + 1);
}

static char *copy_str(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    return d ? strcpy(d, s) : NULL;
}

static clf_status kernel_build(clf_ctx_t *ctx, const char *file, const char *options, const char *kernel_name,
                               cl_kernel *out);

clf_status clf_kernel_get(clf_ctx_t *ctx, const char *file, const char *options,
                          const char *kernel_name, cl_kernel *out)
{
    if (!options)
        options = "";
    uint64_t key = memo_key(file, options, kernel_name);
    for (struct clf_kernel_memo *m = ctx->memo; m; m = m->next) {
        if (m->key == key && !strcmp(m->name, kernel_name) && !strcmp(m->file, file) &&
            !strcmp(m->options, options)) {
            *out = m->kernel;
            return CLF_OK;
        }
    }
    clf_status st = kernel_build(ctx, file, options, kernel_name, out);
    if (st != CLF_OK)
        return st;
    struct clf_kernel_memo *m = calloc(1, sizeof *m);
    if (m && (m->file = copy_str(file)) && (m->options = copy_str(options)) && (m->name = copy_str(kernel_name))) {
        m->key = key;
        m->kernel = *out;
        m->next = ctx->memo;
        ctx->memo = m;
    } else if (m) {  /* out of memory: only the fast path is lost */
        free(m->file), free(m->options), free(m->name), free(m);
    }
    return CLF_OK;
}

static clf_status kernel_build(clf_ctx_t *ctx, const char *file, const char *options, const char *kernel_name,
                               cl_kernel *out)
{
    char *raw = NULL, *src = NULL;
    size_t rawlen, len = 0, cap = 0;
    struct clf_program_entry *e;
    clf_status st = clf_kernel_source(ctx, file, &raw, &rawlen);
    if (st != CLF_OK)
        return st;
    st = expand(ctx, raw, &src, &len, &cap, 0);
    free(raw);
    if (st != CLF_OK)
        goto out;
    st = program_get(ctx, src, options, file, &e);
    if (st != CLF_OK)
        goto out;
    for (struct clf_kernel_entry *k = e->kernels; k; k = k->next) {
        if (!strcmp(k->name, kernel_name)) {
            *out = k->kernel;
            goto out;  /* st is CLF_OK: the common exit */
        }
    }
    struct clf_kernel_entry *k = calloc(1, sizeof *k);
    if (!k || strlen(kernel_name) >= sizeof k->name) {
        free(k);
        st = clf_error_set(ctx, CLF_ERR_ARG, "kernel name '%s' too long or out of memory", kernel_name);
        goto out;
    }
    cl_int err;
    k->kernel = clCreateKernel(e->program, kernel_name, &err);
    if (err != CL_SUCCESS) {
        free(k);
        st = clf_error_set(ctx, CLF_ERR_BUILD, "%s has no kernel '%s': %s", file, kernel_name,
                           clf_cl_error_str(err));
        goto out;
    }
    strcpy(k->name, kernel_name);
    k->next = e->kernels;
    e->kernels = k;
    *out = k->kernel;
out:
    free(src);
    return st;
}

clf_status clf_kernel_set_args(clf_ctx_t *ctx, cl_kernel k, const char *name,
                               const struct clf_arg *args, int nargs)
{
    for (int i = 0; i < nargs; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS)
            return clf_error_set(ctx, CLF_ERR_OPENCL, "clSetKernelArg(%s, arg %d, %zu bytes) failed: %s",
                                 name, i, args[i].size, clf_cl_error_str(err));
    }
    return CLF_OK;
}

clf_status clf_kernel_launch(clf_ctx_t *ctx, cl_kernel k, const char *name, cl_uint dims,
                             const size_t *global, const size_t *local)
{
    size_t g[3] = {1, 1, 1};
    if (dims < 1 || dims > 3)
        return clf_error_set(ctx, CLF_ERR_ARG, "launching %s: %u dimensions", name, dims);
    for (cl_uint d = 0; d < dims; d++) {
        g[d] = global[d];
        if (local && local[d])
            g[d] = (g[d] + local[d] - 1) / local[d] * local[d];
        if (g[d] == 0)
            return CLF_OK;  /* nothing to do */
    }
    cl_event ev = NULL;
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, k, dims, NULL, g, local, 0, NULL, clf_profile_slot(ctx, &ev));
    if (err == CL_SUCCESS) {
        ctx->launches++;
        clf_profile_record(ctx, name, ev);
    }
    if (err != CL_SUCCESS)
        return clf_error_set(ctx, err == CL_MEM_OBJECT_ALLOCATION_FAILURE ? CLF_ERR_MEMORY : CLF_ERR_OPENCL,
                             "launching %s (global %zu×%zu×%zu, local %zu×%zu×%zu) failed: %s",
                             name, g[0], dims > 1 ? g[1] : 1, dims > 2 ? g[2] : 1,
                             local ? local[0] : 0, local && dims > 1 ? local[1] : 0,
                             local && dims > 2 ? local[2] : 0, clf_cl_error_str(err));
    return CLF_OK;
}

size_t clf_kernel_wg_limit(clf_ctx_t *ctx, cl_kernel k, size_t want)
{
    size_t kmax = ctx->max_wg;
    size_t v = 0;
    if (clGetKernelWorkGroupInfo(k, ctx->dev.device, CL_KERNEL_WORK_GROUP_SIZE, sizeof v, &v, NULL) ==
            CL_SUCCESS && v > 0 && v < kmax)
        kmax = v;
    size_t p = 1;
    while (p * 2 <= want && p * 2 <= kmax)
        p *= 2;
    return p;
}
