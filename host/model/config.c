/* config.c: model presets, the checks every configuration must pass, and
 * the config as JSON (a checkpoint's metadata), written and read back. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "checkpoint.h"
#include "clformer_json.h"

clf_status clf_model_config_preset(struct clf_model_config *c, const char *name)
{
    static const struct {
        const char *name;
        int layers, d, heads, ff, vocab;
        float dropout;
    } presets[] = {
        {"base", 6, 512, 8, 2048, 8000, 0.1f},  /* the paper's base model */
        {"big", 6, 1024, 16, 4096, 8000, 0.3f}, /* the paper's big model (EN-DE) */
        {"small", 3, 256, 4, 1024, 8000, 0.1f}, /* what a CPU trains in an hour */
        {"tiny", 2, 32, 4, 64, 64, 0.0f},       /* for tests */
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(name, presets[i].name))
            continue;
        *c = (struct clf_model_config){
            .enc_layers = presets[i].layers, .dec_layers = presets[i].layers, .d_model = presets[i].d,
            .heads = presets[i].heads, .d_ff = presets[i].ff, .vocab = presets[i].vocab, .max_len = 256,
            .dropout = presets[i].dropout, .label_smoothing = 0.1f, .ln_eps = 1e-6f, .norm = CLF_NORM_POST,
            .positions = CLF_POS_SINUSOIDAL, .share_embeddings = true, .enc_window = -1, .dec_window = -1,
            .activation = CLF_ACT_RELU, .logits_bias = CLF_LOGITS_BIAS_NONE, .pad_id = CLF_PAD_ID,
            .bos_id = CLF_BOS_ID, .eos_id = CLF_EOS_ID, .unk_id = CLF_UNK_ID, .decoder_start_id = CLF_BOS_ID,
            .forbid_pad = false};
        return CLF_OK;
    }
    return clf_error_set(NULL, CLF_ERR_ARG, "unknown preset '%s': choose base, big, small or tiny", name);
}

clf_status clf_model_max_len_fit(const struct clf_model_config *c, int *max_len)
{
    const int longest = c->max_len - 2;  /* a sentence and its EOS, one position to spare */
    if (*max_len < 0)
        *max_len = longest < 100 ? longest : 100;
    if (*max_len > longest || *max_len < 2)
        return clf_error_set(NULL, CLF_ERR_ARG,
                             "the model has positions for %d tokens, so the longest sentence kept may be 2..%d "
                             "subwords", c->max_len, longest);
    return CLF_OK;
}

