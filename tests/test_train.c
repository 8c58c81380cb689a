/* test_train.c: training end to end. The library learns a synthetic task
 * (copying random sequences) and decodes it greedily; the `clformer`
 * command resumes exactly, averages checkpoints, and refuses bad input
 * with a clear message; the library's trainer (clformer_train.h) resumes
 * bit for bit and rewinds a log. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"

static uint64_t rng = 88172645463325252ULL;
static unsigned next_rand(unsigned n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng % n);
}

enum { SYMBOLS = 12, MINLEN = 3, MAXLEN = 8 };

/* One random sequence of symbols (ids 4 .. 4+SYMBOLS-1). */
static int random_seq(int32_t *x)
{
    int n = MINLEN + (int)next_rand(MAXLEN - MINLEN + 1);
    for (int i = 0; i < n; i++)
        x[i] = 4 + (int32_t)next_rand(SYMBOLS);
    return n;
}

/* 900 s: a hang guard. A CPU runtime shaped as a GPU runs the split
 * attention kernels (groups of 128 with barriers) and CLBlast, and how many
 * updates the task takes depends on the kernels' summation order: on a busy
 * 2-core machine Intel's CPU runtime took 241 s (600 updates) before
 * attn_bwd_dkdv had its split form and 469 s (1000 updates) after. */
