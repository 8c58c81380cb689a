/* test_translate.c: the searches' rules on a model rigged to prefer EOS at
 * every step: its last layer norm outputs a constant (gain 0, bias = the
 * EOS embedding, scaled), so the tied output projection ranks EOS first
 * whatever the input. Without a minimum length every translation would be
 * empty; with the default (1) none is. And a smoke run of `clformer bench
 * translate`; the device's top-k against the host's scan; a batch whose
 * sentences finish far apart (they leave the decoder's batch as they
 * finish) against each sentence translated alone; sentences joining a
 * decoding under way (clf_model_translate_stream) against each alone. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clformer_json.h"  /* clf_json_check */
#include "testutil.h"

enum { N = 6, MAXSRC = 7 };

static clf_ctx_t *ctx;
static clf_model_t *m;
static int32_t srcs[N][MAXSRC];
static const int32_t *ptr[N];
static size_t len[N];

static const struct clf_param *param(const char *name)
{
    size_t n;
    const struct clf_param *p = clf_model_params(m, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].name, name))
            return &p[i];
    cr_assert_fail("no parameter %s", name);
    return NULL;
}

/* A tiny post-norm model whose decoder output is 10·embed[EOS] at every
 * position. */
static void eos_first_model(void)
{
    ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    cr_assert_eq(c.norm, CLF_NORM_POST);
    cr_assert_eq(clf_model_init(ctx, &m, &c, 7), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t n = clf_model_numel(m), d = (size_t)c.d_model;
    float *w = tu_download(ctx, clf_model_weights(m), n);
    char name[96];
    snprintf(name, sizeof name, "decoder.layers.%d.norm3.weight", c.dec_layers - 1);
    const struct clf_param *g = param(name);
    snprintf(name, sizeof name, "decoder.layers.%d.norm3.bias", c.dec_layers - 1);
    const struct clf_param *b = param(name);
    const float *eos = w + param("embed.weight")->offset + (size_t)CLF_EOS_ID * d;
    for (size_t j = 0; j < d; j++) {
        w[g->offset + j] = 0.0f;
        w[b->offset + j] = 10.0f * eos[j];
    }
    cr_assert_eq(clf_tensor_upload(ctx, clf_model_weights(m), w), CLF_OK, "%s", clf_ctx_error(ctx));
    free(w);
    for (int i = 0; i < N; i++) {
        len[i] = 1 + (size_t)i % MAXSRC;
        for (size_t t = 0; t < len[i]; t++)
            srcs[i][t] = 4 + (int32_t)((i * 5 + (int)t * 3) % (c.vocab - 4));
        ptr[i] = srcs[i];
    }
}

static void done(void)
{
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* Translates with o and checks that every hypothesis (nbest per sentence)
 * has exactly `want` tokens, none of them EOS, and a finite score. */
static void expect_lengths(const struct clf_translate_opts *o, size_t want)
{
    const size_t nb = o->greedy ? 1 : (size_t)o->nbest;
    struct clf_hypothesis h[N * 4];
    cr_assert_eq(clf_model_translate(m, ptr, len, N, o, h), CLF_OK, "%s", clf_ctx_error(ctx));
    for (size_t i = 0; i < N * nb; i++) {
        cr_expect_eq(h[i].n, want, "%s, min_length %d: hypothesis %zu has %zu tokens, want %zu",
                     o->greedy ? "greedy" : "beam", o->min_length, i, h[i].n, want);
        cr_expect(isfinite(h[i].score), "hypothesis %zu: score %g", i, h[i].score);
        for (size_t t = 0; t < h[i].n; t++)
            cr_expect_neq(h[i].ids[t], CLF_EOS_ID, "hypothesis %zu holds EOS at %zu", i, t);
    }
    clf_hypotheses_free(h, N * nb);
}

TestSuite(translate, .init = eos_first_model, .fini = done, .timeout = TU_TIMEOUT(120));

/* expect_lengths for greedy search, then for beam search with nbest
 * hypotheses, under o's min_length. */
static void expect_lengths_both(struct clf_translate_opts o, int nbest, size_t want)
{
    o.greedy = true;
    expect_lengths(&o, want);
    o.greedy = false;
    o.nbest = nbest;
    expect_lengths(&o, want);
}

Test(translate, min_length_zero_lets_eos_win_at_once)
{
    struct clf_translate_opts o = clf_translate_opts_default();
    o.min_length = 0;
    expect_lengths_both(o, 1, 0);
}

Test(translate, default_min_length_gives_no_empty_output)
{
    struct clf_translate_opts o = clf_translate_opts_default();
    cr_assert_eq(o.min_length, 1);
    expect_lengths_both(o, 4, 1); /* no empty hypothesis takes a finished slot either */
}

Test(translate, min_length_three)
{
    struct clf_translate_opts o = clf_translate_opts_default();
    o.min_length = 3;
    expect_lengths_both(o, 2, 3);
}

Test(translate, greedy_and_beam_one_agree_under_min_length)
{
    struct clf_translate_opts g = clf_translate_opts_default(), b = g;
    g.greedy = true;
    b.beam = 1;
    struct clf_hypothesis hg[N], hb[N];
    cr_assert_eq(clf_model_translate(m, ptr, len, N, &g, hg), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_translate(m, ptr, len, N, &b, hb), CLF_OK, "%s", clf_ctx_error(ctx));
    for (int i = 0; i < N; i++) {
        cr_assert_eq(hg[i].n, hb[i].n, "sentence %d", i);
        cr_assert_eq(memcmp(hg[i].ids, hb[i].ids, hg[i].n * sizeof(int32_t)), 0, "sentence %d", i);
        cr_assert_float_eq(hg[i].score, hb[i].score, 1e-5, "sentence %d", i);
    }
    clf_hypotheses_free(hg, N);
    clf_hypotheses_free(hb, N);
}

Test(translate, negative_min_length_is_refused)
{
    struct clf_translate_opts o = clf_translate_opts_default();
    o.min_length = -1;
    struct clf_hypothesis h[N];
    cr_assert_eq(clf_model_translate(m, ptr, len, N, &o, h), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "min_length"), "%s", clf_ctx_error(ctx));
}

/* `clformer bench translate` runs and prints one valid JSON record with
 * both searches (a smoke test: nothing here is timed). */
Test(bench, translate_prints_a_record, .timeout = TU_TIMEOUT(300))
{
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/bench.json", tu_tmpdir());
    snprintf(cmd, sizeof cmd, CLF_BINARY_DIR "/clformer bench translate --quick --preset tiny --json > %s", path);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char err[256];
    cr_assert(clf_json_check(text, strcspn(text, "\n"), err, sizeof err), "%s: %s", err, text);
    cr_assert(strstr(text, "\"search\": \"greedy\"") && strstr(text, "\"search\": \"beam\", \"beam\": 4"), "%s", text);
    cr_assert(strstr(text, "\"tgt_tokens_per_s\""), "%s", text);
}

/* Translates with the search's candidates selected on the device (the
 * default) and on the host (CLF_SEARCH=host, every log-probability
 * downloaded), and expects the same hypotheses, bit for bit. */
static void expect_host_equal(clf_model_t *model, const int32_t *const *s, const size_t *l, size_t n,
                              const struct clf_translate_opts *o)
{
    const size_t nb = o->greedy ? 1 : (size_t)o->nbest;
    struct clf_hypothesis *dev = calloc(n * nb, sizeof *dev), *host = calloc(n * nb, sizeof *host);
    tu_setting("CLF_SEARCH", NULL);
    cr_assert_eq(clf_model_translate(model, s, l, n, o, dev), CLF_OK, "%s", clf_ctx_error(ctx));
    tu_setting("CLF_SEARCH", "host");
    cr_assert_eq(clf_model_translate(model, s, l, n, o, host), CLF_OK, "%s", clf_ctx_error(ctx));
    tu_setting("CLF_SEARCH", NULL);
    for (size_t i = 0; i < n * nb; i++) {
        cr_assert_eq(dev[i].n, host[i].n, "%s beam %d, hypothesis %zu: %zu tokens on the device path, %zu on the host's",
                     o->greedy ? "greedy" : "beam", o->beam, i, dev[i].n, host[i].n);
        cr_assert_eq(memcmp(dev[i].ids, host[i].ids, dev[i].n * sizeof(int32_t)), 0, "hypothesis %zu differs", i);
        cr_assert(dev[i].score == host[i].score && dev[i].logprob == host[i].logprob,
                  "hypothesis %zu: score %.9g vs %.9g", i, dev[i].score, host[i].score);
    }
    clf_hypotheses_free(dev, n * nb);
    clf_hypotheses_free(host, n * nb);
    free(dev), free(host);
}

Test(search, device_top_k_equals_the_host_scan_on_a_random_model, .timeout = TU_TIMEOUT(120))
{
    ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    cr_assert_eq(clf_model_init(ctx, &m, &c, 3), CLF_OK, "%s", clf_ctx_error(ctx));
    enum { NS = 20 };
    int32_t s[NS][MAXSRC];
    const int32_t *sp[NS];
    size_t sl[NS];
    for (int i = 0; i < NS; i++) {
        sl[i] = 1 + (size_t)(i * 5) % MAXSRC;
        for (size_t t = 0; t < sl[i]; t++)
            s[i][t] = 4 + (int32_t)((i * 13 + (int)t * 7) % (c.vocab - 4));
        sp[i] = s[i];
    }
    struct clf_translate_opts o = clf_translate_opts_default();
    o.max_extra = 8;
    for (int min_length = 0; min_length <= 1; min_length++) {
        o.min_length = min_length;
        o.greedy = true;
        expect_host_equal(m, sp, sl, NS, &o);
        o.greedy = false;
        o.nbest = 4;
        expect_host_equal(m, sp, sl, NS, &o);
        o.beam = 1, o.nbest = 1;
        expect_host_equal(m, sp, sl, NS, &o);
        o.beam = 4;
    }
    clf_model_free(m);
    clf_ctx_free(ctx);
}

static bool nearly_equal(float a, float b)
{
    return a == b || fabsf(a - b) <= 1e-5f * fabsf(b) + 1e-6f;
}

/* Translates the n sentences as one batch and each alone, and expects the
 * same hypotheses (tokens; scores to rounding); returns the first hypothesis's shortest
 * and longest length in the batch. */
static void expect_alone_equal(clf_model_t *model, const int32_t *const *s, const size_t *l, size_t n,
                               const struct clf_translate_opts *o, size_t *shortest, size_t *longest)
{
    const size_t nb = o->greedy ? 1 : (size_t)o->nbest;
    struct clf_hypothesis *all = calloc(n * nb, sizeof *all), one[CLF_TRANSLATE_BEAM_MAX];
    cr_assert_eq(clf_model_translate(model, s, l, n, o, all), CLF_OK, "%s", clf_ctx_error(ctx));
    *shortest = SIZE_MAX, *longest = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(clf_model_translate(model, &s[i], &l[i], 1, o, one), CLF_OK, "%s", clf_ctx_error(ctx));
        for (size_t k = 0; k < nb; k++) {
            const struct clf_hypothesis *a = &all[i * nb + k], *b = &one[k];
            cr_assert_eq(a->n, b->n, "%s beam %d, sentence %zu hypothesis %zu: %zu tokens in the batch, %zu alone",
                         o->greedy ? "greedy" : "beam", o->beam, i, k, a->n, b->n);
            cr_assert(!a->n || !memcmp(a->ids, b->ids, a->n * sizeof(int32_t)), "sentence %zu hypothesis %zu differs",
                      i, k);
            /* the same tokens; their scores agree to rounding only: the host BLAS's row
             * results depend on the batch's row count (OpenBLAS's thread split) */
            cr_assert(nearly_equal(a->score, b->score) && nearly_equal(a->logprob, b->logprob),
                      "sentence %zu hypothesis %zu: score %.9g, logprob %.9g in the batch, %.9g and %.9g alone", i,
                      k, a->score, a->logprob, b->score, b->logprob);
        }
        clf_hypotheses_free(one, nb);
        *shortest = all[i * nb].n < *shortest ? all[i * nb].n : *shortest;
        *longest = all[i * nb].n > *longest ? all[i * nb].n : *longest;
    }
    clf_hypotheses_free(all, n * nb);
    free(all);
}

