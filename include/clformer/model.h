/* clformer/model.h: the Transformer encoder–decoder on the device, built
 * only from ops and attention: configuration and presets, parameters in
 * one allocation carved into named tensors, forward and backward for a
 * padded batch, Adam, and safetensors checkpoints; decoding, import,
 * checkpoint metadata and quantization. The stable tier: the model's device
 * tensors are clformer/advanced/runtime.h's.
 *
 * Weights are stored (in, out) row-major so that y = x·W; a checkpoint
 * keeps that layout (PyTorch's nn.Linear keeps (out, in): transpose). */
#ifndef CLFORMER_MODEL_H
#define CLFORMER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clformer/device.h"
#include "clformer/status.h"
#include "clformer/text.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* The special ids of our own models and tokenizers (see clformer/text.h):
 * a config's defaults. An imported model brings its own (config pad_id,
 * bos_id, eos_id, unk_id, decoder_start_id). */
#define CLF_PAD_ID 0
#define CLF_BOS_ID 1
#define CLF_EOS_ID 2
#define CLF_UNK_ID 3

enum clf_norm_place { CLF_NORM_POST = 0 /* LayerNorm(x + Sublayer(x)), the paper's */, CLF_NORM_PRE = 1 };
/* Sinusoids interleaved (the paper's: sin at even columns, cos at odd),
 * learned, or sinusoids in halves (Marian's: sin in the first ⌈d/2⌉
 * columns, cos in the rest; see clf_embed_desc). */
enum clf_positions { CLF_POS_SINUSOIDAL = 0, CLF_POS_LEARNED = 1, CLF_POS_SINUSOIDAL_HALVES = 2 };
/* A bias on the output logits (Marian's final_logits_bias): none, trained
 * with the rest, or frozen (kept as loaded: transformers holds it as a
 * buffer, which fine-tuning does not change). */
enum clf_logits_bias { CLF_LOGITS_BIAS_NONE = 0, CLF_LOGITS_BIAS_TRAINED = 1, CLF_LOGITS_BIAS_FROZEN = 2 };
/* The model's two stacks. */
enum clf_side { CLF_SIDE_ENCODER = 0, CLF_SIDE_DECODER = 1 };

struct clf_model_config {
    int enc_layers, dec_layers;
    int d_model, heads, d_ff;
    int vocab;
    int max_len;            /* longest sequence (positions) */
    float dropout;          /* residual, embedding and FFN dropout */
    float label_smoothing;
    float ln_eps;           /* layer-norm epsilon */
    int norm;               /* enum clf_norm_place */
    int positions;          /* enum clf_positions */
    bool share_embeddings;  /* one table for source, target and output; else source has its own */
    int enc_window;         /* restricted encoder self-attention radius r; -1 = full */
    int dec_window;         /* restricted decoder self-attention radius (with causal); -1 = full */
    /* What an imported model may differ in; the presets' values are ours. */
    int activation;         /* enum clf_activation of the FFN: relu */
    int logits_bias;        /* enum clf_logits_bias: none */
    int pad_id, bos_id, eos_id, unk_id;  /* 0, 1, 2, 3 */
    int decoder_start_id;   /* the decoder's first input: bos_id (Marian starts with pad_id) */
    bool forbid_pad;        /* decoding never picks pad (transformers' bad_words_ids [[pad]]): false */
};

/* Fills c with a named preset: "base", "big", "small", "tiny". vocab is
 * left as the preset's default (8000; tiny 64) for the caller to set; the
 * variants take our own models' values (ReLU, no logits bias, ids 0-3,
 * decoding starts with BOS, pad not forbidden). */
clf_status clf_model_config_preset(struct clf_model_config *c, const char *name);
/* Checks every field; a bad one is CLF_ERR_ARG with a message naming it. */
clf_status clf_model_config_check(const struct clf_model_config *c);
/* The longest sentence, in subwords, that training on a model of config c
 * may keep: its EOS and one position to spare fit c's positions, so
 * 2..max_len - 2. *max_len < 0 asks for the default, that bound capped at
 * 100 (what a new model is made for); another value outside it is
 * CLF_ERR_ARG naming the bound (the caller adds its flag and value). */
