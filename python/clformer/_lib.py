"""Loading libclformer and declaring the part of its C interface this
package calls (clformer/device.h, clformer/translate.h, clformer/serve.h,
clformer/text.h, clformer/model.h, clformer/train.h).

The library is found in this order: the CLFORMER_LIBRARY environment
variable (the path of libclformer.so.0, or of a folder holding it), the
user's explicit choice; the copy a wheel carries beside this file
(scripts/wheel.sh puts it there); the libdir of an installed prefix that
pkg-config knows (`pkg-config --variable=libdir clformer`, so
PKG_CONFIG_PATH=P/lib/pkgconfig finds a `cmake --install` prefix P); then
the system's loader (ldconfig's cache, LD_LIBRARY_PATH), as the Debian
package libclformer0 installs it. A wheel's own copy that fails to load
stops the search: it was built with this very Python code, and what it
lacks is one of the system libraries it links (docs/python.md names their
Debian packages), which another copy would lack too. `loaded` says which
copy was loaded and how it was found.

What no wheel carries is the OpenCL ICD loader (libOpenCL.so.1, which
finds the drivers /etc/OpenCL/vendors names) and a driver: `import
clformer` checks the first (require_system) and names its package; the
library says when there is no driver (no OpenCL platform) at the first
device use.

ctypes releases the GIL for the length of every foreign call, so other
Python threads run while the device works. The structures below mirror
the C ones field for field; tests/test_abi.py compiles their sizes and
offsets from the installed headers and compares, and the constants' values.
"""

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import threading

SONAME = "libclformer.so.0"

# Loading the library and declaring its prototypes happens once, under
# this lock. The library's own calls need none of the package's: it runs
# one translator per thread on its own context at once and locks what the
# process shares (clformer/translate.h, "Threads"); each Translator holds
# a lock of its own, as its context belongs to one thread at a time.
LOCK = threading.RLock()

# The values of the headers' enums and macros this package uses, by their
# C names: python/tests/test_abi.py compiles every module-level CLF_* and
# CL_* integer here against the installed headers and compares, and checks
# that enum clf_status has no value missing here. The statuses' names come
# from the library (status_name, clf_status_str).
CLF_OK, CLF_ERR_ARG, CLF_ERR_NO_DEVICE, CLF_ERR_OPENCL, CLF_ERR_BUILD = 0, 1, 2, 3, 4
CLF_ERR_BLAS, CLF_ERR_MEMORY, CLF_ERR_IO, CLF_ERR_FORMAT, CLF_ERR_UNSUPPORTED = 5, 6, 7, 8, 9
CLF_COMPUTE_NTYPES = 4  # enum clf_compute_type's count; translator.COMPUTE_TYPES names them
CLF_TOK_SOURCE = 0
CLF_TOK_KIND_SPM, CLF_TOK_KIND_MARIAN = 0, 1
CLF_NORM_POST, CLF_NORM_PRE = 0, 1
PATH_MAX = 4096  # CLF_PATH_MAX, the paths the library fills
CLF_LENGTH_PENALTY_PAPER, CLF_LENGTH_PENALTY_HF = 0, 1
CLF_TRANSLATE_BEAM_MAX = 32
CLF_QUEUE_OK, CLF_QUEUE_FULL, CLF_QUEUE_CLOSED, CLF_QUEUE_INVALID, CLF_QUEUE_FAILED = 0, 1, 2, 3, 4

CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR = 1 << 1, 1 << 2, 1 << 3


class DeviceInfo(ctypes.Structure):
    """struct clf_device_info"""
    _fields_ = [
        ("index", ctypes.c_int),
        ("platform_index", ctypes.c_int),
        ("platform", ctypes.c_void_p),
        ("device", ctypes.c_void_p),
        ("platform_name", ctypes.c_char * 128),
        ("device_name", ctypes.c_char * 128),
        ("vendor", ctypes.c_char * 128),
        ("driver_version", ctypes.c_char * 64),
        ("device_version", ctypes.c_char * 128),
        ("c_version", ctypes.c_char * 64),
        ("type", ctypes.c_uint64),
        ("compute_units", ctypes.c_uint32),
        ("global_mem", ctypes.c_uint64),
        ("local_mem", ctypes.c_uint64),
        ("max_alloc", ctypes.c_uint64),
        ("max_work_group", ctypes.c_size_t),
        ("host_unified", ctypes.c_bool),
        ("is_default", ctypes.c_bool),
        ("shaped", ctypes.c_char * 96),
        ("cpu_features", ctypes.c_uint32),
    ]


