/* cmd_serve.c: `clformer serve`: LibreTranslate's HTTP API over the
 * library's translation queue (clformer_serve.h), through GNU
 * libmicrohttpd (a few threads poll the connections; each request's
 * handler runs on a thread of its own, which submits to the queue and
 * waits; the queue's worker owns the device). Here: the flags,
 * the models, signals and the drain; the routes are in serve/api.c, the
 * connections in serve/http.c. */
#define _GNU_SOURCE /* syscall: gettid, tgkill */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "serve/serve.h"
#include "serve/serve_libre.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: clformer serve --model SRC-TGT=CKPT [--model ...] [--device D] [--compute-type T]\n"
               "                      [--host ADDR] [--port N]\n"
               "                      [--max-batch-tokens N] [--batch-wait-ms N] [--batching continuous|rounds]\n"
               "                      [--max-chars N] [--max-sentences N] [--queue N] [--api-keys FILE]\n"
               "                      [--cors-origins LIST] [--req-limit N] [--chars-per-minute N]\n"
               "                      [--drain-seconds S] [--health-stuck-seconds S] [--log]\n"
               "                      [--max-connections N] [--max-connections-per-ip N]\n"
               "                      [--header-timeout S] [--body-timeout S]\n"
               "  serves LibreTranslate's API: POST /translate (JSON or form: q, source, target, format,\n"
               "  api_key, alternatives), GET /languages, /health, /metrics (Prometheus); POST /detect, /translate_file\n"
               "  (.txt), GET /frontend/settings, /suggest (off) and a web page at / as LibreTranslate's\n"
               "  (source auto: libexttextcat; format html: libxml2; 501 in a build without). Each --model serves one\n"
               "  language pair with its checkpoint's tokenizer and generation defaults (ours or imported\n"
               "  with `clformer import`); --compute-type as `clformer translate`'s, for every model.\n"
               "  --device D: one device (an index, gpu, cpu, a name; default CLF_DEVICE or the best), or\n"
               "  several: a comma-separated list (0,1; one named twice serves twice), all, gpus or cpus\n"
               "  (every device, of that type): one worker a device, each with its own copy of every model,\n"
               "  taking whichever batch comes next. A device that fails takes its worker out and its\n"
               "  sentences go to the others; /health then answers 200 {\"status\": \"degraded\"} naming it,\n"
               "  503 once none serves; /metrics counts each device's batches, sentences and busy seconds.\n"
               "  Texts are cut into sentences (clf_text_sentences) and the sentences of all requests\n"
               "  batched together: at most --max-batch-tokens source tokens\n"
               "  decoding at once: new sentences join a decoding under way between its steps and leave as\n"
               "  they finish (--batching rounds: rounds of at most --max-batch-tokens, waiting at most\n"
               "  --batch-wait-ms for one to fill, each decoded to its end). --queue N: at most N\n"
               "  sentences waiting (more: 429 with Retry-After); --max-chars N: at most N characters a\n"
               "  request (413); --max-sentences N: at most N sentences a request once its texts are cut\n"
               "  (413). --api-keys FILE: one key a line, required in api_key or as Authorization: Bearer KEY\n"
               "  (400 without one, 403 for a wrong one; /metrics too). --cors-origins LIST: the origins\n"
               "  (comma-separated, or *) a browser may call from (default * without --api-keys, none with\n"
               "  them). --req-limit N, --chars-per-minute N: per API key, or per client address without\n"
               "  one (an IPv6 address by its /64), at most N requests (a batch counts its texts) or N\n"
               "  characters a minute, as token buckets (429 with Retry-After past them). SIGTERM or\n"
               "  SIGINT: stop accepting, finish what is queued within --drain-seconds, exit 0. /health\n"
               "  answers 503 {\"status\": \"failed\"} while the last batch failed as a device fails, and\n"
               "  {\"status\": \"stuck\"} while one translator call has run over --health-stuck-seconds (default\n"
               "  120: a first call compiles kernels; 0: never stuck). --port 0\n"
               "  picks a free port. Prints 'listening on http://HOST:PORT' once ready; --log: one JSON\n"
               "  line a request on stderr. Defaults: host 127.0.0.1, port 5000, max-batch-tokens 2048,\n"
               "  batching continuous, batch-wait-ms 5, max-chars 5000, max-sentences 256, queue 1024,\n"
               "  drain-seconds 10, no rate limits.\n"
               "  Connections: a few threads poll them all, so idle or slow sockets hold no thread. At most\n"
               "  --max-connections open at once (default 4096; the open-file limit is raised to fit, or\n"
               "  this lowered, with a word) and --max-connections-per-ip from one address (default 64;\n"
               "  0: no limit, as behind a proxy where every client has the proxy's address); more are\n"
               "  closed at once. A request's head must arrive within --header-timeout seconds of the\n"
               "  connection's start or of the previous answer (default 10; then the connection is\n"
               "  closed), its body within --body-timeout seconds after (default 30; then 408 and closed),\n"
               "  however the bytes trickle in; 0: no deadline. A body over the limit (--max-chars x 12 +\n"
               "  64 KiB bytes) gets 413 at once: a declared one before it is read (no 100 Continue).\n");
}

