/* tuning.c: CLBlast's GEMM parameters per device: their constraints,
 * handing them to CLBlast, the tuning file in the cache folder (JSON, keyed
 * by platform, device name and driver version), and working out which
 * parameters are in force (file, table, or CLBlast's database). The search
 * itself is the `clformer tune` tool's (tools/cmd_tune.c). */
#include <clblast_c.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "json.h"

struct pname {
    const char *name;
    size_t offset;
};
#define X(f, n) {n, offsetof(struct clf_xgemm_params, f)}
static const struct pname xgemm_names[] = {
    X(gemmk, "GEMMK"), X(kreg, "KREG"), X(kwg, "KWG"),   X(kwi, "KWI"),   X(mdima, "MDIMA"), X(mdimc, "MDIMC"),
    X(mwg, "MWG"),     X(ndimb, "NDIMB"), X(ndimc, "NDIMC"), X(nwg, "NWG"), X(sa, "SA"),       X(sb, "SB"),
    X(strm, "STRM"),   X(strn, "STRN"), X(vwm, "VWM"),   X(vwn, "VWN"),
};
#undef X
#define X(f, n) {n, offsetof(struct clf_xgemm_direct_params, f)}
static const struct pname direct_names[] = {
    X(kwid, "KWID"), X(mdimad, "MDIMAD"), X(mdimcd, "MDIMCD"), X(ndimbd, "NDIMBD"), X(ndimcd, "NDIMCD"),
    X(pada, "PADA"), X(padb, "PADB"),     X(vwmd, "VWMD"),     X(vwnd, "VWND"),     X(wgd, "WGD"),
};
#undef X
#define NXGEMM (sizeof xgemm_names / sizeof xgemm_names[0])
#define NDIRECT (sizeof direct_names / sizeof direct_names[0])

static unsigned *field(void *base, const struct pname *p) { return (unsigned *)((char *)base + p->offset); }
static unsigned cfield(const void *base, const struct pname *p)
{
    return *(const unsigned *)((const char *)base + p->offset);
}

/* CLBlast 1.5.3's "default" entries (src/database/kernels/xgemm*,
 * gemm_routine), which devices without an entry of their own get. */
const struct clf_gemm_params clf_gemm_params_generic = {
    .xgemm = {.gemmk = 0, .kreg = 1, .kwg = 32, .kwi = 2, .mdima = 8, .mdimc = 8, .mwg = 32, .ndimb = 16,
              .ndimc = 16, .nwg = 32, .sa = 1, .sb = 1, .strm = 0, .strn = 0, .vwm = 4, .vwn = 2},
    .direct = {.kwid = 2, .mdimad = 8, .mdimcd = 8, .ndimbd = 8, .ndimcd = 8, .pada = 1, .padb = 1, .vwmd = 1,
               .vwnd = 1, .wgd = 16},
    .min_indirect = 896,
};

/* ------------------------------------------------------- constraints */

static bool pow2(unsigned v) { return v && !(v & (v - 1)); }
static bool mult(unsigned a, unsigned b) { return b && a % b == 0; }

#define RULE(cond, ...)                            \
    do {                                           \
        if (!(cond)) {                             \
            snprintf(why, len, __VA_ARGS__);       \
            return false;                          \
        }                                          \
    } while (0)

