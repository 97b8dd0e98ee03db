"""What every interface (Python, CLI, HTTP, MCP) accepts and returns, in one place.

Pure functions: values in, clean values or InvalidInput (one line naming the
field) out. The interfaces only translate their own input into these calls,
so a limit changed here changes everywhere. Searches: `search_request()` builds
the one `SearchRequest` every interface passes to the Searcher, and `Hit.to_json()`
is the one JSON shape of a hit. Memories: the `memory_*` checks, and the
worker's `Memory.to_json()` / `Saved.to_json()`.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from pgrecall import kinds
from pgrecall.errors import InvalidInput
from pgrecall.projects import MAX_PROJECT_CHARS, project_of
from pgrecall.settings import FUSIONS

MAX_MEMORY_BYTES = 64 * 1024
MAX_TITLE_CHARS = 200
MAX_TAG_CHARS = 64
MAX_TAGS = 32
MAX_METADATA_KEYS = 32
MAX_METADATA_VALUE_CHARS = 1000
MAX_SOURCE_CHARS = 100
MEMORY_ID = re.compile(r"[0-9a-f]{12}")
_METADATA_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
# Front-matter keys pgrecall writes itself; metadata cannot take them over.
RESERVED_METADATA_KEYS = frozenset({"id", "created", "updated", "title", "tags", "source", "content_sha256"})


class NotFound(InvalidInput):
    """No such thing: an id that names nothing (the HTTP API answers 404)."""


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # every one str.splitlines() breaks at


INVALID_UTF8_MARK = "\ufdd0"  # a noncharacter: what the MCP stdio reader puts for bytes that are not UTF-8


def _no_control_characters(field: str, value: str, allow_newlines: bool) -> None:
    if "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL character")
    if INVALID_UTF8_MARK in value:
        raise InvalidInput(f"{field} is not valid UTF-8 (or holds the noncharacter U+FDD0)")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise InvalidInput(f"{field} contains an unpaired surrogate")
    if not allow_newlines and any(c in value for c in _LINE_BREAKS):
        raise InvalidInput(f"{field} must be one line")  # YAML would fold NEL, LS, PS: what was given would change


def memory_text(text: Any) -> str:
    """The text of a memory: not empty, at most 64 KiB of UTF-8, line endings normalised."""
    if not isinstance(text, str):
        raise InvalidInput("text must be a string")
    _no_control_characters("text", text, allow_newlines=True)
    clean = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not clean:
        raise InvalidInput("text is empty")
    if len(clean.encode("utf-8")) > MAX_MEMORY_BYTES:
        raise InvalidInput(f"text is longer than {MAX_MEMORY_BYTES} bytes")
    return clean


def memory_title(title: Any) -> str | None:
    if title is None:
        return None
    if not isinstance(title, str):
        raise InvalidInput("title must be a string")
    _no_control_characters("title", title, allow_newlines=False)
    clean = title.strip()
    if len(clean) > MAX_TITLE_CHARS:
        raise InvalidInput(f"title is longer than {MAX_TITLE_CHARS} characters")
    return clean or None


def memory_tags(tags: Any) -> tuple[str, ...]:
    """Tags: strings of one line, at most 64 characters each; order kept, duplicates dropped."""
    if tags is None:
        return ()
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise InvalidInput("tags must be a list of strings")
    clean: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise InvalidInput("tags must be a list of strings")
        _no_control_characters("tag", tag, allow_newlines=False)
        tag = tag.strip()
        if not tag:
            raise InvalidInput("a tag is empty")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"tag {tag[:20]!r}… is longer than {MAX_TAG_CHARS} characters")
        if tag not in clean:
            clean.append(tag)
    if len(clean) > MAX_TAGS:
        raise InvalidInput(f"at most {MAX_TAGS} tags")
    return tuple(clean)


def memory_metadata(metadata: Any) -> dict[str, str | int | float | bool]:
    """A flat mapping of names to strings, numbers and booleans (front matter, filterable)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata must be a mapping of names to strings, numbers or booleans")
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInput(f"metadata has more than {MAX_METADATA_KEYS} keys")
    clean: dict[str, str | int | float | bool] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not _METADATA_KEY.fullmatch(key):
            raise InvalidInput(f"metadata key {str(key)[:40]!r} must be a name of letters, digits, _ . -")
        if key in RESERVED_METADATA_KEYS:
            raise InvalidInput(f"metadata key {key!r} is set by pgrecall itself")
        if isinstance(value, (bool, int)):
            clean[key] = value
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidInput(f"metadata {key} must be a finite number")
            clean[key] = value
        elif isinstance(value, str):
            _no_control_characters(f"metadata {key}", value, allow_newlines=False)
            if len(value) > MAX_METADATA_VALUE_CHARS:
                raise InvalidInput(f"metadata {key} is longer than {MAX_METADATA_VALUE_CHARS} characters")
            clean[key] = value
        else:
            raise InvalidInput(f"metadata {key} must be a string, a number or a boolean (a flat mapping)")
    return clean


