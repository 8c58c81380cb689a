/* bench_all.c: `clformer bench all`: every registered benchmark in one run,
 * with what it takes to compare the figures with another machine's: the
 * device and driver, OpenCL C version, CLBlast's and OpenBLAS's versions,
 * the GEMM tuning in force, the host's CPU and load, and the figures of a
 * peer (PyTorch) run beside it. Each benchmark hands back its result, which
 * is printed as its table, or with --json as one member of one object:
 *   {"suite": "clformer bench all", "meta": {…}, "benches": [{"bench": …}, …],
 *    "runs": [{"bench", "exit", "seconds"}], "peers": [{…}]}
 * A benchmark that fails appears as {"bench": NAME, "error": …} and the
 * others still run. With --seconds S none starts once S seconds have
 * passed: each left out is an "error" member and {"bench", "started":
 * false} in runs, so that a run held to a time budget ends in a whole
 * report instead of being killed halfway through it.
 *
 * That is the older report (--json). Without --json, bench all writes a v1
 * report (report.h, bench/README.md): every benchmark through runner.c,
 * with --repetitions, --warmup and --format, the peer file's lines as
 * rows, and what is left out or fails named on stderr. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include <clformer/advanced/json.h>

/* The first line of /proc/cpuinfo naming the model, or "". */
static void cpu_model(char *out, size_t len)
{
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *v = strchr(line, ':');
            if (v) {
                v += 1 + (v[1] == ' ');
                v[strcspn(v, "\n")] = 0;
                snprintf(out, len, "%s", v);
            }
            break;
        }
    }
    if (f)
        fclose(f);
}

static void json_meta(struct cli_json *w, clf_ctx_t *ctx, bool quick)
{
    const struct clf_device_info *d = clf_ctx_device(ctx);
    char buf[512], host[256] = "";
    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cli_json_obj(w, "meta");
    cli_json_str(w, "date", buf);
    struct measure_device dev;
    measure_device_get(ctx, &dev);
    measure_device_json(w, &dev);
    cli_json_str(w, "opencl_c", d->c_version);
    cli_clblast_version(buf, sizeof buf);
    cli_json_str(w, "clblast", buf[0] ? buf : "unknown");
    cli_json_str(w, "openblas", openblas_get_config());
    cli_json_num(w, "openblas_threads", "%d", openblas_get_num_threads());
    gethostname(host, sizeof host - 1);
    cpu_model(buf, sizeof buf);
    cli_json_obj(w, "host");
    cli_json_str(w, "name", host);
    cli_json_str(w, "cpu", buf);
    double load[3] = {0, 0, 0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = load[1] = load[2] = 0;
        fclose(la);
    }
    cli_json_num(w, "cpus_online", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    cli_json_arr(w, "load_average");
    for (int i = 0; i < 3; i++)
        cli_json_num(w, NULL, "%.2f", load[i]);
    cli_json_end(w);
    cli_json_end(w);

    struct clf_tuning_info *ti = malloc(sizeof *ti);
    if (ti) {
        (void)clf_tuning_query(ctx, ti);  /* a failure is ti->file_status, printed below */
        cli_json_obj(w, "tuning");
        cli_json_str(w, "source", clf_tuning_source_str(ti->source));
        cli_json_str(w, "table_entry", ti->entry ? ti->entry->name : "");
        cli_json_str(w, "table_level", clf_tuning_level_str(ti->level));
        cli_json_str(w, "file", ti->path);
        cli_json_str(w, "file_status", !ti->file_present ? "absent" : clf_status_str(ti->file_status));
        if (ti->apply_status) {
            cli_json_str(w, "apply_status", clf_status_str(ti->apply_status));
            cli_json_str(w, "apply_message", ti->apply_message);
        }
        if (ti->source == CLF_TUNING_FILE || ti->source == CLF_TUNING_TABLE) {
            clf_gemm_params_str(&ti->gemm, buf, sizeof buf);
            cli_json_str(w, "gemm", buf);
        }
        if (ti->source == CLF_TUNING_FILE) {
            cli_json_str(w, "tuned", ti->record.created);
            cli_json_num(w, "tune_minutes", "%.1f", ti->record.minutes);
        }
        cli_json_obj(w, "kernels");
        cli_json_num(w, "attn_tile_q", "%u", ti->kernels.attn_tile_q);
        cli_json_num(w, "attn_tile_k", "%u", ti->kernels.attn_tile_k);
        cli_json_num(w, "rows_wg", "%u", ti->kernels.rows_wg);
        cli_json_end(w);
        cli_json_end(w);
        free(ti);
    }
    cli_json_bool(w, "quick", quick);
    cli_json_end(w);
}

/* Copies each JSON line of the peer file; others are reported and skipped. */
static void json_peers(struct cli_json *w, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "clformer: cannot read the peer file %s; no peers in the report\n", path);
        return;
    }
    char line[8192], err[256];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strcspn(line, "\r\n");
        line[len] = 0;
        if (len == 0)
            continue;
        if (line[0] != '{' || !clf_json_check(line, len, err, sizeof err)) {
            fprintf(stderr, "clformer: %s:%d is not a JSON object%s%s; skipped\n", path, lineno, err[0] ? ": " : "",
                    line[0] == '{' ? err : "");
            continue;
        }
        cli_json_raw(w, NULL, line);
    }
    fclose(f);
}

