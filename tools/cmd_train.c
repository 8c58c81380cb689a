/* cmd_train.c: `clformer train`: the paper's recipe on parallel text.
 * Here: the options and the loop, which reads as the list of duties of
 * one update; trainer.c does each (learning the subwords, batching,
 * accumulating gradients, Adam, logging, validating, checkpointing,
 * resuming, plotting). Under mpirun every rank runs this loop; a rank
 * whose duty fails ends the whole job (dist_abort), naming itself and the
 * duty, instead of leaving the others waiting for it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buckets.h"
#include "cli.h"
#include "commands.h"
#include "dist.h"
#include "trainer.h"

#ifndef CLF_DATA_DIR
#define CLF_DATA_DIR "data/multi30k"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clformer train [options]\n"
            "  --src FILE --tgt FILE           training pairs (plain or gzip; default: bundled Multi30k EN->DE)\n"
            "  --val-src FILE --val-tgt FILE   validation pairs (default: bundled Multi30k val)\n"
            "  --out DIR                       checkpoints, BPE model, log and plot (default runs/train)\n"
            "  --init CKPT                     fine-tune CKPT (ours or `clformer import`'s): its weights, config\n"
            "                                  and tokenizer (copied into DIR); Adam afresh from update 0, so the\n"
            "                                  warm-up applies again (lower --lr-scale to fine-tune gently)\n"
            "  --preset NAME                   base, big, small (default) or tiny\n"
            "  --layers N --d-model N --heads N --d-ff N --dropout P --label-smoothing E\n"
            "  --norm post|pre --enc-window R --dec-window R   restricted self-attention radius\n"
            "  --steps N | --epochs N | --minutes M   the budget (default: 1 epoch)\n"
            "  --bpe MODEL                     a SentencePiece model to use (default: learn one into DIR; with\n"
            "                                  --init, the checkpoint's, or the directory of Marian's files)\n"
            "  --vocab N                       pieces of a learned BPE model (default 8000)\n"
            "  --max-len N                     skip pairs with a side longer than N subwords (default 100)\n"
            "  --max-tokens N                  padded tokens per batch (default 4096)\n"
            "  --update-tokens N               target tokens per update, accumulated (default: one batch;\n"
            "                                  under mpirun at least one batch per rank, split among them)\n"
            "  --warmup N                      warm-up updates (default 800)\n"
            "  --lr-scale X                    multiplies the paper's schedule (default 1)\n"
            "  --clip X                        global gradient-norm clipping (default 0: off)\n"
            "  --bucket-mb MB                  under mpirun: sum the gradients in buckets of MB while the\n"
            "                                  backward runs (default 3); 0: all at once after it\n"
            "  --save-minutes M --keep K       checkpoint every M minutes, keep the last K (10, 5)\n"
            "  --val-every N                   validate every N updates (default 500; 0: only at the end)\n"
            "  --log-every N                   progress line every N updates when not on a terminal (50)\n"
            "  --seed N --device D --resume --quiet\n");
}

/* --init takes the model's shape and vocabulary from its checkpoint: the
 * options that would set them are refused (the first one named), as is
 * --resume, which continues a run of its own. */
static bool init_conflicts(const struct train_args *a)
{
    const struct {
        const char *flag;
        bool set;
    } shape[] = {{"--preset", a->preset != NULL}, {"--layers", a->layers != -1}, {"--d-model", a->d_model != -1},
                 {"--heads", a->heads != -1}, {"--d-ff", a->d_ff != -1}, {"--norm", a->norm != -1},
                 {"--enc-window", a->enc_window != -2}, {"--dec-window", a->dec_window != -2},
                 {"--vocab", a->vocab != 0}, {"--resume", a->resume}};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        if (!shape[i].set)
            continue;
        if (!strcmp(shape[i].flag, "--resume"))
            fprintf(stderr, "clformer train: --init and --resume: --init starts a fine-tuning run in --out, --resume "
                            "continues the run already there (a fine-tuning run too): pass one of them\n");
        else
            fprintf(stderr, "clformer train: %s with --init %s: the model's shape and vocabulary come from the "
                            "checkpoint; leave %s out\n", shape[i].flag, a->init, shape[i].flag);
        return true;
    }
    return false;
}