bool clf_gemm_params_check(const struct clf_gemm_params *p, const struct clf_device_info *dev, char *why,
                           size_t len)
{
    char dummy[8];
    if (!why || !len) {
        why = dummy;
        len = sizeof dummy;
    }
    const struct clf_xgemm_params *x = &p->xgemm;
    for (size_t i = 0; i < NXGEMM; i++) {
        unsigned v = cfield(x, &xgemm_names[i]);
        RULE(v <= 1024, "Xgemm %s is %u, more than 1024", xgemm_names[i].name, v);
    }
    RULE(x->gemmk <= 1, "Xgemm GEMMK is %u, want 0 or 1", x->gemmk);
    RULE(x->sa <= 1 && x->sb <= 1 && x->strm <= 1 && x->strn <= 1, "Xgemm SA, SB, STRM and STRN are 0 or 1");
    RULE(pow2(x->vwm) && x->vwm <= 16 && pow2(x->vwn) && x->vwn <= 16, "Xgemm VWM (%u) and VWN (%u) want 1, 2, 4, 8 or 16",
         x->vwm, x->vwn);
    RULE(x->mdimc && x->ndimc && x->mdima && x->ndimb && x->mwg && x->nwg && x->kwg && x->kwi && x->kreg,
         "Xgemm: MDIMC, NDIMC, MDIMA, NDIMB, MWG, NWG, KWG, KWI and KREG must be at least 1");
    RULE(mult(x->mwg, x->mdimc * x->vwm), "Xgemm MWG (%u) is not a multiple of MDIMC*VWM (%u)", x->mwg,
         x->mdimc * x->vwm);
    RULE(mult(x->nwg, x->ndimc * x->vwn), "Xgemm NWG (%u) is not a multiple of NDIMC*VWN (%u)", x->nwg,
         x->ndimc * x->vwn);
    RULE(mult(x->mwg, x->mdima * x->vwm), "Xgemm MWG (%u) is not a multiple of MDIMA*VWM (%u)", x->mwg,
         x->mdima * x->vwm);
    RULE(mult(x->nwg, x->ndimb * x->vwn), "Xgemm NWG (%u) is not a multiple of NDIMB*VWN (%u)", x->nwg,
         x->ndimb * x->vwn);
    if (x->gemmk == 0) {
        RULE(x->kreg == 1, "Xgemm KREG is %u; with GEMMK 0 it must be 1", x->kreg);
        RULE(mult(x->kwg, x->kwi), "Xgemm KWG (%u) is not a multiple of KWI (%u)", x->kwg, x->kwi);
        unsigned threads = x->mdimc * x->ndimc;
        RULE(mult(threads, x->mdima) && mult(threads, x->ndimb),
             "Xgemm MDIMA (%u) and NDIMB (%u) must divide MDIMC*NDIMC (%u)", x->mdima, x->ndimb, threads);
        RULE(mult(x->kwg, threads / x->mdima) && mult(x->kwg, threads / x->ndimb),
             "Xgemm KWG (%u) must be a multiple of MDIMC*NDIMC/MDIMA (%u) and MDIMC*NDIMC/NDIMB (%u)", x->kwg,
             threads / x->mdima, threads / x->ndimb);
    } else {
        RULE(x->kwg == 1 && x->kwi == 1, "Xgemm KWG and KWI must be 1 with GEMMK 1");
        RULE(x->sa == 0 && x->sb == 0, "Xgemm SA and SB must be 0 with GEMMK 1");
        RULE(x->mdima == x->mdimc && x->ndimb == x->ndimc, "Xgemm MDIMA = MDIMC and NDIMB = NDIMC with GEMMK 1");
        RULE(mult(x->kreg, x->vwn), "Xgemm KREG (%u) must be a multiple of VWN (%u) with GEMMK 1", x->kreg, x->vwn);
    }
    const struct clf_xgemm_direct_params *d = &p->direct;
    for (size_t i = 0; i < NDIRECT; i++) {
        unsigned v = cfield(d, &direct_names[i]);
        RULE(v <= 1024, "XgemmDirect %s is %u, more than 1024", direct_names[i].name, v);
    }
    RULE(d->pada <= 1 && d->padb <= 1, "XgemmDirect PADA and PADB are 0 or 1");
    RULE(pow2(d->vwmd) && d->vwmd <= 16 && pow2(d->vwnd) && d->vwnd <= 16,
         "XgemmDirect VWMD (%u) and VWND (%u) want 1, 2, 4, 8 or 16", d->vwmd, d->vwnd);
    RULE(d->wgd && d->kwid && d->mdimcd && d->ndimcd && d->mdimad && d->ndimbd,
         "XgemmDirect: WGD, KWID, MDIMCD, NDIMCD, MDIMAD and NDIMBD must be at least 1");
    RULE(mult(d->wgd, d->kwid), "XgemmDirect WGD (%u) is not a multiple of KWID (%u)", d->wgd, d->kwid);
    RULE(mult(d->wgd, d->mdimcd * d->vwmd) && mult(d->wgd, d->ndimcd * d->vwnd),
         "XgemmDirect WGD (%u) must be a multiple of MDIMCD*VWMD (%u) and NDIMCD*VWND (%u)", d->wgd,
         d->mdimcd * d->vwmd, d->ndimcd * d->vwnd);
    RULE(mult(d->wgd, d->mdimad * d->vwmd) && mult(d->wgd, d->ndimbd * d->vwnd),
         "XgemmDirect WGD (%u) must be a multiple of MDIMAD*VWMD (%u) and NDIMBD*VWND (%u)", d->wgd,
         d->mdimad * d->vwmd, d->ndimbd * d->vwnd);
    unsigned dthreads = d->mdimcd * d->ndimcd;
    RULE(mult(dthreads, d->mdimad) && mult(dthreads, d->ndimbd),
         "XgemmDirect MDIMAD (%u) and NDIMBD (%u) must divide MDIMCD*NDIMCD (%u)", d->mdimad, d->ndimbd, dthreads);
    RULE(mult(d->wgd, dthreads / d->mdimad) && mult(d->wgd, dthreads / d->ndimbd),
         "XgemmDirect WGD (%u) must be a multiple of MDIMCD*NDIMCD/MDIMAD and MDIMCD*NDIMCD/NDIMBD", d->wgd);
    RULE(p->min_indirect <= 1u << 20, "GemmRoutine XGEMM_MIN_INDIRECT_SIZE is %u, more than 2^20", p->min_indirect);
    if (dev) {
        size_t wg = (size_t)x->mdimc * x->ndimc, dwg = (size_t)dthreads;
        RULE(wg <= dev->max_work_group, "Xgemm MDIMC*NDIMC (%zu) exceeds the device's work-group limit (%zu)", wg,
             dev->max_work_group);
        RULE(dwg <= dev->max_work_group,
             "XgemmDirect MDIMCD*NDIMCD (%zu) exceeds the device's work-group limit (%zu)", dwg,
             dev->max_work_group);
        cl_ulong lm = 4ull * (x->sa * x->kwg * x->mwg + x->sb * x->kwg * x->nwg);
        cl_ulong dlm = 4ull * ((cl_ulong)d->wgd * (d->wgd + d->pada) + (cl_ulong)d->wgd * (d->wgd + d->padb));
        RULE(lm <= dev->local_mem, "Xgemm needs %llu bytes of local memory, the device has %llu",
             (unsigned long long)lm, (unsigned long long)dev->local_mem);
        RULE(dlm <= dev->local_mem, "XgemmDirect needs %llu bytes of local memory, the device has %llu",
             (unsigned long long)dlm, (unsigned long long)dev->local_mem);
    }
    return true;
}

