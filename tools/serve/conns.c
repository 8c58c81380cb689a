/* conns.c: what keeps `clformer serve`'s connections from locking it out.
 * MHD polls every socket from a few threads (http.c), so a socket that
 * sends slowly or not at all costs a file descriptor and MHD's small
 * buffer, not a thread; what bounds how long it may stay is here:
 *
 *   - each TCP connection's deadline (MHD's socket context, struct sock):
 *     --header-timeout for a request's head (from the connection's start,
 *     or from the previous answer on a kept-alive connection), then
 *     --body-timeout for its body. MHD's own timeout counts inactivity
 *     only, so a client sending a byte every few seconds would outlive it;
 *     a reaper thread shuts down a socket whose deadline passed (MHD then
 *     closes it), a body's with 408 first;
 *   - each request's handler (api.c's routes, which may wait on the
 *     translation queue for seconds) runs on a thread of its own while MHD
 *     holds the connection suspended, and resumes it with the reply: a
 *     polling thread never waits for a translation. */
#define _GNU_SOURCE
#ifdef CLF_HAVE_MHD /* without it, cmd_serve.c says so */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <clformer/advanced/clock.h>
#include "http.h"

enum { JOB_NONE, JOB_RUNNING, JOB_DONE };

/* One TCP connection: its deadline and the request handled off MHD's
 * threads. */
struct sock {
    struct sock *prev, *next; /* the list of serve_conns, under its lock */
    MHD_socket fd;
    double deadline; /* clf_now() seconds; 0: none */
    bool body;       /* the deadline bounds a request's body (not its head) */
    atomic_int job;
    struct MHD_Connection *connection;
    struct serve_req rq;
    struct reply r;
};

struct serve_conns {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the reaper's stop */
    struct sock *head;
    pthread_t reaper;
    bool stop;
    atomic_long jobs; /* handlers running */
};

static void ts_after(struct timespec *ts, double s)
{
    clock_gettime(CLOCK_REALTIME, ts);
    const long ns = ts->tv_nsec + (long)(s * 1e9);
    ts->tv_sec += ns / 1000000000, ts->tv_nsec = ns % 1000000000;
}

void serve_send_raw(struct serve_http *h, MHD_socket fd, unsigned code, const char *reason, const char *msg)
{
    char body[256], buf[512];
    snprintf(body, sizeof body, "{\"error\":\"%s\"}", msg); /* msg: plain ASCII of ours, no quotes */
    const int n = snprintf(buf, sizeof buf, "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: "
                           "%zu\r\nConnection: close\r\n\r\n%s", code, reason, strlen(body), body);
    if (n > 0 && (size_t)n < sizeof buf)
        (void)!send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (code < 600)
        atomic_fetch_add(&h->codes[code], 1);
}

/* Every 100 ms: shuts down the sockets past their deadline. MHD sees the
 * end of input and closes the connection (and tells conn_notify). */
static void *reaper(void *arg)
{
    struct serve_http *h = arg;
    struct serve_conns *cs = h->conns;
    pthread_mutex_lock(&cs->lock);
    while (!cs->stop) {
        struct timespec ts;
        ts_after(&ts, 0.1);
        pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
        const double now = clf_now();
        for (struct sock *k = cs->head; k && !cs->stop; k = k->next)
            if (k->deadline && now > k->deadline) {
                if (k->body) /* a head cut short gets no answer: it may be a kept-alive connection's idle time */
                    serve_send_raw(h, k->fd, 408, "Request Timeout",
                                   "Request Timeout: the body took longer than --body-timeout");
                shutdown(k->fd, SHUT_RDWR);
                k->deadline = 0;
            }
    }
    pthread_mutex_unlock(&cs->lock);
    return NULL;
}

bool serve_conns_init(struct serve_http *h)
{
    struct serve_conns *cs = calloc(1, sizeof *cs);
    if (!cs)
        return false;
    pthread_mutex_init(&cs->lock, NULL);
    pthread_cond_init(&cs->wake, NULL);
    h->conns = cs;
    if (pthread_create(&cs->reaper, NULL, reaper, h)) {
        pthread_mutex_destroy(&cs->lock), pthread_cond_destroy(&cs->wake), free(cs);
        h->conns = NULL;
        return false;
    }
    return true;
}

void serve_conns_wait_jobs(struct serve_http *h)
{
    /* a handler ends once its queue request is done, which the drain
     * before this saw to; MHD must not stop with a connection suspended */
    while (atomic_load(&h->conns->jobs) > 0)
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
}