class TranslateOpts(ctypes.Structure):
    """struct clf_translate_opts"""
    _fields_ = [
        ("beam", ctypes.c_int),
        ("alpha", ctypes.c_float),
        ("max_extra", ctypes.c_int),
        ("nbest", ctypes.c_int),
        ("greedy", ctypes.c_bool),
        ("min_length", ctypes.c_int),
        ("length_penalty", ctypes.c_int),
        ("max_output", ctypes.c_int),
    ]


class Batching(ctypes.Structure):
    """struct clf_batching"""
    _fields_ = [("sentences", ctypes.c_size_t), ("tokens", ctypes.c_size_t), ("continuous", ctypes.c_bool)]


class TranslateFile(ctypes.Structure):
    """struct clf_translate_file"""
    _fields_ = [("input", ctypes.c_char_p), ("output", ctypes.c_char_p), ("shard", ctypes.c_int),
                ("shards", ctypes.c_int)]


class QueueOpts(ctypes.Structure):
    """struct clf_queue_opts"""
    _fields_ = [("max_batch_tokens", ctypes.c_size_t), ("max_batch_sentences", ctypes.c_size_t),
                ("batch_wait_ms", ctypes.c_uint), ("max_queued", ctypes.c_size_t), ("continuous", ctypes.c_bool)]


class QueueSubmitOpts(ctypes.Structure):
    """struct clf_queue_submit_opts"""
    _fields_ = [("client", ctypes.c_uint64), ("alternatives", ctypes.c_size_t)]


class ModelConfig(ctypes.Structure):
    """struct clf_model_config"""
    _fields_ = [
        ("enc_layers", ctypes.c_int),
        ("dec_layers", ctypes.c_int),
        ("d_model", ctypes.c_int),
        ("heads", ctypes.c_int),
        ("d_ff", ctypes.c_int),
        ("vocab", ctypes.c_int),
        ("max_len", ctypes.c_int),
        ("dropout", ctypes.c_float),
        ("label_smoothing", ctypes.c_float),
        ("ln_eps", ctypes.c_float),
        ("norm", ctypes.c_int),
        ("positions", ctypes.c_int),
        ("share_embeddings", ctypes.c_bool),
        ("enc_window", ctypes.c_int),
        ("dec_window", ctypes.c_int),
        ("activation", ctypes.c_int),
        ("logits_bias", ctypes.c_int),
        ("pad_id", ctypes.c_int),
        ("bos_id", ctypes.c_int),
        ("eos_id", ctypes.c_int),
        ("unk_id", ctypes.c_int),
        ("decoder_start_id", ctypes.c_int),
        ("forbid_pad", ctypes.c_bool),
    ]


class TrainHooks(ctypes.Structure):
    """struct clf_train_hooks (left empty: one process)"""
    _fields_ = [("user", ctypes.c_void_p), ("backward", ctypes.c_void_p), ("reduce", ctypes.c_void_p)]


class TrainOpts(ctypes.Structure):
    """struct clf_train_opts"""
    _fields_ = [
        ("config", ctypes.POINTER(ModelConfig)),
        ("init", ctypes.c_char_p),
        ("dropout", ctypes.c_float),
        ("label_smoothing", ctypes.c_float),
        ("seed", ctypes.c_uint64),
        ("max_tokens", ctypes.c_long),
        ("update_tokens", ctypes.c_long),
        ("warmup", ctypes.c_int),
        ("lr_scale", ctypes.c_double),
        ("clip", ctypes.c_double),
        ("rank", ctypes.c_int),
        ("ranks", ctypes.c_int),
        ("hooks", TrainHooks),
    ]


class TrainState(ctypes.Structure):
    """struct clf_train_state"""
    _fields_ = [
        ("step", ctypes.c_long),
        ("epoch", ctypes.c_long),
        ("batch", ctypes.c_size_t),
        ("tokens", ctypes.c_double),
        ("seconds", ctypes.c_double),
        ("epochs", ctypes.c_double),
        ("epoch_batches", ctypes.c_size_t),
        ("loss", ctypes.c_double),
        ("update_tokens_seen", ctypes.c_double),
        ("lr", ctypes.c_float),
        ("seed", ctypes.c_uint64),
        ("max_tokens", ctypes.c_long),
        ("update_tokens", ctypes.c_long),
    ]


