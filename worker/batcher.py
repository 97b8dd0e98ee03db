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


@dataclasses.dataclass
class _Request:
    texts: Sequence[str]
    future: asyncio.Future


class EmbeddingBatcher:
    def __init__(self, embed_batch: EmbedFunction, max_texts: int = 256, linger_seconds: float = 0.05):
        self._embed_batch = embed_batch
        self._max_texts = max_texts
        self._linger_seconds = linger_seconds
        self._queue: asyncio.Queue[_Request] = asyncio.Queue()
        # One thread: the model is CPU-bound and already uses every core.
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self._task: asyncio.Task | None = None
        self.calls = 0
        self.texts_embedded = 0
        self.busy_seconds = 0.0

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="embedding-batcher")
        if len(texts) <= self._max_texts:
            return await self._request(texts)
        parts = [
            await self._request(texts[start : start + self._max_texts])
            for start in range(0, len(texts), self._max_texts)
        ]
        return np.concatenate(parts)

    async def _request(self, texts: Sequence[str]) -> np.ndarray:
        future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Request(texts, future))
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
            started = loop.time()
            try:
                vectors = await loop.run_in_executor(self._executor, self._embed_batch, texts)
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

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._executor.shutdown(wait=False)
