"""clformer.Translator: a checkpoint loaded on a device with its tokenizer
(clf_translator_*, include/clformer/translate.h), translate_batch in
CTranslate2's shape."""

import ctypes
import numbers
import os
import threading

from . import _lib
from .devices import device_of
from ._owner import Owner
from .errors import invalid, raise_status

# CTranslate2's compute types, as the library names them
# (clf_translator_compute_set): the library chooses "default" and "auto"
# and refuses a type the device or the build cannot run, with its message.
COMPUTE_TYPES = ("default", "auto", "float32", "int8", "bfloat16", "float16")


class TranslationResult:
    """One source's n-best: `hypotheses`, detokenised text, best first;
    `scores`, their log-probabilities over the length penalty (empty unless
    return_scores). result["hypotheses"] reads the same, as CTranslate2's
    results allow."""

    __slots__ = ("hypotheses", "scores")

    def __init__(self, hypotheses, scores):
        self.hypotheses = hypotheses
        self.scores = scores

    def __getitem__(self, key):
        if key not in self.__slots__:
            raise KeyError(key)
        return getattr(self, key)

    def keys(self):
        return list(self.__slots__)

    def __len__(self):
        return len(self.hypotheses)

    def __repr__(self):
        return "TranslationResult(hypotheses=%r, scores=%r)" % (self.hypotheses, self.scores)


def _device_request(device):
    if device is None or device == "auto":
        return None  # CLF_DEVICE, else the best device
    if isinstance(device, bool) or not isinstance(device, (numbers.Integral, str)):
        raise invalid("device wants \"auto\", an index from clformer.devices(), \"gpu\", \"cpu\" or part of a "
                      "device's name, not %r" % (device,))
    if isinstance(device, numbers.Integral) and device < 0:
        raise invalid("device index %d is negative: see clformer.devices()" % device)
    return str(device).encode()


def _text(s, what):
    """s as the library takes text: UTF-8 bytes, a C string. A NUL would
    end the sentence there, silently: refused (InvalidArgumentError)."""
    if "\0" in s:
        raise invalid("%s holds a NUL character, which would end the sentence there" % what)
    return s.encode("utf-8")


