/* import_marian.c: clf_marian_import, a Marian / OPUS-MT model directory
 * as transformers 4.40's MarianMTModel saves it (docs/marian.md) into a
 * clformer checkpoint plus its tokenizer files, on the host (no device).
 * Every nn.Linear weight is (out, in) there and (in, out) here: transposed;
 * q, k and v go side by side into in_proj (d, 3d) = [q | k | v]. Anything
 * the model cannot run as transformers does is refused, naming the field. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/files.h"
#include "base/status.h"
#include "checkpoint.h"
#include "clformer_json.h"
#include "safetensors.h"
#include "weights.h"

#define CONFIG_LIMIT ((size_t)16 << 20)

static const char *const CONVERT =
    "python3 -c \"from transformers import MarianMTModel as M; "
    "M.from_pretrained('DIR').save_pretrained('DIR', safe_serialization=True)\"";

struct import {
    const char *dir;
    char path[CLF_PATH_MAX];            /* the file being read, for messages */
    struct clf_json cfg, gen;   /* config.json, generation_config.json (NULL type when absent) */
    bool has_gen;
    struct clf_st_file st;
    bool *used;                 /* (st.count) tensors taken */
    struct clf_model_config c;
    struct model_layout lay;    /* c's parameters */
    float *w;                   /* (lay.numel) the converted weights */
};

static clf_status refuse(const struct import *im, const char *fmt, const char *field, const char *what)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, field, what);
    return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: %s", im->path, msg);
}

