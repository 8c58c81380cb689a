/* checkpoint.c: the model and its optimizer state as safetensors files.
 * The model file holds every parameter under its name (in, out layout) and
 * the metadata checkpoint_meta.c writes (the config, how to run the model,
 * step, seed and struct clf_ckpt_meta's fields); the optimizer file holds
 * adam.m and adam.v of the flat parameter buffer, the config and the step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        st = model_save_host(m->ctx, &m->cfg, &m->lay, host, path, meta);
    free(host);
    return st;
}

clf_status model_save_host(clf_ctx_t *ctx, const struct clf_model_config *c, const struct model_layout *l,
                           const float *host, const char *path, const struct clf_ckpt_meta *meta)
{
    struct clf_st_tensor *t = NULL;
    struct clf_st_meta *pairs = NULL;
    clf_status st = CLF_OK;
    t = calloc(l->nparams, sizeof *t);
    pairs = calloc(CKPT_META_MAX, sizeof *pairs);
    if (!t || !pairs) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    for (size_t i = 0; i < l->nparams; i++) {
        const struct clf_param *p = &l->params[i];
        snprintf(t[i].name, sizeof t[i].name, "%s", p->name);
        t[i].ndim = p->ndim;
        t[i].shape[0] = p->shape[0];
        t[i].shape[1] = p->shape[1];
        t[i].numel = p->shape[0] * (p->ndim == 2 ? p->shape[1] : 1);
        t[i].data = host + p->offset;
    }
    st = clf_st_write(path, t, l->nparams, pairs, ckpt_meta_write(meta, c, pairs));
    if (st != CLF_OK && ctx)
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
fail:
    free(t);
    free(pairs);
    return st;
}

clf_status clf_model_load(clf_ctx_t *ctx, clf_model_t **out, const char *path)
{
    struct clf_st_file f;
    struct clf_model_config c;
    clf_model_t *m = NULL;
    float *host = NULL;
    *out = NULL;
    struct clf_ckpt_meta meta;
    clf_status st = ckpt_file_read(path, &f);
    if (st != CLF_OK)
        return clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
    if ((st = ckpt_meta_parse(path, &f, &meta, &c)) != CLF_OK) {
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
        goto fail;
    }
    CLF_TRY(clf_model_init(ctx, &m, &c, 0));
    host = calloc(m->lay.numel, sizeof *host);
    if (!host) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    for (size_t i = 0; i < m->lay.nparams; i++) {
        const struct clf_param *p = &m->lay.params[i];
        const struct clf_st_tensor *t = clf_st_find(&f, p->name);
        if (!t) {
            st = clf_error_set(ctx, CLF_ERR_FORMAT, "%s: tensor %s is missing", path, p->name);
            goto fail;
        }
        if (t->ndim != p->ndim || t->shape[0] != p->shape[0] || (p->ndim == 2 && t->shape[1] != p->shape[1])) {
            char want[64], got[64] = "";
            snprintf(want, sizeof want, p->ndim == 2 ? "(%zu, %zu)" : "(%zu)", p->shape[0], p->shape[1]);
            for (int d = 0; d < t->ndim; d++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%zu", d ? ", " : "(", t->shape[d]);
            strcat(got, ")");
            st = clf_error_set(ctx, CLF_ERR_FORMAT, "%s: tensor %s has shape %s; the config wants %s", path, p->name,
                               t->ndim ? got : "()", want);
            goto fail;
        }
        memcpy(host + p->offset, t->data, t->numel * sizeof *host);
    }
    for (size_t i = 0; i < f.count; i++) {
        if (!model_layout_find(&m->lay, f.tensors[i].name)) {
            st = clf_error_set(ctx, CLF_ERR_FORMAT, "%s: tensor %s is not part of this model's config", path,
                               f.tensors[i].name);
            goto fail;
        }
    }
    CLF_TRY(clf_tensor_upload(ctx, &m->weights, host));
    m->adam.step = meta.step;
    m->seed = meta.seed;
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
    struct clf_st_tensor t[2] = {{"adam.m", 1, {n}, mh, n}, {"adam.v", 1, {n}, vh, n}};
    struct clf_st_meta meta[3];
    if ((st = clf_st_write(path, t, 2, meta, ckpt_meta_optim_write(&m->cfg, m->adam.step, meta))) != CLF_OK)
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
    clf_status st = ckpt_file_read(path, &f);
    if (st != CLF_OK)
        return clf_error_set(m->ctx, st, "%s", clf_ctx_error(NULL));
    const struct clf_st_tensor *tm = clf_st_find(&f, "adam.m"), *tv = clf_st_find(&f, "adam.v");
    if (!ckpt_meta_optim_read(&f, &m->cfg, &step)) {
        st = clf_error_set(m->ctx, CLF_ERR_FORMAT, "%s: optimizer state of another model configuration", path);
    } else if (!tm || !tv || tm->numel != m->lay.numel || tv->numel != m->lay.numel) {
        st = clf_error_set(m->ctx, CLF_ERR_FORMAT, "%s: adam.m and adam.v must hold %zu floats each", path,
                           m->lay.numel);
    } else {
        if ((st = model_adam_alloc(m->ctx, &m->adam, m->lay.numel)) ||
            (st = clf_tensor_upload(m->ctx, &m->adam.m, tm->data)) ||
            (st = clf_tensor_upload(m->ctx, &m->adam.v, tv->data)))
            goto done;
        m->adam.step = step;
    }
done:
    clf_st_free(&f);
    return st;
}