clf_status clf_model_max_len_fit(const struct clf_model_config *c, int *max_len);
/* Writes the config as a compact JSON object into out; the variant fields
 * (activation .. forbid_pad) only where they differ from the presets', so
 * that our own models' configs read as they always have. */
int clf_model_config_json(const struct clf_model_config *c, char *out, size_t len);

typedef struct clf_model clf_model_t;
/* A device tensor: opaque here, defined in clformer/advanced/runtime.h. */
typedef struct clf_tensor clf_tensor;

/* One named parameter: a view into the model's single allocation. */
struct clf_param {
    char name[96];
    size_t offset;  /* in floats, within the flat parameter buffer */
    int ndim;
    size_t shape[2];
};

/* Creates the model and initialises it as the reference implementations
 * do (Xavier-uniform matrices, embeddings N(0, d_model^-0.5), zero biases,
 * unit gains) from `seed`. */
clf_status clf_model_init(clf_ctx_t *ctx, clf_model_t **m, const struct clf_model_config *c, uint64_t seed);
void clf_model_free(clf_model_t *m);
const struct clf_model_config *clf_model_config(const clf_model_t *m);
/* The parameter table (in checkpoint order) and the flat buffer's length. */
const struct clf_param *clf_model_params(const clf_model_t *m, size_t *count);
size_t clf_model_numel(const clf_model_t *m);
/* The flat buffers themselves (clf_model_weights, clf_model_grads) and
 * the logits are device tensors: clformer/advanced/runtime.h. */

/* A padded batch, row-major, padded with the config's pad_id. tgt_in
 * starts with decoder_start_id; tgt_out is tgt_in shifted by one and ends
 * with eos_id. Source lengths are the count of leading non-pad ids. */
struct clf_model_batch {
    size_t batch, src_len, tgt_len;
    const int32_t *src;     /* (batch, src_len) */
    const int32_t *tgt_in;  /* (batch, tgt_len) */
    const int32_t *tgt_out; /* (batch, tgt_len) */
};

/* Told during a backward pass (clf_model_backward_hook), each time the backward of a layer (the
 * decoder's in reverse, then the encoder's, then the embeddings) has been
 * enqueued, which parameters' gradients that batch will add to no more:
 * params[0..n) index clf_model_params' table. Every parameter is named
 * exactly once per backward, the last call naming all that remain. The
 * work is enqueued, not done: a reader of those gradients enqueues after
 * it on the context's queue. Set it for the last batch of an update to
 * start moving finished gradients (a sum across processes) while the rest
 * of the backward runs; a status other than CLF_OK ends the backward with
 * it. */
struct clf_backward_hook {
    clf_status (*fn)(void *user, const size_t *params, size_t n);
    void *user;
};

struct clf_step_opts {
    bool train;             /* dropout on */
    uint32_t step;          /* keys the dropout masks */
    float grad_scale;       /* gradients are of grad_scale · (summed loss), nonzero */
};

/* The largest batch a caller will pass, each field its own maximum over
 * the batches: sentences, and rows = sentences · padded length per side.
 * Activations are sized by these alone; never pass the largest count times
 * the largest length (batches cut by tokens are many short sentences or few
 * long ones, and that product can be 10-20x the tokens of any batch). */
struct clf_model_shape {
    size_t batch;              /* sentences in one batch */
    size_t src_rows, tgt_rows; /* batch·src_len, batch·tgt_len */
};
/* Raises the maxima in max to cover one batch of that shape. */
void clf_model_shape_add(struct clf_model_shape *max, size_t batch, size_t src_len, size_t tgt_len);
/* Prepares for training batches up to max now (forward_backward also
 * grows the activations on its own, batch by batch): allocates Adam's
 * state and plans activation memory in one allocation instead of one per
 * new largest batch. Each buffer is checked against the device's largest
 * allocation and the total (activations, weights, gradients, Adam's
 * moments) against its memory first; a refusal (CLF_ERR_MEMORY) names the
 * buffer or the total, its size and the limit. */
