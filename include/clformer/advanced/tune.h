/* clformer/advanced/tune.h: per-device tuning. The advanced tier (unstable).
 *
 * GEMM goes through CLBlast, whose kernels take compile-time parameters
 * (tile sizes, vector widths, local-memory switches) chosen from a database
 * by device name; devices it does not know (every PoCL CPU among them) get
 * generic values. clformer keeps one database of its own for every
 * tunable (clf_param_defs): CLBlast's parameters and its own kernels'. A
 * value comes from
 *
 *   1. a setting: the tunable's environment variable (clf_params_in_force);
 *   2. else a tuning file, clf_cache_dir()/tuning-<hash>.json, written by
 *      `clformer tune`, keyed by platform, device name and driver version;
 *   3. else the repository's table (host/runtime/tuning_table.c), searched
 *      device → vendor → device type → default;
 *   4. else (GEMM only) CLBlast's own database ("generic").
 *
 * clf_ctx_init applies the GEMM parameters (clf_tuning_apply); the
 * environment variable CLF_TUNING=off skips the file and the table's GEMM
 * entries. A tuning file that cannot be read or fails its checks is not
 * applied: clf_tuning_query says why, and the table (or CLBlast's
 * database) is used instead. The parameters CLBlast is given are per
 * device and per process: a later context on the same device in the same
 * process gets them again. */
#ifndef CLFORMER_TUNE_H
#define CLFORMER_TUNE_H

#include "clformer/advanced/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

/* --------------------------------------------------- GEMM parameters */

/* CLBlast's "Xgemm" kernel (the indirect GEMM: operands copied and padded
 * to tile multiples first). Names as CLBlast spells them, lower case. */
struct clf_xgemm_params {
    unsigned gemmk, kreg, kwg, kwi, mdima, mdimc, mwg, ndimb, ndimc, nwg, sa, sb, strm, strn, vwm, vwn;
};
/* CLBlast's "XgemmDirect" kernel (no copies; used for small products). */
struct clf_xgemm_direct_params {
    unsigned kwid, mdimad, mdimcd, ndimbd, ndimcd, pada, padb, vwmd, vwnd, wgd;
};
/* Everything that decides a GEMM's speed through CLBlast. A product runs
 * the direct kernel when m·n·k < min_indirect³ (CLBlast's
 * XGEMM_MIN_INDIRECT_SIZE of its "GemmRoutine"). */
struct clf_gemm_params {
    struct clf_xgemm_params xgemm;
    struct clf_xgemm_direct_params direct;
    unsigned min_indirect;
};

/* CLBlast 1.5's generic values, used for devices it has no entry for. */
extern const struct clf_gemm_params clf_gemm_params_generic;

/* Checks the constraints between parameters (tiles divisible by threads
 * times vector widths, and so on) and, when dev is not NULL, the device's
 * work-group and local-memory limits. On failure returns false with the
 * broken rule in why. */
bool clf_gemm_params_check(const struct clf_gemm_params *p, const struct clf_device_info *dev, char *why,
                           size_t len);

/* Hands the parameters to CLBlast for ctx's device (CLBlastOverrideParameters
 * for the three kernels); the next GEMM compiles with them. Refuses
 * parameters that fail clf_gemm_params_check. */
clf_status clf_gemm_params_apply(clf_ctx_t *ctx, const struct clf_gemm_params *p);

/* Writes "xgemm GEMMK=0 KREG=1 …; direct …; min_indirect N" into out. */
void clf_gemm_params_str(const struct clf_gemm_params *p, char *out, size_t len);

/* ------------------------------------------- clformer's own kernels */

/* The tile sizes of clformer's own kernels: the attention kernels' query
 * and key tiles (powers of two; tile_k at least 8), the work-group cap of
 * the row-wise ops (softmax, layer norm, the loss, Adam's norm; a power of
 * two) and the work-items per query row of attn_fwd and attn_bwd_dq (1, 2,
 * 4 or 8). In a tuning file or in clf_kernel_params_set, 0 leaves a value
 * to the table (clf_params_lookup). Every value is still clamped to the
 * device's limits at launch. */
