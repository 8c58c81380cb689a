/* bench_serve.c: `clformer bench serve`: MLPerf Inference's three
 * scenarios against a `clformer serve` this benchmark starts on 127.0.0.1
 * (an ephemeral port) and always stops:
 *   Offline       every sentence sent at once, one request each: sentences/s;
 *   SingleStream  one sentence at a time: p50 and p90 latency;
 *   Server        open-loop Poisson arrivals at --rate (seeded): p50, p90,
 *                 p99 latency, pass if p99 <= --p99-bound; then a bisection
 *                 (--search-steps runs) for the highest rate that passes.
 * A request is one sentence, POST /translate, one connection each
 * (Connection: close), written by the small HTTP/1.1 client below.
 * Latency runs from a request's scheduled arrival to its whole answer, so
 * a client that falls behind its schedule counts against the server, as
 * an open-loop load generator must. With no --model the server gets a
 * `tiny` model of random weights (seed 1, as every other benchmark) and a
 * SentencePiece vocabulary learned on the synthetic sentences, made in a
 * temporary folder removed after. */
#define _GNU_SOURCE /* mkdtemp, open_memstream, prctl */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <clformer/advanced/clock.h>
#include "bench.h"
#include "cli.h"
#include <clformer/text.h>
#include "json_out.h"

#define SERVE_MAX_REQUESTS 1024 /* a thread each at most, in one run */
#define SERVE_START_SECONDS 120 /* serve loads its model and may compile kernels first */

struct serve_opts {
    const char *model, *src, *pair, *device, *compute;
    int requests, steps;
    size_t lines;
    double rate, bound_ms, seconds, timeout;
    bool quick;
};

/* One run of requests: latencies in seconds (INFINITY: failed) and the
 * answers' HTTP statuses (0: no answer). */
struct load {
    int port;
    double timeout;
    char **bodies;     /* nbodies request bodies, taken in turn */
    size_t nbodies;
    size_t n;
    double *at;        /* arrival offsets from t0, s */
    double t0;
    double *lat;
    int *status;
};

struct serve_record {
    struct measure_device dev;
    char model[160], rate[32], bound[32];
    size_t sentences;
    double offline_sps, ss_p50, ss_p90;
    double srv_p50, srv_p90, srv_p99;
    int srv_errors;
    bool srv_pass;
    double max_rate;
    double server_rss_mib;  /* the server's peak resident set (its VmHWM), model load included */
    double energy_j;        /* RAPL over the scenarios (energy.h), NaN: no counter */
    int steps_run;
    double tried[32];
    bool tried_pass[32];
};

/* ---- the client ---------------------------------------------------- */

/* POSTs body to 127.0.0.1:port/translate and reads the whole answer: the
 * HTTP status, or 0 when none came within timeout seconds. */
