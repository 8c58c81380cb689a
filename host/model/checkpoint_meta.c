/* checkpoint_meta.c: a checkpoint's __metadata__, the one place that knows
 * its keys and how each value is spelled. A model file holds
 *
 *   format          "clformer-1"
 *   config          the model's config (JSON; config.c writes and reads it)
 *   inference       how to run the model without clformer (JSON; written only)
 *   step, seed      decimal
 *   tokenizer       "marian" (absent: ours; "spm" is read as ours)
 *   bpe             ours: our SentencePiece model's file beside the checkpoint
 *   tokenizer_hash  16 lowercase hex digits
 *   epoch, batch, tokens, seconds, max_tokens, update_tokens, ranks
 *                   a training run's position (tokens "%.0f", seconds "%.3f")
 *   init, imported_from   paths
 *   generation      JSON: num_beams, max_length, length_penalty,
 *                   length_penalty_kind, min_length, early_stopping (false)
 *   averaged        "yes", with averaged_steps, a JSON array of steps
 *   compute_type    int8, bfloat16 or float16: how the weights are stored
 *                   (quantize.c); absent: float32
 *
 * each key written only where struct clf_ckpt_meta has a value for it; the
 * optimizer's file holds format, config and step. Values are those earlier
 * versions wrote, byte for byte, so that their checkpoints read as before
 * and a struct read and written again gives the same strings. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"
#include "clformer_json.h"
#include "model_internal.h"
#include "safetensors.h"

/* ------------------------------------------------------------- writing */

/* The next pair, named key: its value's buffer, for the caller to fill. */
static char *slot(struct clf_st_meta *out, size_t *n, const char *key)
{
    assert(*n < CKPT_META_MAX);
    struct clf_st_meta *m = &out[(*n)++];
    snprintf(m->key, sizeof m->key, "%s", key);
    return m->value;
}

static void put(struct clf_st_meta *out, size_t *n, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(struct clf_st_meta *out, size_t *n, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(slot(out, n, key), sizeof out->value, fmt, ap);
    va_end(ap);
}

/* How the forward pass uses the tensors, beyond the config (which already
 * says norm "post"/"pre", ln_eps, positions, share_embeddings, the
 * restricted-attention windows and the variants): docs/checkpoints.md
 * spells each field out. Keep it in step with model.c, decode.c,
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

size_t clf_ckpt_meta_write(const struct clf_ckpt_meta *meta, const struct clf_model_config *c, struct clf_st_meta *out)
{
    size_t n = 0;
    put(out, &n, "format", "%s", meta->format);
    if (meta->compute_type != CLF_COMPUTE_FLOAT32)  /* float32's files as before */
        put(out, &n, "compute_type", "%s", clf_compute_type_str(meta->compute_type));
    clf_model_config_json(c, slot(out, &n, "config"), sizeof out->value);
    inference_json(c, slot(out, &n, "inference"), sizeof out->value);
    put(out, &n, "step", "%" PRIu32, meta->step);
    put(out, &n, "seed", "%" PRIu64, meta->seed);  /* keys dropout: a resumed run draws the same masks */
    if (meta->tokenizer == CLF_TOK_KIND_MARIAN)
        put(out, &n, "tokenizer", "marian");
    else if (meta->bpe[0])
        put(out, &n, "bpe", "%s", meta->bpe);
    if (meta->has_tokenizer_hash)
        put(out, &n, "tokenizer_hash", "%016" PRIx64, meta->tokenizer_hash);
    const struct clf_ckpt_position *p = &meta->train;
    if (p->present) {
        put(out, &n, "epoch", "%ld", p->epoch);
        put(out, &n, "batch", "%zu", p->batch);
        put(out, &n, "tokens", "%.0f", p->tokens);
        put(out, &n, "seconds", "%.3f", p->seconds);
        put(out, &n, "max_tokens", "%ld", p->max_tokens);
        put(out, &n, "update_tokens", "%ld", p->update_tokens);
        put(out, &n, "ranks", "%d", p->ranks);
    }
    if (meta->init[0])
        put(out, &n, "init", "%s", meta->init);
    if (meta->imported_from[0])
        put(out, &n, "imported_from", "%s", meta->imported_from);
    const struct clf_ckpt_generation *g = &meta->generation;
    if (g->present)  /* early_stopping: the import takes generate()'s default (false) alone */
        put(out, &n, "generation",
            "{\"num_beams\":%d,\"max_length\":%d,\"length_penalty\":%.9g,\"length_penalty_kind\":\"%s\","
            "\"min_length\":%d,\"early_stopping\":false}",
            g->num_beams, g->max_length, g->length_penalty,
            g->length_penalty_kind == CLF_LENGTH_PENALTY_HF ? "hf" : "paper", g->min_length);
    if (meta->averaged) {
        put(out, &n, "averaged", "yes");
        char *v = slot(out, &n, "averaged_steps");
        size_t at = 0;  /* CLF_CKPT_AVERAGED_MAX steps of 10 digits and a comma fit */
        for (size_t i = 0; i < meta->averaged; i++)
            at += (size_t)snprintf(v + at, sizeof out->value - at, "%s%" PRIu32, i ? "," : "[",
                                   meta->averaged_steps[i]);
        snprintf(v + at, sizeof out->value - at, "]");
    }
    return n;
}