/* Whether --only (a,b,…) names the benchmark; NULL names them all. */
static bool chosen(const char *only, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = only ? strstr(only, name) : NULL; p; p = strstr(p + 1, name))
        if ((p == only || p[-1] == ',') && (p[nl] == 0 || p[nl] == ','))
            return true;
    return only == NULL;
}

/* The peer file's lines as figures (n 1), through the reader that reads
 * older reports' "peers": each line is one peer's record. */
static void v1_peers(struct report_writer *w, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "clformer: cannot read the peer file %s; no peers in the report\n", path);
        return;
    }
    char line[8192], doc[8300], err[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0])
            continue;
        struct report r = {0};
        snprintf(doc, sizeof doc, "{\"benches\": [], \"peers\": [%s]}", line);
        if (!report_add_record(&r, doc, strlen(doc), "", err, sizeof err))
            fprintf(stderr, "clformer: %s:%d: %s; skipped\n", path, lineno, err);
        else
            report_write_rows(w, r.items, r.count);
        report_free(&r);
    }
    fclose(f);
}

/* bench all as a v1 report: every benchmark through the runner, with
 * repetitions; a failed or unstarted one is named on stderr and counted. */
/* Whether this build cannot run the bench: serve without libmicrohttpd,
 * which it says. */
static bool left_out(const char *name)
{
    if (strcmp(name, "serve") || bench_has_serve())
        return false;
    fprintf(stderr, "clformer bench all: serve left out: this clformer was built without libmicrohttpd\n");
    return true;
}

