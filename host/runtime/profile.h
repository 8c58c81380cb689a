/* profile.h: the profiler's recording side (profile.c): where a launch
 * files its event while profiling, and wall-time spans for calls that
 * enqueue several kernels behind one event (CLBlast, the host GEMMs).
 * Reading the totals is public (clformer/advanced/runtime.h). */
#ifndef CLF_RUNTIME_PROFILE_H
#define CLF_RUNTIME_PROFILE_H

#include "clformer/advanced/runtime.h"

/* Past this many recorded launches the finished ones are folded into the
 * per-name totals, so a long profiled run holds only those in flight. */
#define CLF_PROFILE_FOLD_AT 4096

struct clf_profile_event {
    const char *name;  /* a kernel's name (static for the program's life) */
    cl_event event;    /* or NULL, and then: */
    double seconds;    /* wall time measured around a call */
};

/* Where to put a launch's event: NULL unless profiling. record() files it. */
cl_event *clf_profile_slot(clf_ctx_t *ctx, cl_event *ev);
void clf_profile_record(clf_ctx_t *ctx, const char *name, cl_event ev);
/* For calls that enqueue several kernels and report one event (CLBlast):
 * while profiling, begin() waits for the queue and returns a time stamp,
 * end() waits again and files the wall time in between under name. */
double clf_profile_begin(clf_ctx_t *ctx);
void clf_profile_end(clf_ctx_t *ctx, const char *name, double t0);

#endif
