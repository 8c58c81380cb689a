/* files.c: the file helpers of base/files.h: making folders, joining
 * paths, reading a file whole, the atomic write (temp name, fsync, rename)
 * and the copy built on it, and case-insensitive substring search (device
 * names). No OpenCL. */
#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "base/status.h"

int clf_mkdir_p(const char *dir)
{
    char tmp[CLF_PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

int clf_mkdir_parent(const char *path)
{
    char dir[CLF_PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = 0;
    return clf_mkdir_p(dir);
}

char *clf_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

clf_status clf_file_read_opt(const char *path, size_t limit, char **text, size_t *len, bool *missing)
{
    *text = NULL;
    *len = 0;
    if (missing)
        *missing = false;
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (missing && errno == ENOENT) {
            *missing = true;
            return CLF_OK;
        }
        return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 > cap) {
            char *g = realloc(buf, cap = cap * 2 + 65536);
            if (!g) {
                free(buf);
                fclose(f);
                return clf_error_set(NULL, CLF_ERR_MEMORY, "%s: out of memory", path);
            }
            buf = g;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0 || n > limit)
            break;
    }
    bool failed = ferror(f);
    int err = errno;
    fclose(f);
    if (failed || n > limit) {
        free(buf);
        return failed ? clf_error_set(NULL, CLF_ERR_IO, "%s: read error: %s", path, strerror(err))
                      : clf_error_set(NULL, CLF_ERR_FORMAT, "%s: larger than %zu bytes", path, limit);
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return CLF_OK;
}

clf_status clf_file_read(const char *path, size_t limit, char **text, size_t *len)
{
    return clf_file_read_opt(path, limit, text, len, NULL);
}

/* Serial numbers for temporary names: unique among one process's threads
 * and contexts; the pid sets processes apart, and "x" refuses a stale
 * temporary of a dead process with the same pid. */
static atomic_ulong tmp_serial;

/* Records the failure to write path and returns with errno = e. */
static clf_status write_failed(const char *path, int e)
{
    clf_error_set(NULL, CLF_ERR_IO, "cannot write %s: %s", path, strerror(e));
    errno = e;
    return CLF_ERR_IO;
}

clf_status clf_file_out_open(struct clf_file_out *o, const char *path)
{
    o->f = NULL;
    if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path)
        return write_failed(path, ENAMETOOLONG);
    for (int tries = 0; tries < 16; tries++) {
        if (snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%lu", path, (long)getpid(),
                     atomic_fetch_add(&tmp_serial, 1)) >= (int)sizeof o->tmp)
            return write_failed(path, ENAMETOOLONG);
        if ((o->f = fopen(o->tmp, "wbx")))
            return CLF_OK;
        if (errno != EEXIST)
            break;
    }
    return write_failed(path, errno);
}

clf_status clf_file_out_close(struct clf_file_out *o, bool ok)
{
    int e = ok ? 0 : errno ? errno : EIO;
    if (!e && (fflush(o->f) || ferror(o->f) || fsync(fileno(o->f))))
        e = errno ? errno : EIO;
    if (fclose(o->f) && !e)
        e = errno ? errno : EIO;
    o->f = NULL;
    if (!e && rename(o->tmp, o->path))
        e = errno;
    if (!e)
        return CLF_OK;
    unlink(o->tmp);
    return write_failed(o->path, e);
}

clf_status clf_file_write_atomic(const char *path, const void *data, size_t len)
{
    struct clf_file_out o;
    clf_status st = clf_file_out_open(&o, path);
    if (st != CLF_OK)
        return st;
    return clf_file_out_close(&o, fwrite(data, 1, len, o.f) == len);
}

clf_status clf_file_copy(const char *from, const char *to)
{
    char *text = NULL;
    size_t len = 0;
    clf_status st = clf_file_read(from, (size_t)1 << 34, &text, &len);
    if (st == CLF_OK)
        st = clf_file_write_atomic(to, text, len);
    free(text);
    return st;
}

bool clf_contains_nocase(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < nl && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == nl)
            return true;
    }
    return nl == 0;
}
