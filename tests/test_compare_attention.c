/* test_compare_attention.c: what `clformer compare-attention` rests on.
 * Restricted attention with a radius r >= n is full attention bit for bit
 * (forward and backward, with and without causality); the reach measured
 * through the encoder's (decoder's) backward matches min(n, 1 + 2·L·r)
 * (min(pos + 1, 1 + L·r)); and the tool's --quick JSON parses and names
 * the device. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reach.h"
#include "testutil.h"

enum { B = 2, H = 2, DK = 16 };

struct run {
    clf_tensor t[8], lse;
    float *out[5]; /* o, lse, dq, dk, dv */
};

/* Forward and backward of attention on fixed random data with the given
 * mask; keeps the outputs on the host. */
static void attend(clf_ctx_t *ctx, size_t n, bool causal, int window, struct run *r)
{
    size_t numel = (size_t)B * H * n * DK, rows = (size_t)B * H * n;
    float *h = malloc(numel * sizeof *h);
    for (int i = 0; i < 8; i++) {
        tu_fill(h, numel, 100 + (unsigned long long)i, -1.0f, 1.0f);
        r->t[i] = tu_upload(ctx, h, numel);
    }
    free(h);
    cr_assert_eq(clf_tensor_init(ctx, &r->lse, 1, &rows), CLF_OK);
    struct clf_attention_layout l[8];
    for (int i = 0; i < 8; i++)
        l[i] = (struct clf_attention_layout){r->t[i].buf, 0, H * n * DK, n * DK, DK};
    struct clf_attention_desc d = {
        .batch = B, .heads = H, .n_q = n, .n_k = n, .d_k = DK, .causal = causal, .window = window};
    struct clf_attention_workspace ws;
    cr_assert_eq(clf_attention_workspace_init(ctx, &ws, B, H, n), CLF_OK);
    /* q k v o dO dq dk dv */
    cr_assert_eq(clf_attention_forward(ctx, &l[3], &r->lse, &l[0], &l[1], &l[2], &d), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    cr_assert_eq(clf_attention_backward(ctx, &l[5], &l[6], &l[7], &l[4], &l[0], &l[1], &l[2], &l[3], &r->lse, &ws, &d),
                 CLF_OK, "%s", clf_ctx_error(ctx));
    r->out[0] = tu_download(ctx, &r->t[3], numel);
    r->out[1] = tu_download(ctx, &r->lse, rows);
    for (int i = 0; i < 3; i++)
        r->out[2 + i] = tu_download(ctx, &r->t[5 + i], numel);
    clf_attention_workspace_free(&ws);
    for (int i = 0; i < 8; i++)
        clf_tensor_free(&r->t[i]);
    clf_tensor_free(&r->lse);
}

Test(compare_attention, wide_window_is_full_attention_bitwise)
{
    clf_ctx_t *ctx = tu_ctx();
    static const size_t lens[] = {1, 7, 33, 100};
    static const char *names[] = {"o", "lse", "dq", "dk", "dv"};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int causal = 0; causal < 2; causal++) {
            size_t n = lens[li];
            struct run full, wide[3];
            attend(ctx, n, causal, -1, &full);
            const int windows[3] = {(int)n - 1 > 0 ? (int)n - 1 : 0, (int)n, 100000};
            for (int w = 0; w < 3; w++) {
                attend(ctx, n, causal, windows[w], &wide[w]);
                for (int k = 0; k < 5; k++) {
                    size_t cnt = (size_t)B * H * n * (k == 1 ? 1 : DK);
                    cr_expect(!memcmp(full.out[k], wide[w].out[k], cnt * sizeof(float)),
                              "n=%zu causal=%d r=%d: %s differs from full attention", n, causal, windows[w], names[k]);
                    free(wide[w].out[k]);
                }
            }
            for (int k = 0; k < 5; k++)
                free(full.out[k]);
        }
    clf_ctx_free(ctx);
}

static clf_model_t *tiny_model(clf_ctx_t *ctx, int layers, int enc_window, int dec_window)
{
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    c.enc_layers = c.dec_layers = layers;
    c.enc_window = enc_window;
    c.dec_window = dec_window;
    c.max_len = 64;
    clf_model_t *m = NULL;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 7), CLF_OK, "%s", clf_ctx_error(ctx));
    return m;
}

