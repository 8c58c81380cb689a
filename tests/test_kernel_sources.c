/* test_kernel_sources.c: a rule of the kernels' source that no device in
 * CI enforces on its own. Every helper function in cl/ that holds a
 * barrier, or calls a helper that does, is declared CLF_GROUP_FN (always
 * inlined, cl/common.h): Mesa's rusticl crashed compiling row_lse, a
 * non-inlined helper around wg_max and wg_sum, and only a rusticl run would
 * notice the next one. The checker reads cl/ as text: top-level function
 * definitions (a '{' in column 0 closes the header), their names, whether
 * they are kernels, and what their bodies call. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MAX_FNS 256

struct fn {
    char name[64];
    char file[64];
    int is_kernel, is_group_fn, has_barrier;
    const char *body, *body_end;
};

struct fns {
    struct fn f[MAX_FNS];
    int n;
};

/* does [b, e) call name( as a whole identifier? */
static int calls(const char *b, const char *e, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = b; p + len < e; p++)
        if (!memcmp(p, name, len) && (p == b || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')))
            for (const char *q = p + len; q < e; q++) {
                if (*q == '(')
                    return 1;
                if (!isspace((unsigned char)*q))
                    break;
            }
    return 0;
}

/* src with comments and preprocessor lines (with their continuations)
 * blanked out, so that braces and names in them do not count */
static char *strip(const char *src)
{
    char *s = strdup(src);
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '/' && s[i + 1] == '*') {
            for (; i < n && !(s[i] == '*' && s[i + 1] == '/'); i++)
                if (s[i] != '\n')
                    s[i] = ' ';
            if (i < n)
                s[i] = s[i + 1] = ' ';
        } else if (s[i] == '/' && s[i + 1] == '/') {
            for (; i < n && s[i] != '\n'; i++)
                s[i] = ' ';
        } else if (s[i] == '#' && (i == 0 || s[i - 1] == '\n')) {
            for (; i < n && !(s[i] == '\n' && s[i - 1] != '\\'); i++)
                s[i] = ' ';
        }
    }
    return s;
}

/* The top-level functions of one stripped source, appended to fs. */
static void scan(struct fns *fs, const char *file, const char *s)
{
    const char *head = s, *p = s;
    while ((p = strstr(p, "\n{")) != NULL) {
        const char *open = p + 1, *q = open;
        int depth = 0;
        do {
            depth += *q == '{';
            depth -= *q == '}';
            q++;
        } while (*q && depth > 0);
        /* the header: from the last ';' or '}' at top level before '{' */
        const char *h = open;
        while (h > head && h[-1] != ';' && h[-1] != '}')
            h--;
        cr_assert_lt(fs->n, MAX_FNS);
        struct fn *f = &fs->f[fs->n];
        memset(f, 0, sizeof *f);
        snprintf(f->file, sizeof f->file, "%s", file);
        /* the name: the identifier before the first '(' that is not an attribute's */
        const char *par = h;
        for (;;) {
            par = memchr(par, '(', (size_t)(open - par));
            cr_assert_not_null(par, "%s: no '(' in a header before offset %td", file, open - s);
            const char *e = par;
            while (e > h && isspace((unsigned char)e[-1]))
                e--;
            const char *b = e;
            while (b > h && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
                b--;
            if ((size_t)(e - b) == strlen("__attribute__") && !memcmp(b, "__attribute__", (size_t)(e - b))) {
                int d = 0;
                do {
                    d += *par == '(';
                    d -= *par == ')';
                    par++;
                } while (d > 0);
                continue;
            }
            snprintf(f->name, sizeof f->name, "%.*s", (int)(e - b), b);
            break;
        }
        size_t hl = (size_t)(open - h);
        char *header = strndup(h, hl);
        f->is_kernel = strstr(header, "__kernel") != NULL;
        f->is_group_fn = strstr(header, "CLF_GROUP_FN") != NULL;
        free(header);
        f->body = open;
        f->body_end = q;
        f->has_barrier = calls(open, q, "barrier");
        fs->n++;
        head = p = q;
    }
}

/* The helpers that reach a barrier and are not CLF_GROUP_FN, as
 * "file:name" lines into out; returns how many. */
static int unmarked_group_helpers(struct fns *fs, char *out, size_t cap)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < fs->n; i++)
            for (int j = 0; j < fs->n && !fs->f[i].has_barrier; j++)
                if (fs->f[j].has_barrier && !fs->f[j].is_kernel &&
                    calls(fs->f[i].body, fs->f[i].body_end, fs->f[j].name))
                    fs->f[i].has_barrier = changed = 1;
    }
    int bad = 0;
    out[0] = 0;
    for (int i = 0; i < fs->n; i++)
        if (fs->f[i].has_barrier && !fs->f[i].is_kernel && !fs->f[i].is_group_fn) {
            size_t used = strlen(out);
            snprintf(out + used, cap - used, "%s:%s ", fs->f[i].file, fs->f[i].name);
            bad++;
        }
    return bad;
}

