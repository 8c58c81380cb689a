/* test_model.c: the Transformer against PyTorch (fixtures written by
 * tests/fixtures/model/make_parity.py), checkpoints (round trip, and
 * refusal of damaged files), and the tiny model overfitting one batch. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define FIXTURES CLF_SOURCE_DIR "/tests/fixtures/model/"

static void parity(const char *norm)
{
    char path[512];
    struct tu_parity p;
    snprintf(path, sizeof path, FIXTURES "tiny_%s.parity", norm);
    tu_parity_read(path, &p);
    clf_ctx_t *ctx = tu_ctx();
    clf_model_t *m;
    snprintf(path, sizeof path, FIXTURES "tiny_%s.safetensors", norm);
    cr_assert_eq(clf_model_load(ctx, &m, path), CLF_OK, "%s", clf_ctx_error(ctx));
    const struct clf_model_config *c = clf_model_config(m);
    cr_assert_eq(c->norm, strcmp(norm, "pre") ? CLF_NORM_POST : CLF_NORM_PRE);

    const struct tu_entry *src = tu_parity_get(&p, "src"), *tin = tu_parity_get(&p, "tgt_in"), *tout = tu_parity_get(&p, "tgt_out");
    int32_t *s = tu_entry_ids(src), *ti = tu_entry_ids(tin), *to = tu_entry_ids(tout);
    const size_t B = 3;
    struct clf_model_batch b = {B, src->numel / B, tin->numel / B, s, ti, to};
    double want_loss = tu_parity_get(&p, "loss")->data[0], want_tokens = tu_parity_get(&p, "tokens")->data[0];

    /* forward only: loss and logits */
    double loss, tokens;
    cr_assert_eq(clf_model_forward(m, &b), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_loss_take(m, &loss, &tokens), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(tokens, want_tokens);
    cr_assert(fabs(loss - want_loss) <= 1e-5 * fabs(want_loss), "%s: loss %.9g, PyTorch %.9g", norm, loss, want_loss);
    const clf_tensor *lt = clf_model_logits(m);
    cr_assert_not_null(lt, "%s", clf_ctx_error(ctx));
    const struct tu_entry *wl = tu_parity_get(&p, "logits");
    float *logits = malloc(clf_tensor_numel(lt) * sizeof *logits);
    cr_assert_eq(clf_tensor_download(ctx, lt, logits), CLF_OK);
    cr_assert(tu_close("logits", logits, wl->data, wl->numel, 1e-4, 1e-4));

    /* a model that has only run forwards holds no gradients, and Adam
     * says why it cannot step */
    cr_assert_eq(clf_model_adam_step(m, 1e-3f, 0.0f), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "no gradients yet"), "%s", clf_ctx_error(ctx));

    /* forward and backward: every gradient */
    struct clf_step_opts train = {false, 1, (float)(1.0 / want_tokens)};
    cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
    cr_assert_eq(clf_model_forward_backward(m, &b, &train, &loss, &tokens), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert(fabs(loss - want_loss) <= 1e-5 * fabs(want_loss));
    size_t np;
    const struct clf_param *params = clf_model_params(m, &np);
    float *grads = malloc(clf_model_numel(m) * sizeof *grads);
    cr_assert_eq(clf_tensor_download(ctx, clf_model_grads(m), grads), CLF_OK);
    for (size_t i = 0; i < np; i++) {
        char name[160];
        snprintf(name, sizeof name, "grad.%s", params[i].name);
        const struct tu_entry *g = tu_parity_get(&p, name);
        size_t n = params[i].shape[0] * (params[i].ndim == 2 ? params[i].shape[1] : 1);
        cr_assert_eq(g->numel, n, "%s", name);
        cr_assert(tu_close(name, grads + params[i].offset, g->data, n, 1e-4, 1e-3), "%s (%s)", name, norm);
    }
    free(s), free(ti), free(to), free(logits), free(grads);
    tu_parity_free(&p);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

Test(model, parity_with_pytorch_post_norm) { parity("post"); }
Test(model, parity_with_pytorch_pre_norm) { parity("pre"); }

Test(model, save_load_save_is_byte_identical)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    clf_model_t *m, *m2;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 7), CLF_OK, "%s", clf_ctx_error(ctx));
    const char *dir = tu_tmpdir();
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/a.safetensors", dir);
    snprintf(b, sizeof b, "%s/b.safetensors", dir);
    struct clf_ckpt_meta meta, again;
    clf_ckpt_meta_init(&meta, m);
    meta.has_tokenizer_hash = true;
    meta.tokenizer_hash = 0x0123456789abcdefull;
    cr_assert_eq(clf_model_save(m, a, &meta), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_load(ctx, &m2, a), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_ckpt_meta_read(a, &again), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_model_save(m2, b, &again), CLF_OK, "%s", clf_ctx_error(ctx));
    unsigned char *x, *y;
    size_t nx = tu_file_bytes(a, &x), ny = tu_file_bytes(b, &y);
    cr_assert_eq(nx, ny);
    cr_assert_eq(memcmp(x, y, nx), 0, "save → load → save changed the bytes");
    char hash[64];
    cr_assert_eq(clf_checkpoint_meta(a, "tokenizer_hash", hash, sizeof hash), CLF_OK);
    cr_assert_str_eq(hash, "0123456789abcdef");
    free(x), free(y);
    clf_model_free(m);
    clf_model_free(m2);
    clf_ctx_free(ctx);
}

