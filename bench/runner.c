/* runner.c: how `clformer bench NAME` and `bench all` turn benchmark runs
 * into a v1 report (report.h): sweeps (comma lists in the options below run
 * their cartesian product, one case each), warm-up runs left out, and
 * --repetitions whole runs of each case whose figures become n, median,
 * min, max and spread. Each run's figures come from its record as
 * report_add_record flattens it (the same reading `compare` gives a
 * record), so every benchmark takes part without code of its own. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "dist.h"

/* The options a comma list sweeps over; other options pass through whole
 * (a file name may hold a comma). */
static const char *const sweepable[] = {"--batch", "--beam",      "--compute-type", "--preset",
                                        "--n",     "--max-extra", "--bucket-mb"};

static bool is_sweepable(const char *opt)
{
    for (size_t i = 0; i < sizeof sweepable / sizeof sweepable[0]; i++)
        if (!strcmp(opt, sweepable[i]))
            return true;
    return false;
}

bool bench_runner_parse(int *argc, char **argv, struct bench_runner_opts *o)
{
    memset(o, 0, sizeof *o);
    o->repetitions = 1;
    o->fmt = REPORT_TABLE;
    int n = 1;
    bool bad = false;
    for (int i = 1; i < *argc && !bad; i++) {
        const char *fmt = NULL;
        double reps = -1, warm = -1;
        if (cli_opt(*argc, argv, &i, "--format", &fmt, &bad)) {
            if (!bad && !report_format_parse(fmt, &o->fmt)) {
                fprintf(stderr, "clformer bench: --format %s: not one of table, json, jsonl, csv, md, sql\n", fmt);
                bad = true;
            }
            o->v1 = true;
        } else if (cli_opt(*argc, argv, &i, "--note", &o->note, &bad)) {
            o->v1 = true;
        } else if (cli_opt_number(*argc, argv, &i, "--repetitions", 1, 1000, true, &reps, &bad)) {
            o->repetitions = (int)reps;
            o->v1 = true;
        } else if (cli_opt_number(*argc, argv, &i, "--warmup", 0, 1000, true, &warm, &bad)) {
            o->warmup = (int)warm;
            o->v1 = true;
        } else {
            argv[n++] = argv[i];
        }
    }
    for (int i = n; i < *argc; i++)
        argv[i] = NULL;
    *argc = n;
    return !bad;
}

/* One case, warmup + repetitions runs: its figures with their statistics
 * into w. 0, or the failing run's exit status. */
static int run_case(const struct bench_entry *b, int argc, char **argv, const char *params,
                    const struct bench_runner_opts *o, struct report_writer *w)
{
    int total = o->warmup + o->repetitions;
    struct report *reps = calloc((size_t)o->repetitions, sizeof *reps);
    struct bench_result last = {0};
    int rc = reps ? 0 : 1;
    char err[512];
    for (int k = 0; k < total && rc == 0; k++) {
        struct bench_result res = {0};
        rc = b->measure(argc, argv, &res);
        if (rc != 0 || !res.record || k < o->warmup) {  /* no record: an MPI rank other than 0, --export */
            bench_result_free(&res);
            continue;
        }
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        if (!mem) {
            rc = 1;
            bench_result_free(&res);
            break;
        }
        res.json(mem, res.record);
        fclose(mem);
        if (!report_add_record(&reps[k - o->warmup], text, len, params, err, sizeof err)) {
            fprintf(stderr, "clformer bench %s: %s\n", b->name, err);
            rc = 1;
        }
        free(text);
        bench_result_free(&last);
        last = res;
    }
    if (rc == 0 && last.record && o->fmt == REPORT_TABLE)
        last.table(stdout, last.record);  /* the benchmark's own table, of its last run */
    bench_result_free(&last);
    /* each figure of the first run (then of later runs, if new) with its
     * values over every run that gave it */
    double *x = rc == 0 ? malloc((size_t)o->repetitions * sizeof *x) : NULL;
    for (int k = 0; x && k < o->repetitions; k++) {
        for (size_t i = 0; i < reps[k].count; i++) {
            struct report_item it = reps[k].items[i];
            bool seen = false;
            for (int q = 0; q < k && !seen; q++)
                for (size_t j = 0; j < reps[q].count && !seen; j++)
                    seen = !strcmp(reps[q].items[j].bench, it.bench) && !strcmp(reps[q].items[j].name, it.name) &&
                           !strcmp(reps[q].items[j].metric, it.metric);
            if (seen)
                continue;
            int n = 0;
            for (int q = k; q < o->repetitions; q++) {
                bool found = false;  /* a case names one figure once; a later duplicate is ignored */
                for (size_t j = 0; j < reps[q].count && !found; j++)
                    if (!strcmp(reps[q].items[j].bench, it.bench) && !strcmp(reps[q].items[j].name, it.name) &&
                        !strcmp(reps[q].items[j].metric, it.metric)) {
                        x[n++] = reps[q].items[j].value;
                        found = true;
                    }
            }
            report_stats_of(x, n, &it.st);
            it.value = it.st.median;
            report_write_rows(w, &it, 1);
        }
    }
    if (rc == 0 && o->repetitions > 0 && !x && reps)
        rc = 1;
    free(x);
    for (int k = 0; reps && k < o->repetitions; k++)
        report_free(&reps[k]);
    free(reps);
    return rc;
}

