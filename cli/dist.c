/* dist.c: every MPI call of clformer (dist.h), the device each rank
 * takes, the ranks' progress reports to rank 0, and the one-process
 * fallback compiled when the build has no MPI (CLF_MPI undefined). Sums
 * are MPI_Allreduce over MPI_COMM_WORLD, in chunks of at most 2^30
 * elements (MPI counts are ints).
 *
 * MPI starts only under a launcher (mpirun, mpiexec, srun: the variables
 * they set, below). Open MPI could start a job of one on its own (the
 * singleton start), but that spawns a daemon and sets up PMIx's shared
 * memory, which fails where files are limited (test_crash's full disk,
 * `ulimit -f`, ended MPI_Init itself): a process started plainly is a
 * plain process, as in a build without MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>  /* nanosleep */

#include <clformer/advanced/clock.h>
#include <clformer/advanced.h>
#include "dist.h"

static double sum_seconds;

double dist_sum_seconds(void) { return sum_seconds; }

#ifdef CLF_MPI

#include <mpi.h>

static int rank, size = 1, local_rank, local_size = 1;
static bool active;  /* MPI_Init was called */

/* Started by an MPI launcher: Open MPI's mpirun, PMIx (Open MPI 5,
 * Slurm), or PMI (MPICH's Hydra, Slurm's srun --mpi=pmi2). */
static bool launched(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

void dist_init(int *argc, char ***argv)
{
    if (!launched())
        return;
    active = true;
    int started;
    MPI_Initialized(&started);
    if (!started)
        MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* the ranks that share this machine's memory: its devices are theirs */
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_size);
    MPI_Comm_free(&local);
}

void dist_finalize(void)
{
    if (!active)
        return;
    int started, ended;
    MPI_Initialized(&started);
    MPI_Finalized(&ended);
    if (started && !ended)
        MPI_Finalize();
}

int dist_rank(void) { return rank; }
int dist_size(void) { return size; }
int dist_local_rank(void) { return local_rank; }
int dist_local_size(void) { return local_size; }
bool dist_built(void) { return true; }

static void sum(void *x, size_t n, MPI_Datatype type, size_t elem)
{
    if (size == 1)
        return;
    double t0 = clf_now();
    const size_t chunk = (size_t)1 << 30;
    for (size_t i = 0; i < n; i += chunk)
        MPI_Allreduce(MPI_IN_PLACE, (char *)x + i * elem, (int)(n - i < chunk ? n - i : chunk), type, MPI_SUM,
                      MPI_COMM_WORLD);
    sum_seconds += clf_now() - t0;
}

void dist_sum_floats(float *x, size_t n) { sum(x, n, MPI_FLOAT, sizeof *x); }
void dist_sum_doubles(double *x, size_t n) { sum(x, n, MPI_DOUBLE, sizeof *x); }

/* The sums started and not yet waited for (MPI_Iallreduce's requests). */
static MPI_Request *pending;
static size_t npending, cap_pending;

void dist_isum_floats(float *x, size_t n)
{
    if (size == 1)
        return;
    double t0 = clf_now();
    const size_t chunk = (size_t)1 << 30;
    for (size_t i = 0; i < n; i += chunk) {
        if (npending == cap_pending) {
            size_t cap = cap_pending ? 2 * cap_pending : 64;
            MPI_Request *r = realloc(pending, cap * sizeof *r);
            if (!r)  /* a blocking sum here would meet the others' non-blocking one */
                dist_abort("out of host memory for the gradient sums' requests");
            pending = r, cap_pending = cap;
        }
        MPI_Iallreduce(MPI_IN_PLACE, x + i, (int)(n - i < chunk ? n - i : chunk), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                       &pending[npending++]);
    }
    sum_seconds += clf_now() - t0;
}

/* Open MPI moves a non-blocking collective along only inside MPI calls
 * (no progress thread by default): MPI_Testall is that call. */
void dist_isum_poll(void)
{
    if (!npending)
        return;
    double t0 = clf_now();
    int done;
    MPI_Testall((int)npending, pending, &done, MPI_STATUSES_IGNORE);
    if (done)
        npending = 0;
    sum_seconds += clf_now() - t0;
}

void dist_isum_wait(void)
{
    double t0 = clf_now();
    if (npending)
        MPI_Waitall((int)npending, pending, MPI_STATUSES_IGNORE);
    npending = 0;
    free(pending);
    pending = NULL, cap_pending = 0;
    sum_seconds += clf_now() - t0;
}

bool dist_any(bool b)
{
    int v = b;
    if (size > 1)
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return v != 0;
}

bool dist_agree(uint64_t v)
{
    uint64_t lo = v, hi = v;
    if (size > 1) {
        MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    }
    return lo == hi;
}

void dist_barrier(void)
{
    if (size > 1)
        MPI_Barrier(MPI_COMM_WORLD);
}

