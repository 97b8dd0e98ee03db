"""Embed the chunks of many concurrent jobs together.

Each job (one file) awaits `embed(texts)`; requests that arrive while the model
is busy, or within a few milliseconds of each other after an idle spell, are
encoded in one call, so a folder of small notes is not embedded one note at a
time. A large request (a big note's thousands of chunks) goes to the model in
slices of at most `max_texts`, one after the other: requests of other jobs that
arrive meanwhile join or precede the next slice instead of waiting for the whole
note, and a job cancelled at shutdown stops after the slice in progress.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

EmbedFunction = Callable[[Sequence[str]], np.ndarray]


def length_groups(lengths: Sequence[int], max_count: int, min_count: int = 8, shortest: float = 0.9) -> list[list[int]]:
    """Indices of `lengths`, longest first, in groups of at most `max_count`: a group
    closes when the next is shorter than `shortest` times the group's longest (once it
    holds `min_count`: tiny batches waste more than padding does). Every index once."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    for index in order:
        group = groups[-1] if groups else None
        if (
            group is None
            or len(group) >= max_count
            or (len(group) >= min_count and lengths[index] < shortest * lengths[group[0]])
        ):
            groups.append([index])
        else:
            group.append(index)
    return groups


@dataclasses.dataclass
class _Request:
    texts: Sequence[str]
    lengths: Sequence[int] | None  # word pieces per text, when the caller knows them
    future: asyncio.Future


class EmbeddingBatcher:
    def __init__(
        self,
        embed_batch: EmbedFunction,
        max_texts: int = 256,
        linger_seconds: float = 0.05,
        model_batch_size: int | None = None,
    ):
        """`model_batch_size`: the texts of a call go to `embed_batch` in groups of
        similar length and at most this many (None: the whole call at once)."""
        self._embed_batch = embed_batch
        self._model_batch_size = model_batch_size
        self._max_texts = max_texts
        self._linger_seconds = linger_seconds
        self._queue: asyncio.Queue[_Request] = asyncio.Queue()
        # One thread: the model is CPU-bound and already uses every core.
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self._task: asyncio.Task | None = None
        self.calls = 0
        self.texts_embedded = 0
        self.busy_seconds = 0.0

    async def embed(self, texts: Sequence[str], lengths: Sequence[int] | None = None) -> np.ndarray:
        """Vectors of `texts`; `lengths` (word pieces per text) groups them better than characters."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="embedding-batcher")
        if len(texts) <= self._max_texts:
            return await self._request(texts, lengths)
        parts = [
            await self._request(
                texts[start : start + self._max_texts],
                lengths[start : start + self._max_texts] if lengths is not None else None,
            )
            for start in range(0, len(texts), self._max_texts)
        ]
        return np.concatenate(parts)

    async def embed_at_once(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of a few texts, on the model's thread, without lingering for others to join: for a
        caller that waits on them alone (remember's near-duplicate check, pgrecall.worker.memory.writer)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        vectors = await loop.run_in_executor(self._executor, self._embed_batch, list(texts))
        self.calls += 1
        self.texts_embedded += len(texts)
        self.busy_seconds += loop.time() - started
        return vectors

    async def _request(self, texts: Sequence[str], lengths: Sequence[int] | None) -> np.ndarray:
        future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Request(texts, lengths, future))
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            # Requests that piled up while the model was busy go at once; after an
            # idle spell, linger briefly so that a burst of jobs meets in one call.
            idle = self._queue.empty()
            batch = [await self._queue.get()]
            count = len(batch[0].texts)
            deadline = loop.time() + (self._linger_seconds if idle else 0.0)
            while count < self._max_texts:
                timeout = deadline - loop.time()
                try:
                    request = (
                        self._queue.get_nowait() if timeout <= 0 else await asyncio.wait_for(self._queue.get(), timeout)
                    )
                except (asyncio.QueueEmpty, TimeoutError):
                    break
                batch.append(request)
                count += len(request.texts)
            batch = [request for request in batch if not request.future.done()]  # cancelled while waiting
            if not batch:
                continue
            texts = [text for request in batch for text in request.texts]
            # Word pieces when every request gave them; otherwise characters, for all alike.
            known = all(request.lengths is not None for request in batch)
            lengths = [n for r in batch for n in (r.lengths if known else map(len, r.texts))]  # type: ignore[arg-type]
            started = loop.time()
            try:
                vectors = await loop.run_in_executor(self._executor, self._embed_grouped, texts, lengths)
            except Exception as exc:  # handed to every waiting job, which decides what it means
                for request in batch:
                    if not request.future.done():
                        request.future.set_exception(exc)
                continue
            self.calls += 1
            self.texts_embedded += len(texts)
            self.busy_seconds += loop.time() - started
            offset = 0
            for request in batch:
                if not request.future.done():
                    request.future.set_result(vectors[offset : offset + len(request.texts)])
                offset += len(request.texts)

    def _embed_grouped(self, texts: list[str], lengths: list[int]) -> np.ndarray:
        if self._model_batch_size is None:
            return self._embed_batch(texts)
        groups = length_groups(lengths, self._model_batch_size)
        if len(groups) == 1:
            return self._embed_batch(texts)
        parts = [self._embed_batch([texts[i] for i in group]) for group in groups]
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=parts[0].dtype)
        for group, part in zip(groups, parts, strict=True):
            vectors[group] = part
        return vectors

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._executor.shutdown(wait=False)