clf_status clf_model_reserve(clf_model_t *m, const struct clf_model_shape *max);
/* Bytes of device memory the activations take for batches up to max, for
 * config c, without a device (what clf_model_reserve would allocate). */
size_t clf_model_config_activation_bytes(const struct clf_model_config *c, const struct clf_model_shape *max);
/* Bytes the model's activations hold now. */
size_t clf_model_activation_bytes(const clf_model_t *m);

/* Forward alone on one batch (no dropout: validation, scoring), without
 * waiting for the device: the batch's summed label-smoothed loss and
 * target token count stay on the device until clf_model_loss_take, and
 * its logits for clf_model_logits. */
clf_status clf_model_forward(clf_model_t *m, const struct clf_model_batch *b);
/* Forward and backward on one batch, adding o->grad_scale times the
 * gradients of its summed loss into the model's (a grad_scale of 0 is
 * refused: a forward alone is clf_model_forward), without waiting for the
 * device: the loss and token count stay on the device as
 * clf_model_forward's do. Accumulating the batches of an update and
 * taking the loss once lets the host run ahead of the device. */
clf_status clf_model_accumulate(clf_model_t *m, const struct clf_model_batch *b, const struct clf_step_opts *o);
/* Sets the hook (kept by pointer) of the next backward pass only: the
 * next clf_model_accumulate, which clears it. */
void clf_model_backward_hook(clf_model_t *m, const struct clf_backward_hook *hook);
/* Waits for the device and returns the summed loss and tokens of every
 * batch run (clf_model_forward, clf_model_accumulate) since the last take (added in double, batch after
 * batch), then starts afresh. */
clf_status clf_model_loss_take(clf_model_t *m, double *loss_sum, double *tokens);
/* clf_model_accumulate and clf_model_loss_take: one batch's summed loss
 * and token count (with any batches accumulated before it); waits. */
clf_status clf_model_forward_backward(clf_model_t *m, const struct clf_model_batch *b, const struct clf_step_opts *o,
                                      double *loss_sum, double *tokens);

clf_status clf_model_zero_grad(clf_model_t *m);

struct clf_adam_state;
/* One Adam step over all parameters with the paper's β1, β2, ε (state is
 * created on first use); clip_norm 0 disables clipping. */
clf_status clf_model_adam_step(clf_model_t *m, float lr, float clip_norm);
uint32_t clf_model_adam_steps(const clf_model_t *m);
/* Starts the optimizer afresh (fine-tuning a loaded model): no Adam state,
 * step 0 (so that the learning-rate warm-up applies again), and seed keys
 * the dropout masks from here on. */
void clf_model_optimizer_reset(clf_model_t *m, uint64_t seed);
/* Changes what fine-tuning may change of a model's config: its dropout and
 * label smoothing (checked as clf_model_config_check does). */
clf_status clf_model_regularization_set(clf_model_t *m, float dropout, float label_smoothing);

struct clf_ckpt_meta;  /* below */
/* Checkpoints in the safetensors format. __metadata__ holds the model's
 * config and inference description, and meta (NULL: clf_ckpt_meta_init's
 * for m, its step and seed alone). The file is written to a temporary
 * name and renamed. */
clf_status clf_model_save(clf_model_t *m, const char *path, const struct clf_ckpt_meta *meta);
/* Loads a checkpoint: its config comes from the metadata; every tensor is
 * checked against it, and the metadata as clf_ckpt_meta_read checks it
 * (the model takes its step and seed). A bad file is refused with a
 * message naming the file, the tensor or key, and the fault. */
