/* tuning_file.c: CLBlast's GEMM parameters per device: their constraints,
 * handing them to CLBlast, the tuning file in the cache folder (JSON, keyed
 * by platform, device name and driver version), and working out which
 * parameters are in force (file, table, or CLBlast's database). Every
 * parameter is reached by name through the one table of tunables
 * (tunables.c). The search itself is the `clformer tune` tool's
 * (tools/cmd_tune.c). */
#include <clblast_c.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/files.h"
#include "clformer.h"
#include "clformer_json.h"
#include "ctx.h"
#include "gemm_paths.h"
#include "settings.h"

static const struct clf_param_def *defs_all(size_t *n) { return clf_param_defs(n); }

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
    /* each value in its range (tunables.c), then the rules between them */
    size_t ndefs;
    const struct clf_param_def *defs = defs_all(&ndefs);
    const struct clf_params all = {.gemm = *p};
    for (size_t i = 0; i < ndefs; i++)
        if (defs[i].group != CLF_PARAM_KERNELS && !clf_param_ok(&defs[i], clf_param_value(&all, &defs[i]), why, len))
            return false;
    const struct clf_xgemm_params *x = &p->xgemm;
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
    size_t used = 0, ndefs;
    const struct clf_param_def *defs = defs_all(&ndefs);
    const struct clf_params all = {.gemm = *p};
    if (len)
        out[0] = 0;
    for (size_t i = 0; i < ndefs; i++) {
        const struct clf_param_def *d = &defs[i];
        if (d->group == CLF_PARAM_KERNELS)
            continue;
        bool first = !i || defs[i - 1].group != d->group;
        int n = snprintf(out + used, used < len ? len - used : 0, "%s%s %s=%u", first && i ? "; " : "",
                         first ? clf_param_group_str(d->group) : "", d->name,
                         clf_param_value(&all, d));
        if (n > 0)
            used += (size_t)n;
    }
}

#undef RULE

/* ------------------------------------------------------ applying */

