/* cmd_tune.c: `clformer tune`: searches the parameters of clformer's own
 * kernels (attention tiles, the row-wise ops' work-group cap) and of
 * CLBlast's SGEMM kernels for one device through the library
 * (clf_kernel_params_tune, clf_gemm_params_tune: clformer/advanced/tune.h),
 * printing what their progress callback tells, and keeps the best in the
 * device's tuning file, which every later context applies.
 * `--show` prints what is in force, every tunable of the parameter table
 * with its source; `--reset` deletes the file. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clformer/advanced/files.h>
#include "cli.h"
#include "commands.h"

struct tune_opts {
    const char *device;
    double minutes;
    long tokens;
    bool show, reset, quiet, help;
};

#define TUNE_USAGE "usage: clformer tune [--minutes M] [--tokens T] [--show] [--reset] [--device D] [--quiet]\n"

static bool parse_args(int argc, char **argv, struct tune_opts *o)
{
    const char *minutes_s = "5", *tokens_s = "2560";
    bool bad = false;
    *o = (struct tune_opts){0};
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--show"))
            o->show = true;
        else if (!strcmp(argv[i], "--reset"))
            o->reset = true;
        else if (!strcmp(argv[i], "--quiet"))
            o->quiet = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            o->help = true;
            return true;
        }
        else if (!cli_opt(argc, argv, &i, "--device", &o->device, &bad) &&
                 !cli_opt(argc, argv, &i, "--minutes", &minutes_s, &bad) &&
                 !cli_opt(argc, argv, &i, "--tokens", &tokens_s, &bad)) {
            fprintf(stderr, "clformer: unknown option '%s'\n", argv[i]);
            bad = true;
        }
    }
    char *end;
    o->minutes = strtod(minutes_s, &end);
    if (!bad && (*end || !(o->minutes > 0) || o->minutes > 24 * 60)) {
        fprintf(stderr, "clformer: --minutes wants a number of minutes above 0, not '%s'\n", minutes_s);
        bad = true;
    }
    o->tokens = strtol(tokens_s, &end, 10);
    if (!bad && (*end || o->tokens < 16 || o->tokens > 65536)) {
        fprintf(stderr, "clformer: --tokens wants 16..65536, not '%s'\n", tokens_s);
        bad = true;
    }
    if (bad)
        fprintf(stderr, TUNE_USAGE);
    return !bad;
}

/* ------------------------------------------------------------ --show */

/* Every tunable of the parameter table: its value in force and where it
 * came from, and the setting that would override it. */
static void print_in_force(clf_ctx_t *ctx)
{
    struct clf_params_found *f = malloc(sizeof *f);
    if (!f)
        return;
    clf_params_in_force(ctx, f);
    size_t n;
    const struct clf_param_def *defs = clf_param_defs(&n);
    printf("\nevery tunable in force (kernels' values before the launchers clamp them to the device):\n");
    printf("%-12s %-24s %7s  %-22s %s\n", "group", "name", "value", "setting", "from");
    for (size_t i = 0; i < n; i++) {
        const struct clf_param_def *d = &defs[i];
        const struct clf_param_origin *o = &f->origin[i];
        char from[160], value[16];
        snprintf(value, sizeof value, "%u", clf_param_value(&f->values, d));
        switch (o->source) {
        case CLF_PARAM_FROM_NONE:
            snprintf(from, sizeof from, "%s", d->group == CLF_PARAM_KERNELS ? "built-in" : "CLBlast's database");
            snprintf(value, sizeof value, "%s", d->group == CLF_PARAM_KERNELS ? "0" : "-");
            break;
        case CLF_PARAM_FROM_TABLE:
            snprintf(from, sizeof from, "table, %s: %.100s", clf_tuning_level_str(o->level), o->entry->name);
            break;
        case CLF_PARAM_FROM_FILE: snprintf(from, sizeof from, "tuning file"); break;
        case CLF_PARAM_FROM_SETTING: snprintf(from, sizeof from, "setting %s", d->setting); break;
        }
        char setting[40];
        snprintf(setting, sizeof setting, "%s%s", d->setting ? d->setting : "-",
                 d->setting && d->setting_on == CL_DEVICE_TYPE_CPU ? " (CPUs)" : "");
        printf("%-12s %-24s %7s  %-22s %s\n", clf_param_group_str(d->group), d->name, value, setting, from);
    }
    printf("settings: the variables above override a value when set to a legal one; CLF_TUNING=off "
           "(now %s) leaves GEMM to CLBlast's database and ignores the tuning file\n",
           getenv("CLF_TUNING") ? getenv("CLF_TUNING") : "unset");
    free(f);
}


