"""EmbeddingBatcher with a stand-in model: no database, no real model, fast."""

import asyncio
import threading

import numpy as np
import pytest

from pgrecall.worker.batcher import EmbeddingBatcher, length_groups


class FakeModel:
    """Each text "t<n>" embeds as [n]; every call is recorded. `gate`, when set,
    holds each call until the test releases it (the model is busy)."""

    def __init__(self, fail_on: str | None = None, gated: bool = False):
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self.gate = threading.Semaphore(0) if gated else None
        self.entered = threading.Semaphore(0)

    def __call__(self, texts):
        self.calls.append(list(texts))
        self.entered.release()
        if self.gate is not None:
            self.gate.acquire(timeout=60)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError(f"model broke on {self.fail_on}")
        return np.array([[float(text.removeprefix("t"))] for text in texts], dtype=np.float32)

    async def wait_for_call(self, count: int = 1) -> None:
        for _ in range(count):
            assert await asyncio.to_thread(self.entered.acquire, timeout=60), "the model was never called"


def _texts(start: int, stop: int) -> list[str]:
    return [f"t{n}" for n in range(start, stop)]


def _values(vectors) -> list[float]:
    return [float(v) for v in np.asarray(vectors)[:, 0]]


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, timeout=120))  # a hang guard


def test_requests_arriving_together_share_one_model_call_and_each_gets_its_own_rows():
    model = FakeModel()

    async def scenario():
        batcher = EmbeddingBatcher(model, max_texts=64, linger_seconds=0.05)
        try:
            return await asyncio.gather(*(batcher.embed(_texts(10 * i, 10 * i + 3)) for i in range(5))), batcher
        finally:
            await batcher.close()

    results, batcher = run(scenario())
    assert len(model.calls) == 1 and len(model.calls[0]) == 15
    assert [_values(r) for r in results] == [[10 * i, 10 * i + 1, 10 * i + 2] for i in range(5)]
    assert (batcher.calls, batcher.texts_embedded) == (1, 15)


def test_a_large_request_goes_in_slices_and_comes_back_whole_in_order():
    model = FakeModel()

    async def scenario():
        batcher = EmbeddingBatcher(model, max_texts=4, linger_seconds=0)
        try:
            return await batcher.embed(_texts(0, 10))
        finally:
            await batcher.close()

    vectors = run(scenario())
    assert [len(call) for call in model.calls] == [4, 4, 2]
    assert _values(vectors) == list(range(10))


def test_a_small_request_does_not_wait_for_a_large_one_to_finish():
    model = FakeModel(gated=True)

    async def scenario():
        batcher = EmbeddingBatcher(model, max_texts=4, linger_seconds=0)
        finished: list[str] = []

        async def job(name, texts):
            result = await batcher.embed(texts)
            finished.append(name)
            return result

        try:
            large = asyncio.create_task(job("large", _texts(0, 12)))
            await model.wait_for_call()  # the first slice is in the model
            small = asyncio.create_task(job("small", ["t100"]))
            await asyncio.sleep(0.05)  # queued behind the slice in progress
            for _ in range(4):
                model.gate.release()
            large_vectors, small_vectors = await asyncio.gather(large, small)
            return finished, large_vectors, small_vectors
        finally:
            await batcher.close()

    finished, large_vectors, small_vectors = run(scenario())
    assert finished == ["small", "large"]
    assert "t100" in model.calls[1]  # right after the first slice, before the large request's others
    assert _values(large_vectors) == list(range(12))
    assert _values(small_vectors) == [100]


def test_a_model_error_reaches_every_request_of_the_batch_and_the_next_batch_still_runs():
    model = FakeModel(fail_on="t1")

    async def scenario():
        batcher = EmbeddingBatcher(model, max_texts=64, linger_seconds=0.05)
        try:
            outcomes = await asyncio.gather(
                batcher.embed(["t0"]), batcher.embed(["t1"]), batcher.embed(["t2"]), return_exceptions=True
            )
            after = await batcher.embed(["t3"])
            return outcomes, after, batcher
        finally:
            await batcher.close()

    outcomes, after, batcher = run(scenario())
    assert len(model.calls[0]) == 3
    assert all(isinstance(o, RuntimeError) and str(o) == "model broke on t1" for o in outcomes)
    assert _values(after) == [3]
    assert (batcher.calls, batcher.texts_embedded) == (1, 1)  # the failed call is not counted


def test_a_request_cancelled_while_waiting_is_not_embedded():
    model = FakeModel(gated=True)

    async def scenario():
        batcher = EmbeddingBatcher(model, max_texts=64, linger_seconds=0)
        try:
            first = asyncio.create_task(batcher.embed(["t0"]))
            await model.wait_for_call()
            cancelled = asyncio.create_task(batcher.embed(["t1"]))
            kept = asyncio.create_task(batcher.embed(["t2"]))
            await asyncio.sleep(0.05)
            cancelled.cancel()
            model.gate.release()
            model.gate.release()
            return await first, await kept
        finally:
            await batcher.close()

    first, kept = run(scenario())
    assert model.calls == [["t0"], ["t2"]]
    assert (_values(first), _values(kept)) == ([0], [2])


def test_nothing_to_embed_never_starts_the_model_and_close_stops_the_batcher():
    model = FakeModel()

    async def scenario():
        batcher = EmbeddingBatcher(model)
        empty = await batcher.embed([])
        started_by_empty = batcher._task is not None
        await batcher.embed(["t1"])
        task = batcher._task
        await batcher.close()
        await batcher.close()  # twice is harmless
        return empty, started_by_empty, task, batcher

    empty, started_by_empty, task, batcher = run(scenario())
    assert empty.shape == (0, 0) and not started_by_empty
    assert task.cancelled() and batcher._task is None
    assert model.calls == [["t1"]]