static int post_one(int port, const char *body, double timeout)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct timeval tv = {(time_t)timeout, (suseconds_t)((timeout - floor(timeout)) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int status = 0;
    char head[256], buf[4096];
    size_t blen = strlen(body);
    int hl = snprintf(head, sizeof head,
                      "POST /translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      port, blen);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 || send(fd, head, (size_t)hl, MSG_NOSIGNAL) != hl)
        goto done;
    for (size_t off = 0; off < blen;) {
        ssize_t k = send(fd, body + off, blen - off, MSG_NOSIGNAL);
        if (k <= 0)
            goto done;
        off += (size_t)k;
    }
    /* the status line from the first bytes, then the rest read to the close */
    char first[64];
    size_t got = 0;
    for (;;) {
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k < 0) {
            status = 0;  /* timed out or reset: no whole answer */
            break;
        }
        if (k == 0)
            break;
        size_t take = got < sizeof first - 1 ? sizeof first - 1 - got : 0;
        take = take < (size_t)k ? take : (size_t)k;
        memcpy(first + got, buf, take);
        got += take;
        first[got] = 0;
        if (!status && sscanf(first, "HTTP/1.%*d %d", &status) != 1)
            status = 0;
    }
done:
    close(fd);
    return status;
}

static void *request_thread(void *arg)
{
    struct load *l = ((void **)arg)[0];
    size_t i = (size_t)((void **)arg)[1];
    free(arg);
    l->status[i] = post_one(l->port, l->bodies[i % l->nbodies], l->timeout);
    double end = clf_now();
    l->lat[i] = l->status[i] == 200 ? end - (l->t0 + l->at[i]) : INFINITY;
    return NULL;
}

/* Sends l->n requests, each at its arrival time (open loop: a thread
 * each), or one after the other when sequential; false if a thread could
 * not be started (the started ones are joined). */
static bool load_run(struct load *l, bool sequential)
{
    pthread_t th[SERVE_MAX_REQUESTS];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    size_t started = 0;
    bool ok = true;
    l->t0 = clf_now();
    for (size_t i = 0; i < l->n && ok; i++) {
        if (sequential) {
            l->at[i] = clf_now() - l->t0;
            void **arg = malloc(2 * sizeof *arg);
            if (!(ok = arg != NULL))
                break;
            arg[0] = l, arg[1] = (void *)i;
            request_thread(arg);
            continue;
        }
        double wait = l->t0 + l->at[i] - clf_now();
        if (wait > 0)
            usleep((useconds_t)(wait * 1e6));
        void **arg = malloc(2 * sizeof *arg);
        if (arg)
            arg[0] = l, arg[1] = (void *)i;
        if (!arg || pthread_create(&th[started], &attr, request_thread, arg) != 0) {
            free(arg);
            ok = false;
            break;
        }
        started++;
    }
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_attr_destroy(&attr);
    return ok;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile (nearest rank) of the latencies in ms; a failed
 * request is an infinite latency, so failures fail a bound. */
static double percentile_ms(const double *lat, size_t n, double p)
{
    double *v = malloc(n * sizeof *v);
    if (!v || !n) {
        free(v);
        return NAN;
    }
    memcpy(v, lat, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_d);
    size_t k = (size_t)ceil(p / 100 * (double)n);
    double x = 1e3 * v[k ? k - 1 : 0];
    free(v);
    return x;
}

/* ---- the server ---------------------------------------------------- */

struct server {
    pid_t pid;
    int out;  /* its stdout: read for the "listening on" line, held open after */
    int port;
};

/* Starts `clformer serve --host 127.0.0.1 --port 0 --model PAIR=CKPT
 * [--device D] [--compute-type T]` (this same program) and waits for it to
 * say where it listens. The child dies with this process (PDEATHSIG) if
 * this one is killed before it stops it. False, said, on failure (the
 * child stopped). */
static bool server_start(const struct serve_opts *o, const char *ckpt, struct server *s)
{
    char model[4352];
    snprintf(model, sizeof model, "%s=%s", o->pair, ckpt);
    const char *argv[20] = {"clformer", "serve", "--host", "127.0.0.1", "--port", "0", "--model", model,
                            /* the load's clients are all one address, and Offline opens every
                             * connection at once */
                            "--max-connections-per-ip", "0", "--max-sentences", "1024"};
    int argc = 12;
    if (o->device) {
        argv[argc++] = "--device";
        argv[argc++] = o->device;
    }
    if (o->compute) {
        argv[argc++] = "--compute-type";
        argv[argc++] = o->compute;
    }
    argv[argc] = NULL;
    int p[2];
    s->pid = -1;
    s->out = -1;
    if (pipe2(p, O_CLOEXEC) != 0) {
        perror("clformer bench serve: pipe");
        return false;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(p[1], 1);
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        perror("clformer bench serve: fork");
        return false;
    }
    s->pid = pid;
    s->out = p[0];
    char line[512];
    size_t got = 0;
    double end = clf_now() + SERVE_START_SECONDS;
    while (got < sizeof line - 1) {
        struct pollfd pf = {p[0], POLLIN, 0};
        double left = end - clf_now();
        if (left <= 0 || poll(&pf, 1, (int)(left * 1e3) + 1) <= 0)
            break;
        ssize_t k = read(p[0], line + got, sizeof line - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
        line[got] = 0;
        const char *at = strstr(line, "listening on http://127.0.0.1:");
        if (at && strchr(at, '\n')) {
            s->port = atoi(at + strlen("listening on http://127.0.0.1:"));
            if (s->port > 0)
                return true;
        }
    }
    line[got] = 0;
    fprintf(stderr, "clformer bench serve: the server did not say it listens within %d s (its first line: '%.*s')\n",
            SERVE_START_SECONDS, (int)strcspn(line, "\n"), line);
    return false;
}

/* The server's peak resident set in MiB (VmHWM of /proc/PID/status),
 * NaN where it cannot be read. */
static double server_rss_mib(const struct server *s)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)s->pid);
    FILE *f = fopen(path, "r");
    double kib = NAN;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = atof(line + 6);
    if (f)
        fclose(f);
    return kib / 1024;
}