clf_status clf_model_load(clf_ctx_t *ctx, clf_model_t **m, const char *path);
/* The optimizer's state (Adam m and v, step) in a companion file. */
clf_status clf_model_save_optimizer(clf_model_t *m, const char *path);
clf_status clf_model_load_optimizer(clf_model_t *m, const char *path);
/* ----------------------------------------------------------- decoding */

/* The widest beam clf_model_translate takes. */
#define CLF_TRANSLATE_BEAM_MAX 32

/* How a finished hypothesis is scored and when a sentence's search ends:
 *   PAPER  logprob / ((5 + |Y|) / 6)^alpha (|Y| counts EOS); a sentence is
 *          done once beam hypotheses have finished; the last step ends
 *          every hypothesis with EOS's log-probability.
 *   HF     transformers 4.40's generate() (docs/marian.md): logprob /
 *          |Y|^alpha (|Y| counts EOS, not the start id); done when beam
 *          have finished and the worst of them scores at least the step's
 *          best candidate sum / |Y|^alpha (early_stopping false); the last
 *          step forces EOS with log-probability 0 (forced_eos_token_id). */
enum clf_length_penalty { CLF_LENGTH_PENALTY_PAPER = 0, CLF_LENGTH_PENALTY_HF = 1 };

struct clf_translate_opts {
    int beam;        /* hypotheses kept per sentence: 4 in the paper, at most CLF_TRANSLATE_BEAM_MAX */
    float alpha;     /* length penalty exponent: 0.6 in the paper */
    int max_extra;   /* a translation has at most source length + max_extra tokens (50) */
    int nbest;       /* hypotheses returned per sentence, best first (1 <= nbest <= beam) */
    bool greedy;     /* the most probable token at each step, no beam (beam, nbest ignored: 1) */
    int min_length;  /* EOS is not a candidate before this many tokens (1: no empty output; 0 allows
                        one); the length limit still ends a hypothesis. CTranslate2's min_decoding_length */
    int length_penalty; /* enum clf_length_penalty: PAPER */
    int max_output;  /* when > 0, at most this many tokens with EOS whatever the source length, instead
                        (transformers' max_length - 1); 0: max_extra's limit */
};

/* The defaults above: beam 4, alpha 0.6, paper's penalty, max_extra 50,
 * max_output 0, nbest 1, beam search, min_length 1. */
struct clf_translate_opts clf_translate_opts_default(void);

struct clf_hypothesis {
    int32_t *ids;    /* malloc'd, without the decoder's start id and EOS */
    size_t n;
    float score;     /* logprob / length penalty: what the search ranks by */
    float logprob;
};

/* Translates `batch` sources (ids without EOS; the config's eos_id is
 * appended) with
 * incremental decoding: the encoder runs once, each step feeds one token
 * per hypothesis through the decoder's key/value caches. out receives
 * batch·nbest hypotheses (sentence-major); free them with
 * clf_hypotheses_free. A sentence whose search found no ending gets an
 * empty hypothesis with score -inf. */
clf_status clf_model_translate(clf_model_t *m, const int32_t *const *src, const size_t *src_len, size_t batch,
                               const struct clf_translate_opts *o, struct clf_hypothesis *out);
void clf_hypotheses_free(struct clf_hypothesis *h, size_t n);

/* Continuous decoding: sentences join a search already under way, between
 * its steps, and leave it as they finish, each decoded exactly as
 * clf_model_translate decodes it alone (the same hypotheses and scores:
 * its rows keep positions of their own). Before every step, take may give
 * up to `room` more sources (ids without EOS, each at most width tokens,
 * valid until give hands that sentence back) with a tag each, and returns
 * how many; `live` is the number of sentences decoding, and when it is 0 a
 * take that returns 0 ends the stream (take may block there until work
 * comes). give hands over a finished sentence's nbest hypotheses (h[0..n),
 * best first; the callee owns their ids: clf_hypotheses_free). On an
 * error the sentences taken and not given back are lost. Needs the
 * decoder's self-attention unrestricted (no dec_window) once two rows'
 * positions differ. */