void clf_gemm_params_str(const struct clf_gemm_params *p, char *out, size_t len)
{
    size_t used = 0;
#define PUT(...)                                                              \
    do {                                                                      \
        int n_ = snprintf(out + used, used < len ? len - used : 0, __VA_ARGS__); \
        if (n_ > 0)                                                           \
            used += (size_t)n_;                                               \
    } while (0)
    if (len)
        out[0] = 0;
    PUT("Xgemm");
    for (size_t i = 0; i < NXGEMM; i++)
        PUT(" %s=%u", xgemm_names[i].name, cfield(&p->xgemm, &xgemm_names[i]));
    PUT("; XgemmDirect");
    for (size_t i = 0; i < NDIRECT; i++)
        PUT(" %s=%u", direct_names[i].name, cfield(&p->direct, &direct_names[i]));
    PUT("; XGEMM_MIN_INDIRECT_SIZE=%u", p->min_indirect);
#undef PUT
}

/* ------------------------------------------- clformer's own kernels */

static const struct pname kernel_names[] = {
    {"ATTN_TILE_Q", offsetof(struct clf_kernel_params, attn_tile_q)},
    {"ATTN_TILE_K", offsetof(struct clf_kernel_params, attn_tile_k)},
    {"ROWS_WG", offsetof(struct clf_kernel_params, rows_wg)},
};
#define NKERNEL (sizeof kernel_names / sizeof kernel_names[0])

