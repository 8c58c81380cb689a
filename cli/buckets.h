/* buckets.h: one update's gradients summed across the ranks in buckets,
 * each started as soon as the backward pass has finished its layers,
 * while the rest of the backward runs (PyTorch DDP's gradient buckets).
 *
 * The model's backward hook (clf_backward_hook) names the parameters whose
 * gradients are final, layer by layer (the decoder's last layer first,
 * the embeddings last). Each call enqueues non-blocking reads of them
 * into a host buffer in the order they come; once the gradients read
 * since the last bucket reach `bytes`, those make a bucket, whose sum
 * (dist_isum_floats, MPI_Iallreduce) starts when its reads complete.
 * Buckets are cut at the same points on every rank (the hook names the
 * same parameters in the same order everywhere) and their sums start in
 * the same order, as MPI requires. The host checks the reads and moves
 * the sums along at each hook call and, after the backward, until all are
 * done; then the sums go back to the device's gradient buffer.
 *
 * Per element the sum is what the sum of the whole buffer after the
 * backward gives (dist.h: MPI_SUM over the same ranks). */
#ifndef CLF_BUCKETS_H
#define CLF_BUCKETS_H

#include <clformer/advanced.h>
#include <clformer/model.h>

/* The default bucket size, MB (--bucket-mb): the largest at which every
 * layer of `small` (3.2 MB an encoder layer, 4.2 MB a decoder layer) and
 * of `base` (12.6, 16.8 MB) makes a bucket of its own, so that the first
 * sum starts after the decoder's last layer. PyTorch DDP's 25 MB would make
 * `small`'s 30 MB one bucket, started only after the whole backward. A
 * bucket's own cost, one more MPI message, is microseconds in shared
 * memory, small beside a layer's backward. */
#define GRAD_BUCKET_MB 3.0

struct grad_buckets;

/* Buckets of about `bytes` over m's gradients; NULL when out of host
 * memory (printed). */
struct grad_buckets *grad_buckets_init(clf_ctx_t *ctx, clf_model_t *m, size_t bytes);
void grad_buckets_free(struct grad_buckets *b);
/* Starts an update: the hook to set on its last batch's clf_step_opts. */
const struct clf_backward_hook *grad_buckets_begin(struct grad_buckets *b);
/* After that batch's clf_model_accumulate: waits for the last reads and
 * every sum, and writes the sums into the model's gradients. */
clf_status grad_buckets_finish(struct grad_buckets *b);
/* Buckets the last update was cut into. */
size_t grad_buckets_count(const struct grad_buckets *b);

/* The sum without buckets, after the backward: m's whole gradient buffer
 * down into host (numel floats), summed in place over the ranks
 * (dist_sum_floats), and back. With `seconds`, each part is timed into it
 * (download, sum, upload waited for), for bench allreduce. */
clf_status grads_sum_after(clf_ctx_t *ctx, clf_model_t *m, float *host, double seconds[3]);

/* clf_model_forward_backward of one batch with its gradients summed
 * across the ranks: in buckets b during the backward, or (b NULL) after it
 * through host (NULL too: not summed). The loss and tokens are this
 * rank's. */
clf_status grads_forward_backward(clf_ctx_t *ctx, clf_model_t *m, const struct clf_model_batch *batch,
                                  const struct clf_step_opts *o, struct grad_buckets *b, float *host,
                                  double *loss, double *tokens);

#endif
