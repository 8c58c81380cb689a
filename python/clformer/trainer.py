"""clformer.Trainer: training over the library's trainer (clf_trainer_*,
include/clformer/train.h), the one step `clformer train` takes too.

A Trainer holds a device context and the library's trainer, which
clf_trainer_open sets up as it does for `clformer train` (a model and its
Adam state, the tokenizer, the encoded training pairs, the epoch's
batches, where the run is). step() is one update (clf_trainer_step); save()
writes a checkpoint with the library's writer (clf_trainer_save: a
temporary name, then renamed) and puts the tokenizer beside it
(clf_ckpt_tok_put), so that clformer.Translator and `clformer translate`
load it. The budget, logging and validation are the caller's, as they are
the command's: clformer.train() is a plain loop of steps."""

import ctypes
import numbers
import os
import threading
from dataclasses import dataclass, fields

from . import _lib
from .devices import device_of
from ._owner import Owner
from .errors import invalid, raise_status
from .translator import _device_request, _int_option

# struct clf_model_config's fields that config= may set over the preset;
# vocab comes from the tokenizer
_CONFIG_FIELDS = tuple(f for f, _ in _lib.ModelConfig._fields_ if f != "vocab")
_NORMS = {"post": _lib.CLF_NORM_POST, "pre": _lib.CLF_NORM_PRE}


@dataclass(frozen=True)
class Update:
    """What one update made (clf_trainer_step): its number, its loss per
    target token (label-smoothed, as `clformer train` logs it), its
    target tokens, the learning rate it stepped with, and the epochs of
    data done after it (6.57: 57% into the seventh)."""
    step: int
    loss: float
    tokens: float
    lr: float
    epochs: float


@dataclass(frozen=True)
class TrainingState:
    """struct clf_train_state: where the run is (step: updates done;
    epoch, from 0; batch: the epoch's next; tokens: target tokens seen;
    seconds of training; epochs, a fraction; epoch_batches) and the last
    update (loss, update_tokens_seen, lr), with the run's seed and batch
    sizes."""
    step: int
    epoch: int
    batch: int
    tokens: float
    seconds: float
    epochs: float
    epoch_batches: int
    loss: float
    update_tokens_seen: float
    lr: float
    seed: int
    max_tokens: int
    update_tokens: int


def _real_option(name, value, lo):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= lo:
        raise invalid("%s wants a number >= %g, not %r" % (name, lo, value))
    return float(value)


def _path(name, value):
    try:
        return os.fsencode(value)
    except TypeError:
        raise TypeError("%s wants a path, not %r" % (name, value)) from None


def _config(preset, overrides):
    """The preset's config with overrides (as `clformer train` makes a new
    model's; clf_trainer_open gives it the tokenizer's vocabulary and
    positions for max_len, and checks every field)."""
    lib = _lib.library()
    c = _lib.ModelConfig()
    st = lib.clf_model_config_preset(ctypes.byref(c), str(preset).encode())
    if st != _lib.CLF_OK:
        raise_status(st)
    for key, value in (overrides or {}).items():
        if key == "vocab":
            raise invalid("config: vocab comes from the tokenizer")
        if key not in _CONFIG_FIELDS:
            raise invalid("config: %r is not a field of the model's config (%s)" % (key, ", ".join(_CONFIG_FIELDS)))
        if key == "norm" and value in _NORMS:
            value = _NORMS[value]
        try:
            setattr(c, key, value)
        except TypeError:
            raise invalid("config: %s wants a number, not %r" % (key, value)) from None
    return c


def _config_dict(c):
    return {f: getattr(c, f) for f, _ in _lib.ModelConfig._fields_}


