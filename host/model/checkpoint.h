/* checkpoint.h: what the checkpoint's writers and readers of host/model/
 * share: the writer of a model file from host memory and the reader of
 * its weights (checkpoint.c), __metadata__'s keys (checkpoint_meta.c),
 * weights in reduced precision (quantize.c), the config's JSON
 * (config.c), and a Marian tokenizer's files (import_marian.c). */
#ifndef CLF_MODEL_CHECKPOINT_H
#define CLF_MODEL_CHECKPOINT_H

#include "clformer.h"
#include "safetensors.h"
#include "weights.h"

/* checkpoint.c: writes the parameters of config c (layout l) from host
 * (l->numel floats) as a checkpoint with metadata meta, as clf_model_save
 * does, its weights stored in meta's compute type. No device: a failure's
 * message goes on ctx, or clf_ctx_error(NULL)'s when ctx is NULL. */
clf_status clf_model_save_host(clf_ctx_t *ctx, const struct clf_model_config *c, const struct model_layout *l,
                               const float *host, const char *path, const struct clf_ckpt_meta *meta);
struct clf_st_file;
struct clf_st_tensor;
/* The weights of f (read from path, with metadata meta) into host (l's
 * layout, l->numel floats), in float32 whatever their compute type: every
 * parameter present with its shape and the dtype meta's type stores it
 * in, and nothing else in the file. A failure's message names path and the
 * tensor (clf_ctx_error(NULL)). */
clf_status clf_ckpt_weights_read(const char *path, const struct clf_st_file *f, const struct clf_ckpt_meta *meta,
                                 const struct model_layout *l, float *host);

/* quantize.c: weights in reduced precision (compute_type: enum
 * clf_compute_type). Whether p is stored in the compute type (a matrix but
 * the learned positions) or always F32; the dtype it is stored in. */
bool clf_quant_stored(const struct clf_param *p);
enum clf_st_dtype clf_quant_dtype(int compute_type, const struct clf_param *p);
/* Its outputs: an embedding's rows, a linear weight's (in, out) columns;
 * int8's scales are one per output, in the tensor named <p's name>_scale. */
size_t clf_quant_outputs(const struct clf_param *p);
void clf_quant_scale_name(const struct clf_param *p, char *out, size_t len);
/* l's parameters from host (float32) as the tensors of a file of that
 * compute type into t (room for 2 * l->nparams) and their number into
 * *count; the converted values in *storage (free it after writing). A
 * weight the type cannot hold is refused naming its tensor. */
clf_status clf_quant_tensors(const struct model_layout *l, const float *host, int compute_type,
                             struct clf_st_tensor *t, size_t *count, void **storage);
/* Tensor t of f (path), parameter p, of a checkpoint of that compute type,
 * into dst as float32; a dtype, scale or scale's shape that is not the
 * type's is refused naming the tensor. */
clf_status clf_quant_load(const char *path, const struct clf_st_file *f, int compute_type, const struct clf_param *p,
                          const struct clf_st_tensor *t, float *dst);
/* Whether name is the int8 scale tensor of one of l's parameters. */
bool clf_quant_is_scale(const struct model_layout *l, int compute_type, const char *name);

/* checkpoint_meta.c: the one place that knows __metadata__'s keys. */
struct clf_st_meta;
struct clf_st_file;
/* The most pairs a model file's metadata holds. */
#define CKPT_META_MAX 24
/* A model file's pairs into out[CKPT_META_MAX]: format, config and
 * inference (of c), then meta's. Returns how many. */
size_t clf_ckpt_meta_write(const struct clf_ckpt_meta *meta, const struct clf_model_config *c, struct clf_st_meta *out);
/* The optimizer file's pairs (format, config, step) into out[3]. */
size_t clf_ckpt_meta_optim_write(const struct clf_model_config *c, uint32_t step, struct clf_st_meta *out);
/* Reads path into f (clf_st_free it), refusing a file whose format is not
 * CLF_CKPT_FORMAT. */
clf_status clf_ckpt_file_read(const char *path, struct clf_st_file *f);
/* f's metadata into meta and, when c is not NULL, its config into c. */
clf_status clf_ckpt_meta_parse(const char *path, const struct clf_st_file *f, struct clf_ckpt_meta *meta,
                               struct clf_model_config *c);
/* Whether f holds the optimizer state of a model of config c; its step
 * into *step. */
bool clf_ckpt_meta_optim_read(const struct clf_st_file *f, const struct clf_model_config *c, uint32_t *step);

/* checkpoint_meta.c: the files of a Marian model's tokenizer, as a
 * checkpoint's directory holds them (the importer copies them there); the
 * optional ones are copied where present. */
#define MARIAN_TOK_FILES 6
struct marian_tok_file {
    const char *name;
    bool required;
};
extern const struct marian_tok_file clf_marian_tok_files[MARIAN_TOK_FILES];

/* config.c: the config metadata (clf_model_config_json's flat object) into
 * *c; a bad field is refused naming path and the field. */
clf_status clf_model_config_parse(const char *path, const char *text, struct clf_model_config *c);

#endif
