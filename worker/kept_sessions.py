"""A Claude Code session kept the moment it ends: the SessionEnd and PreCompact hooks.

Claude Code names the session's transcript in the hook's JSON (`transcript_path`). The hook
1. copies it into the archive of the archive root that holds it (worker/archive.py, as indexing
   does), before anything else: from then on the session survives Claude Code's cleanup;
2. has it indexed through the queue: where a worker is alive (serve, or `pgrecall worker`), one
   index job is enqueued and that worker runs it within seconds; where none is (or the embedded
   database is not running), a `pgrecall index TRANSCRIPT` of its own is started, detached, which
   enqueues the same job and works the queue until it is done (model load included), long after
   Claude Code has moved on.
If the database cannot be reached, nothing is lost: the copy is on disk and the transcript is a
file of a configured root, so the next reconciliation (serve's start, `pgrecall index`, every
PGRECALL_RECONCILE_SECONDS) indexes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import procrastinate
import psycopg

from pgrecall import roots
from pgrecall.errors import DatabaseUnavailable, InvalidInput, first_line
from pgrecall.postgres import database, queries
from pgrecall.settings import Settings
from pgrecall.worker import archive, store, tasks

# `pgrecall hook <subcommand>` -> the hook_event_name of its JSON.
EVENTS = {"session-end": "SessionEnd", "pre-compact": "PreCompact"}
INDEX_LOG = "kept-sessions.log"  # under PGRECALL_HOME: what the detached `pgrecall index` said
NOT_KEPT_HINT = "pgrecall sources add claude-code"


@dataclasses.dataclass(frozen=True)
class Kept:
    root: roots.Root
    relative: str  # the transcript's path inside the root, as its documents name it
    transcript: Path
    copy: Path


def archive_root(configured: list[roots.Root], transcript: Path) -> roots.Root | None:
    """The innermost archive root of `configured` that holds `transcript`, if one does."""
    holding = roots.containing([root.path for root in configured if root.archive], transcript)
    return next((root for root in configured if root.archive and root.path == holding), None)


def keep(settings: Settings, transcript_path: str | None, event: str) -> Kept:
    """Copy the transcript into its root's archive; InvalidInput (one line) when it cannot be kept."""
    if not transcript_path:
        raise InvalidInput(f"the {event} JSON has no transcript_path")
    transcript = Path(transcript_path).expanduser().absolute()
    configured = roots.resolve([], settings.config_file, required=False)
    root = archive_root(configured, transcript.resolve())
    if root is None:
        raise InvalidInput(f"not kept: {transcript} is in no archive source ({NOT_KEPT_HINT})")
    relative = transcript.resolve().relative_to(root.path).as_posix()
    try:
        data = transcript.read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"not kept: no transcript at {transcript}") from None
    folder = roots.archive_folder(settings.home, root)
    assert folder is not None  # an archive root
    copy = archive.keep(folder, relative, data)
    if copy is None:
        raise InvalidInput(f"not kept: {relative} would leave the archive folder")
    return Kept(root, relative, transcript, copy)


async def enqueue(url: str, settings: Settings, kept: Kept) -> bool:
    """Enqueue the transcript's index job if a worker is alive to run it; False (nothing
    enqueued) when none is."""
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(f"cannot connect to the database: {first_line(exc)}") from exc
    async with conn:
        cursor = await conn.execute(
            queries.load("kept_sessions.sql")["live_worker"], {"stalled_seconds": settings.stalled_seconds}
        )
        row = await cursor.fetchone()
        if not (row and row[0]):
            return False
        folder = roots.archive_folder(settings.home, kept.root)
        await store.upsert_root(conn, kept.root.name, str(kept.root.path), str(folder), kept.root.project)
    app = tasks.build_app(url, max_connections=1)
    async with app.open_async():
        await tasks.enqueue(app, tasks.INDEX_TASK, str(kept.root.path), [kept.relative])
    return True


def start_indexer(settings: Settings, kept: Kept) -> None:
    """`pgrecall index --json TRANSCRIPT`, detached (a session of its own: Claude Code's exit does not
    end it), its output appended to PGRECALL_HOME/kept-sessions.log."""
    from pgrecall.claude_integration.claude_setup import launcher

    settings.home.mkdir(parents=True, exist_ok=True)
    with open(settings.home / INDEX_LOG, "ab") as log:
        subprocess.Popen(
            [*launcher(sys.argv[0], sys.executable), "index", "--json", str(kept.transcript)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env=os.environ.copy(),
        )


def keep_and_index(settings: Settings, transcript_path: str | None, event: str, seconds_left: float) -> None:
    """The hook's work: keep the transcript, then have it indexed (module docstring). Raises
    DatabaseUnavailable (after the copy) when the database cannot be reached."""
    kept = keep(settings, transcript_path, event)
    url = settings.database_url or database.running_embedded_url(settings)
    if url is None:  # the embedded server is not running: the indexer starts it
        start_indexer(settings, kept)
        return
    try:
        enqueued = asyncio.run(asyncio.wait_for(enqueue(url, settings, kept), timeout=max(0.1, seconds_left)))
    except TimeoutError:
        raise DatabaseUnavailable("kept in the archive, indexed later: the database did not answer in time") from None
    except (psycopg.Error, procrastinate.exceptions.ConnectorException) as exc:
        raise DatabaseUnavailable(f"kept in the archive, indexed later: {first_line(exc)}") from exc
    except DatabaseUnavailable as exc:
        raise DatabaseUnavailable(f"kept in the archive, indexed later: {exc}") from exc
    if not enqueued:
        start_indexer(settings, kept)
