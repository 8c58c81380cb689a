/* testutil.c: see testutil.h. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <criterion/criterion.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/rand.h"
#include "testutil.h"

clf_ctx_t *tu_ctx(void)
{
    clf_ctx_t *ctx = NULL;
    clf_status st = clf_ctx_init(&ctx, NULL);
    cr_assert_eq(st, CLF_OK, "clf_ctx_init: %s: %s", clf_status_str(st), clf_ctx_error(NULL));
    return ctx;
}

void tu_setting(const char *name, const char *value)
{
    cr_assert_eq(clf_setting_set(name, value), CLF_OK, "%s", clf_ctx_error(NULL));
}

struct clf_device_info tu_own_device(void)
{
    tu_setting("CLF_DEVICE_LIMITS", NULL);
    clf_ctx_t *ctx = tu_ctx();
    struct clf_device_info d = *clf_ctx_device(ctx);
    clf_ctx_free(ctx);
    return d;
}

unsigned tu_profile_calls(const struct clf_profile_entry *p, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].name, name))
            return p[i].calls;
    return 0;
}

bool tu_close(const char *what, const float *got, const float *want, size_t n, double atol, double rtol)
{
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        bool ok;
        if (isnan(w))
            ok = isnan(g);
        else if (isinf(w))
            ok = g == w;
        else
            ok = !isnan(g) && !isinf(g) && fabs(g - w) <= atol + rtol * fabs(w);
        if (!ok) {
            cr_log_error("%s: element %zu of %zu: got %.9g, want %.9g (atol %g, rtol %g)", what, i, n, g, w,
                         atol, rtol);
            return false;
        }
    }
    return true;
}

void tu_fill(float *x, size_t n, unsigned long long seed, float lo, float hi)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)((clf_splitmix64(&s) >> 40) * (1.0 / 16777216.0));
}

clf_tensor tu_upload(clf_ctx_t *ctx, const float *x, size_t n)
{
    clf_tensor t;
    clf_status st = clf_tensor_init(ctx, &t, 1, &n);
    cr_assert_eq(st, CLF_OK, "clf_tensor_init(%zu): %s", n, clf_ctx_error(ctx));
    st = clf_tensor_upload(ctx, &t, x);
    cr_assert_eq(st, CLF_OK, "clf_tensor_upload: %s", clf_ctx_error(ctx));
    return t;
}

clf_tensor tu_upload_ints(clf_ctx_t *ctx, const int32_t *v, size_t n)
{
    clf_tensor t;
    clf_status st = clf_tensor_init_dtype(ctx, &t, CLF_I32, 1, &n);
    cr_assert_eq(st, CLF_OK, "clf_tensor_init_dtype(i32, %zu): %s", n, clf_ctx_error(ctx));
    st = clf_tensor_upload_i32(ctx, &t, v);
    cr_assert_eq(st, CLF_OK, "clf_tensor_upload_i32: %s", clf_ctx_error(ctx));
    return t;
}

float *tu_download(clf_ctx_t *ctx, const clf_tensor *t, size_t n)
{
    float *x = malloc(n * sizeof *x);
    cr_assert_not_null(x);
    cr_assert_eq(clf_tensor_numel(t), n);
    clf_status st = clf_tensor_download(ctx, t, x);
    cr_assert_eq(st, CLF_OK, "clf_tensor_download: %s", clf_ctx_error(ctx));
    return x;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The folders tu_tmpdir made, removed with all they hold when the test's
 * process exits (Criterion runs each test in a process of its own): a
 * suite's run leaves nothing in /tmp. */
static char made[64][256];
static int n_made;

static void remove_made(void)
{
    while (n_made > 0)
        nftw(made[--n_made], remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tu_tmpdir(void)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/clformer-test-XXXXXX");
    cr_assert_not_null(mkdtemp(path), "mkdtemp failed");
    if (n_made < (int)(sizeof made / sizeof *made)) {
        if (!n_made)
            atexit(remove_made);
        snprintf(made[n_made++], sizeof *made, "%s", path);
    }
    return path;
}

int tu_run(const char *cmd, const char *err)
{
    char full[4096];
    cr_assert_lt((size_t)snprintf(full, sizeof full, "(%s) 2>%s >/dev/null", cmd, err), sizeof full);
    int s = system(full);
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

char *tu_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return calloc(1, 1);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc((size_t)n + 1, 1);
    cr_assert_not_null(s);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

size_t tu_file_bytes(const char *path, unsigned char **out)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(n + 1);
    cr_assert_not_null(*out);
    cr_assert_eq(fread(*out, 1, n, f), n, "%s", path);
    fclose(f);
    return n;
}

void tu_write_bytes(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(b, 1, n, f), n, "%s", path);
    cr_assert_eq(fclose(f), 0, "%s", path);
}

