"""The progress bar of `pgrecall index` and `pgrecall reembed`: files, chunks, chunks/s, ETA."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from pgrecall.worker.pipeline import Outcome


class _Bar:
    def __init__(self, progress: Progress, task_id, total: int):
        self.progress = progress
        self.task_id = task_id
        self.total = total
        self.done = 0
        self.chunks = 0
        self.started = time.perf_counter()

    def advance(self, outcome: Outcome) -> None:
        self.done += 1
        self.chunks += outcome.chunks
        elapsed = max(time.perf_counter() - self.started, 1e-6)
        self.progress.update(
            self.task_id,
            advance=1,
            total=max(self.total, self.done),
            chunks=self.chunks,
            rate=self.chunks / elapsed,
        )


@contextlib.contextmanager
def progress_bar(total: int) -> Iterator[_Bar]:
    progress = Progress(
        TextColumn("[bold]indexing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files · {task.fields[chunks]} chunks · {task.fields[rate]:.0f} chunks/s · ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    with progress:
        task_id = progress.add_task("index", total=total, chunks=0, rate=0.0)
        yield _Bar(progress, task_id, total)