size_t clf_ckpt_meta_optim_write(const struct clf_model_config *c, uint32_t step, struct clf_st_meta *out)
{
    size_t n = 0;
    put(out, &n, "format", "%s", CLF_CKPT_FORMAT);
    clf_model_config_json(c, slot(out, &n, "config"), sizeof out->value);
    put(out, &n, "step", "%" PRIu32, step);
    return n;
}

/* ------------------------------------------------------------- reading */

clf_status clf_ckpt_file_read(const char *path, struct clf_st_file *f)
{
    clf_status st = clf_st_read_as(path, f, CLF_ST_ANY);  /* which tensor may hold which: checkpoint.c */
    if (st != CLF_OK)
        return st;
    const char *format = clf_st_meta_get(f, "format");
    if (!format || strcmp(format, CLF_CKPT_FORMAT)) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not a clformer checkpoint (metadata format is %s, want %s)",
                           path, format ? format : "missing", CLF_CKPT_FORMAT);
        clf_st_free(f);  /* after the message: format points into f */
        return st;
    }
    return CLF_OK;
}

static clf_status bad(const char *path, const char *key, const char *v, const char *want)
{
    return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: metadata %s is '%.80s', not %s", path, key, v, want);
}

/* key's value, a whole number 0..max, into *out; absent: *out untouched. */
static clf_status get_whole(const char *path, const struct clf_st_file *f, const char *key, uint64_t max,
                            uint64_t *out)
{
    const char *v = clf_st_meta_get(f, key);
    if (!v)
        return CLF_OK;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end || errno || x > max)
        return bad(path, key, v, "a whole number in range");
    *out = x;
    return CLF_OK;
}

static clf_status get_real(const char *path, const struct clf_st_file *f, const char *key, double *out)
{
    const char *v = clf_st_meta_get(f, key);
    if (!v)
        return CLF_OK;
    char *end;
    double x = strtod(v, &end);
    if (!v[0] || *end || !isfinite(x) || x < 0)
        return bad(path, key, v, "a number >= 0");
    *out = x;
    return CLF_OK;
}

static clf_status get_text(const char *path, const struct clf_st_file *f, const char *key, char *out, size_t len)
{
    const char *v = clf_st_meta_get(f, key);
    if (v && strlen(v) >= len)
        return bad(path, key, v, "a value this build can hold");
    snprintf(out, len, "%s", v ? v : "");
    return CLF_OK;
}

static clf_status get_compute_type(const char *path, const struct clf_st_file *f, struct clf_ckpt_meta *meta)
{
    const char *v = clf_st_meta_get(f, "compute_type");
    enum clf_compute_type t = CLF_COMPUTE_FLOAT32;
    if (v && !clf_compute_type_parse(v, &t))
        return bad(path, "compute_type", v, "float32, int8, bfloat16 or float16");
    meta->compute_type = (int)t;
    return CLF_OK;
}

