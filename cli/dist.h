/* dist.h: the processes of a data-parallel `clformer train`, and of a
 * `clformer translate` that shards its input (MPI), behind
 * a few calls. Every MPI call of clformer is in dist.c; built without MPI
 * (CMake option CLF_MPI off, or no MPI found) the same calls describe one
 * process: rank 0 of 1, sums that leave buffers as they are, an abort that
 * exits. The library (host/) knows nothing of it.
 *
 * A binary built with MPI also runs without mpirun: it then starts no MPI
 * at all and is one process (dist.c says why). */
#ifndef CLF_DIST_H
#define CLF_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Starts MPI when built with it and started by mpirun (or another MPI
 * launcher), before anything else of the command. */
void dist_init(int *argc, char ***argv);
/* Ends MPI; every rank calls it after its last collective. */
void dist_finalize(void);

int dist_rank(void);        /* 0 .. size-1 */
int dist_size(void);        /* processes in the job */
int dist_local_rank(void);  /* among the job's processes on this machine */
int dist_local_size(void);
bool dist_built(void);      /* built with MPI */

/* In-place sums over every rank (each rank passes the same n). */
void dist_sum_floats(float *x, size_t n);
void dist_sum_doubles(double *x, size_t n);
/* Non-blocking in-place sums of floats over every rank: dist_isum_floats
 * starts one (MPI_Iallreduce; every rank must start the same sums, of the
 * same n, in the same order) and returns at once, x to be left alone
 * until dist_isum_wait; dist_isum_poll moves
 * the started ones along without waiting; dist_isum_wait waits for every
 * one started. Per element the sum is the one dist_sum_floats makes
 * (MPI_SUM over the same ranks: with two ranks a + b, bitwise). */
void dist_isum_floats(float *x, size_t n);
void dist_isum_poll(void);
void dist_isum_wait(void);
/* True on every rank when it is true on any. */
bool dist_any(bool b);
/* True on every rank when every rank passed the same value. */
bool dist_agree(uint64_t v);
/* Waits for every rank. */
void dist_barrier(void);
/* The same without keeping a core busy (MPI_Ibarrier, tested every 20 ms:
 * Open MPI's blocking calls spin), for ranks that may wait long while
 * another works on the same machine. */
void dist_barrier_idle(void);
/* Prints "clformer: rank R of N: msg" and ends the whole job (MPI_Abort):
 * the other ranks are killed instead of waiting for this one forever. */
_Noreturn void dist_abort(const char *msg);
/* When rc is nonzero under mpirun (more than one rank), dist_abort(msg): a
 * rank whose command failed ends the job rather than leave the others
 * waiting in a sum. One process: returns, and the caller reports rc. */
void dist_fail_if(int rc, const char *msg);

/* How far each rank of a job whose ranks work apart has got (`clformer
 * translate`'s shards), for rank 0 to show the whole job's progress and
 * to learn how each rank ended without a collective that a failed rank
 * would have to reach. Every rank but 0 calls dist_report: with
 * DIST_RUNNING as often as it likes (dropped while its last report is
 * still in flight: never blocks), then once with how it ended (sent for
 * sure, after every earlier one). Rank 0 calls dist_collect, which takes
 * in every report arrived so far without waiting, into done[r] and
 * state[r] (dist_size() of each, rank 0's own left to the caller), and
 * says whether any arrived. One process: both do nothing. */
enum { DIST_RUNNING, DIST_FINISHED, DIST_FAILED };
void dist_report(size_t done, int state);
bool dist_collect(size_t *done, int *state);

/* The device of this rank for cli_open: --device (or CLF_DEVICE) as given
 * when it names one device; from a list "0,2" or a type ("gpu", "cpu",
 * "accelerator"), the ranks on one machine take its devices in turn
 * (local rank r the r-th, modulo their count). out (len bytes) holds the
 * answer when it is not the request itself. */
const char *dist_device(const char *request, char *out, size_t len);

/* Seconds spent in dist_sum_* and dist_isum_* so far. */
double dist_sum_seconds(void);

#endif