def _int_option(name, value, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo or (
            hi is not None and value > hi):
        raise invalid("%s wants an integer %s, not %r" % (
            name, "from %d to %d" % (lo, hi) if hi is not None else ">= %d" % lo, value))
    return int(value)


class Translator(Owner):
    """A checkpoint (ours, or one `clformer import` made of a Marian /
    OPUS-MT model) on one device with its tokenizer.

    model_path: the .safetensors checkpoint. device: "auto" (CLF_DEVICE,
    else the best device, as the command chooses), an index from
    clformer.devices(), "gpu", "cpu" or part of a platform or device name.
    compute_type: CTranslate2's names: "default" (the checkpoint's
    stored type where the device runs it, else float32), "auto" (the
    fastest the device runs), "float32", "int8", "bfloat16" (int8 and
    bfloat16 on CPU devices of a build with oneDNN), "float16" (devices
    with cl_khr_fp16); a type the device cannot run raises with the
    library's reason.
    `compute_type` then says which type runs. tokenizer: None for the checkpoint's own (its bpe.model,
    or an imported model's files beside it), else a SentencePiece model
    file (ours) or a folder (Marian's).

    Several Python threads may call one Translator: the calls take turns,
    and the GIL is released while the device works. close() (or a with
    block) frees the device's memory now rather than at garbage
    collection."""

    def __init__(self, model_path, device="auto", compute_type="default", tokenizer=None):
        if compute_type not in COMPUTE_TYPES:
            raise invalid("compute_type %r is not one of %s" % (
                compute_type, ", ".join(repr(k) for k in COMPUTE_TYPES)))
        self.model_path = os.fspath(model_path)
        request = _device_request(device)
        self._lib = lib = _lib.library()
        self._lock = threading.RLock()
        self._ctx = ctypes.c_void_p()
        self._t = ctypes.c_void_p()
        with self._lock:
            st = lib.clf_ctx_init(ctypes.byref(self._ctx), request)
            if st != _lib.CLF_OK:
                raise_status(st)
            tok = None if tokenizer is None else os.fsencode(tokenizer)
            st = lib.clf_translator_init(self._ctx, os.fsencode(self.model_path), tok, ctypes.byref(self._t))
            if st != _lib.CLF_OK:
                try:
                    raise_status(st, self._ctx, path=self.model_path)
                finally:
                    self.close()
            st = lib.clf_translator_compute_set(self._t, compute_type.encode())
            if st != _lib.CLF_OK:
                try:
                    raise_status(st, self._ctx)
                finally:
                    self.close()
            self.compute_type = lib.clf_compute_type_str(lib.clf_translator_compute(self._t)).decode()
            self._defaults = lib.clf_translator_opts(self._t)
            self.max_source_length = lib.clf_translator_max_source(self._t)
            self._vocab = lib.clf_tok_vocab_size(lib.clf_translator_tok(self._t), _lib.CLF_TOK_SOURCE)
            self.device = device_of(lib, lib.clf_ctx_device(self._ctx))

    def close(self):
        """Frees the model and the device context; the Translator is
        unusable afterwards. Calling it twice does nothing."""
        with self._lock:
            if getattr(self, "_t", None):
                self._lib.clf_translator_free(self._t)
                self._t = ctypes.c_void_p()
            if getattr(self, "_ctx", None):
                self._lib.clf_ctx_free(self._ctx)
                self._ctx = ctypes.c_void_p()

    @property
    def defaults(self):
        """The checkpoint's generation defaults (an imported model's own;
        the library's for ours): beam_size, length_penalty,
        length_penalty_kind, max_decoding_length (None: source length +
        max_extra), min_decoding_length."""
        o = self._defaults
        return {"beam_size": 1 if o.greedy else o.beam, "length_penalty": o.alpha,
                "length_penalty_kind": "hf" if o.length_penalty == _lib.CLF_LENGTH_PENALTY_HF else "paper",
                "max_decoding_length": o.max_output or None, "max_extra": o.max_extra,
                "min_decoding_length": o.min_length}

    def encode(self, text):
        """Source text -> its subword ids (a list of int, without EOS),
        what translate_batch takes as a token list."""
        with self._lock:
            self._live()
            ids, n = _lib._I32P(), ctypes.c_size_t(0)
            st = self._lib.clf_translator_encode(self._t, _text(text, "text"), ctypes.byref(ids), ctypes.byref(n))
            if st != _lib.CLF_OK:
                raise_status(st, self._ctx)
            try:
                return ids[:n.value]
            finally:
                _lib.free(ids)

    def _opts(self, beam_size, num_hypotheses, length_penalty, length_penalty_kind, max_decoding_length,
              min_decoding_length, max_extra):
        o = _lib.TranslateOpts.from_buffer_copy(self._defaults)
        if beam_size is not None:
            o.beam = _int_option("beam_size", beam_size, 1, _lib.CLF_TRANSLATE_BEAM_MAX)
            o.greedy = o.beam == 1
        if o.greedy:
            o.beam = 1
        o.nbest = _int_option("num_hypotheses", num_hypotheses, 1, o.beam)
        if length_penalty is not None:
            if isinstance(length_penalty, bool) or not isinstance(length_penalty, numbers.Real):
                raise invalid("length_penalty wants a number, not %r" % (length_penalty,))
            o.alpha = float(length_penalty)
        if length_penalty_kind is not None:
            kinds = {"paper": _lib.CLF_LENGTH_PENALTY_PAPER, "hf": _lib.CLF_LENGTH_PENALTY_HF}
            if length_penalty_kind not in kinds:
                raise invalid("length_penalty_kind wants \"paper\" or \"hf\", not %r" % (length_penalty_kind,))
            o.length_penalty = kinds[length_penalty_kind]
        if max_decoding_length is not None:
            o.max_output = _int_option("max_decoding_length", max_decoding_length, 1)
        if min_decoding_length is not None:
            o.min_length = _int_option("min_decoding_length", min_decoding_length, 0)
        if max_extra is not None:
            o.max_extra = _int_option("max_extra", max_extra, 1)
        return o

    def _ids(self, i, tokens):
        if getattr(getattr(tokens, "dtype", None), "kind", "i") not in "iu":
            raise TypeError("source[%d]: a numpy array of ids wants an integer dtype, not %s" % (i, tokens.dtype))
        try:
            ids = [int(x) for x in tokens]
            exact = all(x == y for x, y in zip(ids, tokens))
        except (TypeError, ValueError):
            exact = False
        if not exact or any(isinstance(x, (bool, str, bytes)) for x in tokens):
            raise TypeError("source[%d]: a token list holds subword ids (ints, or a numpy integer array); "
                            "give text as a str" % i)
        bad = [x for x in ids if not 0 <= x < self._vocab]
        if bad:
            raise invalid("source[%d]: id %d is outside the source vocabulary (0 to %d)" % (
                i, bad[0], self._vocab - 1))
        return ids[:self.max_source_length]  # cut as the text path cuts

    def _batching(self, max_batch_size, batch_type):
        # continuous, as the command's default (CLF_BATCHING_DEFAULT): sorted sources join one decoding as
        # others finish; the translations are those of rounds
        size = _int_option("max_batch_size", max_batch_size, 1)
        if batch_type == "examples":
            return _lib.Batching(sentences=size, tokens=0, continuous=True)
        if batch_type == "tokens":
            return _lib.Batching(sentences=1 << 30, tokens=size, continuous=True)
        raise invalid("batch_type wants \"examples\" or \"tokens\", not %r" % (batch_type,))

    def translate_file(self, input_path, output_path, max_batch_size=32, batch_type="examples", beam_size=None,
                       num_hypotheses=1, length_penalty=None, length_penalty_kind=None, max_decoding_length=None,
                       min_decoding_length=None, max_extra=None, shard=0, num_shards=1):
        """Translates the lines of the text file input_path (plain or
        gzip) into output_path as `clformer translate --input IN --output
        OUT` writes it (num_hypotheses > 1: "index<TAB>score<TAB>text"
        lines), written whole to a temporary name and renamed. The options
        are translate_batch's.

        shard, num_shards: only shard `shard` (from 0) of num_shards
        contiguous shards of the lines, into its file beside output_path
        (OUT.shard-K-of-N, K from 1), as each rank of `mpirun -np N
        clformer translate` writes it: one process or machine per shard,
        then join_shards(output_path, num_shards, lines) writes them out
        in order. Returns the input's line count."""
        o = self._opts(beam_size, num_hypotheses, length_penalty, length_penalty_kind, max_decoding_length,
                       min_decoding_length, max_extra)
        b = self._batching(max_batch_size, batch_type)
        n = _int_option("num_shards", num_shards, 1, 1 << 30)
        k = _int_option("shard", shard, 0, n - 1)
        input_path, output_path = os.fspath(input_path), os.fspath(output_path)
        f = _lib.TranslateFile(input=os.fsencode(input_path), output=os.fsencode(output_path), shard=k, shards=n)
        lines = ctypes.c_size_t(0)
        with self._lock:
            self._live()
            st = self._lib.clf_translator_translate_file(self._t, ctypes.byref(f), ctypes.byref(o), b,
                                                         ctypes.byref(lines))
            if st != _lib.CLF_OK:
                raise_status(st, self._ctx, path=input_path)
        return lines.value

    def translate_batch(self, source, max_batch_size=32, batch_type="examples", beam_size=None,
                        num_hypotheses=1, length_penalty=None, length_penalty_kind=None,
                        max_decoding_length=None, min_decoding_length=None, max_extra=None,
                        return_scores=False):
        """Translates a list of sources, each a str (encoded with the
        checkpoint's tokenizer) or a token list: subword ids as encode()
        gives them (a list of int or a numpy integer array, without EOS).
        A source longer than max_source_length subwords is cut to it.

        beam_size: 1 is greedy search (as CTranslate2's and an imported
        model's num_beams 1); None: the checkpoint's (4 for ours).
        num_hypotheses: how many of the beam to return (<= beam_size).
        length_penalty: the exponent alpha (None: the checkpoint's, 0.6 for
        ours); length_penalty_kind "paper" ((5+|Y|)/6)^alpha or "hf"
        (transformers': |Y|^alpha). max_decoding_length: at most this many
        subwords with EOS (None: the checkpoint's, else the source length
        + max_extra, 50); min_decoding_length: no EOS before that many (1).
        Sources are sorted by length and cut into batches of at most
        max_batch_size sentences (batch_type "examples") or padded source
        tokens ("tokens"). The options are `clformer translate`'s
        (--beam, --greedy, --nbest, --alpha, --length-penalty,
        --max-length N+1, --min-length, --max-extra, --batch, --max-tokens),
        so equal options give the command's output.

        Returns one TranslationResult per source, in order."""
        if isinstance(source, (str, bytes)):
            raise TypeError("source is a list of sources: wrap one sentence in a list")
        source = list(source)
        o = self._opts(beam_size, num_hypotheses, length_penalty, length_penalty_kind, max_decoding_length,
                       min_decoding_length, max_extra)
        b = self._batching(max_batch_size, batch_type)
        texts = [isinstance(s, str) for s in source]
        if any(texts) and not all(texts):
            raise TypeError("source mixes text and token lists: give all of one kind")
        n, nb = len(source), o.nbest
        if n == 0:
            return []
        out = (ctypes.c_void_p * (n * nb))()
        scores = (ctypes.c_float * (n * nb))()
        with self._lock:
            self._live()
            if all(texts):
                src = (ctypes.c_char_p * n)(*[_text(s, "source[%d]" % i) for i, s in enumerate(source)])
                st = self._lib.clf_translator_translate(self._t, src, n, ctypes.byref(o), b, out, scores, None, None)
            else:
                ids = [self._ids(i, s) for i, s in enumerate(source)]
                arrays = [(ctypes.c_int32 * max(len(x), 1))(*x) for x in ids]
                src = (_lib._I32P * n)(*[ctypes.cast(a, _lib._I32P) for a in arrays])
                lens = (ctypes.c_size_t * n)(*[len(x) for x in ids])
                st = self._lib.clf_translator_translate_ids(self._t, src, lens, n, ctypes.byref(o), b, out, scores,
                                                            None, None)
            if st != _lib.CLF_OK:
                raise_status(st, self._ctx)
        try:
            hyps = [ctypes.string_at(p).decode("utf-8") if p else "" for p in out]
        finally:
            for p in out:
                if p:
                    _lib.free(p)
        return [TranslationResult(hyps[i * nb:(i + 1) * nb],
                                  [float(s) for s in scores[i * nb:(i + 1) * nb]] if return_scores else [])
                for i in range(n)]


def join_shards(output_path, num_shards, lines, num_hypotheses=1, remove=True):
    """Writes the num_shards shard files beside output_path
    (Translator.translate_file's with shard=0..num_shards-1, or `mpirun -np
    N clformer translate`'s) out in order into output_path, written whole
    to a temporary name and renamed, each first checked to hold its share
    of the input's `lines` lines (num_hypotheses lines a source); then
    removes them unless remove is False. A missing or foreign shard raises,
    naming it, and writes nothing."""
    lib = _lib.library()
    n = _int_option("num_shards", num_shards, 1, 1 << 30)
    total = _int_option("lines", lines, 0)
    per = _int_option("num_hypotheses", num_hypotheses, 1)
    base = os.fsencode(os.fspath(output_path))
    st = lib.clf_shards_join_file(base, n, total, per, base)
    if st != _lib.CLF_OK:
        raise_status(st)
    if remove:
        st = lib.clf_shards_remove(base, n)
        if st != _lib.CLF_OK:
            raise_status(st)
