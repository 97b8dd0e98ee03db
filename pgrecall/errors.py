"""One base exception; each subclass's docstring is its default message."""

from __future__ import annotations


class PgRecallError(Exception):
    """pgrecall failed."""

    def __init__(self, message: str | None = None):
        super().__init__(message or (self.__doc__ or "").strip())


class ConfigurationError(PgRecallError):
    """Invalid setting."""


class DatabaseUnavailable(PgRecallError):
    """The database cannot be reached."""


class MigrationError(PgRecallError):
    """The database schema cannot be migrated."""


class ModelUnavailable(PgRecallError):
    """The embedding model cannot be loaded from local files."""


class UnsupportedFile(PgRecallError):
    """This kind of file is not indexed."""


class InvalidInput(PgRecallError):
    """Invalid input."""


class EmbeddingSpaceMismatch(PgRecallError):
    """The index's vectors are of another embedding space than this search's query embedder."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, else its type's name: what a one-line error shows."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def reason(exc: BaseException) -> str:
    """One line: our errors' message as it is, others' with their type in front."""
    if isinstance(exc, PgRecallError):
        return first_line(exc)
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