/* the checker finds what it should in a made-up source, so that its
 * passing on cl/ means something */
Test(kernel_sources, checker_finds_an_unmarked_helper)
{
    const char *src = "#define CLF_GROUP_FN static inline __attribute__((always_inline))\n"
                      "CLF_GROUP_FN float good(__local float *r)\n{\n    barrier(CLK_LOCAL_MEM_FENCE);\n"
                      "    return r[0];\n}\n"
                      "/* calls good( in a comment { */\n"
                      "static float bad(__local float *r, uint n)\n{\n    for (uint i = 0; i < n; i++) {\n"
                      "        r[i] = 0;\n    }\n    return good(r);\n}\n"
                      "static inline float plain(float x)\n{\n    return x;\n}\n"
                      "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
                      "void k(__global float *y)\n{\n    __local float r[64];\n    y[0] = bad(r, 3) + plain(1);\n"
                      "    barrier(CLK_GLOBAL_MEM_FENCE);\n}\n";
    struct fns *fs = calloc(1, sizeof *fs);
    char *s = strip(src), out[512];
    scan(fs, "made_up.cl", s);
    cr_assert_eq(fs->n, 4, "found %d functions", fs->n);
    cr_expect_str_eq(fs->f[3].name, "k");
    cr_expect(fs->f[3].is_kernel);
    cr_assert_eq(unmarked_group_helpers(fs, out, sizeof out), 1, "%s", out);
    cr_expect_str_eq(out, "made_up.cl:bad ");
    free(s);
    free(fs);
}

Test(kernel_sources, every_helper_that_reaches_a_barrier_is_always_inlined)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cl", CLF_SOURCE_DIR);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    struct fns *fs = calloc(1, sizeof *fs);
    char *texts[64];
    int nt = 0, kernels = 0, barriers = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 3 || (strcmp(e->d_name + len - 3, ".cl") && strcmp(e->d_name + len - 2, ".h")))
            continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unsigned char *raw;
        size_t n = tu_file_bytes(path, &raw);
        raw[n] = 0;
        cr_assert_lt(nt, 64);
        texts[nt] = strip((char *)raw);
        free(raw);
        scan(fs, e->d_name, texts[nt++]);
    }
    closedir(d);
    char out[2048];
    int bad = unmarked_group_helpers(fs, out, sizeof out);
    for (int i = 0; i < fs->n; i++) {
        kernels += fs->f[i].is_kernel;
        barriers += fs->f[i].has_barrier;
    }
    /* what cl/ holds today, roughly: a scan that finds nothing proves nothing */
    cr_assert_gt(kernels, 30, "found %d kernels in %s", kernels, dir);
    cr_assert_gt(barriers, 20, "found %d functions that reach a barrier in %s", barriers, dir);
    cr_expect_eq(bad, 0, "helpers that reach a barrier without CLF_GROUP_FN (cl/common.h says why): %s", out);
    for (int i = 0; i < nt; i++)
        free(texts[i]);
    free(fs);
}
