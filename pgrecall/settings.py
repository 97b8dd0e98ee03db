"""Settings: plain environment variables, each declared once, in SETTINGS.

That one table gives `Settings` its defaults, tells `load_settings` how to read
and check each variable, and writes the environment part of `pgrecall --help`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs

from pgrecall.errors import ConfigurationError

# The ways hybrid search can fuse its arms (pgrecall.api.fuse): the one list every interface offers.
FUSIONS = ("rrf", "convex")


@dataclasses.dataclass(frozen=True)
class Setting:
    field: str  # the attribute of Settings
    variable: str  # the environment variable
    help: str
    default: Any = None  # the value when the variable is unset or empty
    minimum: int | None = None  # set for integer (and real) settings: the smallest value accepted
    maximum: float | None = None  # the largest value accepted, where there is one
    real: bool = False  # a number with a fraction (float) rather than an integer
    choices: tuple[str, ...] = ()  # set for settings that take one of a few words
    flag: bool = False  # on or off: true/false (also 1/0, yes/no, on/off)
    path: bool = False  # the value is a file or folder
    size: bool = False  # a PostgreSQL memory size: digits and kB, MB, GB or TB
    computed: Callable[[], Any] | None = None  # a default found when the environment is read
    shown: str | None = None  # how --help states a default that is not a plain value

    @property
    def default_text(self) -> str:
        return self.shown if self.shown is not None else str(self.default)

    @property
    def description(self) -> str:
        return f"{self.help} (default: {self.default_text})"

    def parse(self, raw: str | None) -> Any:
        if raw is None or raw == "":
            return self.computed() if self.computed else self.default
        if self.minimum is not None:
            try:
                value = float(raw) if self.real else int(raw)
            except ValueError:
                kind = "a number" if self.real else "an integer"
                raise ConfigurationError(f"{self.variable} must be {kind}, got {raw!r}") from None
            if not math.isfinite(value) or value < self.minimum:
                raise ConfigurationError(f"{self.variable} must be at least {self.minimum}, got {raw}")
            if self.maximum is not None and value > self.maximum:
                raise ConfigurationError(f"{self.variable} must be at most {self.maximum}, got {raw}")
            return value
        if self.flag:
            if raw.lower() not in _FLAG_WORDS:
                raise ConfigurationError(f"{self.variable} must be true or false, got {raw!r}")
            return _FLAG_WORDS[raw.lower()]
        if self.choices and raw not in self.choices:
            raise ConfigurationError(f"{self.variable} must be {' or '.join(self.choices)}, got {raw!r}")
        if self.path:
            return Path(raw).expanduser().resolve()
        if self.size and not _SIZE.fullmatch(raw):
            raise ConfigurationError(f"{self.variable} must be a size such as 512MB or 2GB, got {raw!r}")
        return raw


# PostgreSQL's memory units are case-sensitive (kB, MB, GB, TB); 8kB is the smallest shared_buffers.
_SIZE = re.compile(r"[1-9][0-9]*(kB|MB|GB|TB)")

_FLAG_WORDS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


def _user_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("pgrecall")).resolve()


def _memory_bytes() -> int:
    """The machine's memory, or the cgroup's limit where a container or service has a smaller one."""
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        return physical
    return min(physical, int(limit)) if limit.isdigit() else physical


def _default_shared_buffers() -> str:
    """An eighth of the memory, between PostgreSQL's 128MB and 4GB: at 1M chunks the HNSW graph
    alone is about 2GB. The server takes the memory only as pages are read into it."""
    megabytes = _memory_bytes() // 8 // 2**20
    return f"{min(max(megabytes, 128), 4096)}MB"


def _user_config_file() -> Path:
    return Path(platformdirs.user_config_dir("pgrecall")) / "config.toml"


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "home",
        "PGRECALL_HOME",
        "data directory: the embedded database and its logs, the memory folder, the ONNX files",
        path=True,
        computed=_user_data_dir,
        shown="the user data dir, e.g. ~/.local/share/pgrecall",
    ),
    Setting(
        "database_url",
        "PGRECALL_DATABASE_URL",
        "use this PostgreSQL server (with pgvector) instead of the embedded one",
        shown="the embedded server in PGRECALL_HOME",
    ),
    Setting(
        "search_database_url",
        "PGRECALL_SEARCH_DATABASE_URL",
        "where searches read (a read replica, a read-only login)",
        shown="the database, logged in as the reader role",
    ),
    Setting(
        "api_token",
        "PGRECALL_API_TOKEN",
        "bearer token the HTTP API requires (mandatory when it listens beyond loopback)",
        shown="none",
    ),
    Setting(
        "model",
        "PGRECALL_MODEL",
        "local sentence-transformers model directory, any width (its own prompts and pooling), or the name of a "
        "model `pgrecall models add` wrote into the model cache (multilingual-e5-small)",
        shown="the bundled all-MiniLM-L6-v2",
    ),
    Setting(
        "worker_concurrency",
        "PGRECALL_WORKERS",
        "jobs a worker runs concurrently; their chunks are embedded together",
        default=32,
        minimum=1,
    ),
    Setting("embed_batch_size", "PGRECALL_EMBED_BATCH", "texts per embedding batch", default=64, minimum=1),
    Setting(
        "embed_backend",
        "PGRECALL_EMBED_BACKEND",
        "how the model runs: torch, onnx (onnxruntime) or onnx-int8 (quantized); "
        "ONNX files are exported once from the local weights into PGRECALL_HOME/models",
        default="onnx-int8",
        choices=("torch", "onnx", "onnx-int8"),
    ),
    Setting(
        "model_cache",
        "PGRECALL_MODEL_CACHE",
        "folder of the ONNX files exported from the model, and of weight checksums (shared by homes that name it)",
        path=True,
        shown="PGRECALL_HOME/models",
    ),
    Setting(
        "max_file_bytes",
        "PGRECALL_MAX_FILE_BYTES",
        "files larger than this many bytes are recorded as skipped without being read",
        default=10 * 1024 * 1024,
        minimum=1,
    ),
    Setting(
        "max_export_bytes",
        "PGRECALL_MAX_EXPORT_BYTES",
        "a .zip export may unpack to at most this many bytes of conversations and projects "
        "(read in place, streamed; PGRECALL_MAX_FILE_BYTES does not apply to it)",
        default=4 * 1024 * 1024 * 1024,
        minimum=1,
    ),
    Setting(
        "chunk_tokens",
        "PGRECALL_CHUNK_TOKENS",
        "word pieces per chunk, heading included; capped by the model's limit",
        default=128,
        minimum=32,
    ),
    Setting(
        "redact_secrets",
        "PGRECALL_REDACT_SECRETS",
        "replace API keys, tokens, passwords and private keys by a marker before indexing; "
        "changing it re-indexes every file",
        default=True,
        flag=True,
        shown="true",
    ),
    Setting(
        "fusion",
        "PGRECALL_FUSION",
        "how hybrid search fuses its arms: rrf (Reciprocal Rank Fusion) or convex (normalised scores)",
        default="convex",
        choices=FUSIONS,
    ),
    Setting("rrf_k", "PGRECALL_RRF_K", "Reciprocal Rank Fusion constant k", default=60, minimum=1),
    Setting(
        "fusion_alpha",
        "PGRECALL_FUSION_ALPHA",
        "convex fusion: the vector arm's weight, 0 to 1 (the keyword arm's is 1 - alpha)",
        default=0.5,
        minimum=0,
        maximum=1,
        real=True,
    ),
    Setting(
        "languages",
        "PGRECALL_LANGUAGES",
        "the languages a document is detected among (ISO 639-1 codes, comma-separated); its keyword postings "
        "use that language's stemming and stop words, unsure text `simple`; a front-matter lang: overrides",
        default="en,de",
    ),
    Setting(
        "ef_search",
        "PGRECALL_EF_SEARCH",
        "HNSW ef_search for every vector search; unset, each search reads as much of the graph as the size of "
        "the space it searches and its filters need for recall@10 >= 0.95, or ranks exactly where that is cheaper",
        minimum=1,
        shown="chosen per search: 100 to 400, or exact",
    ),
    Setting(
        "shared_buffers",
        "PGRECALL_SHARED_BUFFERS",
        "the embedded server's shared_buffers, its own page cache, set at each start (512MB, 2GB); memory is "
        "taken as pages are read, up to this",
        size=True,
        computed=_default_shared_buffers,
        shown="an eighth of the memory, 128MB to 4GB",
    ),
    Setting(
        "log_format",
        "PGRECALL_LOG_FORMAT",
        "console or json",
        choices=("console", "json"),
        shown="console on a terminal, json otherwise",
    ),
    Setting(
        "config_file",
        "PGRECALL_CONFIG",
        "config file with named roots",
        path=True,
        computed=_user_config_file,
        shown="the user config dir, e.g. ~/.config/pgrecall/config.toml",
    ),
    Setting(
        "reconcile_seconds",
        "PGRECALL_RECONCILE_SECONDS",
        "how often serve/watch re-checks the folders against the index",
        default=600,
        minimum=1,
    ),
    Setting(
        "memory_duplicate_similarity",
        "PGRECALL_MEMORY_DUPLICATE_SIMILARITY",
        "remember refuses a text whose cosine similarity with a memory is at least this (and that shares a rare "
        "term with it) as a near-duplicate, unless forced (chosen on pairs: bench/duplicate_threshold.py); 1: only "
        "near-identical texts; multilingual-e5-small's own default is 0.9",
        default=0.75,
        minimum=0,
        maximum=1,
        real=True,
    ),
    Setting(
        "memory_trash_days",
        "PGRECALL_MEMORY_TRASH_DAYS",
        "a forgotten memory stays this many days in the trash (restore brings it back), then serve/watch purge it",
        default=30,
        minimum=0,
    ),
    Setting(
        "stalled_seconds",
        "PGRECALL_STALLED_SECONDS",
        "a worker silent this long is presumed dead and its jobs are retried",
        default=30,
        minimum=2,
    ),
    Setting(
        "session_tool_results",
        "PGRECALL_SESSION_TOOL_RESULTS",
        "index the tool results of Claude Code sessions too",
        default="off",
        choices=("off", "on"),
    ),
    Setting(
        "hook_prompt_tokens",
        "PGRECALL_HOOK_PROMPT_TOKENS",
        "`pgrecall hook prompt`: at most this many tokens (4 characters each) added to a prompt",
        default=800,
        minimum=50,
    ),
    Setting(
        "hook_session_tokens",
        "PGRECALL_HOOK_SESSION_TOKENS",
        "`pgrecall hook session-start`: at most this many tokens (4 characters each) in the briefing",
        default=600,
        minimum=50,
    ),
    Setting(
        "hook_min_score",
        "PGRECALL_HOOK_MIN_SCORE",
        "`pgrecall hook prompt` adds only passages whose cosine similarity with the prompt is at least this, "
        "or that hold an identifier the prompt names (chosen on SciFact: bench/hook_threshold.py); "
        "multilingual-e5-small's own default is 0.86",
        default=0.47,
        minimum=-1,
        maximum=1,
        real=True,
    ),
    Setting(
        "hook_inject",
        "PGRECALL_HOOK_INJECT",
        "the Claude Code hooks add what pgrecall knows; off: they add nothing (a project: a .pgrecall-off "
        "file; a session: the prompt /pgrecall-off)",
        default=True,
        flag=True,
    ),
    Setting(
        "hook_deadline",
        "PGRECALL_HOOK_DEADLINE",
        "seconds after which a hook gives up and adds nothing (counted from the process's start)",
        default=1.5,
        minimum=0.1,
        real=True,
    ),
    Setting(
        "warm_socket",
        "PGRECALL_WARM_SOCKET",
        "the Unix socket on which serve answers searches with its loaded model (searches, hooks and mcp "
        "ask it first); a path, or off",
        shown="PGRECALL_HOME/search.sock",
    ),
    Setting(
        "editor_command",
        "PGRECALL_EDITOR_COMMAND",
        'the web page\'s document view gets an "Open in editor" button that runs this command, split like a '
        "shell line (never run by one), {path} and {line} replaced: code --goto {path}:{line}, xdg-open {path}",
        shown="none: the page links the file (file://)",
    ),
)

_BY_FIELD = {setting.field: setting for setting in SETTINGS}

# What `pgrecall --help` prints under "environment:", variable -> text with its default.
ENVIRONMENT_VARIABLES: dict[str, str] = {setting.variable: setting.description for setting in SETTINGS}


def default(field: str) -> Any:
    """The default of one setting, for code that takes it as a parameter's default."""
    return _BY_FIELD[field].default