/* The metadata says how to run the model without clformer; a checkpoint
 * written before it existed (the PyTorch fixture) still loads. */
Test(model, checkpoint_says_how_to_run_it)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    clf_model_t *m;
    char path[512], v[2048];
    const char *want_post[] = {"\"output_projection\":\"embed.weight^T\"", "\"output_bias\":false",
                               "\"embedding_scale\":5.65685415", "\"position_encoding\":\"sin_even_cos_odd\"",
                               "\"first_position\":0", "\"source_suffix\":\"eos\"", "\"target_prefix\":\"bos\"",
                               "\"eos_id\":2", "\"bos_id\":1", "\"attention_scale\":0.353553391",
                               "\"activation\":\"relu\"", "\"final_norm\":false", NULL};
    snprintf(path, sizeof path, "%s/m.safetensors", tu_tmpdir());
    cr_assert_eq(clf_model_init(ctx, &m, &c, 7), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_save(m, path, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_model_free(m);
    cr_assert_eq(clf_checkpoint_meta(path, "inference", v, sizeof v), CLF_OK, "%s", clf_ctx_error(NULL));
    for (int i = 0; want_post[i]; i++)
        cr_expect(strstr(v, want_post[i]), "inference metadata %s lacks %s", v, want_post[i]);
    cr_assert_eq(clf_checkpoint_meta(path, "config", v, sizeof v), CLF_OK);
    cr_expect(strstr(v, "\"ln_eps\":9.99999997e-07") && strstr(v, "\"norm\":\"post\""), "config %s", v);

    c.norm = CLF_NORM_PRE, c.positions = CLF_POS_LEARNED;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 7), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_save(m, path, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_model_free(m);
    cr_assert_eq(clf_checkpoint_meta(path, "inference", v, sizeof v), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_expect(strstr(v, "\"position_encoding\":\"pos.weight\"") && strstr(v, "\"final_norm\":true"), "%s", v);

    cr_assert_neq(clf_checkpoint_meta(FIXTURES "tiny_post.safetensors", "inference", v, sizeof v), CLF_OK,
                  "the fixture was meant to predate the inference metadata");
    cr_assert_eq(clf_model_load(ctx, &m, FIXTURES "tiny_post.safetensors"), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* Writes a damaged copy of the post-norm fixture and expects a refusal
 * whose message contains `want`. */
static void refused(const char *what, void (*damage)(unsigned char *, size_t *), const char *want)
{
    unsigned char *b;
    size_t n = tu_file_bytes(FIXTURES "tiny_post.safetensors", &b);
    damage(b, &n);
    char path[512];
    snprintf(path, sizeof path, "%s/bad.safetensors", tu_tmpdir());
    tu_write_bytes(path, b, n);
    free(b);
    clf_ctx_t *ctx = tu_ctx();
    clf_model_t *m = NULL;
    clf_status st = clf_model_load(ctx, &m, path);
    cr_assert_neq(st, CLF_OK, "%s: accepted", what);
    cr_assert_null(m);
    cr_assert(strstr(clf_ctx_error(ctx), want), "%s: message '%s' lacks '%s'", what, clf_ctx_error(ctx), want);
    cr_assert(strstr(clf_ctx_error(ctx), "bad.safetensors"), "%s: message does not name the file", what);
    clf_ctx_free(ctx);
}

static void truncate_half(unsigned char *b, size_t *n) { (void)b; *n /= 2; }
static void header_too_long(unsigned char *b, size_t *n) { (void)n; b[5] = 0x7f; }
static void tiny_file(unsigned char *b, size_t *n) { (void)b; *n = 5; }
static uint64_t hlen(const unsigned char *b)
{
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = h << 8 | b[i];
    return h;
}
/* Replaces the first occurrence of `from` in the header by `to` (same length). */
static void header_replace(unsigned char *b, const char *from, const char *to)
{
    char *h = (char *)b + 8;
    size_t len = hlen(b);
    for (size_t i = 0; i + strlen(from) <= len; i++)
        if (!memcmp(h + i, from, strlen(from))) {
            memcpy(h + i, to, strlen(to));
            return;
        }
    cr_assert_fail("header lacks %s", from);
}
static void overlap(unsigned char *b, size_t *n)
{
    (void)n;
    /* the second tensor's data now starts inside the first's */
    header_replace(b, "\"data_offsets\":[8192,20480]", "\"data_offsets\":[4096,16384]");
}
static void wrong_shape(unsigned char *b, size_t *n)
{
    (void)n;
    header_replace(b, "\"shape\":[64,32]", "\"shape\":[32,64]");
}
static void bad_json(unsigned char *b, size_t *n)
{
    (void)n;
    header_replace(b, "\"dtype\"", "\"dtyp\"\"");
}

Test(model, truncated_checkpoint_is_refused) { refused("truncated", truncate_half, "outside"); }
Test(model, header_past_the_file_is_refused) { refused("header length", header_too_long, "past the end"); }
Test(model, five_byte_file_is_refused) { refused("5 bytes", tiny_file, "truncated"); }
Test(model, overlapping_offsets_are_refused) { refused("overlap", overlap, "overlap"); }
Test(model, wrong_shape_is_refused) { refused("shape", wrong_shape, "embed.weight"); }
Test(model, malformed_header_is_refused) { refused("json", bad_json, "malformed header"); }

Test(model, bad_config_names_the_field)
{
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "small"), CLF_OK);
    c.heads = 3;
    cr_assert_eq(clf_model_config_check(&c), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(NULL), "heads"), "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_model_config_preset(&c, "small"), CLF_OK);
    c.d_ff = 0;
    cr_assert_eq(clf_model_config_check(&c), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(NULL), "d_ff"), "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_model_config_preset(&c, "huge"), CLF_ERR_ARG);
}

Test(model, tiny_overfits_one_batch)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    c.label_smoothing = 0;  /* with smoothing the floor of the loss is well above 0.1 */
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 3), CLF_OK, "%s", clf_ctx_error(ctx));
    enum { B = 4, S = 8, T = 9 };
    int32_t src[B * S], tin[B * T], tout[B * T];
    unsigned seed = 11;
    memset(tin, 0, sizeof tin);
    memset(tout, 0, sizeof tout);
    for (int b = 0; b < B; b++) {
        int len = S - b;
        for (int i = 0; i < S; i++) {
            seed = seed * 1103515245u + 12345u;
            src[b * S + i] = i < len ? 4 + (int)((seed >> 16) % 60) : 0;
        }
        tin[b * T] = CLF_BOS_ID;
        for (int i = 0; i < len; i++) {  /* the task: reverse the source */
            tin[b * T + 1 + i] = src[b * S + len - 1 - i];
            tout[b * T + i] = src[b * S + len - 1 - i];
        }
        tout[b * T + len] = CLF_EOS_ID;
    }
    struct clf_model_batch batch = {B, S, T, src, tin, tout};
    int ntok = 0;
    for (int i = 0; i < B * T; i++)
        ntok += tout[i] != CLF_PAD_ID;
    double loss = 0, tokens = 0, first = 0;
    for (int step = 1; step <= 300; step++) {
        struct clf_step_opts o = {true, (uint32_t)step, 1.0f / (float)ntok};
        cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
        cr_assert_eq(clf_model_forward_backward(m, &batch, &o, &loss, &tokens), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert_eq(tokens, ntok);
        if (step == 1)
            first = loss / tokens;
        if (loss / tokens < 0.1)
            break;
        cr_assert_eq(clf_model_adam_step(m, 3e-3f, 0.0f), CLF_OK, "%s", clf_ctx_error(ctx));
    }
    cr_log_info("tiny: loss per token %.3f -> %.4f", first, loss / tokens);
    cr_assert_lt(loss / tokens, 0.1, "loss per token %.4f after 300 steps (started at %.3f)", loss / tokens, first);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* A random batch of n sentences padded to src_len and tgt_len (each
 * sentence a little shorter than its pad length, never empty). */
static void random_batch(int32_t *src, int32_t *tin, int32_t *tout, size_t n, size_t S, size_t T, int vocab,
                         unsigned *seed)
{
    for (size_t b = 0; b < n; b++) {
        size_t ls = S - b % 2, lt = T - 1 - b % 2;
        for (size_t i = 0; i < S; i++) {
            *seed = *seed * 1103515245u + 12345u;
            src[b * S + i] = i + 1 < ls ? 4 + (int32_t)((*seed >> 16) % (unsigned)(vocab - 4))
                             : i + 1 == ls ? CLF_EOS_ID : CLF_PAD_ID;
        }
        for (size_t i = 0; i < T; i++) {
            *seed = *seed * 1103515245u + 12345u;
            int32_t t = 4 + (int32_t)((*seed >> 16) % (unsigned)(vocab - 4));
            tout[b * T + i] = i < lt ? t : i == lt ? CLF_EOS_ID : CLF_PAD_ID;
        }
        for (size_t i = 0; i < T; i++)
            tin[b * T + i] = i == 0 ? CLF_BOS_ID : i <= lt ? tout[b * T + i - 1] : CLF_PAD_ID;
    }
}

/* Batches cut by tokens, as clf_batches_make cuts them: many short
 * sentences in one, few long ones in another. The plan follows the rows of
 * the largest batch, not the largest count times the largest length. */
Test(model, activations_are_planned_on_rows_not_count_times_length)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 5), CLF_OK, "%s", clf_ctx_error(ctx));
    enum { MAX_TOKENS = 120 };
    const size_t shapes[][3] = {{40, 3, 3}, {2, 60, 58}, {8, 15, 14}, {1, 7, 9}};  /* sentences, S, T */
    unsigned seed = 7;
    struct clf_model_shape seen = {0, 0, 0}, product = {0, 0, 0};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        size_t n = shapes[k][0], S = shapes[k][1], T = shapes[k][2];
        cr_assert_leq(n * (S > T ? S : T), MAX_TOKENS);
        int32_t *src = malloc(n * S * sizeof *src), *tin = malloc(n * T * sizeof *tin),
                *tout = malloc(n * T * sizeof *tout);
        random_batch(src, tin, tout, n, S, T, c.vocab, &seed);
        struct clf_model_batch b = {n, S, T, src, tin, tout};
        struct clf_step_opts o = {true, (uint32_t)k + 1, 1.0f / (float)(n * T)};
        double loss, tokens;
        cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
        cr_assert_eq(clf_model_forward_backward(m, &b, &o, &loss, &tokens), CLF_OK, "shape %zu: %s", k,
                     clf_ctx_error(ctx));
        cr_assert(isfinite(loss) && loss > 0, "shape %zu: loss %g", k, loss);
        cr_assert_eq(clf_model_adam_step(m, 1e-3f, 1.0f), CLF_OK, "%s", clf_ctx_error(ctx));
        clf_model_shape_add(&seen, n, S, T);
        if (n > product.batch)
            product.batch = n;
        if (S > product.src_rows)
            product.src_rows = S;
        if (T > product.tgt_rows)
            product.tgt_rows = T;
        free(src), free(tin), free(tout);
    }
    product.src_rows *= product.batch, product.tgt_rows *= product.batch;
    size_t planned = clf_model_activation_bytes(m);
    const struct clf_model_shape one = {1, 1, 1};
    size_t per_token = clf_model_config_activation_bytes(&c, &one);
    size_t old = clf_model_config_activation_bytes(&c, &product);
    cr_log_info("planned %zu bytes; %zu per token; count x length would plan %zu", planned, per_token, old);
    cr_assert_eq(planned, clf_model_config_activation_bytes(&c, &seen));
    cr_assert_leq(planned, MAX_TOKENS * per_token, "planned %zu bytes, more than %d tokens of %zu", planned,
                  MAX_TOKENS, per_token);
    cr_assert_gt(old, 10 * planned);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* A plan past the device's limits is refused before anything is allocated,
 * naming the buffer and what to change (the limit, not a command's flag:
 * `clformer train` adds its own, test_memory checks). */
