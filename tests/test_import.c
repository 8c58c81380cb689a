/* test_import.c: `clformer import` of the Marian fixtures
 * (tests/fixtures/marian, written by make_marian.py with transformers
 * 4.40.2) against what transformers computes with them: teacher-forced
 * logits (logits.parity) to 1e-4, and generate()'s greedy and beam outputs
 * (generate.tsv: ids, and the beam's sequences_scores) through
 * clf_model_translate with transformers' rules, and as text through
 * `clformer translate` with the imported model's own defaults. Directories
 * that the import cannot run (another model_type, an unknown activation, a
 * file missing, pytorch_model.bin only) are refused naming what is wrong. */
#define _POSIX_C_SOURCE 200809L /* symlink */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clformer.h"
#include "clformer_json.h"
#include "testutil.h"

#define FIX CLF_SOURCE_DIR "/tests/fixtures/marian/"
#define CLI CLF_BINARY_DIR "/clformer"


/* Imports fixture `name` into a new temporary directory; returns it. */
static const char *import(const char *name)
{
    static char out[512];
    char dir[512];
    snprintf(dir, sizeof dir, FIX "%s", name);
    snprintf(out, sizeof out, "%s/%s", tu_tmpdir(), name);
    cr_assert_eq(clf_marian_import(dir, out), CLF_OK, "%s: %s", dir, clf_ctx_error(NULL));
    return out;
}

static clf_model_t *load(clf_ctx_t *ctx, const char *out)
{
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    clf_model_t *m = NULL;
    cr_assert_eq(clf_model_load(ctx, &m, path), CLF_OK, "%s", clf_ctx_error(ctx));
    return m;
}

