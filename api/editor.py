"""Open a document's file in the user's editor: PGRECALL_EDITOR_COMMAND, run without a shell.

The setting is split like a shell line (shlex) once, when the API starts; each request then
replaces `{path}` and `{line}` inside the arguments it already has, so a path with spaces,
quotes or `;` stays one argument and is never read by a shell. The command is started detached
(its own session, no terminal, output to /dev/null) and not waited for: an editor that stays
open must not hold the request.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from pgrecall.errors import ConfigurationError

PLACEHOLDERS = re.compile(r"\{(path|line)\}")
WINDOW_WORDS = 8  # the chunk's words looked for in the file at once
MIN_WINDOW_WORDS = 3
SEARCHED_WINDOWS = 8  # starting at each of the chunk's first words in turn


def parse_command(template: str) -> tuple[str, ...]:
    """The setting as an argv template; ConfigurationError (one line) when it cannot open a file."""
    try:
        argv = tuple(shlex.split(template))
    except ValueError as exc:
        raise ConfigurationError(f"PGRECALL_EDITOR_COMMAND cannot be split ({exc}): {template!r}") from None
    if not argv:
        raise ConfigurationError("PGRECALL_EDITOR_COMMAND is empty")
    if not any("{path}" in arg for arg in argv):
        raise ConfigurationError(f"PGRECALL_EDITOR_COMMAND must name {{path}}, the file to open: {template!r}")
    if "{path}" in argv[0] or "{line}" in argv[0]:
        raise ConfigurationError(
            f"PGRECALL_EDITOR_COMMAND must start with the program, not a placeholder: {template!r}"
        )
    return argv


def argv_for(template: Sequence[str], path: str, line: int) -> list[str]:
    """The template's arguments with {path} and {line} replaced in one pass (a path that itself
    holds `{line}` is not replaced again); nothing else in them is interpreted."""
    values = {"path": path, "line": str(line)}
    return [PLACEHOLDERS.sub(lambda match: values[match.group(1)], arg) for arg in template]


def line_of(file_text: str, chunk_text: str) -> int:
    """The line (from 1) of the file where the chunk's text begins; 1 when it cannot be found (the
    chunk was redacted, or the file changed since it was indexed). The chunker joins a paragraph's
    lines, so the chunk's first words are looked for with any white space between them; a window
    further on is tried when the first words are not in the file (a redaction marker)."""
    words = chunk_text.split()
    for start in range(min(len(words), SEARCHED_WINDOWS)):
        window = words[start : start + WINDOW_WORDS]
        if len(window) < min(len(words), MIN_WINDOW_WORDS):
            break
        found = re.search(r"\s+".join(re.escape(word) for word in window), file_text)
        if found:
            return file_text.count("\n", 0, found.start()) + 1
    return 1


def find_line(location: Path, chunk_text: str | None, max_bytes: int) -> int:
    """The chunk's line in the file at `location`, read only when it is a text file of at most `max_bytes`."""
    if not chunk_text:
        return 1
    try:
        if location.stat().st_size > max_bytes:
            return 1
        return line_of(location.read_text(encoding="utf-8", errors="replace"), chunk_text)
    except OSError:
        return 1


def launch(argv: list[str]) -> int:
    """Start `argv` detached and return its pid; OSError when the program cannot be started. A
    daemon thread reaps it when it ends, so no zombie is left behind."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
    )
    threading.Thread(target=process.wait, name="editor-reaper", daemon=True).start()
    return process.pid