/* dist_report's messages: {done, state} as two uint64, one tag, so that
 * MPI's order between two ranks (messages do not overtake each other)
 * puts a rank's last report after all its earlier ones */
enum { REPORT_TAG = 48 };
static uint64_t report_buf[2];
static MPI_Request report_req = MPI_REQUEST_NULL;

void dist_report(size_t done, int state)
{
    if (size == 1 || rank == 0)
        return;
    int flag;
    MPI_Test(&report_req, &flag, MPI_STATUS_IGNORE);  /* true for MPI_REQUEST_NULL */
    if (!flag && state == DIST_RUNNING)
        return;
    if (!flag)
        MPI_Wait(&report_req, MPI_STATUS_IGNORE);
    report_buf[0] = done, report_buf[1] = (uint64_t)state;
    if (state == DIST_RUNNING)
        MPI_Isend(report_buf, 2, MPI_UINT64_T, 0, REPORT_TAG, MPI_COMM_WORLD, &report_req);
    else
        MPI_Send(report_buf, 2, MPI_UINT64_T, 0, REPORT_TAG, MPI_COMM_WORLD);
}

bool dist_collect(size_t *done, int *state)
{
    bool any = false;
    for (;;) {
        int flag;
        MPI_Status s;
        if (size == 1 || rank != 0 || (MPI_Iprobe(MPI_ANY_SOURCE, REPORT_TAG, MPI_COMM_WORLD, &flag, &s), !flag))
            return any;
        uint64_t msg[2];
        MPI_Recv(msg, 2, MPI_UINT64_T, s.MPI_SOURCE, REPORT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        done[s.MPI_SOURCE] = (size_t)msg[0];
        state[s.MPI_SOURCE] = (int)msg[1];
        any = true;
    }
}

void dist_barrier_idle(void)
{
    if (size == 1)
        return;
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    const struct timespec nap = {0, 20000000};
    for (int done = 0; MPI_Test(&r, &done, MPI_STATUS_IGNORE), !done;)
        nanosleep(&nap, NULL);
}

_Noreturn void dist_abort(const char *msg)
{
    fprintf(stderr, "clformer: rank %d of %d: %s\n", rank, size, msg);
    fflush(stderr);
    if (active)
        MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);  /* MPI_Abort does not return; the compiler cannot know */
}

#else /* one process */

void dist_init(int *argc, char ***argv) { (void)argc, (void)argv; }
void dist_finalize(void) {}
int dist_rank(void) { return 0; }
int dist_size(void) { return 1; }
int dist_local_rank(void) { return 0; }
int dist_local_size(void) { return 1; }
bool dist_built(void) { return false; }
void dist_sum_floats(float *x, size_t n) { (void)x, (void)n; }
void dist_sum_doubles(double *x, size_t n) { (void)x, (void)n; }
void dist_isum_floats(float *x, size_t n) { (void)x, (void)n; }
void dist_isum_poll(void) {}
void dist_isum_wait(void) {}
bool dist_any(bool b) { return b; }
bool dist_agree(uint64_t v) { (void)v; return true; }
void dist_barrier(void) {}
void dist_barrier_idle(void) {}
void dist_report(size_t done, int state) { (void)done, (void)state; }
bool dist_collect(size_t *done, int *state) { (void)done, (void)state; return false; }

_Noreturn void dist_abort(const char *msg)
{
    fprintf(stderr, "clformer: rank 0 of 1: %s\n", msg);
    exit(1);
}

#endif

/* (dist.h) Not MPI calls: the same for a build with MPI and without. */
void dist_fail_if(int rc, const char *msg)
{
    if (rc && dist_size() > 1)
        dist_abort(msg);
}

const char *dist_device(const char *request, char *out, size_t len)
{
    const int local_rank = dist_local_rank();
    if (!request)
        request = getenv("CLF_DEVICE");
    if (!request || !*request)
        return request;
    if (strchr(request, ',')) {
        int count = 1;
        for (const char *p = request; (p = strchr(p, ',')); p++)
            count++;
        const char *p = request;
        for (int i = 0; i < local_rank % count; i++)
            p = strchr(p, ',') + 1;
        snprintf(out, len, "%.*s", (int)strcspn(p, ","), p);
        return out;
    }
    cl_device_type type = !strcmp(request, "gpu") ? CL_DEVICE_TYPE_GPU
                          : !strcmp(request, "cpu") ? CL_DEVICE_TYPE_CPU
                          : !strcmp(request, "accelerator") ? CL_DEVICE_TYPE_ACCELERATOR : 0;
    struct clf_device_info *devs;
    int n, count = 0;
    if (!type || clf_devices_list(&devs, &n) != CLF_OK)
        return request;
    for (int i = 0; i < n; i++)
        count += (devs[i].type & type) != 0;
    for (int i = 0, k = 0; i < n && count; i++)
        if ((devs[i].type & type) && k++ == local_rank % count)
            snprintf(out, len, "%d", devs[i].index);
    free(devs);
    return count ? out : request;
}
