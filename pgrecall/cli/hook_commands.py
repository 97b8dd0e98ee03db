"""`pgrecall hook prompt` and `pgrecall hook session-start`: Claude Code hooks that add what pgrecall knows.

Claude Code pipes the event's JSON to the command and adds its stdout (exit 0) to the
assistant's context. Neither hook ever fails the user's prompt: any error prints nothing on
stdout, one line on stderr, and exits 0, and both end within PGRECALL_HOOK_DEADLINE seconds
of the process's start whatever happens (the work runs in a daemon thread; when it is late,
the process leaves at once with os._exit).

The hooks reach the index through two seams, `search_passages` and `recent_documents`, so a
faster path (a running server) or a project-aware listing can take their place.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

from pgrecall.claude_integration import hooks, injection_ledger
from pgrecall.cli.common import command
from pgrecall.settings import Settings

PROMPT_K = 8  # hybrid hits looked at; those under the threshold are dropped
RECENT_LIMIT = 10  # of each kind, before the budget cuts the list


def add_parser(commands: argparse._SubParsersAction) -> None:
    hook = command(
        commands,
        "hook",
        run,
        help="Claude Code hooks: prompt (UserPromptSubmit), session-start (SessionStart), "
        "session-end (SessionEnd), pre-compact (PreCompact)",
        description="Read a Claude Code hook's JSON on stdin and print what the assistant should see:\n"
        "  prompt          the passages relevant to the prompt (PGRECALL_HOOK_MIN_SCORE), within\n"
        "                  PGRECALL_HOOK_PROMPT_TOKENS; nothing when none is\n"
        "  session-start   the recent memories and Claude Code sessions of the hook's cwd, within\n"
        "                  PGRECALL_HOOK_SESSION_TOKENS; nothing when there are none\n"
        "  session-end     the session's transcript (transcript_path) copied into the archive of the\n"
        "  pre-compact     archive source that holds it, then indexed through the queue (serve's\n"
        "                  worker, else a pgrecall index of its own, detached); prints nothing\n"
        "Always exits 0 within PGRECALL_HOOK_DEADLINE seconds; an error is one line on stderr.",
        epilog='example: echo \'{"hook_event_name": "UserPromptSubmit", "cwd": "/src/app", '
        '"prompt": "why no Redis?"}\' | pgrecall hook prompt',
    )
    hook.add_argument("event", choices=("prompt", "session-start", "session-end", "pre-compact"))
    # Logging (structlog, rich: a third of a second) is set up only where the hook answers in-process.
    hook.set_defaults(lazy_logging=True)


# --- the seams ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _RecentRow:
    """A recent memory or session (query recent)."""

    document_id: int
    kind: str
    source_root: str
    path: str
    title: str | None
    metadata: dict[str, Any]
    mtime: datetime.datetime | None
    text: str


class Recall:
    """The hooks' reads, in this process: the hybrid search and the index's own queries (hooks.sql)."""

    def __init__(self, searcher: Any):
        self.searcher = searcher

    @classmethod
    def over(cls, url: str, settings: Settings, embedder: Any = None, pool_size: int = 1) -> Recall:
        from pgrecall.api.searcher import Searcher
        from pgrecall.embedders.embedding import embedder_for

        return cls(Searcher(url, settings, embedder=embedder or embedder_for(settings), pool_size=pool_size))

    @classmethod
    def open(cls, settings: Settings, model: bool = True) -> Recall:
        """Over the search database; with `model`, the model loads in a thread of its own
        meanwhile, since neither waits for the other and a hook pays for both on every prompt."""
        from pgrecall.api.searcher import search_url
        from pgrecall.embedders.embedding import embedder_for

        embedder = embedder_for(settings)
        if not model:  # loaded on a first embedding, which listing recent documents never asks for
            return cls.over(search_url(settings), settings, embedder=embedder)
        failed: list[BaseException] = []

        def load() -> None:
            try:
                embedder.load()
            except BaseException as exc:  # noqa: BLE001 (raised again below, in the caller's thread)
                failed.append(exc)

        loading = threading.Thread(target=load, name="pgrecall-hook-model", daemon=True)
        loading.start()
        recall = cls.over(search_url(settings), settings, embedder=embedder)
        loading.join()
        if failed:
            recall.close()
            raise failed[0]
        return recall

    def close(self) -> None:
        self.searcher.close()

    def passages(self, prompt: str, k: int = PROMPT_K, project: str | None = None) -> list[hooks.Passage]:
        """The prompt's hybrid hits, best first, each with its cosine similarity to the prompt."""
        request = prompt_request(prompt, k, project)
        return passages_of(self.searcher.run(request), request.query)

    def recent(self, settings: Settings, cwd: str | None, session_id: str | None, limit: int) -> list[hooks.Recent]:
        from psycopg.rows import class_row

        from pgrecall.memory.notes import folder_of
        from pgrecall.postgres import queries

        params = {
            "memory_root": str(folder_of(settings)),
            "cwd": cwd,
            "project_names": project_names(cwd),
            "session_id": session_id,
            "limit": limit,
        }
        with (
            self.searcher.pool.connection() as conn,
            conn.transaction(),
            conn.cursor(row_factory=class_row(_RecentRow)) as cursor,
        ):
            rows = cursor.execute(queries.load("hooks.sql")["recent"], params).fetchall()
        return [
            hooks.Recent(
                document_id=row.document_id,
                kind=row.kind,
                path=hooks.full_path(row.source_root, row.path),
                title=row.title,
                memory_id=hooks.memory_id_of(row.metadata),
                when=row.mtime,
                text=row.text,
            )
            for row in rows
        ]


