"""Secrets out of the index: well-known secret shapes found in text, and replaced by a
marker that names their kind ("[redacted: github token]").

The shapes are provider keys with fixed prefixes (OpenAI, Anthropic, AWS, GitHub, GitLab,
Slack, Stripe, Google), private key blocks, JWTs, the password of a URL, `password=` and
`token=` assignments, and high-entropy values assigned to key-like names. A finding holds
the kind and where it is, never the secret, so it can be reported and logged as it is.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from pgrecall.worker.document import ParsedDocument, Section

# Raise when a change to the patterns changes what is redacted: documents redacted by
# another version are then indexed again (it is part of the chunking signature).
PATTERNS_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


def marker(kind: str) -> str:
    return f"[redacted: {kind}]"


# A value that stands for a secret instead of being one: "${TOKEN}", "<your key>", "****", "...",
# "user:password@host".
_PLACEHOLDER = re.compile(
    r"[$<{%*.]|\[redacted|(?:x+|changeme|example|none|null|true|false|password|passwd|pass|secret|token|pwd)$",
    re.IGNORECASE,
)
# An unquoted value that is code, not a secret: a call or subscript ("secrets.token_urlsafe(32)",
# "row[0]"), an attribute ("self.password", "EXCLUDED.password"), a type ("password: str").
_CODE_VALUE = re.compile(
    r".*[()\[\]{}]|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|(?:str|bytes|int|bool|string|Optional|Any|SecretStr)$"
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
# Bits per character: 20 random base64 characters have about 4.2, 32 random hex digits
# about 3.7 (hex has 4 at most), English words and identifiers less.
MIN_ENTROPY_BITS = 3.5
MIN_HEX_ENTROPY_BITS = 3.0
_HEX = frozenset("0123456789abcdefABCDEF")
MIN_KEYLIKE_VALUE_CHARS = 16


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values()) if value else 0.0


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.match(value))


def _looks_random(value: str) -> bool:
    return (
        len(value) >= MIN_KEYLIKE_VALUE_CHARS
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and not _UUID.fullmatch(value)
        and entropy(value) >= (MIN_HEX_ENTROPY_BITS if set(value) <= _HEX else MIN_ENTROPY_BITS)
    )


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclasses.dataclass(frozen=True)
class _Shape:
    kind: str
    # Each starts with its literal prefix, which lets `re` skip ahead to it: many times
    # faster than a pattern that starts with a lookbehind or a character class.
    pattern: re.Pattern[str]
    # The group that is the secret (the password of a URL); 0: the whole match.
    group: int | str = 0
    bounded: bool = True  # not the middle of a longer token: checked before the match, the pattern checks after


def _token(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"{pattern}(?![A-Za-z0-9_-])")


_BEGIN_KEY = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_END_KEY = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_KEY_LINES = re.compile(r"(?:\r?\n[A-Za-z0-9+/=]{16,})*")
MAX_KEY_CHARS = 16384  # a 4096-bit RSA key in PEM is about 3,300


def _private_keys(text: str) -> list[Finding]:
    """PEM private key blocks, to their END line; one cut off (no END line near) to its last line of base64.
    Each END is looked for once, so a text of many BEGIN lines takes time in proportion to its length."""
    found: list[Finding] = []
    end_match: re.Match[str] | None = None
    ends_left = True
    for begin in _BEGIN_KEY.finditer(text):
        if found and begin.start() < found[-1].end:
            continue
        if ends_left and (end_match is None or end_match.start() < begin.end()):
            end_match = _END_KEY.search(text, begin.end())
            ends_left = end_match is not None
        if end_match is not None and end_match.start() - begin.end() <= MAX_KEY_CHARS:
            found.append(Finding("private key", begin.start(), end_match.end()))
        else:
            lines = _KEY_LINES.match(text, begin.end())
            found.append(Finding("private key", begin.start(), lines.end() if lines else begin.end()))
    return found


SHAPES = (
    _Shape("anthropic api key", _token(r"sk-ant-[a-z]+\d{2}-[A-Za-z0-9_-]{32,}")),
    _Shape("openai api key", _token(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}")),
    _Shape("openai api key", _token(r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}")),  # "T3BlbkFJ": base64 "OpenAI"
    _Shape("aws access key", _token(r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}")),
    _Shape("github token", _token(r"gh[pousr]_[A-Za-z0-9]{36,255}")),
    _Shape("github token", _token(r"github_pat_[A-Za-z0-9_]{22,255}")),
    _Shape("gitlab token", _token(r"gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|oas)-[A-Za-z0-9_-]{20,}")),
    _Shape("slack token", _token(r"xox[abposre]-(?:[0-9]+-)*[A-Za-z0-9-]{10,}")),
    _Shape("slack webhook", re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,}")),
    _Shape("stripe key", _token(r"sk_(?:live|test)_[A-Za-z0-9]{16,}")),
    _Shape("stripe key", _token(r"rk_(?:live|test)_[A-Za-z0-9]{16,}")),
    _Shape("stripe key", _token(r"whsec_[A-Za-z0-9]{24,}")),
    _Shape("google api key", _token(r"AIza[0-9A-Za-z_-]{35}")),
    _Shape("google oauth secret", _token(r"GOCSPX-[A-Za-z0-9_-]{28}")),
    _Shape("jwt", _token(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    # "scheme://user:password@host": only the password goes.
    _Shape("password in url", re.compile(r"://[^\s:/?#@\[\]]+:(?P<value>[^\s/?#@\[\]]+)@"), "value", False),
)

# An assignment, found from its operator ("=", ":", ":=", "=>") and then the name before it:
# a pattern that starts at the name would be tried at every character of the text.
# ("[=:][=>]?" for "=", ":", ":=", "=>": an alternation there would be three times slower.)
# The value is a lookahead, so a match consumes only its operator: in "Note: password=hunter2"
# the "=" is tried too once ":" has no key-like name before it.
_ASSIGNMENT = re.compile(r"""[=:][=>]?(?=[ \t]*(?P<quote>["'`]?)(?P<value>[^\s"'`,;&]+)(?P=quote))""")
_NAME_BEFORE = re.compile(r"""(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z][A-Za-z0-9_.-]*)["']?[ \t]*\Z""")
MAX_NAME_CHARS = 64
# Not "pass" or "pwd" alone: "first pass: the parser" and "pwd: /home" are prose and shell.
_PASSWORD_NAME = re.compile(r"(?:.*[_.-])?(?:password|passwd|passphrase)", re.IGNORECASE)
_TOKEN_NAME = re.compile(r"(?:.*[_.-])?token", re.IGNORECASE)
# Key-like names: a value assigned to one of them is a secret when it looks random.
_KEYLIKE_NAME = re.compile(r".*(?:secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|auth)", re.I)


def _is_reference(name: str, value: str) -> bool:
    """An unquoted value that names another value: code, or the name again ("password=password")."""
    if _CODE_VALUE.match(value):
        return True
    word = next((w for w in ("password", "passwd", "token", "secret", "key") if w in name.lower()), None)
    return word is not None and word in value.lower()


def _assigned_kind(name: str, value: str, quoted: bool) -> str | None:
    if _is_placeholder(value) or (not quoted and _is_reference(name, value)):
        return None
    if _PASSWORD_NAME.fullmatch(name):
        return "password" if len(value) >= 3 else None
    if _TOKEN_NAME.fullmatch(name):
        return "token" if len(value) >= 8 else None
    if _KEYLIKE_NAME.match(name) and _looks_random(value):
        return "secret"
    return None


def _assignments(text: str) -> list[Finding]:
    found = []
    for match in _ASSIGNMENT.finditer(text):
        before = _NAME_BEFORE.search(text, max(0, match.start() - MAX_NAME_CHARS), match.start())
        if before is None:
            continue
        start, end = match.span("value")
        value = text[start:end].rstrip(".")  # the full stop of a sentence
        kind = _assigned_kind(before.group("name"), value, bool(match.group("quote")))
        if kind is not None:
            found.append(Finding(kind, start, start + len(value)))
    return found


def find_secrets(text: str) -> list[Finding]:
    """The secrets in `text`, in order, none overlapping another: where two shapes
    claim the same characters, a private key block wins, then the one listed first
    in SHAPES, and a shape of its own (a GitHub token) wins over an assignment (`token=`)."""
    found: list[Finding] = []
    for shape in SHAPES:
        for match in shape.pattern.finditer(text):
            start, end = match.span(shape.group)
            if shape.bounded and start > 0 and text[start - 1] in _TOKEN_CHARS:
                continue
            if shape.group and _is_placeholder(text[start:end]):
                continue
            found.append(Finding(shape.kind, start, end))
    kept: list[Finding] = []
    starts: list[int] = []
    for finding in [*_private_keys(text), *found, *_assignments(text)]:
        # The kept findings do not overlap: only the neighbours of its place can overlap this one.
        place = bisect.bisect_right(starts, finding.start)
        if place > 0 and kept[place - 1].end > finding.start:
            continue
        if place < len(kept) and kept[place].start < finding.end:
            continue
        kept.insert(place, finding)
        starts.insert(place, finding.start)
    return kept


def redact(text: str) -> tuple[str, list[Finding]]:
    """`text` with each secret replaced by its marker, and the findings (at their places in `text`)."""
    findings = find_secrets(text)
    if not findings:
        return text, findings
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts.append(text[position : finding.start])
        parts.append(marker(finding.kind))
        position = finding.end
    parts.append(text[position:])
    return "".join(parts), findings


def redact_document(document: ParsedDocument) -> ParsedDocument:
    """The document with every secret of its title, headings, texts and string metadata values
    replaced by its marker, and `redactions` counting them by kind; the same object when it has none."""
    counts: Counter[str] = Counter()

    def clean(text: str) -> str:
        redacted, findings = redact(text)
        counts.update(finding.kind for finding in findings)
        return redacted

    title = clean(document.title)
    sections = [_clean_section(section, clean) for section in document.sections]
    metadata = {key: _clean_value(key, value, counts) for key, value in document.metadata.items()}
    if not counts:
        return document
    return dataclasses.replace(
        document, title=title, sections=sections, metadata=metadata, redactions=dict(sorted(counts.items()))
    )


def _clean_section(section: Section, clean: Callable[[str], str]) -> Section:
    """The section redacted; its context (counted in the section before) redacted, not counted."""
    context = redact(section.text[: section.context])[0]
    return Section(clean(section.heading), context + clean(section.text[section.context :]), len(context))


def _clean_value(key: Any, value: Any, counts: Counter[str]) -> Any:
    """A metadata value, redacted; a string is read with its key before it ("password: hunter2"),
    which is what makes it a password."""
    if isinstance(value, dict):
        return {k: _clean_value(k, v, counts) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_value(key, item, counts) for item in value]
    if not isinstance(value, str):
        return value
    prefix = f"{key}: " if isinstance(key, str) else ""
    redacted, findings = redact(prefix + value)
    counts.update(finding.kind for finding in findings)
    if not findings:
        return value
    if redacted.startswith(prefix):
        return redacted[len(prefix) :]
    return marker(findings[0].kind)  # the key itself was part of a secret: none of the value stays
