"""Zip exports read in place (worker/adapters/export_zip.py), on zips built by the tests."""

import io
import json
import random
import tracemalloc
import zipfile

import pytest

from pgrecall import kinds
from pgrecall.errors import UnsupportedFile
from pgrecall.worker import adapters
from pgrecall.worker.adapters import ParseError, export_zip
from tests.support.exports import claude_export_zip, fixture, write_zip

ORDERS_PROJECT = "8d0e6b3a-4f21-4c55-b0a7-9e3c1f2d5a10"
VACUUM_CHAT = "1b6f2c3d-7a8e-4b9c-9d0e-1f2a3b4c5d01"
SOURDOUGH_CHAT = "2c7a3d4e-8b9f-4c0d-8e1f-2a3b4c5d6e02"


def parse_zip(path, **limits):
    with open(path, "rb") as file:
        return adapters.parse_archive(path.name, file, **limits)


def by_path(parsed):
    return {d.path: d for d in parsed.documents}


def test_a_claude_export_zip_gives_its_conversations_and_projects(tmp_path):
    parsed = parse_zip(claude_export_zip(tmp_path / "data-2025-06-01-batch-0000.zip"))
    assert (parsed.kind, parsed.container) == (kinds.CLAUDE_EXPORT, True)
    documents = by_path(parsed)
    assert sorted((d.kind, d.title) for d in documents.values()) == [
        (kinds.CLAUDE_CONVERSATION, "Sourdough starter schedule"),
        (kinds.CLAUDE_CONVERSATION, "Untitled conversation"),
        (kinds.CLAUDE_CONVERSATION, "Vacuum tuning for the orders table"),
        (kinds.CLAUDE_PROJECT, "How to use Claude"),
        (kinds.CLAUDE_PROJECT, "Orders database"),
        (kinds.CLAUDE_PROJECT, "Tern releases"),
    ]
    project = documents[f"data-2025-06-01-batch-0000.zip#project:{ORDERS_PROJECT}"]
    assert [s.heading for s in project.sections] == [
        "Orders database > description",
        "Orders database > prompt template",
        "Orders database > doc runbook-wraparound.md",
    ]
    assert "VACUUM FREEZE" in project.sections[2].text
    assert project.metadata["docs"] == 1
    chat = documents[f"data-2025-06-01-batch-0000.zip#{VACUUM_CHAT}"]
    assert chat.metadata["project_uuid"] == ORDERS_PROJECT
    assert chat.metadata["project"] == "Orders database"
    [exchange] = chat.sections
    assert exchange.heading == "Vacuum tuning for the orders table"
    assert exchange.text.startswith("[4 March 2025] User: Autovacuum never keeps up")
    assert "\n\nClaude: Lower autovacuum_vacuum_scale_factor" in exchange.text
    sourdough = documents[f"data-2025-06-01-batch-0000.zip#{SOURDOUGH_CHAT}"]
    assert "project" not in sourdough.metadata
    assert "starter-log.txt" in sourdough.sections[1].heading


def test_a_renamed_project_changes_the_hash_of_its_conversations_only(tmp_path):
    before = by_path(parse_zip(claude_export_zip(tmp_path / "a.zip")))
    projects = fixture("projects.json")
    projects[0]["name"] = "Orders cluster"
    after = by_path(parse_zip(claude_export_zip(tmp_path / "a.zip", projects=projects)))
    changed = sorted(p for p in before if before[p].content_hash != after[p].content_hash)
    assert changed == sorted([f"a.zip#project:{ORDERS_PROJECT}", f"a.zip#{VACUUM_CHAT}"])


def test_the_older_format_wraps_the_conversations_in_an_object(tmp_path):
    wrapped = {"account": {"uuid": "x"}, "conversations": fixture("conversations.json")}
    from_zip = parse_zip(write_zip(tmp_path / "old.zip", {"conversations.json": wrapped}))
    assert len(from_zip.documents) == 3 and from_zip.kind == kinds.CLAUDE_EXPORT
    bare = adapters.parse("conversations.json", json.dumps(wrapped).encode())
    assert sorted(d.title for d in bare.documents) == sorted(d.title for d in from_zip.documents)


