"""Plain text: the whole file one section without a heading, titled by its file name."""

from __future__ import annotations

from pathlib import PurePosixPath

from pgrecall import kinds
from pgrecall.worker.document import ParsedDocument, Section


def parse(path: str, text: str, digest: str) -> ParsedDocument:
    sections = [Section(heading="", text=text.strip())] if text.strip() else []
    return ParsedDocument(
        path=path, kind=kinds.TEXT, title=PurePosixPath(path).stem, content_hash=digest, sections=sections
    )