struct clf_kernel_params {
    unsigned attn_tile_q, attn_tile_k, rows_wg, attn_lanes;
};

/* Whether p is well formed: each value 0 or legal (clf_param_ok). */
bool clf_kernel_params_check(const struct clf_kernel_params *p, char *why, size_t len);

/* Puts p in force on ctx, over the table's values, for the kernels it
 * looks up from now on (the tuner tries candidates this way;
 * clf_tuning_apply sets the file's). A workspace that already cached its
 * attention kernels keeps them. */
clf_status clf_kernel_params_set(clf_ctx_t *ctx, const struct clf_kernel_params *p);
/* What the tuning file or clf_kernel_params_set put on ctx (zeros: the
 * table's values; clf_params_in_force says what runs). */
struct clf_kernel_params clf_kernel_params_get(const clf_ctx_t *ctx);

/* --------------------------------------------- the parameter database */

/* Every tunable together: what a table entry, a tuning file and the
 * settings give values for. */
struct clf_params {
    struct clf_gemm_params gemm;
    struct clf_kernel_params kernels;
};

/* The kernel a tunable belongs to; its name is CLBlast's kernel name and
 * the tuning file's object. */
enum clf_param_group {
    CLF_PARAM_XGEMM,         /* "Xgemm" */
    CLF_PARAM_XGEMM_DIRECT,  /* "XgemmDirect" */
    CLF_PARAM_GEMM_ROUTINE,  /* "GemmRoutine" */
    CLF_PARAM_KERNELS,       /* "Kernels": clformer's own */
};
const char *clf_param_group_str(enum clf_param_group g);

enum {
    CLF_PARAM_POW2 = 1,      /* a power of two */
    CLF_PARAM_ZERO = 2,      /* 0 is legal too: not set here, the table's value runs */
    CLF_PARAM_OPTIONAL = 4,  /* may be absent from a tuning file (reads 0); written only when set */
};

/* One tunable. clf_param_defs is the one name -> field table that the
 * tuning file, the table's search, the settings, `clformer tune --show`
 * and the tuner's candidates all go through. */
struct clf_param_def {
    const char *name;           /* as CLBlast and the tuning file spell it: "KWG", "ATTN_TILE_Q" */
    enum clf_param_group group;
    size_t offset;              /* of its unsigned in struct clf_params */
    unsigned min, max, flags;   /* the legal values */
    const char *setting;        /* the environment variable that overrides it, or NULL */
    cl_device_type setting_on;  /* the devices the setting applies to; 0: all */
    const char *doc;
};

/* Every tunable, in the tuning file's order (within a group, its struct's
 * order); *n receives the count, at most CLF_PARAMS_MAX. */
const struct clf_param_def *clf_param_defs(size_t *n);
/* The tunable called name (case-insensitive) in group, or NULL. */
const struct clf_param_def *clf_param_find(enum clf_param_group group, const char *name);
/* The field d names in p. */
unsigned *clf_param_ref(struct clf_params *p, const struct clf_param_def *d);
unsigned clf_param_value(const struct clf_params *p, const struct clf_param_def *d);
/* Whether v is legal for d; if not, why names the group and the tunable. */
bool clf_param_ok(const struct clf_param_def *d, unsigned v, char *why, size_t len);

/* ------------------------------------------------- what a CPU has */

/* The ISA features the tuning table keys CPU devices on, instead of vendor
 * or model names: another CPU with the same features finds the same entry.
 * A feature counts where the CPU has it (cpuid) and the OS saves its
 * registers (XCR0), as compilers targeting the host see it; unlike
 * clf_cpu_isa_effective, ONEDNN_MAX_CPU_ISA does not cap it. */