static void print_params(const struct clf_gemm_params *p)
{
    char buf[1024];
    clf_gemm_params_str(p, buf, sizeof buf);
    for (char *part = strtok(buf, ";"); part; part = strtok(NULL, ";"))
        printf("  %s\n", part + (*part == ' '));
}

static int show(clf_ctx_t *ctx)
{
    struct clf_tuning_info *info = malloc(sizeof *info);
    if (!info)
        return 1;
    const struct clf_device_info *d = clf_ctx_device(ctx);
    (void)clf_tuning_query(ctx, info);  /* a failure is info->file_status, shown below */
    printf("device:      %s (%s, driver %s)\n", d->device_name, d->platform_name, d->driver_version);
    if (d->shaped[0])
        printf("             limits shaped by CLF_DEVICE_LIMITS=%s (its own tuning file)\n", d->shaped);
    if (d->type & CL_DEVICE_TYPE_CPU) {
        char f[160];
        printf("CPU:         %s; %u compute units (the table keys CPUs on these, not on names)\n",
               clf_cpu_features_str(d->cpu_features, f, sizeof f), d->compute_units);
    }
    printf("tuning file: %s (%s)\n", info->path,
           !info->file_present ? "absent" : info->file_status ? "present but refused" : "present");
    if (info->file_present && info->file_status)
        printf("             %s: %s\n", clf_status_str(info->file_status), info->file_message);
    if (info->entry)
        printf("table entry: %s (level: %s)\n", info->entry->name, clf_tuning_level_str(info->level));
    else
        printf("table entry: none for this device (its name, or a CPU's features and cores), its vendor or its type\n");
    if (info->apply_status)
        printf("NOT APPLIED: %s: %s\n             GEMM runs on CLBlast's defaults\n",
               clf_status_str(info->apply_status), info->apply_message);
    switch (info->source) {
    case CLF_TUNING_FILE:
        printf("in force:    tuned, from the file (%s, %.1f minutes, %u candidates, CLBlast %s)\n",
               info->record.created, info->record.minutes, info->record.candidates,
               info->record.clblast[0] ? info->record.clblast : "?");
        print_params(&info->gemm);
        break;
    case CLF_TUNING_TABLE:
        printf("in force:    the repository's table (%s level)\n", clf_tuning_level_str(info->level));
        print_params(&info->gemm);
        break;
    case CLF_TUNING_CLBLAST:
        printf("in force:    CLBlast's own database: generic parameters unless CLBlast knows this device\n");
        break;
    case CLF_TUNING_OFF:
        printf("in force:    nothing of ours: CLF_TUNING=off; CLBlast's own database\n");
        break;
    }
    if (info->source == CLF_TUNING_FILE && info->record.nshapes) {
        printf("\nmeasured when tuned (GFLOP/s):\n%-22s %6s %6s %6s %9s %9s %9s\n", "shape", "m", "n", "k",
               "CLBlast", "tuned", "OpenBLAS");
        for (int i = 0; i < info->record.nshapes; i++) {
            const struct clf_tuning_shape *s = &info->record.shapes[i];
            printf("%-22s %6u %6u %6u %9.1f %9.1f %9.1f\n", s->name, s->m, s->n, s->k, s->gflops_before,
                   s->gflops_after, s->gflops_reference);
        }
    }
    print_in_force(ctx);
    struct clf_attention_tuning at;
    if (clf_attention_tuning_get(ctx, 64, &at) == CLF_OK)
        printf("attention at d_k 64, clamped to the device: tile_q %zu, tile_k %zu, lanes %zu, from '%s'%s\n",
               at.tile_q, at.tile_k, at.lanes, at.entry ? at.entry : "?", at.tuned ? "" : " (generic)");
    free(info);
    return 0;
}