void tu_parity_read(const char *path, struct tu_parity *p)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char magic[8];
    unsigned version, n;
    cr_assert_eq(fread(magic, 1, 8, f), 8);
    cr_assert_eq(memcmp(magic, "CLFPARIT", 8), 0, "%s: bad magic", path);
    cr_assert_eq(fread(&version, 4, 1, f), 1);
    cr_assert_eq(version, 1, "%s: version %u, this test reads 1", path, version);
    cr_assert_eq(fread(&n, 4, 1, f), 1);
    p->n = n;
    p->e = calloc(n, sizeof *p->e);
    for (unsigned i = 0; i < n; i++) {
        unsigned len, ndim;
        cr_assert_eq(fread(&len, 4, 1, f), 1);
        cr_assert_lt(len, sizeof p->e[i].name);
        cr_assert_eq(fread(p->e[i].name, 1, len, f), len);
        cr_assert_eq(fread(&ndim, 4, 1, f), 1);
        size_t numel = 1;
        for (unsigned d = 0; d < ndim; d++) {
            unsigned long long dim;
            cr_assert_eq(fread(&dim, 8, 1, f), 1);
            numel *= dim;
        }
        p->e[i].numel = numel;
        p->e[i].data = malloc(numel * sizeof(float) + 1);
        cr_assert_eq(fread(p->e[i].data, 4, numel, f), numel, "%s: truncated at %s", path, p->e[i].name);
    }
    fclose(f);
}

const struct tu_entry *tu_parity_get(const struct tu_parity *p, const char *name)
{
    for (unsigned i = 0; i < p->n; i++)
        if (!strcmp(p->e[i].name, name))
            return &p->e[i];
    cr_assert_fail("fixture lacks %s", name);
    return NULL;
}

int32_t *tu_entry_ids(const struct tu_entry *e)
{
    int32_t *x = malloc(e->numel * sizeof *x);
    for (size_t i = 0; i < e->numel; i++)
        x[i] = (int32_t)e->data[i];
    return x;
}

void tu_parity_free(struct tu_parity *p)
{
    for (unsigned i = 0; i < p->n; i++)
        free(p->e[i].data);
    free(p->e);
    p->e = NULL;
    p->n = 0;
}

/* Splits line at tabs in place into at most max fields; returns the count. */
int tu_fields(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    return n;
}

/* "3 17 0" -> ids (malloc'd, may be empty). */
int32_t *tu_parse_ids(const char *s, size_t *n)
{
    size_t cap = strlen(s) / 2 + 1;
    int32_t *v = malloc(cap * sizeof *v);
    cr_assert(v);
    *n = 0;
    char *end;
    for (const char *p = s; *p;) {
        long x = strtol(p, &end, 10);
        cr_assert(end != p, "bad id list \"%s\"", s);
        v[(*n)++] = (int32_t)x;
        p = end;
        while (*p == ' ') p++;
    }
    return v;
}

bool tu_same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
    return na == nb && (na == 0 || !memcmp(a, b, na * sizeof *a));
}

char *tu_ids_str(const int32_t *ids, size_t n)
{
    char *s = malloc(12 * n + 1), *p = s;
    *p = '\0';
    for (size_t i = 0; i < n; i++) p += sprintf(p, i ? " %d" : "%d", (int)ids[i]);
    return s;
}

void tu_write_copy_corpus(const char *dir, const char *name, int n, unsigned seed)
{
    static const char *words[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"};
    char s[1024], t[1024];
    snprintf(s, sizeof s, "%s/%s.src", dir, name);
    snprintf(t, sizeof t, "%s/%s.tgt", dir, name);
    FILE *a = fopen(s, "w"), *b = fopen(t, "w");
    cr_assert(a && b, "%s", s);
    for (int i = 0; i < n; i++) {
        int len = 2 + (int)(seed % 5);
        for (int j = 0; j < len; j++) {
            seed = seed * 1103515245u + 12345u;
            const char *w = words[(seed >> 16) % 8];
            fprintf(a, "%s%s", j ? " " : "", w);
            fprintf(b, "%s%s", j ? " " : "", w);
        }
        fputc('\n', a), fputc('\n', b);
    }
    fclose(a), fclose(b);
}
