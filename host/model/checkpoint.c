/* checkpoint.c: the model and its optimizer state as safetensors files.
 * The model file holds every parameter under its name (in, out layout) and
 * __metadata__ {format, config (JSON), inference (JSON: what another tool
 * needs to run the model, written only, never read back), step, and what
 * the caller adds, such as the tokenizer's hash}; the optimizer file holds
 * adam.m and adam.v of the flat parameter buffer and its step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "safetensors.h"

#define FORMAT "clformer-1"

static clf_status download(clf_model_t *m, const clf_tensor *t, float **host)
{
    *host = malloc(m->numel * sizeof **host);
    if (!*host)
        return clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
    clf_status st = clf_tensor_download(m->ctx, t, *host);
    if (st != CLF_OK) {
        free(*host);
        *host = NULL;
    }
    return st;
}

static void meta_set(struct clf_st_meta *m, const char *key, const char *value)
{
    snprintf(m->key, sizeof m->key, "%s", key);
    snprintf(m->value, sizeof m->value, "%s", value);
}

/* How the forward pass uses the tensors, beyond the config (which already
 * says norm "post"/"pre", ln_eps, positions, share_embeddings, the
 * restricted-attention windows and the variants): the README's checkpoint
 * section spells each field out. Keep it in step with model.c, decode.c,
 * cl/embed.cl and cl/ffn.cl. */
static int inference_json(const struct clf_model_config *c, char *out, size_t len)
{
    const int dk = c->d_model / c->heads;
    const char *pos = c->positions == CLF_POS_LEARNED            ? "pos.weight"
                      : c->positions == CLF_POS_SINUSOIDAL_HALVES ? "sin_first_half_cos_second_half"
                                                                  : "sin_even_cos_odd";
    const char *act = c->activation == CLF_ACT_SILU ? "silu" : c->activation == CLF_ACT_GELU ? "gelu_erf" : "relu";
    return snprintf(out, len,
                    "{\"matrices\":\"in_out\",\"output_projection\":\"embed.weight^T\",\"output_bias\":%s,"
                    "\"embedding_scale\":%.9g,\"position_encoding\":\"%s\",\"first_position\":0,"
                    "\"source_suffix\":\"eos\",\"target_prefix\":\"%s\",\"pad_id\":%d,\"bos_id\":%d,"
                    "\"eos_id\":%d,\"unk_id\":%d,\"decoder_start_id\":%d,\"forbid_pad\":%s,"
                    "\"qkv\":\"in_proj columns [q|k|v], head h at h*d_k\","
                    "\"attention_scale\":%.9g,\"activation\":\"%s\",\"final_norm\":%s}",
                    c->logits_bias != CLF_LOGITS_BIAS_NONE ? "\"logits.bias\"" : "false", sqrtf((float)c->d_model),
                    pos, c->decoder_start_id == c->bos_id ? "bos" : "decoder_start_id", c->pad_id, c->bos_id,
                    c->eos_id, c->unk_id, c->decoder_start_id, c->forbid_pad ? "true" : "false",
                    1.0 / sqrt((double)dk), act, c->norm == CLF_NORM_PRE ? "true" : "false");
}

/* Whether the caller's pairs name key (then theirs is written instead). */
static bool extra_has(const char *const *extra, const char *key)
{
    for (size_t i = 0; extra && extra[2 * i]; i++)
        if (!strcmp(extra[2 * i], key))
            return true;
    return false;
}

clf_status clf_model_save(clf_model_t *m, const char *path, const char *const *extra)
{
    float *host = NULL;
    clf_status st = download(m, &m->weights, &host);
    if (st == CLF_OK)
        st = model_save_host(m, host, path, extra);
    free(host);
    return st;
}

clf_status model_save_host(const clf_model_t *m, const float *host, const char *path, const char *const *extra)
{
    struct clf_st_tensor *t = NULL;
    struct clf_st_meta *meta = NULL;
    clf_status st = CLF_OK;
    size_t nextra = 0;
    while (extra && extra[2 * nextra])
        nextra++;
    t = calloc(m->nparams, sizeof *t);
    meta = calloc(5 + nextra, sizeof *meta);
    if (!t || !meta) {
        st = clf_error_set(m->ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    for (size_t i = 0; i < m->nparams; i++) {
        const struct clf_param *p = &m->params[i];
        snprintf(t[i].name, sizeof t[i].name, "%s", p->name);
        t[i].ndim = p->ndim;
        t[i].shape[0] = p->shape[0];
        t[i].shape[1] = p->shape[1];
        t[i].numel = p->shape[0] * (p->ndim == 2 ? p->shape[1] : 1);
        t[i].data = host + p->offset;
    }
    char cfg[1024], inference[1024], step[32], seed[32];
    clf_model_config_json(&m->cfg, cfg, sizeof cfg);
    inference_json(&m->cfg, inference, sizeof inference);
    snprintf(step, sizeof step, "%u", m->adam_step);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)m->seed);
    size_t nmeta = 0;
    meta_set(&meta[nmeta++], "format", FORMAT);
    meta_set(&meta[nmeta++], "config", cfg);
    meta_set(&meta[nmeta++], "inference", inference);
    if (!extra_has(extra, "step"))
        meta_set(&meta[nmeta++], "step", step);
    if (!extra_has(extra, "seed"))
        meta_set(&meta[nmeta++], "seed", seed);  /* keys dropout: a resumed run draws the same masks */
    for (size_t i = 0; i < nextra; i++)
        meta_set(&meta[nmeta++], extra[2 * i], extra[2 * i + 1] ? extra[2 * i + 1] : "");
    st = clf_st_write(path, t, m->nparams, meta, nmeta);
    if (st != CLF_OK && m->ctx)
        clf_error_set(m->ctx, st, "%s", clf_ctx_error(NULL));
fail:
    free(t);
    free(meta);
    return st;
}

