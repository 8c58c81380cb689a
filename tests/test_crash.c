/* test_crash.c: training survives the faults of real machines. `clformer
 * train` is killed with SIGKILL at random moments (during updates,
 * checkpoint writes, validation) and resumed, many times over: every
 * checkpoint on disk loads, no half-written file is taken for one, and the
 * run ends with the same losses, update for update, as a run that was
 * never killed. A checkpoint write that meets a full disk (a small
 * tmpfs) fails with a clear error and keeps the previous checkpoint; two
 * Ctrl-Cs save once and corrupt nothing. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"
#define DATA CLF_SOURCE_DIR "/data/multi30k"
enum { STEPS = 60 };

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "zcat %s/val.en.gz | head -n 400 > %s/src.txt && zcat %s/val.de.gz | head -n 400 > "
                              "%s/tgt.txt && head -n 40 %s/src.txt > %s/vsrc.txt && head -n 40 %s/tgt.txt > %s/vtgt.txt",
             DATA, dir, DATA, dir, dir, dir, dir, dir);
    cr_assert_eq(system(cmd), 0);
}

/* The training command for out: `steps` updates, validation every 10,
 * checkpoints every save_minutes (0.002: every ~0.1 s, so that kills land
 * in and around their writes). In the sanitizer build the runs that end
 * (not those killed) get the leak check at exit, as every command does. */
static void train_cmd(char *cmd, size_t len, const char *out, int steps, const char *save_minutes, bool resume)
{
    snprintf(cmd, len,
             "%s train --src %s/src.txt --tgt %s/tgt.txt --val-src %s/vsrc.txt --val-tgt %s/vtgt.txt --preset tiny "
             "--vocab 400 --max-tokens 300 --warmup 10 --steps %d --val-every 10 --save-minutes %s --keep 3 "
             "--seed 5 --quiet --out %s/%s%s",
             CLI, dir, dir, dir, dir, steps, save_minutes, dir, out, resume ? " --resume" : "");
}

/* "step loss" of every update record of a log, one per line. */
static char *losses(const char *out)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/log.jsonl", dir, out);
    char *s = tu_slurp(path), *r = calloc(strlen(s) + 1, 1);
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        long step;
        char loss[32];
        if (sscanf(line, "{\"step\":%ld,\"epoch\":%*[^,],\"loss\":%31[^,]", &step, loss) == 2)
            sprintf(r + strlen(r), "%ld %s\n", step, loss);
    }
    free(s);
    return r;
}

/* Every ckpt-N.safetensors of out loads with its optimizer state; returns
 * how many there are. No temporary file is named like a checkpoint. */
static int check_checkpoints(clf_ctx_t *ctx, const char *out)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, out);
    long *steps = NULL;
    int n = clf_trainer_checkpoints(path, &steps);
    for (int i = 0; i < n; i++) {
        char model[1024], optim[1024];
        clf_trainer_ckpt_paths(path, steps[i], model, optim, sizeof model);
        clf_model_t *m;
        cr_assert_eq(clf_model_load(ctx, &m, model), CLF_OK, "%s does not load: %s", model, clf_ctx_error(ctx));
        cr_assert_eq(clf_model_load_optimizer(m, optim), CLF_OK, "%s does not load: %s", optim, clf_ctx_error(ctx));
        clf_model_free(m);
    }
    free(steps);
    return n < 0 ? 0 : n;
}