class Trainer(Owner):
    """Trains a model over the library's trainer, as `clformer train` does.

    source, target: the training pairs, two files (plain or gzip) with a
    sentence a line, line i of one translating line i of the other.
    tokenizer: a SentencePiece model file (clformer.learn_bpe's, or
    `clformer bpe learn`'s); for init=, None takes the checkpoint's own.
    init: a checkpoint (ours or one `clformer import` made) to fine-tune:
    its weights, config and tokenizer, Adam afresh from update 0; preset
    and config are then not taken.
    preset: "base", "big", "small" or "tiny" (clf_model_config_preset);
    config: a dict of struct clf_model_config fields over it (enc_layers,
    dec_layers, d_model, heads, d_ff, norm "post" or "pre", enc_window,
    dec_window, ...); the vocabulary is the tokenizer's.
    max_len: pairs with a side longer than this many subwords are skipped
    (default 100, or what a checkpoint's positions allow).
    device: as Translator's ("auto", an index, "gpu", "cpu" or part of a
    name).
    The rest are struct clf_train_opts' and `clformer train`'s options:
    dropout and label_smoothing (None: the preset's or the checkpoint's),
    seed, max_tokens (padded tokens per batch), update_tokens (target
    tokens per update, 0: one batch), warmup (updates), lr_scale (times
    the paper's schedule), clip (global gradient norm, 0: off); None
    leaves the library's default, clf_train_opts_default's, the command's
    too (seed 1, max_tokens 4096, update_tokens 0, warmup 800, lr_scale 1,
    clip 0).

    Equal options train as `clformer train --src --tgt --bpe ...` does,
    update for update. One process; several threads may call one Trainer
    (the calls take turns), and the GIL is released while the device
    works. close() (or a with block) frees the device's memory now."""

    def __init__(self, source, target, tokenizer=None, *, init=None, preset="small", config=None, max_len=None,
                 device="auto", dropout=None, label_smoothing=None, seed=None, max_tokens=None,
                 update_tokens=None, warmup=None, lr_scale=None, clip=None):
        src, tgt = _path("source", source), _path("target", target)
        tok_path = None if tokenizer is None else _path("tokenizer", tokenizer)
        init_path = None if init is None else _path("init", init)
        if init_path is None and tok_path is None:
            raise invalid("a new model needs a tokenizer: a SentencePiece model file (clformer.learn_bpe)")
        if init_path is not None and (config or preset != "small"):
            raise invalid("init: the model's shape and vocabulary come from the checkpoint; leave preset and "
                          "config out")
        if max_len is not None:
            max_len = _int_option("max_len", max_len, 2)
        lib = _lib.library()
        o = lib.clf_train_opts_default()  # what None leaves: the command's defaults
        o.init = init_path
        ints = {"seed": (seed, 0, 1 << 53), "max_tokens": (max_tokens, 1, None),
                "update_tokens": (update_tokens, 0, None), "warmup": (warmup, 1, None)}
        for name, (value, lo, hi) in ints.items():
            if value is not None:
                setattr(o, name, _int_option(name, value, lo, hi))
        for name, value in (("lr_scale", lr_scale), ("clip", clip), ("dropout", dropout),
                            ("label_smoothing", label_smoothing)):
            if value is not None:
                setattr(o, name, _real_option(name, value, 0))
        request = _device_request(device)
        self._lib = lib
        self._lock = threading.RLock()
        self._ctx, self._t = ctypes.c_void_p(), ctypes.c_void_p()
        self._tok = ctypes.c_void_p()  # the library's trainer keeps the tokenizer and the pairs
        with self._lock:
            try:
                self._open(lib, src, tgt, tok_path, init_path, preset, config, max_len, request, o)
            except BaseException:
                self.close()
                raise

    def _open(self, lib, src, tgt, tok_path, init_path, preset, config, max_len, request, o):
        # a new model's config: the preset with config over it (the
        # library gives it the tokenizer's vocabulary, dropout and label
        # smoothing from o, and positions for max_len)
        c = None if init_path is not None else _config(preset, config)
        st = lib.clf_ctx_init(ctypes.byref(self._ctx), request)
        if st != _lib.CLF_OK:
            raise_status(st)
        # the rest is the library's set-up, `clformer train`'s: the pairs
        # read (line counts, UTF-8), the tokenizer (tok_path, or init's
        # checked against its model), the model, max_len fitted to init's
        # positions, the pairs encoded, the epoch's batches
        s = lib.clf_train_setup_default()
        s.source, s.target, s.tokenizer = src, tgt, tok_path
        s.max_len = -1 if max_len is None else max_len
        if c is not None:
            o.config = ctypes.pointer(c)
        s.opts = o
        report = _lib.TrainSetupReport()
        s.report = ctypes.pointer(report)
        st = lib.clf_trainer_open(self._ctx, ctypes.byref(s), ctypes.byref(self._t))
        if st != _lib.CLF_OK:
            given = (p for p in (src, tgt, tok_path, init_path) if p is not None)
            raise_status(st, self._ctx, path=next((p for p in given if not os.path.exists(p)), None))
        self._tok = ctypes.c_void_p(lib.clf_trainer_tokenizer(self._t))  # the trainer's, freed with it
        self._tok_path = report.tokenizer_path
        model = lib.clf_trainer_model(self._t)
        self.pairs = report.train.kept
        self.max_len = report.max_len
        self.config = _config_dict(lib.clf_model_config(model).contents)
        self.num_parameters = lib.clf_model_numel(model)
        self.device = device_of(lib, lib.clf_ctx_device(self._ctx))

    def close(self):
        """Frees the model, the data and the device context; the Trainer is
        unusable afterwards. Calling it twice does nothing."""
        with self._lock:
            self._tok = ctypes.c_void_p()  # the trainer's
            for handle, free in (("_t", "clf_trainer_free"), ("_ctx", "clf_ctx_free")):
                if getattr(self, handle, None):
                    getattr(self._lib, free)(getattr(self, handle))
                    setattr(self, handle, ctypes.c_void_p())

    def _state(self):
        return self._lib.clf_trainer_state(self._t).contents

    @property
    def state(self):
        """Where the run is: a TrainingState (struct clf_train_state)."""
        with self._lock:
            self._live()
            s = self._state()
            return TrainingState(**{f.name: getattr(s, f.name) for f in fields(TrainingState)})

    def step(self):
        """One update (clf_trainer_step): the batches that reach
        update_tokens target tokens, their gradients, the schedule's rate,
        Adam. Returns its Update."""
        with self._lock:
            self._live()
            st = self._lib.clf_trainer_step(self._t)
            if st != _lib.CLF_OK:
                raise_status(st, self._ctx)
            s = self._state()
            return Update(step=s.step, loss=s.loss, tokens=s.update_tokens_seen, lr=s.lr, epochs=s.epochs)

    def save(self, folder, keep=5):
        """Writes folder/ckpt-<step>.safetensors and its .optim (the
        library's writer: each to a temporary name, then renamed), with
        the tokenizer beside them (bpe.model, or Marian's files: one of
        that name already there with other bytes is refused before
        anything is written), and deletes all but the newest `keep`
        checkpoints of folder. Returns the checkpoint's path, which
        clformer.Translator and `clformer translate --model` load."""
        keep = _int_option("keep", keep, 1)
        folder = _path("folder", folder)
        with self._lock:
            self._live()
            os.makedirs(folder, exist_ok=True)
            model, optim = ctypes.create_string_buffer(_lib.PATH_MAX), ctypes.create_string_buffer(_lib.PATH_MAX)
            self._lib.clf_trainer_ckpt_paths(folder, self._state().step, model, optim, len(model))
            st = self._lib.clf_ckpt_tok_put(self._tok_path, self._lib.clf_tok_kind(self._tok), model.value)
            if st != _lib.CLF_OK:
                raise_status(st)
            st = self._lib.clf_trainer_save(self._t, folder, self._tok, keep)
            if st != _lib.CLF_OK:
                raise_status(st, self._ctx)
            return os.fsdecode(model.value)