class CorpusSummary(ctypes.Structure):
    """struct clf_corpus_summary"""
    _fields_ = [
        ("lines", ctypes.c_size_t),
        ("kept", ctypes.c_size_t),
        ("skipped_empty", ctypes.c_size_t),
        ("skipped_long", ctypes.c_size_t),
        ("src_tokens", ctypes.c_size_t),
        ("tgt_tokens", ctypes.c_size_t),
        ("max_src_len", ctypes.c_int),
        ("max_tgt_len", ctypes.c_int),
    ]


class TrainSetupReport(ctypes.Structure):
    """struct clf_train_setup_report"""
    _fields_ = [
        ("stage", ctypes.c_int),
        ("resume_step", ctypes.c_long),
        ("learned", ctypes.c_bool),
        ("learn_seconds", ctypes.c_double),
        ("max_len", ctypes.c_int),
        ("encoded", ctypes.c_bool),
        ("train", CorpusSummary),
        ("val", CorpusSummary),
        ("tokenizer_path", ctypes.c_char * 4096),
        ("trainer", ctypes.c_void_p),
    ]


class TrainSetupHooks(ctypes.Structure):
    """struct clf_train_setup_hooks (left empty: one process, no messages)"""
    _fields_ = [("user", ctypes.c_void_p), ("stage", ctypes.c_void_p), ("configure", ctypes.c_void_p),
                ("subwords_ready", ctypes.c_void_p)]


class TrainSetup(ctypes.Structure):
    """struct clf_train_setup"""
    _fields_ = [
        ("source", ctypes.c_char_p),
        ("target", ctypes.c_char_p),
        ("val_source", ctypes.c_char_p),
        ("val_target", ctypes.c_char_p),
        ("val_pairs", ctypes.c_long),
        ("tokenizer", ctypes.c_char_p),
        ("learn_path", ctypes.c_char_p),
        ("learn_vocab", ctypes.c_int),
        ("learner", ctypes.c_bool),
        ("run", ctypes.c_char_p),
        ("resume", ctypes.c_bool),
        ("preset", ctypes.c_char_p),
        ("max_len", ctypes.c_int),
        ("opts", TrainOpts),
        ("hooks", TrainSetupHooks),
        ("report", ctypes.POINTER(TrainSetupReport)),
    ]


class TokIds(ctypes.Structure):
    """struct clf_tok_ids"""
    _fields_ = [("pad", ctypes.c_int32), ("bos", ctypes.c_int32), ("eos", ctypes.c_int32), ("unk", ctypes.c_int32)]


class SpmLearnOpts(ctypes.Structure):
    """struct clf_spm_learn_opts"""
    _fields_ = [
        ("vocab_size", ctypes.c_int),
        ("threads", ctypes.c_int),
        ("byte_fallback", ctypes.c_bool),
        ("character_coverage", ctypes.c_double),
        ("max_sentences", ctypes.c_size_t),
    ]


_P = ctypes.c_void_p
_S = ctypes.c_int  # clf_status
_I32P = ctypes.POINTER(ctypes.c_int32)

