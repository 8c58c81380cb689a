/* side.h: one stack of the model alone, for studies that look inside it
 * (tools/reach.c: how far information travels through the layers). Not in
 * the public API (clformer_model.h): a program trains and translates
 * through whole batches of ids; this runs the layers between the
 * embeddings and the output, which only a study of the stack itself needs,
 * and which nothing outside the model could run without its activations.
 * The smallest seam that study needs: tensors in, tensors out. */
#ifndef CLF_MODEL_SIDE_H
#define CLF_MODEL_SIDE_H

#include "clformer.h"

/* One sequence (batch 1, no padding, no dropout) through the encoder's or
 * the decoder's layers (and pre-norm's final norm): x (n, d_model) stands
 * for the embeddings, the decoder's encoder-decoder attention reads mem
 * (n_mem, d_model) as the encoder's output (NULL for the encoder). Then
 * the backward from dy (n, d_model), the gradient at the side's output,
 * to dx (n, d_model), the gradient at x. The side's parameter gradients
 * are added into the model's (clf_model_zero_grad clears them). n and
 * n_mem are at most the config's max_len. Blocks nothing: read dx after
 * the queue is done (a download waits). */
clf_status clf_model_side_grad(clf_model_t *m, enum clf_side side, const clf_tensor *x, const clf_tensor *mem,
                               const clf_tensor *dy, clf_tensor *dx);

#endif
