/* config.c: model presets, the checks every configuration must pass, and
 * the config as JSON (a checkpoint's metadata). */
#include <stdio.h>
#include <string.h>

#include "runtime/internal.h"

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