clf_status clf_model_config_check(const struct clf_model_config *c)
{
#define REQUIRE(cond, ...)                                       \
    do {                                                         \
        if (!(cond))                                             \
            return clf_error_set(NULL, CLF_ERR_ARG, __VA_ARGS__); \
    } while (0)
    REQUIRE(c->enc_layers >= 1 && c->enc_layers <= 64, "model config: enc_layers is %d, want 1..64", c->enc_layers);
    REQUIRE(c->dec_layers >= 1 && c->dec_layers <= 64, "model config: dec_layers is %d, want 1..64", c->dec_layers);
    REQUIRE(c->d_model >= 1, "model config: d_model is %d, want at least 1", c->d_model);
    REQUIRE(c->heads >= 1, "model config: heads is %d, want at least 1", c->heads);
    REQUIRE(c->d_model % c->heads == 0, "model config: heads (%d) does not divide d_model (%d)", c->heads,
            c->d_model);
    REQUIRE(c->d_model / c->heads <= 256, "model config: d_model/heads is %d; attention supports head sizes up to 256",
            c->d_model / c->heads);
    REQUIRE(c->d_ff >= 1, "model config: d_ff is %d, want at least 1", c->d_ff);
    REQUIRE(c->vocab >= 2, "model config: vocab is %d, want at least 2 (pad and eos)", c->vocab);
    REQUIRE(c->max_len >= 2, "model config: max_len is %d, want at least 2", c->max_len);
    REQUIRE(c->dropout >= 0 && c->dropout < 1, "model config: dropout is %g, want 0 <= dropout < 1", c->dropout);
    REQUIRE(c->label_smoothing >= 0 && c->label_smoothing < 1,
            "model config: label_smoothing is %g, want 0 <= label_smoothing < 1", c->label_smoothing);
    REQUIRE(c->ln_eps > 0, "model config: ln_eps is %g, want > 0", c->ln_eps);
    REQUIRE(c->norm == CLF_NORM_POST || c->norm == CLF_NORM_PRE, "model config: norm is %d, want post (0) or pre (1)",
            c->norm);
    REQUIRE(c->positions == CLF_POS_SINUSOIDAL || c->positions == CLF_POS_LEARNED ||
                c->positions == CLF_POS_SINUSOIDAL_HALVES,
            "model config: positions is %d, want sinusoidal (0), learned (1) or sinusoidal_halves (2)", c->positions);
    REQUIRE(c->enc_window >= -1, "model config: enc_window is %d, want -1 (full) or a radius >= 0", c->enc_window);
    REQUIRE(c->dec_window >= -1, "model config: dec_window is %d, want -1 (full) or a radius >= 0", c->dec_window);
    REQUIRE(c->activation == CLF_ACT_RELU || c->activation == CLF_ACT_SILU || c->activation == CLF_ACT_GELU,
            "model config: activation is %d, want relu (0), silu (1) or gelu (2)", c->activation);
    REQUIRE(c->logits_bias == CLF_LOGITS_BIAS_NONE || c->logits_bias == CLF_LOGITS_BIAS_TRAINED ||
                c->logits_bias == CLF_LOGITS_BIAS_FROZEN,
            "model config: logits_bias is %d, want none (0), trained (1) or frozen (2)", c->logits_bias);
    const struct {
        const char *name;
        int id;
    } ids[] = {{"pad_id", c->pad_id}, {"bos_id", c->bos_id}, {"eos_id", c->eos_id}, {"unk_id", c->unk_id},
               {"decoder_start_id", c->decoder_start_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        REQUIRE(ids[i].id >= 0 && ids[i].id < c->vocab, "model config: %s is %d, want 0..%d (the vocabulary)",
                ids[i].name, ids[i].id, c->vocab - 1);
    REQUIRE(c->pad_id != c->eos_id, "model config: pad_id and eos_id are both %d, want two ids", c->pad_id);
#undef REQUIRE
    return CLF_OK;
}

static const char *activation_name(int a)
{
    return a == CLF_ACT_SILU ? "silu" : a == CLF_ACT_GELU ? "gelu" : "relu";
}

static const char *logits_bias_name(int b)
{
    return b == CLF_LOGITS_BIAS_TRAINED ? "trained" : b == CLF_LOGITS_BIAS_FROZEN ? "frozen" : "none";
}

static const char *positions_name(int p)
{
    return p == CLF_POS_LEARNED ? "learned" : p == CLF_POS_SINUSOIDAL_HALVES ? "sinusoidal_halves" : "sinusoidal";
}

int clf_model_config_json(const struct clf_model_config *c, char *out, size_t len)
{
    struct clf_model_config ours;
    clf_model_config_preset(&ours, "tiny");
    int n = snprintf(out, len,
                     "{\"enc_layers\":%d,\"dec_layers\":%d,\"d_model\":%d,\"heads\":%d,\"d_ff\":%d,\"vocab\":%d,"
                     "\"max_len\":%d,\"dropout\":%.9g,\"label_smoothing\":%.9g,\"ln_eps\":%.9g,\"norm\":\"%s\","
                     "\"positions\":\"%s\",\"share_embeddings\":%s,\"enc_window\":%d,\"dec_window\":%d",
                     c->enc_layers, c->dec_layers, c->d_model, c->heads, c->d_ff, c->vocab, c->max_len,
                     c->dropout, c->label_smoothing, c->ln_eps, c->norm == CLF_NORM_PRE ? "pre" : "post",
                     positions_name(c->positions), c->share_embeddings ? "true" : "false", c->enc_window,
                     c->dec_window);
#define MORE(...)                                                                        \
    do {                                                                                 \
        if (n >= 0)                                                                      \
            n += snprintf(out + ((size_t)n < len ? (size_t)n : len), (size_t)n < len ? len - (size_t)n : 0, \
                          __VA_ARGS__);                                                  \
    } while (0)
    /* the variants only where they differ from our own models' */
    if (c->activation != ours.activation)
        MORE(",\"activation\":\"%s\"", activation_name(c->activation));
    if (c->logits_bias != ours.logits_bias)
        MORE(",\"logits_bias\":\"%s\"", logits_bias_name(c->logits_bias));
    const struct {
        const char *name;
        int id, ours;
    } ids[] = {{"pad_id", c->pad_id, ours.pad_id}, {"bos_id", c->bos_id, ours.bos_id},
               {"eos_id", c->eos_id, ours.eos_id}, {"unk_id", c->unk_id, ours.unk_id},
               {"decoder_start_id", c->decoder_start_id, ours.decoder_start_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id != ids[i].ours)
            MORE(",\"%s\":%d", ids[i].name, ids[i].id);
    if (c->forbid_pad != ours.forbid_pad)
        MORE(",\"forbid_pad\":%s", c->forbid_pad ? "true" : "false");
    MORE("}");
#undef MORE
    return n;
}

/* Index of name in names (n of them), or -1. */
static int pick(const char *name, const char *const *names, int n)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

/* The variant fields, each optional: absent, our own models' value (what
 * the preset left in c); present and bad, refused naming the field. */
static clf_status parse_variants(const char *path, const struct clf_json *j, struct clf_model_config *c)
{
    static const char *const acts[] = {"relu", "silu", "gelu", "swish"};  /* swish: SiLU's other name */
    static const int act_of[] = {CLF_ACT_RELU, CLF_ACT_SILU, CLF_ACT_GELU, CLF_ACT_SILU};
    static const char *const biases[] = {"none", "trained", "frozen"};
    const struct clf_json *v;
    if ((v = clf_json_get(j, "activation"))) {
        int k = pick(v->type == CLF_JSON_STRING ? clf_json_str(j, "activation") : NULL, acts, 4);
        if (k < 0)
            return clf_error_set(NULL, CLF_ERR_FORMAT,
                                 "%s: config field activation must be \"relu\", \"silu\" (\"swish\") or \"gelu\"",
                                 path);
        c->activation = act_of[k];
    }
    if ((v = clf_json_get(j, "logits_bias"))) {
        int k = pick(v->type == CLF_JSON_STRING ? clf_json_str(j, "logits_bias") : NULL, biases, 3);
        if (k < 0)
            return clf_error_set(NULL, CLF_ERR_FORMAT,
                                 "%s: config field logits_bias must be \"none\", \"trained\" or \"frozen\"", path);
        c->logits_bias = k;  /* the enum's order */
    }
    struct { const char *key; int *id; } ids[] = {{"pad_id", &c->pad_id}, {"bos_id", &c->bos_id},
        {"eos_id", &c->eos_id}, {"unk_id", &c->unk_id}, {"decoder_start_id", &c->decoder_start_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (!(v = clf_json_get(j, ids[i].key)))
            continue;
        if (v->type != CLF_JSON_NUMBER || v->number != floor(v->number) || v->number < 0 || v->number > INT_MAX)
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: config field %s must be a whole number >= 0", path,
                                 ids[i].key);
        *ids[i].id = (int)v->number;
    }
    if ((v = clf_json_get(j, "forbid_pad"))) {
        if (v->type != CLF_JSON_BOOL)
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: config field forbid_pad must be true or false", path);
        c->forbid_pad = v->boolean;
    }
    return CLF_OK;
}

clf_status clf_model_config_parse(const char *path, const char *text, struct clf_model_config *c)
{
    struct { const char *key; int *i; float *f; } fields[] = {
        {"enc_layers", &c->enc_layers, NULL}, {"dec_layers", &c->dec_layers, NULL}, {"d_model", &c->d_model, NULL},
        {"heads", &c->heads, NULL}, {"d_ff", &c->d_ff, NULL}, {"vocab", &c->vocab, NULL},
        {"max_len", &c->max_len, NULL}, {"dropout", NULL, &c->dropout},
        {"label_smoothing", NULL, &c->label_smoothing}, {"ln_eps", NULL, &c->ln_eps},
        {"enc_window", &c->enc_window, NULL}, {"dec_window", &c->dec_window, NULL}};
    clf_model_config_preset(c, "tiny");  /* the variants' defaults: our own models' */
    struct clf_json j;
    char err[160];
    if (!clf_json_parse(text, strlen(text), &j, err, sizeof err))
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: the config in its metadata is not JSON: %s", path, err);
    clf_status st = CLF_ERR_FORMAT;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const struct clf_json *v = clf_json_get(&j, fields[i].key);
        if (!v) {
            clf_error_set(NULL, st, "%s: the config in its metadata lacks %s", path, fields[i].key);
            goto out;
        }
        bool ok = v->type == CLF_JSON_NUMBER;
        if (ok && fields[i].i) {
            ok = v->number == floor(v->number) && fabs(v->number) <= INT_MAX;
            *fields[i].i = ok ? (int)v->number : 0;
        } else if (ok) {
            *fields[i].f = (float)v->number;
        }
        if (!ok && v->type == CLF_JSON_NUMBER) {
            clf_error_set(NULL, st, "%s: config field %s is %g, not a whole number", path, fields[i].key, v->number);
            goto out;
        }
        if (!ok) {
            clf_error_set(NULL, st, "%s: config field %s is not a number", path, fields[i].key);
            goto out;
        }
    }
    const char *norm = clf_json_str(&j, "norm"), *pos = clf_json_str(&j, "positions");
    const struct clf_json *share = clf_json_get(&j, "share_embeddings");
    if (!norm || (strcmp(norm, "post") && strcmp(norm, "pre"))) {
        clf_error_set(NULL, st, "%s: config field norm must be \"post\" or \"pre\"", path);
        goto out;
    }
    c->norm = strcmp(norm, "pre") ? CLF_NORM_POST : CLF_NORM_PRE;
    static const char *const positions[] = {"sinusoidal", "learned", "sinusoidal_halves"};  /* the enum's order */
    int k = pick(pos, positions, 3);
    if (k < 0) {
        clf_error_set(NULL, st,
                      "%s: config field positions must be \"sinusoidal\", \"learned\" or \"sinusoidal_halves\"",
                      path);
        goto out;
    }
    c->positions = k;
    if (!share || share->type != CLF_JSON_BOOL) {
        clf_error_set(NULL, st, "%s: config field share_embeddings must be true or false", path);
        goto out;
    }
    c->share_embeddings = share->boolean;
    if (parse_variants(path, &j, c) != CLF_OK)
        goto out;
    if (clf_model_config_check(c) != CLF_OK) {
        clf_error_set(NULL, st, "%s: %s", path, clf_ctx_error(NULL));
        goto out;
    }
    st = CLF_OK;
out:
    clf_json_free(&j);
    return st;
}