Test(model, oversized_plans_are_refused_with_the_buffer_named)
{
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_device_info *dev = clf_ctx_device(ctx);
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    c.vocab = 100;  /* the logits the widest tensor: wider than d_ff and 3·d_model */
    cr_assert_gt(c.vocab, c.d_ff);
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 5), CLF_OK, "%s", clf_ctx_error(ctx));
    struct clf_model_shape big = {1, 8, (size_t)(dev->max_alloc / (sizeof(float) * (size_t)c.vocab)) + 1};
    cr_assert_eq(clf_model_reserve(m, &big), CLF_ERR_MEMORY);
    const char *e = clf_ctx_error(ctx);
    cr_assert(strstr(e, "logits") && strstr(e, "CL_DEVICE_MAX_MEM_ALLOC_SIZE") && strstr(e, "tokens per batch"), "%s",
              e);
    cr_assert_null(strstr(e, "--"), "the library names no command's flag: %s", e);
    /* every buffer fits, all of them do not */
    size_t widest = (size_t)c.vocab > 3 * (size_t)c.d_model ? (size_t)c.vocab : 3 * (size_t)c.d_model;
    size_t rows = (size_t)(dev->max_alloc / (sizeof(float) * widest));
    struct clf_model_shape many = {1, rows, rows};
    cr_assert_gt(clf_model_config_activation_bytes(&c, &many), dev->global_mem);
    cr_assert_eq(clf_model_reserve(m, &many), CLF_ERR_MEMORY);
    e = clf_ctx_error(ctx);
    cr_assert(strstr(e, "MiB of") && strstr(e, "tokens per batch"), "%s", e);
    cr_assert_null(strstr(e, "--"), "the library names no command's flag: %s", e);
    cr_assert_eq(clf_model_activation_bytes(m), 0);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* The loss of an update taken once (batches accumulated on the device)
 * equals the batches' losses taken one by one and added, exactly; and the
 * gradients are the same. */