#ifndef CLF_HAVE_MHD
int clf_cmd_serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    fprintf(stderr, "clformer serve: this clformer was built without libmicrohttpd: apt-get install "
                    "libmicrohttpd-dev and build again\n");
    return 1;
}
#else

/* The main thread, which sigwaits for SIGTERM and SIGINT. Threads that
 * libraries start as they load (OpenBLAS's) began before the mask below
 * and do not block them: one of them can be handed the signal, which
 * would kill the process undrained. Their handler passes it on to the
 * main thread instead (tgkill: async-signal-safe, unlike pthread_kill). */
static pid_t main_tid;

static void forward_stop(int sig) { syscall(SYS_tgkill, getpid(), main_tid, sig); }

/* The most devices (workers) one server takes. */
#define SERVE_MAX_DEVICES 16

/* Opens --device's devices into ctx[0..*n): one (NULL: CLF_DEVICE or the
 * best), a comma-separated list of requests as clf_ctx_init takes them (an
 * index, gpu, cpu, a name; one named twice is opened twice: two workers on
 * one device), `all` (every device), `gpus` or `cpus` (every device of that
 * type). False, said on stderr, where one cannot be opened. */
static bool open_devices(const char *spec, clf_ctx_t **ctx, size_t *n)
{
    char req[SERVE_MAX_DEVICES][256];
    size_t k = 0;
    const bool every = spec && !strcmp(spec, "all"), gpus = spec && !strcmp(spec, "gpus"),
               cpus = spec && !strcmp(spec, "cpus");
    if (every || gpus || cpus) {
        struct clf_device_info *devs = NULL;
        int nd = 0;
        const clf_status st = clf_devices_list(&devs, &nd);
        if (st != CLF_OK) {
            cli_fail(NULL, st, "listing the devices");
            return false;
        }
        for (int d = 0; d < nd && k < SERVE_MAX_DEVICES; d++)
            if (every || (gpus && (devs[d].type & CL_DEVICE_TYPE_GPU)) || (cpus && (devs[d].type & CL_DEVICE_TYPE_CPU)))
                snprintf(req[k++], sizeof req[0], "%d", d);
        free(devs);
        if (!k) {
            fprintf(stderr, "clformer serve: --device %s: no such device here (clformer devices lists them)\n", spec);
            return false;
        }
    } else if (spec && strchr(spec, ',')) {
        for (const char *p = spec;; k++) {
            const char *end = strchr(p, ',');
            const size_t len = end ? (size_t)(end - p) : strlen(p);
            if (k == SERVE_MAX_DEVICES || !len || len >= sizeof req[0]) {
                if (k == SERVE_MAX_DEVICES)
                    fprintf(stderr, "clformer serve: --device %s: more than %d devices\n", spec, SERVE_MAX_DEVICES);
                else
                    fprintf(stderr, "clformer serve: --device %s: %s\n", spec,
                            len ? "an item too long" : "an empty item (want a comma-separated list such as 0,1)");
                return false;
            }
            memcpy(req[k], p, len), req[k][len] = 0;
            if (!end) {
                k++;
                break;
            }
            p = end + 1;
        }
    } else {
        *n = 1;
        return (ctx[0] = cli_open(spec)) != NULL;
    }
    for (*n = 0; *n < k; (*n)++)
        if (!(ctx[*n] = cli_open(req[*n]))) {
            fprintf(stderr, "clformer serve: --device %s: item %zu (%s) did not open\n", spec, *n + 1, req[*n]);
            return false;
        }
    return true;
}

/* Reads --api-keys' file: one key a line (blank lines match nothing). */
static bool read_keys(const char *path, struct clf_lines *keys)
{
    clf_status st = clf_lines_read(keys, path);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "reading --api-keys");
        return false;
    }
    for (size_t i = 0; i < keys->n; i++)
        if (keys->line[i][0])
            return true;
    fprintf(stderr, "clformer serve: --api-keys %s holds no key: one key a line\n", path);
    return false;
}