struct clf_translate_stream {
    size_t (*take)(void *user, size_t room, size_t live, const int32_t **src, size_t *len, void **tag);
    void (*give)(void *user, void *tag, struct clf_hypothesis *h, size_t n);
    void *user;
    size_t room;   /* the most sentences decoding at once */
    size_t width;  /* the longest source take gives, in tokens without EOS (below the model's max_len) */
};
clf_status clf_model_translate_stream(clf_model_t *m, const struct clf_translate_opts *o,
                                      const struct clf_translate_stream *in);
/* The device memory such a stream's decoder takes (it refuses more than
 * the device has, naming the sizes). */
size_t clf_model_translate_stream_bytes(const clf_model_t *m, const struct clf_translate_opts *o, size_t room,
                                        size_t width);

/* Converts a Marian / OPUS-MT model directory as transformers' MarianMTModel
 * saves it (config.json, generation_config.json when present,
 * model.safetensors, source.spm, target.spm, vocab.json, target_vocab.json
 * and tokenizer_config.json when present; docs/marian.md) into out_dir:
 * model.safetensors, a checkpoint whose metadata adds tokenizer "marian"
 * and generation, a JSON object of the generation defaults (num_beams,
 * max_length, length_penalty, min_length: transformers' own, and
 * length_penalty_kind "hf"), and a copy of
 * the tokenizer's files. Needs no device. What it cannot run as
 * transformers does (another model_type, normalize_before, an unknown
 * activation_function, early_stopping, ...) is refused with the field
 * named; pytorch_model.bin with the command that converts it. */
clf_status clf_marian_import(const char *dir, const char *out_dir);
/* The tokenizer's files (source.spm, target.spm, vocab.json; and
 * target_vocab.json, tokenizer_config.json, special_tokens_map.json where
 * present) from dir into out_dir, each written to a temporary name and
 * renamed: what clf_marian_import and `train --init` put beside a
 * checkpoint. A missing required file fails, named. */
clf_status clf_marian_copy_tokenizer(const char *dir, const char *out_dir);

/* ------------------------------------------------ checkpoint metadata */

/* What a checkpoint's __metadata__ says beside the model itself (whose
 * config and inference description clf_model_save writes from the model
 * and clf_model_load reads back), as one struct with named fields:
 * host/model/checkpoint_meta.c is the one place that knows the keys and
 * how each value is spelled (docs/checkpoints.md). Every writer
 * (clf_model_save: train, average; clf_marian_import) writes one, every
 * reader (translate, train --init and --resume, average) reads one, and
 * what a checkpoint made from another inherits is clf_ckpt_meta_carry.
 * Strings are "" and `present` flags false where a checkpoint has no
 * such key. */

/* The only format this build writes and reads. */
#define CLF_CKPT_FORMAT "clformer-1"
/* The most averaged steps an average records (each value fits the 2 KiB a
 * metadata value may hold). */
#define CLF_CKPT_AVERAGED_MAX 128

/* An imported model's decoding defaults ("generation", JSON, with
 * transformers' generate() names and meanings; docs/marian.md): what
 * `clformer translate` decodes with unless told otherwise. */
struct clf_ckpt_generation {
    bool present;
    int num_beams;           /* 1: greedy search */
    int max_length;          /* with the decoder's start: at most max_length - 1 tokens with EOS */
    double length_penalty;   /* the exponent alpha */
    int length_penalty_kind; /* enum clf_length_penalty: "hf" or "paper" */
    int min_length;          /* EOS is blocked for the first min_length - 1 tokens */
};

/* Where a training run stood (`clformer train` writes it; --resume
 * continues from it exactly). */
struct clf_ckpt_position {
    bool present;
    long epoch;                      /* "epoch", from 0 */
    size_t batch;                    /* "batch": the epoch's next batch */
    double tokens;                   /* "tokens": target tokens seen (whole) */
    double seconds;                  /* "seconds": training time so far (ms) */
    long max_tokens, update_tokens;  /* "max_tokens", "update_tokens": the run's batch sizes */
    int ranks;                       /* "ranks": processes that trained it */
};