static void path_in(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static clf_status read_json(struct import *im, const char *name, struct clf_json *j, bool *present)
{
    char *text = NULL, err[160];
    size_t len = 0;
    path_in(im->path, sizeof im->path, im->dir, name);
    if (present && access(im->path, F_OK) != 0) {
        *present = false;
        return CLF_OK;
    }
    clf_status st = clf_file_read(im->path, CONFIG_LIMIT, &text, &len);
    if (st != CLF_OK)
        return st;
    bool ok = clf_json_parse(text, len, j, err, sizeof err);
    free(text);
    if (!ok)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not JSON: %s", im->path, err);
    if (j->type != CLF_JSON_OBJECT) {
        clf_json_free(j);
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not a JSON object", im->path);
    }
    if (present)
        *present = true;
    return CLF_OK;
}

/* Field key of j as a whole number in [lo, hi] (def when absent or null). */
static clf_status get_int(const struct import *im, const struct clf_json *j, const char *key, int def, int lo, int hi,
                          int *out)
{
    const struct clf_json *v = clf_json_get(j, key);
    if (!v || v->type == CLF_JSON_NULL) {
        *out = def;
        return CLF_OK;
    }
    if (v->type != CLF_JSON_NUMBER || v->number != floor(v->number) || v->number < lo || v->number > hi) {
        char range[64];
        snprintf(range, sizeof range, "a whole number in [%d, %d]", lo, hi);
        return refuse(im, "field %s must be %s", key, range);
    }
    *out = (int)v->number;
    return CLF_OK;
}

static clf_status get_bool(const struct import *im, const struct clf_json *j, const char *key, bool def, bool *out)
{
    const struct clf_json *v = clf_json_get(j, key);
    if (!v || v->type == CLF_JSON_NULL) {
        *out = def;
        return CLF_OK;
    }
    if (v->type != CLF_JSON_BOOL)
        return refuse(im, "field %s must be true or false%s", key, "");
    *out = v->boolean;
    return CLF_OK;
}

/* A BART leftover MarianModel ignores: true would be run as post-norm
 * without it by transformers, so it is refused. */
static clf_status must_be_false(const struct import *im, const char *key)
{
    bool b = false;
    clf_status st = get_bool(im, &im->cfg, key, false, &b);
    if (st == CLF_OK && b)
        st = refuse(im, "field %s is true: %s", key,
                    "MarianMTModel always runs post-norm with no embedding or final layer norm, so these weights "
                    "cannot be run as they were trained; not imported");
    return st;
}

static clf_status read_model_config(struct import *im)
{
    const struct clf_json *j = &im->cfg;
    struct clf_model_config *c = &im->c;
    clf_status st;
    clf_model_config_preset(c, "base");
    const char *type = clf_json_str(j, "model_type");
    if (!type || strcmp(type, "marian"))
        return refuse(im, "field model_type is %s: %s", type ? type : "missing",
                      "only \"marian\" (MarianMTModel, e.g. Helsinki-NLP/opus-mt-*) can be imported");
    static const char *const leftovers[] = {"normalize_before", "normalize_embedding", "add_final_layer_norm",
                                            "add_bias_logits"};
    for (size_t i = 0; i < sizeof leftovers / sizeof leftovers[0]; i++)
        CLF_TRY(must_be_false(im, leftovers[i]));
    bool scale = false, share = true, tie = true;
    CLF_TRY(get_bool(im, j, "scale_embedding", false, &scale));
    if (!scale)
        return refuse(im, "field %s is false: %s", "scale_embedding",
                      "clformer always scales embeddings by sqrt(d_model); not imported");
    CLF_TRY(get_bool(im, j, "share_encoder_decoder_embeddings", true, &share));
    CLF_TRY(get_bool(im, j, "tie_word_embeddings", true, &tie));
    if (!tie)
        return refuse(im, "field %s is false: %s", "tie_word_embeddings",
                      "clformer's output projection is the decoder's embedding; not imported");
    const char *act = clf_json_str(j, "activation_function");
    if (!act) act = "gelu";
    if (!strcmp(act, "relu")) c->activation = CLF_ACT_RELU;
    else if (!strcmp(act, "swish") || !strcmp(act, "silu")) c->activation = CLF_ACT_SILU;
    else if (!strcmp(act, "gelu")) c->activation = CLF_ACT_GELU;
    else
        return refuse(im, "field activation_function is \"%s\": %s", act,
                      "clformer runs \"relu\", \"swish\"/\"silu\" and \"gelu\" (erf)");
    int eh, dh, ef, df, vocab, dvocab;
    CLF_TRY(get_int(im, j, "d_model", 1024, 1, 1 << 16, &c->d_model));
    CLF_TRY(get_int(im, j, "encoder_layers", 12, 1, 1024, &c->enc_layers));
    CLF_TRY(get_int(im, j, "decoder_layers", 12, 1, 1024, &c->dec_layers));
    CLF_TRY(get_int(im, j, "encoder_attention_heads", 16, 1, 1 << 16, &eh));
    CLF_TRY(get_int(im, j, "decoder_attention_heads", 16, 1, 1 << 16, &dh));
    CLF_TRY(get_int(im, j, "encoder_ffn_dim", 4096, 1, 1 << 20, &ef));
    CLF_TRY(get_int(im, j, "decoder_ffn_dim", 4096, 1, 1 << 20, &df));
    CLF_TRY(get_int(im, j, "vocab_size", 58101, 1, 1 << 24, &vocab));
    CLF_TRY(get_int(im, j, "decoder_vocab_size", vocab, 1, 1 << 24, &dvocab));
    CLF_TRY(get_int(im, j, "max_position_embeddings", 1024, 1, 1 << 20, &c->max_len));
    if (eh != dh)
        return refuse(im, "fields %s differ: %s", "encoder_attention_heads and decoder_attention_heads",
                      "clformer has one head count for both stacks");
    if (ef != df)
        return refuse(im, "fields %s differ: %s", "encoder_ffn_dim and decoder_ffn_dim",
                      "clformer has one FFN width for both stacks");
    if (dvocab != vocab)
        return refuse(im, "fields %s differ: %s", "vocab_size and decoder_vocab_size",
                      "MarianMTModel ties lm_head to a vocab_size table, so they must be equal");
    c->heads = eh, c->d_ff = ef, c->vocab = vocab;
    c->share_embeddings = share;
    c->positions = CLF_POS_SINUSOIDAL_HALVES;
    c->norm = CLF_NORM_POST;
    c->ln_eps = 1e-5f;  /* nn.LayerNorm's default; no config field sets it */
    c->logits_bias = CLF_LOGITS_BIAS_FROZEN;  /* final_logits_bias is a buffer */
    c->enc_window = c->dec_window = -1;
    double drop = 0.1;
    clf_json_num(j, "dropout", &drop);
    c->dropout = (float)drop;
    CLF_TRY(get_int(im, j, "pad_token_id", vocab - 1, 0, vocab - 1, &c->pad_id));
    CLF_TRY(get_int(im, j, "eos_token_id", 0, 0, vocab - 1, &c->eos_id));
    CLF_TRY(get_int(im, j, "bos_token_id", 0, 0, vocab - 1, &c->bos_id));
    CLF_TRY(get_int(im, j, "decoder_start_token_id", c->pad_id, 0, vocab - 1, &c->decoder_start_id));
    c->unk_id = 1;  /* checked against vocab.json by read_unk */
    if ((st = clf_model_config_check(c)) != CLF_OK)
        return clf_error_set(NULL, st, "%s: %s", im->path, clf_ctx_error(NULL));
fail:
    return st;
}

/* A generation field: generation_config.json's when it has one, else
 * config.json's (as from_pretrained reads them). */
static const struct clf_json *gen_src(const struct import *im, const char *key)
{
    return im->has_gen && clf_json_get(&im->gen, key) ? &im->gen : &im->cfg;
}

/* The generation defaults (transformers' names and meanings), for the
 * checkpoint's metadata. */
static clf_status read_generation(struct import *im, struct clf_ckpt_generation *g)
{
    clf_status st;
    struct clf_model_config *c = &im->c;
    int beams, max_length, min_length, ngram, forced;
    bool sample = false;
    double lp = 1.0, rep = 1.0;
    CLF_TRY(get_int(im, gen_src(im, "num_beams"), "num_beams", 1, 1, CLF_TRANSLATE_BEAM_MAX, &beams));
    CLF_TRY(get_int(im, gen_src(im, "max_length"), "max_length", 20, 2, 1 << 20, &max_length));
    CLF_TRY(get_int(im, gen_src(im, "min_length"), "min_length", 0, 0, 1 << 20, &min_length));
    CLF_TRY(get_int(im, gen_src(im, "no_repeat_ngram_size"), "no_repeat_ngram_size", 0, 0, 0, &ngram));
    CLF_TRY(get_int(im, gen_src(im, "forced_eos_token_id"), "forced_eos_token_id", c->eos_id, c->eos_id, c->eos_id,
                    &forced));
    CLF_TRY(get_bool(im, gen_src(im, "do_sample"), "do_sample", false, &sample));
    if (sample)
        return refuse(im, "field %s is true: %s", "do_sample", "clformer translate does not sample");
    const struct clf_json *es = clf_json_get(gen_src(im, "early_stopping"), "early_stopping");
    if (es && es->type != CLF_JSON_NULL && !(es->type == CLF_JSON_BOOL && !es->boolean))
        return refuse(im, "field %s is not false: %s", "early_stopping",
                      "clformer reproduces generate()'s default (false) only");
    clf_json_num(gen_src(im, "length_penalty"), "length_penalty", &lp);
    clf_json_num(gen_src(im, "repetition_penalty"), "repetition_penalty", &rep);
    if (rep != 1.0)
        return refuse(im, "field %s is not 1: %s", "repetition_penalty", "clformer translate has none");
    /* bad_words_ids: nothing, or [[pad]] (forbid_pad) */
    const struct clf_json *bad = clf_json_get(gen_src(im, "bad_words_ids"), "bad_words_ids");
    if (bad && bad->type != CLF_JSON_NULL) {
        bool pad_only = bad->type == CLF_JSON_ARRAY && bad->count == 1 && bad->items[0].type == CLF_JSON_ARRAY &&
                        bad->items[0].count == 1 && bad->items[0].items[0].type == CLF_JSON_NUMBER &&
                        bad->items[0].items[0].number == c->pad_id;
        if (!pad_only)
            return refuse(im, "field %s is not [[pad_token_id]]: %s", "bad_words_ids",
                          "clformer can forbid the pad id only");
        c->forbid_pad = true;
    }
    *g = (struct clf_ckpt_generation){.present = true, .num_beams = beams, .max_length = max_length,
                                      .length_penalty = lp, .length_penalty_kind = CLF_LENGTH_PENALTY_HF,
                                      .min_length = min_length};
fail:
    return st;
}

/* config.unk_id from vocab.json's "<unk>" (MarianTokenizer's unk_token). */
static clf_status read_unk(struct import *im)
{
    struct clf_json v;
    clf_status st = read_json(im, "vocab.json", &v, NULL);
    if (st != CLF_OK)
        return st;
    double unk = -1;
    if (!clf_json_num(&v, "<unk>", &unk) || unk < 0 || unk >= im->c.vocab || unk != floor(unk))
        st = refuse(im, "has no %s: %s", "\"<unk>\"", "want an id below vocab_size for it");
    else
        im->c.unk_id = (int)unk;
    clf_json_free(&v);
    return st;
}

/* Tensor name of the weights file, of shape (rows, cols) (cols 0: 1-D;
 * rows 0 with cols: (1, cols) or (cols)), marked as taken; NULL (with the
 * error set) when missing or misshapen, unless optional. */
static const float *take(struct import *im, const char *name, size_t rows, size_t cols, bool optional,
                         clf_status *st)
{
    const struct clf_st_tensor *t = clf_st_find(&im->st, name);
    if (!t) {
        if (!optional)
            *st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s is missing", im->path, name);
        return NULL;
    }
    im->used[t - im->st.tensors] = true;
    bool ok = rows ? t->ndim == (cols ? 2 : 1) && t->shape[0] == rows && (!cols || t->shape[1] == cols)
                   : t->numel == cols && (t->ndim == 1 || (t->ndim == 2 && t->shape[0] == 1));
    if (!ok) {
        char want[64], got[96] = "(";
        if (!rows)
            snprintf(want, sizeof want, "(1, %zu) or (%zu)", cols, cols);
        else if (cols)
            snprintf(want, sizeof want, "(%zu, %zu)", rows, cols);
        else
            snprintf(want, sizeof want, "(%zu)", rows);
        for (int d = 0; d < t->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%zu", d ? ", " : "", t->shape[d]);
        strcat(got, ")");
        *st = clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s has shape %s; the config wants %s", im->path, name,
                            got, want);
        return NULL;
    }
    return t->data;
}

static float *dst(struct import *im, const char *name)
{
    const struct clf_param *p = clf_model_layout_find(&im->lay, name);
    assert(p);
    return im->w + p->offset;
}

/* dst (in, ld) columns col0.. = src (out, in) transposed. */
static void put_t(float *d, size_t ld, size_t col0, const float *s, size_t out, size_t in)
{
    for (size_t o = 0; o < out; o++)
        for (size_t i = 0; i < in; i++)
            d[i * ld + col0 + o] = s[o * in + i];
}

static clf_status linear(struct import *im, const char *hf, const char *ours, size_t out, size_t in)
{
    char a[192], b[128];
    clf_status st = CLF_OK;
    snprintf(a, sizeof a, "%s.weight", hf);
    const float *wt = take(im, a, out, in, false, &st);
    snprintf(a, sizeof a, "%s.bias", hf);
    const float *bs = take(im, a, out, 0, false, &st);
    if (!wt || !bs)
        return st;
    snprintf(b, sizeof b, "%s.weight", ours);
    put_t(dst(im, b), out, 0, wt, out, in);
    snprintf(b, sizeof b, "%s.bias", ours);
    memcpy(dst(im, b), bs, out * sizeof *bs);
    return CLF_OK;
}

/* A layer norm (gain and bias, (d) each): the same names on both sides but for the prefix. */
static clf_status norm(struct import *im, const char *hf, const char *ours)
{
    const size_t d = (size_t)im->c.d_model;
    char a[192], b[128];
    clf_status st = CLF_OK;
    for (int k = 0; k < 2; k++) {
        snprintf(a, sizeof a, "%s.%s", hf, k ? "bias" : "weight");
        snprintf(b, sizeof b, "%s.%s", ours, k ? "bias" : "weight");
        const float *s = take(im, a, d, 0, false, &st);
        if (!s)
            return st;
        memcpy(dst(im, b), s, d * sizeof *s);
    }
    return CLF_OK;
}

static clf_status attention(struct import *im, const char *hf, const char *ours)
{
    const size_t d = (size_t)im->c.d_model;
    static const char *const qkv[] = {"q_proj", "k_proj", "v_proj"};
    char a[192], b[128];
    clf_status st = CLF_OK;
    snprintf(b, sizeof b, "%s.in_proj.weight", ours);
    float *w = dst(im, b);
    snprintf(b, sizeof b, "%s.in_proj.bias", ours);
    float *bias = dst(im, b);
    for (int k = 0; k < 3; k++) {
        snprintf(a, sizeof a, "%s.%s.weight", hf, qkv[k]);
        const float *wt = take(im, a, d, d, false, &st);
        snprintf(a, sizeof a, "%s.%s.bias", hf, qkv[k]);
        const float *bs = take(im, a, d, 0, false, &st);
        if (!wt || !bs)
            return st;
        put_t(w, 3 * d, (size_t)k * d, wt, d, d);
        memcpy(bias + (size_t)k * d, bs, d * sizeof *bs);
    }
    snprintf(a, sizeof a, "%s.out_proj", hf);
    snprintf(b, sizeof b, "%s.out_proj", ours);
    return linear(im, a, b, d, d);
}

static clf_status layers(struct import *im)
{
    const size_t d = (size_t)im->c.d_model, f = (size_t)im->c.d_ff;
    char a[160], b[128];
    clf_status st = CLF_OK;
    for (int side = 0; side < 2; side++) {
        const char *hs = side ? "decoder" : "encoder";
        for (int l = 0; l < (side ? im->c.dec_layers : im->c.enc_layers); l++) {
            /* HF sublayer -> ours, in order: encoder self, FFN; decoder self, cross, FFN */
#define NAMES(h, o) (snprintf(a, sizeof a, "model.%s.layers.%d.%s", hs, l, h), \
                     snprintf(b, sizeof b, "%s.layers.%d.%s", hs, l, o))
            NAMES("self_attn", "self_attn");
            CLF_TRY(attention(im, a, b));
            NAMES("self_attn_layer_norm", "norm1");
            CLF_TRY(norm(im, a, b));
            if (side) {
                NAMES("encoder_attn", "cross_attn");
                CLF_TRY(attention(im, a, b));
                NAMES("encoder_attn_layer_norm", "norm2");
                CLF_TRY(norm(im, a, b));
            }
            NAMES("fc1", "ffn.linear1");
            CLF_TRY(linear(im, a, b, f, d));
            NAMES("fc2", "ffn.linear2");
            CLF_TRY(linear(im, a, b, d, f));
            NAMES("final_layer_norm", side ? "norm3" : "norm2");
            CLF_TRY(norm(im, a, b));
#undef NAMES
        }
    }
fail:
    return st;
}

