/* buckets.c: gradients summed across the ranks in buckets that start
 * while the backward pass still runs (buckets.h says how). Shapes: the
 * model's flat gradient buffer (numel floats), its parameter i spanning
 * [offset_i, offset_i+1) (alignment padding included, so that the spans
 * tile the buffer: the sum after the backward sums the padding too); the
 * host's stage (numel) holds them in the order the hook named them. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <clformer/advanced/clock.h>
#include "buckets.h"
#include "dist.h"

/* A run of parameters adjacent in the flat buffer, read in one go into
 * the stage at `stage`. */
struct span {
    size_t flat, stage, n;
};

/* Floats [stage, stage + n) of the stage, complete when `read` (its last
 * read's event: the queue is in order) is. */
struct bucket {
    size_t stage, n;
    cl_event read;
};

struct grad_buckets {
    clf_ctx_t *ctx;
    clf_tensor *grads;
    const struct clf_param *params;
    size_t nparams, numel, target;  /* target: floats per bucket */
    float *stage;
    struct span *spans;             /* (nparams) at most one per parameter */
    struct bucket *buckets;         /* (nparams) at most one per hook call */
    size_t nspans, nbuckets;
    size_t started;                 /* buckets whose sum has started */
    size_t filled, cut;             /* floats read into the stage; where the open bucket starts */
    cl_event last;                  /* the latest read, the open bucket's */
    struct clf_backward_hook hook;
};

static size_t param_end(const struct grad_buckets *b, size_t i)
{
    return i + 1 < b->nparams ? b->params[i + 1].offset : b->numel;
}

/* Enqueues the read of flat [flat, flat + n) to the end of the stage. */
static clf_status read_span(struct grad_buckets *b, size_t flat, size_t n)
{
    clf_tensor v;
    cl_event e = NULL;
    if (b->nspans == b->nparams || b->filled + n > b->numel) {  /* a parameter named twice */
        fprintf(stderr, "clformer: the backward hook named more than the %zu gradients\n", b->numel);
        return CLF_ERR_ARG;
    }
    clf_status st = clf_tensor_view(b->ctx, b->grads, flat, 1, &n, &v);
    if (st == CLF_OK)
        st = clf_tensor_download_start(b->ctx, &v, b->stage + b->filled, &e);
    if (st != CLF_OK) {
        clf_event_release(e);
        return st;
    }
    clf_event_release(b->last);
    b->last = e;
    b->spans[b->nspans++] = (struct span){flat, b->filled, n};
    b->filled += n;
    return CLF_OK;
}

/* The floats read since the last cut become a bucket. */
static void cut(struct grad_buckets *b)
{
    if (b->filled == b->cut)
        return;
    b->buckets[b->nbuckets++] = (struct bucket){b->cut, b->filled - b->cut, b->last};
    b->last = NULL;
    b->cut = b->filled;
}

/* Starts the sums of the buckets whose reads are done, in order, and
 * moves the started ones along; *all: every bucket's sum has started. */
static clf_status start_ready(struct grad_buckets *b, bool *all)
{
    clf_status st = CLF_OK;
    while (b->started < b->nbuckets) {
        struct bucket *k = &b->buckets[b->started];
        bool done;
        if ((st = clf_event_done(b->ctx, k->read, &done)) != CLF_OK || !done)
            break;
        dist_isum_floats(b->stage + k->stage, k->n);
        b->started++;
    }
    dist_isum_poll();
    if (all)
        *all = b->started == b->nbuckets;
    return st;
}

/* (clf_backward_hook) params[0..n) are final: read them, in runs of
 * adjacent ones; cut a bucket once it holds enough. */
static clf_status on_final(void *user, const size_t *params, size_t n)
{
    struct grad_buckets *b = user;
    clf_status st = CLF_OK;
    for (size_t j = 0, k; j < n && st == CLF_OK; j = k) {
        for (k = j + 1; k < n && params[k] == params[k - 1] + 1;)
            k++;
        size_t lo = b->params[params[j]].offset;
        st = read_span(b, lo, param_end(b, params[k - 1]) - lo);
    }
    if (st == CLF_OK && b->filled - b->cut >= b->target)
        cut(b);
    return st == CLF_OK ? start_ready(b, NULL) : st;
}

