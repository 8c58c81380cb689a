/* files.c: the translated files of /translate_file, kept for their
 * download at /download_file/NAME as LibreTranslate does. They are kept in
 * memory, not on disk: a text file's translation is at most --max-chars
 * characters, and nothing is left behind in /tmp when the server stops.
 * Bounded in count and bytes (the oldest go first to make room) and
 * expiring after ttl seconds (LibreTranslate removes its files after a
 * while too). Names are 128 random bits in hex before the client's file
 * name, so one client cannot guess another's file. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <clformer/advanced/clock.h>
#include "serve_libre.h"

struct kept {
    char *name, *data;
    size_t len;
    double t; /* when it was kept */
};

struct serve_files {
    pthread_mutex_t lock;
    struct kept *k; /* oldest first */
    size_t n, max_files, bytes, max_bytes;
    double ttl;
};

struct serve_files *serve_files_init(size_t max_files, size_t max_bytes, double ttl_seconds)
{
    struct serve_files *f = calloc(1, sizeof *f);
    if (!f || !(f->k = calloc(max_files ? max_files : 1, sizeof *f->k))) {
        free(f);
        return NULL;
    }
    pthread_mutex_init(&f->lock, NULL);
    f->max_files = max_files ? max_files : 1, f->max_bytes = max_bytes, f->ttl = ttl_seconds;
    return f;
}

static void drop_oldest(struct serve_files *f)
{
    f->bytes -= f->k[0].len;
    free(f->k[0].name), free(f->k[0].data);
    memmove(f->k, f->k + 1, --f->n * sizeof *f->k);
}

static void expire(struct serve_files *f, double now)
{
    while (f->n && now - f->k[0].t > f->ttl)
        drop_oldest(f);
}

char *serve_files_put(struct serve_files *f, const char *filename, const char *data, size_t len)
{
    if (len > f->max_bytes)
        return NULL;
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return NULL;
    /* the client's name, cut to letters, digits, '-', '_' and '.', at most
     * 64 bytes, never starting with '.' (werkzeug's secure_filename's aim) */
    char safe[65];
    size_t n = 0;
    for (const char *p = filename ? filename : ""; *p && n < sizeof safe - 1; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '_' || (*p == '.' && n > 0))
            safe[n++] = *p;
    safe[n] = 0;
    char *name = malloc(33 + 1 + n + 1), *copy = malloc(len + 1);
    if (!name || !copy) {
        free(name), free(copy);
        return NULL;
    }
    for (size_t i = 0; i < sizeof r; i++)
        sprintf(name + 2 * i, "%02x", r[i]);
    sprintf(name + 32, ".%s", n ? safe : "file.txt");
    memcpy(copy, data, len);
    copy[len] = 0;
    char *ret = strdup(name);
    if (!ret) {
        free(name), free(copy);
        return NULL;
    }
    pthread_mutex_lock(&f->lock);
    const double now = clf_now();
    expire(f, now);
    while (f->n && (f->n == f->max_files || f->bytes + len > f->max_bytes))
        drop_oldest(f);
    f->k[f->n++] = (struct kept){.name = name, .data = copy, .len = len, .t = now};
    f->bytes += len;
    pthread_mutex_unlock(&f->lock);
    return ret;
}

char *serve_files_get(struct serve_files *f, const char *name, size_t *len)
{
    char *copy = NULL;
    pthread_mutex_lock(&f->lock);
    expire(f, clf_now());
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->k[i].name, name)) {
            if ((copy = malloc(f->k[i].len + 1))) {
                memcpy(copy, f->k[i].data, f->k[i].len + 1);
                *len = f->k[i].len;
            }
            break;
        }
    pthread_mutex_unlock(&f->lock);
    return copy;
}

void serve_files_free(struct serve_files *f)
{
    if (!f)
        return;
    while (f->n)
        drop_oldest(f);
    free(f->k);
    pthread_mutex_destroy(&f->lock);
    free(f);
}