DEFAULT_MAX_FILE_BYTES: int = default("max_file_bytes")


def _defaults_from_table(cls: type) -> type:
    """Give each field of `cls` its default from SETTINGS; a computed one (home, config
    file) has none, and is always given by load_settings."""
    fields = set(cls.__annotations__)
    if fields != set(_BY_FIELD):
        raise RuntimeError(f"Settings and SETTINGS disagree on {sorted(fields ^ set(_BY_FIELD))}")
    for setting in SETTINGS:
        if setting.computed is None:
            setattr(cls, setting.field, setting.default)
    return cls


@dataclasses.dataclass(frozen=True, kw_only=True)
@_defaults_from_table
class Settings:
    home: Path
    database_url: str | None
    search_database_url: str | None
    api_token: str | None
    model: str | None
    worker_concurrency: int
    embed_batch_size: int
    embed_backend: str
    model_cache: Path | None
    max_file_bytes: int
    max_export_bytes: int
    chunk_tokens: int
    redact_secrets: bool
    fusion: str
    rrf_k: int
    fusion_alpha: float
    languages: str
    ef_search: int | None
    shared_buffers: str
    log_format: str | None
    config_file: Path
    reconcile_seconds: int
    memory_duplicate_similarity: float
    memory_trash_days: int
    stalled_seconds: int
    session_tool_results: str
    hook_prompt_tokens: int
    hook_session_tokens: int
    hook_min_score: float
    hook_inject: bool
    hook_deadline: float
    warm_socket: str | None
    editor_command: str | None

    @property
    def embedded(self) -> bool:
        return self.database_url is None


# Cosine thresholds belong to a model: multilingual-e5-small puts unrelated texts near 0.8, where the
# bundled model puts them near 0.1, so the defaults above (the bundled model's) would let every hit
# through. A model named here takes its own unless the variable is set. Chosen the same way as the
# bundled model's: bench/hook_threshold.py and bench/duplicate_threshold.py run with the model.
MODEL_THRESHOLDS: dict[str, dict[str, float]] = {
    "multilingual-e5-small": {"hook_min_score": 0.86, "memory_duplicate_similarity": 0.9},
}


def load_settings(env: dict[str, str] | None = None) -> Settings:
    """Settings from `env` (default: the process environment); ConfigurationError names a bad variable."""
    env = dict(os.environ if env is None else env)
    values = {setting.field: setting.parse(env.get(setting.variable)) for setting in SETTINGS}
    variables = {setting.field: setting.variable for setting in SETTINGS}
    for field, value in MODEL_THRESHOLDS.get(values["model"] or "", {}).items():
        if not env.get(variables[field]):
            values[field] = value
    return Settings(**values)
