/* fuzz_kernel_cache.c: the on-disk kernel cache (host/runtime/program.c,
 * disk_load): an entry is a header (magic "CLFBIN01", the 128-bit key, the
 * binary's size and FNV-1a checksum) and the program binary; anything that
 * does not check out must be rebuilt from source, never handed to the
 * driver. The input is written over the entry of one small program and
 * the program asked for again on the same context (its in-memory cache
 * dropped first). The key depends on the device and driver, so an input
 * whose key bytes are all zero gets this device's key put in (the seeds
 * are stored that way): the fuzzer reaches the later checks on any
 * machine. Needs an OpenCL device; without one every input is skipped
 * (said once). Each rejected entry costs a compile: this harness runs at
 * tens of inputs per second, not thousands. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "runtime/program.h"

void clf_programs_release(clf_ctx_t *ctx);  /* program.c: drops the in-memory cache */

static const char *source = "__kernel void fuzz_add(__global float *x, float a) { x[get_global_id(0)] += a; }\n";

static clf_ctx_t *ctx;
static char dir[512], cache[3800], entry[4200];
static unsigned char key[16];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The whole folder: PoCL keeps its own cache in it too (XDG_CACHE_HOME). */
static void cleanup(void)
{
    if (ctx)
        clf_ctx_free(ctx);
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* a cache folder of our own, so that the program's entry is the only one */
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/clf-fuzz-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir) || setenv("XDG_CACHE_HOME", dir, 1))
        abort();
    atexit(cleanup);
    setenv("CLF_TUNING", "off", 1);
    setenv("CLF_KERNEL_CACHE", "on", 1);  /* ours, on PoCL too (program.c, disk_cache_on) */
    cl_program prog;
    if (clf_ctx_init(&ctx, NULL) != CLF_OK) {
        fprintf(stderr, "fuzz_kernel_cache: no device (%s): nothing is fuzzed\n", clf_ctx_error(NULL));
        ctx = NULL;
        return 0;
    }
    if (clf_program_from_source(ctx, source, "", &prog) != CLF_OK) {
        fprintf(stderr, "fuzz_kernel_cache: %s\n", clf_ctx_error(ctx));
        abort();
    }
    if (clf_cache_dir(cache, sizeof cache) != CLF_OK)
        abort();
    DIR *d = opendir(cache);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".bin"))
            snprintf(entry, sizeof entry, "%s/%s", cache, e->d_name);
    if (d)
        closedir(d);
    FILE *f = entry[0] ? fopen(entry, "rb") : NULL;
    if (!f || fseek(f, 8, SEEK_SET) || fread(key, 1, sizeof key, f) != sizeof key) {
        fprintf(stderr, "fuzz_kernel_cache: the device's compiler left no cache entry in %s\n", cache);
        abort();
    }
    /* CLF_FUZZ_SEED_OUT=FILE: write the entry, key zeroed, as a seed */
    const char *seed = getenv("CLF_FUZZ_SEED_OUT");
    FILE *o = seed && *seed ? fopen(seed, "wb") : NULL;
    if (o && !fseek(f, 0, SEEK_SET)) {
        unsigned char buf[4096];
        size_t n;
        for (long at = 0; (n = fread(buf, 1, sizeof buf, f)) > 0; at += (long)n) {
            for (long i = at < 24 ? (at < 8 ? 8 - at : 0) : (long)n; i < (long)n && at + i < 24; i++)
                buf[i] = 0;
            fwrite(buf, 1, n, o);
        }
    }
    if (o)
        fclose(o);
    fclose(f);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx)
        return 0;
    unsigned char *in = malloc(size ? size : 1);
    memcpy(in, data, size);
    static const unsigned char zero[16];
    if (size >= 24 && !memcmp(in + 8, zero, 16))
        memcpy(in + 8, key, 16);
    FILE *f = fopen(entry, "wb");
    if (!f || (size && fwrite(in, 1, size, f) != size) || fclose(f))
        abort();
    free(in);
    struct clf_cache_stats before, after;
    clf_ctx_cache_stats(ctx, &before);
    clf_programs_release(ctx);
    cl_program prog;
    if (clf_program_from_source(ctx, source, "", &prog) != CLF_OK || !prog) {
        fprintf(stderr, "fuzz_kernel_cache: %s\n", clf_ctx_error(ctx));
        abort();  /* a bad entry must cost a rebuild, never the program */
    }
    clf_ctx_cache_stats(ctx, &after);
    if (after.programs_loaded + after.programs_built != before.programs_loaded + before.programs_built + 1)
        abort();
    return 0;
}
