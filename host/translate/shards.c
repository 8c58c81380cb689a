/* shards.c: a corpus translated in shards (clformer_translate.h,
 * "shards"): which lines each shard holds, its file's name, whether a
 * file there is a finished shard, and joining the shards in order. The
 * one owner of the shard file format: plain text, `per_source` lines a
 * source line, each ended by '\n'. Nothing here knows of MPI: the command
 * (tools/cmd_translate.c) gives each rank its shard; Python or a script
 * driving one process per shard would use the same calls. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/status.h"
#include "clformer_translate.h"

clf_status clf_shard_range(size_t total, int k, int n, size_t *first, size_t *count)
{
    if (n < 1 || k < 0 || k >= n)
        return clf_error_set(NULL, CLF_ERR_ARG, "shard %d of %d: want 0 <= k < n", k, n);
    /* the first total % n shards take one line more: sizes differ by at
     * most one, so no rank waits long for a larger one */
    const size_t base = total / (size_t)n, extra = total % (size_t)n, kk = (size_t)k;
    *first = kk * base + (kk < extra ? kk : extra);
    *count = base + (kk < extra);
    return CLF_OK;
}

clf_status clf_shard_path(const char *base, int k, int n, char *out, size_t len)
{
    if (n < 1 || k < 0 || k >= n)
        return clf_error_set(NULL, CLF_ERR_ARG, "shard %d of %d: want 0 <= k < n", k, n);
    int w = snprintf(out, len, "%s.shard-%d-of-%d", base, k + 1, n);
    if (w < 0 || (size_t)w >= len)
        return clf_error_set(NULL, CLF_ERR_ARG, "%s.shard-%d-of-%d: the path is longer than %zu bytes", base, k + 1,
                             n, len ? len - 1 : 0);
    return CLF_OK;
}

/* The lines of an open file (its '\n's) and whether its last byte ends
 * one (true for an empty file). Streamed: a shard may be large. */
static clf_status count_lines(FILE *f, const char *path, size_t *lines, bool *ended)
{
    char buf[1 << 16];
    size_t n = 0, got;
    int last = '\n';
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        for (const char *p = buf; (p = memchr(p, '\n', (size_t)(buf + got - p))); p++)
            n++;
        last = (unsigned char)buf[got - 1];
    }
    if (ferror(f))
        return clf_error_set(NULL, CLF_ERR_IO, "reading %s: %s", path, strerror(errno));
    *lines = n;
    *ended = last == '\n';
    return CLF_OK;
}

clf_status clf_shard_done(const char *path, size_t lines, bool *done)
{
    *done = false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return CLF_OK;
        return clf_error_set(NULL, CLF_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    }
    size_t have = 0;
    bool ended = true;
    clf_status st = count_lines(f, path, &have, &ended);
    fclose(f);
    if (st != CLF_OK)
        return st;
    /* written whole and renamed, a shard is never cut short: another count
     * is another job's file (another input, --nbest or rank count would
     * have another name or length), not one to join or to skip */
    if (have != lines || !ended)
        return clf_error_set(NULL, CLF_ERR_FORMAT,
                             "%s holds %zu line%s%s where this job's shard has %zu: not this job's (another input "
                             "or --nbest?); remove it to translate that shard again",
                             path, have, have == 1 ? "" : "s", ended ? "" : " and an unended one", lines);
    *done = true;
    return CLF_OK;
}

clf_status clf_shards_join(const char *base, int n, size_t total, size_t per_source, FILE *out)
{
    char path[4096];
    clf_status st;
    /* every shard checked before a byte is written: a failed join leaves
     * out as the caller gave it */
    for (int k = 0; k < n; k++) {
        size_t first, count;
        bool done;
        if ((st = clf_shard_range(total, k, n, &first, &count)) != CLF_OK ||
            (st = clf_shard_path(base, k, n, path, sizeof path)) != CLF_OK ||
            (st = clf_shard_done(path, count * per_source, &done)) != CLF_OK)
            return st;
        if (!done)
            return clf_error_set(NULL, CLF_ERR_IO, "%s is missing: shard %d of %d (lines %zu-%zu) was not finished",
                                 path, k + 1, n, first + 1, first + count);
    }
    for (int k = 0; k < n; k++) {
        if ((st = clf_shard_path(base, k, n, path, sizeof path)) != CLF_OK)
            return st;
        FILE *f = fopen(path, "rb");
        if (!f)
            return clf_error_set(NULL, CLF_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        char buf[1 << 16];
        size_t got;
        bool ok = true;
        while (ok && (got = fread(buf, 1, sizeof buf, f)) > 0)
            ok = fwrite(buf, 1, got, out) == got;
        const bool bad_read = ferror(f) != 0;
        fclose(f);
        if (bad_read)
            return clf_error_set(NULL, CLF_ERR_IO, "reading %s: %s", path, strerror(errno));
        if (!ok)
            return clf_error_set(NULL, CLF_ERR_IO, "writing shard %d of %d (%s) out: %s", k + 1, n, path,
                                 strerror(errno));
    }
    return CLF_OK;
}

/* Removes the temporaries a writer of `path` left when it died before
 * renaming (clf_file_out_open's "<path>.tmp.<pid>.<serial>"), found by
 * name in the folder rather than by glob(3), which would read the
 * characters [*? of a path as a pattern. */
static clf_status remove_temporaries(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096], prefix[4096];
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(prefix, sizeof prefix, "%s.tmp.", slash ? slash + 1 : path);
    DIR *d = opendir(slash == path ? "/" : dir);
    if (!d)
        return CLF_OK;  /* no folder, no temporaries; the shards' own removal names real failures */
    clf_status st = CLF_OK;
    const size_t plen = strlen(prefix);
    for (struct dirent *e; (e = readdir(d));) {
        char full[8192];
        if (strncmp(e->d_name, prefix, plen))
            continue;
        snprintf(full, sizeof full, "%s/%s", slash == path ? "" : dir, e->d_name);
        if (unlink(full) && errno != ENOENT && st == CLF_OK)
            st = clf_error_set(NULL, CLF_ERR_IO, "cannot remove %s: %s", full, strerror(errno));
    }
    closedir(d);
    return st;
}

clf_status clf_shards_remove(const char *base, int n)
{
    char path[4096];
    clf_status st = CLF_OK;
    for (int k = 0; k < n; k++) {
        /* on past a failure (the rest are removed), its message kept */
        if (clf_shard_path(base, k, n, path, sizeof path) != CLF_OK)
            return st != CLF_OK ? st : CLF_ERR_ARG;
        if (unlink(path) && errno != ENOENT && st == CLF_OK)
            st = clf_error_set(NULL, CLF_ERR_IO, "cannot remove %s: %s", path, strerror(errno));
        clf_status t = remove_temporaries(path);
        if (st == CLF_OK)
            st = t;
    }
    return st;
}
