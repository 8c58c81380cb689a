/* checkpoint.c: the model and its optimizer state as safetensors files.
 * The model file holds every parameter under its name (in, out layout),
 * F32 or, in a quantized checkpoint, its matrices in the compute type
 * quantize.c stores, and the metadata checkpoint_meta.c writes (the
 * config, how to run the model, step, seed and struct clf_ckpt_meta's
 * fields); the optimizer file holds adam.m and adam.v of the flat
 * parameter buffer, the config and the step, F32. clf_ckpt_quantize
 * stores a float32 checkpoint's weights again in a compute type, file to
 * file, through the same reader and writer (the codec is quantize.c's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "model_internal.h"
#include "safetensors.h"

static clf_status download(clf_model_t *m, const clf_tensor *t, float **host)
{
    *host = malloc(m->lay.numel * sizeof **host);
    if (!*host)
        return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    clf_status st = clf_tensor_download(m->ctx, t, *host);
    if (st != CLF_OK) {
        free(*host);
        *host = NULL;
    }
    return st;
}

clf_status clf_model_save(clf_model_t *m, const char *path, const struct clf_ckpt_meta *meta)
{
    float *host = NULL;
    struct clf_ckpt_meta own;
    if (!meta) {
        clf_ckpt_meta_init(&own, m);
        meta = &own;
    }
    clf_status st = download(m, &m->weights, &host);
    if (st == CLF_OK)
        st = clf_model_save_host(m->ctx, &m->cfg, &m->lay, host, path, meta);
    free(host);
    return st;
}

clf_status clf_model_save_host(clf_ctx_t *ctx, const struct clf_model_config *c, const struct model_layout *l,
                               const float *host, const char *path, const struct clf_ckpt_meta *meta)
{
    struct clf_st_tensor *t = NULL;
    struct clf_st_meta *pairs = NULL;
    void *storage = NULL;
    size_t count = 0;
    clf_status st = CLF_OK;
    t = calloc(2 * l->nparams, sizeof *t);  /* int8: a scale beside each matrix */
    pairs = calloc(CKPT_META_MAX, sizeof *pairs);
    if (!t || !pairs) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    if ((st = clf_quant_tensors(l, host, meta->compute_type, t, &count, &storage)) == CLF_OK)
        st = clf_st_write(path, t, count, pairs, clf_ckpt_meta_write(meta, c, pairs));
    if (st != CLF_OK && ctx)
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
fail:
    free(storage);
    free(t);
    free(pairs);
    return st;
}

clf_status clf_ckpt_weights_read(const char *path, const struct clf_st_file *f, const struct clf_ckpt_meta *meta,
                                 const struct model_layout *l, float *host)
{
    clf_status st;
    for (size_t i = 0; i < l->nparams; i++) {
        const struct clf_param *p = &l->params[i];
        const struct clf_st_tensor *t = clf_st_find(f, p->name);
        if (!t)
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s is missing", path, p->name);
        if (t->ndim != p->ndim || t->shape[0] != p->shape[0] || (p->ndim == 2 && t->shape[1] != p->shape[1])) {
            char want[64], got[64] = "";
            snprintf(want, sizeof want, p->ndim == 2 ? "(%zu, %zu)" : "(%zu)", p->shape[0], p->shape[1]);
            for (int d = 0; d < t->ndim; d++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%zu", d ? ", " : "(", t->shape[d]);
            strcat(got, ")");
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s has shape %s; the config wants %s", path,
                                 p->name, t->ndim ? got : "()", want);
        }
        if ((st = clf_quant_load(path, f, meta->compute_type, p, t, host + p->offset)) != CLF_OK)
            return st;
    }
    for (size_t i = 0; i < f->count; i++) {
        const char *name = f->tensors[i].name;
        if (!clf_model_layout_find(l, name) && !clf_quant_is_scale(l, meta->compute_type, name))
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s is not part of this model's config", path,
                                 name);
    }
    return CLF_OK;
}

clf_status clf_model_load(clf_ctx_t *ctx, clf_model_t **out, const char *path)
{
    struct clf_st_file f;
    struct clf_model_config c;
    clf_model_t *m = NULL;
    float *host = NULL;
    *out = NULL;
    struct clf_ckpt_meta meta;
    clf_status st = clf_ckpt_file_read(path, &f);
    if (st != CLF_OK)
        return clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
    if ((st = clf_ckpt_meta_parse(path, &f, &meta, &c)) != CLF_OK) {
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
        goto fail;
    }
    CLF_TRY(clf_model_alloc(ctx, &m, &c, 0, false));
    host = calloc(m->lay.numel, sizeof *host);
    if (!host) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    /* a quantized checkpoint's weights come back dequantized to float32, the
     * model's one copy; its stored type is kept (stored_compute) so that
     * decoding's "default" compute type runs it (compute.c), the GEMMs
     * converting the float32 weights to that type again */
    if ((st = clf_ckpt_weights_read(path, &f, &meta, &m->lay, host)) != CLF_OK) {
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
        goto fail;
    }
    CLF_TRY(clf_tensor_upload(ctx, &m->weights, host));
    m->adam.step = meta.step;
    m->seed = meta.seed;
    m->stored_compute = meta.compute_type;
    free(host);
    clf_st_free(&f);
    *out = m;
    return CLF_OK;
fail:
    free(host);
    clf_model_free(m);
    clf_st_free(&f);
    return st;
}