def memory_source(source: Any) -> str | None:
    if source is None:
        return None
    if not isinstance(source, str):
        raise InvalidInput("source must be a string")
    _no_control_characters("source", source, allow_newlines=False)
    return source.strip()[:MAX_SOURCE_CHARS] or None


def normal_project(value: Any, field: str = "project") -> str | None:
    """A project as every interface takes it: a path (normalised to its git top-level, see
    pgrecall.projects) or a name; None or "" for none."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string: a folder's absolute path or a name")
    _no_control_characters(field, value, allow_newlines=False)
    if not value.strip():
        return None
    clean = project_of(value)
    if len(clean) > MAX_PROJECT_CHARS:
        raise InvalidInput(f"{field} is longer than {MAX_PROJECT_CHARS} characters")
    return clean


def with_project(metadata: Any, project: Any) -> Any:
    """A memory's metadata with its project (normalised, see normal_project) in the front matter's
    `project` key; the metadata as given when there is no project."""
    clean = normal_project(project)
    if clean is None or (metadata is not None and not isinstance(metadata, Mapping)):
        return metadata  # memory_metadata refuses what is not a mapping
    return {**(metadata or {}), "project": clean}


def memory_id(value: Any) -> str:
    """A memory's id: 12 hexadecimal digits. Nothing else (no path) reaches the file system."""
    if not isinstance(value, str) or not MEMORY_ID.fullmatch(value.strip().lower()):
        raise NotFound(f"no memory {str(value)[:40]!r}: an id is 12 hexadecimal digits, as remember returned it")
    return value.strip().lower()


MAX_LIST = 1000
_VERSION = re.compile(r"[0-9a-f]{16}")


def memory_version(value: Any) -> str | None:
    """The version a caller read (`version` of every memory JSON), for update and forget to compare; None: any."""
    if value is None:
        return None
    if not isinstance(value, str) or not _VERSION.fullmatch(value.strip().lower()):
        raise InvalidInput(f"version {str(value)[:40]!r} must be 16 hexadecimal digits, as every memory JSON gives it")
    return value.strip().lower()