def test_a_conversation_names_its_project_as_an_object_too(tmp_path):
    conversations = fixture("conversations.json")[1:2]
    conversations[0]["project"] = {"uuid": ORDERS_PROJECT, "name": "Orders database"}
    (chat,) = [
        d
        for d in parse_zip(claude_export_zip(tmp_path / "e.zip", conversations)).documents
        if d.kind == kinds.CLAUDE_CONVERSATION
    ]
    assert chat.metadata["project"] == "Orders database"


def test_an_id_listed_twice_is_one_document_the_later_entry(tmp_path):
    conversations = fixture("conversations.json")
    twice = [conversations[1], {**conversations[1], "name": "Sourdough, revised"}]
    parsed = parse_zip(claude_export_zip(tmp_path / "d.zip", twice, projects=[]))
    assert [d.title for d in parsed.documents] == ["Sourdough, revised"]


def test_a_chatgpt_export_zip_is_told_by_its_content(tmp_path):
    path = write_zip(
        tmp_path / "chatgpt.zip",
        {"conversations.json": fixture("chatgpt/conversations.json"), "chat.html": "<html></html>", "user.json": {}},
    )
    parsed = parse_zip(path)
    assert parsed.kind == kinds.CHATGPT_EXPORT and parsed.documents
    assert {d.kind for d in parsed.documents} == {kinds.CHATGPT_CONVERSATION}


def test_an_export_folder_zipped_by_hand_is_read_too(tmp_path):
    path = write_zip(tmp_path / "mine.zip", {"data-2025/conversations.json": fixture("conversations.json")})
    assert len(parse_zip(path).documents) == 3


@pytest.mark.parametrize(
    "entries",
    [
        {"notes.txt": "hello", "photo.jpg": b"\xff\xd8\xff"},
        {"conversations.json": [{"id": 1, "text": "not a conversation"}]},
        {"conversations.json": "42"},
    ],
    ids=["no-export-files", "other-json", "scalar"],
)
def test_a_zip_that_is_no_export_is_unsupported(tmp_path, entries):
    with pytest.raises(UnsupportedFile, match="not a Claude or ChatGPT export"):
        parse_zip(write_zip(tmp_path / "other.zip", entries))


@pytest.mark.parametrize(
    "name", ["../conversations.json", "/etc/cron.d/x", "a/../../b.json", "C:\\Windows\\x.json", "..\\x"]
)
def test_a_path_traversal_entry_refuses_the_zip_and_nothing_is_written(tmp_path, name):
    path = claude_export_zip(tmp_path / "export" / "evil.zip")
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(name, "pwned")
    with pytest.raises(ParseError, match=r"^unsafe entry name .*absolute or with '\.\.'"):
        parse_zip(path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["export", "export/evil.zip"]


def test_a_zip_bomb_is_refused_by_its_compression_ratio_before_it_is_inflated(tmp_path):
    path = tmp_path / "bomb.zip"
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("conversations.json", "w") as entry,
    ):
        entry.write(b"[" + b" " * (64 * 1024 * 1024) + b"]")
    assert path.stat().st_size < 200_000
    with pytest.raises(ParseError, match=r"^zip bomb: 'conversations.json' expands \d+ times \(at most 200\)$"):
        parse_zip(path)


def test_an_export_over_the_uncompressed_limit_is_refused(tmp_path):
    path = claude_export_zip(tmp_path / "big.zip")
    with pytest.raises(ParseError, match=r"^zip unpacks to \d+ bytes, over PGRECALL_MAX_EXPORT_BYTES \(1000\)$"):
        parse_zip(path, max_bytes=1000)