clf_status clf_model_save_optimizer(clf_model_t *m, const char *path)
{
    if (!m->adam.m.buf)
        return clf_error_set(m->ctx, CLF_ERR_ARG, "%s: no optimizer state yet (no Adam step taken)", path);
    float *mh = NULL, *vh = NULL;
    clf_status st;
    CLF_TRY(download(m, &m->adam.m, &mh));
    CLF_TRY(download(m, &m->adam.v, &vh));
    const size_t n = m->lay.numel;
    struct clf_st_tensor t[2] = {{.name = "adam.m", .ndim = 1, .shape = {n}, .data = mh, .numel = n},
                                 {.name = "adam.v", .ndim = 1, .shape = {n}, .data = vh, .numel = n}};
    struct clf_st_meta meta[3];
    if ((st = clf_st_write(path, t, 2, meta, clf_ckpt_meta_optim_write(&m->cfg, m->adam.step, meta))) != CLF_OK)
        clf_error_set(m->ctx, st, "%s", clf_ctx_error(NULL));
fail:
    free(mh);
    free(vh);
    return st;
}

clf_status clf_model_load_optimizer(clf_model_t *m, const char *path)
{
    struct clf_st_file f;
    uint32_t step = 0;
    clf_status st = clf_ckpt_file_read(path, &f);
    if (st != CLF_OK)
        return clf_error_set(m->ctx, st, "%s", clf_ctx_error(NULL));
    const struct clf_st_tensor *tm = clf_st_find(&f, "adam.m"), *tv = clf_st_find(&f, "adam.v");
    if (!clf_ckpt_meta_optim_read(&f, &m->cfg, &step)) {
        st = clf_error_set(m->ctx, CLF_ERR_FORMAT, "%s: optimizer state of another model configuration", path);
    } else if (!tm || !tv || tm->numel != m->lay.numel || tv->numel != m->lay.numel || tm->dtype != CLF_ST_F32 ||
               tv->dtype != CLF_ST_F32) {
        st = clf_error_set(m->ctx, CLF_ERR_FORMAT, "%s: adam.m and adam.v must hold %zu floats each", path,
                           m->lay.numel);
    } else {
        if ((st = clf_model_adam_alloc(m->ctx, &m->adam, m->lay.numel)) ||
            (st = clf_tensor_upload(m->ctx, &m->adam.m, tm->data)) ||
            (st = clf_tensor_upload(m->ctx, &m->adam.v, tv->data)))
            goto done;
        m->adam.step = step;
    }
done:
    clf_st_free(&f);
    return st;
}

/* ------------------------------- the converter: a float32 file in a compute type */

clf_status clf_ckpt_quantize(const char *in, const char *out, enum clf_compute_type to)
{
    if (!in || !out)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_ckpt_quantize: NULL path");
    if (to != CLF_COMPUTE_INT8 && to != CLF_COMPUTE_BFLOAT16 && to != CLF_COMPUTE_FLOAT16)
        return clf_error_set(NULL, CLF_ERR_ARG, "cannot quantize to %s: choose int8, bfloat16 or float16",
                             clf_compute_type_str(to));
    struct stat a, b;
    if (stat(in, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return clf_error_set(NULL, CLF_ERR_ARG, "%s: the output would replace the float32 checkpoint it is made "
                             "from; write it to another file", out);
    struct clf_st_file f;
    struct clf_model_config c;
    struct clf_ckpt_meta meta;
    struct model_layout l = {0};
    float *host = NULL;
    clf_status st = clf_ckpt_file_read(in, &f);
    if (st != CLF_OK)
        return st;
    CLF_TRY(clf_ckpt_meta_parse(in, &f, &meta, &c));
    if (meta.compute_type != CLF_COMPUTE_FLOAT32) {
        st = clf_error_set(NULL, CLF_ERR_ARG, "%s is already quantized (compute_type %s): quantize the float32 "
                           "checkpoint it was made from", in, clf_compute_type_str(meta.compute_type));
        goto fail;
    }
    CLF_TRY(clf_model_layout_build(&c, &l));
    if (!(host = calloc(l.numel, sizeof *host))) {
        st = clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    CLF_TRY(clf_ckpt_weights_read(in, &f, &meta, &l, host));
    /* the same model stored otherwise: all of its metadata stays */
    meta.compute_type = (int)to;
    CLF_TRY(clf_ckpt_tok_copy(in, &meta, out));
    CLF_TRY(clf_model_save_host(NULL, &c, &l, host, out, &meta));
fail:
    free(host);
    clf_model_layout_free(&l);
    clf_st_free(&f);
    return st;
}
