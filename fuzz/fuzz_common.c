/* fuzz_common.c: the temporary files and input splitting of fuzz.h. The
 * files live in a folder of their own under $TMPDIR (or /tmp), removed at
 * exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

#define SLOTS 8

static char dir[512];
static char paths[SLOTS][600];

static void cleanup(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (paths[i][0])
            unlink(paths[i]);
    if (dir[0])
        rmdir(dir);
}

const char *fuzz_file(int slot, const uint8_t *data, size_t size)
{
    if (slot < 0 || slot >= SLOTS)
        abort();
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/clf-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(cleanup);
    }
    if (!paths[slot][0])
        snprintf(paths[slot], sizeof paths[slot], "%s/in%d", dir, slot);
    FILE *f = fopen(paths[slot], "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror("fuzz: writing the input file");
        abort();
    }
    return paths[slot];
}

int fuzz_split(const uint8_t *data, size_t size, const uint8_t **parts, size_t *lens, int max)
{
    int n = 0;
    size_t at = 0;
    while (n < max) {
        const uint8_t *nul = n + 1 < max && at < size ? memchr(data + at, 0, size - at) : NULL;
        size_t len = nul ? (size_t)(nul - (data + at)) : size - at;
        parts[n] = data + at;
        lens[n] = len;
        n++;
        if (!nul)
            break;
        at += len + 1;
    }
    return n;
}

char *fuzz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}
