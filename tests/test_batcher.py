"""EmbeddingBatcher with a stand-in model: no database, no real model, fast."""

import asyncio
import threading

import numpy as np
import pytest

from pgrecall.worker.batcher import EmbeddingBatcher


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
            self.gate.acquire(timeout=10)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError(f"model broke on {self.fail_on}")
        return np.array([[float(text.removeprefix("t"))] for text in texts], dtype=np.float32)

    async def wait_for_call(self, count: int = 1) -> None:
        for _ in range(count):
            assert await asyncio.to_thread(self.entered.acquire, timeout=10), "the model was never called"


def _texts(start: int, stop: int) -> list[str]:
    return [f"t{n}" for n in range(start, stop)]


def _values(vectors) -> list[float]:
    return [float(v) for v in np.asarray(vectors)[:, 0]]


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, timeout=20))


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
