"""A claude.ai export zip through the real queue, workers, model and database."""

import asyncio
import json
import zipfile

import pytest

from pgrecall.settings import load_settings
from pgrecall.worker.run import run_index
from tests.support.exports import claude_export_zip, fixture, write_zip
from tests.support.statistics import assert_statistics_consistent, rows

ORDERS_PROJECT = "8d0e6b3a-4f21-4c55-b0a7-9e3c1f2d5a10"
SOURDOUGH_CHAT = "2c7a3d4e-8b9f-4c0d-8e1f-2a3b4c5d6e02"


def test_a_zip_export_is_searchable_and_reindexed_only_where_it_grew(index, db_url, searcher, tmp_path):
    export = claude_export_zip(tmp_path / "downloads" / "conversations-000.zip")
    summary = index(export)
    assert summary.statuses == {"indexed": 1}
    docs = rows(db_url, "SELECT kind, count(*) FROM pgrecall.documents GROUP BY kind ORDER BY kind")
    assert docs == [("claude_conversation", 3), ("claude_export", 1), ("claude_project", 3)]

    hit = searcher.search("wraparound runbook datfrozenxid", k=1, filters={"kind": "claude_project"})[0]
    assert hit.path == f"conversations-000.zip#project:{ORDERS_PROJECT}"
    assert hit.title == "Orders database"
    hit = searcher.search("how often to feed a rye starter in the fridge", k=1)[0]
    assert hit.path == f"conversations-000.zip#{SOURDOUGH_CHAT}"
    linked = searcher.search(
        "autovacuum scale factor orders table", k=1, filters={"metadata": {"project": "Orders database"}}
    )
    assert [h.kind for h in linked] == ["claude_conversation"]

    again = index(export)
    assert again.statuses == {"unchanged": 1}
    assert (again.chunks, again.embed_calls) == (0, 0)

    conversations = fixture("conversations.json")
    conversations.append(
        {
            "uuid": "4e9c5f60-0d1b-4e2f-8a3b-4c5d6e7f8a04",
            "name": "Kayak rolling drills",
            "chat_messages": [{"sender": "human", "text": "Which drills help a C-to-C kayak roll?", "content": []}],
        }
    )
    claude_export_zip(export, conversations)
    grown = index(export)
    assert grown.statuses == {"indexed": 1}
    assert grown.chunks == 1  # the new conversation alone
    assert searcher.search("kayak roll drills", k=1)[0].title == "Kayak rolling drills"
    assert_statistics_consistent(db_url)


def test_shards_of_one_export_are_containers_of_their_own(index, db_url, tmp_path):
    conversations, projects = fixture("conversations.json"), fixture("projects.json")
    folder = tmp_path / "export"
    claude_export_zip(folder / "conversations-000.zip", conversations[:2], projects)
    claude_export_zip(folder / "conversations-001.zip", conversations[2:], [])
    assert index(folder).statuses == {"indexed": 2}
    assert rows(
        db_url,
        "SELECT p.path, count(c.id) FROM pgrecall.documents p JOIN pgrecall.documents c ON c.parent_id = p.id "
        "GROUP BY p.path ORDER BY p.path",
    ) == [("conversations-000.zip", 5), ("conversations-001.zip", 1)]


def test_hostile_and_foreign_zips_are_recorded_with_a_reason_and_nothing_is_unpacked(db_url, tmp_path):
    folder = tmp_path / "downloads"
    traversal = claude_export_zip(folder / "traversal.zip")
    with zipfile.ZipFile(traversal, "a") as archive:
        archive.writestr("../../escaped.txt", "pwned")
    with zipfile.ZipFile(folder / "bomb.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", b"[" + b" " * (32 * 1024 * 1024) + b"]")
    (folder / "corrupt.zip").write_bytes(claude_export_zip(tmp_path / "whole.zip").read_bytes()[:700])
    write_zip(folder / "photos.zip", {"IMG_0001.jpg": b"\xff\xd8\xff\xe0"})
    claude_export_zip(folder / "export.zip")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    # The good export is larger than PGRECALL_MAX_FILE_BYTES here: zips are bounded by what they unpack to.
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_MAX_FILE_BYTES": "100"})
    summary = asyncio.run(run_index(settings, db_url, [str(folder)]))
    assert summary.statuses == {"indexed": 1, "failed": 3, "skipped": 1}
    assert sorted(p.name for p in tmp_path.rglob("*") if "home" not in p.parts) == sorted(
        p for p in before if p != "home"
    )
    errors = dict(rows(db_url, "SELECT path, error FROM pgrecall.documents WHERE error IS NOT NULL"))
    assert errors["traversal.zip"] == "unsafe entry name '../../escaped.txt' (absolute or with '..')"
    assert errors["bomb.zip"].startswith("zip bomb: 'conversations.json' expands ")
    assert errors["corrupt.zip"].startswith("corrupt zip: ")
    assert (
        errors["photos.zip"]
        == "zip file that is not a Claude or ChatGPT export (no conversations.json or projects.json)"
    )
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents WHERE path LIKE 'export.zip#%%'") == [(6,)]


def _conversation(n: int) -> dict:
    topic = ["postgres replication", "garden beds", "rust borrow checker", "bread baking", "tax forms"][n % 5]
    return {
        "uuid": f"0000{n:04d}-aaaa-4bbb-8ccc-{n:012d}",
        "name": f"{topic.title()} question {n}",
        "created_at": "2025-06-01T10:00:00Z",
        "chat_messages": [
            {"sender": "human", "text": "", "content": [{"type": "text", "text": f"Question {n} about {topic}?"}]},
            {
                "sender": "assistant",
                "text": "",
                "content": [{"type": "text", "text": f"Answer {n}: " + f"a detail of {topic} number {n}. " * 12}],
            },
        ],
    }


@pytest.mark.slow
def test_a_zip_of_hundreds_of_conversations_matches_its_bare_json_and_grows_in_place(index, db_url, tmp_path):
    conversations = [_conversation(n) for n in range(150)]
    export = claude_export_zip(tmp_path / "zip" / "conversations-000.zip", conversations, [])
    bare = tmp_path / "bare" / "conversations.json"
    bare.parent.mkdir()
    bare.write_text(json.dumps(conversations), encoding="utf-8")
    first = index(export, bare)
    assert first.statuses == {"indexed": 2}
    per_file = rows(
        db_url,
        "SELECT p.path, count(c.id), sum(c.chunk_count) FROM pgrecall.documents p "
        "JOIN pgrecall.documents c ON c.parent_id = p.id GROUP BY p.path ORDER BY p.path",
    )
    assert len(per_file) == 2 and per_file[0][1:] == per_file[1][1:] and per_file[0][1] == 150

    chunk_ids = "SELECT d.path, array_agg(c.id ORDER BY c.id) FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id WHERE d.path LIKE 'conversations-000.zip#%%' GROUP BY d.path"
    before = dict(rows(db_url, chunk_ids))
    conversations[7]["chat_messages"].append({"sender": "human", "text": "One more thing about vacuum."})
    conversations.append(_conversation(150))
    claude_export_zip(export, conversations, [])
    grown = index(export)
    assert grown.statuses == {"indexed": 1}
    after = dict(rows(db_url, chunk_ids))
    edited, new = (f"conversations-000.zip#{conversations[n]['uuid']}" for n in (7, 150))
    assert set(after) == set(before) | {new}
    assert all(after[path] == ids for path, ids in before.items() if path != edited)  # untouched, not rewritten
    assert 0 < grown.chunks <= len(after[edited]) + len(after[new])
    assert_statistics_consistent(db_url)