static clf_status get_tokenizer(const char *path, const struct clf_st_file *f, struct clf_ckpt_meta *meta)
{
    clf_status st;
    const char *kind = clf_st_meta_get(f, "tokenizer");
    uint64_t hash = 0;
    if (kind && strcmp(kind, "spm") && strcmp(kind, "marian"))
        return clf_error_set(NULL, CLF_ERR_FORMAT,
                             "%s: names a tokenizer '%.80s' this build does not know (want spm or marian)", path,
                             kind);
    meta->tokenizer = kind && !strcmp(kind, "marian") ? CLF_TOK_KIND_MARIAN : CLF_TOK_KIND_SPM;
    if ((st = get_text(path, f, "bpe", meta->bpe, sizeof meta->bpe)) != CLF_OK)
        return st;
    const char *h = clf_st_meta_get(f, "tokenizer_hash");
    if (h) {
        char *end;
        hash = strtoull(h, &end, 16);
        if (strlen(h) != 16 || *end || strspn(h, "0123456789abcdefABCDEF") != 16)
            return bad(path, "tokenizer_hash", h, "16 hex digits");
        meta->has_tokenizer_hash = true;
        meta->tokenizer_hash = hash;
    }
    return CLF_OK;
}

/* One whole number of the generation JSON, within [lo, hi]. */
static clf_status gen_int(const char *path, const struct clf_json *j, const char *key, int lo, int hi, int *out)
{
    double v;
    if (!clf_json_num(j, key, &v) || v != floor(v) || v < lo || v > hi)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: metadata generation: %s is missing or not a whole number "
                             "in %d..%d", path, key, lo, hi);
    *out = (int)v;
    return CLF_OK;
}

static clf_status get_generation(const char *path, const struct clf_st_file *f, struct clf_ckpt_generation *g)
{
    const char *text = clf_st_meta_get(f, "generation");
    if (!text)
        return CLF_OK;
    struct clf_json j;
    char err[160];
    if (!clf_json_parse(text, strlen(text), &j, err, sizeof err))
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: metadata generation is not JSON: %s", path, err);
    clf_status st;
    const char *kind = clf_json_str(&j, "length_penalty_kind");
    CLF_TRY(gen_int(path, &j, "num_beams", 1, 1 << 20, &g->num_beams));
    CLF_TRY(gen_int(path, &j, "max_length", 2, 1 << 30, &g->max_length));
    CLF_TRY(gen_int(path, &j, "min_length", 0, 1 << 30, &g->min_length));
    if (!clf_json_num(&j, "length_penalty", &g->length_penalty) || !isfinite(g->length_penalty)) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: metadata generation: length_penalty is missing or not a "
                           "number", path);
        goto fail;
    }
    if (!kind || (strcmp(kind, "hf") && strcmp(kind, "paper"))) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: metadata generation: length_penalty_kind is missing or not "
                           "\"hf\" or \"paper\"", path);
        goto fail;
    }
    g->length_penalty_kind = strcmp(kind, "hf") ? CLF_LENGTH_PENALTY_PAPER : CLF_LENGTH_PENALTY_HF;
    g->present = true;
fail:
    clf_json_free(&j);
    return st;
}

static clf_status get_position(const char *path, const struct clf_st_file *f, struct clf_ckpt_position *p)
{
    clf_status st;
    uint64_t epoch = 0, batch = 0, max_tokens = 0, update_tokens = 0, ranks = 1;
    if (!(p->present = clf_st_meta_get(f, "epoch") != NULL))
        return CLF_OK;  /* written by `clformer train` alone, all together */
    CLF_TRY(get_whole(path, f, "epoch", LONG_MAX, &epoch));
    CLF_TRY(get_whole(path, f, "batch", SIZE_MAX, &batch));
    CLF_TRY(get_real(path, f, "tokens", &p->tokens));
    CLF_TRY(get_real(path, f, "seconds", &p->seconds));
    CLF_TRY(get_whole(path, f, "max_tokens", LONG_MAX, &max_tokens));
    CLF_TRY(get_whole(path, f, "update_tokens", LONG_MAX, &update_tokens));
    CLF_TRY(get_whole(path, f, "ranks", INT_MAX, &ranks));
    p->epoch = (long)epoch, p->batch = (size_t)batch, p->ranks = (int)ranks;
    p->max_tokens = (long)max_tokens, p->update_tokens = (long)update_tokens;
fail:
    return st;
}