enum { NS = 10, LONGEST = 40 };

/* NS sources of the given lengths (up to LONGEST) over the model's
 * vocabulary, whose outputs end far apart. */
static void far_apart_sources(const struct clf_model_config *c, const size_t *lens, int32_t (*s)[LONGEST],
                              const int32_t **sp, size_t *sl)
{
    for (int i = 0; i < NS; i++) {
        sl[i] = lens[i];
        for (size_t t = 0; t < sl[i]; t++)
            s[i][t] = 4 + (int32_t)((i * 11 + (int)t * 5) % (c->vocab - 4));
        sp[i] = s[i];
    }
}

Test(search, a_batch_equals_its_sentences_alone, .timeout = TU_TIMEOUT(300))
{
    ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    cr_assert_eq(clf_model_init(ctx, &m, &c, 5), CLF_OK, "%s", clf_ctx_error(ctx));
    static const size_t lens[NS] = {1, 40, 3, 27, 1, 12, 33, 2, 8, 20};
    int32_t s[NS][LONGEST];
    const int32_t *sp[NS];
    size_t sl[NS];
    far_apart_sources(&c, lens, s, sp, sl);
    struct clf_translate_opts o = clf_translate_opts_default();
    o.max_extra = 3;  /* each sentence's limit follows its source: 5 to 44 tokens */
    size_t shortest, longest;
    o.greedy = true;
    expect_alone_equal(m, sp, sl, NS, &o, &shortest, &longest);
    cr_assert(longest >= shortest + 20, "greedy: outputs of %zu to %zu tokens: the batch does not test sentences "
              "that finish far apart", shortest, longest);
    o.greedy = false;
    o.nbest = 4;
    expect_alone_equal(m, sp, sl, NS, &o, &shortest, &longest);
    cr_assert(longest >= shortest + 20, "beam: outputs of %zu to %zu tokens", shortest, longest);
    tu_setting("CLF_SEARCH", "host");  /* the host's scan reads the live rows alike */
    o.nbest = 2;
    expect_alone_equal(m, sp, sl, NS, &o, &shortest, &longest);
    o.greedy = true;
    o.nbest = 1;
    expect_alone_equal(m, sp, sl, NS, &o, &shortest, &longest);
    tu_setting("CLF_SEARCH", NULL);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* A stream that gives its sentences one at a time, a new one every `every`
 * steps while there is room, so that they join a decoding under way at
 * different steps and take the slots of those that finished. */
struct joining {
    const int32_t *const *s;
    const size_t *l;
    size_t n, next, calls, every, given, joined; /* joined: sentences taken while others decoded */
    size_t nb;
    struct clf_hypothesis *out;
};

static size_t joining_take(void *user, size_t room, size_t live, const int32_t **src, size_t *len, void **tag)
{
    struct joining *j = user;
    cr_assert(room >= 1);
    if (j->next == j->n || (live && j->calls++ % j->every))
        return 0;
    src[0] = j->s[j->next], len[0] = j->l[j->next], tag[0] = (void *)(uintptr_t)j->next;
    j->next++;
    j->joined += live > 0;
    return 1;
}

static void joining_give(void *user, void *tag, struct clf_hypothesis *h, size_t n)
{
    struct joining *j = user;
    const size_t i = (size_t)(uintptr_t)tag;
    cr_assert_eq(n, j->nb);
    cr_assert_null(j->out[i * j->nb].ids, "sentence %zu handed back twice", i);
    for (size_t k = 0; k < n; k++)
        j->out[i * j->nb + k] = h[k];
    j->given++;
}

/* The n sentences joining one stream (room sentences at once) and each
 * translated alone give the same hypotheses (tokens; scores to rounding). */
static void expect_joining_equal(clf_model_t *model, const int32_t *const *s, const size_t *l, size_t n,
                                 const struct clf_translate_opts *o, size_t room, size_t every)
{
    const size_t nb = o->greedy ? 1 : (size_t)o->nbest;
    size_t width = 1;
    for (size_t i = 0; i < n; i++)
        width = l[i] > width ? l[i] : width;
    struct joining j = {s, l, n, 0, 0, every, 0, 0, nb, calloc(n * nb, sizeof *j.out)};
    const struct clf_translate_stream in = {joining_take, joining_give, &j, room, width};
    cr_assert_eq(clf_model_translate_stream(model, o, &in), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(j.given, n, "%zu of %zu sentences handed back", j.given, n);
    cr_assert(j.joined >= n / 2, "only %zu of %zu sentences joined a decoding under way", j.joined, n);
    struct clf_hypothesis one[CLF_TRANSLATE_BEAM_MAX];
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(clf_model_translate(model, &s[i], &l[i], 1, o, one), CLF_OK, "%s", clf_ctx_error(ctx));
        for (size_t k = 0; k < nb; k++) {
            const struct clf_hypothesis *a = &j.out[i * nb + k], *b = &one[k];
            cr_assert_eq(a->n, b->n, "%s beam %d, min_length %d, sentence %zu hypothesis %zu: %zu tokens joining, "
                         "%zu alone", o->greedy ? "greedy" : "beam", o->beam, o->min_length, i, k, a->n, b->n);
            cr_assert(!a->n || !memcmp(a->ids, b->ids, a->n * sizeof(int32_t)), "sentence %zu hypothesis %zu differs",
                      i, k);
            cr_assert(nearly_equal(a->score, b->score) && nearly_equal(a->logprob, b->logprob),
                      "sentence %zu hypothesis %zu: score %.9g, logprob %.9g joining, %.9g and %.9g alone", i, k,
                      a->score, a->logprob, b->score, b->logprob);
        }
        clf_hypotheses_free(one, nb);
    }
    clf_hypotheses_free(j.out, n * nb);
    free(j.out);
}

Test(search, sentences_joining_a_decoding_under_way_equal_them_alone, .timeout = TU_TIMEOUT(300))
{
    ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    cr_assert_eq(c.dec_window, -1);
    cr_assert_eq(clf_model_init(ctx, &m, &c, 5), CLF_OK, "%s", clf_ctx_error(ctx));
    static const size_t lens[NS] = {40, 1, 3, 27, 1, 12, 33, 2, 8, 20};
    int32_t s[NS][LONGEST];
    const int32_t *sp[NS];
    size_t sl[NS];
    far_apart_sources(&c, lens, s, sp, sl);
    struct clf_translate_opts o = clf_translate_opts_default();
    o.max_extra = 3;
    for (int min_length = 1; min_length <= 3; min_length += 2) {  /* newcomers hold EOS back for the others */
        o.min_length = min_length;
        o.greedy = true, o.nbest = 1;
        expect_joining_equal(m, sp, sl, NS, &o, 4, 3);
        o.greedy = false, o.nbest = 4;
        expect_joining_equal(m, sp, sl, NS, &o, 4, 3);
        expect_joining_equal(m, sp, sl, NS, &o, 3, 1);
    }
    /* room for more sentences than the device holds: refused before anything is allocated, naming the sizes */
    const size_t per = clf_model_translate_stream_bytes(m, &o, 2, 40) - clf_model_translate_stream_bytes(m, &o, 1, 40),
                 huge = clf_ctx_device(ctx)->global_mem / per + 1;  /* a sentence's share, beside what all share */
    cr_assert_gt(clf_model_translate_stream_bytes(m, &o, huge, 40), clf_ctx_device(ctx)->global_mem);
    struct joining j = {sp, sl, NS, 0, 0, 1, 0, 0, 4, NULL};
    const struct clf_translate_stream big = {joining_take, joining_give, &j, huge, 40};
    cr_assert_eq(clf_model_translate_stream(m, &o, &big), CLF_ERR_MEMORY);
    cr_assert(strstr(clf_ctx_error(ctx), "sentences at once"), "%s", clf_ctx_error(ctx));
    cr_assert_eq(j.next, 0, "nothing was taken");
    tu_setting("CLF_SEARCH", "host");  /* the host's scan reads rows at different positions alike */
    o.min_length = 1, o.nbest = 2;
    expect_joining_equal(m, sp, sl, NS, &o, 4, 2);
    tu_setting("CLF_SEARCH", NULL);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* CTranslate2 (bench/peers/ct2_peer.py) runs our weights from the
 * checkpoint and its metadata alone: its greedy outputs equal ours token
 * for token on a random tiny model. One sentence per batch, so that its
 * length limit (one per call) is each sentence's, as ours. Skipped without
 * the ctranslate2 Python package. */
Test(peer, ctranslate2_greedy_equals_ours, .timeout = TU_TIMEOUT(300))
{
    if (system("/usr/bin/python3 -c 'import ctranslate2, safetensors, numpy' >/dev/null 2>&1") != 0)
        cr_skip_test("the ctranslate2 Python package is not importable");
    ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    cr_assert_eq(clf_model_init(ctx, &m, &c, 9), CLF_OK, "%s", clf_ctx_error(ctx));
    enum { NP = 16, LONGEST = 24 };
    const char *dir = tu_tmpdir();
    char model[512], ids[512], outp[512], err[512], cmd[2048];
    snprintf(model, sizeof model, "%s/model.safetensors", dir);
    snprintf(ids, sizeof ids, "%s/input.ids", dir);
    snprintf(outp, sizeof outp, "%s/ct2.beam1", dir);
    snprintf(err, sizeof err, "%s/ct2.err", dir);
    cr_assert_eq(clf_model_save(m, model, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    int32_t s[NP][LONGEST];
    const int32_t *sp[NP];
    size_t sl[NP];
    FILE *f = fopen(ids, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < NP; i++) {
        sl[i] = 1 + (size_t)(i * 7) % LONGEST;
        for (size_t t = 0; t < sl[i]; t++) {
            s[i][t] = 4 + (int32_t)((i * 17 + (int)t * 3) % (c.vocab - 4));
            fprintf(f, "%d%c", (int)s[i][t], t + 1 < sl[i] ? ' ' : '\n');
        }
        sp[i] = s[i];
    }
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "THREADS=1 /usr/bin/python3 %s/bench/peers/ct2_peer.py %s %s --ids --batch 1 --max-extra 3 --beams 1 "
             "--out %s/ct2",
             CLF_SOURCE_DIR, model, ids, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s failed: %s", cmd, tu_slurp(err));
    struct clf_translate_opts o = clf_translate_opts_default();
    o.greedy = true;
    o.max_extra = 3;
    struct clf_hypothesis h[NP];
    cr_assert_eq(clf_model_translate(m, sp, sl, NP, &o, h), CLF_OK, "%s", clf_ctx_error(ctx));
    char *text = tu_slurp(outp), *at = text;
    for (int i = 0; i < NP; i++) {
        size_t n = 0;
        char *end = strchr(at, '\n');
        cr_assert_not_null(end, "%s: %d lines, want %d", outp, i, NP);
        *end = 0;
        for (char *tok = strtok(at, " "); tok; tok = strtok(NULL, " "), n++) {
            cr_assert_lt(n, h[i].n, "sentence %d: CTranslate2 gives more than our %zu tokens", i, h[i].n);
            cr_assert_eq(strtol(tok, NULL, 10), h[i].ids[n], "sentence %d token %zu: CTranslate2 %s, ours %d", i, n,
                         tok, (int)h[i].ids[n]);
        }
        cr_assert_eq(n, h[i].n, "sentence %d: CTranslate2 gives %zu tokens, ours %zu", i, n, h[i].n);
        at = end + 1;
    }
    free(text);
    clf_hypotheses_free(h, NP);
    clf_model_free(m);
    clf_ctx_free(ctx);
}