/* SIGTERM, then SIGKILL if it has not gone within 15 s (its drain is 10 s
 * at most); reaped either way. */
static void server_stop(struct server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        int st;
        double end = clf_now() + 15;
        while (waitpid(s->pid, &st, WNOHANG) == 0) {
            if (clf_now() > end) {
                kill(s->pid, SIGKILL);
                waitpid(s->pid, &st, 0);
                break;
            }
            usleep(20000);
        }
    }
    if (s->out >= 0)
        close(s->out);
    s->pid = -1;
    s->out = -1;
}

/* ---- what it translates ---------------------------------------------- */

/* n synthetic English sentences of 4 to 15 words from a fixed list (fixed
 * seed), each malloc'd. */
static char **synthetic_lines(size_t n)
{
    static const char *const words[] = {
        "a",     "the",   "man",   "woman", "dog",    "child",  "is",     "are",   "in",    "on",
        "with",  "red",   "blue",  "small", "large",  "street", "water",  "ball",  "runs",  "sits",
        "plays", "walks", "near",  "two",   "people", "group",  "young",  "old",   "shirt", "white",
        "black", "green", "park",  "snow",  "beach",  "road",   "holds",  "looks", "at",    "of"};
    char **out = calloc(n, sizeof *out);
    uint32_t seed = 17;
    for (size_t i = 0; out && i < n; i++) {
        char s[256] = "";
        int k = 4 + (int)(clf_rand24(&seed) % 12);
        for (int w = 0; w < k; w++) {
            size_t used = strlen(s);
            snprintf(s + used, sizeof s - used, "%s%s", w ? " " : "", words[clf_rand24(&seed) % 40]);
        }
        s[0] = (char)(s[0] - 'a' + 'A');
        strcat(s, ".");
        if (!(out[i] = strdup(s))) {
            for (size_t j = 0; j < i; j++)
                free(out[j]);
            free(out);
            return NULL;
        }
    }
    return out;
}

/* The first n non-empty lines of path (plain or gzip'd, valid UTF-8: the
 * library's reader, whose message names the file and line); *got says how
 * many. */
static char **file_lines(const char *path, size_t n, size_t *got)
{
    struct clf_lines all;
    *got = 0;
    clf_status st = clf_lines_read(&all, path);
    if (st != CLF_OK) {
        fprintf(stderr, "clformer bench serve: --src: %s\n", clf_ctx_error(NULL)); /* it names the file */
        return NULL;
    }
    char **out = calloc(n, sizeof *out);
    for (size_t i = 0; out && i < all.n && *got < n; i++)
        if (all.line[i][0] && !(out[(*got)++] = strdup(all.line[i])))
            (*got)--;
    clf_lines_free(&all);
    if (!out || !*got) {
        fprintf(stderr, "clformer bench serve: --src %s: %s\n", path, !out ? "out of host memory" : "no lines to send");
        free(out);
        return NULL;
    }
    return out;
}

/* The tiny model of random weights (seed 1) with a SentencePiece
 * vocabulary of 320 learned on lines, written into dir as
 * model.safetensors beside its bpe.model; false (said) on failure. */