static void release_events(struct grad_buckets *b)
{
    for (size_t i = 0; i < b->nbuckets; i++)
        clf_event_release(b->buckets[i].read);
    clf_event_release(b->last);
    b->last = NULL;
}

struct grad_buckets *grad_buckets_init(clf_ctx_t *ctx, clf_model_t *m, size_t bytes)
{
    struct grad_buckets *b = calloc(1, sizeof *b);
    size_t np;
    const struct clf_param *p = clf_model_params(m, &np);
    if (b) {
        *b = (struct grad_buckets){.ctx = ctx, .grads = clf_model_grads(m), .params = p, .nparams = np,
                                   .numel = clf_model_numel(m), .target = bytes / sizeof(float)};
        b->stage = malloc(b->numel * sizeof *b->stage);
        b->spans = malloc(np * sizeof *b->spans);
        b->buckets = calloc(np, sizeof *b->buckets);
        b->hook = (struct clf_backward_hook){on_final, b};
        if (!b->target)
            b->target = 1;
    }
    if (!b || !b->stage || !b->spans || !b->buckets) {
        fprintf(stderr, "clformer: out of host memory for the gradient buckets (%zu parameters)\n",
                clf_model_numel(m));
        grad_buckets_free(b);
        return NULL;
    }
    return b;
}

void grad_buckets_free(struct grad_buckets *b)
{
    if (!b)
        return;
    release_events(b);
    free(b->stage);
    free(b->spans);
    free(b->buckets);
    free(b);
}

const struct clf_backward_hook *grad_buckets_begin(struct grad_buckets *b)
{
    release_events(b);
    b->nspans = b->nbuckets = b->started = b->filled = b->cut = 0;
    return &b->hook;
}

clf_status grad_buckets_finish(struct grad_buckets *b)
{
    clf_status st = CLF_OK;
    cut(b);
    if (b->filled != b->numel) {
        /* every rank ends the job here alike: the hook is the model's */
        fprintf(stderr, "clformer: the backward hook named %zu of %zu gradients\n", b->filled, b->numel);
        return CLF_ERR_ARG;
    }
    bool all = false;
    const struct timespec nap = {0, 20000};  /* 20 µs between looks at the reads */
    while (st == CLF_OK && (st = start_ready(b, &all)) == CLF_OK && !all)
        nanosleep(&nap, NULL);
    if (st != CLF_OK)
        return st;
    dist_isum_wait();
    for (size_t i = 0; i < b->nspans && st == CLF_OK; i++) {
        clf_tensor v;
        const struct span *s = &b->spans[i];
        if ((st = clf_tensor_view(b->ctx, b->grads, s->flat, 1, &s->n, &v)) == CLF_OK)
            st = clf_tensor_upload(b->ctx, &v, b->stage + s->stage);
    }
    return st;
}

size_t grad_buckets_count(const struct grad_buckets *b) { return b->nbuckets; }

clf_status grads_forward_backward(clf_ctx_t *ctx, clf_model_t *m, const struct clf_model_batch *batch,
                                  const struct clf_step_opts *o, struct grad_buckets *b, float *host,
                                  double *loss, double *tokens)
{
    if (b)
        clf_model_backward_hook(m, grad_buckets_begin(b));
    clf_status st = clf_model_accumulate(m, batch, o);
    if (st == CLF_OK && b)
        st = grad_buckets_finish(b);
    if (st == CLF_OK)
        st = clf_model_loss_take(m, loss, tokens);
    if (st == CLF_OK && !b && host)
        st = grads_sum_after(ctx, m, host, NULL);
    return st;
}

clf_status grads_sum_after(clf_ctx_t *ctx, clf_model_t *m, float *host, double seconds[3])
{
    clf_tensor *g = clf_model_grads(m);
    double t0 = clf_now();
    clf_status st = clf_tensor_download(ctx, g, host);
    if (st != CLF_OK)
        return st;
    double t1 = clf_now();
    dist_sum_floats(host, clf_model_numel(m));
    double t2 = clf_now();
    st = clf_tensor_upload(ctx, g, host);
    if (st == CLF_OK && seconds) {
        st = clf_ctx_finish(ctx);
        seconds[0] = t1 - t0, seconds[1] = t2 - t1, seconds[2] = clf_now() - t2;
    }
    return st;
}
