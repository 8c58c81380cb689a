/* bench.c: `clformer bench WHAT`: the table of benchmarks, its --help and
 * dispatch, and the shared timing helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "cli.h"
#include <clformer/advanced/json.h>
#include "dist.h"

bool bench_config(const char *preset, struct clf_model_config *c)
{
    clf_status st = clf_model_config_preset(c, preset);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "--preset");
        return false;
    }
    c->vocab = 8000;
    return true;
}

bool bench_model(clf_ctx_t *ctx, const char *preset, struct clf_model_config *c, clf_model_t **m)
{
    clf_status st;
    if (!bench_config(preset, c))
        return false;
    if ((st = clf_model_init(ctx, m, c, 1)) != CLF_OK) {
        cli_fail_memory(ctx, st, "creating the model", "--preset");
        return false;
    }
    return true;
}

struct clf_model_batch bench_batch(const struct clf_model_config *c, int32_t *ids, size_t b, size_t n)
{
    uint32_t seed = 5 + 7919 * (uint32_t)dist_rank();  /* each rank its own tokens */
    for (size_t i = 0; i < 3 * b * n; i++)
        ids[i] = 4 + (int32_t)(clf_rand24(&seed) % (unsigned)(c->vocab - 4));
    return (struct clf_model_batch){b, n, n, ids, ids + b * n, ids + 2 * b * n};
}

const char *const bench_categories[3] = {"gemm", "attention", "other"};

int bench_category(const char *kernel)
{
    if (strstr(kernel, "gemm"))
        return 0;
    if (strstr(kernel, "attn") || strstr(kernel, "attention") || strstr(kernel, "flash"))
        return 1;
    return 2;
}

double bench_peer_figure(const char *path, const char *what, const char *const *keys, const double *values,
                         size_t nkeys, const char *field)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[8192];
    double figure = 0;
    while (f && fgets(line, sizeof line, f)) {
        struct clf_json j;
        char err[128];
        if (!clf_json_parse(line, strcspn(line, "\r\n"), &j, err, sizeof err))
            continue;  /* bench all reports bad lines; here they only do not count */
        const char *w = clf_json_str(&j, "what");
        bool match = w && !strcmp(w, what);
        double v;
        for (size_t i = 0; i < nkeys && match; i++)
            match = clf_json_num(&j, keys[i], &v) && v == values[i];
        if (match && clf_json_num(&j, field, &v))
            figure = v;
        clf_json_free(&j);
    }
    if (f)
        fclose(f);
    return figure;
}

void bench_memory_begin(struct bench_memory *m)
{
    memset(m, 0, sizeof *m);
    bench_energy_begin(&m->energy, NULL);
    clf_memory_peak_reset();
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        m->rss_reset = fputs("5", f) >= 0;  /* resets VmHWM, the resident peak (Linux 4.0+) */
        m->rss_reset &= fclose(f) == 0;
    }
}

void bench_memory_end(struct bench_memory *m)
{
    struct clf_memory_stats s;
    clf_memory_stats(&s);
    m->device_peak_mib = (double)s.device_peak_bytes / (1 << 20);
    /* VmHWM follows the reset above; ru_maxrss (KiB on Linux) does not */
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = atof(line + 6);
    if (f)
        fclose(f);
    if (kib < 0) {
        struct rusage u;
        m->rss_reset = false;
        kib = getrusage(RUSAGE_SELF, &u) == 0 ? (double)u.ru_maxrss : 0;
    }
    m->max_rss_mib = kib / 1024;
    m->energy_j = bench_energy_end(&m->energy);
}

void bench_memory_json(struct cli_json *w, const struct bench_memory *m)
{
    cli_json_obj(w, "memory");
    cli_json_str(w, "case", "memory");
    cli_json_num(w, "device_peak_mib", "%.1f", m->device_peak_mib);
    cli_json_num(w, "max_rss_mib", "%.1f", m->max_rss_mib);
    cli_json_end(w);
    cli_json_obj(w, "energy");
    cli_json_str(w, "case", "energy");
    cli_json_real(w, "energy_j", m->energy_j);  /* null where there is no counter, never 0 */
    cli_json_end(w);
}

