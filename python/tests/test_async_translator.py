"""AsyncTranslator, the library's translation queue behind futures: the
synchronous Translator's translations, from many threads and from
asyncio; the queue's refusals as the futures' exceptions with its
message; closing with sentences pending, which must not hang. Every wait
is bounded, so that a bug fails instead of hanging."""

import asyncio
import concurrent.futures
import gc
import threading

import pytest

import clformer

WAIT = 120  # seconds: the longest any one wait here may take


def firsts(results):
    return [r.hypotheses[0] for r in results]


def results(futures):
    return [f.result(timeout=WAIT) for f in futures]


def within(fn, seconds=WAIT):
    """Runs fn in a thread; fails if it has not returned after `seconds`."""
    out, errors = [], []

    def run():
        try:
            out.append(fn())
        except BaseException as e:  # reported below
            errors.append(e)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout=seconds)
    assert not th.is_alive(), "%s still running after %d s" % (getattr(fn, "__name__", fn), seconds)
    if errors:
        raise errors[0]
    return out[0]


@pytest.fixture(scope="module")
def queued(model):
    with clformer.AsyncTranslator(model) as t:
        yield t


def test_futures_are_the_translators(queued, translator, source):
    futures = queued.translate_batch(source)
    assert all(isinstance(f, concurrent.futures.Future) for f in futures)
    got = results(futures)
    assert firsts(got) == firsts(translator.translate_batch(source))
    assert all(r.scores == [] and len(r) == 1 for r in got)
    assert queued.translate_batch([]) == []


def test_options_are_the_translators(model, translator, source):
    want = translator.translate_batch(source, beam_size=3, length_penalty=0.6, length_penalty_kind="paper",
                                      max_decoding_length=12, min_decoding_length=2, num_hypotheses=3)
    with clformer.AsyncTranslator(model, beam_size=3, length_penalty=0.6, length_penalty_kind="paper",
                                  max_decoding_length=12, min_decoding_length=2, max_batch_size=2) as t:
        assert t.beam_size == 3
        assert firsts(results(t.translate_batch(source))) == firsts(want)
        assert [r.hypotheses for r in results(t.translate_batch(source, num_hypotheses=3))] == \
            [r.hypotheses for r in want]
    with clformer.AsyncTranslator(model, beam_size=1, batch_type="tokens", max_batch_size=40) as t:
        assert firsts(results(t.translate_batch(source))) == firsts(translator.translate_batch(source, beam_size=1))


def test_threads_submit_at_once(queued, translator, source):
    """4 threads, each 5 times the source rotated: 120 sentences in flight
    from several threads, each its synchronous translation."""
    want = firsts(translator.translate_batch(source))
    got, errors = {}, []
    start = threading.Barrier(4, timeout=WAIT)

    def work(k):
        try:
            start.wait()
            futures = [(r, queued.translate_batch(source[r:] + source[:r])) for r in range(5)]
            got[k] = [(r, firsts(results(fs))) for r, fs in futures]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=WAIT)
    assert not any(th.is_alive() for th in threads) and not errors, errors
    assert sorted(got) == [0, 1, 2, 3]
    for k in got:
        for r, text in got[k]:
            assert text == want[r:] + want[:r]


def test_asyncio(queued, translator, source):
    want = firsts(translator.translate_batch(source))

    async def main():
        # two coroutines at once, and a single future awaited as asyncio's
        a, b = await asyncio.wait_for(asyncio.gather(queued.translate_async(source),
                                                     queued.translate_async(source[::-1])), WAIT)
        one = await asyncio.wait_for(asyncio.wrap_future(queued.translate_batch(source[:1])[0]), WAIT)
        return a, b, one

    a, b, one = asyncio.run(main())
    assert firsts(a) == want and firsts(b) == want[::-1] and one.hypotheses[0] == want[0]


def test_asyncio_raises_the_queues_error(queued, source):
    async def main():
        return await asyncio.wait_for(queued.translate_async(source, num_hypotheses=queued.beam_size + 1), WAIT)

    with pytest.raises(clformer.InvalidArgumentError, match="alternatives are more than the search keeps"):
        asyncio.run(main())