Test(train, copy_task_converges_and_greedy_equals_beam_one, .timeout = TU_TIMEOUT(900))
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    c.vocab = 4 + SYMBOLS;
    c.d_model = 64, c.heads = 4, c.d_ff = 128, c.dropout = 0, c.label_smoothing = 0;
    clf_model_t *m;
    cr_assert_eq(clf_model_init(ctx, &m, &c, 1), CLF_OK, "%s", clf_ctx_error(ctx));
    enum { B = 32, S = MAXLEN + 1, T = MAXLEN + 1 };
    int32_t src[B * S], tin[B * T], tout[B * T], seq[MAXLEN];
    /* a validation set decides when training has converged: the training
     * loss alone stops too early on some implementations (its rounding
     * differs), leaving 90-94 of 100 held-out sequences right */
    enum { NV = 100 };
    int32_t val[NV][MAXLEN];
    const int32_t *vptr[NV];
    size_t vlen[NV];
    for (int i = 0; i < NV; i++) {
        vlen[i] = (size_t)random_seq(val[i]);
        vptr[i] = val[i];
    }
    struct clf_hypothesis vh[NV];
    struct clf_translate_opts vgreedy = {1, 0.6f, 10, 1, true, 1, CLF_LENGTH_PENALTY_PAPER, 0};
    int step, val_exact = 0;
    double loss = 0, tokens = 0;
    for (step = 1; step <= 2000; step++) {
        memset(src, 0, sizeof src), memset(tin, 0, sizeof tin), memset(tout, 0, sizeof tout);
        for (int b = 0; b < B; b++) {
            int n = random_seq(seq);
            for (int i = 0; i < n; i++) {
                src[b * S + i] = seq[i];
                tin[b * T + 1 + i] = seq[i];
                tout[b * T + i] = seq[i];
            }
            src[b * S + n] = CLF_EOS_ID;
            tin[b * T] = CLF_BOS_ID;
            tout[b * T + n] = CLF_EOS_ID;
        }
        int ntok = 0;
        for (int i = 0; i < B * T; i++)
            ntok += tout[i] != 0;
        struct clf_model_batch batch = {B, S, T, src, tin, tout};
        struct clf_step_opts o = {false, (uint32_t)step, 1.0f / (float)ntok};
        cr_assert_eq(clf_model_zero_grad(m), CLF_OK);
        cr_assert_eq(clf_model_forward_backward(m, &batch, &o, &loss, &tokens), CLF_OK, "%s", clf_ctx_error(ctx));
        float lr = 0.2f * clf_lr_schedule((size_t)c.d_model, (size_t)step, 100);  /* peak 2.5e-3 */
        cr_assert_eq(clf_model_adam_step(m, lr, 1.0f), CLF_OK, "%s", clf_ctx_error(ctx));
        if (step % 100 == 0 && loss / tokens < 0.01) {
            cr_assert_eq(clf_model_translate(m, vptr, vlen, NV, &vgreedy, vh), CLF_OK, "%s", clf_ctx_error(ctx));
            val_exact = 0;
            for (int i = 0; i < NV; i++)
                val_exact += vh[i].n == vlen[i] && !memcmp(vh[i].ids, val[i], vlen[i] * sizeof(int32_t));
            clf_hypotheses_free(vh, NV);
            if (val_exact >= 99)
                break;
        }
    }
    cr_log_info("copy task: loss per token %.4f after %d updates, %d of %d validation sequences exact",
                loss / tokens, step, val_exact, NV);

    /* held-out sequences, greedy and beam 1 */
    enum { N = 100 };
    int32_t held[N][MAXLEN];
    const int32_t *ptr[N];
    size_t len[N];
    for (int i = 0; i < N; i++) {
        len[i] = (size_t)random_seq(held[i]);
        ptr[i] = held[i];
    }
    struct clf_hypothesis g[N], b1[N];
    struct clf_translate_opts greedy = {1, 0.6f, 10, 1, true, 1, CLF_LENGTH_PENALTY_PAPER, 0}, beam1 = {1, 0.6f, 10, 1, false, 1, CLF_LENGTH_PENALTY_PAPER, 0};
    cr_assert_eq(clf_model_translate(m, ptr, len, N, &greedy, g), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_translate(m, ptr, len, N, &beam1, b1), CLF_OK, "%s", clf_ctx_error(ctx));
    int exact = 0;
    for (int i = 0; i < N; i++) {
        exact += g[i].n == len[i] && !memcmp(g[i].ids, held[i], len[i] * sizeof(int32_t));
        cr_assert_eq(g[i].n, b1[i].n, "sentence %d: greedy and beam 1 differ in length", i);
        cr_assert_eq(memcmp(g[i].ids, b1[i].ids, g[i].n * sizeof(int32_t)), 0, "sentence %d: greedy != beam 1", i);
    }
    cr_log_info("copy task: %d of %d held-out sequences exact", exact, N);
    cr_assert_gt(exact, 95, "only %d of %d held-out sequences copied exactly", exact, N);

    /* beam 4 (two best kept) copies as well, and ranks its n-best in order.
     * (It need not score above greedy: the greedy prefix can fall out of
     * the beam, and the search stops once `beam` hypotheses have ended.) */
    struct clf_hypothesis b4[N * 2];
    struct clf_translate_opts beam4 = {4, 0.6f, 10, 2, false, 1, CLF_LENGTH_PENALTY_PAPER, 0};
    cr_assert_eq(clf_model_translate(m, ptr, len, N, &beam4, b4), CLF_OK, "%s", clf_ctx_error(ctx));
    int exact4 = 0;
    for (int i = 0; i < N; i++) {
        exact4 += b4[2 * i].n == len[i] && !memcmp(b4[2 * i].ids, held[i], len[i] * sizeof(int32_t));
        cr_assert_geq(b4[2 * i].score, b4[2 * i + 1].score, "sentence %d: n-best out of order", i);
    }
    cr_log_info("copy task: beam 4 copies %d of %d exactly", exact4, N);
    cr_assert_gt(exact4, 95, "beam 4 copied only %d of %d exactly", exact4, N);

    /* the search's candidates chosen on the host from every log-probability
     * (CLF_SEARCH=host) give the same hypotheses as the device's top-k */
    struct clf_hypothesis gh[N], b4h[N * 2];
    tu_setting("CLF_SEARCH", "host");
    cr_assert_eq(clf_model_translate(m, ptr, len, N, &greedy, gh), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_model_translate(m, ptr, len, N, &beam4, b4h), CLF_OK, "%s", clf_ctx_error(ctx));
    tu_setting("CLF_SEARCH", NULL);
    for (int i = 0; i < 3 * N; i++) {
        const struct clf_hypothesis *x = i < N ? &g[i] : &b4[i - N], *y = i < N ? &gh[i] : &b4h[i - N];
        cr_assert(x->n == y->n && !memcmp(x->ids, y->ids, x->n * sizeof(int32_t)) && x->score == y->score,
                  "%s hypothesis %d: the device's top-k and the host's scan differ", i < N ? "greedy" : "beam 4",
                  i < N ? i : i - N);
    }
    clf_hypotheses_free(gh, N);
    clf_hypotheses_free(b4h, 2 * N);
    clf_hypotheses_free(g, N);
    clf_hypotheses_free(b1, N);
    clf_hypotheses_free(b4, 2 * N);
    clf_model_free(m);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------------------ the command */

static char dir[256];