int clf_cmd_serve(int argc, char **argv)
{
    struct serve s = {.host = "127.0.0.1", .port = 5000, .max_chars = 5000, .max_sentences = 256,
                      .drain_seconds = 10, .health_stuck_s = 120, .max_conns = 4096, .max_conns_per_ip = 64, .header_timeout = 10,
                      .body_timeout = 30};
    struct clf_queue_opts qo = {.max_batch_tokens = 2048, .batch_wait_ms = 5, .max_queued = 1024, .continuous = true};
    const char *device = NULL, *keys = NULL, *compute = NULL, *batching = NULL;
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        const char *v = NULL;
        double x = 0;
        if (cli_opt(argc, argv, &i, "--model", &v, &bad)) {
            const char *eq = strchr(v, '='), *dash = eq ? memchr(v, '-', (size_t)(eq - v)) : NULL;
            if (!eq || !dash || dash == v || dash + 1 == eq || !eq[1] || s.n_pairs == SERVE_MAX_PAIRS) {
                fprintf(stderr, "clformer serve: --model wants SRC-TGT=CKPT (such as en-de=model.safetensors), "
                                "at most %d of them, not '%s'\n", SERVE_MAX_PAIRS, v);
                bad = true;
                continue;
            }
            struct serve_pair *p = &s.pairs[s.n_pairs++];
            snprintf(p->source, sizeof p->source, "%.*s", (int)(dash - v), v);
            snprintf(p->target, sizeof p->target, "%.*s", (int)(eq - dash - 1), dash + 1);
            p->ckpt = eq + 1;
        } else if (cli_opt(argc, argv, &i, "--device", &device, &bad) ||
                   cli_opt(argc, argv, &i, "--host", &s.host, &bad) ||
                   cli_opt(argc, argv, &i, "--api-keys", &keys, &bad) ||
                   cli_opt(argc, argv, &i, "--cors-origins", &s.cors_origins, &bad) ||
                   cli_opt(argc, argv, &i, "--compute-type", &compute, &bad))
            continue;
        else if (cli_opt(argc, argv, &i, "--batching", &batching, &bad)) {
            if (strcmp(batching, "rounds") && strcmp(batching, "continuous")) {
                fprintf(stderr, "clformer serve: --batching %s: want rounds or continuous\n", batching);
                return 2;
            }
            qo.continuous = !strcmp(batching, "continuous");
        }
        else if (cli_opt_number(argc, argv, &i, "--port", 0, 65535, true, &x, &bad))
            s.port = (unsigned)x;
        else if (cli_opt_number(argc, argv, &i, "--max-batch-tokens", 1, 1e9, true, &x, &bad))
            qo.max_batch_tokens = (size_t)x;
        else if (cli_opt_number(argc, argv, &i, "--batch-wait-ms", 0, 60000, true, &x, &bad))
            qo.batch_wait_ms = (unsigned)x;
        else if (cli_opt_number(argc, argv, &i, "--max-chars", 1, 1e9, true, &x, &bad))
            s.max_chars = (size_t)x;
        else if (cli_opt_number(argc, argv, &i, "--max-sentences", 1, 1e9, true, &x, &bad))
            s.max_sentences = (size_t)x;
        else if (cli_opt_number(argc, argv, &i, "--req-limit", 1, 1e9, false, &x, &bad))
            s.req_limit = x;
        else if (cli_opt_number(argc, argv, &i, "--chars-per-minute", 1, 1e12, false, &x, &bad))
            s.chars_limit = x;
        else if (cli_opt_number(argc, argv, &i, "--queue", 1, 1e9, true, &x, &bad))
            qo.max_queued = (size_t)x;
        else if (cli_opt_number(argc, argv, &i, "--drain-seconds", 0, 86400, false, &x, &bad))
            s.drain_seconds = x;
        else if (cli_opt_number(argc, argv, &i, "--health-stuck-seconds", 0, 86400, false, &x, &bad))
            s.health_stuck_s = x;
        else if (cli_opt_number(argc, argv, &i, "--max-connections", 1, 1e6, true, &x, &bad))
            s.max_conns = (unsigned)x;
        else if (cli_opt_number(argc, argv, &i, "--max-connections-per-ip", 0, 1e6, true, &x, &bad))
            s.max_conns_per_ip = (unsigned)x;
        else if (cli_opt_number(argc, argv, &i, "--header-timeout", 0, 86400, false, &x, &bad))
            s.header_timeout = x;
        else if (cli_opt_number(argc, argv, &i, "--body-timeout", 0, 86400, false, &x, &bad))
            s.body_timeout = x;
        else if (!bad && !strcmp(argv[i], "--log"))
            s.log = true;
        else if (!bad && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
            usage(stdout);
            return 0;
        } else if (!bad) {
            fprintf(stderr, "clformer serve: unknown option '%s'\n", argv[i]);
            bad = true;
        }
    }
    if (!bad && s.n_pairs == 0) {
        fprintf(stderr, "clformer serve: at least one --model SRC-TGT=CKPT is required\n");
        bad = true;
    }
    for (size_t i = 0; !bad && i < s.n_pairs; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(s.pairs[i].source, s.pairs[j].source) && !strcmp(s.pairs[i].target, s.pairs[j].target)) {
                fprintf(stderr, "clformer serve: --model %s-%s is given twice\n", s.pairs[i].source,
                        s.pairs[i].target);
                bad = true;
            }
    if (bad) {
        usage(stderr);
        return 2;
    }
    struct clf_lines key_lines = {0};
    if (keys) {
        if (!read_keys(keys, &key_lines))
            return 1;
        s.keys = (const char *const *)key_lines.line, s.n_keys = key_lines.n;
    }
    /* with keys, a page of any site could spend a user's key here from the
     * user's browser: no origin unless the operator names them */
    if (!s.cors_origins && !keys)
        s.cors_origins = "*";
    else if (!s.cors_origins)
        fprintf(stderr, "clformer serve: --api-keys without --cors-origins: no browser origin may call this "
                        "server (--cors-origins LIST allows some, or '*' all)\n");
    /* a test hook, as CLF_DIST_FAIL_RANK: the copy of each request's Nth
     * sentence fails as if the host were out of memory */
    const char *fail = getenv("CLF_SERVE_FAIL_COPY");
    s.fail_copy = fail ? strtoul(fail, NULL, 10) : 0;
    /* SIGTERM and SIGINT go to sigwait below, in no other thread */
    main_tid = (pid_t)syscall(SYS_gettid);
    sigaction(SIGTERM, &(struct sigaction){.sa_handler = forward_stop}, NULL);
    sigaction(SIGINT, &(struct sigaction){.sa_handler = forward_stop}, NULL);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-response is that connection's error */

    int rc = 1;
    /* one worker a device: its context, its copy of every model (t[w * n_pairs + i]) */
    clf_ctx_t *ctx[SERVE_MAX_DEVICES] = {0};
    clf_translator_t *t[SERVE_MAX_DEVICES * SERVE_MAX_PAIRS] = {0};
    struct clf_translate_opts o[SERVE_MAX_PAIRS];
    size_t n_dev = 0;
    if (!open_devices(device, ctx, &n_dev))
        goto done;
    for (size_t w = 0; w < n_dev; w++)
        for (size_t i = 0; i < s.n_pairs; i++) {
            clf_translator_t **x = &t[w * s.n_pairs + i];
            clf_status st = clf_translator_init(ctx[w], s.pairs[i].ckpt, NULL, x);
            if (st != CLF_OK) {
                char what[700];
                snprintf(what, sizeof what, "loading --model %s-%s=%s on %s", s.pairs[i].source, s.pairs[i].target,
                         s.pairs[i].ckpt, clf_ctx_device(ctx[w])->device_name);
                cli_fail(ctx[w], st, what);
                goto done;
            }
            if (compute && (st = clf_translator_compute_set(*x, compute)) != CLF_OK) {
                cli_fail(ctx[w], st, "--compute-type");
                goto done;
            }
            if (w == 0)
                o[i] = clf_translator_opts(*x);
        }
    for (size_t w = 0, at = 0; w < n_dev && at < sizeof s.device; w++) {
        const int m = snprintf(s.device + at, sizeof s.device - at, "%s%s", w ? ", " : "",
                               clf_ctx_device(ctx[w])->device_name);
        at += m > 0 ? (size_t)m : 0;
    }
    clf_status st = clf_queue_init_workers(t, n_dev, s.n_pairs, o, &qo, &s.q);
    if (st != CLF_OK) {
        cli_fail(NULL, st, "starting the translation queue");
        goto done;
    }
    s.translators = t;
    if (!serve_limits_init(&s) || !serve_libre_init(&s) || !serve_http_start(&s))
        goto done;
    printf("clformer serve: listening on http://%s:%u (%zu language pair%s, %s)\n", s.host, s.bound_port,
           s.n_pairs, s.n_pairs == 1 ? "" : "s", s.device);
    fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "clformer serve: %s: draining (at most %g s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT",
            s.drain_seconds);
    serve_http_quiesce(&s);
    const double t0 = clf_now();
    const bool all = clf_queue_drain(s.q, s.drain_seconds);
    /* what is left of the drain's time, and a second to send the last answers */
    serve_http_stop(&s, s.drain_seconds - (clf_now() - t0) + 1);
    fprintf(stderr, "clformer serve: %s\n", all ? "drained, stopped" : "stopped; the drain's time ran out first");
    rc = 0;
done:
    serve_http_stop(&s, 0);
    serve_libre_free(&s);
    clf_queue_free(s.q);
    for (size_t k = 0; k < n_dev * s.n_pairs; k++)
        clf_translator_free(t[k]);
    for (size_t w = 0; w < n_dev; w++)
        clf_ctx_free(ctx[w]);
    clf_lines_free(&key_lines);
    serve_limits_free(&s);
    return rc;
}
#endif