enum clf_cpu_feature {
    CLF_CPU_SSE4_2 = 1u << 0,
    CLF_CPU_AVX = 1u << 1,
    CLF_CPU_AVX2 = 1u << 2,
    CLF_CPU_FMA = 1u << 3,
    CLF_CPU_AVX512F = 1u << 4,
    CLF_CPU_AVX512_VNNI = 1u << 5,
    CLF_CPU_AVX512_BF16 = 1u << 6,
    CLF_CPU_AMX = 1u << 7, /* AMX-INT8 with its tile state saved */
};
/* The host processor's CLF_CPU_* bits (0 on a processor other than x86). */
unsigned clf_cpu_features(void);
/* f as words ("sse4.2 avx avx2 fma"; "none known" for 0) in buf, cut to
 * len; returns buf. */
const char *clf_cpu_features_str(unsigned f, char *buf, size_t len);

/* ------------------------------------------------------ the table */

enum clf_tuning_level {
    CLF_TUNING_LEVEL_NONE,     /* no entry: CLBlast's database (GEMM) */
    CLF_TUNING_LEVEL_DEVICE,   /* an entry for this device: its name, or a CPU's features and cores */
    CLF_TUNING_LEVEL_VENDOR,   /* the default for this vendor and type */
    CLF_TUNING_LEVEL_TYPE,     /* the default for this device type */
    CLF_TUNING_LEVEL_DEFAULT,  /* the default for every device */
};
const char *clf_tuning_level_str(enum clf_tuning_level l);

/* One row of a tuning table. NULL strings match anything; a non-NULL one
 * must occur (case-insensitively) in the device's field; a CPU entry names
 * the features and at most how many cores it wants instead of a vendor or
 * model (host/runtime/tuning_table.c says why). An entry with a device
 * name, features or a core count is of level DEVICE, else one with a
 * vendor is VENDOR, else one with a type TYPE, else DEFAULT. It sets the
 * GEMM parameters (all of them) when gemm is not NULL, each kernel
 * parameter that is not 0, and the default-device preference when prefer
 * is not 0. */
struct clf_tuning_entry {
    const char *name;      /* what was measured, for --show */
    const char *platform;  /* substring of the platform name */
    const char *vendor;    /* substring of CL_DEVICE_VENDOR */
    const char *device;    /* substring of CL_DEVICE_NAME */
    cl_device_type type;   /* 0: any */
    const struct clf_gemm_params *gemm;
    struct clf_kernel_params kernels;
    /* Among CPU devices (every one of them runs on the host's processor,
     * whichever driver offers it) the default is the one with the highest
     * preference, before global memory and compute units, which there are
     * each driver's own accounting of the same machine; 0: none. Set where
     * one driver was measured to train faster than another on one CPU. */
    int prefer;
    unsigned cpu_features; /* CLF_CPU_* bits the device's cpu_features must all have (0: any) */
    unsigned max_cores;    /* at most this many compute units (0: any) */
};

/* The built-in table and its length. */
const struct clf_tuning_entry *clf_tuning_table(size_t *n);

/* The built-in table's default-device preference for dev (0: none) and the
 * entry that sets it (NULL: none), searched device → vendor → type →
 * default as every tunable is. clf_devices_match ranks CPUs by it. */
int clf_tuning_prefer(const struct clf_device_info *dev, const struct clf_tuning_entry **entry);

/* Where a value in force came from. */
enum clf_param_source {
    CLF_PARAM_FROM_NONE,     /* nowhere: CLBlast's database (GEMM), the launcher's own choice (kernels) */
    CLF_PARAM_FROM_TABLE,    /* the table (origin's entry and level) */
    CLF_PARAM_FROM_FILE,     /* the tuning file, or clf_kernel_params_set */
    CLF_PARAM_FROM_SETTING,  /* its environment variable */
};

#define CLF_PARAMS_MAX 40

/* Every tunable's value and where it came from: origin[i] is
 * clf_param_defs()[i]'s. */