bool clf_kernel_params_check(const struct clf_kernel_params *p, char *why, size_t len)
{
    char dummy[8];
    if (!why || !len) {
        why = dummy;
        len = sizeof dummy;
    }
    for (size_t i = 0; i < NKERNEL; i++) {
        unsigned v = cfield(p, &kernel_names[i]);
        RULE(v == 0 || (pow2(v) && v <= 1024), "Kernels %s is %u; want 0 (built-in) or a power of two up to 1024",
             kernel_names[i].name, v);
    }
    RULE(p->attn_tile_k == 0 || p->attn_tile_k >= 8, "Kernels ATTN_TILE_K is %u; want 0 (built-in) or at least 8",
         p->attn_tile_k);
    return true;
}

clf_status clf_kernel_params_set(clf_ctx_t *ctx, const struct clf_kernel_params *p)
{
    char why[256];
    if (!clf_kernel_params_check(p, why, sizeof why))
        return clf_error_set(ctx, CLF_ERR_ARG, "kernel parameters refused: %s", why);
    ctx->kparams = *p;
    return CLF_OK;
}

#undef RULE

struct clf_kernel_params clf_kernel_params_get(const clf_ctx_t *ctx) { return ctx->kparams; }

/* ------------------------------------------------------ applying */

static clf_status override(clf_ctx_t *ctx, const char *kernel, const struct pname *names, size_t n, const void *base)
{
    const char *pn[32];
    size_t pv[32];
    for (size_t i = 0; i < n; i++) {
        pn[i] = names[i].name;
        pv[i] = cfield(base, &names[i]);
    }
    CLBlastStatusCode s = CLBlastOverrideParameters(ctx->dev.device, kernel, CLBlastPrecisionSingle, n, pn, pv);
    if (s != CLBlastSuccess)
        return clf_error_set(ctx, CLF_ERR_BLAS, "CLBlastOverrideParameters(\"%s\") refused the parameters: status %d",
                             kernel, (int)s);
    return CLF_OK;
}

clf_status clf_gemm_params_apply(clf_ctx_t *ctx, const struct clf_gemm_params *p)
{
    char why[256];
    if (!clf_gemm_params_check(p, &ctx->dev, why, sizeof why))
        return clf_error_set(ctx, CLF_ERR_ARG, "GEMM parameters refused: %s", why);
    static const struct pname routine[] = {{"XGEMM_MIN_INDIRECT_SIZE", offsetof(struct clf_gemm_params, min_indirect)}};
    clf_status st;
    if ((st = override(ctx, "Xgemm", xgemm_names, NXGEMM, &p->xgemm)) ||
        (st = override(ctx, "XgemmDirect", direct_names, NDIRECT, &p->direct)) ||
        (st = override(ctx, "GemmRoutine", routine, 1, p)))
        return st;
    return CLF_OK;
}

/* ------------------------------------------------------ the file */

clf_status clf_tuning_path(const struct clf_device_info *dev, char *out, size_t len)
{
    char dir[3072];
    clf_status st = clf_cache_dir(dir, sizeof dir);
    if (st)
        return st;
    uint64_t h = CLF_FNV_INIT;
    h = clf_fnv1a(h, dev->platform_name, strlen(dev->platform_name) + 1);
    h = clf_fnv1a(h, dev->device_name, strlen(dev->device_name) + 1);
    h = clf_fnv1a(h, dev->driver_version, strlen(dev->driver_version) + 1);
    /* a device shaped by CLF_DEVICE_LIMITS is another device to tune for: the
     * real one's file was measured with limits the shaped one has not */
    if (dev->shaped[0])
        h = clf_fnv1a(h, dev->shaped, strlen(dev->shaped) + 1);
    int n = snprintf(out, len, "%s/tuning-%016llx.json", dir, (unsigned long long)h);
    if (n < 0 || (size_t)n >= len)
        return clf_error_set(NULL, CLF_ERR_IO, "tuning file path too long (cache folder %s)", dir);
    return CLF_OK;
}

static void write_params(FILE *f, const char *kernel, const struct pname *names, size_t n, const void *base)
{
    fprintf(f, "  \"%s\": {", kernel);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s\"%s\": %u", i ? ", " : "", names[i].name, cfield(base, &names[i]));
    fprintf(f, "},\n");
}