/* The first of names the file has, into ours; every other one present
 * must hold the same values (tied tensors). */
static clf_status embedding(struct import *im, const char *const *names, size_t n, const char *ours)
{
    const size_t V = (size_t)im->c.vocab, d = (size_t)im->c.d_model;
    const float *first = NULL;
    clf_status st = CLF_OK;
    for (size_t i = 0; i < n; i++) {
        const float *t = take(im, names[i], V, d, true, &st);
        if (st != CLF_OK)
            return st;
        if (t && first && memcmp(t, first, V * d * sizeof *t))
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensors %s and %s should be tied but differ", im->path,
                                 names[0], names[i]);
        if (t && !first)
            first = t;
    }
    if (!first)
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: no %s (want one of %s%s%s)", im->path, ours, names[0],
                             n > 1 ? ", " : "", n > 1 ? names[1] : "");
    memcpy(dst(im, ours), first, V * d * sizeof *first);
    return CLF_OK;
}

/* A stored sinusoidal table (older files) must be the one computed. */
static clf_status positions(struct import *im, const char *name)
{
    const size_t P = (size_t)im->c.max_len, d = (size_t)im->c.d_model, half = (d + 1) / 2;
    clf_status st = CLF_OK;
    const float *t = take(im, name, P, d, true, &st);
    if (!t)
        return st;
    for (size_t p = 0; p < P; p++)
        for (size_t j = 0; j < d; j++) {
            size_t k = j < half ? j : j - half;
            double a = (double)p / pow(10000.0, 2.0 * (double)k / (double)d);
            double want = j < half ? sin(a) : cos(a);
            if (fabs(t[p * d + j] - want) > 1e-4)
                return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s row %zu column %zu is %g, not the "
                                     "sinusoid %g MarianSinusoidalPositionalEmbedding computes", im->path, name, p,
                                     j, t[p * d + j], want);
        }
    return CLF_OK;
}