@dataclass(frozen=True)
class TrainingRun:
    """What clformer.train() did: every update, and the checkpoint it
    saved at the end (None without `out`)."""
    updates: list
    checkpoint: str


def train(source, target, tokenizer=None, *, steps=None, epochs=None, minutes=None, out=None, keep=5,
          **options):
    """Trains until the budget is spent, as `clformer train --steps N |
    --epochs N | --minutes M` (whichever is reached first; none given: one
    epoch), then saves a checkpoint into `out` when given. options are
    Trainer's. Returns a TrainingRun."""
    budget = {k: v for k, v in (("steps", steps), ("epochs", epochs), ("minutes", minutes)) if v is not None}
    for k, v in budget.items():
        _real_option(k, v, 0)
    if not any(budget.values()):
        budget = {"epochs": 1}
    updates = []
    with Trainer(source, target, tokenizer, **options) as t:
        while True:  # the command's budget: at least one update, then whichever is spent first
            u = t.step()
            updates.append(u)
            if (u.step >= budget.get("steps", 0) > 0 or u.epochs >= budget.get("epochs", 0) > 0 or
                    t.state.seconds >= budget.get("minutes", 0) * 60 > 0):
                break
        return TrainingRun(updates, t.save(out, keep) if out is not None else None)


def learn_bpe(files, model_path, vocab_size=8000):
    """Learns a SentencePiece BPE model jointly on files (plain or gzip,
    a sentence a line) and writes it to model_path (clf_spm_learn, what
    `clformer train` and `clformer bpe learn` do): the tokenizer a new
    model trains with."""
    lib = _lib.library()
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    paths = [_path("files", f) for f in files]
    if not paths:
        raise invalid("learn_bpe: no files")
    o = _lib.SpmLearnOpts()
    lib.clf_spm_learn_defaults(ctypes.byref(o))
    o.vocab_size = _int_option("vocab_size", vocab_size, 1)
    arr = (ctypes.c_char_p * len(paths))(*paths)
    st = lib.clf_spm_learn(arr, len(paths), _path("model_path", model_path), ctypes.byref(o))
    if st != _lib.CLF_OK:
        raise_status(st, path=next((p for p in paths if not os.path.exists(p)), None))
    return os.fspath(model_path)
