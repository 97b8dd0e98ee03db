"""Write docs/settings.md from the settings table (pgrecall.settings.SETTINGS).

Run it after changing a setting: `.venv/bin/python docs/settings_page.py`.
tests/unit/test_settings_page.py fails while the page in the tree differs from what this renders.
"""

from __future__ import annotations

from pathlib import Path

from pgrecall.settings import SETTINGS, Setting

PAGE = Path(__file__).resolve().parent / "settings.md"

# Where the manual explains each setting at length; a setting not named here has no page of its own.
EXPLAINED_IN = {
    "PGRECALL_HOME": "memories.md",
    "PGRECALL_DATABASE_URL": "service.md#scaling-out",
    "PGRECALL_SEARCH_DATABASE_URL": "service.md#scaling-out",
    "PGRECALL_API_TOKEN": "interfaces.md#for-other-tools-http-and-mcp",
    "PGRECALL_MODEL": "models.md#models",
    "PGRECALL_WORKERS": "architecture.md",
    "PGRECALL_EMBED_BATCH": "models.md#embedding-backends",
    "PGRECALL_EMBED_BACKEND": "models.md#embedding-backends",
    "PGRECALL_MODEL_CACHE": "models.md#embedding-backends",
    "PGRECALL_MAX_FILE_BYTES": "sources-and-indexing.md#what-it-indexes",
    "PGRECALL_MAX_EXPORT_BYTES": "sources-and-indexing.md#what-it-indexes",
    "PGRECALL_CHUNK_TOKENS": "architecture.md",
    "PGRECALL_REDACT_SECRETS": "secrets.md",
    "PGRECALL_FUSION": "architecture.md",
    "PGRECALL_RRF_K": "architecture.md",
    "PGRECALL_FUSION_ALPHA": "architecture.md",
    "PGRECALL_LANGUAGES": "languages.md",
    "PGRECALL_EF_SEARCH": "search.md#the-vector-arms-effort",
    "PGRECALL_SHARED_BUFFERS": "service.md#the-embedded-servers-page-cache",
    "PGRECALL_CONFIG": "sources-and-indexing.md#sources",
    "PGRECALL_RECONCILE_SECONDS": "service.md",
    "PGRECALL_MEMORY_DUPLICATE_SIMILARITY": "memories.md",
    "PGRECALL_MEMORY_TRASH_DAYS": "memories.md",
    "PGRECALL_STALLED_SECONDS": "service.md",
    "PGRECALL_SESSION_TOOL_RESULTS": "sources-and-indexing.md#what-it-indexes",
    "PGRECALL_HOOK_PROMPT_TOKENS": "claude-code.md#the-hooks",
    "PGRECALL_HOOK_SESSION_TOKENS": "claude-code.md#the-hooks",
    "PGRECALL_HOOK_MIN_SCORE": "claude-code.md#the-hooks",
    "PGRECALL_HOOK_DEADLINE": "claude-code.md#the-hooks",
    "PGRECALL_WARM_SOCKET": "claude-code.md#the-warm-path-searches-ask-a-running-serve",
    "PGRECALL_EDITOR_COMMAND": "web-page.md",
}

HEAD = """# Settings

<!-- Written by docs/settings_page.py from the settings table in pgrecall/settings.py: edit that
table, then run `.venv/bin/python docs/settings_page.py`. -->

pgrecall reads its settings from environment variables, each declared once in the settings table
of `pgrecall/settings.py`, which also gives `pgrecall --help` its list. A value outside what a
setting accepts ends the command with one line naming the variable. The folders to follow are not
settings: they are the `[[roots]]` of the config file (see [Sources](sources-and-indexing.md#sources)).

| variable | meaning | default | accepts | explained in |
|---|---|---|---|---|
"""

TAIL = """
Example: `PGRECALL_DATABASE_URL=postgresql://me@db.local/notes pgrecall index ~/notes`
uses an existing server (with pgvector 0.8; see [Scaling out](service.md#scaling-out)); nothing
else changes. `PGRECALL_CHUNK_TOKENS=256 pgrecall index ~/notes` would re-chunk and re-embed every
file at the model's full length (the default, 128, scored higher on SciFact; see
[Retrieval quality](search.md#retrieval-quality)).
"""


def _number(value: float, real: bool) -> str:
    return str(value) if real else str(int(value))


def accepts(setting: Setting) -> str:
    """What a value of the setting may be, as `load_settings` checks it."""
    if setting.choices:
        return " or ".join(f"`{choice}`" for choice in setting.choices)
    if setting.flag:
        return "true or false (1/0, yes/no, on/off)"
    if setting.minimum is not None:
        kind = "a number" if setting.real else "an integer"
        low = _number(setting.minimum, setting.real)
        if setting.maximum is not None:
            return f"{kind} from {low} to {_number(setting.maximum, setting.real)}"
        return f"{kind}, at least {low}"
    if setting.size:
        return "a size: digits and kB, MB, GB or TB"
    if setting.path:
        return "a path"
    return "text"


def row(setting: Setting) -> str:
    default = setting.shown if setting.shown is not None else f"`{setting.default}`"
    page = EXPLAINED_IN.get(setting.variable)
    where = f"[{page.split('#')[0].removesuffix('.md')}]({page})" if page else ""
    cells = [f"`{setting.variable}`", setting.help, default, accepts(setting), where]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def render() -> str:
    return HEAD + "\n".join(row(setting) for setting in SETTINGS) + "\n" + TAIL


if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE}")