def memory_since(value: Any) -> str | None:
    """An ISO date or time, as the UTC timestamp memories carry (`2026-11-30T10:00:00Z`)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, datetime.date):
        moment = datetime.datetime.combine(value, datetime.time())
    elif isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInput(f"since must be an ISO date or time, got {value[:40]!r}") from None
    else:
        raise InvalidInput("since must be an ISO date or time")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def list_limit(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIST:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_LIST}")
    return value


# --- Searches -------------------------------------------------------------------------------------

MODES = ("hybrid", "vector", "keyword")
# A request's fusion is one of FUSIONS (from pgrecall.settings), or None: the
# PGRECALL_FUSION setting of the searcher that runs it.
DEFAULT_K = 10
MAX_K = 100  # every interface: CLI, HTTP, MCP, pgrecall.api.search()
# Searcher.search, the engine under the interfaces, allows more: the evaluation ranks 300
# chunks per query for Recall@100 (pgrecall.composition.evaluation), benchmarks sweep deeper still.
MAX_INTERNAL_K = 1000
MAX_QUERY_CHARS = 2000
MAX_FILTER_DEPTH = 32


TIME_FORMS = "an ISO date or time, today, yesterday, or an age such as 24h, 7d, 2w"
_AGE = re.compile(r"(\d{1,6})\s*(h|hours?|d|days?|w|weeks?)(\s+ago)?")
_AGE_UNITS = {"h": datetime.timedelta(hours=1), "d": datetime.timedelta(days=1), "w": datetime.timedelta(weeks=1)}


def parse_when(value: Any, field: str = "since", now: datetime.datetime | None = None) -> datetime.datetime:
    """A moment in natural form, as an aware datetime: an ISO date or time (a date is its
    midnight; without an offset, local time), `today` and `yesterday` (their midnight),
    or an age back from `now` (`24h`, `7d`, `2w`, `3 days ago`)."""
    now = (now or datetime.datetime.now()).astimezone()
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.astimezone()
    if isinstance(value, datetime.date):
        return datetime.datetime.combine(value, datetime.time()).astimezone()
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be {TIME_FORMS}")
    text = value.strip().lower()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if text == "today":
        return midnight
    if text == "yesterday":
        # The calendar day before, whatever a change of clocks did to its length.
        return datetime.datetime.combine(midnight.date() - datetime.timedelta(days=1), datetime.time()).astimezone()
    if age := _AGE.fullmatch(text):
        return now - int(age.group(1)) * _AGE_UNITS[age.group(2)[0]]
    try:
        moment = datetime.datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(f"{field} must be {TIME_FORMS}, got {value[:40]!r}") from None
    return moment if moment.tzinfo else moment.astimezone()


@dataclasses.dataclass(frozen=True)
class FilterField:
    name: str
    type: type  # str, or dict for metadata
    description: str
    example: Any


FILTERS = (
    FilterField("source_root", str, "a watched folder's absolute path", "/home/me/notes"),
    FilterField("root", str, "a watched folder's name, as given to serve/watch (memories: the memory folder)", "notes"),
    FilterField("path_prefix", str, "paths starting with this: relative to the root, or absolute", "projects/"),
    FilterField("kind", str, f"one of {', '.join(kinds.SEARCHABLE)}", "markdown"),
    FilterField(
        "metadata",
        dict,
        "front matter to match (containment; a value also matches a list holding it)",
        {"project": "apollo"},
    ),
    FilterField("modified_since", str, "ISO date or time, on the file's modification time", "2026-01-01"),
    FilterField(
        "project", str, "the project's folder (its git top-level) or name: only its documents", "/home/me/apollo"
    ),
    FilterField("since", str, f"on the document's own time: {TIME_FORMS}", "7d"),
    FilterField("before", str, f"on the document's own time, exclusive: {TIME_FORMS}", "2026-11-01"),
)
FILTER_FIELDS = tuple(field.name for field in FILTERS)


@dataclasses.dataclass(frozen=True)
class SearchRequest:
    """One search, validated: what every interface hands to Searcher.run."""

    query: str
    k: int = DEFAULT_K
    mode: str = "hybrid"
    enrich: bool = False
    filters: dict[str, Any] = dataclasses.field(default_factory=dict)
    fusion: str | None = None  # one of FUSIONS; None: the searcher's PGRECALL_FUSION
    # The project searched from: its documents rank above other projects' at equal relevance
    # (pgrecall.api.fuse.prefer_project). Not a filter: the filter is filters["project"].
    project: str | None = None
    # Hits of one document within a chunk of each other joined into one passage (pgrecall.api.passages).
    merge: bool = True
    # Only hits an arm vouches for (pgrecall.api.passages.vouched); False: every hit, as ranked.
    floor: bool = True


def search_request(
    query: Any,
    k: Any = DEFAULT_K,
    mode: Any = "hybrid",
    enrich: Any = False,
    filters: Any = None,
    fusion: Any = None,
    project: Any = None,
    merge: Any = True,
    floor: Any = True,
    *,
    max_k: int = MAX_K,
) -> SearchRequest:
    """The one validation of a search: InvalidInput (one line naming the field) or a SearchRequest."""
    if not isinstance(query, str):
        raise InvalidInput("the query must be a string")
    query = query.strip()
    if not query:
        raise InvalidInput("the query is empty")
    check_text(query, "the query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"the query is longer than {MAX_QUERY_CHARS} characters")
    if mode not in MODES:
        raise InvalidInput(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_k:
        raise InvalidInput(f"k must be an integer from 1 to {max_k}")
    for name, flag in (("enrich", enrich), ("merge", merge), ("floor", floor)):
        if not isinstance(flag, bool):
            raise InvalidInput(f"{name} must be true or false")
    if fusion == "":
        fusion = None
    if fusion is not None and fusion not in FUSIONS:
        raise InvalidInput(f"unknown fusion {fusion!r}; use one of {', '.join(FUSIONS)}")
    return SearchRequest(
        query=query,
        k=k,
        mode=mode,
        enrich=enrich,
        filters=validate_filters(filters),
        fusion=fusion,
        project=normal_project(project),
        merge=merge,
        floor=floor,
    )


def check_text(value: str, field: str) -> str:
    """Text PostgreSQL can store: no NUL character, nothing UTF-8 cannot encode."""
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain a NUL character (\\u0000)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} is not valid Unicode (an unpaired surrogate)") from None
    return value


def check_json(value: Any, field: str, depth: int = 0, top: str | None = None) -> Any:
    """A JSON value PostgreSQL's jsonb takes: finite numbers, text without NUL, bounded nesting."""
    top = top or field
    if depth > MAX_FILTER_DEPTH:
        raise InvalidInput(f"{top} is nested deeper than {MAX_FILTER_DEPTH} levels")
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{field} must hold finite numbers, not {value!r}")
        return value
    if isinstance(value, str):
        return check_text(value, field)
    if isinstance(value, list | tuple):
        return [check_json(item, f"{field}[{at}]", depth + 1, top) for at, item in enumerate(value)]
    if isinstance(value, dict):
        clean = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{field} keys must be strings, got {key!r}")
            check_text(key, f"{field} key {key!r}")
            clean[key] = check_json(item, f"{field}.{key}", depth + 1, top)
        return clean
    raise InvalidInput(f"{field} must hold JSON values, not {type(value).__name__}")