def project_names(cwd: str | None) -> list[str]:
    """The names a note's front matter may give the cwd's project (`project: apollo` for a session
    in ~/code/apollo or below it): the name of its folder (its git top-level, else the cwd)."""
    from pgrecall.projects import folder_name, project_of

    if not cwd or not cwd.startswith("/"):
        return []
    name = folder_name(project_of(cwd))
    return [name] if name else []


def prompt_request(prompt: str, k: int = PROMPT_K, project: str | None = None):
    from pgrecall.contract import MAX_QUERY_CHARS, search_request

    return search_request(prompt[:MAX_QUERY_CHARS], k=k, mode="hybrid", project=project)


def passages_of(hits: list, query: str) -> list[hooks.Passage]:
    """The hits as the hook weighs them: similarity (Hit.similarity), and whether one holds an
    identifier the query names."""
    from pgrecall.terms import identifier_terms

    identifiers = identifier_terms(query)
    return [
        hooks.Passage(
            document_id=hit.document_id,
            path=hooks.full_path(hit.source_root, hit.path),
            title=hit.title,
            snippet=hit.snippet,
            memory_id=hooks.memory_id_of(hit.metadata),
            similarity=hit.similarity if hit.similarity is not None else -1.0,
            exact=hooks.names_identifier(f"{hit.title or ''}\n{hit.heading}\n{hit.text}", identifiers),
            kind=hit.kind,
            when=hit.occurred_at or hit.modified,
            text=hit.text,
        )
        for hit in hits
    ]


def _nothing() -> None:
    pass


def search_passages(
    payload: hooks.HookInput, settings: Settings, start_logging: Callable[[], None] = _nothing
) -> list[hooks.Passage]:
    """The seam of the prompt hook: the prompt's passages with their similarity, best first. Asked
    of a running serve first (its warm socket: no model to load), else answered here; the
    project of the hook's cwd ranks first."""
    from pgrecall import warm_client
    from pgrecall.projects import project_of

    project = project_of(payload.cwd) if payload.cwd else None
    request = prompt_request(payload.prompt or "", PROMPT_K, project)
    remaining = settings.hook_deadline - seconds_since_start()
    hits = warm_client.search(request, settings, timeout=max(0.05, remaining))
    if hits is not None:
        return passages_of(hits, request.query)
    start_logging()
    recall = Recall.open(settings)
    try:
        return passages_of(recall.searcher.run(request), request.query)
    finally:
        recall.close()