static bool make_fixture(const char *dir, char **lines, size_t n, const char *device, char *ckpt, size_t len)
{
    char txt[4200], spm_path[4200];
    snprintf(txt, sizeof txt, "%s/train.txt", dir);
    snprintf(spm_path, sizeof spm_path, "%s/bpe.model", dir);
    snprintf(ckpt, len, "%s/model.safetensors", dir);
    FILE *f = fopen(txt, "w");
    for (size_t i = 0; f && i < n; i++)
        fprintf(f, "%s\n", lines[i]);
    if (!f || fclose(f) != 0) {
        fprintf(stderr, "clformer bench serve: writing %s failed\n", txt);
        return false;
    }
    struct clf_spm_learn_opts so;
    clf_spm_learn_defaults(&so);
    so.vocab_size = 320;  /* the 260 fixed and byte pieces, the letters, some merges */
    const char *files[1] = {txt};
    clf_status st = clf_spm_learn(files, 1, spm_path, &so);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "learning the fixture's vocabulary");
        return false;
    }
    clf_ctx_t *ctx = cli_open(device);
    struct clf_model_config c;
    clf_model_t *m = NULL;
    bool ok = ctx && clf_model_config_preset(&c, "tiny") == CLF_OK;
    if (ok) {
        c.vocab = so.vocab_size;
        st = clf_model_init(ctx, &m, &c, 1);
        ok = st == CLF_OK || cli_fail(ctx, st, "creating the fixture model") == 0;
    }
    if (ok) {
        struct clf_ckpt_meta meta;
        clf_ckpt_meta_init(&meta, m);  /* its tokenizer: ours, bpe.model beside it */
        st = clf_model_save(m, ckpt, &meta);
        ok = st == CLF_OK || cli_fail(ctx, st, "saving the fixture model") == 0;
    }
    clf_model_free(m);
    if (ctx)
        clf_ctx_free(ctx);
    return ok;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4400];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* ---- the scenarios --------------------------------------------------- */

/* One Server run: n Poisson arrivals at `rate` a second (exponential gaps
 * from a fixed seed, so every run at a rate sends the same schedule); its
 * latency percentiles in ms and failures; false if it could not run. */
/* How many requests a Server run at `rate` sends: arrivals over span
 * seconds (10; 2 with --quick), --requests at least, SERVE_MAX_REQUESTS at
 * most. A fixed count would pass any rate whose burst the server clears
 * within the bound (64 requests at 1900/s pass where 120/s is what it
 * serves); over a span, a rate above what the server serves builds a
 * backlog that grows with the run, and its p99 fails. */
static size_t server_requests(const struct serve_opts *o, double rate)
{
    const double want = ceil(rate * (o->quick ? 2.0 : 10.0));
    size_t n = want > SERVE_MAX_REQUESTS ? SERVE_MAX_REQUESTS : (size_t)want;
    return n < (size_t)o->requests ? (size_t)o->requests : n;
}

static bool server_run(struct load *l, size_t n, double rate, double *p50, double *p90, double *p99, int *errors)
{
    uint32_t seed = 12345;
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        l->at[i] = t;
        t += -log(1.0 - (clf_rand24(&seed) + 0.5) / 16777216.0) / rate;
    }
    l->n = n;
    if (!load_run(l, false))
        return false;
    *errors = 0;
    for (size_t i = 0; i < n; i++)
        *errors += l->status[i] != 200;
    *p50 = percentile_ms(l->lat, n, 50);
    *p90 = percentile_ms(l->lat, n, 90);
    *p99 = percentile_ms(l->lat, n, 99);
    return true;
}

static int failed_requests(const struct load *l, const char *scenario)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->status[i] != 200) {
            fprintf(stderr, "clformer bench serve: %s: request %zu was answered %d (0: no answer within %g s)\n",
                    scenario, i, l->status[i], l->timeout);
            return 1;
        }
    return 0;
}