def test_the_bytes_actually_inflated_are_counted_whatever_the_zip_declares():
    budget = export_zip._Budget(10, 10)
    stream = export_zip._Counted(io.BytesIO(b"x" * 25), budget)
    assert stream.read(8) == b"x" * 8
    with pytest.raises(export_zip.Refused, match="more than PGRECALL_MAX_EXPORT_BYTES"):
        stream.read(8)


def _corrupt_crc(tmp_path):
    path = claude_export_zip(tmp_path / "crc.zip")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("conversations.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 20
    data[start] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def _truncated(tmp_path):
    path = claude_export_zip(tmp_path / "cut.zip")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def _not_a_zip(tmp_path):
    path = tmp_path / "fake.zip"
    path.write_bytes(b"PK\x03\x04 this is not really a zip" * 10)
    return path


def _bad_json(tmp_path):
    return write_zip(tmp_path / "json.zip", {"conversations.json": '[{"uuid": "a", "chat_messages": [}'})


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_corrupt_crc, r"^(corrupt zip|invalid JSON in the zip): "),
        (_truncated, r"^corrupt zip: "),
        (_not_a_zip, r"^corrupt zip: File is not a zip file$"),
        (_bad_json, r"^invalid JSON in the zip: "),
    ],
    ids=["crc", "truncated", "not-a-zip", "bad-json"],
)
def test_a_corrupt_zip_is_a_parse_error_with_its_reason(tmp_path, make, reason):
    with pytest.raises(ParseError, match=reason):
        parse_zip(make(tmp_path))


def test_the_suffix_names_a_zip_an_export_read_from_its_file():
    assert adapters.kind_of("Downloads/conversations-000.ZIP") == kinds.CLAUDE_EXPORT
    assert adapters.is_archive("a/b.zip") and not adapters.is_archive("a/conversations.json")


@pytest.mark.slow
def test_a_large_conversations_json_is_streamed_not_held_whole(tmp_path):
    """20 MB of conversations, most of it tool input that is not indexed: reading them never
    holds the entry whole (json.loads would hold the bytes, the text and every object)."""
    noise = random.Random(0)
    conversations = [
        {
            "uuid": f"c-{n}",
            "name": f"Conversation {n}",
            "chat_messages": [
                {
                    "sender": "human",
                    "text": f"question {n}",
                    "content": [{"type": "tool_use", "input": {"q": noise.randbytes(5000).hex()}}],
                }
            ],
        }
        for n in range(2000)
    ]
    path = write_zip(tmp_path / "large.zip", {"conversations.json": conversations})
    with zipfile.ZipFile(path) as archive:
        size = archive.getinfo("conversations.json").file_size
    assert size > 20_000_000
    del conversations
    tracemalloc.start()
    try:
        parsed = parse_zip(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(parsed.documents) == 2000
    assert peak < size / 4, f"peak {peak} bytes while reading an entry of {size}"


def test_the_directory_check_refuses_foreign_and_hostile_zips_and_passes_a_good_one(tmp_path):
    """What the pipeline asks before hashing a zip: its directory alone, nothing inflated."""
    foreign = write_zip(tmp_path / "photos.zip", {"IMG_0001.jpg": b"\xff\xd8\xff"})
    traversal = claude_export_zip(tmp_path / "t.zip")
    with zipfile.ZipFile(traversal, "a") as archive:
        archive.writestr("../x", "pwned")
    for path, error, reason in [
        (foreign, UnsupportedFile, "not a Claude or ChatGPT export"),
        (traversal, ParseError, "^unsafe entry name"),
        (_not_a_zip(tmp_path), ParseError, "^corrupt zip"),
        (claude_export_zip(tmp_path / "big.zip"), ParseError, "^zip unpacks to"),
    ]:
        with open(path, "rb") as file, pytest.raises(error, match=reason):
            adapters.check_archive(file, max_bytes=1000 if path.name == "big.zip" else 10**9)
    with open(claude_export_zip(tmp_path / "good.zip"), "rb") as file:
        file.seek(3)
        adapters.check_archive(file)
        assert file.tell() == 3
