/* replay.c: a main for the harnesses without libFuzzer. Runs
 * LLVMFuzzerTestOneInput once on every file named, and on every file of
 * every folder named (in name order; a folder that does not exist is
 * skipped: fuzz/crashers/<thing>/ exists only once a crash was found).
 * ctest runs it on fuzz/corpus/<thing>/ and fuzz/crashers/<thing>/, so CI
 * replays the corpus with the compiler and sanitizers of its build. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Defined by the harnesses that set something up once (a device). */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *g = realloc(buf, cap *= 2);
            if (!g)
                free(buf);
            buf = g;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return 1;
    }
    /* an exact-size copy, so that AddressSanitizer sees a read past the end */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int files = 0, bad = 0;
    for (int a = 1; a < argc; a++) {
        struct stat sb;
        if (stat(argv[a], &sb)) {
            printf("replay: %s absent, skipped\n", argv[a]);
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            bad += run_file(argv[a]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[a]);
        if (!d) {
            fprintf(stderr, "replay: %s: %s\n", argv[a], strerror(errno));
            return 1;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                names = realloc(names, cap * sizeof *names);
                if (!names)
                    return 1;
            }
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
        if (n)
            qsort(names, n, sizeof *names, cmp_name);
        for (size_t i = 0; i < n; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], names[i]);
            if (!stat(path, &sb) && S_ISREG(sb.st_mode)) {
                bad += run_file(path);
                files++;
            }
            free(names[i]);
        }
        free(names);
    }
    printf("replay: %d inputs run, %d unreadable\n", files, bad);
    return bad ? 1 : 0;
}
