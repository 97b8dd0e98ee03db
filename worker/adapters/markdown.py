"""Markdown: YAML front matter into metadata (kept as text when it is not YAML), text split at headings
(not inside code fences)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from pgrecall import kinds
from pgrecall.front_matter import lenient_front_matter
from pgrecall.memory import notes as memory_notes
from pgrecall.worker.document import ParsedDocument, Section, moment, named

# The closing hashes are stripped in code: `(.*?)[ \t#]*$` backtracks quadratically on long lines.
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def split_sections(body: str) -> list[tuple[list[tuple[int, str]], str]]:
    """(heading stack, text) pairs; a stack is [(level, title), ...] outermost first."""
    sections: list[tuple[list[tuple[int, str]], str]] = []
    stack: list[tuple[int, str]] = []
    lines: list[str] = []
    fence: str | None = None
    for line in body.splitlines():
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        heading = _ATX_HEADING.match(line) if fence is None and not fence_match else None
        if heading:
            sections.append((list(stack), "\n".join(lines)))
            lines = []
            level = len(heading.group(1))
            title = heading.group(2).rstrip(" \t#").strip()
            stack = [entry for entry in stack if entry[0] < level] + [(level, title)]
        else:
            lines.append(line)
    sections.append((list(stack), "\n".join(lines)))
    return sections


def heading_path(stack: list[tuple[int, str]]) -> str:
    return " > ".join(f"{'#' * level} {title}" for level, title in stack)


def title_section(raw_sections: list[tuple[list[tuple[int, str]], str]], title: str | None) -> list[Section]:
    """The one section of a note without text: its headings, one a line, else its front-matter
    title, so a note that is only a heading still has a chunk to be found by; none for an empty note."""
    headings = [stack[-1][1] for stack, _ in raw_sections[1:] if stack and stack[-1][1]]
    text = "\n".join(headings) or (title or "").strip()
    return [Section(heading="", text=text)] if text else []


def _memory_title(path: str, text: str) -> str | None:
    """A memory note without a title is shown by its text's first words, not its file name
    (`2026-12-07-staging-runs-three-...-1d4abbea6a72`)."""
    memory = memory_notes.parse(path, text)
    return memory.shown_title if memory is not None else None


def parse(path: str, text: str, digest: str) -> ParsedDocument:
    metadata, body, problem = lenient_front_matter(text)
    raw_sections = split_sections(body)
    sections = [
        Section(heading=heading_path(stack), text=section_text.strip())
        for stack, section_text in raw_sections
        if section_text.strip()
    ]
    first_h1 = next((stack[0][1] for stack, _ in raw_sections if stack and stack[0][0] == 1), None)
    title = metadata.get("title") if isinstance(metadata.get("title"), str) else None
    return ParsedDocument(
        path=path,
        kind=kinds.MARKDOWN,
        title=title or first_h1 or _memory_title(path, text) or PurePosixPath(path).stem,
        content_hash=digest,
        sections=sections or title_section(raw_sections, title),
        metadata=metadata,
        project=named(metadata.get("project")),
        occurred_at=moment(metadata.get("created")),
        warnings=(f"front matter kept as text: {problem}",) if problem else (),
    )