/* ------------------------------------------------------------ tuning */

/* The baseline is CLBlast's own choice and our kernels' table values:
 * nothing applied, no setting in force. */
static void baseline_settings(void)
{
    size_t n;
    const struct clf_param_def *defs = clf_param_defs(&n);
    clf_setting_set("CLF_TUNING", "off");
    for (size_t i = 0; i < n; i++)
        if (defs[i].setting)
            clf_setting_set(defs[i].setting, NULL);
}

/* What was in force before: the earlier tuning file's parameters, the
 * table's GEMM entry; tried first so that tuning again never ends worse. */
struct prior {
    struct clf_gemm_params gemm[2];
    int ngemm;
    struct clf_kernel_params kernels;
};

static void prior_load(const struct clf_device_info *dev, struct prior *p)
{
    char path[CLF_PATH_MAX];
    struct clf_tuning_record *prev = malloc(sizeof *prev);
    *p = (struct prior){0};
    if (prev && clf_tuning_path(dev, path, sizeof path) == CLF_OK && clf_tuning_load(path, dev, prev) == CLF_OK) {
        p->gemm[p->ngemm++] = prev->gemm;
        p->kernels = prev->kernels;
    }
    free(prev);
    const struct clf_tuning_entry *e = clf_tuning_table_lookup(NULL, 0, dev, NULL);
    if (e)
        p->gemm[p->ngemm++] = *e->gemm;
}