static bool parse(int argc, char **argv, struct train_args *a)
{
    *a = (struct train_args){.src = CLF_DATA_DIR "/train.en.gz", .tgt = CLF_DATA_DIR "/train.de.gz",
                             .val_src = CLF_DATA_DIR "/val.en.gz", .val_tgt = CLF_DATA_DIR "/val.de.gz",
                             .out = "runs/train", .preset = NULL, .epochs = 0, .save_minutes = 10,
                             .vocab = 0, .max_len = -1, .warmup = 800, .keep = 5, .val_every = 500,
                             .log_every = 50, .max_tokens = 4096, .lr_scale = 1, .bucket_mb = GRAD_BUCKET_MB, .seed = 1, .layers = -1,
                             .d_model = -1, .heads = -1, .d_ff = -1, .norm = -1, .enc_window = -2,
                             .dec_window = -2, .dropout = -1, .smoothing = -1};
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        const char *v = NULL;
        double x = 0;
#define STR(name, field) if (cli_opt(argc, argv, &i, name, &v, &bad)) { a->field = v; continue; }
#define NUM(name, field, lo, hi, integer)                                              \
    if (cli_opt_number(argc, argv, &i, name, lo, hi, integer, &x, &bad)) {             \
        a->field = x;  /* the field's own type (int, long, double, uint64_t) */       \
        continue;                                                                      \
    }
#define INT(name, field) NUM(name, field, INT_MIN, INT_MAX, true)
#define LONG(name, field) NUM(name, field, -1e15, 1e15, true)
#define REAL(name, field) NUM(name, field, -1e300, 1e300, false)
        STR("--src", src) STR("--tgt", tgt) STR("--val-src", val_src) STR("--val-tgt", val_tgt) STR("--out", out)
        STR("--bpe", bpe) STR("--device", device) STR("--preset", preset) STR("--init", init)
        LONG("--steps", steps) LONG("--epochs", epochs) REAL("--minutes", minutes)
        REAL("--save-minutes", save_minutes) INT("--vocab", vocab) INT("--max-len", max_len)
        INT("--warmup", warmup) INT("--keep", keep) INT("--val-every", val_every)
        INT("--log-every", log_every) LONG("--max-tokens", max_tokens)
        LONG("--update-tokens", update_tokens) REAL("--lr-scale", lr_scale) REAL("--clip", clip)
        REAL("--bucket-mb", bucket_mb)
        NUM("--seed", seed, 0, 9007199254740992.0, true) INT("--layers", layers) INT("--d-model", d_model)
        INT("--heads", heads) INT("--d-ff", d_ff) INT("--enc-window", enc_window)
        INT("--dec-window", dec_window) REAL("--dropout", dropout)
        REAL("--label-smoothing", smoothing)
        if (cli_opt(argc, argv, &i, "--norm", &v, &bad)) {
            a->norm = !v ? a->norm : !strcmp(v, "pre") ? CLF_NORM_PRE : !strcmp(v, "post") ? CLF_NORM_POST : -2;
            continue;
        }
#undef STR
#undef NUM
#undef INT
#undef LONG
#undef REAL
        if (!strcmp(argv[i], "--resume")) a->resume = true;
        else if (!strcmp(argv[i], "--quiet")) a->quiet = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); exit(0); }
        else { fprintf(stderr, "clformer train: unknown option '%s'\n", argv[i]); bad = true; }
    }
    if (!bad && a->norm == -2) {
        fprintf(stderr, "clformer train: --norm takes post or pre\n");
        bad = true;
    }
    if (!bad && a->init)
        bad = init_conflicts(a);
    if (!bad && (a->max_tokens < 1 || a->warmup < 1 || a->keep < 1 || a->log_every < 1 ||
                 (a->max_len < 2 && a->max_len != -1) || a->vocab < 0 || a->steps < 0 || a->epochs < 0 ||
                 a->minutes < 0 || a->val_every < 0 || a->save_minutes < 0 || a->bucket_mb < 0)) {
        fprintf(stderr, "clformer train: --max-tokens, --warmup, --keep, --log-every must be >= 1, --max-len >= 2, "
                        "budgets, --vocab, --val-every, --save-minutes and --bucket-mb >= 0\n");
        bad = true;
    }
    if (bad)
        usage(stderr);
    if (!a->steps && !a->epochs && !a->minutes)
        a->epochs = 1;
    return !bad;
}

int clf_cmd_train(int argc, char **argv)
{
    struct train_args a;
    if (!parse(argc, argv, &a))
        return 2;
    dist_init(&argc, &argv);
    struct trainer t;
    const char *duty = "setting up (subwords, data, device, model)";
    int rc = trainer_init(&t, &a);
    while (!rc && !t.stop) {
        duty = "training step";
        rc = trainer_step(&t);  /* one update: its batches, backward, the sum across ranks, Adam */
        if (rc)
            break;
        trainer_log(&t);        /* log.jsonl, the loss curve */
        trainer_budget(&t);     /* how far along; stop when spent or on Ctrl-C */
        trainer_progress(&t);   /* the progress line */
        duty = "validation";
        if ((rc = trainer_validate(&t)))
            break;
        duty = "checkpoint";
        rc = trainer_checkpoint(&t);
    }
    char msg[160];
    snprintf(msg, sizeof msg, "%s failed (its message is above); ending the job", duty);
    dist_fail_if(rc, msg);
    if (!rc)
        rc = trainer_finish(&t);
    trainer_free(&t);
    dist_finalize();
    return rc;
}
