"""Split sections into chunks the embedding model sees whole.

A chunk holds at most `token_budget(chunk_tokens, model limit)` word pieces,
heading prefix included: PGRECALL_CHUNK_TOKENS, never more than what
the model reads (all-MiniLM-L6-v2: 256, [CLS] and [SEP] included; a longer
text is silently truncated, so its tail would never reach the vector), less
the two special tokens. Chunks end at heading, paragraph or sentence
boundaries; a fenced code block is kept whole unless it alone is too long, and
a sentence too long is cut between words. A chunk repeats the previous
chunk's last paragraph or sentence when that is short (at most overlap_tokens)
and fits, and the word windows of a cut sentence overlap by about
overlap_tokens, so text cut from its neighbour keeps some context;
`Chunk.fresh_from` marks the repeat, so the keyword index counts each word once.

Chunks are bounded in characters too (CHARS_PER_TOKEN per word piece of the
limit): a word longer than 100 characters is one [UNK] piece to the model, so
a 5 MB line without spaces would otherwise be one "short" chunk of 5 MB. The
bound is far above what ordinary text reaches, so it changes no ordinary chunk.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence

from pgrecall.worker import redaction as redact
from pgrecall.worker.document import Chunk, Section

TokenCounter = Callable[[Sequence[str]], list[int]]

# Raise when a change to this module or to an adapter changes the chunks of unchanged text:
# every document is then read and chunked again (its vectors kept where its text is unchanged).
# 2: a Markdown note of headings alone has a chunk, front matter that is not YAML is text.
# 3: a conversation's units are exchanges after their context, each message dated and named (adapters.conversation).
# 4: a unit's context is marked as a repeat (fresh_from); a message's date is written in words.
CHUNKER_VERSION = 4


def chunking_signature(chunk_tokens: int, redact_secrets: bool = True) -> str:
    """What a document records about how its chunks were made: a change of the chunker, of the
    size, or of secret redaction (on or off, or its patterns) chunks and embeds it again."""
    signature = f"v{CHUNKER_VERSION}/{chunk_tokens}"
    return f"{signature}/redacted-v{redact.PATTERNS_VERSION}" if redact_secrets else signature


SPECIAL_TOKENS = 2  # [CLS] and [SEP], which the model adds to every text


def token_budget(chunk_tokens: int, model_max_tokens: int) -> int:
    """Word pieces a chunk may hold, heading included: PGRECALL_CHUNK_TOKENS, capped
    by what the model reads, less the special tokens the model adds."""
    return min(chunk_tokens, model_max_tokens) - SPECIAL_TOKENS


# Ordinary text averages 4-6 characters per word piece; only runs the model
# reads as [UNK] (over 100 characters without a space) come near this.
CHARS_PER_TOKEN = 16

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BLANK_LINES = re.compile(r"\n[ \t]*\n")


@dataclasses.dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    joiner: str  # what separates it from the unit before: "\n\n" between blocks, " " within one
    fresh_from: int = 0  # a word window starts with words of the window before


def split_blocks(text: str) -> list[str]:
    """Paragraphs separated by blank lines; a fenced code block stays one block."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is None and match:
            if current and any(part.strip() for part in current):
                blocks.append("\n".join(current).strip())
            current, fence = [line], match.group(1)
            continue
        if fence is not None:
            current.append(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                blocks.append("\n".join(current))
                current, fence = [], None
            continue
        if not line.strip():
            if any(part.strip() for part in current):
                blocks.append("\n".join(current).strip())
            current = []
        else:
            current.append(line)
    if any(part.strip() for part in current):
        blocks.append("\n".join(current).strip())
    return blocks


def _cut(text: str, budget: int, max_chars: int, tokens: int, count_tokens: TokenCounter) -> list[_Unit]:
    """One "word" over the token budget or the character bound, cut by characters."""
    size = min(max_chars, max(1, len(text) * budget // tokens) if tokens > budget else max_chars)
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    units: list[_Unit] = []
    for piece, count in zip(pieces, count_tokens(pieces), strict=True):
        if count > budget and len(piece) > 1:
            units.extend(_cut(piece, budget, max(1, len(piece) // 2), count, count_tokens))
        else:
            units.append(_Unit(piece, count, " "))
    return units


def _windows(
    words: list[str], counts: list[int], budget: int, overlap: int, max_chars: int, count_tokens: TokenCounter
) -> list[_Unit]:
    """Greedy word windows of at most `budget` tokens and `max_chars` characters,
    each starting with ~`overlap` tokens of the last."""
    units: list[_Unit] = []
    oversized = [count > budget or len(word) > max_chars for word, count in zip(words, counts, strict=True)]
    start = 0
    carried_until = 0  # words before this index were in the previous window
    while start < len(words):
        if oversized[start]:  # one "word" over a bound: cut it by characters
            units.extend(_cut(words[start], budget, max_chars, counts[start], count_tokens))
            start += 1
            carried_until = start
            continue
        end, total, chars = start, 0, -1
        while (
            end < len(words)
            and not oversized[end]
            and (end == start or (total + counts[end] <= budget and chars + 1 + len(words[end]) <= max_chars))
        ):
            total += counts[end]
            chars += 1 + len(words[end])
            end += 1
        fresh_from = len(" ".join(words[start:carried_until])) + 1 if carried_until > start else 0
        units.append(_Unit(" ".join(words[start:end]), total, " ", fresh_from))
        if end >= len(words):
            break
        carried_until = end
        if oversized[end]:  # no overlap into a word that is cut on its own
            start = end
            continue
        back, carried = end, 0
        while back > start + 1 and carried + counts[back - 1] <= overlap:
            back -= 1
            carried += counts[back]
        start = back
    return units


def _split_oversized(block: str, budget: int, overlap: int, max_chars: int, count_tokens: TokenCounter) -> list[_Unit]:
    if _FENCE.match(block):
        pieces, joiner = block.split("\n"), "\n"
    else:
        pieces, joiner = _SENTENCE_END.split(block), " "
    counts = count_tokens(pieces)
    units: list[_Unit] = []
    for piece, tokens in zip(pieces, counts, strict=True):
        if tokens <= budget and len(piece) <= max_chars:
            units.append(_Unit(piece, tokens, joiner))
        else:
            words = piece.split()
            units.extend(_windows(words, count_tokens(words), budget, overlap, max_chars, count_tokens))
    return units


def _truncate_heading(heading: str, tokens: int, limit: int, count_tokens: TokenCounter) -> tuple[str, int]:
    if tokens <= limit:
        return heading, tokens
    words = heading.split()
    counts = count_tokens(words)
    kept, total = [], 0
    for word, count in zip(words, counts, strict=True):
        if total + count > limit:
            break
        kept.append(word)
        total += count
    return " ".join(kept), total


def section_key(section: Section) -> str:
    """What a section's chunks depend on besides the chunking settings: its heading and text."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(section.heading.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(section.text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def chunk_sections(
    sections: Sequence[Section],
    count_tokens: TokenCounter,
    *,
    max_tokens: int,
    overlap_tokens: int = 32,
    heading_tokens: int = 64,
    max_chars: int | None = None,
    known: Mapping[str, Sequence[Chunk]] | None = None,
) -> list[Chunk]:
    """Chunks of at most `max_tokens` word pieces (token_budget), heading prefix included, and of
    at most `max_chars` characters of text (default CHARS_PER_TOKEN * max_tokens)
    under a heading of at most CHARS_PER_TOKEN * heading_tokens characters.

    Each section is cut on its own, so a section whose key is in `known` (its chunks as cut
    before, with the same settings and tokenizer) takes those chunks without counting a
    word piece: an appended entry costs the tokenizer only the new entry. A chunk's
    section_key is its section's, with `#n` for the n-th repeat of a section in the document."""
    max_chars = max_chars or CHARS_PER_TOKEN * max_tokens
    chunks: list[Chunk] = []
    occurrences: dict[str, int] = {}
    for section in sections:
        key = section_key(section)
        # A section repeated word for word is told apart by its place among its copies.
        occurrence = occurrences[key] = occurrences.get(key, -1) + 1
        if occurrence:
            key = f"{key}#{occurrence}"
        if known and (cut := known.get(key)):
            first = len(chunks)
            chunks.extend(dataclasses.replace(chunk, ordinal=first + i) for i, chunk in enumerate(cut))
            continue
        blocks = split_blocks(section.text)
        if not blocks:
            continue
        heading = section.heading
        if len(heading) > CHARS_PER_TOKEN * heading_tokens:
            heading = heading[: CHARS_PER_TOKEN * heading_tokens]
        heading_count = count_tokens([heading])[0] if heading else 0
        heading, heading_count = _truncate_heading(heading, heading_count, heading_tokens, count_tokens)
        budget = max_tokens - heading_count
        units: list[_Unit] = []
        context_blocks = len(split_blocks(section.text[: section.context])) if section.context else 0
        context_units = 0
        for number, (block, tokens) in enumerate(zip(blocks, count_tokens(blocks), strict=True)):
            if number == context_blocks:
                context_units = len(units)
            if tokens <= budget and len(block) <= max_chars:
                units.append(_Unit(block, tokens, "\n\n"))
            else:
                first, *rest = _split_oversized(block, budget, overlap_tokens, max_chars, count_tokens)
                units.append(dataclasses.replace(first, joiner="\n\n"))
                units.extend(rest)
        section_start = len(chunks)
        for text, tokens, fresh_from in _pack(units, budget, overlap_tokens, max_chars):
            if len(chunks) == section_start and context_units:
                fresh_from = _after_context(text, units, context_units)
            chunks.append(
                Chunk(
                    ordinal=len(chunks),
                    heading=heading,
                    text=text,
                    token_count=tokens + heading_count,
                    fresh_from=fresh_from,
                    section_key=key,
                )
            )
    return chunks


def _pack(units: list[_Unit], budget: int, overlap: int, max_chars: int) -> list[tuple[str, int, int]]:
    """(text, tokens, fresh_from) per chunk."""
    packed: list[tuple[str, int, int]] = []
    current: list[_Unit] = []
    total = chars = 0
    carried = False
    for unit in units:
        if current and (total + unit.tokens > budget or chars + len(unit.joiner) + len(unit.text) > max_chars):
            packed.append((_join(current), total, _fresh_from(current, carried)))
            last = current[-1]
            # Carry the previous unit over when it is short: a little shared context.
            carried = (
                last.tokens <= overlap
                and last.tokens + unit.tokens <= budget
                and len(last.text) + len(unit.joiner) + len(unit.text) <= max_chars
                and len(current) > 1
            )
            current, total, chars = ([last], last.tokens, len(last.text)) if carried else ([], 0, 0)
        if not current:
            chars = -len(unit.joiner)
        current.append(unit)
        total += unit.tokens
        chars += len(unit.joiner) + len(unit.text)
    if current:
        packed.append((_join(current), total, _fresh_from(current, carried)))
    return packed


def _after_context(text: str, units: list[_Unit], context_units: int) -> int:
    """Where a section's first chunk leaves its context (its first `context_units` units): the
    context repeats the section before, so it is marked like an overlap (Chunk.fresh_from)."""
    context = _join(units[:context_units])
    if context_units >= len(units) or len(text) <= len(context):
        return len(text)
    return len(context) + len(units[context_units].joiner)


def _fresh_from(units: list[_Unit], carried: bool) -> int:
    if carried:  # the first unit repeats the previous chunk's last one
        return len(units[0].text) + len(units[1].joiner) + units[1].fresh_from
    return units[0].fresh_from


def _join(units: list[_Unit]) -> str:
    text = units[0].text
    for unit in units[1:]:
        text += unit.joiner + unit.text
    return text