struct clf_params_found {
    struct clf_params values;
    struct clf_param_origin {
        enum clf_param_source source;
        const struct clf_tuning_entry *entry;  /* the table's entry for it, or NULL */
        enum clf_tuning_level level;           /* that entry's level */
    } origin[CLF_PARAMS_MAX];
};

/* The one search of table[0..n) (NULL: the built-in one), as CLBlast's
 * database is searched: for each tunable, the first entry matching dev
 * that sets it among the device entries, then the vendors', the types',
 * the defaults. The GEMM parameters come from one entry together. */
void clf_params_lookup(const struct clf_tuning_entry *table, size_t n, const struct clf_device_info *dev,
                       struct clf_params_found *out);

/* The entry clf_params_lookup takes the GEMM parameters from; NULL if none. */
const struct clf_tuning_entry *clf_tuning_table_lookup(const struct clf_tuning_entry *table, size_t n,
                                                       const struct clf_device_info *dev,
                                                       enum clf_tuning_level *level);

/* What is in force on ctx: the table's values (its GEMM parameters only
 * when clf_tuning_apply gave them to CLBlast), over them the tuning file's
 * or clf_kernel_params_set's, over those the settings: a tunable's
 * environment variable, set to a legal value on a device it applies to (an
 * illegal value is ignored). The one place settings are read. */
void clf_params_in_force(const clf_ctx_t *ctx, struct clf_params_found *out);

/* ------------------------------------------------ tuning files */

#define CLF_TUNING_MAX_SHAPES 16

/* A shape measured by the tuner: GFLOP/s with CLBlast's own choice, with
 * the tuned parameters, and of the reference BLAS when one was timed. */
struct clf_tuning_shape {
    char name[40];
    unsigned m, n, k;
    bool ta, tb;
    double gflops_before, gflops_after, gflops_reference;
};

/* What a tuning file holds. */
struct clf_tuning_record {
    char platform[128], device[128], driver[64];  /* the key */
    char clblast[32];   /* CLBlast's version as the tuner saw it, or "" */
    char created[32];   /* UTC, ISO 8601 */
    double minutes;     /* the search's length */
    unsigned candidates;
    struct clf_gemm_params gemm;
    struct clf_kernel_params kernels;  /* "Kernels"; optional in a file (zeros) */
    int nshapes;
    struct clf_tuning_shape shapes[CLF_TUNING_MAX_SHAPES];
};

/* The tuning file of a device: clf_cache_dir()/tuning-<16 hex>.json, the
 * hash over platform name, device name and driver version. */
clf_status clf_tuning_path(const struct clf_device_info *dev, char *out, size_t len);

/* Writes r to path through a temporary file and a rename. */
clf_status clf_tuning_save(const char *path, const struct clf_tuning_record *r);

/* Reads path into r and checks it: JSON syntax, every parameter present
 * and in range, the constraints, and (dev not NULL) that the key names
 * dev. CLF_ERR_IO when it cannot be read, CLF_ERR_FORMAT when it is bad;
 * the message (clf_ctx_error(NULL)) names the file and the field. */
clf_status clf_tuning_load(const char *path, const struct clf_device_info *dev, struct clf_tuning_record *r);

/* ------------------------------------------ what is in force */

enum clf_tuning_source {
    CLF_TUNING_CLBLAST,  /* nothing of ours: CLBlast's database */
    CLF_TUNING_TABLE,    /* the repository's table */
    CLF_TUNING_FILE,     /* this device's tuning file */
    CLF_TUNING_OFF,      /* CLF_TUNING=off */
};
const char *clf_tuning_source_str(enum clf_tuning_source s);