bool bench_parse(int argc, char **argv, struct bench_opts *o, const char *usage)
{
    memset(o, 0, sizeof *o);
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--quick"))
            o->quick = true;
        else if (!cli_opt(argc, argv, &i, "--device", &o->device, &bad)) {
            fprintf(stderr, "clformer: unknown option '%s'\n", argv[i]);
            bad = true;
        }
    }
    if (bad)
        fprintf(stderr, "usage: %s\n", usage);
    return !bad;
}

void bench_result_free(struct bench_result *r)
{
    free(r->record);
    memset(r, 0, sizeof *r);
}

/* A v1 report of one benchmark (runner.c): identity from a context of its
 * own, then the sweep's cases; only rank 0 of an MPI job writes. */
static int run_v1(const struct bench_entry *b, int argc, char **argv, const struct bench_runner_opts *o)
{
    const char *device = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--device"))
            device = argv[i + 1];
    struct report_identity *id = calloc(1, sizeof *id);
    if (!id)
        return 1;
    bool writer = dist_rank() == 0;
    if (writer) {
        clf_ctx_t *ctx = cli_open(device);
        if (!ctx) {
            free(id);
            return 1;
        }
        bench_identity_get(ctx, id);
        clf_ctx_free(ctx);
        id->repetitions = o->repetitions;
        id->warmup = o->warmup;
        snprintf(id->note, sizeof id->note, "%s", o->note ? o->note : "");
        for (int i = 0; i < argc; i++) {
            size_t used = strlen(id->command);
            snprintf(id->command + used, sizeof id->command - used, "%s%s", i ? " " : "", argv[i]);
            id->quick |= !strcmp(argv[i], "--quick");
            if (!strcmp(argv[i], "--model"))
                snprintf(id->weights, sizeof id->weights, "model");
        }
    }
    /* a rank other than 0 measures with the others and writes nowhere */
    FILE *out = writer ? stdout : fopen("/dev/null", "w");
    if (!out) {
        free(id);
        return 1;
    }
    struct report_writer w;
    report_write_begin(&w, out, writer ? o->fmt : REPORT_JSONL, id);
    int rc = bench_runner_measure(b, argc, argv, o, &w);
    if (!report_write_end(&w)) {
        fprintf(stderr, "clformer: out of host memory: rows were lost\n");
        rc = rc ? rc : 1;
    }
    if (!writer)
        fclose(out);
    free(id);
    return rc;
}

int bench_run(const struct bench_entry *b, int argc, char **argv)
{
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args)
        return 1;
    int nargs = 0;
    bool json = false;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && !strcmp(argv[i], "--json"))
            json = true;
        else
            args[nargs++] = argv[i];
    }
    struct bench_runner_opts o;
    if (!bench_runner_parse(&nargs, args, &o)) {
        free(args);
        return 2;
    }
    if (json && o.v1) {
        fprintf(stderr, "clformer bench %s: --json prints the benchmark's own record; for a v1 report with "
                        "--repetitions or --warmup, use --format json\n", b->name);
        free(args);
        return 2;
    }
    if (!json) {  /* the v1 report, a table by default */
        int rc = run_v1(b, nargs, args, &o);
        free(args);
        return rc;
    }
    struct bench_result r = {0};
    int rc = b->measure(nargs, args, &r);
    free(args);
    if (rc == 0 && r.record) {  /* none: a rank other than 0 of an MPI job, or bench translate --export */
        r.json(stdout, r.record);
        printf("\n");
    }
    bench_result_free(&r);
    return rc;
}