Test(compare_attention, measured_reach_matches_the_formula)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t n = 40;
    static const int radii[] = {1, 3, 5, -1};
    for (int L = 1; L <= 3; L++)
        for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ri++) {
            int r = radii[ri];
            clf_model_t *m = tiny_model(ctx, L, r, r);
            struct reach got;
            /* encoder, central output: min(n, 1 + 2·L·r) */
            cr_assert_eq(reach_measure(ctx, m, CLF_SIDE_ENCODER, n, n / 2, &got), CLF_OK, "%s", clf_ctx_error(ctx));
            size_t want = r < 0 ? n : (1 + 2 * (size_t)L * r < n ? 1 + 2 * (size_t)L * r : n);
            cr_expect_eq(want, reach_formula(CLF_SIDE_ENCODER, n, n / 2, L, r));
            cr_expect_eq(got.count, want, "encoder L=%d r=%d: reach %zu, want %zu", L, r, got.count, want);
            cr_expect(got.contiguous, "encoder L=%d r=%d: positions %zu..%zu not one run", L, r, got.first, got.last);
            /* an output at the edge is clipped */
            cr_assert_eq(reach_measure(ctx, m, CLF_SIDE_ENCODER, n, 0, &got), CLF_OK, "%s", clf_ctx_error(ctx));
            cr_expect_eq(got.count, reach_formula(CLF_SIDE_ENCODER, n, 0, L, r), "encoder edge L=%d r=%d: %zu", L,
                         r, got.count);
            /* causal decoder: min(pos + 1, 1 + L·r) */
            const size_t ps[] = {n - 1, 4};
            for (int p = 0; p < 2; p++) {
                size_t pos = ps[p];
                size_t dwant = r < 0 ? pos + 1 : (1 + (size_t)L * r < pos + 1 ? 1 + (size_t)L * r : pos + 1);
                cr_assert_eq(reach_measure(ctx, m, CLF_SIDE_DECODER, n, pos, &got), CLF_OK, "%s", clf_ctx_error(ctx));
                cr_expect_eq(dwant, reach_formula(CLF_SIDE_DECODER, n, pos, L, r));
                cr_expect_eq(got.count, dwant, "decoder L=%d r=%d pos=%zu: reach %zu, want %zu", L, r, pos,
                             got.count, dwant);
                cr_expect(got.contiguous && got.last == pos, "decoder L=%d r=%d: %zu..%zu", L, r, got.first,
                          got.last);
            }
            clf_model_free(m);
        }
    struct reach got;
    clf_model_t *m = tiny_model(ctx, 1, -1, -1);
    cr_expect_neq(reach_measure(ctx, m, CLF_SIDE_ENCODER, 65, 0, &got), CLF_OK, "a length past max_len must be refused");
    cr_expect_neq(reach_measure(ctx, m, CLF_SIDE_ENCODER, 10, 10, &got), CLF_OK,
                  "a position past the length must be refused");
    clf_model_free(m);
    clf_ctx_free(ctx);
}

Test(compare_attention, tool_json_parses_and_names_the_device)
{
    const char *dir = tu_tmpdir();
    char json[4096], svg[4096], cmd[12288];
    snprintf(json, sizeof json, "%s/cmp.json", dir);
    snprintf(svg, sizeof svg, "%s/cmp.svg", dir);
    snprintf(cmd, sizeof cmd,
             "'%s/clformer' compare-attention --quick --preset tiny --lengths 32,64,128 --windows 4,8 "
             "--reach-length 40 --json '%s' --plot '%s' > '%s/out.txt' 2>&1",
             CLF_BINARY_DIR, json, svg, dir);
    int rc = system(cmd);
    char out[4200];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    char *log = tu_slurp(out);
    cr_assert_eq(rc, 0, "compare-attention failed: %s", log ? log : "(no output)");
    cr_expect(log && strstr(log, "exponent"), "no table printed: %s", log ? log : "");
    free(log);
    char *s = tu_slurp(json);
    cr_assert(*s, "no JSON written");
    /* balanced braces and brackets outside strings, nothing left open */
    int depth = 0, sq = 0;
    bool in_str = false, ok = true;
    for (const char *p = s; *p; p++) {
        if (in_str) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_str = false;
            continue;
        }
        if (*p == '"') in_str = true;
        else if (*p == '{') depth++;
        else if (*p == '}') ok = ok && --depth >= 0;
        else if (*p == '[') sq++;
        else if (*p == ']') ok = ok && --sq >= 0;
    }
    cr_expect(ok && depth == 0 && sq == 0 && !in_str, "unbalanced JSON: %s", s);
    const char *keys[] = {"\"device\"", "\"name\"", "\"driver\"", "\"cost\"", "\"fit\"", "\"exponent\"",
                          "\"crossover_n\"", "\"reach\"", "\"formula\"", "\"measured\""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_expect(strstr(s, keys[i]), "JSON lacks %s", keys[i]);
    clf_ctx_t *ctx = tu_ctx();
    char name[300];
    snprintf(name, sizeof name, "\"name\": \"%s\"", clf_ctx_device(ctx)->device_name);
    cr_expect(strstr(s, name), "JSON does not carry the device name %s", name);
    clf_ctx_free(ctx);
    free(s);
    char *p = tu_slurp(svg);
    cr_expect(p && strstr(p, "<svg") && strstr(p, "slope"), "no plot with slopes in the legend");
    free(p);
}