clf_status clf_tuning_save(const char *path, const struct clf_tuning_record *r)
{
    char tmp[4200];
    char why[256];
    if (!clf_gemm_params_check(&r->gemm, NULL, why, sizeof why) ||
        !clf_kernel_params_check(&r->kernels, why, sizeof why))
        return clf_error_set(NULL, CLF_ERR_ARG, "not writing %s: %s", path, why);
    if (r->nshapes < 0 || r->nshapes > CLF_TUNING_MAX_SHAPES)
        return clf_error_set(NULL, CLF_ERR_ARG, "not writing %s: %d shapes", path, r->nshapes);
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = 0;
    if (slash && clf_mkdir_p(dir))
        return clf_error_set(NULL, CLF_ERR_IO, "cannot create the folder of %s: %s", path, strerror(errno));
    FILE *f = fopen(tmp, "w");
    if (!f)
        return clf_error_set(NULL, CLF_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    fprintf(f, "{\n  \"format\": \"clformer-tuning\",\n  \"version\": 1,\n  \"platform\": ");
    clf_json_write_str(f, r->platform);
    fprintf(f, ",\n  \"device\": ");
    clf_json_write_str(f, r->device);
    fprintf(f, ",\n  \"driver\": ");
    clf_json_write_str(f, r->driver);
    fprintf(f, ",\n  \"clblast\": ");
    clf_json_write_str(f, r->clblast);
    fprintf(f, ",\n  \"created\": ");
    clf_json_write_str(f, r->created);
    fprintf(f, ",\n  \"minutes\": %.3f,\n  \"candidates\": %u,\n", r->minutes, r->candidates);
    write_params(f, "Xgemm", xgemm_names, NXGEMM, &r->gemm.xgemm);
    write_params(f, "XgemmDirect", direct_names, NDIRECT, &r->gemm.direct);
    fprintf(f, "  \"GemmRoutine\": {\"XGEMM_MIN_INDIRECT_SIZE\": %u},\n", r->gemm.min_indirect);
    write_params(f, "Kernels", kernel_names, NKERNEL, &r->kernels);
    fprintf(f, "  \"shapes\": [");
    for (int i = 0; i < r->nshapes; i++) {
        const struct clf_tuning_shape *s = &r->shapes[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        clf_json_write_str(f, s->name);
        fprintf(f,
                ", \"m\": %u, \"n\": %u, \"k\": %u, \"a_transposed\": %s, \"b_transposed\": %s, "
                "\"gflops_before\": %.2f, \"gflops_after\": %.2f, \"gflops_reference\": %.2f}",
                s->m, s->n, s->k, s->ta ? "true" : "false", s->tb ? "true" : "false", s->gflops_before,
                s->gflops_after, s->gflops_reference);
    }
    fprintf(f, "\n  ]\n}\n");
    bool bad = ferror(f);
    if (fclose(f) || bad) {
        remove(tmp);
        return clf_error_set(NULL, CLF_ERR_IO, "writing %s failed", tmp);
    }
    if (rename(tmp, path)) {
        int e = errno;
        remove(tmp);
        return clf_error_set(NULL, CLF_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return CLF_OK;
}

static bool copy_str(const struct clf_json *j, const char *key, char *out, size_t len)
{
    const char *s = clf_json_str(j, key);
    if (!s || strlen(s) >= len)
        return false;
    strcpy(out, s);
    return true;
}

static clf_status read_params(const char *path, const struct clf_json *root, const char *kernel,
                              const struct pname *names, size_t n, void *base)
{
    const struct clf_json *obj = clf_json_get(root, kernel);
    if (!obj || obj->type != CLF_JSON_OBJECT)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: no \"%s\" object", path, kernel);
    for (size_t i = 0; i < n; i++) {
        double v;
        if (!clf_json_num(obj, names[i].name, &v))
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"%s\" has no number \"%s\"", path, kernel,
                                 names[i].name);
        if (!(v >= 0 && v <= 1 << 20) || v != (double)(unsigned)v)
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"%s\".\"%s\" is %g, not a whole number in 0..2^20",
                                 path, kernel, names[i].name, v);
        *field(base, &names[i]) = (unsigned)v;
    }
    if (obj->count != n)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"%s\" has %zu members, expected %zu", path, kernel,
                             obj->count, n);
    return CLF_OK;
}