Test(model, loss_taken_once_per_update_equals_the_sum_of_batches)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 5), CLF_OK, "%s", clf_ctx_error(ctx));
    enum { NB = 20 };  /* more batches than the first list of pending losses holds */
    const size_t n = 3, S = 6, T = 5;
    int32_t src[NB][3 * 6], tin[NB][3 * 5], tout[NB][3 * 5];
    unsigned seed = 3;
    for (int k = 0; k < NB; k++)
        random_batch(src[k], tin[k], tout[k], n, S, T, c.vocab, &seed);
    double want_l = 0, want_t = 0, got_l, got_t;
    size_t numel = clf_model_numel(m);
    float *g[2];
    for (int pass = 0; pass < 2; pass++) {
        cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
        for (int k = 0; k < NB; k++) {
            struct clf_model_batch b = {n, S, T, src[k], tin[k], tout[k]};
            struct clf_step_opts o = {true, 1, 0.01f};
            if (pass == 0) {
                double l, t;
                cr_assert_eq(clf_model_forward_backward(m, &b, &o, &l, &t), CLF_OK, "%s", clf_ctx_error(ctx));
                want_l += l, want_t += t;
            } else {
                cr_assert_eq(clf_model_accumulate(m, &b, &o), CLF_OK, "%s", clf_ctx_error(ctx));
            }
        }
        if (pass == 1)
            cr_assert_eq(clf_model_loss_take(m, &got_l, &got_t), CLF_OK, "%s", clf_ctx_error(ctx));
        g[pass] = tu_download(ctx, clf_model_grads(m), numel);
    }
    cr_assert_eq(got_l, want_l, "loss %.17g taken once, %.17g batch by batch", got_l, want_l);
    cr_assert_eq(got_t, want_t);
    cr_assert(memcmp(g[0], g[1], numel * sizeof(float)) == 0, "gradients differ");
    cr_assert_eq(clf_model_loss_take(m, &got_l, &got_t), CLF_OK);
    cr_assert(got_l == 0 && got_t == 0, "a second take returned %g, %g", got_l, got_t);
    free(g[0]), free(g[1]);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* What the backward hook saw: each parameter's gradient when it was
 * named, and the order of the calls. */