def recent_documents(payload: hooks.HookInput, settings: Settings) -> list[hooks.Recent]:
    """The seam of the session-start hook: recent memories and sessions of the payload's cwd."""
    recall = Recall.open(settings, model=False)
    try:
        return recall.recent(settings, payload.cwd, payload.session_id, RECENT_LIMIT)
    finally:
        recall.close()


# --- the commands ------------------------------------------------------------------------------


def _off(payload: hooks.HookInput, settings: Settings) -> bool:
    folder = injection_ledger.folder_of(settings.home)
    return (
        not settings.hook_inject
        or injection_ledger.project_off(payload.cwd)
        or injection_ledger.session_off(folder, payload.session_id)
    )


def record(
    settings: Settings, payload: hooks.HookInput, outcome: str, text: str = "", items: list | None = None
) -> None:
    """The run in the session's ledger (pgrecall.claude_integration.injection_ledger); a run without a session id, or a
    ledger that cannot be written, leaves no record and never fails the hook."""
    from pgrecall.projects import project_of

    if not payload.session_id:
        return
    folder = injection_ledger.folder_of(settings.home)
    entry: dict[str, Any] = {
        "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
        "event": "prompt" if payload.event == hooks.PROMPT else "session-start",
        "session_id": payload.session_id,
        "cwd": payload.cwd,
        "project": project_of(payload.cwd) if payload.cwd else None,
        "transcript_path": payload.transcript_path,
        "outcome": outcome,
        "tokens": hooks.estimate_tokens(text),
        "seconds": round(seconds_since_start(), 3),
        "items": items or [],
    }
    with contextlib.suppress(OSError, ValueError):
        if payload.event == hooks.PROMPT:
            entry["prompt"] = injection_ledger.prompt_count(folder, payload.session_id) + 1
        injection_ledger.append(folder, entry)


def item_record(passage: hooks.Passage, shown_text: str, prompt: str) -> dict[str, Any]:
    from pgrecall.claude_integration.injection_use import distinctive_terms

    return {
        "document_id": passage.document_id,
        "memory_id": passage.memory_id,
        "title": passage.title,
        "path": passage.path,
        "kind": passage.kind,
        "terms": distinctive_terms(f"{passage.title or ''}\n{shown_text}", prompt),
    }


def prompt_output(
    stdin: str, settings: Settings, start_logging: Callable[[], None] = _nothing, seen: dict | None = None
) -> str:
    payload = hooks.parse_payload(stdin, hooks.PROMPT)
    if seen is not None:
        seen["payload"] = payload
    prompt = payload.prompt or ""
    switch = hooks.switch_of(prompt)
    if switch is not None and payload.session_id:
        injection_ledger.switch_session(injection_ledger.folder_of(settings.home), payload.session_id, on=switch)
        record(settings, payload, "switched on" if switch else "switched off")
        return ""
    if _off(payload, settings):
        record(settings, payload, "off")
        return ""
    if not hooks.worth_searching(prompt):
        record(settings, payload, "skipped")
        return ""
    passages = hooks.relevant(search_passages(payload, settings, start_logging), settings.hook_min_score)
    text = hooks.prompt_context(passages, settings.hook_prompt_tokens, payload.cwd)
    shown = hooks.shown_items(passages, settings.hook_prompt_tokens, payload.cwd)
    items = [item_record(item.first, " ".join(item.snippets), prompt) for item in shown]
    record(settings, payload, "injected" if text else "nothing", text, items)
    return text