/* Starts cmd (exec'd by the shell: the pid is clformer's own). */
static pid_t start(const char *cmd)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char full[4200];
        snprintf(full, sizeof full, "exec %s 2>/dev/null >/dev/null", cmd);
        execl("/bin/sh", "sh", "-c", full, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

Test(crash, sigkill_at_random_moments_loses_nothing, .init = setup, .timeout = TU_TIMEOUT(600))
{
    char cmd[4096], err[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    train_cmd(cmd, sizeof cmd, "straight", STEPS, "0.002", false);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    char *want = losses("straight");
    cr_assert_eq((int)(strchr(want, 0) - want) > 0, 1);

    clf_ctx_t *ctx = tu_ctx();
    srand(12345);
    int kills = 0, resumed = 0;
    for (int round = 0; round < 10; round++) {
        /* resume only from a checkpoint (the first rounds may die before one) */
        bool resume = check_checkpoints(ctx, "killed") > 0;
        train_cmd(cmd, sizeof cmd, "killed", STEPS, "0.002", resume);
        pid_t pid = start(cmd);
        sleep_ms(200 + rand() % 1500);
        int status;
        if (waitpid(pid, &status, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            kills++;
        } else {
            cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a run exited with %d", WEXITSTATUS(status));
            break;  /* it finished before the kill */
        }
        resumed += resume;
        check_checkpoints(ctx, "killed");
    }
    train_cmd(cmd, sizeof cmd, "killed", STEPS, "0.002", check_checkpoints(ctx, "killed") > 0);
    cr_assert_eq(tu_run(cmd, err), 0, "the last resume failed: %s", tu_slurp(err));
    cr_assert_geq(check_checkpoints(ctx, "killed"), 1);
    cr_assert_geq(kills, 3, "too few kills landed (%d): the runs are faster than the test assumes", kills);
    char *got = losses("killed");
    cr_assert_str_eq(got, want, "after %d kills (%d resumed), the log differs from the uninterrupted run's:\n%s\n"
                                "uninterrupted:\n%s", kills, resumed, got, want);
    free(got), free(want);
    clf_ctx_free(ctx);
}

Test(crash, a_full_disk_during_a_checkpoint_keeps_the_previous_one, .init = setup, .timeout = TU_TIMEOUT(300))
{
    char cmd[4096], err[512];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    /* 20 updates, a checkpoint at the end */
    train_cmd(cmd, sizeof cmd, "disk", 20, "9", false);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    /* resumed in a copy of that folder on a tmpfs with 100 KiB to spare
     * (a checkpoint takes more), mounted in a private namespace: a full
     * disk (ENOSPC) for the run's own files alone, not for the OpenCL
     * driver's caches. The folder is copied out before the mount goes. */
    char script[8192];
    train_cmd(cmd, sizeof cmd, "full", STEPS, "9", true);
    snprintf(script, sizeof script,
             "unshare -m sh -c 'mkdir -p %s/full %s/after && "
             "mount -t tmpfs -o size=$(( $(du -sk %s/disk | cut -f1) + 100 ))k tmpfs %s/full || exit 99; "
             "cp -a %s/disk/. %s/full/ && { %s; echo $? > %s/rc; }; cp -a %s/full/. %s/after/'",
             dir, dir, dir, dir, dir, dir, cmd, dir, dir, dir);
    int rc = tu_run(script, err);
    char *msg = tu_slurp(err);
    if (rc == 99)
        cr_skip_test("no private tmpfs here (unshare -m and mount need root): %s", msg);
    cr_assert_eq(rc, 0, "%s", msg);
    char path[600];
    snprintf(path, sizeof path, "%s/rc", dir);
    char *train_rc = tu_slurp(path);
    cr_assert(*train_rc && atoi(train_rc) != 0, "the run did not fail on a full disk:\n%s", msg);
    cr_assert(strstr(msg, "cannot write") && strstr(msg, ".safetensors"), "the message names no file:\n%s", msg);
    cr_assert(strstr(msg, "No space left on device"), "the message does not say why:\n%s", msg);
    free(msg), free(train_rc);
    clf_ctx_t *ctx = tu_ctx();
    snprintf(path, sizeof path, "%s/after/ckpt-20.safetensors", dir);
    cr_assert_eq(access(path, R_OK), 0, "the previous checkpoint is gone");
    cr_assert_geq(check_checkpoints(ctx, "after"), 1);
    /* no temporary file left behind */
    snprintf(script, sizeof script, "ls %s/after | grep -c tmp", dir);
    FILE *p = popen(script, "r");
    int tmps = -1;
    cr_assert_eq(fscanf(p, "%d", &tmps), 1);
    pclose(p);
    cr_assert_eq(tmps, 0, "temporary files left in %s/after", dir);
    clf_ctx_free(ctx);
}

Test(crash, two_ctrl_c_save_once_and_corrupt_nothing, .init = setup, .timeout = TU_TIMEOUT(300))
{
    char cmd[4096];
    /* long enough to be interrupted; the save at the interrupt is the only one */
    train_cmd(cmd, sizeof cmd, "ctrlc", 100000, "9", false);
    pid_t pid = start(cmd);
    /* interrupt once training runs (before, Ctrl-C simply ends the
     * program: nothing has been written) */
    char log[512];
    snprintf(log, sizeof log, "%s/ctrlc/log.jsonl", dir);
    for (int waited = 0; waited < 120000; waited += 100) {
        char *s = tu_slurp(log);
        bool started = strchr(s, '\n') != NULL;
        free(s);
        if (started)
            break;
        sleep_ms(100);
    }
    kill(pid, SIGINT);
    sleep_ms(20);
    kill(pid, SIGINT);
    int status;
    waitpid(pid, &status, 0);
    /* (glibc's signal() under strict C11 resets the handler after one
     * delivery: the second Ctrl-C used to kill the run mid-save) */
    cr_assert(WIFEXITED(status), "training died on the second Ctrl-C");
    cr_assert_eq(WEXITSTATUS(status), 130);
    clf_ctx_t *ctx = tu_ctx();
    cr_assert_eq(check_checkpoints(ctx, "ctrlc"), 1, "want the one checkpoint saved at the interrupt");
    clf_ctx_free(ctx);
}
