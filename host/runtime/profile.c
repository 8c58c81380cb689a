/* profile.c: device time per kernel name, from OpenCL events (see
 * clf_ctx_profile_start in clformer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "cl_error.h"
#include "ctx.h"
#include "profile.h"

cl_event *clf_profile_slot(clf_ctx_t *ctx, cl_event *ev)
{
    return ctx->profiling ? ev : NULL;
}

/* Device seconds of a finished launch (or the wall time measured around a
 * call), 0 when its event cannot say. */
static double seconds_of(const struct clf_profile_event *e)
{
    if (!e->event)
        return e->seconds;
    cl_ulong t0 = 0, t1 = 0;
    clGetEventProfilingInfo(e->event, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    clGetEventProfilingInfo(e->event, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    return t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0;
}

/* Adds a launch to its name's total (names are few: one per kernel). */
static void total_add(clf_ctx_t *ctx, const char *name, double secs)
{
    size_t j = 0;
    while (j < ctx->ntotals && strcmp(ctx->totals[j].name, name))
        j++;
    if (j == ctx->ntotals) {
        if (ctx->ntotals == ctx->cap_totals) {
            size_t cap = ctx->cap_totals ? ctx->cap_totals * 2 : 64;
            struct clf_profile_entry *g = realloc(ctx->totals, cap * sizeof *g);
            if (!g)
                return;  /* out of memory: this launch goes uncounted */
            ctx->totals = g;
            ctx->cap_totals = cap;
        }
        memset(&ctx->totals[j], 0, sizeof ctx->totals[j]);
        snprintf(ctx->totals[j].name, sizeof ctx->totals[j].name, "%s", name);
        ctx->ntotals++;
    }
    ctx->totals[j].calls++;
    ctx->totals[j].seconds += secs;
}

/* Folds the launches that have finished (all of them when `all`, after the
 * queue was waited for) into the totals and releases their events, so a
 * long run keeps only the launches still in flight. */
static void fold(clf_ctx_t *ctx, bool all)
{
    size_t kept = 0;
    for (size_t i = 0; i < ctx->nevents; i++) {
        struct clf_profile_event *e = &ctx->events[i];
        cl_int status = CL_COMPLETE;
        if (!all && e->event &&
            clGetEventInfo(e->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) != CL_SUCCESS)
            status = CL_COMPLETE;  /* an event that cannot answer is counted as it is */
        if (status > CL_COMPLETE) {  /* queued, submitted or running: keep, in order */
            ctx->events[kept++] = *e;
            continue;
        }
        total_add(ctx, e->name, status == CL_COMPLETE ? seconds_of(e) : 0);
        if (e->event)
            clReleaseEvent(e->event);
    }
    ctx->nevents = kept;
}

static void add(clf_ctx_t *ctx, const char *name, cl_event ev, double seconds)
{
    if (ctx->nevents >= CLF_PROFILE_FOLD_AT && ctx->nevents == ctx->cap_events)
        fold(ctx, false);
    if (ctx->nevents == ctx->cap_events) {  /* grows only while launches are in flight */
        size_t cap = ctx->cap_events ? ctx->cap_events * 2 : 1024;
        struct clf_profile_event *g = realloc(ctx->events, cap * sizeof *g);
        if (!g) {  /* out of memory: this launch goes uncounted */
            if (ev)
                clReleaseEvent(ev);
            return;
        }
        ctx->events = g;
        ctx->cap_events = cap;
    }
    ctx->events[ctx->nevents++] = (struct clf_profile_event){name, ev, seconds};
}

void clf_profile_record(clf_ctx_t *ctx, const char *name, cl_event ev)
{
    if (ctx->profiling && ev)
        add(ctx, name, ev, 0);
}

double clf_profile_begin(clf_ctx_t *ctx)
{
    if (!ctx->profiling)
        return 0;
    clFinish(ctx->queue);
    return clf_now();
}

void clf_profile_end(clf_ctx_t *ctx, const char *name, double t0)
{
    if (!ctx->profiling)
        return;
    clFinish(ctx->queue);
    add(ctx, name, NULL, clf_now() - t0);
}

clf_status clf_ctx_profile_start(clf_ctx_t *ctx)
{
    clf_status st = CLF_OK;
    cl_int err;
    if (ctx->profiling)
        return CLF_OK;
    CLF_CL_TRY(ctx, clFinish(ctx->queue));
    cl_command_queue q = clCreateCommandQueue(ctx->context, ctx->dev.device, CL_QUEUE_PROFILING_ENABLE, &err);
    CLF_CL_CHECK(ctx, err, "clCreateCommandQueue(CL_QUEUE_PROFILING_ENABLE)");
    clReleaseCommandQueue(ctx->queue);
    ctx->queue = q;
    ctx->profiling = true;
fail:
    return st;
}

static int by_time(const void *a, const void *b)
{
    double x = ((const struct clf_profile_entry *)a)->seconds, y = ((const struct clf_profile_entry *)b)->seconds;
    return (x < y) - (x > y);
}

clf_status clf_ctx_profile_report(clf_ctx_t *ctx, struct clf_profile_entry **out, size_t *n)
{
    clf_status st = CLF_OK;
    *out = NULL;
    *n = 0;
    CLF_CL_TRY(ctx, clFinish(ctx->queue));
    fold(ctx, true);
    struct clf_profile_entry *e = calloc(ctx->ntotals ? ctx->ntotals : 1, sizeof *e);
    if (!e) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    if (ctx->ntotals)
        memcpy(e, ctx->totals, ctx->ntotals * sizeof *e);
    qsort(e, ctx->ntotals, sizeof *e, by_time);
    *out = e;
    *n = ctx->ntotals;
fail:
    fold(ctx, true);
    ctx->ntotals = 0;
    return st;
}
