"""Settings: plain environment variables, each documented once here and shown in --help."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import platformdirs

from pgrecall.errors import ConfigurationError

ENVIRONMENT_VARIABLES: dict[str, str] = {
    "PGRECALL_HOME": "data directory: embedded database, logs (default: the user data dir, e.g. ~/.local/share/pgrecall)",
    "PGRECALL_DATABASE_URL": "use this PostgreSQL server (with pgvector) instead of the embedded one",
    "PGRECALL_SEARCH_DATABASE_URL": "where searches read (a read replica, a read-only login); default: the database",
    "PGRECALL_API_TOKEN": "bearer token the HTTP API requires (mandatory when it listens beyond loopback)",
    "PGRECALL_MODEL": "local sentence-transformers model directory (default: the bundled all-MiniLM-L6-v2)",
    "PGRECALL_WORKERS": "jobs a worker runs concurrently; their chunks are embedded together (default: 32)",
    "PGRECALL_EMBED_BATCH": "texts per embedding batch (default: 64)",
    "PGRECALL_MAX_FILE_BYTES": "larger files are recorded as skipped without being read (default: 10485760, 10 MiB)",
    "PGRECALL_CHUNK_TOKENS": "word pieces per chunk, heading included; capped by the model's limit (default: 128)",
    "PGRECALL_RRF_K": "Reciprocal Rank Fusion constant k (default: 60)",
    "PGRECALL_EF_SEARCH": "HNSW ef_search for the vector arm (default: 200)",
    "PGRECALL_LOG_FORMAT": "console or json (default: console on a terminal, json otherwise)",
    "PGRECALL_CONFIG": "config file with named roots (default: the user config dir, e.g. ~/.config/pgrecall/config.toml)",
    "PGRECALL_RECONCILE_SECONDS": "how often serve/watch re-checks the folders against the index (default: 600)",
    "PGRECALL_STALLED_SECONDS": "a worker silent this long is presumed dead and its jobs are retried (default: 30)",
}


DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str | None
    model: str | None
    search_database_url: str | None = None
    api_token: str | None = None
    worker_concurrency: int = 32
    embed_batch_size: int = 64
    chunk_tokens: int = 128
    rrf_k: int = 60
    ef_search: int = 200
    log_format: str | None = None
    config_file: Path | None = None
    reconcile_seconds: int = 600
    stalled_seconds: int = 30
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES

    @property
    def embedded(self) -> bool:
        return self.database_url is None


def _int(env: dict[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigurationError(f"{name} must be at least {minimum}, got {value}")
    return value


def load_settings(env: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    home = env.get("PGRECALL_HOME") or platformdirs.user_data_dir("pgrecall")
    log_format = env.get("PGRECALL_LOG_FORMAT") or None
    if log_format not in (None, "console", "json"):
        raise ConfigurationError(f"PGRECALL_LOG_FORMAT must be console or json, got {log_format!r}")
    return Settings(
        home=Path(home).expanduser().resolve(),
        database_url=env.get("PGRECALL_DATABASE_URL") or None,
        model=env.get("PGRECALL_MODEL") or None,
        search_database_url=env.get("PGRECALL_SEARCH_DATABASE_URL") or None,
        api_token=env.get("PGRECALL_API_TOKEN") or None,
        worker_concurrency=_int(env, "PGRECALL_WORKERS", 32),
        embed_batch_size=_int(env, "PGRECALL_EMBED_BATCH", 64),
        chunk_tokens=_int(env, "PGRECALL_CHUNK_TOKENS", 128, minimum=32),
        rrf_k=_int(env, "PGRECALL_RRF_K", 60),
        ef_search=_int(env, "PGRECALL_EF_SEARCH", 200),
        log_format=log_format,
        config_file=Path(env.get("PGRECALL_CONFIG") or Path(platformdirs.user_config_dir("pgrecall")) / "config.toml"),
        reconcile_seconds=_int(env, "PGRECALL_RECONCILE_SECONDS", 600),
        stalled_seconds=_int(env, "PGRECALL_STALLED_SECONDS", 30, minimum=2),
        max_file_bytes=_int(env, "PGRECALL_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES),
    )