static clf_status convert_weights(struct import *im)
{
    static const char *const shared[] = {"model.shared.weight", "model.decoder.embed_tokens.weight",
                                         "model.encoder.embed_tokens.weight", "lm_head.weight"};
    static const char *const target[] = {"model.decoder.embed_tokens.weight", "lm_head.weight"};
    static const char *const source[] = {"model.encoder.embed_tokens.weight"};
    clf_status st;
    path_in(im->path, sizeof im->path, im->dir, "model.safetensors");
    if (access(im->path, F_OK) != 0) {
        char bin[CLF_PATH_MAX];
        path_in(bin, sizeof bin, im->dir, "pytorch_model.bin");
        if (access(bin, F_OK) == 0)
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s holds pytorch_model.bin only: clformer reads "
                                 "model.safetensors; convert it once where transformers is installed: %s "
                                 "(DIR = %s)", im->dir, CONVERT, im->dir);
        return clf_error_set(NULL, CLF_ERR_IO, "%s: no model.safetensors (nor pytorch_model.bin) in it", im->dir);
    }
    CLF_TRY(clf_st_read(im->path, &im->st));
    im->used = calloc(im->st.count ? im->st.count : 1, sizeof *im->used);
    im->w = calloc(im->lay.numel, sizeof *im->w);
    if (!im->used || !im->w)
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of host memory");
    if (im->c.share_embeddings) {
        CLF_TRY(embedding(im, shared, 4, "embed.weight"));
    } else {
        CLF_TRY(embedding(im, target, 2, "embed.weight"));
        CLF_TRY(embedding(im, source, 1, "src_embed.weight"));
    }
    CLF_TRY(layers(im));
    const float *bias = take(im, "final_logits_bias", 0, (size_t)im->c.vocab, false, &st);
    if (!bias)
        return st;
    memcpy(dst(im, "logits.bias"), bias, (size_t)im->c.vocab * sizeof *bias);
    CLF_TRY(positions(im, "model.encoder.embed_positions.weight"));
    CLF_TRY(positions(im, "model.decoder.embed_positions.weight"));
    for (size_t i = 0; i < im->st.count; i++)
        if (!im->used[i])
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: tensor %s is not part of a MarianMTModel of this "
                                 "config; not imported", im->path, im->st.tensors[i].name);
