/* test_model_variants.c: the variants an imported Marian (OPUS-MT) model
 * needs, all in one tiny model: SiLU in the FFN, a trained bias on the
 * logits, sinusoids in halves, layer-norm ε 1e-5, and special ids that are
 * not 0-3 (pad the last id, eos 0, unk 1, the decoder starting with pad,
 * pad forbidden in decoding). Its gradients against central finite
 * differences of its loss; Adam steps lower the loss; a frozen bias stays
 * as it was; the config survives a checkpoint, our own configs read as
 * before, and a bad value is refused naming its field; decoding agrees
 * with the full forward pass, on the device and on the host, and never
 * emits pad when it is forbidden. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define FIXTURES CLF_SOURCE_DIR "/tests/fixtures/model/"

enum { V = 24, B = 3, S = 6, T = 5 };

static clf_ctx_t *ctx;

static struct clf_model_config marian_config(void)
{
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    c.enc_layers = c.dec_layers = 1;
    c.d_model = 8, c.heads = 2, c.d_ff = 12, c.vocab = V, c.max_len = 16;
    c.dropout = 0.0f, c.label_smoothing = 0.1f, c.ln_eps = 1e-5f;
    c.activation = CLF_ACT_SILU;
    c.logits_bias = CLF_LOGITS_BIAS_TRAINED;
    c.positions = CLF_POS_SINUSOIDAL_HALVES;
    c.pad_id = V - 1, c.eos_id = 0, c.unk_id = 1, c.bos_id = 2, c.decoder_start_id = V - 1;
    c.forbid_pad = true;
    return c;
}

static const struct clf_param *param(clf_model_t *m, const char *name)
{
    size_t np;
    const struct clf_param *p = clf_model_params(m, &np);
    for (size_t i = 0; i < np; i++)
        if (!strcmp(p[i].name, name))
            return &p[i];
    cr_assert_fail("no parameter %s", name);
    return NULL;
}

static size_t numel(const struct clf_param *p)
{
    return p->shape[0] * (p->ndim == 2 ? p->shape[1] : 1);
}

/* The model from seed 11, every bias (the logits' too) made non-zero so
 * that each counts. */
static clf_model_t *make_model(const struct clf_model_config *c)
{
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, c, 11), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t np, n = clf_model_numel(m);
    const struct clf_param *p = clf_model_params(m, &np);
    float *w = tu_download(ctx, clf_model_weights(m), n);
    for (size_t i = 0; i < np; i++) {
        size_t len = strlen(p[i].name);
        if (len > 5 && !strcmp(p[i].name + len - 5, ".bias"))
            tu_fill(w + p[i].offset, numel(&p[i]), 100 + i, -0.5f, 0.5f);
    }
    cr_assert_eq(clf_tensor_upload(ctx, clf_model_weights(m), w), CLF_OK, "%s", clf_ctx_error(ctx));
    free(w);
    return m;
}

/* A batch as Marian's are made: sources end with eos, target inputs start
 * with the decoder's start id (pad), target outputs end with eos, all
 * padded with pad. Real tokens are 3 .. V-2. */
struct batch {
    int32_t src[B * S], tin[B * T], tout[B * T];
    struct clf_model_batch b;
    double tokens;
};

static void make_batch(const struct clf_model_config *c, struct batch *x)
{
    unsigned seed = 5;
    x->tokens = 0;
    for (int b = 0; b < B; b++) {
        int ls = S - 1 - b % 2, lt = T - 1 - b % 2;  /* tokens before eos */
        for (int i = 0; i < S; i++) {
            seed = seed * 1103515245u + 12345u;
            x->src[b * S + i] = i < ls ? 3 + (int32_t)((seed >> 16) % (V - 4)) : i == ls ? c->eos_id : c->pad_id;
        }
        for (int i = 0; i < T; i++) {
            seed = seed * 1103515245u + 12345u;
            x->tout[b * T + i] = i < lt ? 3 + (int32_t)((seed >> 16) % (V - 4)) : i == lt ? c->eos_id : c->pad_id;
            x->tokens += x->tout[b * T + i] != c->pad_id;
        }
        for (int i = 0; i < T; i++)
            x->tin[b * T + i] = i == 0 ? c->decoder_start_id : i <= lt ? x->tout[b * T + i - 1] : c->pad_id;
    }
    x->b = (struct clf_model_batch){B, S, T, x->src, x->tin, x->tout};
}