static int all_v1(clf_ctx_t *ctx, const struct bench_runner_opts *ro, bool quick, const char *device,
                  const char *peer, const char *only, double budget, double start, int argc, char **argv)
{
    struct report_identity *id = calloc(1, sizeof *id);
    if (!id) {
        clf_ctx_free(ctx);
        return 1;
    }
    bench_identity_get(ctx, id);
    clf_ctx_free(ctx);
    id->repetitions = ro->repetitions;
    id->warmup = ro->warmup;
    snprintf(id->note, sizeof id->note, "%s", ro->note ? ro->note : "");
    id->quick = quick;
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(id->command);
        snprintf(id->command + used, sizeof id->command - used, "%s%s", i ? " " : "all", i ? argv[i] : "");
    }
    struct report_writer w;
    report_write_begin(&w, stdout, ro->fmt, id);
    char *sub[8] = {NULL};
    int nsub = 1, failures = 0, unstarted = 0, nruns = 0;
    if (quick)
        sub[nsub++] = "--quick";
    if (device) {
        sub[nsub++] = "--device";
        sub[nsub++] = (char *)device;
    }
    size_t nb;
    const struct bench_entry *benches = bench_list(&nb);
    for (size_t i = 0; i < nb; i++) {
        if (!benches[i].measure || !chosen(only, benches[i].name))
            continue;
        if (left_out(benches[i].name))
            continue;
        nruns++;
        if (budget >= 0 && clf_now() - start >= budget) {
            fprintf(stderr, "clformer bench all: %s not started: --seconds %g spent\n", benches[i].name, budget);
            unstarted++;
            continue;
        }
        if (ro->fmt == REPORT_TABLE) {
            printf("\n== bench %s ==\n", benches[i].name);
            fflush(stdout);
        }
        sub[0] = (char *)benches[i].name;
        failures += bench_runner_measure(&benches[i], nsub, sub, ro, &w) != 0;
    }
    if (peer)
        v1_peers(&w, peer);
    if (ro->fmt == REPORT_TABLE)
        printf("\n");
    bool ok = report_write_end(&w);
    free(id);
    if (failures)
        fprintf(stderr, "clformer: %d of %d benchmarks failed\n", failures, nruns);
    if (unstarted)
        fprintf(stderr, "clformer: %d of %d benchmarks not started: --seconds %g spent\n", unstarted, nruns, budget);
    return failures || !ok ? 1 : 0;
}

const char bench_all_usage[] =
    "clformer bench all [--format table|json|jsonl|csv|md|sql] [--repetitions N] [--warmup N] [--note TEXT] "
    "[--json] [--quick] [--device D] [--peer FILE] [--only a,b] [--seconds S]";

