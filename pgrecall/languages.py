"""Languages as the index knows them: PostgreSQL text search configurations (issue 21).

A document's language is the configuration its keyword postings were analysed with
(pgrecall.worker.language detects it); the search side analyses a query with those of the
indexed languages, and fusion asks which of them the embedding model covers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pgrecall.errors import ConfigurationError

SIMPLE = "simple"
# ISO 639-1 code -> PostgreSQL's Snowball text search configuration (`SELECT cfgname FROM pg_ts_config`).
CONFIGURATIONS = {
    "ar": "arabic",
    "ca": "catalan",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "es": "spanish",
    "eu": "basque",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hi": "hindi",
    "hu": "hungarian",
    "hy": "armenian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
_BY_NAME = {name: code for code, name in CONFIGURATIONS.items()}
# Our users write German beside English; a detector choosing among few languages errs
# less on short notes than one choosing among a hundred (bench/language_detectors.py, git tag bench-experiments-2026-12).
DEFAULT_LANGUAGES = ("en", "de")


def parse_languages(value: str | Iterable[str]) -> tuple[str, ...]:
    """PGRECALL_LANGUAGES ("en,de") as ISO codes; ConfigurationError for a language without a configuration."""
    items = value.split(",") if isinstance(value, str) else list(value)
    codes = []
    for item in (i.strip().lower() for i in items):
        if not item:
            continue
        code = _BY_NAME.get(item, item)
        if code not in CONFIGURATIONS:
            known = ", ".join(sorted(CONFIGURATIONS))
            raise ConfigurationError(f"PGRECALL_LANGUAGES: no text search configuration for {item!r} (known: {known})")
        if code not in codes:
            codes.append(code)
    if not codes:
        raise ConfigurationError("PGRECALL_LANGUAGES names no language")
    return tuple(codes)


def configuration_of(value: Any) -> str | None:
    """The configuration a front matter's lang:/language: names ("de", "de-AT", "German"), else None."""
    if not isinstance(value, str):
        return None
    item = value.strip().lower().replace("_", "-")
    if item == SIMPLE:
        return SIMPLE
    if item in _BY_NAME:
        return item
    return CONFIGURATIONS.get(item.split("-", 1)[0])


def model_card_languages(model_path: Path) -> frozenset[str] | None:
    """The configurations of the languages a model's card (README.md's YAML front matter,
    `language:`) names; None when it has no card, names none or says multilingual (then
    every language counts as covered)."""
    import yaml

    try:
        text = (model_path / "README.md").read_text(encoding="utf-8")
    except OSError:
        return None
    if not text.startswith("---"):
        return None
    try:
        front = yaml.safe_load(text[3 : text.find("\n---", 3)])
    except yaml.YAMLError:
        return None
    named = front.get("language") if isinstance(front, dict) else None
    codes = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    if any(str(code).lower() == "multilingual" for code in codes):
        return None
    covered = {configuration_of(code) for code in codes} - {None}
    return frozenset(covered) or None