fail:
    return st;
}

clf_status clf_marian_copy_tokenizer(const char *dir, const char *out_dir)
{
    const struct marian_tok_file *files = clf_marian_tok_files;
    char from[CLF_PATH_MAX], to[CLF_PATH_MAX];
    for (size_t i = 0; i < MARIAN_TOK_FILES; i++) {
        path_in(from, sizeof from, dir, files[i].name);
        if (!files[i].required && access(from, F_OK) != 0)
            continue;
        path_in(to, sizeof to, out_dir, files[i].name);
        clf_status st = clf_file_copy(from, to);
        if (st != CLF_OK)
            return st;
    }
    return CLF_OK;
}

clf_status clf_marian_import(const char *dir, const char *out_dir)
{
    if (!dir || !out_dir)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_marian_import: NULL argument");
    struct import im = {.dir = dir};
    struct clf_ckpt_meta meta;
    char ckpt[CLF_PATH_MAX];
    clf_status st;
    CLF_TRY(read_json(&im, "config.json", &im.cfg, NULL));
    CLF_TRY(read_model_config(&im));
    CLF_TRY(read_json(&im, "generation_config.json", &im.gen, &im.has_gen));
    path_in(im.path, sizeof im.path, dir, im.has_gen ? "generation_config.json" : "config.json");
    clf_ckpt_meta_init(&meta, NULL);
    meta.tokenizer = CLF_TOK_KIND_MARIAN;
    snprintf(meta.imported_from, sizeof meta.imported_from, "%s", dir);
    CLF_TRY(read_generation(&im, &meta.generation));
    CLF_TRY(read_unk(&im));
    char src_tok[CLF_PATH_MAX];  /* every tokenizer file is checked before anything is written */
    static const char *const need[] = {"source.spm", "target.spm", "vocab.json"};
    for (size_t i = 0; i < 3; i++) {
        path_in(src_tok, sizeof src_tok, dir, need[i]);
        if (access(src_tok, R_OK) != 0) {
            st = clf_error_set(NULL, CLF_ERR_IO, "%s: cannot read it (%s): the tokenizer needs source.spm, "
                               "target.spm and vocab.json", src_tok, strerror(errno));
            goto fail;
        }
    }
    CLF_TRY(clf_model_layout_build(&im.c, &im.lay));
    CLF_TRY(convert_weights(&im));
    if (clf_mkdir_p(out_dir)) {
        st = clf_error_set(NULL, CLF_ERR_IO, "cannot create %s: %s", out_dir, strerror(errno));
        goto fail;
    }
    CLF_TRY(clf_marian_copy_tokenizer(im.dir, out_dir));
    path_in(ckpt, sizeof ckpt, out_dir, "model.safetensors");
    CLF_TRY(clf_model_save_host(NULL, &im.c, &im.lay, im.w, ckpt, &meta));
fail:
    clf_json_free(&im.cfg);
    if (im.has_gen)
        clf_json_free(&im.gen);
    if (im.st.tensors || im.st.bytes)
        clf_st_free(&im.st);
    free(im.used);
    free(im.w);
    clf_model_layout_free(&im.lay);
    return st;
}
