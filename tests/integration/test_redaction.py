"""Secrets stay out of the index: a note, a claude.ai export, a ChatGPT export and a Claude Code
session, each holding one fake secret of every shape (tests/support/secrets.py), are indexed
through the real queue and workers; no search in any mode, no row of the index and no log
line holds any part of a secret, while the files on disk keep them."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
from pathlib import Path

import structlog

from pgrecall import status
from pgrecall.postgres import database
from pgrecall.worker.run import run_index
from tests.notes import conversation, write_export, write_notes
from tests.support.secrets import Planted, planted
from tests.support.statistics import rows

SESSION_ID = "0b7c4d2e-9a1f-4c3b-8e5d-6f7a8b9c0d1e"
NOTE = "notes/deploy.md"
CLAUDE = "exports/claude/conversations.json"
CHATGPT = "exports/chatgpt/conversations.json"
SESSION = f"projects/-home-ada-src-shop/{SESSION_ID}.jsonl"
CLAUDE_ID = "c1a2b3c4-0000-4000-8000-000000000001"
CHATGPT_ID = "6850a3f2-1c44-800b-9d1e-4b0c2e7f1a99"
# The document each file is indexed as (an export's conversation is a document of its own).
DOCUMENTS = {NOTE: NOTE, CLAUDE: f"{CLAUDE}#{CLAUDE_ID}", CHATGPT: f"{CHATGPT}#{CHATGPT_ID}", SESSION: SESSION}


def _note(secrets: list[Planted]) -> str:
    # A password in the front matter: a metadata value, a secret by its key.
    front, *body = secrets
    assert front.kind == "openai api key"
    paragraphs = "\n\n".join(f"Step {n}: {s.line}" for n, s in enumerate(body))
    return f"---\nopenai_key: {front.secret}\nproject: apollo\n---\n# Deploy notes\n\n{paragraphs}\n"


def _chatgpt(secrets: list[Planted]) -> list[dict]:
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["m0"]}}
    for n, secret in enumerate(secrets):
        mapping[f"m{n}"] = {
            "id": f"m{n}",
            "message": {
                "id": f"m{n}",
                "author": {"role": "user" if n % 2 == 0 else "assistant"},
                "content": {"content_type": "text", "parts": [f"About the rollout: {secret.line}"]},
                "recipient": "all",
            },
            "parent": "root" if n == 0 else f"m{n - 1}",
            "children": [f"m{n + 1}"] if n + 1 < len(secrets) else [],
        }
    return [
        {
            "id": CHATGPT_ID,
            "title": "Rollout checklist",
            "create_time": 1749968338.0,
            "update_time": 1749969238.0,
            "mapping": mapping,
            "current_node": f"m{len(secrets) - 1}",
        }
    ]


def _session(secrets: list[Planted]) -> str:
    records = [{"type": "summary", "summary": "Shop deployment keys", "leafUuid": f"{SESSION_ID[:-4]}0000"}]
    for n, secret in enumerate(secrets):
        role = "user" if n % 2 == 0 else "assistant"
        records.append(
            {
                "parentUuid": None,
                "isSidechain": False,
                "type": role,
                "uuid": f"{SESSION_ID[:-4]}{n:04d}",
                "sessionId": SESSION_ID,
                "cwd": "/home/ada/src/shop",
                "timestamp": f"2025-11-19T22:{n:02d}:00.000Z",
                "message": {"role": role, "content": [{"type": "text", "text": f"Found this: {secret.line}"}]},
            }
        )
    return "\n".join(json.dumps(record) for record in records) + "\n"


def _write_files(root: Path) -> dict[str, list[Planted]]:
    """The four files, each with secrets of its own; path -> its secrets."""
    secrets = {path: planted(seed) for seed, path in enumerate(DOCUMENTS, start=1)}
    write_notes(root, {NOTE: _note(secrets[NOTE]), SESSION: _session(secrets[SESSION])})
    turns = [("human" if n % 2 == 0 else "assistant", f"Keys: {s.line}") for n, s in enumerate(secrets[CLAUDE][1:])]
    attachment = secrets[CLAUDE][0]  # the text of a file attached to the first message
    write_export(root / CLAUDE, [conversation(CLAUDE_ID, "Rotating keys", turns, attachment=attachment.line)])
    write_export(root / CHATGPT, _chatgpt(secrets[CHATGPT]))
    return secrets


def _index(settings, db_url, root: Path):
    return asyncio.run(run_index(settings, db_url, [str(root)]))


def _index_contents(db_url: str) -> str:
    """Every text the index holds: chunks, headings, titles, metadata, paths and keyword terms."""
    texts = rows(db_url, "SELECT heading || ' ' || text FROM pgrecall.chunks")
    texts += rows(db_url, "SELECT path || ' ' || coalesce(title, '') || ' ' || metadata::text FROM pgrecall.documents")
    texts += rows(db_url, "SELECT DISTINCT term FROM pgrecall.postings")
    return "\n".join(text for (text,) in texts)


def _leaked(text: str, secrets: list[Planted]) -> list[str]:
    lowered = text.lower()  # keyword terms are lower case
    return [part for secret in secrets for part in secret.parts if part.lower() in lowered]


def test_no_search_row_or_log_line_holds_a_secret_and_the_files_keep_them(settings, db_url, searcher, tmp_path):
    root = tmp_path / "notes"
    secrets = _write_files(root)
    every_secret = [secret for planted_here in secrets.values() for secret in planted_here]
    on_disk = {path: (root / path).read_bytes() for path in DOCUMENTS}
    with structlog.testing.capture_logs() as logs:
        summary = _index(settings, db_url, root)
    assert summary.statuses == {"indexed": 4}

    assert _leaked(_index_contents(db_url), every_secret) == []
    queries = [part for secret in every_secret for part in secret.parts]
    assert len(queries) > 200
    for mode in ("keyword", "vector", "hybrid"):
        for query in queries:
            hits = searcher.search(query, k=20, mode=mode)
            assert _leaked(json.dumps([hit.to_json() for hit in hits]), every_secret) == [], (mode, query)
    # Searches do find the documents, by their markers.
    hits = searcher.search("redacted github token", k=20, mode="keyword")
    assert {hit.path for hit in hits} == set(DOCUMENTS.values())

    for path, document_path in DOCUMENTS.items():
        document = searcher.get_document(document_path)
        shown = document.text + json.dumps(document.metadata) + (document.title or "")
        assert _leaked(shown, every_secret) == []
        assert all(f"[redacted: {secret.kind}]" in shown for secret in secrets[path])
        assert (root / path).read_bytes() == on_disk[path]  # the file on disk is untouched
    assert searcher.get_document(NOTE).metadata == {"openai_key": "[redacted: openai api key]", "project": "apollo"}

    # Each document counts its secrets by kind; status adds them up.
    by_document = dict(rows(db_url, "SELECT path, redactions FROM pgrecall.documents WHERE redactions <> '{}'"))
    assert by_document == {
        DOCUMENTS[path]: dict(collections.Counter(s.kind for s in planted_here))
        for path, planted_here in secrets.items()
    }
    with database.connect(db_url) as conn:
        redactions = status.report(conn, settings)["redactions"]
    assert redactions == {
        "secrets": len(every_secret),
        "documents": 4,
        "by_kind": dict(sorted(collections.Counter(s.kind for s in every_secret).items())),
    }

    # The log names kinds and counts, never a secret.
    events = [event for event in logs if event["event"] == "secrets_redacted"]
    assert sorted(event["path"] for event in events) == sorted(DOCUMENTS.values())
    assert {event["count"] for event in events} == {len(planted(1))}
    assert _leaked(repr(logs), every_secret) == []


def test_with_redaction_off_secrets_are_indexed_as_they_are_and_turning_it_on_again_reindexes(
    settings, db_url, searcher, tmp_path
):
    root = tmp_path / "notes"
    secrets = _write_files(root)
    every_secret = [secret for planted_here in secrets.values() for secret in planted_here]
    github = next(s for s in secrets[NOTE] if s.kind == "github token").secret

    off = dataclasses.replace(settings, redact_secrets=False)
    assert _index(off, db_url, root).statuses == {"indexed": 4}
    assert [hit.path for hit in searcher.search(github, k=1, mode="keyword")] == [NOTE]
    assert len(_leaked(_index_contents(db_url), every_secret)) > len(every_secret)
    with database.connect(db_url) as conn:
        assert status.report(conn, off)["redactions"] == {"secrets": 0, "documents": 0, "by_kind": {}}
    assert _index(off, db_url, root).statuses == {"unchanged": 4}

    assert _index(settings, db_url, root).statuses == {"indexed": 4}  # on again: every file again
    assert _leaked(_index_contents(db_url), every_secret) == []
    assert all(github not in hit.text for hit in searcher.search(github, k=20, mode="hybrid"))
    with database.connect(db_url) as conn:
        assert status.report(conn, settings)["redactions"]["secrets"] == len(every_secret)
    assert _index(settings, db_url, root).statuses == {"unchanged": 4}
