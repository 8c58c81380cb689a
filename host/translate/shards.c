/* shards.c: a corpus translated to a file, whole or in shards
 * (clformer_translate.h, "shards"): which lines each shard holds, its
 * file's name, whether a file there is a finished shard, joining the
 * shards in order, and a file's (or a shard's) translation. The one owner
 * of the translations' file format (clf_translations_write): plain text,
 * `per_source` lines a source line, each ended by '\n'. Nothing here
 * knows of MPI: the command (tools/cmd_translate.c) gives each rank its
 * shard; Python (Translator.translate_file) or a script driving one
 * process per shard uses the same calls. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/files.h"
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

clf_status clf_shards_join_file(const char *base, int n, size_t total, size_t per_source, const char *output)
{
    struct clf_file_out o;
    clf_status st = clf_file_out_open(&o, output);
    if (st != CLF_OK)
        return st;
    st = clf_shards_join(base, n, total, per_source, o.f);
    if (st == CLF_OK)
        return clf_file_out_close(&o, true);
    /* the join's message, not the removed temporary's */
    char msg[CLF_ERRMSG_LEN];
    snprintf(msg, sizeof msg, "%s", clf_ctx_error(NULL));
    clf_file_out_close(&o, false);
    return clf_error_set(NULL, st, "%s", msg);
}

clf_status clf_translations_write(FILE *out, char *const *text, const float *scores, size_t count, size_t nbest,
                                  size_t first)
{
    for (size_t i = 0; i < count; i++)
        for (size_t k = 0; k < nbest; k++) {
            const char *s = text[i * nbest + k] ? text[i * nbest + k] : "";
            if ((nbest > 1 ? fprintf(out, "%zu\t%.4f\t%s\n", first + i, scores[i * nbest + k], s)
                           : fprintf(out, "%s\n", s)) < 0)
                return clf_error_set(NULL, CLF_ERR_IO, "writing the translations: %s", strerror(errno));
        }
    return CLF_OK;
}

/* The calls that take no context leave their message in the thread's
 * buffer; a translator's caller reads its context's (clformer_translate.h,
 * "Errors"), so it is copied there. */
#define TRY_TO_CTX(expr)                                                \
    do {                                                                \
        if ((st = (expr)) != CLF_OK) {                                  \
            clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));          \
            goto fail;                                                  \
        }                                                               \
    } while (0)

clf_status clf_translator_translate_file(clf_translator_t *t, const struct clf_translate_file *f,
                                         const struct clf_translate_opts *o, struct clf_batching b, size_t *lines)
{
    struct clf_lines in = {0};
    struct clf_file_out out = {0};
    char path[CLF_PATH_MAX];
    char **text = NULL;
    float *scores = NULL;
    size_t first = 0, count = 0;
    const size_t nb = o->greedy ? 1 : (size_t)(o->nbest > 0 ? o->nbest : 1);
    clf_ctx_t *ctx = clf_translator_ctx(t);
    clf_status st;
    if (!f->input || !f->output)
        return clf_error_set(ctx, CLF_ERR_ARG, "translating a file wants an input and an output path");
    TRY_TO_CTX(clf_lines_read(&in, f->input));
    if (lines)
        *lines = in.n;
    if (in.n == 0) {
        st = clf_error_set(ctx, CLF_ERR_ARG, "the input (%s) is empty: nothing to translate", f->input);
        goto fail;
    }
    TRY_TO_CTX(clf_shard_range(in.n, f->shard, f->shards, &first, &count));
    if (f->shards > 1)
        TRY_TO_CTX(clf_shard_path(f->output, f->shard, f->shards, path, sizeof path));
    else if (snprintf(path, sizeof path, "%s", f->output) >= (int)sizeof path) {
        st = clf_error_set(ctx, CLF_ERR_ARG, "%s: the path is longer than %zu bytes", f->output, sizeof path - 1);
        goto fail;
    }
    text = calloc(count * nb + 1, sizeof *text);
    scores = calloc(count * nb + 1, sizeof *scores);
    if (!text || !scores) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory for %zu translations", count * nb);
        goto fail;
    }
    if (count)  /* more shards than lines: an empty shard, still written */
        CLF_TRY(clf_translator_translate(t, (const char *const *)in.line + first, count, o, b, text, scores, NULL,
                                         NULL));
    TRY_TO_CTX(clf_file_out_open(&out, path));
    st = clf_translations_write(out.f, text, scores, count, nb, first);
    clf_status closed = clf_file_out_close(&out, st == CLF_OK);
    if (st == CLF_OK)
        st = closed;
    if (st != CLF_OK)
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
fail:
    if (text)
        for (size_t i = 0; i < count * nb; i++)
            free(text[i]);
    free(text), free(scores);
    clf_lines_free(&in);
    return st;
}

/* Removes the temporaries a writer of `path` left when it died before
 * renaming (clf_file_out_open's "<path>.tmp.<pid>.<serial>"), found by
 * name in the folder rather than by glob(3), which would read the
 * characters [*? of a path as a pattern. */
/* Opens path's folder ("/" for a name at the root, "." for one without a
 * folder) and writes "<path's last name><suffix>" to prefix, the folder to
 * dir as a path joins it ("" at the root); NULL where it cannot be opened. */
static DIR *folder_open(const char *path, const char *suffix, char *dir, size_t dirlen, char *prefix,
                        size_t prefixlen)
{
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(dir, dirlen, "%.*s", (int)(slash - path), path);
    else
        snprintf(dir, dirlen, ".");
    snprintf(prefix, prefixlen, "%s%s", slash ? slash + 1 : path, suffix);
    return opendir(slash == path ? "/" : dir);
}

static clf_status remove_temporaries(const char *path)
{
    char dir[4096], prefix[4096 + 8];
    DIR *d = folder_open(path, ".tmp.", dir, sizeof dir, prefix, sizeof prefix);
    if (!d)
        return CLF_OK;  /* no folder, no temporaries; the shards' own removal names real failures */
    clf_status st = CLF_OK;
    const size_t plen = strlen(prefix);
    for (struct dirent *e; (e = readdir(d));) {
        char full[8192];
        if (strncmp(e->d_name, prefix, plen))
            continue;
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        if (unlink(full) && errno != ENOENT && st == CLF_OK)
            st = clf_error_set(NULL, CLF_ERR_IO, "cannot remove %s: %s", full, strerror(errno));
    }
    closedir(d);
    return st;
}

clf_status clf_shards_other(const char *base, int n, int *other)
{
    *other = 0;
    char dir[4096], prefix[4096 + 16];
    DIR *d = folder_open(base, ".shard-", dir, sizeof dir, prefix, sizeof prefix);
    if (!d)
        return CLF_OK;
    const size_t plen = strlen(prefix);
    for (struct dirent *e; (e = readdir(d)) && !*other;) {
        int k, m, end = 0;
        if (!strncmp(e->d_name, prefix, plen) && sscanf(e->d_name + plen, "%d-of-%d%n", &k, &m, &end) == 2 &&
            !e->d_name[plen + (size_t)end] && m != n && k >= 1 && k <= m)
            *other = m;
    }
    closedir(d);
    return CLF_OK;
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