static const struct bench_entry benches[] = {
    {"peak", bench_peak, NULL, "the device's roofs, as clpeak: float32 FMA GFLOP/s, copy and triad GB/s",
     bench_peak_usage},
    {"gemm", bench_gemm, NULL, "SGEMM GFLOP/s through clf_gemm on a Transformer's shapes (OpenBLAS beside it)",
     bench_gemm_usage},
    {"attention", bench_attention, NULL, "attention's tiled kernels against the naive path, n = 128 to 8192",
     bench_attention_usage},
    {"ops", bench_ops, NULL, "the Transformer's device ops at training shapes, against the copy roof",
     bench_ops_usage},
    {"train", bench_train, NULL, "target tokens/s of full training steps of a preset, and where the time goes",
     bench_train_usage},
    {"translate", bench_translate, NULL, "sentences/s greedy and beam 4; with --model, a checkpoint's speed and BLEU",
     bench_translate_usage},
    {"allreduce", bench_allreduce, NULL, "what summing one update's gradients across MPI ranks costs",
     bench_allreduce_usage},
    {"serve", bench_serve, NULL, "MLPerf's Offline, SingleStream and Server against a `clformer serve` it starts",
     bench_serve_usage},
    {"all", NULL, bench_all, "every benchmark in one report, with what comparing machines needs",
     bench_all_usage},
    {"compare", NULL, bench_compare, "reports side by side: ratios to a baseline, noise marked, an SVG chart",
     bench_compare_usage},
    {"db", NULL, bench_compare, "every v1 report under a folder (bench/results) as one Markdown table",
     bench_db_usage},
    {"plot", NULL, bench_plot, "SVG charts of v1 reports: a bar chart per metric, the sweeps as lines",
     bench_plot_usage},
};

const struct bench_entry *bench_list(size_t *n)
{
    *n = sizeof benches / sizeof benches[0];
    return benches;
}

/* The options every measuring benchmark takes (bench_run, runner.c), for
 * the help texts below. */
static void common_options(FILE *f)
{
    fprintf(f, "  --format table|json|jsonl|csv|md|sql  a v1 report in that form (default table)\n"
               "  --repetitions N  whole runs of each case (default 1), reported as median and spread\n"
               "  --warmup N       runs left out first (default 0)\n"
               "  --note TEXT      a word on the machine, in the report's host record\n"
               "  --json           the benchmark's own record as one JSON object instead of a report\n"
               "  --device D       the OpenCL device: its index in `clformer devices`, gpu, cpu, or part of its name\n"
               "  --quick          smaller sizes and fewer cases, for a smoke test\n");
}

static bool is_help(const char *a)
{
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

/* `clformer bench --help`: every WHAT with its line, and the common
 * options; on stdout, as every command's --help. */
static void usage(FILE *f)
{
    fprintf(f, "usage: clformer bench WHAT [--format table|json|jsonl|csv|md|sql] [--repetitions N] [--warmup N]\n"
               "                      [--note TEXT] [--json] [--device D] [--quick] [WHAT's own options]\n"
               "  measures one thing and prints a report (bench/README.md); `clformer bench WHAT --help`\n"
               "  prints WHAT's own options. WHAT is one of:\n");
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
        fprintf(f, "  %-10s %s\n", benches[i].name, benches[i].summary);
    fprintf(f, "options of the measuring ones (all but compare, db and plot):\n");
    common_options(f);
}

int clf_cmd_bench(int argc, char **argv)
{
    if (argc >= 2 && is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2) {
        for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) {
            const struct bench_entry *b = &benches[i];
            if (strcmp(argv[1], b->name))
                continue;
            /* `bench WHAT --help`: its usage line on stdout, before anything
             * is opened or measured */
            for (int k = 2; k < argc; k++)
                if (is_help(argv[k])) {
                    printf("usage: %s\n  %s.\n", b->usage, b->summary);
                    if (b->measure) {
                        printf("options:\n");
                        common_options(stdout);
                    }
                    return 0;
                }
            return b->measure ? bench_run(b, argc - 1, argv + 1) : b->run(argc - 1, argv + 1);
        }
        fprintf(stderr, "clformer bench: unknown benchmark '%s'\n", argv[1]);
    }
    fprintf(stderr, "usage: clformer bench WHAT [options]; WHAT is one of:");
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
        fprintf(stderr, " %s", benches[i].name);
    fprintf(stderr, "\n(clformer bench --help describes each, and the options)\n");
    return 2;
}