/* Writes n lines of random "words" (a copy task as text) to src and tgt. */
static void write_corpus(const char *src, const char *tgt, int n)
{
    static const char *words[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"};
    FILE *a = fopen(src, "w"), *b = fopen(tgt, "w");
    cr_assert(a && b);
    for (int i = 0; i < n; i++) {
        int len = 2 + (int)next_rand(5);
        for (int j = 0; j < len; j++) {
            const char *w = words[next_rand(8)];
            fprintf(a, "%s%s", j ? " " : "", w);
            fprintf(b, "%s%s", j ? " " : "", w);
        }
        fputc('\n', a), fputc('\n', b);
    }
    fclose(a), fclose(b);
}

/* The "loss" values of a log.jsonl, one per update, as text. */
static void losses(const char *log, char *out, size_t len)
{
    char *s = tu_slurp(log), *p = s;
    out[0] = 0;
    while ((p = strstr(p, "\"loss\":"))) {
        p += 7;
        size_t n = strcspn(p, ",}");
        strncat(out, p, n < len - strlen(out) - 2 ? n : 0);
        strcat(out, " ");
    }
    free(s);
}

static void setup_dir(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    char s[512], t[512];
    snprintf(s, sizeof s, "%s/src.txt", dir);
    snprintf(t, sizeof t, "%s/tgt.txt", dir);
    write_corpus(s, t, 300);
}

#define TRAIN_TALKING "%s train --src %s/src.txt --tgt %s/tgt.txt --val-src '' --val-tgt '' --preset tiny " \
                      "--vocab 300 --max-tokens 256 --warmup 10 --dropout 0.1 --seed 3"
#define TRAIN TRAIN_TALKING " --quiet"

Test(cli, resume_gives_the_same_losses, .init = setup_dir, .timeout = TU_TIMEOUT(300))
{
    char cmd[2048], err[512], a[8192], b[8192];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, TRAIN " --steps 40 --out %s/straight", CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    snprintf(cmd, sizeof cmd, TRAIN " --steps 20 --out %s/resumed", CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    snprintf(cmd, sizeof cmd, TRAIN " --steps 40 --out %s/resumed --resume", CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    char log[512];
    snprintf(log, sizeof log, "%s/straight/log.jsonl", dir);
    losses(log, a, sizeof a);
    snprintf(log, sizeof log, "%s/resumed/log.jsonl", dir);
    losses(log, b, sizeof b);
    cr_assert_gt(strlen(a), 40 * 2, "too few updates logged: %s", a);
    cr_assert_str_eq(a, b, "40 straight:\n%s\n20 + resume + 20:\n%s", a, b);

    /* averaging two checkpoints is their element-wise mean; its step is the
     * newest one's (given first here) and it lists both */
    snprintf(cmd, sizeof cmd, "%s average -o %s/avg.safetensors %s/resumed/ckpt-40.safetensors %s/resumed/ckpt-20.safetensors",
             CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    char p[512], v[64];
    snprintf(p, sizeof p, "%s/avg.safetensors", dir);
    cr_assert_eq(clf_checkpoint_meta(p, "step", v, sizeof v), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_str_eq(v, "40");
    cr_assert_eq(clf_checkpoint_meta(p, "averaged_steps", v, sizeof v), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_str_eq(v, "[40,20]");
    clf_ctx_t *ctx = tu_ctx();
    clf_model_t *x, *y, *avg;
    snprintf(p, sizeof p, "%s/resumed/ckpt-20.safetensors", dir);
    cr_assert_eq(clf_model_load(ctx, &x, p), CLF_OK, "%s", clf_ctx_error(ctx));
    snprintf(p, sizeof p, "%s/resumed/ckpt-40.safetensors", dir);
    cr_assert_eq(clf_model_load(ctx, &y, p), CLF_OK, "%s", clf_ctx_error(ctx));
    snprintf(p, sizeof p, "%s/avg.safetensors", dir);
    cr_assert_eq(clf_model_load(ctx, &avg, p), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t n = clf_model_numel(x);
    float *wx = tu_download(ctx, clf_model_weights(x), n), *wy = tu_download(ctx, clf_model_weights(y), n),
          *wa = tu_download(ctx, clf_model_weights(avg), n), *want = malloc(n * sizeof *want);
    for (size_t i = 0; i < n; i++)
        want[i] = (float)(((double)wx[i] + wy[i]) / 2);
    cr_assert(tu_close("average", wa, want, n, 0, 0));
    cr_assert_neq(memcmp(wx, wy, n * sizeof *wx), 0, "the two checkpoints are equal: the test proves nothing");
    free(wx), free(wy), free(wa), free(want);
    clf_model_free(x), clf_model_free(y), clf_model_free(avg);
    clf_ctx_free(ctx);
}

/* The progress line and log.jsonl count epochs alike: the epochs of data
 * completed, from 0 (the progress line once counted from 1). */
Test(cli, progress_and_log_agree_on_the_epoch, .init = setup_dir, .timeout = TU_TIMEOUT(300))
{
    char cmd[2048], err[512], log[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, TRAIN_TALKING " --steps 30 --log-every 10 --out %s/talk", CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    snprintf(log, sizeof log, "%s/talk/log.jsonl", dir);
    char *progress = tu_slurp(err), *jsonl = tu_slurp(log);
    int lines = 0;
    for (const char *p = progress; (p = strstr(p, "\nstep ")); p++) {
        long step;
        double shown;
        if (sscanf(p, "\nstep %ld  epoch %lf", &step, &shown) != 2)
            continue;  /* a validation or other line */
        char key[64];
        snprintf(key, sizeof key, "{\"step\":%ld,\"epoch\":", step);
        const char *q = strstr(jsonl, key);
        cr_assert(q, "step %ld is on the progress line but not in log.jsonl", step);
        double logged = atof(q + strlen(key));
        cr_assert_lt(fabs(shown - logged), 0.0051, "step %ld: progress line epoch %.2f, log.jsonl %.4f", step, shown,
                     logged);
        lines++;
    }
    cr_assert_eq(lines, 3, "expected progress lines at updates 10, 20, 30 in:\n%s", progress);
    free(progress), free(jsonl);
}

/* Expects `cmd` to fail with a message containing `want`. */
static void refuses(const char *cmd, const char *want)
{
    char err[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    int rc = tu_run(cmd, err);
    char *msg = tu_slurp(err);
    cr_assert_neq(rc, 0, "'%s' succeeded", cmd);
    cr_assert(strstr(msg, want), "'%s': message '%s' lacks '%s'", cmd, msg, want);
    free(msg);
}

Test(cli, bad_input_gets_a_clear_error, .init = setup_dir, .timeout = TU_TIMEOUT(300))
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, TRAIN " --steps 2 --out %s/run", CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, "/dev/null"), 0);
    /* a corrupt checkpoint */
    snprintf(cmd, sizeof cmd, "head -c 1000 %s/run/ckpt-2.safetensors > %s/bad.safetensors && "
                              "echo hello | %s translate --model %s/bad.safetensors --bpe %s/run/bpe.model",
             dir, dir, CLI, dir, dir);
    refuses(cmd, "bad.safetensors");
    /* a vocabulary that does not match the model */
    snprintf(cmd, sizeof cmd, "%s bpe learn --vocab 280 -o %s/other.model %s/src.txt >/dev/null && echo alpha | "
                              "%s translate --model %s/run/ckpt-2.safetensors --bpe %s/other.model",
             CLI, dir, dir, CLI, dir, dir);
    refuses(cmd, "other.model");
    /* a negative minimum length */
    snprintf(cmd, sizeof cmd, "echo alpha | %s translate --model %s/run/ckpt-2.safetensors --min-length -1", CLI, dir);
    refuses(cmd, "--min-length");
    /* empty input */
    snprintf(cmd, sizeof cmd, "%s translate --model %s/run/ckpt-2.safetensors < /dev/null", CLI, dir);
    refuses(cmd, "empty");
    /* training files that do not pair up */
    snprintf(cmd, sizeof cmd, "head -n 5 %s/tgt.txt > %s/short.txt && %s train --src %s/src.txt --tgt %s/short.txt "
                              "--out %s/x --quiet --bpe %s/run/bpe.model",
             dir, dir, CLI, dir, dir, dir, dir);
    refuses(cmd, "short.txt");
    /* and a translation works */
    char err[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "echo alpha bravo | %s translate --model %s/run/ckpt-2.safetensors", CLI, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
}

/* ------------------------------------------------------------ the library's trainer */

/* clf_trainer_t (clformer_train.h) on the command's corpus: updates of
 * several batches, then six updates straight equal three, a checkpoint,
 * clf_trainer_resume and three more, bit for bit (the weights, the
 * position, the last loss); a log rewound keeps only the records up to
 * the checkpoint. */
Test(trainer, resume_continues_bit_for_bit, .init = setup_dir, .timeout = TU_TIMEOUT(300))
{
    char src[512], tgt[512], spm[512], out[512], log[600];
    snprintf(src, sizeof src, "%s/src.txt", dir);
    snprintf(tgt, sizeof tgt, "%s/tgt.txt", dir);
    snprintf(spm, sizeof spm, "%s/lib.model", dir);
    snprintf(out, sizeof out, "%s/lib", dir);
    struct clf_spm_learn_opts lo;
    clf_spm_learn_defaults(&lo);
    lo.vocab_size = 300;
    const char *files[] = {src, tgt};
    cr_assert_eq(clf_spm_learn(files, 2, spm, &lo), CLF_OK, "%s", clf_ctx_error(NULL));
    clf_tok_t *tok;
    struct clf_corpus *corpus;
    struct clf_corpus_summary sum;
    cr_assert_eq(clf_tok_spm_load(&tok, spm), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_corpus_load(&corpus, src, tgt), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_corpus_encode_tok(corpus, tok, 100, &sum), CLF_OK, "%s", clf_ctx_error(NULL));
    clf_ctx_t *ctx = tu_ctx();
    struct clf_model_config c;
    cr_assert_eq(clf_model_config_preset(&c, "tiny"), CLF_OK);
    c.vocab = clf_tok_vocab_size(tok, CLF_TOK_SOURCE);
    const struct clf_train_opts o = {.config = &c, .seed = 3, .max_tokens = 256, .update_tokens = 400, .warmup = 10,
                                     .lr_scale = 1, .ranks = 1};
    clf_trainer_t *a, *b;
    cr_assert_eq(clf_trainer_init(&a, ctx, &o), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_trainer_data(a, corpus), CLF_OK, "%s", clf_ctx_error(ctx));
    const struct clf_train_state *s = clf_trainer_state(a);
    for (int i = 0; i < 6; i++) {
        size_t batch = s->batch;
        cr_assert_eq(clf_trainer_step(a), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_assert(s->batch == 0 || s->batch >= batch + 2, "an update of 400 tokens took one batch of 256");
        cr_assert(isfinite(s->loss));
        cr_assert(s->update_tokens_seen >= 400 || s->batch == 0, "an update short of 400 tokens before the epoch's end");
    }
    cr_assert_eq(s->step, 6);

    cr_assert_eq(clf_trainer_init(&b, ctx, &o), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_trainer_data(b, corpus), CLF_OK, "%s", clf_ctx_error(ctx));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(clf_trainer_step(b), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_mkdir_p(out), 0);
    cr_assert_eq(clf_trainer_save(b, out, tok, 5), CLF_OK, "%s", clf_ctx_error(ctx));
    clf_trainer_free(b);
    long *steps;
    cr_assert_eq(clf_trainer_checkpoints(out, &steps), 1);
    cr_assert_eq(steps[0], 3);
    free(steps);
    struct clf_train_opts other = o;
    other.seed = 99, other.max_tokens = 1000;  /* the checkpoint's win */
    cr_assert_eq(clf_trainer_resume(&b, ctx, out, 3, &other), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_trainer_data(b, corpus), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_trainer_state(b)->seed, 3);
    cr_assert_eq(clf_trainer_state(b)->max_tokens, 256);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(clf_trainer_step(b), CLF_OK, "%s", clf_ctx_error(ctx));
    const struct clf_train_state *r = clf_trainer_state(b);
    cr_assert_eq(r->step, s->step);
    cr_assert_eq(r->epoch, s->epoch);
    cr_assert_eq(r->batch, s->batch);
    cr_assert_eq(r->tokens, s->tokens);
    cr_assert_eq(r->loss, s->loss, "loss %.9g resumed, %.9g straight", r->loss, s->loss);
    clf_model_t *ma = clf_trainer_model(a), *mb = clf_trainer_model(b);
    size_t n = clf_model_numel(ma);
    float *wa = tu_download(ctx, clf_model_weights(ma), n), *wb = tu_download(ctx, clf_model_weights(mb), n);
    cr_assert_eq(memcmp(wa, wb, n * sizeof *wa), 0, "the resumed run's weights differ from the straight run's");
    free(wa), free(wb);

    snprintf(log, sizeof log, "%s/log.jsonl", out);
    FILE *f = fopen(log, "w");
    fprintf(f, "{\"step\":2,\"loss\":1}\n{\"step\":3,\"loss\":1}\n{\"step\":4,\"loss\":1}\n{\"step\":5,\"lo");
    fclose(f);
    cr_assert_eq(clf_trainer_log_rewind(log, 3), CLF_OK, "%s", clf_ctx_error(NULL));
    char *kept = tu_slurp(log);
    cr_assert_str_eq(kept, "{\"step\":2,\"loss\":1}\n{\"step\":3,\"loss\":1}\n");
    free(kept);
    clf_trainer_free(a), clf_trainer_free(b);
    clf_ctx_free(ctx);
    clf_corpus_free(corpus);
    clf_tok_free(tok);
}
