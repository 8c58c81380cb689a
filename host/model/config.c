/* config.c: model presets and the checks every configuration must pass. */
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
            .positions = CLF_POS_SINUSOIDAL, .share_embeddings = true, .enc_window = -1, .dec_window = -1};
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
    REQUIRE(c->vocab > CLF_UNK_ID, "model config: vocab is %d, want more than the %d reserved ids", c->vocab,
            CLF_UNK_ID + 1);
    REQUIRE(c->max_len >= 2, "model config: max_len is %d, want at least 2", c->max_len);
    REQUIRE(c->dropout >= 0 && c->dropout < 1, "model config: dropout is %g, want 0 <= dropout < 1", c->dropout);
    REQUIRE(c->label_smoothing >= 0 && c->label_smoothing < 1,
            "model config: label_smoothing is %g, want 0 <= label_smoothing < 1", c->label_smoothing);
    REQUIRE(c->ln_eps > 0, "model config: ln_eps is %g, want > 0", c->ln_eps);
    REQUIRE(c->norm == CLF_NORM_POST || c->norm == CLF_NORM_PRE, "model config: norm is %d, want post (0) or pre (1)",
            c->norm);
    REQUIRE(c->positions == CLF_POS_SINUSOIDAL || c->positions == CLF_POS_LEARNED,
            "model config: positions is %d, want sinusoidal (0) or learned (1)", c->positions);
    REQUIRE(c->enc_window >= -1, "model config: enc_window is %d, want -1 (full) or a radius >= 0", c->enc_window);
    REQUIRE(c->dec_window >= -1, "model config: dec_window is %d, want -1 (full) or a radius >= 0", c->dec_window);
#undef REQUIRE
    return CLF_OK;
}

int clf_model_config_json(const struct clf_model_config *c, char *out, size_t len)
{
    return snprintf(out, len,
                    "{\"enc_layers\":%d,\"dec_layers\":%d,\"d_model\":%d,\"heads\":%d,\"d_ff\":%d,\"vocab\":%d,"
                    "\"max_len\":%d,\"dropout\":%.9g,\"label_smoothing\":%.9g,\"ln_eps\":%.9g,\"norm\":\"%s\","
                    "\"positions\":\"%s\",\"share_embeddings\":%s,\"enc_window\":%d,\"dec_window\":%d}",
                    c->enc_layers, c->dec_layers, c->d_model, c->heads, c->d_ff, c->vocab, c->max_len,
                    c->dropout, c->label_smoothing, c->ln_eps, c->norm == CLF_NORM_PRE ? "pre" : "post",
                    c->positions == CLF_POS_LEARNED ? "learned" : "sinusoidal",
                    c->share_embeddings ? "true" : "false", c->enc_window, c->dec_window);
}