/* How a checkpoint stores its weights, with CTranslate2's names
 * ("compute_type"): the linear layers' matrices and the (tied) embeddings
 * in that type, everything else (biases, layer norms, positions) in
 * float32. int8: one symmetric float32 scale per output (docs/compute-types.md,
 * "Quantized checkpoints"). clf_model_load turns the weights back to
 * float32; what decoding then computes in is clf_model_compute_set's. */
enum clf_compute_type {
    CLF_COMPUTE_FLOAT32 = 0,
    CLF_COMPUTE_INT8,
    CLF_COMPUTE_BFLOAT16,
    CLF_COMPUTE_FLOAT16,
    CLF_COMPUTE_NTYPES
};
/* Decoding's compute type, by CTranslate2's name: "default" (or NULL: the
 * checkpoint's stored type where the device runs it, else float32, as
 * CTranslate2 falls back), "auto" (the fastest the device runs:
 * clf_compute_auto), or a type. int8 and
 * bfloat16 run the linear layers and the tied output projection through
 * oneDNN on CPU devices (weights packed at their first use), float16
 * through CLBlast's half GEMM on devices with cl_khr_fp16 (weights
 * converted to half at their first use), the rest in float32 (docs/compute-types.md,
 * "Compute types"); float32 itself runs through oneDNN on weights packed
 * once where the build and device allow (CLF_GEMM_PACK=off: not), the
 * same arithmetic in another order. A type the device cannot run is
 * CLF_ERR_UNSUPPORTED naming the device and what it lacks. For decoding:
 * training computes in float32, on the plain weights (a training step
 * drops the packed copies). */
clf_status clf_model_compute_set(clf_model_t *m, const char *name);
/* The type "auto" chooses on device di, and why in words (a line, into
 * why): int8 on a CPU device where it runs on 8-bit weights (oneDNN with
 * VNNI or AMX, else clformer's AVX2 kernel; both measured faster than
 * float32), else float32. */
enum clf_compute_type clf_compute_auto(const struct clf_device_info *di, char *why, size_t n);
enum clf_compute_type clf_model_compute(const clf_model_t *m);
/* "float32", "int8", "bfloat16", "float16". */
const char *clf_compute_type_str(enum clf_compute_type t);
/* The type named name into *t; false for a name this build does not know. */
bool clf_compute_type_parse(const char *name, enum clf_compute_type *t);

struct clf_ckpt_meta {
    char format[16];         /* "format": CLF_CKPT_FORMAT */
    int compute_type;        /* enum clf_compute_type: "compute_type", written only when not float32 */
    uint32_t step;           /* "step": Adam's updates; an average's, the newest averaged */
    uint64_t seed;           /* "seed": keys the dropout masks (0 where absent) */
    /* the tokenizer, whose files lie beside the checkpoint */
    int tokenizer;           /* enum clf_tok_kind: "tokenizer" "marian"; ours when absent (or "spm") */
    char bpe[256];           /* ours: "bpe", our SentencePiece model's file ("": bpe.model) */
    bool has_tokenizer_hash;
    uint64_t tokenizer_hash; /* "tokenizer_hash", 16 hex digits: clf_tok_hash of the one it was trained with */
    /* where the weights came from */
    char init[2048];         /* "init": the checkpoint `train --init` started from */
    char imported_from[2048]; /* "imported_from": the directory clf_marian_import read */
    struct clf_ckpt_generation generation;
    struct clf_ckpt_position train;
    /* an average: "averaged" "yes" and "averaged_steps", a JSON array, in the order given */
    size_t averaged;
    uint32_t averaged_steps[CLF_CKPT_AVERAGED_MAX];
};

/* The metadata of a checkpoint of m that says nothing more: the format,
 * m's step and seed (m NULL: 0). */