clf_status clf_tuning_load(const char *path, const struct clf_device_info *dev, struct clf_tuning_record *r)
{
    memset(r, 0, sizeof *r);
    char *text;
    size_t len;
    clf_status rst = clf_file_read(path, 1u << 20, &text, &len);
    if (rst == CLF_ERR_FORMAT)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: more than 1 MiB, not a tuning file", path);
    if (rst != CLF_OK)
        return rst;
    struct clf_json root;
    char err[256];
    clf_status st = CLF_OK;
    if (!clf_json_parse(text, len, &root, err, sizeof err)) {
        free(text);
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not valid JSON: %s", path, err);
    }
    free(text);
    const char *fmt = clf_json_str(&root, "format");
    double version = 0, num;
    if (!fmt || strcmp(fmt, "clformer-tuning") || !clf_json_num(&root, "version", &version) || version != 1) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not a clformer tuning file of version 1", path);
        goto done;
    }
    if (!copy_str(&root, "platform", r->platform, sizeof r->platform) ||
        !copy_str(&root, "device", r->device, sizeof r->device) ||
        !copy_str(&root, "driver", r->driver, sizeof r->driver)) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"platform\", \"device\" or \"driver\" missing or too long",
                           path);
        goto done;
    }
    copy_str(&root, "clblast", r->clblast, sizeof r->clblast);
    copy_str(&root, "created", r->created, sizeof r->created);
    if (clf_json_num(&root, "minutes", &num))
        r->minutes = num;
    if (clf_json_num(&root, "candidates", &num) && num >= 0 && num < 4e9)
        r->candidates = (unsigned)num;
    static const struct pname routine[] = {
        {"XGEMM_MIN_INDIRECT_SIZE", offsetof(struct clf_gemm_params, min_indirect)}};
    if ((st = read_params(path, &root, "Xgemm", xgemm_names, NXGEMM, &r->gemm.xgemm)) ||
        (st = read_params(path, &root, "XgemmDirect", direct_names, NDIRECT, &r->gemm.direct)) ||
        (st = read_params(path, &root, "GemmRoutine", routine, 1, &r->gemm)))
        goto done;
    /* "Kernels" came later than the rest: a file without it tunes GEMM only */
    if (clf_json_get(&root, "Kernels") &&
        (st = read_params(path, &root, "Kernels", kernel_names, NKERNEL, &r->kernels)))
        goto done;
    char why[256];
    if (!clf_gemm_params_check(&r->gemm, dev, why, sizeof why) ||
        !clf_kernel_params_check(&r->kernels, why, sizeof why)) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: %s", path, why);
        goto done;
    }
    if (dev && (strcmp(r->platform, dev->platform_name) || strcmp(r->device, dev->device_name) ||
                strcmp(r->driver, dev->driver_version))) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: made for '%s' (%s, driver %s), not '%s' (%s, driver %s)", path,
                           r->device, r->platform, r->driver, dev->device_name, dev->platform_name,
                           dev->driver_version);
        goto done;
    }
    const struct clf_json *shapes = clf_json_get(&root, "shapes");
    if (shapes && shapes->type == CLF_JSON_ARRAY) {
        for (size_t i = 0; i < shapes->count && r->nshapes < CLF_TUNING_MAX_SHAPES; i++) {
            const struct clf_json *s = &shapes->items[i];
            struct clf_tuning_shape *o = &r->shapes[r->nshapes];
            double m, n, k;
            if (!copy_str(s, "name", o->name, sizeof o->name) || !clf_json_num(s, "m", &m) ||
                !clf_json_num(s, "n", &n) || !clf_json_num(s, "k", &k) ||
                !(m >= 0 && m < 4e9 && n >= 0 && n < 4e9 && k >= 0 && k < 4e9))  /* cast to unsigned below */
                continue;
            o->m = (unsigned)m;
            o->n = (unsigned)n;
            o->k = (unsigned)k;
            const struct clf_json *ta = clf_json_get(s, "a_transposed"), *tb = clf_json_get(s, "b_transposed");
            o->ta = ta && ta->type == CLF_JSON_BOOL && ta->boolean;
            o->tb = tb && tb->type == CLF_JSON_BOOL && tb->boolean;
            clf_json_num(s, "gflops_before", &o->gflops_before);
            clf_json_num(s, "gflops_after", &o->gflops_after);
            clf_json_num(s, "gflops_reference", &o->gflops_reference);
            r->nshapes++;
        }
    }
