/* decode.h: incremental decoding state (decode.c) used by the searches
 * (search.c). */
#ifndef CLF_MODEL_DECODE_H
#define CLF_MODEL_DECODE_H

#include "model_internal.h"

/* The log-probability a forbidden token (pad, with the config's
 * forbid_pad) gets: finite, so that no kernel meets an infinity, and far
 * below any real one. */
#define CLF_FORBIDDEN_LOGP (-1.0e30f)

struct decoder {
    clf_model_t *m;
    size_t rows, beam, max_steps;       /* rows: live hypotheses (whole beams of the live sentences) */
    size_t room, width;                 /* the most sentences and source positions (with EOS) it holds */
    int32_t *lens;                      /* (room) source lengths of the live sentences, key_len's host copy */
    int32_t *pos, *pos_next;            /* (room·beam) each row's next position; scratch of reorder and step */
    struct clf_upload pos_up, len_up;   /* the rows' positions and position + 1, when they differ */
    struct clf_kv_cache *self, *cross;  /* per decoder layer */
    clf_tensor pos_table;               /* (max_steps, d) the sinusoids, once (learned: unused) */
    clf_tensor embedded;                /* (rows, d) the step's token embeddings */
    clf_tensor f_out, normed;           /* (rows, d) a sublayer's (struct sublayer_acts), reused by each */
    clf_tensor resid[2];                /* (rows, d) alternate: pre-norm's input u is the last sublayer's resid */
    clf_tensor ln_mean, ln_rstd;        /* (rows) */
    clf_tensor hidden;                  /* (rows, d_ff) FFN activations */
    clf_tensor logits, logp;            /* (rows, vocab); logp allocated by the first step that writes it */
    clf_tensor lse;                     /* (rows) the logits' log-sum-exp, when logp is not written */
    bool logp_ready;                    /* the step wrote logp (else top-k reads logits - lse) */
    struct clf_upload tok_up;           /* the step's tokens, i32 (rows) */
    clf_tensor key_len;                 /* i32 (live sentences): the cross caches' memory rows */
    size_t topk;                        /* candidates per row the buffers below hold (0: none yet) */
    clf_tensor top_val, eos_logp;       /* (rows, topk), (rows) */
    clf_tensor top_idx;                 /* i32 (rows, topk) */
};

/* An empty decoder with room for `room` sentences of beam hypotheses each,
 * sources of at most `width` tokens (with EOS) and max_steps tokens out. */
clf_status clf_decoder_init(struct decoder *d, clf_model_t *m, size_t room, size_t width, size_t beam,
                            size_t max_steps);
void clf_decoder_free(struct decoder *d);
/* The bytes clf_decoder_init allocates for these sizes (and the step's log-
 * probabilities, which some searches add). */
size_t clf_decoder_bytes(const clf_model_t *m, size_t room, size_t width, size_t beam, size_t max_steps);
/* Encodes src (n, src_len; ids + EOS, padded; src_len <= width) and adds
 * its sentences after the live ones: n·beam new rows at position 0, whose
 * first tokens the next step takes. Sentences added between steps decode
 * beside the others at positions of their own. */
clf_status clf_decoder_add(struct decoder *d, const int32_t *src, size_t n, size_t src_len);
/* Feeds tokens (rows, the live ones), each row at its next position (0
 * after clf_decoder_add, then one more each step): the log-probabilities of the
 * next token are left on the device and, when logp is not NULL, copied
 * into it (rows, vocab); with the config's forbid_pad, pad's are
 * CLF_FORBIDDEN_LOGP. When neither asks for them whole, the step leaves
 * the logits and their log-sum-exp instead (the same values, not written
 * out: clf_decoder_topk computes the ones it reads). */
clf_status clf_decoder_step(struct decoder *d, const int32_t *tokens, float *logp);
/* After clf_decoder_step: the k best next tokens of each row, best first (equal
 * log-probabilities: the lower id first; `skip` >= 0 left out): val and idx
 * (rows, k), idx -1 past the vocabulary; eos (rows) the log-probability of
 * EOS (the config's eos_id). Only these cross to the host. */
clf_status clf_decoder_topk(struct decoder *d, size_t k, int skip, float *val, int32_t *idx, float *eos);
/* Keeps n <= rows rows: row r continues the hypothesis that was row
 * src_rows[r] (n entries). With n < rows the hypotheses left out are gone
 * (their sentences finished): the source memory, lengths and positions
 * follow the rows kept, and later steps take and give n rows (n = 0
 * empties the decoder). */
clf_status clf_decoder_reorder(struct decoder *d, const int32_t *src_rows, size_t n);

#endif