/* The three scenarios against a running server into r; 0 or 1 (said). */
static int scenarios(const struct serve_opts *o, struct load *l, struct serve_record *r)
{
    double deadline = clf_now() + o->seconds;
    /* warm-up: a first call may compile kernels, and each new shape may too */
    l->n = l->nbodies < 4 ? l->nbodies : 4;
    if (!load_run(l, true) || failed_requests(l, "warm-up"))
        return 1;
    /* Offline: every sentence at once */
    l->n = l->nbodies;
    memset(l->at, 0, l->n * sizeof *l->at);
    double t0 = clf_now();
    if (!load_run(l, false) || failed_requests(l, "Offline"))
        return 1;
    r->offline_sps = (double)l->n / (clf_now() - t0);
    /* SingleStream: one at a time, as many as the Server runs send */
    l->n = (size_t)o->requests;
    if (!load_run(l, true) || failed_requests(l, "SingleStream"))
        return 1;
    r->ss_p50 = percentile_ms(l->lat, l->n, 50);
    r->ss_p90 = percentile_ms(l->lat, l->n, 90);
    /* Server at the set rate */
    if (!server_run(l, server_requests(o, o->rate), o->rate, &r->srv_p50, &r->srv_p90, &r->srv_p99, &r->srv_errors))
        return 1;
    r->srv_pass = r->srv_p99 <= o->bound_ms;
    /* the search: the highest passing rate lies in [lo, hi) (hi infinite
     * until a rate fails). Upwards from the set rate, Offline's rate first
     * (what the server gives with everything queued at once), doubling
     * while each passes; then halving the bracket. */
    double lo = r->srv_pass ? o->rate : 0, hi = r->srv_pass ? INFINITY : o->rate;
    for (int s = 0; s < o->steps && s < 32; s++) {
        double rate = isfinite(hi) ? 0.5 * (lo + hi) : s == 0 && r->offline_sps > lo ? r->offline_sps : 2 * lo;
        const size_t n = server_requests(o, rate);
        if (clf_now() + (double)n / rate > deadline)
            break;  /* the wall-time budget (--seconds) ends the search */
        double p50, p90, p99;
        int errors;
        if (!server_run(l, n, rate, &p50, &p90, &p99, &errors))
            return 1;
        r->tried[s] = rate;
        r->tried_pass[s] = p99 <= o->bound_ms;
        r->steps_run = s + 1;
        if (r->tried_pass[s])
            lo = rate;
        else
            hi = rate;
    }
    r->max_rate = lo;
    return 0;
}

static void serve_json(FILE *f, const void *rec)
{
    const struct serve_record *r = rec;
    struct cli_json w;
    cli_json_init(&w, f, false);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "bench", "serve");
    measure_device_json(&w, &r->dev);
    cli_json_str(&w, "model", r->model);
    cli_json_num(&w, "sentences", "%zu", r->sentences);
    /* each scenario its own result: a rate beside latencies would hide them
     * (report.c reads a result's times as views of its rate) */
    cli_json_arr(&w, "results");
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "scenario", "offline");
    cli_json_str(&w, "model", r->model);
    cli_json_real(&w, "sentences_per_s", r->offline_sps);
    cli_json_end(&w);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "scenario", "singlestream");
    cli_json_str(&w, "model", r->model);
    cli_json_real(&w, "p50_ms", r->ss_p50);
    cli_json_real(&w, "p90_ms", r->ss_p90);
    cli_json_end(&w);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "scenario", "server");
    cli_json_str(&w, "model", r->model);
    cli_json_str(&w, "rate", r->rate);
    cli_json_str(&w, "p99_bound", r->bound);
    cli_json_real(&w, "p50_ms", r->srv_p50);
    cli_json_real(&w, "p90_ms", r->srv_p90);
    cli_json_real(&w, "p99_ms", r->srv_p99);
    cli_json_num(&w, "pass", "%d", r->srv_pass);
    cli_json_num(&w, "errors", "%d", r->srv_errors);
    cli_json_end(&w);
    cli_json_obj(&w, NULL);
    cli_json_str(&w, "scenario", "server search");
    cli_json_str(&w, "model", r->model);
    cli_json_str(&w, "p99_bound", r->bound);
    cli_json_real(&w, "max_rate_per_s", r->max_rate);
    cli_json_arr(&w, "tried");  /* not a figure: the rates probed and their verdicts */
    for (int s = 0; s < r->steps_run; s++) {
        cli_json_obj(&w, NULL);
        cli_json_real(&w, "rate_per_s", r->tried[s]);
        cli_json_bool(&w, "pass", r->tried_pass[s]);
        cli_json_end(&w);
    }
    cli_json_end(&w);
    cli_json_end(&w);
    cli_json_end(&w);
    /* the server's memory and the energy of the scenarios: the cases
     * "memory" and "energy", as train's and translate's */
    cli_json_obj(&w, "memory");
    cli_json_str(&w, "case", "memory");
    cli_json_real(&w, "max_rss_mib", r->server_rss_mib);
    cli_json_end(&w);
    cli_json_obj(&w, "energy");
    cli_json_str(&w, "case", "energy");
    cli_json_real(&w, "energy_j", r->energy_j);  /* null where there is no counter, never 0 */
    cli_json_end(&w);
    cli_json_end(&w);
}