done:
    clf_json_free(&root);
    return st;
}

/* ------------------------------------------------- what is in force */

const char *clf_tuning_source_str(enum clf_tuning_source s)
{
    switch (s) {
    case CLF_TUNING_CLBLAST: return "clblast";
    case CLF_TUNING_TABLE: return "table";
    case CLF_TUNING_FILE: return "file";
    case CLF_TUNING_OFF: return "off";
    }
    return "?";
}

static bool tuning_disabled(void)
{
    const char *e = getenv("CLF_TUNING");
    return e && (!strcmp(e, "off") || !strcmp(e, "0") || !strcmp(e, "no"));
}

clf_status clf_tuning_query(const clf_ctx_t *ctx, struct clf_tuning_info *out)
{
    memset(out, 0, sizeof *out);
    out->source = CLF_TUNING_CLBLAST;
    clf_status st = clf_tuning_path(&ctx->dev, out->path, sizeof out->path);
    if (st) {
        snprintf(out->file_message, sizeof out->file_message, "%s", clf_ctx_error(NULL));
        out->file_status = st;
    } else if (access(out->path, F_OK) == 0) {
        out->file_present = true;
        out->file_status = clf_tuning_load(out->path, &ctx->dev, &out->record);
        if (out->file_status)
            snprintf(out->file_message, sizeof out->file_message, "%s", clf_ctx_error(NULL));
    }
    out->entry = clf_tuning_table_lookup(NULL, 0, &ctx->dev, &out->level);
    if (tuning_disabled()) {
        out->source = CLF_TUNING_OFF;
    } else if (out->file_present && out->file_status == CLF_OK) {
        out->source = CLF_TUNING_FILE;
        out->gemm = out->record.gemm;
        out->kernels = out->record.kernels;
    } else if (out->entry) {
        out->source = CLF_TUNING_TABLE;
        out->gemm = out->entry->gemm;
    }
    out->apply_status = ctx->tuning_status;
    if (ctx->tuning_status) {
        snprintf(out->apply_message, sizeof out->apply_message, "%s", ctx->tuning_message);
        out->source = CLF_TUNING_CLBLAST;
    }
    return st;
}

clf_status clf_tuning_apply(clf_ctx_t *ctx)
{
    struct clf_tuning_info *info = malloc(sizeof *info);
    if (!info)
        return clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory reading the tuning state");
    /* a tuning file that cannot be read is in info->file_status: the table
     * entry or CLBlast's defaults apply, as clf_tuning_query reports */
    (void)clf_tuning_query(ctx, info);
    clf_status st = CLF_OK;
    if (info->source == CLF_TUNING_FILE || info->source == CLF_TUNING_TABLE)
        st = clf_gemm_params_apply(ctx, &info->gemm);
    ctx->kparams = info->kernels;
    ctx->tuning_status = st;
    if (st)
        snprintf(ctx->tuning_message, sizeof ctx->tuning_message, "%s %.200s: %.280s", clf_tuning_source_str(info->source),
                 info->source == CLF_TUNING_FILE ? info->path : info->entry ? info->entry->name : "", ctx->error);
    free(info);
    return st;
}

clf_status clf_tuning_reset(const clf_ctx_t *ctx, bool *removed)
{
    char path[1024];
    *removed = false;
    clf_status st = clf_tuning_path(&ctx->dev, path, sizeof path);
    if (st)
        return st;
    if (remove(path) == 0) {
        *removed = true;
        return CLF_OK;
    }
    if (errno == ENOENT)
        return CLF_OK;
    return clf_error_set(NULL, CLF_ERR_IO, "cannot delete %s: %s", path, strerror(errno));
}