int bench_all(int argc, char **argv)
{
    const char *usage = bench_all_usage;
    bool json = false, quick = false, bad = false;
    const char *device = NULL, *peer = NULL, *only = NULL;
    double budget = -1;  /* --seconds: none starts after it; < 0: no limit */
    struct bench_runner_opts ro;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args)
        return 1;
    memcpy(args, argv, (size_t)argc * sizeof *args);
    if (!bench_runner_parse(&argc, args, &ro)) {
        free(args);
        fprintf(stderr, "usage: %s\n", usage);
        return 2;
    }
    argv = args;  /* freed at the end: a few pointers */
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!cli_opt(argc, argv, &i, "--device", &device, &bad) &&
                 !cli_opt(argc, argv, &i, "--peer", &peer, &bad) && !cli_opt(argc, argv, &i, "--only", &only, &bad) &&
                 !cli_opt_number(argc, argv, &i, "--seconds", 0, 1e7, false, &budget, &bad)) {
            fprintf(stderr, "clformer: unknown option '%s'\n", argv[i]);
            bad = true;
        }
    }
    if (!bad && json && ro.v1) {
        fprintf(stderr, "clformer bench all: --json writes the older report; for a v1 report with --repetitions or "
                        "--warmup, use --format json\n");
        bad = true;
    }
    if (bad) {
        fprintf(stderr, "usage: %s\n", usage);
        free(args);
        return 2;
    }
    const double start = clf_now();
    clf_ctx_t *ctx = cli_open(device);
    if (!ctx) {
        free(args);
        return 1;
    }
    if (!json) {
        int rc = all_v1(ctx, &ro, quick, device, peer, only, budget, start, argc, argv);
        free(args);
        return rc;
    }
    size_t nb;
    const struct bench_entry *benches = bench_list(&nb);
    struct cli_json w;
    cli_json_init(&w, stdout, false);
    if (json) {
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "suite", "clformer bench all");
        json_meta(&w, ctx, quick);
        cli_json_break(&w, "\n");
        cli_json_arr(&w, "benches");
    } else {
        const struct clf_device_info *d = clf_ctx_device(ctx);
        struct clf_tuning_info *ti = malloc(sizeof *ti);
        printf("clformer bench all on %s (%s, driver %s)", d->device_name, d->platform_name, d->driver_version);
        char gemm[96];
        cli_gemm_describe(ctx, gemm, sizeof gemm);
        printf("; GEMM: %s", gemm);
        if (ti && clf_tuning_query(ctx, ti) == CLF_OK)
            printf("; CLBlast tuning: %s", clf_tuning_source_str(ti->source));
        printf("\n");
        free(ti);
    }
    clf_ctx_free(ctx);

    char *sub[8];
    int nsub = 0;
    sub[nsub++] = NULL;  /* the benchmark's name, set below */
    if (quick)
        sub[nsub++] = "--quick";
    if (device) {
        sub[nsub++] = "--device";
        sub[nsub++] = (char *)device;
    }
    struct { const char *name; int rc; double seconds; bool started; } runs[64];
    int nruns = 0, failures = 0, unstarted = 0;
    for (size_t i = 0; i < nb && nruns < 64; i++) {
        const struct bench_entry *b = &benches[i];
        if (!b->measure)
            continue;
        if (only) {
            size_t nl = strlen(b->name);
            const char *p = strstr(only, b->name);
            if (!p || (p != only && p[-1] != ',') || (p[nl] && p[nl] != ','))
                continue;
        }
        if (left_out(b->name))
            continue;
        runs[nruns].name = b->name;
        if (budget >= 0 && clf_now() - start >= budget) {
            if (json) {
                char why[64];
                snprintf(why, sizeof why, "not started: --seconds %g spent", budget);
                cli_json_break(&w, "\n");
                cli_json_obj(&w, NULL);
                cli_json_str(&w, "bench", b->name);
                cli_json_str(&w, "error", why);
                cli_json_end(&w);
            }
            runs[nruns++].started = false;
            unstarted++;
            continue;
        }
        sub[0] = (char *)b->name;
        sub[nsub] = NULL;
        double t0 = clf_now();
        if (!json) {
            printf("\n== bench %s ==\n", b->name);
            fflush(stdout);
        }
        struct bench_result res = {0};
        int rc = b->measure(nsub, sub, &res);
        if (json) {
            cli_json_break(&w, "\n");
            if (rc == 0) {
                cli_json_key(&w, NULL);
                res.json(stdout, res.record);
            } else {
                char why[32];
                snprintf(why, sizeof why, "exit status %d", rc);
                cli_json_obj(&w, NULL);
                cli_json_str(&w, "bench", b->name);
                cli_json_str(&w, "error", why);
                cli_json_end(&w);
            }
        } else if (rc == 0) {
            res.table(stdout, res.record);
        }
        bench_result_free(&res);
        runs[nruns].started = true;
        runs[nruns].rc = rc;
        runs[nruns].seconds = clf_now() - t0;
        failures += rc != 0;
        nruns++;
        fflush(stdout);
    }
    if (json) {
        cli_json_end(&w);
        cli_json_break(&w, "\n");
        cli_json_arr(&w, "runs");
        for (int i = 0; i < nruns; i++) {
            cli_json_obj(&w, NULL);
            cli_json_str(&w, "bench", runs[i].name);
            if (runs[i].started) {
                cli_json_num(&w, "exit", "%d", runs[i].rc);
                cli_json_num(&w, "seconds", "%.1f", runs[i].seconds);
            } else {
                cli_json_bool(&w, "started", false);
            }
            cli_json_end(&w);
        }
        cli_json_end(&w);
        cli_json_break(&w, "\n");
        cli_json_arr(&w, "peers");
        if (peer)
            json_peers(&w, peer);
        cli_json_end(&w);
        cli_json_end(&w);
        printf("\n");
    } else {
        printf("\n");
        for (int i = 0; i < nruns; i++) {
            if (runs[i].started)
                printf("%-12s %s (%.0f s)\n", runs[i].name, runs[i].rc ? "FAILED" : "ok", runs[i].seconds);
            else
                printf("%-12s not started (--seconds %g spent)\n", runs[i].name, budget);
        }
    }
    if (failures)
        fprintf(stderr, "clformer: %d of %d benchmarks failed\n", failures, nruns);
    if (unstarted)
        fprintf(stderr, "clformer: %d of %d benchmarks not started: --seconds %g spent\n", unstarted, nruns, budget);
    free(args);
    return failures ? 1 : 0;
}