/* The mean loss per target token; gradients of it added when grad. */
static double mean_loss(clf_model_t *m, struct batch *x, bool grad)
{
    double l, t;
    struct clf_step_opts o = {false, 1, (float)(1.0 / x->tokens)};
    cr_assert_eq(grad ? clf_model_accumulate(m, &x->b, &o) : clf_model_forward(m, &x->b), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    cr_assert_eq(clf_model_loss_take(m, &l, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(t, x->tokens, "the loss counted %g tokens, the batch has %g", t, x->tokens);
    return l / t;
}

static void setup(void) { ctx = tu_ctx(); }
static void teardown(void) { clf_ctx_free(ctx); }

TestSuite(variants, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(120));

/* Every parameter tensor, four elements each (the logits bias too),
 * against central differences of the mean loss. */
Test(variants, gradients_match_finite_differences)
{
    struct clf_model_config c = marian_config();
    clf_model_t *m = make_model(&c);
    struct batch x;
    make_batch(&c, &x);
    size_t np, n = clf_model_numel(m);
    const struct clf_param *p = clf_model_params(m, &np);
    cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
    mean_loss(m, &x, true);
    float *g = tu_download(ctx, clf_model_grads(m), n), *w = tu_download(ctx, clf_model_weights(m), n);
    const double e = 5e-3;
    int checked = 0, bias_seen = 0;
    for (size_t i = 0; i < np; i++) {
        size_t len = numel(&p[i]), at[4] = {0, len / 3, 2 * len / 3, len - 1};
        for (int k = 0; k < 4; k++) {
            size_t j = p[i].offset + at[k];
            float keep = w[j];
            w[j] = keep + (float)e;
            cr_assert_eq(clf_tensor_upload(ctx, clf_model_weights(m), w), CLF_OK);
            double lp = mean_loss(m, &x, false);
            w[j] = keep - (float)e;
            cr_assert_eq(clf_tensor_upload(ctx, clf_model_weights(m), w), CLF_OK);
            double lm = mean_loss(m, &x, false);
            w[j] = keep;
            double fd = (lp - lm) / ((double)(keep + (float)e) - (double)(keep - (float)e));
            cr_expect(fabs(g[j] - fd) <= 1e-3 + 3e-2 * fabs(fd), "%s[%zu]: gradient %.6g, finite differences %.6g",
                      p[i].name, at[k], (double)g[j], fd);
            checked++;
            bias_seen += !strcmp(p[i].name, "logits.bias") && fd != 0;
        }
    }
    cr_assert_eq(clf_tensor_upload(ctx, clf_model_weights(m), w), CLF_OK);
    cr_expect_gt(bias_seen, 0, "the logits bias was not among the checked parameters");
    cr_log_info("%d gradients checked against finite differences", checked);
    free(g), free(w);
    clf_model_free(m);
}

/* Adam lowers the loss; a frozen logits bias stays as it was while the
 * rest moves. */
static double train(clf_model_t *m, struct batch *x, int steps, double *first)
{
    double last = 0;
    for (int s = 0; s < steps; s++) {
        cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
        last = mean_loss(m, x, true);
        if (s == 0)
            *first = last;
        cr_assert_eq(clf_model_adam_step(m, 1e-2f, 0.0f), CLF_OK, "%s", clf_ctx_error(ctx));
    }
    return mean_loss(m, x, false);
}

Test(variants, trains_and_keeps_a_frozen_bias)
{
    struct clf_model_config c = marian_config();
    struct batch x;
    make_batch(&c, &x);
    clf_model_t *m = make_model(&c);
    double first, last = train(m, &x, 40, &first);
    cr_log_info("variant model: loss per token %.4f -> %.4f", first, last);
    cr_expect_lt(last, 0.75 * first, "40 Adam steps took the loss from %.4f to %.4f only", first, last);
    clf_model_free(m);

    c.logits_bias = CLF_LOGITS_BIAS_FROZEN;
    m = make_model(&c);
    const struct clf_param *bias = param(m, "logits.bias"), *w1 = param(m, "decoder.layers.0.ffn.linear1.weight");
    size_t n = clf_model_numel(m);
    float *before = tu_download(ctx, clf_model_weights(m), n);
    last = train(m, &x, 5, &first);
    float *after = tu_download(ctx, clf_model_weights(m), n);
    cr_expect(!memcmp(before + bias->offset, after + bias->offset, V * sizeof(float)), "a frozen bias moved");
    cr_expect(memcmp(before + w1->offset, after + w1->offset, numel(w1) * sizeof(float)), "the FFN did not move");
    float *g = tu_download(ctx, clf_model_grads(m), n);
    for (size_t v = 0; v < V; v++)
        cr_expect_eq(g[bias->offset + v], 0.0f, "a frozen bias has gradient %g", (double)g[bias->offset + v]);
    free(before), free(after), free(g);
    clf_model_free(m);
}

/* ------------------------------------------------------------ checkpoints */

Test(variants, config_survives_a_checkpoint)
{
    struct clf_model_config c = marian_config();
    clf_model_t *m = make_model(&c), *m2;
    char a[512], b[512], v[2048];
    snprintf(a, sizeof a, "%s/variant_a.safetensors", tu_tmpdir());
    snprintf(b, sizeof b, "%s/variant_b.safetensors", tu_tmpdir());
    cr_assert_eq(clf_model_save(m, a, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_load(ctx, &m2, a), CLF_OK, "%s", clf_ctx_error(ctx));
    const struct clf_model_config *r = clf_model_config(m2);
    cr_expect_eq(r->activation, CLF_ACT_SILU);
    cr_expect_eq(r->logits_bias, CLF_LOGITS_BIAS_TRAINED);
    cr_expect_eq(r->positions, CLF_POS_SINUSOIDAL_HALVES);
    cr_expect_eq(r->ln_eps, 1e-5f);
    cr_expect(r->pad_id == V - 1 && r->eos_id == 0 && r->unk_id == 1 && r->bos_id == 2 &&
                  r->decoder_start_id == V - 1 && r->forbid_pad,
              "ids pad %d eos %d unk %d bos %d start %d forbid %d", r->pad_id, r->eos_id, r->unk_id, r->bos_id,
              r->decoder_start_id, (int)r->forbid_pad);
    cr_assert_eq(clf_model_save(m2, b, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    unsigned char *x, *y;
    size_t nx = tu_file_bytes(a, &x), ny = tu_file_bytes(b, &y);
    cr_expect(nx == ny && !memcmp(x, y, nx), "save → load → save changed the bytes");
    free(x), free(y);
    cr_assert_eq(clf_checkpoint_meta(a, "config", v, sizeof v), CLF_OK);
    const char *want[] = {"\"activation\":\"silu\"", "\"logits_bias\":\"trained\"",
                          "\"positions\":\"sinusoidal_halves\"", "\"pad_id\":23", "\"eos_id\":0",
                          "\"decoder_start_id\":23", "\"forbid_pad\":true", NULL};
    for (int i = 0; want[i]; i++)
        cr_expect(strstr(v, want[i]), "config %s lacks %s", v, want[i]);
    cr_assert_eq(clf_checkpoint_meta(a, "inference", v, sizeof v), CLF_OK);
    cr_expect(strstr(v, "\"output_bias\":\"logits.bias\"") &&
                  strstr(v, "\"position_encoding\":\"sin_first_half_cos_second_half\"") &&
                  strstr(v, "\"activation\":\"silu\"") && strstr(v, "\"decoder_start_id\":23"),
              "inference %s", v);
    clf_model_free(m), clf_model_free(m2);

    /* our own: the config reads as it always has, and old files load with our ids */
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    cr_assert_lt(clf_model_config_json(&c, v, sizeof v), (int)sizeof v);
    cr_expect(!strstr(v, "activation") && !strstr(v, "_id") && !strstr(v, "logits_bias") && !strstr(v, "forbid"),
              "our config %s names a variant", v);
    cr_assert_eq(clf_model_load(ctx, &m, FIXTURES "tiny_post.safetensors"), CLF_OK, "%s", clf_ctx_error(ctx));
    r = clf_model_config(m);
    cr_expect(r->activation == CLF_ACT_RELU && r->logits_bias == CLF_LOGITS_BIAS_NONE &&
              r->positions == CLF_POS_SINUSOIDAL && r->pad_id == CLF_PAD_ID && r->bos_id == CLF_BOS_ID &&
              r->eos_id == CLF_EOS_ID && r->unk_id == CLF_UNK_ID && r->decoder_start_id == CLF_BOS_ID &&
              !r->forbid_pad);
    clf_model_free(m);
}

/* Saves the variant model, replaces every `from` in the file's header by
 * `to` (as long), and expects the load to fail naming `field`. */
static void refused(const char *from, const char *to, const char *field)
{
    struct clf_model_config c = marian_config();
    clf_model_t *m = make_model(&c);
    char path[512];
    snprintf(path, sizeof path, "%s/variant_bad.safetensors", tu_tmpdir());
    cr_assert_eq(clf_model_save(m, path, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_model_free(m);
    unsigned char *bytes;
    size_t n = tu_file_bytes(path, &bytes), hlen = 0, k = strlen(from), hits = 0;
    cr_assert_eq(strlen(to), k);
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | bytes[i];
    for (size_t i = 8; i + k <= 8 + hlen && i + k <= n; i++)
        if (!memcmp(bytes + i, from, k))
            memcpy(bytes + i, to, k), hits++;
    cr_assert_gt(hits, 0, "the header lacks %s", from);
    tu_write_bytes(path, bytes, n);
    free(bytes);
    m = NULL;
    cr_assert_neq(clf_model_load(ctx, &m, path), CLF_OK, "%s → %s: accepted", from, to);
    cr_assert_null(m);
    cr_expect(strstr(clf_ctx_error(ctx), field) && strstr(clf_ctx_error(ctx), "variant_bad.safetensors"),
              "%s → %s: message '%s' does not name %s and the file", from, to, clf_ctx_error(ctx), field);
}

Test(variants, bad_values_are_refused_naming_the_field)
{
    refused("silu", "tanh", "activation");
    refused("trained", "tranied", "logits_bias");
    refused("forbid_pad\\\":true", "forbid_pad\\\":1234", "forbid_pad");
    refused("start_id\\\":23", "start_id\\\":99", "decoder_start_id");
    refused("sinusoidal_halves", "sinusoidal_helves", "positions");

    struct clf_model_config c = marian_config();
    struct {
        int *field;
        int bad;
        const char *name;
    } cases[] = {{&c.activation, 3, "activation"},   {&c.logits_bias, 3, "logits_bias"},
                 {&c.positions, 3, "positions"},     {&c.eos_id, V, "eos_id"},
                 {&c.unk_id, -1, "unk_id"},          {&c.bos_id, V + 5, "bos_id"},
                 {&c.decoder_start_id, -2, "decoder_start_id"}, {&c.pad_id, 0, "pad_id"} /* = eos_id */};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        c = marian_config();
        *cases[i].field = cases[i].bad;
        cr_expect_eq(clf_model_config_check(&c), CLF_ERR_ARG, "%s %d accepted", cases[i].name, cases[i].bad);
        cr_expect(strstr(clf_ctx_error(NULL), cases[i].name), "%s: message '%s'", cases[i].name,
                  clf_ctx_error(NULL));
    }
}

/* -------------------------------------------------------------- decoding */

static const int32_t src0[] = {5, 9, 14}, src1[] = {3, 22, 7, 7}, src2[] = {12, 4, 19, 8, 6};
static const int32_t *const srcs[3] = {src0, src1, src2};
static const size_t src_len[3] = {3, 4, 5};

/* The sum of log-probabilities the full forward pass gives hypothesis h
 * (and EOS after it) for source i. */
static double forward_logprob(clf_model_t *m, const struct clf_model_config *c, size_t i,
                              const struct clf_hypothesis *h)
{
    size_t Sl = src_len[i] + 1, Tl = h->n + 1;
    int32_t *s = malloc(Sl * sizeof *s), *ti = malloc(Tl * sizeof *ti), *to = malloc(Tl * sizeof *to);
    memcpy(s, srcs[i], src_len[i] * sizeof *s);
    s[src_len[i]] = c->eos_id;
    ti[0] = c->decoder_start_id;
    for (size_t t = 0; t < h->n; t++)
        ti[t + 1] = to[t] = h->ids[t];
    to[h->n] = c->eos_id;
    struct clf_model_batch b = {1, Sl, Tl, s, ti, to};
    cr_assert_eq(clf_model_forward(m, &b), CLF_OK, "%s", clf_ctx_error(ctx));
    float *logits = tu_download(ctx, clf_model_logits(m), Tl * V);
    double sum = 0;
    for (size_t t = 0; t < Tl; t++) {
        const float *x = logits + t * V;
        double mx = x[0], z = 0;
        for (int v = 1; v < V; v++)
            mx = x[v] > mx ? x[v] : mx;
        for (int v = 0; v < V; v++)
            z += exp(x[v] - mx);
        sum += x[to[t]] - mx - log(z);
    }
    free(s), free(ti), free(to), free(logits);
    return sum;
}

static void translate(clf_model_t *m, bool greedy, struct clf_hypothesis *h)
{
    struct clf_translate_opts o = clf_translate_opts_default();
    o.greedy = greedy;
    o.max_extra = 4;
    cr_assert_eq(clf_model_translate(m, srcs, src_len, 3, &o, h), CLF_OK, "%s", clf_ctx_error(ctx));
}

Test(variants, decoding_agrees_with_the_forward_pass)
{
    struct clf_model_config c = marian_config();
    clf_model_t *m = make_model(&c);
    for (int greedy = 1; greedy >= 0; greedy--) {
        struct clf_hypothesis dev[3], host[3];
        translate(m, greedy, dev);
        tu_setting("CLF_SEARCH", "host");
        translate(m, greedy, host);
        tu_setting("CLF_SEARCH", NULL);
        for (size_t i = 0; i < 3; i++) {
            cr_expect(dev[i].n == host[i].n && !memcmp(dev[i].ids, host[i].ids, dev[i].n * sizeof(int32_t)),
                      "%s, sentence %zu: the device's search and the host's differ", greedy ? "greedy" : "beam", i);
            double want = forward_logprob(m, &c, i, &dev[i]);
            cr_expect(fabs(dev[i].logprob - want) <= 1e-4 * (1 + fabs(want)),
                      "%s, sentence %zu: decoding's log-probability %.6g, the forward pass's %.6g",
                      greedy ? "greedy" : "beam", i, (double)dev[i].logprob, want);
            for (size_t t = 0; t < dev[i].n; t++)
                cr_expect(dev[i].ids[t] != c.pad_id && dev[i].ids[t] != c.eos_id, "sentence %zu holds id %d", i,
                          (int)dev[i].ids[t]);
        }
        clf_hypotheses_free(dev, 3), clf_hypotheses_free(host, 3);
    }
    clf_model_free(m);
}

/* With pad's logit far above the rest, decoding picks pad unless it is
 * forbidden. */
static int pads_emitted(bool forbid, bool greedy)
{
    struct clf_model_config c = marian_config();
    c.forbid_pad = forbid;
    clf_model_t *m = make_model(&c);
    const struct clf_param *bias = param(m, "logits.bias");
    size_t n = clf_model_numel(m);
    float *w = tu_download(ctx, clf_model_weights(m), n);
    w[bias->offset + (size_t)c.pad_id] = 50.0f;
    cr_assert_eq(clf_tensor_upload(ctx, clf_model_weights(m), w), CLF_OK);
    struct clf_hypothesis h[3];
    translate(m, greedy, h);
    int pads = 0;
    for (size_t i = 0; i < 3; i++)
        for (size_t t = 0; t < h[i].n; t++)
            pads += h[i].ids[t] == c.pad_id;
    clf_hypotheses_free(h, 3);
    free(w);
    clf_model_free(m);
    return pads;
}

Test(variants, forbidden_pad_is_never_emitted)
{
    cr_expect_gt(pads_emitted(false, true), 0, "greedy: the test's model should pick pad when it may");
    cr_expect_gt(pads_emitted(false, false), 0, "beam: the test's model should pick pad when it may");
    cr_expect_eq(pads_emitted(true, true), 0, "greedy emitted a forbidden pad");
    cr_expect_eq(pads_emitted(true, false), 0, "beam emitted a forbidden pad");
}
