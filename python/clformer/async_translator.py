"""clformer.AsyncTranslator: a Translator behind the library's translation
queue (clf_queue_*, include/clformer/serve.h, what `clformer serve` runs):
each sentence submitted is a request of its own, batched continuously with
whatever else is waiting, and answered by a concurrent.futures.Future
(asyncio: translate_async, or asyncio.wrap_future).

Threads: the queue's worker (a C thread) owns the translator and its
context; submitting takes this object's lock for the length of one
clf_queue_submit_with. One Python thread, the waiter, waits on the
requests (clf_queue_wait releases the GIL), reads the finished ones, frees
them and completes their futures: no ctypes callback runs on the worker's
thread. A future's callbacks run on the waiter's thread: they should be
short, and must not wait for another future (asyncio's wrap_future only
schedules). The waiter holds no reference to the AsyncTranslator, so
dropping the last one closes it; it frees the queue, then the translator
and its context, once every request is freed (clf_queue_free's rule)."""

import concurrent.futures
import ctypes
import threading

from . import _lib
from ._owner import Owner
from .errors import Error, InvalidArgumentError, QueueClosedError, QueueFullError, raise_status
from .translator import TranslationResult, Translator, _int_option, _text

# the longest the waiter waits on its oldest request before it looks at the
# others: continuous batching finishes short sentences first, so a
# finished future is completed within about this long
_SLICE_MS = 10
# clf_queue_drain's "no limit"
_FOREVER_S = 1e9


def _queue_error(rc, message):
    """The exception of a queue outcome rc (not CLF_QUEUE_OK)."""
    if rc == _lib.CLF_QUEUE_FULL:
        return QueueFullError("CLF_QUEUE_FULL", message)
    if rc == _lib.CLF_QUEUE_CLOSED:
        return QueueClosedError("CLF_QUEUE_CLOSED", message)
    if rc == _lib.CLF_QUEUE_INVALID:
        return InvalidArgumentError("CLF_QUEUE_INVALID", message)
    return Error("CLF_QUEUE_FAILED" if rc == _lib.CLF_QUEUE_FAILED else "CLF_QUEUE_%d" % rc, message)


class _Request:
    __slots__ = ("req", "future", "alternatives")

    def __init__(self, req, future, alternatives):
        self.req, self.future, self.alternatives = req, future, alternatives


class _Waiter:
    """The requests in flight and the thread that completes them."""

    def __init__(self, lib, q, t, ctx, translators):
        self.lib = lib
        self.handles = (q, t, ctx)  # freed by this thread as it ends
        self.translators = translators  # clf_queue_init's array, which the queue keeps reading
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.pending = []  # _Request, oldest first
        self.stopping = False
        self.thread = threading.Thread(target=self.run, name="clformer-async-waiter", daemon=True)
        self.thread.start()

    def add(self, r):  # with self.lock held
        self.pending.append(r)
        self.wake.notify()

    def run(self):
        try:
            self.serve()
        finally:  # every request is freed: the queue, then what it ran on
            q, t, ctx = self.handles
            self.lib.clf_queue_free(q)
            self.lib.clf_translator_free(t)
            self.lib.clf_ctx_free(ctx)

    def serve(self):
        lib = self.lib
        while True:
            with self.lock:
                while not self.pending and not self.stopping:
                    self.wake.wait()
                if not self.pending:
                    return
                head, stopping = self.pending[0], self.stopping
            if not stopping:
                lib.clf_queue_wait(head.req, _SLICE_MS)
            with self.lock:
                ready = [r for r in self.pending
                         if r.future.cancelled() or lib.clf_queue_wait(r.req, 0) or self.stopping]
                gone = set(map(id, ready))
                self.pending = [r for r in self.pending if id(r) not in gone]
            for r in ready:
                self.finish(r)

    def finish(self, r):
        """Reads r's outcome into its future and frees it. A request
        still running here is one the close's drain did not wait for:
        freeing it throws its sentence away when it finishes."""
        lib = self.lib
        # an executor's duty: a cancelled future is counted done (concurrent.futures.wait, as_completed) once
        # this says so; one not cancelled is running from here, which cancel() cannot take back
        if not r.future.set_running_or_notify_cancel():
            lib.clf_queue_req_free(r.req)
            return
        result = error = None
        if not lib.clf_queue_wait(r.req, 0):
            error = QueueClosedError("CLF_QUEUE_CLOSED", "the AsyncTranslator was closed before the sentence "
                                                         "finished (close's timeout)")
        else:
            rc = lib.clf_queue_req_result(r.req)
            if rc == _lib.CLF_QUEUE_OK:
                hyps = [_lib.text(lib.clf_queue_req_output(r.req, 0))]
                hyps += [_lib.text(lib.clf_queue_req_alternative(r.req, 0, j)) for j in range(r.alternatives)]
                result = TranslationResult(hyps, [])
            else:
                error = _queue_error(rc, _lib.text(lib.clf_queue_req_message(r.req)))
        lib.clf_queue_req_free(r.req)
        if error is not None:
            r.future.set_exception(error)
        else:
            r.future.set_result(result)

    def stop(self):
        """Completes what is left (the queue has drained), frees the queue
        and the translator, and ends the thread; waits for that unless
        called on the thread itself (a future's callback that closes), which
        does it once the callback returns."""
        with self.lock:
            self.stopping = True
            self.wake.notify()
        if threading.current_thread() is not self.thread:
            self.thread.join()


