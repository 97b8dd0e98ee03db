"""Memories on the command line and through pgrecall.api, as a user runs them: real processes,
the real database and model, then the real search."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from tests.notes import write_notes
from tests.service import Process, query, service_env, texts, wait_for
from tests.support.cli import run_cli

DECISION = "We chose PostgreSQL advisory locks over Redis for the ingest queue: one less service to run."
NEW_DECISION = "The ingest queue moved to Amazon SQS in March for its managed retries and dead letters."
QUESTION = "why is there no Redis for the ingest queue?"


def pgrecall(*args, env, stdin: str | None = None):
    return run_cli(*args, env=env, input=stdin)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def folder(tmp_path):
    """The memory folder, set by the config file (relative to it)."""
    return tmp_path / "conf" / "mem"


@pytest.fixture
def cli_env(db_url, tmp_path, folder):
    config = tmp_path / "conf" / "config.toml"
    config.parent.mkdir()
    config.write_text('[memory]\nfolder = "mem"\n', encoding="utf-8")
    env = dict(os.environ)
    env.update(
        {
            "PGRECALL_DATABASE_URL": db_url,
            "PGRECALL_HOME": str(tmp_path / "home"),
            "PGRECALL_CONFIG": str(config),
            "PGRECALL_LOG_FORMAT": "json",
        }
    )
    return env


def notes_on_disk(folder) -> list:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def search(env, query, *extra) -> list[dict]:
    return json.loads(ok(pgrecall("search", query, "-k", "5", "--json", *extra, env=env)))


@pytest.mark.slow  # about 25 commands, a dozen of which load the model
def test_remember_search_update_forget_on_the_command_line(cli_env, folder, tmp_path, db_url):
    # A user's own note on the same subject, in another root: found too, unless --root memories.
    notes = write_notes(tmp_path / "notes", {"queue.md": "# Queue\n\nDashboards of the ingest queue."})
    ok(pgrecall("index", str(notes), "--json", env=cli_env))

    saved = json.loads(
        ok(
            pgrecall(
                "remember", DECISION, "--title", "Queue locking", "--tag", "architecture", "--meta", "project=apollo",
                "--meta", "priority=2", "--json", env=cli_env,
            )
        )
    )  # fmt: skip
    assert (saved["new"], saved["indexed"], saved["source"], saved["tags"]) == (True, True, "cli", ["architecture"])
    assert saved["metadata"] == {"project": "apollo", "priority": "2"}  # --meta values are strings
    assert saved["created"] == saved["updated"] and saved["created"].endswith("Z")
    note = folder / saved["path"]
    assert note.is_file() and stat.S_IMODE(note.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700

    hits = search(cli_env, QUESTION)
    assert hits[0]["path"] == saved["path"] and hits[0]["source_root"] == str(folder)
    assert any(hit["path"] == "queue.md" for hit in hits)
    only = search(cli_env, QUESTION, "--root", "memories")  # no serve ever ran: remember named the root
    assert [hit["path"] for hit in only] == [saved["path"]]
    assert search(cli_env, QUESTION, "--meta", "project=apollo")[0]["path"] == saved["path"]

    # From stdin: with "-", and with no argument at all; the same text again is the same memory.
    piped = ok(pgrecall("remember", "-", "--tag", "ops", env=cli_env, stdin="Staging runs three replicas.\n"))
    piped_id = piped.split()[1]
    assert piped.startswith(f"remembered {piped_id} {folder}/") and piped.strip().endswith(f"-{piped_id}.md")
    again = json.loads(ok(pgrecall("remember", "--json", env=cli_env, stdin="  Staging runs three replicas.")))
    assert (again["new"], again["id"]) == (False, piped_id)
    assert ok(pgrecall("remember", env=cli_env, stdin="Staging runs three replicas.")).startswith(
        f"already remembered {piped_id} "
    )

    updated = json.loads(ok(pgrecall("update", saved["id"], "--text", "-", "--json", env=cli_env, stdin=NEW_DECISION)))
    assert (updated["id"], updated["path"], updated["created"]) == (saved["id"], saved["path"], saved["created"])
    assert (updated["title"], updated["tags"], updated["new"]) == ("Queue locking", ["architecture"], False)
    hits = search(cli_env, "managed retries of the ingest queue")
    assert hits[0]["path"] == saved["path"] and "SQS" in hits[0]["text"]
    assert all("advisory locks" not in hit["text"] for hit in search(cli_env, "advisory locks over Redis"))
    ok(pgrecall("update", saved["id"], "--tag", "decisions", "--tag", "queue", env=cli_env))

    listed = json.loads(ok(pgrecall("memories", "--json", env=cli_env)))
    assert [memory["id"] for memory in listed] == [saved["id"], piped_id]  # the updated one is newer
    assert listed[0]["tags"] == ["decisions", "queue"] and listed[0]["text"] == NEW_DECISION
    assert [m["id"] for m in json.loads(ok(pgrecall("memories", "--tag", "ops", "--json", env=cli_env)))] == [piped_id]
    assert ok(pgrecall("memories", "--limit", "1", env=cli_env)).startswith(f"{saved['id']}  ")

    state = json.loads(ok(pgrecall("status", "--json", env=cli_env)))
    assert state["memories"] == {"folder": str(folder), "count": 2, "indexed": 2}
    assert "memories:   2 in " in ok(pgrecall("status", env=cli_env))

    forgotten = ok(pgrecall("forget", saved["id"], env=cli_env))
    assert forgotten.strip() == f"forgot {saved['id']} {folder}/{saved['path']}"
    assert not note.exists()
    assert all(hit["path"] != saved["path"] for hit in search(cli_env, "ingest queue SQS managed retries"))
    assert query(db_url, "SELECT count(*) FROM pgrecall.documents WHERE source_root = %s", (str(folder),)) == [(1,)]
    missing = pgrecall("forget", saved["id"], env=cli_env)
    assert (missing.returncode, missing.stderr.strip()) == (1, f"pgrecall: error: no memory {saved['id']}")
    assert (notes / "queue.md").is_file()

    # Listing reads the folder only: it works without a database.
    offline = dict(cli_env, PGRECALL_DATABASE_URL="postgresql://nobody@/nodb?host=/nonexistent")
    assert [m["id"] for m in json.loads(ok(pgrecall("memories", "--json", env=offline)))] == [piped_id]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["remember", ""], None, "text is empty"),
        (["remember", "-"], " \n\t \n", "text is empty"),
        (["remember"], None, "text is empty"),  # stdin is empty (not a terminal)
        (["remember", "-"], "a" * (64 * 1024 + 1), "text is longer than 65536 bytes"),
        (["remember", "x", "--tag", "a\nb"], None, "tag must be one line"),
        (["remember", "x", "--tag", "t" * 65], None, "tag 'tttttttttttttttttttt'… is longer than 64 characters"),
        (["remember", "x", "--meta", "project"], None, "--meta takes KEY=VALUE, got 'project'"),
        (["remember", "x", "--meta", "id=0123456789ab"], None, "metadata key 'id' is set by pgrecall itself"),
        (["remember", "x", "--title", "two\nlines"], None, "title must be one line"),
        (["forget", "0123456789ab"], None, "no memory 0123456789ab"),
        (["update", "0123456789ab", "--text", "y"], None, "no memory 0123456789ab"),
        (["update", "0123456789ab"], None, "nothing to update"),
        (["forget", "../../etc"], None, "no memory '../../etc': an id is 12 hexadecimal digits"),
        (["update", "../../etc/passwd", "--text", "y"], None, "no memory '../../etc/passwd'"),
        (["memories", "--since", "last week"], None, "since must be an ISO date or time"),
        (["memories", "--limit", "0"], None, "limit must be an integer from 1 to 1000"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(cli_env, folder, args, stdin, message):
    result = pgrecall(*args, env=cli_env, stdin=stdin)
    assert result.returncode == 1
    assert result.stderr.startswith(f"pgrecall: error: {message}"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""
    assert notes_on_disk(folder) == []


def test_a_users_note_cannot_be_forgotten_or_updated_by_its_path(cli_env, folder, tmp_path):
    own = write_notes(
        tmp_path / "notes", {"2026/11/2026-11-30-mine-0123456789ab.md": "---\nid: 0123456789ab\n---\n\nMine."}
    )
    target = own / "2026/11/2026-11-30-mine-0123456789ab.md"
    mine = json.loads(ok(pgrecall("remember", "A memory of the assistant's own.", "--json", env=cli_env)))
    link = folder / "2026" / "11" / "2026-11-30-link-0123456789ab.md"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)  # a link in the memory folder, named like a memory, to the user's note
    for args in (
        ["forget", str(target)],
        ["forget", f"../../notes/{target.name}"],
        ["forget", "0123456789ab"],  # the link's id
        ["update", "0123456789ab", "--text", "overwritten"],
    ):
        result = pgrecall(*args, env=cli_env)
        assert result.returncode == 1 and result.stderr.startswith("pgrecall: error: no memory "), result.stderr
    assert target.read_text() == "---\nid: 0123456789ab\n---\n\nMine." and link.is_symlink()
    assert [m["id"] for m in json.loads(ok(pgrecall("memories", "--json", env=cli_env)))] == [mine["id"]]


@pytest.mark.parametrize("command", ["remember", "update", "forget", "restore", "memories"])
def test_each_memory_command_has_help_with_an_example(command):
    result = run_cli(command, "--help", timeout=60)
    assert result.returncode == 0
    assert f"example: pgrecall {command}" in result.stdout


PYTHON_API = textwrap.dedent(
    """
    import json, sys
    import pgrecall.api as api
    import pgrecall.composition.memories as memories
    from pgrecall.errors import InvalidInput
    from pgrecall.memory.client import StaleVersion

    loaded = sorted(m for m in sys.modules if m.startswith(("pgrecall.worker", "procrastinate")))
    saved = memories.remember(sys.argv[1], title="Queue locking", tags=["architecture"],
                         metadata={"priority": 2, "reviewed": True, "owner": "ops"}, source="script")
    twice = memories.remember(sys.argv[1])
    first = api.search(sys.argv[3], k=1)[0]
    updated = memories.update_memory(saved.memory.id, text=sys.argv[2])
    new_hits = api.search("managed retries of the ingest queue", k=5)
    old_hits = api.search("advisory locks over Redis", k=5)
    listed = memories.list_memories(tags=["architecture"])
    forgotten = memories.forget(saved.memory.id)
    after = api.search("ingest queue SQS managed retries", k=10)
    try:
        memories.forget(saved.memory.id)
        again = "forgotten twice"
    except InvalidInput as exc:  # MemoryNotFound is one
        again = str(exc)
    trash = [memory.id for memory in memories.list_memories(forgotten=True)]
    restored = memories.restore(saved.memory.id)
    back = api.search("ingest queue SQS managed retries", k=3)[0].path
    try:
        memories.update_memory(saved.memory.id, text="Stale.", expect=saved.memory.version)
        stale = "updated from a stale version"
    except StaleVersion as exc:
        stale = str(exc)
    memories.forget(saved.memory.id, purge=True)
    print(json.dumps({
        "trash": trash,
        "restored": restored.to_json(),
        "back": back,
        "stale": stale,
        "loaded_on_import": loaded,
        "saved": saved.to_json(),
        "twice": [twice.created, twice.memory.id],
        "first": first.path,
        "updated": updated.to_json(),
        "new_first": [new_hits[0].path, new_hits[0].text],
        "old_texts": [hit.text for hit in old_hits],
        "listed": [memory.id for memory in listed],
        "forgotten": forgotten.id,
        "after": [hit.path for hit in after],
        "again": again,
        "empty": api.list_memories(),
    }))
    """
)


def test_the_python_api_remembers_updates_and_forgets_then_closes_cleanly(db_url, tmp_path):
    env = dict(os.environ, PGRECALL_DATABASE_URL=db_url, PGRECALL_HOME=str(tmp_path / "home"))
    env["PGRECALL_CONFIG"] = str(tmp_path / "absent.toml")  # the default folder: memories/ in PGRECALL_HOME
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", PYTHON_API, DECISION, NEW_DECISION, QUESTION],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # closed at exit: no warning, no "Exception ignored"
    out = json.loads(result.stdout)
    folder = tmp_path / "home" / "memories"
    saved = out["saved"]
    assert out["loaded_on_import"] == []
    assert (saved["new"], saved["indexed"], saved["source"]) == (True, True, "script")
    assert saved["metadata"] == {"priority": 2, "reviewed": True, "owner": "ops"}  # types kept
    assert out["twice"] == [False, saved["id"]]
    assert out["first"] == saved["path"]
    assert (out["updated"]["id"], out["updated"]["text"]) == (saved["id"], NEW_DECISION)
    assert out["new_first"][0] == saved["path"] and "SQS" in out["new_first"][1]
    assert all("advisory locks" not in text for text in out["old_texts"])
    assert out["listed"] == [saved["id"]] and out["forgotten"] == saved["id"]
    assert saved["path"] not in out["after"] and not (folder / saved["path"]).exists()
    assert out["again"] == f"no memory {saved['id']}" and out["empty"] == []
    assert out["trash"] == [saved["id"]] and out["back"] == saved["path"]
    assert (out["restored"]["id"], out["restored"]["text"]) == (saved["id"], NEW_DECISION)
    assert "changed since it was read" in out["stale"]
    assert list(folder.rglob("*.md")) == []  # purged: not in the folder, not in its trash


def test_serve_watches_the_memory_folder(db_url, tmp_path):
    notes = write_notes(tmp_path / "notes", {"a.md": "# A\n\nLighthouses along the northern coast."})
    env = service_env(db_url, tmp_path / "home")
    folder = tmp_path / "home" / "memories"
    service = Process(["serve", str(notes)], env, tmp_path / "serve.log")
    try:
        roots = "SELECT name, path FROM pgrecall.roots WHERE watch_mode IS NOT NULL ORDER BY name"
        wait_for(lambda: len(query(db_url, roots)) == 2, 90, message="both roots watched")
        assert query(db_url, roots) == [("memories", str(folder)), ("notes", str(notes))]

        saved = json.loads(ok(pgrecall("remember", DECISION, "--json", env=env)))
        # The watcher sees the new note; whichever of it and remember indexes second finds it unchanged.
        wait_for(
            lambda: [e for e in service.events() if e.get("path") == saved["path"] and e["event"].startswith("file_")],
            30,
            message="the watcher's job for the new memory",
        )
        note = folder / saved["path"]
        note.write_text(note.read_text().replace("Redis", "Kafka"), encoding="utf-8")  # edited by hand
        wait_for(lambda: "Kafka" in texts(db_url, saved["path"]), 30, message="the hand edit indexed")
        assert query(db_url, "SELECT count(*) FROM pgrecall.documents WHERE source_root = %s", (str(folder),)) == [(1,)]
    finally:
        assert service.stop() == 0


def test_forget_restore_purge_and_a_stale_version_on_the_command_line(cli_env, folder):
    saved = json.loads(ok(pgrecall("remember", DECISION, "--tag", "queue", "--json", env=cli_env)))
    stale = pgrecall("update", saved["id"], "--expect", "0123456789abcdef", "--text", "x", env=cli_env)
    assert stale.returncode == 1 and stale.stderr.count("\n") == 1 and "changed since it was read" in stale.stderr
    assert json.loads(ok(pgrecall("memories", "--json", env=cli_env)))[0]["text"] == DECISION

    assert ok(pgrecall("forget", saved["id"], "--expect", saved["version"], env=cli_env)).startswith(
        f"forgot {saved['id']} "
    )
    assert json.loads(ok(pgrecall("memories", "--json", env=cli_env))) == []
    trash = json.loads(ok(pgrecall("memories", "--forgotten", "--json", env=cli_env)))
    assert [(m["id"], m["text"]) for m in trash] == [(saved["id"], DECISION)] and trash[0]["forgotten"]
    assert all(hit["path"] != saved["path"] for hit in search(cli_env, QUESTION))

    restored = json.loads(ok(pgrecall("restore", saved["id"], "--json", env=cli_env)))
    assert (restored["id"], restored["path"], restored["tags"]) == (saved["id"], saved["path"], ["queue"])
    assert search(cli_env, QUESTION)[0]["path"] == saved["path"]

    assert ok(pgrecall("forget", saved["id"], "--purge", env=cli_env)).startswith(f"purged {saved['id']} ")
    again = pgrecall("restore", saved["id"], env=cli_env)
    assert again.returncode == 1 and f"no forgotten memory {saved['id']}" in again.stderr
    assert notes_on_disk(folder) == []