struct clf_tuning_info {
    enum clf_tuning_source source;
    struct clf_gemm_params gemm;         /* in force (source TABLE or FILE) */
    struct clf_kernel_params kernels;    /* in force (source FILE; else zeros) */
    char path[1024];                     /* the device's tuning file, present or not */
    bool file_present;
    clf_status file_status;              /* CLF_OK, or why the file was refused */
    char file_message[1024];
    struct clf_tuning_record record;     /* the file's contents when file_status is CLF_OK */
    const struct clf_tuning_entry *entry;  /* the table's entry, or NULL */
    enum clf_tuning_level level;
    /* What happened when clf_ctx_init applied it: CLF_OK, or why the GEMM
     * parameters were refused (source then reads CLF_TUNING_CLBLAST: the
     * context runs on CLBlast's defaults, possibly with some kernels'
     * parameters already overridden before the refusal). */
    clf_status apply_status;
    char apply_message[512];
};

/* Works out what applies to ctx's device without applying it. Fails only
 * when the cache folder is unknown; a bad file is reported in out. */
clf_status clf_tuning_query(const clf_ctx_t *ctx, struct clf_tuning_info *out);

/* Called by clf_ctx_init: applies what clf_tuning_query finds (GEMM
 * parameters to CLBlast, kernel parameters to ctx). Returns
 * CLF_OK also when the file was refused (clf_tuning_query tells); an error
 * only when the parameters were refused (by their checks against the
 * device's limits, or by CLBlast). clf_ctx_init does not fail then: it
 * records the refusal, which clf_tuning_query reports as apply_status. */
clf_status clf_tuning_apply(clf_ctx_t *ctx);

/* Deletes the device's tuning file; *removed says whether there was one.
 * Parameters already given to CLBlast in this process stay in force. */
clf_status clf_tuning_reset(const clf_ctx_t *ctx, bool *removed);

/* ------------------------------------------------------ the tuner */

/* What `clformer tune` does, as calls a program can make: clf_gemm_params_tune
 * searches CLBlast's SGEMM parameters, clf_kernel_params_tune clformer's
 * own kernels' (host/tune/), each within a budget of seconds, telling a
 * callback how it goes. Neither prints nor writes the tuning file: the
 * caller keeps the result (clf_tuning_save). */

enum clf_tune_stage {
    CLF_TUNE_SETUP,         /* preparing the shapes and their reference products */
    CLF_TUNE_BASELINE,      /* timing what is in force at the call */
    CLF_TUNE_XGEMM,         /* searching Xgemm, the indirect kernel */
    CLF_TUNE_XGEMM_DIRECT,  /* searching XgemmDirect */
    CLF_TUNE_MEASURE,       /* measuring the choice, which is in force from here */
    CLF_TUNE_ATTENTION,     /* clf_kernel_params_tune: the attention tiles */
    CLF_TUNE_ROWS,          /* clf_kernel_params_tune: the row-wise ops' work-group cap */
};
/* "setup", "baseline", "Xgemm", "XgemmDirect", "measure", "attention", "rows" */
const char *clf_tune_stage_str(enum clf_tune_stage s);

/* Where a search stands: given to the callback as each stage starts and
 * after each candidate. */
struct clf_tune_progress {
    enum clf_tune_stage stage;
    unsigned tried, failed, pruned;  /* candidates so far: timed, failed their check or build, given up early */
    int nshapes;                     /* GEMM: the shapes every candidate is timed on */
    double best_xgemm_gflops;        /* GEMM: the best geometric mean so far over the shapes (0: none yet) */
    double best_direct_gflops;       /* GEMM: the direct kernel's, over the shapes it is timed on */
    /* Our kernels: the candidate just timed ("attention 64x32"; NULL as a
     * stage starts), its seconds per run, and the stage's best so far
     * (the built-in choice's until a candidate beats it) */
    const char *candidate;
    double candidate_s, best_s;
    double elapsed_s;                /* since the call */
    double left_s;                   /* until the deadline; 0 once past it */
};

#define CLF_TUNE_MAX_PRIOR 4