void serve_conns_free(struct serve_http *h)
{
    struct serve_conns *cs = h->conns;
    if (!cs)
        return;
    pthread_mutex_lock(&cs->lock);
    cs->stop = true;
    pthread_cond_signal(&cs->wake);
    pthread_mutex_unlock(&cs->lock);
    pthread_join(cs->reaper, NULL);
    pthread_mutex_destroy(&cs->lock), pthread_cond_destroy(&cs->wake);
    free(cs);
    h->conns = NULL;
}

static void deadline_set(struct serve_conns *cs, struct sock *k, double seconds, bool body)
{
    pthread_mutex_lock(&cs->lock);
    k->deadline = seconds > 0 ? clf_now() + seconds : 0, k->body = body;
    pthread_mutex_unlock(&cs->lock);
}

void serve_conns_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe)
{
    struct serve_http *h = cls;
    struct serve_conns *cs = h->conns;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct sock *k = calloc(1, sizeof *k);
        if (!k || !ci) { /* no guard for it: refused */
            free(k);
            if (ci)
                shutdown(ci->connect_fd, SHUT_RDWR);
            return;
        }
        k->fd = ci->connect_fd, k->connection = connection;
        k->deadline = h->s->header_timeout > 0 ? clf_now() + h->s->header_timeout : 0;
        pthread_mutex_lock(&cs->lock);
        k->next = cs->head;
        if (cs->head)
            cs->head->prev = k;
        cs->head = k;
        pthread_mutex_unlock(&cs->lock);
        *socket_context = k;
    } else if (*socket_context) { /* MHD closes the socket after this: the reaper no longer sees it */
        struct sock *k = *socket_context;
        pthread_mutex_lock(&cs->lock);
        if (k->prev)
            k->prev->next = k->next;
        else
            cs->head = k->next;
        if (k->next)
            k->next->prev = k->prev;
        pthread_mutex_unlock(&cs->lock);
        /* a handler that finished after its client went: MHD, resuming, found the
         * socket closed and never asked for the reply (serve_conns_done), so it is
         * still ours (LeakSanitizer saw it: serve_check's hang-up in rounds) */
        if (atomic_load(&k->job) == JOB_DONE)
            free(k->r.body);
        free(k);
        *socket_context = NULL;
    }
}

static struct sock *sock_of(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void serve_conns_phase(struct serve_http *h, struct MHD_Connection *connection, enum serve_phase phase)
{
    struct sock *k = sock_of(connection);
    if (!k)
        return;
    const struct serve *s = h->s;
    deadline_set(h->conns, k, phase == SERVE_HEAD ? s->header_timeout : phase == SERVE_BODY ? s->body_timeout : 0,
                 phase == SERVE_BODY);
}

static void *job_run(void *arg)
{
    struct sock *k = arg;
    struct serve_conns *cs = k->rq.h->conns;
    serve_route(&k->rq, &k->r);
    atomic_store(&k->job, JOB_DONE);
    MHD_resume_connection(k->connection); /* k may be gone once it returns */
    atomic_fetch_sub(&cs->jobs, 1);
    return NULL;
}

bool serve_conns_run(struct serve_req *rq)
{
    struct sock *k = sock_of(rq->connection);
    if (!k)
        return false;
    struct serve_conns *cs = rq->h->conns;
    k->rq = *rq, k->r = (struct reply){0};
    atomic_store(&k->job, JOB_RUNNING);
    atomic_fetch_add(&cs->jobs, 1);
    MHD_suspend_connection(rq->connection);
    pthread_attr_t a;
    pthread_t t;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 1 << 20);
    const int e = pthread_create(&t, &a, job_run, k);
    pthread_attr_destroy(&a);
    if (e) { /* no thread: a 503 now, through the same resume */
        serve_error_reply(&k->r, 503, "Service Unavailable: no thread for the request, try again later");
        k->r.retry_after = 1;
        atomic_store(&k->job, JOB_DONE);
        MHD_resume_connection(rq->connection);
        atomic_fetch_sub(&cs->jobs, 1);
    }
    return true;
}

bool serve_conns_done(struct MHD_Connection *connection, struct serve_req *rq, struct reply *r)
{
    struct sock *k = sock_of(connection);
    if (!k || atomic_load(&k->job) != JOB_DONE)
        return false;
    *rq = k->rq, *r = k->r;
    atomic_store(&k->job, JOB_NONE);
    return true;
}

#endif