def validate_filters(filters: Any) -> dict[str, Any]:
    if not filters:
        return {}
    if not isinstance(filters, Mapping):
        raise InvalidInput("filters must be a mapping of field to value")
    unknown = sorted(str(name) for name in set(filters) - set(FILTER_FIELDS))
    if unknown:
        raise InvalidInput(f"unknown filter field {unknown[0]!r}; known: {', '.join(FILTER_FIELDS)}")
    clean: dict[str, Any] = {}
    for name, value in filters.items():
        if value is None:
            continue
        if name == "metadata":
            if not isinstance(value, dict):
                raise InvalidInput("filter metadata must be a mapping of key to value")
            value = check_json(value, "filter metadata")
        elif name == "modified_since":
            value = _parse_time(value)
        elif name in ("since", "before"):
            value = parse_when(value, f"filter {name}")
        elif name == "project":
            value = normal_project(value, "filter project")
            if value is None:
                continue
        elif not isinstance(value, str) or not value:
            raise InvalidInput(f"filter {name} must be a non-empty string")
        else:
            value = check_text(value, f"filter {name}")
            if name == "kind" and value not in kinds.SEARCHABLE:
                raise InvalidInput(f"unknown kind {value!r}; use one of {', '.join(kinds.SEARCHABLE)}")
        clean[name] = value
    if "since" in clean and "before" in clean and clean["since"] >= clean["before"]:
        raise InvalidInput("filter since must be earlier than before")
    return clean


def _parse_time(value: Any) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        parsed = value
    elif isinstance(value, datetime.date):
        parsed = datetime.datetime.combine(value, datetime.time())
    elif isinstance(value, str):
        try:
            parsed = datetime.datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"modified_since must be an ISO date or time, got {value[:40]!r}") from None
    else:
        raise InvalidInput("modified_since must be an ISO date or time")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


@dataclasses.dataclass(frozen=True)
class Hit:
    """One passage found: the same fields, in the same JSON, on every interface (to_json)."""

    chunk_id: int
    document_id: int
    source_root: str
    path: str
    kind: str
    title: str | None
    heading: str
    text: str
    snippet: str
    score: float
    ranks: dict[str, int | None]
    metadata: dict[str, Any]
    modified: datetime.datetime | None = None
    # Convex fusion: each arm's min-max normalised score (None where the arm did not find the
    # passage); None under Reciprocal Rank Fusion, which fuses ranks only.
    arm_scores: dict[str, float | None] | None = None
    project: str | None = None
    occurred_at: datetime.datetime | None = None
    # The passage's cosine similarity with the query's vector (its raw relevance, comparable
    # across queries, which the fused score is not); None when the query was not embedded.
    similarity: float | None = None
    # The chunks the passage joins, in document order (pgrecall.api.passages); chunk_id is the best of them.
    chunk_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.chunk_ids:  # a hit of one chunk
            object.__setattr__(self, "chunk_ids", (self.chunk_id,))
        elif not isinstance(self.chunk_ids, tuple):  # rebuilt from JSON (a list)
            object.__setattr__(self, "chunk_ids", tuple(self.chunk_ids))

    def to_json(self) -> dict[str, Any]:
        """The hit as JSON values: what `pgrecall search --json`, POST /search and search_memory return."""
        data = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        data["ranks"] = dict(self.ranks)
        data["chunk_ids"] = list(self.chunk_ids)
        data["arm_scores"] = dict(self.arm_scores) if self.arm_scores is not None else None
        data["modified"] = self.modified.isoformat() if self.modified else None
        data["occurred_at"] = self.occurred_at.isoformat() if self.occurred_at else None
        return data

    def to_dict(self) -> dict[str, Any]:  # the name before to_json
        return self.to_json()