static void logits_parity(const char *name)
{
    char path[512];
    struct tu_parity p;
    snprintf(path, sizeof path, FIX "%s/logits.parity", name);
    tu_parity_read(path, &p);
    clf_ctx_t *ctx = tu_ctx();
    clf_model_t *m = load(ctx, import(name));
    const struct clf_model_config *c = clf_model_config(m);
    const struct tu_entry *src = tu_parity_get(&p, "src"), *tin = tu_parity_get(&p, "tgt_in"),
                          *tlen = tu_parity_get(&p, "tgt_len"), *want = tu_parity_get(&p, "logits");
    const size_t B = tlen->numel, S = src->numel / B, T = tin->numel / B, V = (size_t)c->vocab;
    cr_assert_eq(want->numel, B * T * V, "%s: logits of %zu, want (%zu, %zu, %zu)", name, want->numel, B, T, V);
    int32_t *s = tu_entry_ids(src), *ti = tu_entry_ids(tin), *to = malloc(B * T * sizeof *to);
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {  /* the labels: tgt_in shifted left, then eos, then pad */
            const size_t n = (size_t)tlen->data[b];
            to[b * T + t] = t + 1 < n ? ti[b * T + t + 1] : t + 1 == n ? c->eos_id : c->pad_id;
        }
    struct clf_model_batch batch = {B, S, T, s, ti, to};
    double loss, tokens;
    cr_assert_eq(clf_model_forward(m, &batch), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_loss_take(m, &loss, &tokens), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = malloc(B * T * V * sizeof *got);
    cr_assert_eq(clf_tensor_download(ctx, clf_model_logits(m), got), CLF_OK);
    double most = 0;  /* the largest difference, for the log */
    size_t compared = 0;
    for (size_t b = 0; b < B; b++) {  /* rows past tgt_len are padding */
        char what[96];
        snprintf(what, sizeof what, "%s logits of sentence %zu", name, b);
        const size_t rows = (size_t)tlen->data[b];
        cr_assert(tu_close(what, got + b * T * V, want->data + b * T * V, rows * V, 1e-4, 1e-4));
        for (size_t i = 0; i < rows * V; i++)
            most = fmax(most, fabs((double)got[b * T * V + i] - want->data[b * T * V + i]));
        compared += rows * V;
    }
    cr_log_info("%s: %zu logits of %zu sentences, largest difference from transformers' %.3g", name, compared, B,
                most);
    free(s), free(ti), free(to), free(got);
    tu_parity_free(&p);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

Test(import, logits_match_transformers_swish_shared, .timeout = TU_TIMEOUT(120)) { logits_parity("swish_shared"); }
Test(import, logits_match_transformers_relu_separate, .timeout = TU_TIMEOUT(120)) { logits_parity("relu_separate"); }

/* generate.tsv: text, source ids (with eos), greedy ids, beam ids (both
 * through eos), the beam's score. */
struct case_ {
    char *text;
    int32_t *src, *greedy, *beam;
    size_t nsrc, ngreedy, nbeam;
    double score;
};

static size_t read_cases(const char *name, struct clf_lines *lines, struct case_ **out)
{
    char path[512];
    snprintf(path, sizeof path, FIX "%s/generate.tsv", name);
    cr_assert_eq(clf_lines_read(lines, path), CLF_OK, "%s", clf_ctx_error(NULL));
    struct case_ *cs = calloc(lines->n, sizeof *cs);
    size_t n = 0;
    for (size_t i = 0; i < lines->n; i++) {
        if (lines->line[i][0] == '#')
            continue;
        char *f[5];
        cr_assert_eq(tu_fields(lines->line[i], f, 5), 5, "%s:%zu: want 5 fields", path, i + 1);
        struct case_ *c = &cs[n++];
        c->text = f[0];
        c->src = tu_parse_ids(f[1], &c->nsrc);
        c->greedy = tu_parse_ids(f[2], &c->ngreedy);
        c->beam = tu_parse_ids(f[3], &c->nbeam);
        c->score = strtod(f[4], NULL);
    }
    cr_assert_gt(n, 10, "%s: too few sentences", path);
    *out = cs;
    return n;
}

static void free_cases(struct case_ *cs, size_t n, struct clf_lines *lines)
{
    for (size_t i = 0; i < n; i++)
        free(cs[i].src), free(cs[i].greedy), free(cs[i].beam);
    free(cs);
    clf_lines_free(lines);
}

/* transformers' generate() settings of the fixture: its generation_config.json. */
static struct clf_translate_opts hf_opts(const char *name, bool greedy)
{
    char path[512], *text;
    size_t len;
    snprintf(path, sizeof path, FIX "%s/generation_config.json", name);
    text = tu_slurp(path);
    len = strlen(text);
    struct clf_json j;
    cr_assert(clf_json_parse(text, len, &j, NULL, 0), "%s", path);
    double beams = 1, max_length = 20, lp = 1.0;
    clf_json_num(&j, "num_beams", &beams);
    clf_json_num(&j, "max_length", &max_length);
    clf_json_num(&j, "length_penalty", &lp);
    struct clf_translate_opts o = clf_translate_opts_default();
    o.beam = greedy ? 1 : (int)beams;
    o.greedy = greedy;
    o.alpha = (float)lp;
    o.length_penalty = CLF_LENGTH_PENALTY_HF;
    o.max_output = (int)max_length - 1;
    o.min_length = 0;
    clf_json_free(&j);
    free(text);
    return o;
}

/* ids + eos, as generate.tsv writes an output. */
static bool same_output(const struct clf_hypothesis *h, int32_t eos, const int32_t *want, size_t nwant)
{
    return nwant == h->n + 1 && want[h->n] == eos && tu_same_ids(h->ids, h->n, want, h->n);
}

static void generate_parity(const char *name, bool greedy)
{
    struct clf_lines lines = {0};
    struct case_ *cs;
    const size_t n = read_cases(name, &lines, &cs);
    clf_ctx_t *ctx = tu_ctx();
    clf_model_t *m = load(ctx, import(name));
    const int32_t eos = clf_model_config(m)->eos_id;
    struct clf_translate_opts o = hf_opts(name, greedy);
    const int32_t **src = malloc(n * sizeof *src);
    size_t *len = malloc(n * sizeof *len), ended = 0, at_limit = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(cs[i].nsrc >= 1 && cs[i].src[cs[i].nsrc - 1] == eos, "%s: source %zu lacks eos", name, i);
        src[i] = cs[i].src;
        len[i] = cs[i].nsrc - 1;  /* clf_model_translate appends eos */
    }
    struct clf_hypothesis *h = calloc(n, sizeof *h);
    /* in one batch, as translate runs them; transformers ran each alone */
    cr_assert_eq(clf_model_translate(m, src, len, n, &o, h), CLF_OK, "%s", clf_ctx_error(ctx));
    for (size_t i = 0; i < n; i++) {
        const int32_t *want = greedy ? cs[i].greedy : cs[i].beam;
        const size_t nw = greedy ? cs[i].ngreedy : cs[i].nbeam;
        char *g = tu_ids_str(h[i].ids, h[i].n), *w = tu_ids_str(want, nw);
        cr_expect(same_output(&h[i], eos, want, nw), "%s %s, sentence %zu \"%s\":\n  ours    %s (+eos)\n"
                  "  transformers %s", name, greedy ? "greedy" : "beam", i, cs[i].text, g, w);
        if (!greedy)
            cr_expect(fabs(h[i].score - cs[i].score) <= 1e-4 * (1 + fabs(cs[i].score)),
                      "%s beam sentence %zu: score %.7g, transformers %.7g", name, i, h[i].score, cs[i].score);
        ended += nw < (size_t)o.max_output;
        at_limit += nw == (size_t)o.max_output;
        free(g), free(w);
    }
    cr_log_info("%s %s: %zu of %zu outputs end by eos before the limit, %zu at it", name,
                greedy ? "greedy" : "beam", ended, n, at_limit);
    clf_hypotheses_free(h, n);
    free(h), free(src), free(len);
    free_cases(cs, n, &lines);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

Test(import, greedy_matches_generate_swish_shared, .timeout = TU_TIMEOUT(120)) { generate_parity("swish_shared", true); }
Test(import, beam_matches_generate_swish_shared, .timeout = TU_TIMEOUT(120)) { generate_parity("swish_shared", false); }
Test(import, greedy_matches_generate_relu_separate, .timeout = TU_TIMEOUT(120)) { generate_parity("relu_separate", true); }
Test(import, beam_matches_generate_relu_separate, .timeout = TU_TIMEOUT(120)) { generate_parity("relu_separate", false); }

/* `clformer translate --model OUT/model.safetensors` with the model's own
 * defaults (num_beams 4, max_length, hf penalty) and --greedy: each line is
 * the expected ids decoded by the Marian tokenizer (tests/test_marian.c
 * holds that to MarianTokenizer's decode). */
static void cli_parity(const char *name)
{
    struct clf_lines lines = {0};
    struct case_ *cs;
    const size_t n = read_cases(name, &lines, &cs);
    const char *out = import(name);
    clf_tok_t *tok = NULL;
    cr_assert_eq(clf_tok_marian_load(&tok, out), CLF_OK, "%s", clf_ctx_error(NULL));
    char in[600], cmd[2048], res[600], err[600];
    snprintf(in, sizeof in, "%s/in.txt", out);
    snprintf(err, sizeof err, "%s/err.txt", out);
    FILE *f = fopen(in, "w");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s\n", cs[i].text);
    fclose(f);
    for (int greedy = 0; greedy < 2; greedy++) {
        snprintf(res, sizeof res, "%s/out%d.txt", out, greedy);
        snprintf(cmd, sizeof cmd, "%s translate --model %s/model.safetensors --input %s --quiet %s > %s", CLI, out,
                 in, greedy ? "--greedy" : "", res);
        cr_assert_eq(tu_run(cmd, err), 0, "%s: %s", cmd, tu_slurp(err));
        struct clf_lines got = {0};
        cr_assert_eq(clf_lines_read(&got, res), CLF_OK);
        cr_assert_eq(got.n, n, "%s: %zu lines, want %zu", res, got.n, n);
        for (size_t i = 0; i < n; i++) {
            char *want = NULL;
            const int32_t *ids = greedy ? cs[i].greedy : cs[i].beam;
            size_t nid = greedy ? cs[i].ngreedy : cs[i].nbeam;
            cr_assert_eq(clf_tok_decode(tok, CLF_TOK_TARGET, ids, nid, &want), CLF_OK);
            cr_expect_str_eq(got.line[i], want, "%s %s line %zu", name, greedy ? "greedy" : "beam", i + 1);
            free(want);
        }
        clf_lines_free(&got);
    }
    clf_tok_free(tok);
    free_cases(cs, n, &lines);
}

Test(import, translate_command_matches_generate_swish_shared, .timeout = TU_TIMEOUT(120)) { cli_parity("swish_shared"); }
Test(import, translate_command_matches_generate_relu_separate, .timeout = TU_TIMEOUT(120)) { cli_parity("relu_separate"); }

/* ---------------------------------------------------------- refusals */

/* A copy of the swish_shared fixture (links) in a new directory, without
 * `drop`, with config.json's `from` replaced by `to` (from NULL: as is). */
static const char *variant(const char *drop, const char *from, const char *to)
{
    static const char *const files[] = {"config.json", "generation_config.json", "model.safetensors", "source.spm",
                                        "target.spm", "vocab.json", "tokenizer_config.json"};
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/variant", tu_tmpdir());
    cr_assert_eq(clf_mkdir_p(dir), 0);
    char a[700], b[700];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (drop && !strcmp(files[i], drop))
            continue;
        snprintf(a, sizeof a, FIX "swish_shared/%s", files[i]);
        snprintf(b, sizeof b, "%s/%s", dir, files[i]);
        if (strcmp(files[i], "config.json")) {
            cr_assert_eq(symlink(a, b), 0, "%s", b);
            continue;
        }
        char *text = tu_slurp(a), *at = from ? strstr(text, from) : NULL;
        cr_assert(!from || at, "config.json lacks %s", from);
        FILE *f = fopen(b, "w");
        if (at)
            fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
        else
            fputs(text, f);
        fclose(f);
        free(text);
    }
    return dir;
}

/* Importing dir fails; the message holds each of the words. */
static void refused(const char *dir, const char *w1, const char *w2)
{
    char out[600];
    snprintf(out, sizeof out, "%s/out", tu_tmpdir());
    cr_assert_neq(clf_marian_import(dir, out), CLF_OK, "%s was imported", dir);
    const char *msg = clf_ctx_error(NULL);
    cr_expect(strstr(msg, w1), "want \"%s\" in: %s", w1, msg);
    cr_expect(!w2 || strstr(msg, w2), "want \"%s\" in: %s", w2, msg);
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    cr_expect_neq(access(path, F_OK), 0, "a refused import wrote %s", path);
}

Test(import, another_model_type_is_refused)
{
    refused(variant(NULL, "\"model_type\": \"marian\"", "\"model_type\": \"bart\""), "model_type", "bart");
}

Test(import, an_unknown_activation_is_refused)
{
    refused(variant(NULL, "\"activation_function\": \"swish\"", "\"activation_function\": \"tanh\""),
            "activation_function", "tanh");
}

Test(import, pre_norm_leftovers_are_refused)
{
    refused(variant(NULL, "\"normalize_before\": false", "\"normalize_before\": true"), "normalize_before", NULL);
    refused(variant(NULL, "\"add_final_layer_norm\": false", "\"add_final_layer_norm\": true"),
            "add_final_layer_norm", NULL);
}

Test(import, a_missing_file_is_named)
{
    refused(variant("source.spm", NULL, NULL), "source.spm", NULL);
}

Test(import, pytorch_weights_get_the_conversion_command)
{
    const char *dir = variant("model.safetensors", NULL, NULL);
    char bin[700];
    snprintf(bin, sizeof bin, "%s/pytorch_model.bin", dir);
    FILE *f = fopen(bin, "w");
    fputs("PK", f);
    fclose(f);
    refused(dir, "pytorch_model.bin", "save_pretrained");
}

Test(import, the_command_names_what_is_refused)
{
    char cmd[1600], err[600];
    snprintf(err, sizeof err, "%s/err.txt", tu_tmpdir());
    snprintf(cmd, sizeof cmd, "%s import %s -o %s/o",
             CLI, variant(NULL, "\"model_type\": \"marian\"", "\"model_type\": \"bart\""), tu_tmpdir());
    cr_assert_neq(tu_run(cmd, err), 0);
    char *msg = tu_slurp(err);
    cr_expect(strstr(msg, "model_type") && strstr(msg, "config.json"), "%s", msg);
    free(msg);
}

Test(import, translate_refuses_bad_decoding_flags_naming_them)
{
    const char *out = import("swish_shared");
    static const char *const cases[][2] = {{"--length-penalty wmt", "--length-penalty"},
                                           {"--max-length 1", "--max-length"}};
    char cmd[1600], err[700];
    snprintf(err, sizeof err, "%s/err.txt", out);
    for (size_t i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "echo a dog | %s translate --model %s/model.safetensors %s", CLI, out, cases[i][0]);
        cr_expect_eq(tu_run(cmd, err), 2, "%s", cmd);
        char *msg = tu_slurp(err);
        cr_expect(strstr(msg, cases[i][1]), "%s: %s", cmd, msg);
        free(msg);
    }
}