int bench_runner_measure(const struct bench_entry *b, int argc, char **argv, const struct bench_runner_opts *o,
                         struct report_writer *w)
{
    /* the axes: argv positions of a sweepable option's value, and the list
     * each runs over (float32 moved first in --compute-type's, so that its
     * BLEU is written before the other types' are flagged against it) */
    int axis[16], naxes = 0, nvalues[16];
    const char *list[16];
    char *reordered = NULL;
    for (int i = 1; i + 1 < argc; i++) {
        if (!is_sweepable(argv[i]))
            continue;
        if (naxes == 16) {
            fprintf(stderr, "clformer bench %s: at most 16 swept options\n", b->name);
            return 2;
        }
        int nv = 1;
        for (const char *p = argv[i + 1]; *p; p++)
            nv += *p == ',';
        for (const char *p = argv[i + 1]; *p; p++)
            if (*p == ',' && (p[1] == ',' || p[1] == 0 || p == argv[i + 1])) {
                fprintf(stderr, "clformer bench %s: %s %s: an empty item in the list\n", b->name, argv[i],
                        argv[i + 1]);
                return 2;
            }
        list[naxes] = argv[i + 1];
        const char *f32 = strstr(argv[i + 1], "float32");
        if (!strcmp(argv[i], "--compute-type") && !reordered && f32 && f32 != argv[i + 1] && f32[-1] == ',' &&
            (f32[7] == ',' || f32[7] == 0) && (reordered = malloc(strlen(argv[i + 1]) + 2))) {
            /* "int8,float32,bfloat16" -> "float32,int8,bfloat16" */
            size_t before = (size_t)(f32 - argv[i + 1]) - 1;
            sprintf(reordered, "float32,%.*s%s", (int)before, argv[i + 1], f32 + 7);
            list[naxes] = reordered;
        }
        axis[naxes] = i + 1;
        nvalues[naxes++] = nv;
        i++;
    }
    char **sub = calloc((size_t)argc + 1, sizeof *sub);
    char *store = NULL;
    size_t total = 0;
    for (int i = 0; i < argc; i++)
        total += strlen(argv[i]) + 1;
    store = malloc(total);
    if (!sub || !store) {
        free(sub);
        free(store);
        free(reordered);
        fprintf(stderr, "clformer: out of host memory\n");
        return 1;
    }
    int idx[16] = {0}, rc = 0, failures = 0;
    for (;;) {
        /* this case's arguments: each axis's idx-th item */
        char params[96] = "", *s = store;
        for (int i = 0; i < argc; i++)
            sub[i] = argv[i];
        for (int a = 0; a < naxes; a++) {
            const char *v = list[a];
            for (int k = 0; k < idx[a]; k++)
                v = strchr(v, ',') + 1;
            size_t l = strcspn(v, ",");
            memcpy(s, v, l);
            s[l] = 0;
            sub[axis[a]] = s;
            s += l + 1;
            size_t used = strlen(params);
            snprintf(params + used, sizeof params - used, "%s%s %s", used ? " " : "", argv[axis[a] - 1], sub[axis[a]]);
        }
        sub[argc] = NULL;
        if (o->fmt == REPORT_TABLE && dist_rank() == 0 && naxes) {
            printf("\n-- %s %s --\n", b->name, params);
            fflush(stdout);
        }
        int r = run_case(b, argc, sub, params, o, w);
        if (r) {
            fprintf(stderr, "clformer bench %s%s%s: failed (exit status %d)\n", b->name, params[0] ? " " : "", params,
                    r);
            failures++;
            rc = rc ? rc : r;
        }
        int a = 0;
        while (a < naxes && ++idx[a] == nvalues[a])
            idx[a++] = 0;
        if (a == naxes)
            break;
    }
    free(sub);
    free(store);
    free(reordered);
    return failures && rc == 0 ? 1 : rc;
}