struct hook_log {
    clf_ctx_t *ctx;
    clf_model_t *m;
    float *seen;      /* (numel) the gradients as each was named */
    int *named;       /* (nparams) times named */
    size_t calls, first_enc_call, last_dec_call;
    clf_status answer;
};

static clf_status hook_saw(void *user, const size_t *params, size_t n)
{
    struct hook_log *h = user;
    size_t np;
    const struct clf_param *p = clf_model_params(h->m, &np);
    for (size_t j = 0; j < n; j++) {
        cr_assert_lt(params[j], np);
        const struct clf_param *q = &p[params[j]];
        size_t len = q->ndim == 2 ? q->shape[0] * q->shape[1] : q->shape[0];
        clf_tensor v;
        /* blocking: waits for everything enqueued before this call */
        cr_assert_eq(clf_tensor_view(h->ctx, clf_model_grads(h->m), q->offset, 1, &len, &v), CLF_OK);
        cr_assert_eq(clf_tensor_download(h->ctx, &v, h->seen + q->offset), CLF_OK);
        h->named[params[j]]++;
        if (!strncmp(q->name, "encoder.layers.", 15) && !h->first_enc_call)
            h->first_enc_call = h->calls + 1;
        if (!strncmp(q->name, "decoder.layers.", 15))
            h->last_dec_call = h->calls + 1;
    }
    h->calls++;
    return h->answer;
}

