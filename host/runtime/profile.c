/* profile.c: device time per kernel name, from OpenCL events (see
 * clf_ctx_profile_start in clformer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "internal.h"

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

cl_event *clf_profile_slot(clf_ctx_t *ctx, cl_event *ev)
{
    return ctx->profiling ? ev : NULL;
}

static void add(clf_ctx_t *ctx, const char *name, cl_event ev, double seconds)
{
    if (ctx->nevents == ctx->cap_events) {
        size_t cap = ctx->cap_events ? ctx->cap_events * 2 : 1024;
        struct clf_profile_event *g = realloc(ctx->events, cap * sizeof *g);
        if (!g) {  /* out of memory: this launch goes uncounted */
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
    return wall();
}

void clf_profile_end(clf_ctx_t *ctx, const char *name, double t0)
{
    if (!ctx->profiling)
        return;
    clFinish(ctx->queue);
    add(ctx, name, NULL, wall() - t0);
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
    struct clf_profile_entry *e = NULL;
    size_t ne = 0;
    *out = NULL;
    *n = 0;
    CLF_CL_TRY(ctx, clFinish(ctx->queue));
    e = calloc(ctx->nevents ? ctx->nevents : 1, sizeof *e);
    if (!e) {
        st = clf_error_set(ctx, CLF_ERR_MEMORY, "out of host memory");
        goto fail;
    }
    for (size_t i = 0; i < ctx->nevents; i++) {
        cl_ulong t0 = 0, t1 = 0;
        double secs = ctx->events[i].seconds;
        if (ctx->events[i].event) {
            clGetEventProfilingInfo(ctx->events[i].event, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
            clGetEventProfilingInfo(ctx->events[i].event, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
            secs = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0;
        }
        size_t j = 0;
        while (j < ne && strcmp(e[j].name, ctx->events[i].name))
            j++;
        if (j == ne) {
            snprintf(e[j].name, sizeof e[j].name, "%s", ctx->events[i].name);
            ne++;
        }
        e[j].calls++;
        e[j].seconds += secs;
    }
    qsort(e, ne, sizeof *e, by_time);
    *out = e;
    *n = ne;
    e = NULL;
fail:
    for (size_t i = 0; i < ctx->nevents; i++)
        if (ctx->events[i].event)
            clReleaseEvent(ctx->events[i].event);
    ctx->nevents = 0;
    free(e);
    return st;
}
