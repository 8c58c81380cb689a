/* metrics.c: GET /metrics in Prometheus' text format: the queue's counters
 * and histograms (clf_queue_stats), the HTTP statuses sent, the devices
 * and each one's worker (clf_queue_worker_stats): batches, sentences,
 * busy seconds (their rate is the device's utilisation), whether it
 * serves. */
#define _GNU_SOURCE /* open_memstream */
#ifdef CLF_HAVE_MHD /* without it, cmd_serve.c says so */
#include <stdlib.h>
#include <string.h>

#include "http.h"

static void prom_label(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '\\' || *s == '"')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
}

static void histogram(FILE *f, const char *name, const char *help, const double *bounds, size_t nb,
                      const uint64_t *counts, double sum)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < nb; i++) {
        cum += counts[i];
        fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)cum);
    }
    cum += counts[nb];
    fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, (unsigned long long)cum, name, sum,
            name, (unsigned long long)cum);
}

/* One family a worker counter, each worker labelled by its device and
 * index (two workers may share a device). */
static void workers(FILE *f, clf_queue_t *q)
{
    const size_t n = clf_queue_workers(q);
    struct clf_queue_worker_stats *ws = calloc(n, sizeof *ws);
    if (!ws)
        return;
    for (size_t k = 0; k < n; k++)
        clf_queue_worker_stats(q, k, &ws[k]);
    static const struct {
        const char *name, *help, *type;
    } m[] = {
        {"clformer_device_info", "an OpenCL device serving, one worker each", "gauge"},
        {"clformer_worker_up", "1 while the device's worker serves, 0 once taken out (its device failed)", "gauge"},
        {"clformer_worker_batches_total", "batches (rounds, a stream's takes) of the device's worker", "counter"},
        {"clformer_worker_sentences_total", "sentences the device's worker translated", "counter"},
        {"clformer_worker_busy_seconds_total", "seconds the device's worker decoded (its rate: the utilisation)",
         "counter"},
        {"clformer_worker_device_failures_total", "translator calls that failed as the device fails", "counter"},
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m[i].name, m[i].help, m[i].name, m[i].type);
        for (size_t k = 0; k < n; k++) {
            fprintf(f, "%s{device=\"", m[i].name);
            prom_label(f, ws[k].device);
            fprintf(f, "\",worker=\"%zu\"} ", k);
            switch (i) {
            case 0: fputs("1\n", f); break;
            case 1: fprintf(f, "%d\n", !ws[k].out); break;
            case 2: fprintf(f, "%llu\n", (unsigned long long)ws[k].batches); break;
            case 3: fprintf(f, "%llu\n", (unsigned long long)ws[k].sentences); break;
            case 4: fprintf(f, "%.6f\n", ws[k].busy_s); break;
            default: fprintf(f, "%llu\n", (unsigned long long)ws[k].device_failures); break;
            }
        }
    }
    free(ws);
}

void serve_metrics(struct serve_req *rq, struct reply *r)
{
    struct serve_http *h = rq->h;
    struct clf_queue_stats st;
    clf_queue_stats(h->s->q, &st);
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    if (!serve_stream_open(&f, &buf, &len))
        return serve_error_reply(r, 503, "out of memory");
    const struct {
        const char *name, *help;
        unsigned long long v;
        bool gauge;
    } m[] = {
        {"clformer_requests_total", "translation requests accepted by the queue", st.requests, false},
        {"clformer_requests_rejected_total", "translation requests refused because the queue was full", st.rejected,
         false},
        {"clformer_sentences_total", "sentences translated", st.sentences, false},
        {"clformer_sentences_failed_total", "sentences whose translation failed or was drained", st.failed, false},
        {"clformer_sentences_cancelled_total", "sentences dropped because their client left", st.cancelled, false},
        {"clformer_source_tokens_total", "source subwords translated, EOS included", st.source_tokens, false},
        {"clformer_queue_sentences", "sentences waiting", st.queued, true},
        {"clformer_running_sentences", "sentences being translated", st.running, true},
        {"clformer_decode_steps_total", "decoding steps of continuous batching", st.steps, false},
        {"clformer_decode_step_sentences_total",
         "sentences decoding, summed over those steps (over clformer_decode_steps_total: the batch's mean "
         "occupancy)", st.step_sentences, false},
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", m[i].name, m[i].help, m[i].name,
                m[i].gauge ? "gauge" : "counter", m[i].name, m[i].v);
    fputs("# HELP clformer_http_responses_total HTTP responses by status\n"
          "# TYPE clformer_http_responses_total counter\n", f);
    for (unsigned c = 100; c < 600; c++) {
        const unsigned long n = atomic_load(&h->codes[c]);
        if (n)
            fprintf(f, "clformer_http_responses_total{code=\"%u\"} %lu\n", c, n);
    }
    static const double lb[] = CLF_QUEUE_LATENCY_BOUNDS, bb[] = CLF_QUEUE_BATCH_BOUNDS;
    histogram(f, "clformer_batch_sentences", "sentences a batch (one call of the translator)", bb,
              CLF_QUEUE_BATCH_BUCKETS - 1, st.batch_hist, (double)st.batch_sentences);
    histogram(f, "clformer_request_latency_seconds", "seconds from a request's submission to its last sentence",
              lb, CLF_QUEUE_LATENCY_BUCKETS - 1, st.latency_hist, st.latency_sum);
    workers(f, h->s->q);
    fclose(f);
    *r = (struct reply){.code = 200, .body = buf, .len = len, .type = "text/plain; version=0.0.4"};
}
#endif