/* The backward hook names every parameter once, layer by layer (the
 * decoder's before the encoder's), and only once its gradient is final:
 * what it held when named is, bit for bit, what it holds after the
 * backward. Post-norm with shared embeddings (the embedding is final only
 * at the very end), and pre-norm with separate ones, learned positions
 * and a trained logits bias. A hook's error ends the backward with it, and
 * a hook serves one backward only. */
static void hook_names_final_gradients(bool variant)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    c.dropout = 0.1f;
    if (variant) {
        c.norm = CLF_NORM_PRE, c.share_embeddings = false, c.positions = CLF_POS_LEARNED;
        c.logits_bias = CLF_LOGITS_BIAS_TRAINED;
    }
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 9), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t np, numel = clf_model_numel(m);
    const struct clf_param *p = clf_model_params(m, &np);
    const size_t n = 3, S = 7, T = 5;
    int32_t src[2][3 * 7], tin[2][3 * 5], tout[2][3 * 5];
    unsigned seed = 11;
    for (int k = 0; k < 2; k++)
        random_batch(src[k], tin[k], tout[k], n, S, T, c.vocab, &seed);
    struct hook_log h = {ctx, m, calloc(numel, sizeof(float)), calloc(np, sizeof(int)), 0, 0, 0, CLF_OK};
    struct clf_backward_hook hook = {hook_saw, &h};
    struct clf_step_opts o = {true, 1, 0.01f};
    cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
    /* a first batch without the hook: the second adds to its gradients */
    struct clf_model_batch b0 = {n, S, T, src[0], tin[0], tout[0]}, b1 = {n, S, T, src[1], tin[1], tout[1]};
    cr_assert_eq(clf_model_accumulate(m, &b0, &o), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(h.calls, 0);
    clf_model_backward_hook(m, &hook);
    cr_assert_eq(clf_model_accumulate(m, &b1, &o), CLF_OK, "%s", clf_ctx_error(ctx));
    float *final = tu_download(ctx, clf_model_grads(m), numel);
    for (size_t i = 0; i < np; i++) {
        cr_assert_eq(h.named[i], 1, "%s named %d times", p[i].name, h.named[i]);
        size_t len = p[i].ndim == 2 ? p[i].shape[0] * p[i].shape[1] : p[i].shape[0];
        cr_assert(memcmp(h.seen + p[i].offset, final + p[i].offset, len * sizeof(float)) == 0,
                  "%s changed after the hook named it", p[i].name);
    }
    cr_assert_geq(h.calls, (size_t)(c.enc_layers + c.dec_layers + 1), "only %zu calls", h.calls);
    cr_assert(h.first_enc_call > h.last_dec_call, "an encoder layer named (call %zu) before the last decoder "
              "layer (call %zu)", h.first_enc_call, h.last_dec_call);
    /* one backward only; then an error from the hook is the backward's */
    size_t calls = h.calls;
    cr_assert_eq(clf_model_accumulate(m, &b0, &o), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(h.calls, calls, "the hook served a second backward");
    h.answer = CLF_ERR_IO;
    clf_model_backward_hook(m, &hook);
    cr_assert_eq(clf_model_accumulate(m, &b0, &o), CLF_ERR_IO);
    cr_assert_eq(h.calls, calls + 1, "the backward went on after the hook's error");
    free(final), free(h.seen), free(h.named);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

Test(model, backward_hook_names_final_gradients) { hook_names_final_gradients(false); }
Test(model, backward_hook_names_final_gradients_pre_norm_learned) { hook_names_final_gradients(true); }

/* The forward alone is clf_model_forward: its loss is the one the
 * backward's forward computes, it adds nothing to the gradients and keeps
 * its logits; clf_model_accumulate always runs the backward (the logits
 * are its gradient then) and refuses a grad_scale of 0, naming the call
 * that runs a forward alone. */
Test(model, forward_alone_and_accumulate_are_two_calls)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    c.dropout = 0;
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 3), CLF_OK, "%s", clf_ctx_error(ctx));
    const size_t n = 2, S = 6, T = 4, numel = clf_model_numel(m);
    int32_t src[2 * 6], tin[2 * 4], tout[2 * 4];
    unsigned seed = 5;
    random_batch(src, tin, tout, n, S, T, c.vocab, &seed);
    struct clf_model_batch b = {n, S, T, src, tin, tout};
    double fwd_loss, fwd_tok, loss, tok;
    cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
    cr_assert_eq(clf_model_forward(m, &b), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_not_null(clf_model_logits(m));
    cr_assert_eq(clf_model_loss_take(m, &fwd_loss, &fwd_tok), CLF_OK, "%s", clf_ctx_error(ctx));
    float *g = tu_download(ctx, clf_model_grads(m), numel);
    for (size_t i = 0; i < numel; i++)
        cr_assert_eq(g[i], 0.0f, "the forward alone changed gradient %zu", i);
    free(g);
    struct clf_step_opts o = {false, 1, 0.0f};
    cr_assert_eq(clf_model_accumulate(m, &b, &o), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "clf_model_forward"), "%s", clf_ctx_error(ctx));
    o.grad_scale = 1.0f;
    cr_assert_eq(clf_model_forward_backward(m, &b, &o, &loss, &tok), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_null(clf_model_logits(m), "logits after a backward are its gradient");
    cr_assert_eq(tok, fwd_tok);
    cr_assert_eq(loss, fwd_loss, "forward alone %.9g, with the backward %.9g", fwd_loss, loss);
    g = tu_download(ctx, clf_model_grads(m), numel);
    bool any = false;
    for (size_t i = 0; i < numel && !any; i++)
        any = g[i] != 0.0f;
    cr_assert(any, "the backward added no gradient");
    free(g);
    clf_model_free(m);
    clf_ctx_free(ctx);
}