class AsyncTranslator(Owner):
    """A checkpoint on a device behind the library's translation queue:
    translate_batch submits each sentence and returns at once with one
    concurrent.futures.Future per sentence, whose result() is the
    TranslationResult translate_batch of a Translator gives (hypotheses;
    no scores, which the queue does not keep). Sentences from any number of
    calls and threads decode together as they arrive (continuous
    batching), each as it would alone: the same translations.

    model_path, device, compute_type, tokenizer: Translator's. The
    generation options (beam_size, length_penalty, length_penalty_kind,
    max_decoding_length, min_decoding_length, max_extra: Translator's
    translate_batch's, None the checkpoint's) are fixed here, for every
    sentence, as a queue's are. max_batch_size and batch_type bound what
    decodes at once ("examples": sentences, "tokens": source tokens).
    max_queued: at most this many sentences wait; past it a sentence's
    future raises QueueFullError (None: no limit).

    A future raises the queue's refusal or failure with the library's
    message: QueueFullError, QueueClosedError (the queue was closing
    before the sentence started), InvalidArgumentError (too many
    num_hypotheses for the beam), Error (translating failed). cancel()
    on a future not yet finished drops its sentence if it has not
    started. close() (or leaving a with block) lets what was submitted
    finish and then frees the device; see close for the options."""

    def __init__(self, model_path, device="auto", compute_type="default", tokenizer=None, beam_size=None,
                 length_penalty=None, length_penalty_kind=None, max_decoding_length=None, min_decoding_length=None,
                 max_extra=None, max_batch_size=32, batch_type="examples", max_queued=None):
        self._t = None
        self._lib = lib = _lib.library()
        self._lock = threading.Lock()
        max_queued = 0 if max_queued is None else _int_option("max_queued", max_queued, 1)
        translator = Translator(model_path, device=device, compute_type=compute_type, tokenizer=tokenizer)
        try:
            o = translator._opts(beam_size, 1, length_penalty, length_penalty_kind, max_decoding_length,
                                 min_decoding_length, max_extra)
            b = translator._batching(max_batch_size, batch_type)
            qo = _lib.QueueOpts(max_batch_tokens=b.tokens if batch_type == "tokens" else 0,
                                max_batch_sentences=b.sentences if batch_type == "examples" else 0,
                                batch_wait_ms=0, max_queued=max_queued, continuous=True)
            q = ctypes.c_void_p()
            handles = (ctypes.c_void_p * 1)(translator._t)
            with translator._lock:
                st = lib.clf_queue_init(handles, 1, ctypes.byref(o), ctypes.byref(qo), ctypes.byref(q))
            if st != _lib.CLF_OK:
                raise_status(st)
        except BaseException:
            translator.close()
            raise
        # from here only the queue's worker calls the library on the translator, and the waiter frees it
        # after the queue: the Translator object lets go of its handles, so that no finalizer of its own
        # (garbage collection takes a cycle's objects in any order) frees them under the queue
        with translator._lock:
            t, ctx = translator._t, translator._ctx
            translator._t, translator._ctx = ctypes.c_void_p(), ctypes.c_void_p()
        self.model_path, self.device, self.compute_type = translator.model_path, translator.device, \
            translator.compute_type
        self.max_source_length = translator.max_source_length
        self.beam_size = 1 if o.greedy else o.beam
        self._t = q
        # the queue reads the translators through the array it was given (w->t in host/translate/queue.c),
        # not a copy: it lives as long as the queue, with the waiter
        self._waiter = _Waiter(lib, q, t, ctx, handles)

    def translate_batch(self, source, num_hypotheses=1):
        """Submits each str of the list `source` to the queue; returns one
        Future per source, in order, each giving a TranslationResult with
        num_hypotheses hypotheses (at most the beam: more makes the futures
        raise the queue's InvalidArgumentError). Text only: token lists
        are Translator's. A source that is not a str raises here, before
        any is submitted."""
        if isinstance(source, (str, bytes)):
            raise TypeError("source is a list of sources: wrap one sentence in a list")
        source = list(source)
        k = _int_option("num_hypotheses", num_hypotheses, 1)
        texts = []
        for i, s in enumerate(source):
            if not isinstance(s, str):
                raise TypeError("source[%d]: AsyncTranslator takes text (str), not %s: token lists are "
                                "Translator's" % (i, type(s).__name__))
            texts.append(_text(s, "source[%d]" % i))
        so = _lib.QueueSubmitOpts(client=0, alternatives=k - 1)
        futures = []
        with self._lock:
            self._live()
            lib, w = self._lib, self._waiter
            for text in texts:
                f = concurrent.futures.Future()
                req = ctypes.c_void_p()
                src = (ctypes.c_char_p * 1)(text)
                rc = lib.clf_queue_submit_with(self._t, 0, src, 1, ctypes.byref(so), ctypes.byref(req))
                if rc == _lib.CLF_QUEUE_OK:
                    with w.lock:
                        w.add(_Request(req, f, k - 1))
                else:  # the message is this thread's, from the call just made
                    f.set_exception(_queue_error(rc, _lib.text(lib.clf_ctx_error(None))))
                futures.append(f)
        return futures

    async def translate_async(self, source, num_hypotheses=1):
        """translate_batch awaited from asyncio: the TranslationResults, in
        order; the first failure raises. Cancelling the awaiting task
        cancels the sentences not yet finished."""
        import asyncio
        futures = [asyncio.wrap_future(f) for f in self.translate_batch(source, num_hypotheses)]
        return list(await asyncio.gather(*futures))

    def close(self, cancel_pending=False, timeout=None):
        """Stops taking sentences, then: cancel_pending False lets those
        submitted finish, waiting at most `timeout` seconds (None: until
        they have); cancel_pending True cancels the futures of those not
        finished. Sentences the timeout leaves unstarted raise the queue's
        QueueClosedError, those it leaves running a QueueClosedError too
        (their translations are thrown away); freeing the device then waits
        for the call under way. Every future is done when close returns.
        Calling it twice does nothing."""
        with self._lock:
            q, self._t = self._t, None
        if not q:
            return
        w = self._waiter
        if cancel_pending:
            with w.lock:
                for r in w.pending:
                    r.future.cancel()
        seconds = 0 if cancel_pending else _FOREVER_S if timeout is None else max(float(timeout), 0.0)
        self._lib.clf_queue_drain(q, seconds)
        w.stop()

    def __del__(self):
        if getattr(self, "_t", None):
            self.close(cancel_pending=True)