static void serve_table(FILE *f, const void *rec)
{
    const struct serve_record *r = rec;
    fprintf(f, "clformer serve on 127.0.0.1, model %s, %zu sentences, one a request, on %s\n", r->model, r->sentences,
            r->dev.info.device_name);
    fprintf(f, "  Offline       %8.2f sentences/s (all sent at once)\n", r->offline_sps);
    fprintf(f, "  SingleStream  p50 %8.1f ms  p90 %8.1f ms\n", r->ss_p50, r->ss_p90);
    fprintf(f, "  Server %-11s p50 %8.1f ms  p90 %8.1f ms  p99 %8.1f ms  %s (%s), %d failed\n", r->rate,
            r->srv_p50, r->srv_p90, r->srv_p99, r->srv_pass ? "PASS" : "FAIL", r->bound, r->srv_errors);
    fprintf(f, "  Server search: highest rate passing %.2f/s after %d step%s:", r->max_rate, r->steps_run,
            r->steps_run == 1 ? "" : "s");
    for (int s = 0; s < r->steps_run; s++)
        fprintf(f, " %.2f/s %s", r->tried[s], r->tried_pass[s] ? "pass" : "fail");
    fprintf(f, "\n  the server: %.1f MiB resident at most; energy of the scenarios: ", r->server_rss_mib);
    if (isnan(r->energy_j))
        fprintf(f, "no counter (null)\n");
    else
        fprintf(f, "%.1f J (the CPU package's, all processes)\n", r->energy_j);
}

const char bench_serve_usage[] =
    "clformer bench serve [--model CKPT [--pair SRC-TGT]] [--src FILE] [--lines N] [--requests N] [--rate R]\n"
    "                     [--p99-bound MS] [--search-steps N] [--seconds S] [--timeout S] [--compute-type T]\n"
    "                     [--device D] [--quick]";

static bool parse(int argc, char **argv, struct serve_opts *o)
{
    memset(o, 0, sizeof *o);
    o->pair = "en-de";
    double lines = 0, requests = 0, steps = -1, rate = 4, bound = 1000, seconds = 300, timeout = 60;
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--quick"))
            o->quick = true;
        else if (!cli_opt(argc, argv, &i, "--model", &o->model, &bad) &&
                 !cli_opt(argc, argv, &i, "--src", &o->src, &bad) &&
                 !cli_opt(argc, argv, &i, "--pair", &o->pair, &bad) &&
                 !cli_opt(argc, argv, &i, "--device", &o->device, &bad) &&
                 !cli_opt(argc, argv, &i, "--compute-type", &o->compute, &bad) &&
                 !cli_opt_number(argc, argv, &i, "--lines", 1, SERVE_MAX_REQUESTS, true, &lines, &bad) &&
                 !cli_opt_number(argc, argv, &i, "--requests", 1, SERVE_MAX_REQUESTS, true, &requests, &bad) &&
                 !cli_opt_number(argc, argv, &i, "--search-steps", 0, 32, true, &steps, &bad) &&
                 !cli_opt_number(argc, argv, &i, "--rate", 1e-3, 1e6, false, &rate, &bad) &&
                 !cli_opt_number(argc, argv, &i, "--p99-bound", 1e-3, 1e7, false, &bound, &bad) &&
                 !cli_opt_number(argc, argv, &i, "--seconds", 1, 86400, false, &seconds, &bad) &&
                 !cli_opt_number(argc, argv, &i, "--timeout", 0.1, 3600, false, &timeout, &bad)) {
            fprintf(stderr, "clformer: unknown option '%s'\n", argv[i]);
            bad = true;
        }
    }
    if (!bad && !strchr(o->pair, '-')) {
        fprintf(stderr, "clformer bench serve: --pair %s: want SRC-TGT (en-de)\n", o->pair);
        bad = true;
    }
    if (bad) {
        fprintf(stderr, "usage: %s\n", bench_serve_usage);
        return false;
    }
    o->lines = lines > 0 ? (size_t)lines : o->quick ? 32 : 64;
    o->requests = requests > 0 ? (int)requests : o->quick ? 24 : 64;
    o->steps = steps >= 0 ? (int)steps : o->quick ? 3 : 5;
    o->rate = rate;
    o->bound_ms = bound;
    o->seconds = seconds;
    o->timeout = timeout;
    return true;
}