HIT_FIELDS: dict[str, str] = {
    "chunk_id": "the passage's id",
    "document_id": "its document's id (GET /documents/{id}, get_document)",
    "source_root": "the absolute path of the watched folder it is in",
    "path": "the document's path, relative to source_root",
    "kind": f"one of {', '.join(kinds.SEARCHABLE)}",
    "title": "the document's title, if it has one",
    "heading": "the heading path of the passage within its document",
    "text": "the passage's full text",
    "snippet": "about 240 characters of the passage around the query's words",
    "score": "the fused score (Reciprocal Rank Fusion, or the convex combination of normalised arm scores), "
    "raised a little for a document of the project searched from (pgrecall.api.fuse.project_boost); "
    "higher is better",
    "ranks": "the passage's rank in each arm (vector, keyword), null where that arm did not find it",
    "metadata": "the document's front matter",
    "modified": "when the file was last modified (ISO 8601), if known",
    "arm_scores": "convex fusion: each arm's min-max normalised score (vector, keyword), 0 to 1, null where "
    "that arm did not find it; null under rrf",
    "project": "the document's project (a folder's git top-level, or a name), null for none",
    "occurred_at": "the document's own time (ISO 8601): a memory's creation, a conversation's last message, "
    "else the file's modification time",
    "similarity": "the passage's cosine similarity with the query (-1 to 1; comparable across queries, unlike "
    "score; of a joined passage, its best chunk's), null in keyword mode",
    "chunk_ids": "the chunks the passage joins, in document order: consecutive hits of one document (or one "
    "chunk apart) are one passage unless merge is false; chunk_id is the best ranked of them",
}


# --- Recent documents -----------------------------------------------------------------------------

DEFAULT_RECENT_DAYS = 7
MAX_RECENT_DAYS = 36600
DEFAULT_RECENT_LIMIT = 20


@dataclasses.dataclass(frozen=True)
class RecentRequest:
    since: datetime.datetime
    project: str | None = None
    kind: str | None = None
    limit: int = DEFAULT_RECENT_LIMIT


def recent_request(
    project: Any = None,
    days: Any = DEFAULT_RECENT_DAYS,
    kind: Any = None,
    limit: Any = DEFAULT_RECENT_LIMIT,
    since: Any = None,
    *,
    now: datetime.datetime | None = None,
) -> RecentRequest:
    """What `pgrecall recent`, GET /recent and recent_memories list: documents whose own time is
    within the last `days` days (or since `since`, any form parse_when takes), newest first."""
    if since is not None and since != "":
        moment = parse_when(since, "since", now=now)
    else:
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_RECENT_DAYS:
            raise InvalidInput(f"days must be an integer from 1 to {MAX_RECENT_DAYS}")
        moment = (now or datetime.datetime.now()).astimezone() - datetime.timedelta(days=days)
    if kind == "":
        kind = None
    if kind is not None and kind not in kinds.SEARCHABLE:
        raise InvalidInput(f"unknown kind {str(kind)[:40]!r}; use one of {', '.join(kinds.SEARCHABLE)}")
    return RecentRequest(since=moment, project=normal_project(project), kind=kind, limit=list_limit(limit))


def hit_json_types() -> dict[str, Any]:
    """Each field of Hit.to_json() with the type of its JSON value, for schema generators (pydantic)."""
    hints = typing.get_type_hints(Hit)
    as_json = {datetime.datetime | None: str | None, tuple[int, ...]: list[int]}
    return {name: as_json.get(hints[name], hints[name]) for name in HIT_FIELDS}