def session_start_output(
    stdin: str, settings: Settings, start_logging: Callable[[], None] = _nothing, seen: dict | None = None
) -> str:
    payload = hooks.parse_payload(stdin, hooks.SESSION_START)
    if seen is not None:
        seen["payload"] = payload
    if _off(payload, settings):
        record(settings, payload, "off")
        return ""
    start_logging()
    recent = recent_documents(payload, settings)
    text = hooks.briefing(recent, settings.hook_session_tokens, payload.cwd)
    items = [
        {
            "document_id": item.document_id,
            "memory_id": item.memory_id,
            "title": item.title,
            "path": item.path,
            "kind": item.kind,
            "terms": [],  # a briefing's use is told by a tool call or a name, not by its words
        }
        for item in recent
        if f"(id {item.document_id})" in text
    ]
    record(settings, payload, "injected" if text else "nothing", text, items)
    return text


def seconds_since_start() -> float:
    """How long this process has run (Linux: /proc), 0.0 where that cannot be read."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as uptime:
            up = float(uptime.read().split()[0])
        return max(0.0, up - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _leave(line: str) -> None:
    """One line on stderr, nothing on stdout, exit 0 now: the work's thread may hang in a socket."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    finally:
        os._exit(0)


def kept_output(
    stdin: str,
    settings: Settings,
    start_logging: Callable[[], None] = _nothing,
    seen: dict[str, hooks.HookInput] | None = None,
    *,
    event: str,
) -> str:
    """session-end and pre-compact: the transcript kept and indexed (pgrecall.worker.kept_sessions); prints nothing."""
    from pgrecall.worker import kept_sessions

    payload = hooks.parse_payload(stdin, kept_sessions.EVENTS[event])
    seconds_left = settings.hook_deadline - seconds_since_start() - 0.25  # the process's own exit
    kept_sessions.keep_and_index(settings, payload.transcript_path, payload.event, seconds_left)
    return ""


def within_deadline(
    name: str,
    work: Callable[[], str],
    deadline: float,
    late: Callable[[], None] = _nothing,
    failed: str = "nothing added",
) -> int:
    """Run `work` in a daemon thread; print what it returns if it ends in time (counted from
    the process's start), else call `late` and leave. Always 0: a hook must never fail the prompt.
    `failed` starts the one line of an error ("" where the error says it all)."""
    from pgrecall.errors import reason

    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["text"] = work()
        except BaseException as exc:  # noqa: BLE001 (every error is one line on stderr, never a failed prompt)
            outcome["error"] = exc

    thread = threading.Thread(target=target, name=f"pgrecall-hook-{name}", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - seconds_since_start()))
    if thread.is_alive():
        with contextlib.suppress(Exception):
            late()
        _leave(f"pgrecall hook {name}: {failed + ', ' if failed else ''}the {deadline:g} s deadline passed")
    if "error" in outcome:
        print(f"pgrecall hook {name}: {failed + ': ' if failed else ''}{reason(outcome['error'])}", file=sys.stderr)
        return 0
    text = outcome.get("text", "")
    if text:
        with contextlib.suppress(OSError):  # Claude Code stopped reading: nothing left to tell it
            sys.stdout.write(text)
            sys.stdout.flush()
    return 0


def run(args: argparse.Namespace, settings: Settings) -> NoReturn:
    works = {"prompt": prompt_output, "session-start": session_start_output}
    work = works.get(args.event) or functools.partial(kept_output, event=args.event)
    seen: dict[str, hooks.HookInput] = {}

    def read_and_answer() -> str:
        stdin = sys.stdin.buffer.read().decode("utf-8", "replace")
        try:
            return work(stdin, settings, args.start_logging, seen)
        except BaseException:
            if "payload" in seen:
                record(settings, seen["payload"], "error")
            raise

    def late() -> None:
        if "payload" in seen:
            record(settings, seen["payload"], "late")

    failed = "nothing added" if args.event in works else ""  # kept_sessions' errors say what was kept
    within_deadline(args.event, read_and_answer, settings.hook_deadline, late, failed)
    # Out without the interpreter's teardown: the work closed what it opened, a thread may still
    # be loading the model (the answer came from an error first), and the teardown of
    # onnxruntime, numpy and the pool costs time on every prompt.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):
            stream.flush()
    os._exit(0)