/* How to tune; clf_tune_opts_default gives each field's default. */
struct clf_tune_opts {
    /* The budget, from the call: 300. Preparing the shapes and timing the
     * baseline always run; the search stops at the deadline, and a
     * candidate under way then is finished (a new program to build and
     * every shape to time: seconds on a CPU). With no time left to search
     * (0 is allowed) the starting point is measured and returned. */
    double seconds;
    /* GEMM: the training shapes' rows, T: 2560 (16..65536). */
    size_t tokens;
    /* Parameters tried first, so that tuning again never ends worse (an
     * earlier tuning file's, the table's): at most CLF_TUNE_MAX_PRIOR. The
     * search starts from prior[0]; with none, from what is in force (the
     * tuning file's or the table's, else CLBlast's generic values). */
    const struct clf_gemm_params *prior;
    int nprior;
    /* Our kernels: values tried first (an earlier tuning file's; NULL: none) */
    const struct clf_kernel_params *prior_kernels;
    /* Called as each stage starts and after each candidate (NULL: none), on
     * the calling thread; returning nonzero ends the search as the deadline
     * would: the best so far is measured and returned. */
    int (*progress)(void *user, const struct clf_tune_progress *p);
    void *user;
};
struct clf_tune_opts clf_tune_opts_default(void);

/* What clf_gemm_params_tune found. */
struct clf_gemm_tune_result {
    struct clf_gemm_params best;   /* in force on the context on return */
    unsigned tried, failed, pruned;
    /* false: nothing searched (no time, a cancel before any candidate, or
     * none passed its check): best is the starting point, measured */
    bool searched;
    bool cancelled;                /* the callback ended the search */
    double seconds;                /* the call's */
    /* each shape's GFLOP/s with what was in force at the call (before), with
     * best (after) and of the host's BLAS (reference; CPU devices only, else 0) */
    int nshapes;
    struct clf_tuning_shape shapes[CLF_TUNING_MAX_SHAPES];
};

/* Searches CLBlast's SGEMM parameters for ctx's device on the shapes of the
 * small preset over o->tokens tokens (a decoding step, a training batch's
 * products, 1024³), each candidate checked against the host's BLAS before
 * it is timed, and leaves the best in force (clf_gemm_params_apply). ctx's
 * GEMMs run on CLBlast during the call whatever its backend, which is
 * restored on return. An error when the parameters in force already fail
 * their check, when the chosen ones fail it, or on a bad option (the
 * message names the field); a candidate that fails is skipped. CLBlast
 * holds parameters per device and per process: while the search runs,
 * other contexts' GEMMs on the same device run its candidates. */
clf_status clf_gemm_params_tune(clf_ctx_t *ctx, const struct clf_tune_opts *o, struct clf_gemm_tune_result *out);

/* What clf_kernel_params_tune found. */
struct clf_kernel_tune_result {
    /* the fastest, in force on the context on return: the tiles as the
     * device clamps them (the built-in choice's when nothing beat it) and
     * rows_wg (0: no candidate beat the built-in work-groups) */
    struct clf_kernel_params best;
    /* seconds per run of the attention and row-wise benchmarks with the
     * built-in choice (before) and with best (after) */
    double attn_before_s, attn_after_s, rows_before_s, rows_after_s;
    unsigned tried, failed;
    bool cancelled;                /* the callback ended the search */
    double seconds;                /* the call's */
    char attn_case[96], rows_case[96];  /* what was timed, in words */
};

/* Times the built-in choice of our kernels' parameters (the table's: the
 * tuning file's and clf_kernel_params_set's are put aside), then
 * candidates until the deadline or until none is left, each checked
 * before it is timed (attention against the naive variant and the
 * built-in's gradients, the row-wise ops against the built-in's outputs):
 * attention's tiles for a training batch's self-attention (32 sequences
 * of up to 64 tokens, 4 heads of d_k 64), then the row-wise ops'
 * work-group cap (layer norm over 2560×256, softmax over 512×8000,
 * forward and backward). An error when the set-up or the built-in choice
 * fails; a candidate that fails is skipped and counted. */
clf_status clf_kernel_params_tune(clf_ctx_t *ctx, const struct clf_tune_opts *o, struct clf_kernel_tune_result *out);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