static clf_status get_averaged(const char *path, const struct clf_st_file *f, struct clf_ckpt_meta *meta)
{
    const char *text = clf_st_meta_get(f, "averaged_steps");
    if (!text)
        return CLF_OK;
    struct clf_json j;
    clf_status st = CLF_OK;
    if (!clf_json_parse(text, strlen(text), &j, NULL, 0))
        return bad(path, "averaged_steps", text, "a JSON array of steps");
    if (j.type != CLF_JSON_ARRAY || j.count > CLF_CKPT_AVERAGED_MAX) {
        st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: metadata averaged_steps is not a JSON array of at most %d "
                           "steps", path, CLF_CKPT_AVERAGED_MAX);
        goto out;
    }
    for (size_t i = 0; i < j.count; i++) {
        const struct clf_json *x = &j.items[i];
        if (x->type != CLF_JSON_NUMBER || x->number != floor(x->number) || x->number < 0 || x->number > UINT32_MAX) {
            st = bad(path, "averaged_steps", text, "a JSON array of steps");
            goto out;
        }
        meta->averaged_steps[i] = (uint32_t)x->number;
    }
    meta->averaged = j.count;
out:
    clf_json_free(&j);
    return st;
}

clf_status clf_ckpt_meta_parse(const char *path, const struct clf_st_file *f, struct clf_ckpt_meta *meta,
                               struct clf_model_config *c)
{
    clf_status st;
    uint64_t step = 0;
    clf_ckpt_meta_init(meta, NULL);
    CLF_TRY(get_whole(path, f, "step", UINT32_MAX, &step));
    CLF_TRY(get_whole(path, f, "seed", UINT64_MAX, &meta->seed));
    meta->step = (uint32_t)step;
    CLF_TRY(get_compute_type(path, f, meta));
    CLF_TRY(get_tokenizer(path, f, meta));
    CLF_TRY(get_text(path, f, "init", meta->init, sizeof meta->init));
    CLF_TRY(get_text(path, f, "imported_from", meta->imported_from, sizeof meta->imported_from));
    CLF_TRY(get_generation(path, f, &meta->generation));
    CLF_TRY(get_position(path, f, &meta->train));
    CLF_TRY(get_averaged(path, f, meta));
    if (c) {
        const char *cfg = clf_st_meta_get(f, "config");
        if (!cfg) {
            st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: no config in its metadata", path);
            goto fail;
        }
        CLF_TRY(clf_model_config_parse(path, cfg, c));
    }
fail:
    return st;
}

bool clf_ckpt_meta_optim_read(const struct clf_st_file *f, const struct clf_model_config *c, uint32_t *step)
{
    char cfg[2048];
    clf_model_config_json(c, cfg, sizeof cfg);
    const char *fcfg = clf_st_meta_get(f, "config"), *s = clf_st_meta_get(f, "step");
    if (!fcfg || strcmp(fcfg, cfg) || !s)
        return false;
    *step = (uint32_t)strtoul(s, NULL, 10);
    return true;
}

clf_status clf_ckpt_meta_read(const char *path, struct clf_ckpt_meta *meta)
{
    struct clf_st_file f;
    clf_status st = clf_ckpt_file_read(path, &f);
    if (st != CLF_OK)
        return st;
    st = clf_ckpt_meta_parse(path, &f, meta, NULL);
    clf_st_free(&f);
    return st;
}