# name: (restype, argtypes); only functions the public headers declare
_PROTOTYPES = {
    "clf_status_str": (ctypes.c_char_p, [_S]),
    "clf_ctx_error": (ctypes.c_char_p, [_P]),
    "clf_devices_list": (_S, [ctypes.POINTER(ctypes.POINTER(DeviceInfo)), ctypes.POINTER(ctypes.c_int)]),
    "clf_ctx_init": (_S, [ctypes.POINTER(_P), ctypes.c_char_p]),
    "clf_ctx_free": (None, [_P]),
    "clf_ctx_device": (ctypes.POINTER(DeviceInfo), [_P]),
    "clf_gemm_backend_choose": (_S, [ctypes.POINTER(DeviceInfo), ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "clf_gemm_backend_str": (ctypes.c_char_p, [ctypes.c_int]),
    "clf_translator_init": (_S, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "clf_translator_free": (None, [_P]),
    "clf_translator_compute_set": (_S, [_P, ctypes.c_char_p]),
    "clf_translator_compute": (ctypes.c_int, [_P]),
    "clf_compute_type_str": (ctypes.c_char_p, [ctypes.c_int]),
    "clf_translator_opts": (TranslateOpts, [_P]),
    "clf_translator_max_source": (ctypes.c_size_t, [_P]),
    "clf_translator_tok": (_P, [_P]),
    "clf_tok_vocab_size": (ctypes.c_int, [_P, ctypes.c_int]),
    "clf_translator_encode": (_S, [_P, ctypes.c_char_p, ctypes.POINTER(_I32P), ctypes.POINTER(ctypes.c_size_t)]),
    "clf_translator_translate": (_S, [_P, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                      ctypes.POINTER(TranslateOpts), Batching, ctypes.POINTER(_P),
                                      ctypes.POINTER(ctypes.c_float), _P, _P]),
    "clf_translator_translate_ids": (_S, [_P, ctypes.POINTER(_I32P), ctypes.POINTER(ctypes.c_size_t),
                                          ctypes.c_size_t, ctypes.POINTER(TranslateOpts), Batching,
                                          ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_float), _P, _P]),
    "clf_translator_translate_file": (_S, [_P, ctypes.POINTER(TranslateFile), ctypes.POINTER(TranslateOpts),
                                           Batching, ctypes.POINTER(ctypes.c_size_t)]),
    "clf_shards_join_file": (_S, [ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t,
                                  ctypes.c_char_p]),
    "clf_shards_remove": (_S, [ctypes.c_char_p, ctypes.c_int]),
    # the translation queue (clformer/serve.h): AsyncTranslator
    "clf_queue_init": (_S, [ctypes.POINTER(_P), ctypes.c_size_t, ctypes.POINTER(TranslateOpts),
                            ctypes.POINTER(QueueOpts), ctypes.POINTER(_P)]),
    "clf_queue_free": (None, [_P]),
    "clf_queue_submit_with": (ctypes.c_int, [_P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                             ctypes.POINTER(QueueSubmitOpts), ctypes.POINTER(_P)]),
    "clf_queue_wait": (ctypes.c_bool, [_P, ctypes.c_long]),
    "clf_queue_req_result": (ctypes.c_int, [_P]),
    "clf_queue_req_message": (ctypes.c_char_p, [_P]),
    "clf_queue_req_output": (ctypes.c_char_p, [_P, ctypes.c_size_t]),
    "clf_queue_req_alternative": (ctypes.c_char_p, [_P, ctypes.c_size_t, ctypes.c_size_t]),
    "clf_queue_req_free": (None, [_P]),
    "clf_queue_drain": (ctypes.c_bool, [_P, ctypes.c_double]),
    # training (clformer/train.h) and what it is given (clformer/model.h, clformer/text.h)
    "clf_model_config_preset": (_S, [ctypes.POINTER(ModelConfig), ctypes.c_char_p]),
    "clf_model_config": (ctypes.POINTER(ModelConfig), [_P]),
    "clf_model_numel": (ctypes.c_size_t, [_P]),
    "clf_spm_learn_defaults": (None, [ctypes.POINTER(SpmLearnOpts)]),
    "clf_spm_learn": (_S, [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_char_p,
                           ctypes.POINTER(SpmLearnOpts)]),
    "clf_tok_kind": (ctypes.c_int, [_P]),
    "clf_tok_specials": (TokIds, [_P]),
    "clf_ckpt_tok_put": (_S, [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]),
    "clf_train_opts_default": (TrainOpts, []),
    "clf_train_setup_default": (TrainSetup, []),
    "clf_trainer_open": (_S, [_P, ctypes.POINTER(TrainSetup), ctypes.POINTER(_P)]),
    "clf_trainer_tokenizer": (_P, [_P]),
    "clf_trainer_free": (None, [_P]),
    "clf_trainer_model": (_P, [_P]),
    "clf_trainer_state": (ctypes.POINTER(TrainState), [_P]),
    "clf_trainer_step": (_S, [_P]),
    "clf_trainer_save": (_S, [_P, ctypes.c_char_p, _P, ctypes.c_int]),
    "clf_trainer_ckpt_paths": (None, [ctypes.c_char_p, ctypes.c_long, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_size_t]),
}

_lib = None
_libc = None
# (path, how it was found) of the loaded library, once loaded
loaded = None
# where a wheel carries the library: inside the package, beside this file
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
# where a self-contained wheel carries the libraries libclformer links
# (auditwheel repair: <package>.libs beside the package)
VENDORED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "clformer.libs")


class LibraryNotFound(OSError):
    """libclformer could not be loaded: the message says where it looked
    and what to set."""


# The one library that stays the system's, whichever way the package is
# installed: a wheel leaves it out (scripts/wheel.sh), as it must load the
# drivers installed beside it
OPENCL_LOADER = "libOpenCL.so.1"
OPENCL_HELP = ("Debian and Ubuntu: apt-get install ocl-icd-libopencl1, and a driver: pocl-opencl-icd for the "
               "CPU, or the GPU's (intel-opencl-icd, mesa-opencl-icd, nvidia-opencl-icd); Fedora: dnf install "
               "ocl-icd pocl")


def require_system():
    """Raises ImportError, naming the package to install, where the
    system lacks the OpenCL ICD loader; loading it costs a millisecond,
    and the library would need it anyway."""
    try:
        ctypes.CDLL(OPENCL_LOADER)
    except OSError as e:
        raise ImportError("clformer needs the OpenCL ICD loader %s, which the system provides (a clformer wheel "
                          "carries its other libraries, not this one nor a driver), and it cannot be loaded: %s. "
                          "Install it (%s)" % (OPENCL_LOADER, e, OPENCL_HELP), name="clformer") from e


def _candidates():
    """Where to look, in order, as (path or name, where it came from)."""
    env = os.environ.get("CLFORMER_LIBRARY")
    if env:
        yield (os.path.join(env, SONAME) if os.path.isdir(env) else env), "CLFORMER_LIBRARY"
        return
    if os.path.exists(BUNDLED):
        yield BUNDLED, "the wheel's own copy"
        return
    pkg_config = shutil.which("pkg-config")
    if pkg_config:
        try:
            libdir = subprocess.run([pkg_config, "--variable=libdir", "clformer"], capture_output=True,
                                    text=True, timeout=30, check=True).stdout.strip()
        except (subprocess.SubprocessError, OSError):
            libdir = ""
        if libdir:
            yield os.path.join(libdir, SONAME), "pkg-config --variable=libdir clformer"
    yield SONAME, "the system's loader"
    found = ctypes.util.find_library("clformer")
    if found and found != SONAME:
        yield found, "ctypes.util.find_library"


def _system_packages():
    """The Debian packages of the libraries the wheel's library links, as
    scripts/wheel.sh found them where it was built."""
    try:
        with open(os.path.join(os.path.dirname(BUNDLED), "system-packages.txt"), encoding="utf-8") as f:
            return " ".join(f.read().split())
    except OSError:
        return "the packages docs/python.md names"


def library():
    """The loaded library, its prototypes declared (loaded on first use)."""
    global _lib, _libc, loaded
    with LOCK:
        if _lib is not None:
            return _lib
        tried = []
        # oneDNN's OpenMP threads wait passively between GEMMs rather than
        # spin on the cores the OpenCL runtime's threads need (the command
        # sets the same; libgomp reads it when loaded, so only before a
        # library that loads it, torch say, is imported)
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        for path, how in _candidates():
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s): %s" % (path, how, e))
                continue
            try:
                for name, (res, args) in _PROTOTYPES.items():
                    f = getattr(lib, name)
                    f.restype, f.argtypes = res, args
            except AttributeError as e:
                tried.append("%s (%s): not this version of libclformer: %s" % (path, how, e))
                continue
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc.free.restype, _libc.free.argtypes = None, [_P]
            _lib, loaded = lib, (path, how)
            return lib
        if os.path.exists(BUNDLED) and not os.environ.get("CLFORMER_LIBRARY"):
            carries = ("libclformer and the libraries it links, but for the system's named here"
                       if os.path.isdir(VENDORED) else "libclformer alone; the libraries it links come from the system")
            raise LibraryNotFound(
                "clformer: cannot load the wheel's own %s: %s. The wheel carries %s (Debian: apt-get install %s), "
                "and an OpenCL driver is needed (pocl-opencl-icd, or the GPU's)"
                % (SONAME, "; ".join(tried), carries, _system_packages()))
        raise LibraryNotFound(
            "clformer: cannot load %s; tried %s. Set CLFORMER_LIBRARY to its path (P/lib/libclformer.so.0 after "
            "`cmake --install build --prefix P`, or build/libclformer.so.0 in a build tree), or "
            "PKG_CONFIG_PATH=P/lib/pkgconfig, or install the Debian package libclformer0"
            % (SONAME, "; ".join(tried)))


def free(p):
    """free() of what the library malloc'd."""
    _libc.free(p)


def status_name(st):
    """The name of status st as the library gives it ("CLF_ERR_IO"; one it
    does not know: "CLF_ERR_UNKNOWN")."""
    return text(library().clf_status_str(st))


def text(b):
    return b.decode("utf-8", "replace") if b is not None else ""
