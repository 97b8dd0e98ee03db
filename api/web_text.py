"""What the web page shows of a hit, as text: Markdown as the words it shows, headings as a
breadcrumb, the query's words marked, times to the minute. Pure functions."""

from __future__ import annotations

import datetime
import re
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup, escape

# What pgrecall.api.read_queries.headlines puts around each word of the query found (control
# characters, which plain_text takes out of any text it is given).
MARK_START, MARK_END = "\x02", "\x03"
_MARKS = re.compile(f"[{MARK_START}{MARK_END}]")
_TAGLESS = MarkdownIt("commonmark", {"html": False}).enable("table")
_HEADING_LEVEL = re.compile(r"^#{1,6}[ \t]+")


def plain_text(markdown: str) -> str:
    """The words Markdown shows, on one line: no emphasis, code ticks, link targets or heading
    marks (a link is its text, an image its description, a code block its code)."""
    words: list[str] = []
    for token in _TAGLESS.parse(markdown):
        if token.type == "inline":
            for child in token.children or ():
                if child.type in ("text", "code_inline"):
                    words.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    words.append(" ")
                elif child.type == "image":
                    words.append(child.content)
            words.append(" ")
        elif token.type in ("code_block", "fence"):
            words.append(token.content + " ")
    return " ".join(_MARKS.sub(" ", "".join(words)).split())


def breadcrumb(heading: str) -> str:
    """A chunk's heading path as a reader reads it: "# Setup > ## Linux" is "Setup › Linux"."""
    parts = [_HEADING_LEVEL.sub("", part).strip() for part in heading.split(" > ")]
    return " › ".join(part for part in parts if part)


def marked(headline: str, text: str) -> Markup:
    """`text` escaped, with the words `headline` (text as headlines returned it) marks in <mark>;
    words marked side by side (E and -4711 of E-4711) are one mark. Should the headline differ
    from `text` other than by its marks, `text` unmarked."""
    if _MARKS.sub("", headline) != text:
        return escape(text)
    headline = headline.replace(MARK_END + MARK_START, "")
    parts: list[Markup] = []
    for position, piece in enumerate(headline.split(MARK_START)):
        if position:
            word, _, rest = piece.partition(MARK_END)
            parts.append(Markup("<mark>%s</mark>") % word)
            piece = rest
        parts.append(escape(piece))
    return Markup("").join(parts)


def minute(value: Any) -> str:
    """A time (datetime or ISO 8601 text) to the minute in this machine's time zone, the zone
    named: "2026-03-01 11:00 CET". A date alone stays a date; text that is no time is shown as it is."""
    if value is None or value == "":
        return ""
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            return value
        if len(value.strip()) == 10:  # a date: no time of day to show
            return moment.date().isoformat()
    if not isinstance(moment, datetime.datetime):
        return str(value)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M %Z")  # a naive time is taken as local