int bench_serve(int argc, char **argv, struct bench_result *out)
{
    struct serve_opts o;
    if (!parse(argc, argv, &o))
        return 2;
    if (!bench_has_serve()) {
        fprintf(stderr, "clformer bench serve: this clformer was built without libmicrohttpd, so without `clformer "
                        "serve`: apt-get install libmicrohttpd-dev and build again\n");
        return 1;
    }
    struct serve_record *r = calloc(1, sizeof *r);
    struct load l = {.timeout = o.timeout};
    struct server srv = {.pid = -1, .out = -1};
    char dir[4096] = "", ckpt[4200];
    size_t n = o.lines;
    char **lines = o.src ? file_lines(o.src, o.lines, &n) : synthetic_lines(o.lines);
    int rc = 1;
    if (!r || !lines)
        goto done;
    r->sentences = n;
    snprintf(r->rate, sizeof r->rate, "at %g/s", o.rate);
    snprintf(r->bound, sizeof r->bound, "p99 <= %g ms", o.bound_ms);
    clf_ctx_t *ctx = cli_open(o.device);
    if (!ctx)
        goto done;
    measure_device_get(ctx, &r->dev);
    clf_ctx_free(ctx);
    if (o.model) {
        const char *base = strrchr(o.model, '/');
        snprintf(r->model, sizeof r->model, "%s", base ? base + 1 : o.model);
        snprintf(ckpt, sizeof ckpt, "%s", o.model);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(r->model, sizeof r->model, "tiny random");
        snprintf(dir, sizeof dir, "%s/clformer-bench-serve-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            fprintf(stderr, "clformer bench serve: making %s: %s\n", dir, strerror(errno));
            dir[0] = 0;
            goto done;
        }
        /* the vocabulary wants more text than the load sends */
        char **train = synthetic_lines(400);
        bool ok = train && make_fixture(dir, train, 400, o.device, ckpt, sizeof ckpt);
        for (size_t i = 0; train && i < 400; i++)
            free(train[i]);
        free(train);
        if (!ok)
            goto done;
    }
    size_t most = n > SERVE_MAX_REQUESTS ? n : SERVE_MAX_REQUESTS; /* server_requests' most */
    l.bodies = calloc(n, sizeof *l.bodies);
    l.at = calloc(most, sizeof *l.at);
    l.lat = calloc(most, sizeof *l.lat);
    l.status = calloc(most, sizeof *l.status);
    if (!l.bodies || !l.at || !l.lat || !l.status) {
        fprintf(stderr, "clformer: out of host memory\n");
        goto done;
    }
    l.nbodies = n;
    char src_lang[16];
    snprintf(src_lang, sizeof src_lang, "%.*s", (int)strcspn(o.pair, "-"), o.pair);
    for (size_t i = 0; i < n; i++) {
        size_t blen = 0;
        FILE *mem = open_memstream(&l.bodies[i], &blen);
        if (!mem)
            goto done;
        struct cli_json w;
        cli_json_init(&w, mem, true);
        cli_json_obj(&w, NULL);
        cli_json_str(&w, "q", lines[i]);
        cli_json_str(&w, "source", src_lang);
        cli_json_str(&w, "target", strchr(o.pair, '-') + 1);
        cli_json_end(&w);
        fclose(mem);
    }
    if (!server_start(&o, ckpt, &srv))
        goto done;
    l.port = srv.port;
    struct bench_energy energy;
    bench_energy_begin(&energy, NULL);
    rc = scenarios(&o, &l, r);
    r->energy_j = bench_energy_end(&energy);
    r->server_rss_mib = server_rss_mib(&srv);  /* before it goes */
done:
    server_stop(&srv);  /* whatever happened above */
    if (dir[0])
        remove_dir(dir);
    for (size_t i = 0; lines && i < n; i++)
        free(lines[i]);
    free(lines);
    for (size_t i = 0; l.bodies && i < l.nbodies; i++)
        free(l.bodies[i]);
    free(l.bodies);
    free(l.at);
    free(l.lat);
    free(l.status);
    if (rc == 0) {
        out->record = r;
        out->json = serve_json;
        out->table = serve_table;
    } else {
        free(r);
    }
    return rc;
}