void clf_ckpt_meta_init(struct clf_ckpt_meta *meta, const clf_model_t *m);
/* Reads path's metadata, without a device. A file that is not a clformer
 * checkpoint, or a value that does not parse (a number, the generation
 * JSON, a tokenizer this build does not know), is refused naming the file
 * and the key. */
clf_status clf_ckpt_meta_read(const char *path, struct clf_ckpt_meta *meta);
/* What a checkpoint made from `from` (a fine-tune's, a resumed run's, an
 * average) inherits into `to`: the tokenizer (kind, bpe, hash), the
 * generation defaults, init and imported_from. The rest (format, compute
 * type, step, seed, training position, averaged steps) is the new
 * checkpoint's own: its writer stores float32 weights unless it says
 * otherwise (an average of quantized checkpoints is float32). */
void clf_ckpt_meta_carry(struct clf_ckpt_meta *to, const struct clf_ckpt_meta *from);
/* Appends one averaged checkpoint's step; CLF_ERR_ARG past
 * CLF_CKPT_AVERAGED_MAX. */
clf_status clf_ckpt_meta_average_add(struct clf_ckpt_meta *meta, uint32_t step);
/* The checkpoint's own decoding defaults (its generation, where it has
 * one) over o: num_beams (1: greedy), length_penalty and its kind,
 * max_length and min_length as transformers counts them. */
void clf_ckpt_meta_translate_opts(const struct clf_ckpt_meta *meta, struct clf_translate_opts *o);

/* Opens the tokenizer checkpoint ckpt (with metadata meta) was made with
 * into *tok: Marian's files (source.spm, target.spm, vocab.json, ...) from
 * the checkpoint's directory, or ours, the SentencePiece model meta->bpe
 * (default bpe.model) beside it; `override` (may be NULL) instead: a
 * directory for Marian's, a file for ours. Where it looked goes into path
 * (may be NULL). No device. A failure names the file and the checkpoint. */
clf_status clf_ckpt_tok_open(const char *ckpt, const struct clf_ckpt_meta *meta, const char *override,
                             clf_tok_t **tok, char *path, size_t len);

/* Puts the tokenizer checkpoint ckpt (with metadata meta) names beside
 * `out`, the path of a checkpoint made from it (an average): the same
 * files clf_ckpt_tok_open reads, from ckpt's directory into out's, each
 * written to a temporary name and renamed. A file already there that is
 * the same file or holds the same bytes is left as it is; one that holds
 * other bytes is refused (CLF_ERR_ARG, naming both), checked before
 * anything is written. No device. */
clf_status clf_ckpt_tok_copy(const char *ckpt, const struct clf_ckpt_meta *meta, const char *out);
/* The same for a tokenizer read from `from` rather than one a checkpoint
 * names (a training run's, clf_trainer_save's checkpoints record it as
 * beside them): ours (kind CLF_TOK_KIND_SPM), the SentencePiece model file
 * `from`, put beside out as bpe.model; Marian's, the files of directory
 * `from`. The same checks: nothing written unless every file can be. */
clf_status clf_ckpt_tok_put(const char *from, enum clf_tok_kind kind, const char *out);

/* Writes the float32 checkpoint `in` again as `out` with its weights
 * stored in type `to` (int8, bfloat16 or float16; see enum
 * clf_compute_type), keeping all of in's metadata but the compute type,
 * and puts its tokenizer's files beside out (clf_ckpt_tok_copy). No
 * device. Refused (CLF_ERR_ARG): an input already quantized, out naming
 * in's own file, to float32; a weight that is not finite or (float16,
 * bfloat16) that rounds past the type's largest value, naming the tensor. */
clf_status clf_ckpt_quantize(const char *in, const char *out, enum clf_compute_type to);

/* One metadata value of a checkpoint as stored (e.g. "tokenizer_hash"),
 * for inspecting a file; programs read clf_ckpt_meta_read's struct. */
clf_status clf_checkpoint_meta(const char *path, const char *key, char *out, size_t len);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