def test_the_queues_refusals_are_the_futures(model, queued, translator, source):
    # too many hypotheses for the beam: the library's own check and message
    f = queued.translate_batch(source[:1], num_hypotheses=queued.beam_size + 1)[0]
    with pytest.raises(clformer.InvalidArgumentError) as e:
        f.result(timeout=WAIT)
    assert e.value.status == "CLF_QUEUE_INVALID" and isinstance(e.value, ValueError)
    assert "at most %d (beam %d)" % (queued.beam_size - 1, queued.beam_size) in e.value.message
    # a queue of 2 sentences, sent 100 at once: most refused as full, the rest translated
    want = firsts(translator.translate_batch(source))
    with clformer.AsyncTranslator(model, max_queued=2) as t:
        futures = t.translate_batch(source * 17)
        full = 0
        for i, f in enumerate(futures):
            try:
                assert f.result(timeout=WAIT).hypotheses[0] == want[i % len(source)]
            except clformer.QueueFullError as e:
                assert e.status == "CLF_QUEUE_FULL" and "the translation queue is full" in e.message
                full += 1
        assert 0 < full < len(futures)


def test_bad_sources(queued, source):
    with pytest.raises(TypeError, match="wrap one sentence"):
        queued.translate_batch(source[0])
    with pytest.raises(TypeError, match="token lists are Translator's"):
        queued.translate_batch([source[0], [5, 6]])
    with pytest.raises(ValueError, match="NUL"):
        queued.translate_batch(["a\0b"])
    with pytest.raises(ValueError, match="num_hypotheses wants an integer >= 1"):
        queued.translate_batch(source, num_hypotheses=0)
    with pytest.raises(ValueError, match="max_queued wants"):
        clformer.AsyncTranslator("unused.safetensors", max_queued=0)


def test_cancel(queued, translator, source):
    want = firsts(translator.translate_batch(source))
    futures = queued.translate_batch(source * 10)
    cancelled = [f.cancel() for f in futures[::2]]
    for i, f in enumerate(futures):
        if i % 2 and not f.cancelled():
            assert f.result(timeout=WAIT).hypotheses[0] == want[i % len(source)]
    # a cancelled future counts as done for wait() only once the waiter says so
    assert not concurrent.futures.wait(futures, timeout=WAIT).not_done
    assert all(f.cancelled() for f, c in zip(futures[::2], cancelled) if c)


def test_close_finishes_what_was_submitted(model, translator, source):
    want = firsts(translator.translate_batch(source))
    t = clformer.AsyncTranslator(model)
    futures = t.translate_batch(source * 5)
    within(t.close)
    assert all(f.done() for f in futures)
    assert firsts(results(futures)) == want * 5
    with pytest.raises(clformer.InvalidArgumentError, match="AsyncTranslator is closed"):
        t.translate_batch(source)
    t.close()  # twice: nothing


def test_close_at_once(model, translator, source):
    """close(timeout=0): those not started fail with the queue's message,
    the others finish; cancel_pending: all cancelled or finished."""
    want = firsts(translator.translate_batch(source))
    t = clformer.AsyncTranslator(model, max_batch_size=2)
    futures = t.translate_batch(source * 10)
    within(lambda: t.close(timeout=0))
    assert all(f.done() for f in futures)
    closed = 0
    for i, f in enumerate(futures):
        try:
            assert f.result(timeout=0).hypotheses[0] == want[i % len(source)]
        except clformer.QueueClosedError as e:
            assert e.status == "CLF_QUEUE_CLOSED" and e.message
            closed += 1
    assert closed > 0
    t = clformer.AsyncTranslator(model, max_batch_size=2)
    futures = t.translate_batch(source * 10)
    within(lambda: t.close(cancel_pending=True))
    assert not concurrent.futures.wait(futures, timeout=0).not_done and any(f.cancelled() for f in futures)
    for i, f in enumerate(futures):
        if not f.cancelled():
            assert f.result(timeout=0).hypotheses[0] == want[i % len(source)]


def test_dropped_without_close(model, source):
    """The waiter thread keeps no reference to its AsyncTranslator: dropping
    the last one closes it, its pending futures done."""
    def drop():
        t = clformer.AsyncTranslator(model)
        futures = t.translate_batch(source * 4)
        waiter = t._waiter.thread
        del t
        gc.collect()
        waiter.join(timeout=WAIT)
        return waiter, futures

    waiter, futures = within(drop)
    assert not waiter.is_alive() and all(f.done() for f in futures)


def test_a_callback_may_close(model, source):
    t = clformer.AsyncTranslator(model)
    closed = threading.Event()

    def close(_):
        t.close(cancel_pending=True)
        closed.set()

    t.translate_batch(source[:1])[0].add_done_callback(close)
    assert closed.wait(timeout=WAIT)
    with pytest.raises(clformer.InvalidArgumentError, match="closed"):
        t.translate_batch(source)