static void record_fill(struct clf_tuning_record *rec, const struct clf_device_info *dev,
                        const struct clf_gemm_tune_result *g, const struct clf_kernel_tune_result *k, double start)
{
    snprintf(rec->platform, sizeof rec->platform, "%s", dev->platform_name);
    snprintf(rec->device, sizeof rec->device, "%s", dev->device_name);
    snprintf(rec->driver, sizeof rec->driver, "%s", dev->driver_version);
    cli_clblast_version(rec->clblast, sizeof rec->clblast);
    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(rec->created, sizeof rec->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    rec->gemm = g->best;
    rec->kernels = k->best;
    rec->candidates = g->tried + k->tried;
    rec->nshapes = g->nshapes;
    memcpy(rec->shapes, g->shapes, sizeof rec->shapes);
    rec->minutes = (clf_now() - start) / 60;
}

static void report(const struct clf_tuning_record *rec, const struct clf_gemm_tune_result *g,
                   const struct clf_kernel_tune_result *kr, bool cpu, const char *path)
{
    printf("\n%-22s %6s %6s %6s %9s %9s %9s   (GFLOP/s)\n", "shape", "m", "n", "k", "CLBlast", "tuned",
           cpu ? "OpenBLAS" : "");
    for (int i = 0; i < rec->nshapes; i++) {
        const struct clf_tuning_shape *s = &rec->shapes[i];
        printf("%-22s %6u %6u %6u %9.1f %9.1f", s->name, s->m, s->n, s->k, s->gflops_before, s->gflops_after);
        if (cpu)
            printf(" %9.1f", s->gflops_reference);
        printf("\n");
    }
    printf("\nattention, %s: %.2f ms built-in, %.2f ms with tiles %ux%u\n", kr->attn_case, kr->attn_before_s * 1e3,
           kr->attn_after_s * 1e3, kr->best.attn_tile_q, kr->best.attn_tile_k);
    if (kr->best.rows_wg)
        printf("row-wise ops, %s: %.2f ms built-in, %.2f ms with work-groups of at most %u\n", kr->rows_case,
               kr->rows_before_s * 1e3, kr->rows_after_s * 1e3, kr->best.rows_wg);
    else
        printf("row-wise ops, %s: %.2f ms built-in, which no candidate beat\n", kr->rows_case, kr->rows_before_s * 1e3);
    printf("\n%u candidates in %.1f minutes (%u failed the check or the build, %u pruned)\n", rec->candidates,
           rec->minutes, g->failed + kr->failed, g->pruned);
    print_params(&rec->gemm);
    printf("  Kernels ATTN_TILE_Q=%u ATTN_TILE_K=%u ROWS_WG=%u%s\n", kr->best.attn_tile_q, kr->best.attn_tile_k,
           kr->best.rows_wg, kr->best.rows_wg ? "" : " (0: built-in)");
    printf("saved to %s; every new context on this device applies it\n", path);
}

/* Ctrl-C (or SIGTERM) ends the searches early: the callbacks below ask the
 * library to stop, and what was found so far is measured and saved. The
 * handler is reset as it runs, so that a second Ctrl-C ends the process. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void catch_signals(bool on)
{
    struct sigaction sa = {.sa_handler = on ? on_signal : SIG_DFL, .sa_flags = on ? SA_RESETHAND : 0};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* What the command shows of the searches: the GEMM header once its shapes
 * are known, and a progress line on stderr, rewritten in place, per
 * kernel searched (none with --quiet). */
struct view {
    const struct tune_opts *o;
    const struct clf_device_info *dev;
    bool header, line, told;
    enum clf_tune_stage stage;
};

/* Whether to stop, said once on stderr. */
static int stop(struct view *v)
{
    if (interrupted && !v->told) {
        fprintf(stderr, "%sclformer: interrupted: measuring and saving the best found so far (Ctrl-C again to "
                        "quit now)\n", v->line ? "\n" : "");
        v->told = true;
        v->line = false;
    }
    return interrupted;
}

/* our kernels' search: a line per candidate timed */
static int on_kernels(void *user, const struct clf_tune_progress *p)
{
    struct view *v = user;
    if (stop(v))
        return 1;
    if (v->o->quiet || !p->candidate)
        return 0;
    int left = (int)p->left_s;
    fprintf(stderr, "\r[tune kernels] %-24s %8.2f ms (best %.2f ms); %d:%02d left ", p->candidate,
            p->candidate_s * 1e3, p->best_s * 1e3, left / 60, left % 60);
    fflush(stderr);
    v->line = true;
    return 0;
}

static int on_gemm(void *user, const struct clf_tune_progress *p)
{
    struct view *v = user;
    if (!v->header) {
        printf("tuning SGEMM on %s (%s) for %.1f minutes, %d shapes of T=%ld tokens\n", v->dev->device_name,
               v->dev->platform_name, v->o->minutes, p->nshapes, v->o->tokens);
        fflush(stdout);
        v->header = true;
    }
    if (v->line && p->stage != v->stage) {
        fprintf(stderr, "\n");
        v->line = false;
    }
    v->stage = p->stage;
    if (stop(v))
        return 1;
    if (v->o->quiet || (p->stage != CLF_TUNE_XGEMM && p->stage != CLF_TUNE_XGEMM_DIRECT))
        return 0;
    int left = (int)p->left_s;
    fprintf(stderr, "\r[tune %s] %u tried (%u failed, %u pruned); best indirect %.1f, direct %.1f GFLOP/s; %d:%02d left ",
            clf_tune_stage_str(p->stage), p->tried, p->failed, p->pruned, p->best_xgemm_gflops, p->best_direct_gflops,
            left / 60, left % 60);
    fflush(stderr);
    v->line = true;
    return 0;
}

/* The search: our kernels first, a short fixed list whose leftover time
 * goes to GEMM; then GEMM; the result saved and reported. */
static int tune(clf_ctx_t *ctx, const struct tune_opts *o)
{
    const struct clf_device_info *dev = clf_ctx_device(ctx);
    struct prior prior;
    prior_load(dev, &prior);
    struct clf_kernel_tune_result kr;
    struct clf_gemm_tune_result *gr = calloc(1, sizeof *gr);
    struct clf_tuning_record *rec = calloc(1, sizeof *rec);
    char path[CLF_PATH_MAX];
    clf_status st;
    int rc = 1;
    if (!gr || !rec) {
        rc = cli_fail(NULL, CLF_ERR_MEMORY, "tune");
        goto out;
    }
    double start = clf_now(), deadline = start + o->minutes * 60;
    struct view view = {.o = o, .dev = dev};
    struct clf_tune_opts to = clf_tune_opts_default();
    to.seconds = 0.15 * (deadline - start);
    to.prior_kernels = &prior.kernels;
    to.progress = on_kernels;
    to.user = &view;
    catch_signals(true);
    st = clf_kernel_params_tune(ctx, &to, &kr);
    if (view.line)
        fprintf(stderr, "\n");
    view.line = false;
    if (st) {
        catch_signals(false);
        fprintf(stderr, "clformer: tuning the attention and row-wise kernels failed: %s\n", clf_ctx_error(ctx));
        goto out;
    }
    double left = deadline - clf_now();
    to.seconds = left > 0 ? left : 0;
    to.tokens = (size_t)o->tokens;
    to.prior = prior.gemm;
    to.nprior = prior.ngemm;
    to.progress = on_gemm;
    st = clf_gemm_params_tune(ctx, &to, gr);
    catch_signals(false);
    if (view.line)
        fprintf(stderr, "\n");
    if (st) {
        rc = cli_fail(ctx, st, "tuning SGEMM");
        goto out;
    }
    record_fill(rec, dev, gr, &kr, start);
    if ((st = clf_tuning_path(dev, path, sizeof path)) || (st = clf_tuning_save(path, rec))) {
        rc = cli_fail(NULL, st, "saving the tuning file");
        goto out;
    }
    report(rec, gr, &kr, dev->type & CL_DEVICE_TYPE_CPU, path);
    rc = 0;
out:
    free(gr);
    free(rec);
    return rc;
}

int clf_cmd_tune(int argc, char **argv)
{
    struct tune_opts o;
    if (!parse_args(argc, argv, &o))
        return 2;
    if (o.help) {
        printf(TUNE_USAGE "  searches CLBlast's SGEMM parameters and clformer's own kernels' (attention tiles,\n"
                          "  the row-wise ops' work-group cap) for one device within --minutes (default 5),\n"
                          "  timing batches of --tokens tokens (default 2560), and keeps the best in the\n"
                          "  device's tuning file, which every later context applies.\n"
                          "  --show: every tunable in force and where its value came from; --reset: delete\n"
                          "  the device's tuning file. Ctrl-C ends the search early and saves the best found\n"
                          "  so far; a second Ctrl-C quits at once.\n");
        return 0;
    }
    if (!o.show && !o.reset)
        baseline_settings();
    clf_ctx_t *ctx = cli_open(o.device);
    if (!ctx)
        return 1;
    int rc = 0;
    if (o.reset) {
        bool removed;
        clf_status st = clf_tuning_reset(ctx, &removed);
        if (st)
            rc = cli_fail(NULL, st, "tune --reset");
        else
            printf("%s\n", removed ? "tuning file deleted: the next context runs with the table or CLBlast's "
                                     "parameters"
                                   : "no tuning file for this device: nothing to delete");
    }
    if (o.show && !rc)
        rc = show(ctx);
    /* what is tuned is CLBlast's kernels, whichever backend runs GEMMs */
    if (!o.show && !o.reset)
        rc = clf_ctx_gemm_set(ctx, CLF_GEMM_CLBLAST) ? 1 : tune(ctx, &o);
    clf_ctx_free(ctx);
    return rc;
}