/* Gives CLBlast the parameters of one group (its kernel's). */
static clf_status override(clf_ctx_t *ctx, enum clf_param_group group, const struct clf_params *p)
{
    const char *pn[CLF_PARAMS_MAX];
    size_t pv[CLF_PARAMS_MAX], n = 0, ndefs;
    const struct clf_param_def *defs = defs_all(&ndefs);
    for (size_t i = 0; i < ndefs; i++)
        if (defs[i].group == group) {
            pn[n] = defs[i].name;
            pv[n++] = clf_param_value(p, &defs[i]);
        }
    const char *kernel = clf_param_group_str(group);
    clf_blast_lock();  /* CLBlast's database of overrides is process-wide (gemm_common.c) */
    CLBlastStatusCode s = CLBlastOverrideParameters(ctx->dev.device, kernel, CLBlastPrecisionSingle, n, pn, pv);
    clf_blast_unlock();
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
    const struct clf_params all = {.gemm = *p};
    clf_status st;
    if ((st = override(ctx, CLF_PARAM_XGEMM, &all)) || (st = override(ctx, CLF_PARAM_XGEMM_DIRECT, &all)) ||
        (st = override(ctx, CLF_PARAM_GEMM_ROUTINE, &all)))
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

/* One object per group: "Xgemm": {"GEMMK": 0, ...}. An optional member
 * is written only when set, so that older readers still take the file. */
static void write_groups(FILE *f, const struct clf_params *p)
{
    size_t ndefs;
    const struct clf_param_def *defs = defs_all(&ndefs);
    for (size_t i = 0; i < ndefs; i++) {
        const struct clf_param_def *d = &defs[i];
        bool first = !i || defs[i - 1].group != d->group, last = i + 1 == ndefs || defs[i + 1].group != d->group;
        unsigned v = clf_param_value(p, d);
        if (first)
            fprintf(f, "  \"%s\": {", clf_param_group_str(d->group));
        if (v || !(d->flags & CLF_PARAM_OPTIONAL))
            fprintf(f, "%s\"%s\": %u", first ? "" : ", ", d->name, v);
        if (last)
            fprintf(f, "},\n");
    }
}

clf_status clf_tuning_save(const char *path, const struct clf_tuning_record *r)
{
    char why[256];
    if (!clf_gemm_params_check(&r->gemm, NULL, why, sizeof why) ||
        !clf_kernel_params_check(&r->kernels, why, sizeof why))
        return clf_error_set(NULL, CLF_ERR_ARG, "not writing %s: %s", path, why);
    if (r->nshapes < 0 || r->nshapes > CLF_TUNING_MAX_SHAPES)
        return clf_error_set(NULL, CLF_ERR_ARG, "not writing %s: %d shapes", path, r->nshapes);
    if (clf_mkdir_parent(path))
        return clf_error_set(NULL, CLF_ERR_IO, "cannot create the folder of %s: %s", path, strerror(errno));
    struct clf_file_out out;
    clf_status st = clf_file_out_open(&out, path);
    if (st != CLF_OK)
        return st;
    FILE *f = out.f;
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
    const struct clf_params all = {.gemm = r->gemm, .kernels = r->kernels};
    write_groups(f, &all);
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
    return clf_file_out_close(&out, true);
}

static bool copy_str(const struct clf_json *j, const char *key, char *out, size_t len)
{
    const char *s = clf_json_str(j, key);
    if (!s || strlen(s) >= len)
        return false;
    strcpy(out, s);
    return true;
}

/* Reads the group's object into p: every member a tunable of the group,
 * a whole number, and present unless optional. */
static clf_status read_group(const char *path, const struct clf_json *root, enum clf_param_group group,
                             struct clf_params *p)
{
    const char *kernel = clf_param_group_str(group);
    const struct clf_json *obj = clf_json_get(root, kernel);
    if (!obj || obj->type != CLF_JSON_OBJECT)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: no \"%s\" object", path, kernel);
    size_t ndefs;
    const struct clf_param_def *defs = defs_all(&ndefs);
    for (size_t i = 0; i < ndefs; i++) {
        const struct clf_param_def *d = &defs[i];
        double v;
        if (d->group != group || (!clf_json_get(obj, d->name) && (d->flags & CLF_PARAM_OPTIONAL)))
            continue;
        if (!clf_json_num(obj, d->name, &v))
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"%s\" has no number \"%s\"", path, kernel, d->name);
        if (!(v >= 0 && v <= 1 << 20) || v != (double)(unsigned)v)
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"%s\".\"%s\" is %g, not a whole number in 0..2^20",
                                 path, kernel, d->name, v);
        *clf_param_ref(p, d) = (unsigned)v;
    }
    for (size_t k = 0; k < obj->count; k++)
        if (!clf_param_find(group, obj->keys[k]))
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: \"%s\" has a member \"%s\", which is no %s parameter",
                                 path, kernel, obj->keys[k], kernel);
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
    struct clf_params all = {0};
    if ((st = read_group(path, &root, CLF_PARAM_XGEMM, &all)) ||
        (st = read_group(path, &root, CLF_PARAM_XGEMM_DIRECT, &all)) ||
        (st = read_group(path, &root, CLF_PARAM_GEMM_ROUTINE, &all)))
        goto done;
    /* "Kernels" came later than the rest: a file without it tunes GEMM only */
    if (clf_json_get(&root, "Kernels") && (st = read_group(path, &root, CLF_PARAM_KERNELS, &all)))
        goto done;
    r->gemm = all.gemm;
    r->kernels = all.kernels;
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
    const char *e = clf_setting_get("CLF_TUNING");
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
        out->gemm = *out->entry->gemm;
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
    /* every tunable's table value; the GEMM ones as CLBlast has them */
    clf_params_lookup(NULL, 0, &ctx->dev, &ctx->params);
    bool file = !st && info->source == CLF_TUNING_FILE, table = !st && info->source == CLF_TUNING_TABLE;
    if (!table)
        ctx->params.values.gemm = file ? info->gemm : (struct clf_gemm_params){0};
    size_t ndefs;
    const struct clf_param_def *defs = defs_all(&ndefs);
    for (size_t i = 0; i < ndefs; i++)
        if (defs[i].group != CLF_PARAM_KERNELS && !table)  /* none: CLBlast's database */
            ctx->params.origin[i].source = file ? CLF_PARAM_FROM_FILE : CLF_PARAM_FROM_NONE;
    if (st)
        snprintf(ctx->tuning_message, sizeof ctx->tuning_message, "%s %.200s: %.280s", clf_tuning_source_str(info->source),
                 info->source == CLF_TUNING_FILE ? info->path : info->entry ? info->entry->name : "", ctx->error);
    free(info);
    return st;
}

clf_status clf_tuning_reset(const clf_ctx_t *ctx, bool *removed)
{
    char path[CLF_PATH_MAX];
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
