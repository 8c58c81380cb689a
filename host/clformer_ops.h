/* clformer_ops.h: see clformer.h. Included by clformer.h. */
#ifndef CLFORMER_OPS_H
#define CLFORMER_OPS_H
#endif