static clf_status read_checked(const char *path, struct clf_st_file *f)
{
    clf_status st = clf_st_read(path, f);
    if (st != CLF_OK)
        return st;
    const char *format = clf_st_meta_get(f, "format");
    if (!format || strcmp(format, FORMAT)) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not a clformer checkpoint (metadata format is %s, want %s)",
                           path, format ? format : "missing", FORMAT);
        clf_st_free(f);  /* after the message: format points into f */
        return st;
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
    clf_status st = read_checked(path, &f);
    if (st != CLF_OK)
        return clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
    const char *cfg = clf_st_meta_get(&f, "config");
    if (!cfg) {
        st = clf_error_set(ctx, CLF_ERR_FORMAT, "%s: no config in its metadata", path);
        goto fail;
    }
    if ((st = model_config_parse(path, cfg, &c)) != CLF_OK) {
        clf_error_set(ctx, st, "%s", clf_ctx_error(NULL));
        goto fail;
    }
    if ((st = clf_model_init(ctx, &m, &c, 0)) != CLF_OK)
        goto fail;
    host = calloc(m->numel, sizeof *host);
    if (!host) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    for (size_t i = 0; i < m->nparams; i++) {
        const struct clf_param *p = &m->params[i];
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
        if (!model_param_find(m, f.tensors[i].name)) {
            st = clf_error_set(ctx, CLF_ERR_FORMAT, "%s: tensor %s is not part of this model's config", path,
                               f.tensors[i].name);
            goto fail;
        }
    }
    if ((st = clf_tensor_upload(ctx, &m->weights, host)) != CLF_OK)
        goto fail;
    const char *step = clf_st_meta_get(&f, "step"), *seed = clf_st_meta_get(&f, "seed");
    m->adam_step = step ? (uint32_t)strtoul(step, NULL, 10) : 0;
    m->seed = seed ? strtoull(seed, NULL, 10) : 0;
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
    if (!m->adam_m.buf)
        return clf_error_set(m->ctx, CLF_ERR_ARG, "%s: no optimizer state yet (no Adam step taken)", path);
    float *mh = NULL, *vh = NULL;
    clf_status st;
    if ((st = download(m, &m->adam_m, &mh)) || (st = download(m, &m->adam_v, &vh)))
        goto fail;
    struct clf_st_tensor t[2] = {{"adam.m", 1, {m->numel}, mh, m->numel}, {"adam.v", 1, {m->numel}, vh, m->numel}};
    struct clf_st_meta meta[3];
    char cfg[1024], step[32];
    clf_model_config_json(&m->cfg, cfg, sizeof cfg);
    snprintf(step, sizeof step, "%u", m->adam_step);
    meta_set(&meta[0], "format", FORMAT);
    meta_set(&meta[1], "config", cfg);
    meta_set(&meta[2], "step", step);
    if ((st = clf_st_write(path, t, 2, meta, 3)) != CLF_OK)
        clf_error_set(m->ctx, st, "%s", clf_ctx_error(NULL));
fail:
    free(mh);
    free(vh);
    return st;
}

clf_status clf_model_load_optimizer(clf_model_t *m, const char *path)
{
    struct clf_st_file f;
    clf_status st = read_checked(path, &f);
    if (st != CLF_OK)
        return clf_error_set(m->ctx, st, "%s", clf_ctx_error(NULL));
    char cfg[1024];
    clf_model_config_json(&m->cfg, cfg, sizeof cfg);
    const char *fcfg = clf_st_meta_get(&f, "config"), *step = clf_st_meta_get(&f, "step");
    const struct clf_st_tensor *tm = clf_st_find(&f, "adam.m"), *tv = clf_st_find(&f, "adam.v");
    if (!fcfg || strcmp(fcfg, cfg) || !step) {
        st = clf_error_set(m->ctx, CLF_ERR_FORMAT, "%s: optimizer state of another model configuration", path);
    } else if (!tm || !tv || tm->numel != m->numel || tv->numel != m->numel) {
        st = clf_error_set(m->ctx, CLF_ERR_FORMAT, "%s: adam.m and adam.v must hold %zu floats each", path, m->numel);
    } else {
        if ((st = model_adam_alloc(m)) || (st = clf_tensor_upload(m->ctx, &m->adam_m, tm->data)) ||
            (st = clf_tensor_upload(m->ctx, &m->adam_v, tv->data)))
            goto done;
        m->adam_step = (uint32_t)strtoul(step, NULL, 10);
    }
done:
    clf_st_free(&f);
    return st;
}

clf_status clf_checkpoint_meta(const char *path, const char *key, char *out, size_t len)
{
    struct clf_st_file f;
    clf_status st = read_checked(path, &f);
    if (st != CLF_OK)
        return st;
    const char *v = clf_st_meta_get(&f, key);
    if (!v)
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: no %s in its metadata", path, key);
    else
        snprintf(out, len, "%s", v);
    clf_st_free(&f);
    return st;
}