def test_after_close_a_request_fails_instead_of_waiting_forever():
    model = FakeModel()

    async def scenario():
        batcher = EmbeddingBatcher(model)
        await batcher.embed(["t1"])
        await batcher.close()
        return await batcher.embed(["t2"])

    with pytest.raises(RuntimeError, match="shutdown"):
        run(scenario())
    assert model.calls == [["t1"]]


@pytest.mark.parametrize(
    ("lengths", "max_count", "expected"),
    [
        ([], 4, []),
        ([5], 4, [[0]]),
        # longest first; a group closes at max_count
        ([1, 9, 5, 7, 3], 2, [[1, 3], [2, 4], [0]]),
        # a group closes when the next is much shorter, once it holds min_count (2 here)
        ([100, 100, 40, 40, 95], 64, [[0, 1, 4], [2, 3]]),
        # never below min_count: a single long text does not make a batch of its own
        ([100, 40, 40, 40], 64, [[0, 1], [2, 3]]),
    ],
)
def test_length_groups_puts_texts_of_similar_length_together(lengths, max_count, expected):
    assert length_groups(lengths, max_count, min_count=2, shortest=0.9) == expected


def test_length_groups_uses_every_index_once_and_respects_the_bounds():
    lengths = [(n * 37) % 101 + 1 for n in range(500)]
    groups = length_groups(lengths, 64)
    assert sorted(i for group in groups for i in group) == list(range(500))
    assert all(len(group) <= 64 for group in groups)
    # far less padding than batches of 64 in arrival order: each padded to its longest
    padded = sum(max(lengths[i] for i in group) * len(group) for group in groups)
    arrival = sum(max(lengths[s : s + 64]) * len(lengths[s : s + 64]) for s in range(0, 500, 64))
    assert padded < 1.1 * sum(lengths) < arrival


def test_a_call_goes_to_the_model_in_groups_of_similar_length_and_comes_back_in_order():
    model = FakeModel()
    long_texts, short_texts = _texts(1000, 1008), _texts(1, 9)  # 5 and 2 characters

    async def scenario():
        batcher = EmbeddingBatcher(model, max_texts=64, linger_seconds=0.05, model_batch_size=8)
        try:
            mixed = [batcher.embed([long, short]) for long, short in zip(long_texts, short_texts, strict=True)]
            return await asyncio.gather(*mixed), batcher
        finally:
            await batcher.close()

    results, batcher = run(scenario())
    assert batcher.calls == 1  # one call of the batcher, in two model batches
    assert [_values(r) for r in results] == [[1000 + n, 1 + n] for n in range(8)]
    assert sorted(map(sorted, model.calls)) == [sorted(short_texts), sorted(long_texts)]


def test_word_pieces_given_by_every_request_decide_the_groups_not_characters():
    model = FakeModel()
    texts = _texts(1000, 1008) + _texts(1, 9)
    pieces = [10] * 8 + [100] * 8  # the short texts hold the most word pieces

    async def scenario():
        batcher = EmbeddingBatcher(model, max_texts=64, linger_seconds=0, model_batch_size=8)
        try:
            return await batcher.embed(texts, lengths=pieces)
        finally:
            await batcher.close()

    assert _values(run(scenario())) == [float(t[1:]) for t in texts]
    assert model.calls == [_texts(1, 9), _texts(1000, 1008)]  # the longest by word pieces first


def test_a_big_request_is_embedded_in_slices_that_let_other_jobs_through():
    calls: list[list[str]] = []
    first_slice, small_waiting = threading.Event(), threading.Event()

    def embed(texts):
        calls.append(list(texts))
        first_slice.set()
        small_waiting.wait(60)  # the first slice lasts until another request has arrived (a hang guard)
        return np.ones((len(texts), 4), dtype=np.float32)

    async def go():
        batcher = EmbeddingBatcher(embed, max_texts=10, linger_seconds=0.01)
        try:
            big = asyncio.create_task(batcher.embed([f"big {i}" for i in range(95)]))
            assert await asyncio.to_thread(first_slice.wait, 60)
            small_task = asyncio.create_task(batcher.embed(["small"]))
            await asyncio.sleep(0)  # small's request is queued
            small_waiting.set()
            small = await small_task
            assert not big.done()  # the small job did not wait for the whole big note
            vectors = await big
        finally:
            await batcher.close()
        return vectors, small

    vectors, small = asyncio.run(go())
    assert vectors.shape == (95, 4) and small.shape == (1, 4)
    assert max(len(call) for call in calls) <= 10 + 1
    assert [t for call in calls for t in call if t.startswith("big")] == [f"big {i}" for i in range(95)]


def test_embed_at_once_does_not_linger_and_runs_on_the_model_thread():
    """A lone caller (remember's near-duplicate check) gets its vectors without the linger
    that lets a burst of jobs meet: with an hour's linger, `embed` would not return in the guard's time."""
    threads: list[str] = []
    model = FakeModel()

    def recording(texts):
        threads.append(threading.current_thread().name)
        return model(texts)

    async def scenario():
        batcher = EmbeddingBatcher(recording, linger_seconds=3600)
        try:
            return await batcher.embed_at_once(["t7", "t8"]), batcher
        finally:
            await batcher.close()

    vectors, batcher = run(scenario())
    assert _values(vectors) == [7.0, 8.0] and model.calls == [["t7", "t8"]]
    assert threads[0].startswith("embed") and (batcher.calls, batcher.texts_embedded) == (1, 2)