clf_status clf_checkpoint_meta(const char *path, const char *key, char *out, size_t len)
{
    struct clf_st_file f;
    clf_status st = clf_ckpt_file_read(path, &f);
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

/* ------------------------------------------------- the struct's own rules */

void clf_ckpt_meta_init(struct clf_ckpt_meta *meta, const clf_model_t *m)
{
    *meta = (struct clf_ckpt_meta){.step = m ? m->adam.step : 0, .seed = m ? m->seed : 0,
                                   .tokenizer = CLF_TOK_KIND_SPM};
    snprintf(meta->format, sizeof meta->format, "%s", CLF_CKPT_FORMAT);
}

void clf_ckpt_meta_carry(struct clf_ckpt_meta *to, const struct clf_ckpt_meta *from)
{
    to->tokenizer = from->tokenizer;
    memcpy(to->bpe, from->bpe, sizeof to->bpe);
    to->has_tokenizer_hash = from->has_tokenizer_hash;
    to->tokenizer_hash = from->tokenizer_hash;
    memcpy(to->init, from->init, sizeof to->init);
    memcpy(to->imported_from, from->imported_from, sizeof to->imported_from);
    to->generation = from->generation;
}

clf_status clf_ckpt_meta_average_add(struct clf_ckpt_meta *meta, uint32_t step)
{
    if (meta->averaged >= CLF_CKPT_AVERAGED_MAX)
        return clf_error_set(NULL, CLF_ERR_ARG, "an average records at most %d steps", CLF_CKPT_AVERAGED_MAX);
    meta->averaged_steps[meta->averaged++] = step;
    return CLF_OK;
}

void clf_ckpt_meta_translate_opts(const struct clf_ckpt_meta *meta, struct clf_translate_opts *o)
{
    const struct clf_ckpt_generation *g = &meta->generation;
    if (!g->present)
        return;
    o->beam = g->num_beams;
    o->greedy = g->num_beams == 1;  /* transformers: greedy search */
    o->alpha = (float)g->length_penalty;
    o->max_output = g->max_length - 1;
    o->min_length = g->min_length > 1 ? g->min_length - 1 : 0;
    o->length_penalty = g->length_penalty_kind;
}

/* ------------------------------------------------------------ tokenizer */

/* The directory path lies in, into dir[4096]. */
static void dir_of(const char *path, char *dir)
{
    char tmp[CLF_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(dir, CLF_PATH_MAX, "%s", dirname(tmp));
}

clf_status clf_ckpt_tok_open(const char *ckpt, const struct clf_ckpt_meta *meta, const char *override,
                             clf_tok_t **tok, char *path, size_t len)
{
    char dir[CLF_PATH_MAX], where[CLF_PATH_MAX];
    dir_of(ckpt, dir);
    const bool marian = meta->tokenizer == CLF_TOK_KIND_MARIAN;
    if (override)
        snprintf(where, sizeof where, "%s", override);
    else if (marian)
        snprintf(where, sizeof where, "%s", dir);
    /* else the subword model `clformer train` writes beside its checkpoints */
    else if (snprintf(where, sizeof where, "%s/%s", dir, meta->bpe[0] ? meta->bpe : "bpe.model") >= (int)sizeof where)
        return clf_error_set(NULL, CLF_ERR_ARG, "%s: too long a path for its subword model", ckpt);
    if (path)
        snprintf(path, len, "%s", where);
    clf_status st = marian ? clf_tok_marian_load(tok, where) : clf_tok_spm_load(tok, where);
    if (st != CLF_OK && marian)
        return clf_error_set(NULL, st, "loading the Marian tokenizer of %s from %s (source.spm, target.spm, "
                             "vocab.json): %s", ckpt, where, clf_ctx_error(NULL));
    if (st != CLF_OK)
        return clf_error_set(NULL, st, "loading the subword model %s of %s: %s", where, ckpt, clf_ctx_error(NULL));
    return CLF_OK;
}

/* Whether files a and b hold the same bytes: 1 yes, 0 no, -1 a read failed
 * (errno says why). */
static int same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb ? 1 : -1;
    char ba[65536], bb[65536];
    while (same == 1) {
        const size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        if (ferror(fa) || ferror(fb))
            same = -1;
        else if (na != nb || memcmp(ba, bb, na))
            same = 0;
        else if (na == 0)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Whether `to` must be written to hold `from` (false: it is that file, or
 * holds its bytes); another file of that name is refused. ckpt: whose
 * tokenizer from is, for the messages (NULL: a tokenizer of its own). */
static clf_status needs_copy(const char *from, const char *to, const char *ckpt, bool *copy)
{
    struct stat a, b;
    char whose[CLF_PATH_MAX + 32] = "";
    if (ckpt)
        snprintf(whose, sizeof whose, ", the tokenizer of %s", ckpt);
    *copy = false;
    if (stat(from, &a) != 0)
        return clf_error_set(NULL, CLF_ERR_IO, "%s%s: cannot read it: %s", from, whose, strerror(errno));
    if (stat(to, &b) != 0) {
        if (errno != ENOENT)
            return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot read it: %s", to, strerror(errno));
        *copy = true;
        return CLF_OK;
    }
    if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return CLF_OK;
    const int same = same_bytes(from, to);
    if (same < 0)
        return clf_error_set(NULL, CLF_ERR_IO, "comparing %s with %s: %s", to, from, strerror(errno));
    if (!same)
        return clf_error_set(NULL, CLF_ERR_ARG, "%s already exists and differs from %s%s: "
                             "not overwritten (write the new checkpoint into another directory, or remove it)",
                             to, from, whose);
    return CLF_OK;
}

/* A Marian tokenizer's files as a checkpoint's directory holds them
 * (checkpoint.h): here, where a checkpoint's files are known, for tok_put
 * and for the importer (import_marian.c), which is above this file. */
const struct marian_tok_file clf_marian_tok_files[MARIAN_TOK_FILES] = {
    {"source.spm", true}, {"target.spm", true}, {"vocab.json", true}, {"target_vocab.json", false},
    {"tokenizer_config.json", false}, {"special_tokens_map.json", false}};

/* Puts the tokenizer whose files lie at `from` (Marian's: a directory;
 * ours: the file named ours_from there, or `from` itself when ours_from is
 * NULL) beside the checkpoint path out (ours as ours_to): each file checked
 * before one is written (needs_copy), then copied. `owner`: the checkpoint
 * whose tokenizer it is, for the messages (NULL: none). */
static clf_status tok_put(const char *from, bool marian, const char *ours_from, const char *ours_to, const char *out,
                          const char *owner)
{
    const char *names[MARIAN_TOK_FILES];
    const size_t n = marian ? MARIAN_TOK_FILES : 1;
    char dst[CLF_PATH_MAX], src[MARIAN_TOK_FILES][CLF_PATH_MAX], to[MARIAN_TOK_FILES][CLF_PATH_MAX];
    bool copy[MARIAN_TOK_FILES] = {false};
    dir_of(out, dst);
    for (size_t i = 0; i < n; i++) {
        names[i] = marian ? clf_marian_tok_files[i].name : ours_to;
        const int w = marian || ours_from ? snprintf(src[i], sizeof src[i], "%s/%s", from,
                                                     marian ? names[i] : ours_from)
                                          : snprintf(src[i], sizeof src[i], "%s", from);
        if (w >= (int)sizeof src[i] || snprintf(to[i], sizeof to[i], "%s/%s", dst, names[i]) >= (int)sizeof to[i])
            return clf_error_set(NULL, CLF_ERR_ARG, "too long a path for %s from %s or beside %s", names[i], from,
                                 out);
        if (marian && !clf_marian_tok_files[i].required && access(src[i], F_OK) != 0)
            continue;
        clf_status st = needs_copy(src[i], to[i], owner, &copy[i]);
        if (st != CLF_OK)
            return st;
    }
    for (size_t i = 0; i < n; i++) {
        clf_status st = copy[i] ? clf_file_copy(src[i], to[i]) : CLF_OK;
        if (st != CLF_OK)
            return st;
    }
    return CLF_OK;
}

clf_status clf_ckpt_tok_copy(const char *ckpt, const struct clf_ckpt_meta *meta, const char *out)
{
    if (!ckpt || !meta || !out)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_ckpt_tok_copy: NULL argument");
    const char *ours = meta->bpe[0] ? meta->bpe : "bpe.model";
    char src[CLF_PATH_MAX];
    dir_of(ckpt, src);
    return tok_put(src, meta->tokenizer == CLF_TOK_KIND_MARIAN, ours, ours, out, ckpt);
}

clf_status clf_ckpt_tok_put(const char *from, enum clf_tok_kind kind, const char *out)
{
    if (!from || !out)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_ckpt_tok_put: NULL argument");
    return tok_put(from, kind == CLF_TOK_KIND_MARIAN, NULL, "bpe.model", out, NULL);
}
