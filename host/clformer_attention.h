/* clformer_attention.h: see clformer.h. Included by clformer.h. */
#ifndef CLFORMER_ATTENTION_H
#define CLFORMER_ATTENTION_H
#endif
