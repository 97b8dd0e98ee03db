"""History, restore --version, export and import as a user runs them, and a change killed half-way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pgrecall.memory.notes import MemoryNotes
from pgrecall.memory.version_history import recorded_versions
from tests.support.cli import cli_env as make_env
from tests.support.cli import run_cli

FACT = "Staging runs three replicas since the March outage."
NEW_FACT = "Staging runs four replicas since the May load test."


@pytest.fixture
def env(db_url, tmp_path):
    return make_env(db_url, tmp_path / "home")


def ok(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def remember(env, text: str) -> dict:
    return json.loads(ok(run_cli("remember", text, "--json", env=env)))


def test_history_and_restore_of_a_version_on_the_command_line(env, tmp_path):
    memory = remember(env, FACT)
    ok(run_cli("update", memory["id"], "--text", NEW_FACT, env=env))
    ok(run_cli("forget", memory["id"], env=env))
    listed = ok(run_cli("memories", "history", memory["id"], env=env)).splitlines()
    assert [line.split()[:2] for line in listed] == [["1", "remember"], ["2", "update"], ["3", "forget"]]
    assert listed[0].endswith(FACT) and memory["version"] in listed[0]
    back = json.loads(ok(run_cli("restore", memory["id"], "--version", "1", "--json", env=env)))
    assert (back["id"], back["text"]) == (memory["id"], FACT)
    versions = json.loads(ok(run_cli("memories", "history", memory["id"], "--json", env=env)))
    assert [(v["n"], v["event"], v["text"]) for v in versions][-1] == (4, "restore", FACT)
    assert versions[-1]["version"] == back["version"]
    refused = run_cli("restore", memory["id"], "--version", "9", env=env)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "has no version 9" in refused.stderr
    unknown = run_cli("memories", "history", "0123456789ab", env=env)
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr


def test_export_import_round_trip_on_the_command_line(env, tmp_path):
    remember(env, FACT)
    remember(env, "Deploys go out on Tuesdays.")
    exported = tmp_path / "out" / "memories.jsonl"
    exported.parent.mkdir()
    assert ok(run_cli("memories", "export", "--output", str(exported), env=env)).startswith("exported 2 memories")
    assert (exported.stat().st_mode & 0o777) == 0o600
    assert ok(run_cli("memories", "export", env=env)) == exported.read_text(encoding="utf-8")
    again = json.loads(ok(run_cli("memories", "import", str(exported), "--json", env=env)))
    assert (again["added"], len(again["unchanged"])) == ([], 2)
    said = ok(run_cli("memories", "import", str(exported), env=env))
    assert "0 added, 2 unchanged (already there with the same text)" in said
    # Into an empty home: everything comes back, and exports the same.
    other = make_env(env["PGRECALL_DATABASE_URL"], tmp_path / "other-home")
    assert "2 added" in ok(run_cli("memories", "import", str(exported), env=other))
    assert ok(run_cli("memories", "export", env=other)) == exported.read_text(encoding="utf-8")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n", encoding="utf-8")
    failed = run_cli("memories", "import", str(broken), env=env)
    assert failed.returncode == 1 and "broken.jsonl:1: not JSON" in failed.stderr


# A change killed at a point the test chooses: the script stops right after that point, says so
# in a file, and waits for ever; the test waits for the file (not for a time), then SIGKILLs it.
KILLED_CHANGE = textwrap.dedent(
    """
    import asyncio, sys, threading
    from pathlib import Path
    from pgrecall.memory.notes import folder_of
    from pgrecall.settings import load_settings
    from pgrecall.worker.memory import files as memories
    from pgrecall.worker.memory import history_writer as memory_history
    from pgrecall.worker.memory.writer import MemoryService

    point, reached, memory_id, text = sys.argv[1:5]

    def stop_after(function):
        def stopped(*args, **kwargs):
            result = function(*args, **kwargs)
            Path(reached).write_text("reached")
            threading.Event().wait()  # until killed
            return result
        return stopped

    if point == "version":  # the version is written, the note not yet
        memory_history.record = stop_after(memory_history.record)
    else:  # the note is written, not yet indexed
        memories.write_atomically = stop_after(memories.write_atomically)

    async def main():
        settings = load_settings()
        from pgrecall.postgres.migrator import migrated_url
        async with MemoryService(settings, migrated_url(settings), folder_of(settings)) as service:
            await service.update(memory_id, text=text)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize(("point", "expected"), [("version", FACT), ("note", NEW_FACT)])
def test_a_change_killed_half_way_leaves_the_memory_old_or_new_and_the_history_consistent(
    env, tmp_path, point, expected
):
    memory = remember(env, FACT)
    reached = tmp_path / "reached"
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHANGE, point, str(reached), memory["id"], NEW_FACT],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not reached.exists():
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the change never reached its stopping point"
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
    folder = tmp_path / "home" / "memories"
    notes = MemoryNotes(folder)
    assert notes.read(memory["id"]).text == expected
    shown = json.loads(ok(run_cli("memories", "history", memory["id"], "--json", env=env)))
    assert shown[-1]["text"] == expected and shown[-1]["recorded"]
    assert [entry["event"] for entry in shown] == (["remember"] if point == "version" else ["remember", "update"])
    # The next change settles what the killed one left, and goes on from there.
    ok(run_cli("update", memory["id"], "--tag", "ops", env=env))
    recorded = recorded_versions(folder.resolve(), memory["id"])
    assert [version.event for version in recorded] == [entry["event"] for entry in shown] + ["update"]
    assert recorded[-1].content == notes.locate(memory["id"]).read_bytes()
    assert not [path for path in folder.rglob("*") if path.name.endswith(".tmp") and "history" in str(path)]


PYTHON_API = textwrap.dedent(
    """
    import json, sys
    import pgrecall.composition.memories as memories

    loaded = sorted(m for m in sys.modules if m.startswith(("pgrecall.worker", "procrastinate")))
    saved = memories.remember(sys.argv[1], tags=["ops"])
    memories.update_memory(saved.memory.id, text=sys.argv[2])
    versions = memories.memory_history(saved.memory.id)
    back = memories.restore(saved.memory.id, version=1)
    exported = memories.export_memories()
    with open(sys.argv[3], "w", encoding="utf-8") as file:
        file.writelines(json.dumps(entry) + "\\n" for entry in exported)
    memories.forget(saved.memory.id, purge=True)
    summary = memories.import_memories(sys.argv[3])
    print(json.dumps({
        "loaded_on_import": loaded,
        "versions": [[v.n, v.event, v.memory(saved.memory.id).text] for v in versions],
        "back": back.memory.text,
        "exported": exported,
        "added": summary.added,
        "after": memories.export_memories(),
    }))
    """
)


def test_the_python_api_lists_history_restores_a_version_exports_and_imports(env, tmp_path):
    exported = tmp_path / "memories.jsonl"
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", PYTHON_API, FACT, NEW_FACT, str(exported)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["loaded_on_import"] == []
    assert out["versions"] == [[1, "remember", FACT], [2, "update", NEW_FACT]]
    assert out["back"] == FACT
    [entry] = out["exported"]
    assert (entry["text"], entry["tags"]) == (FACT, ["ops"])
    assert out["added"] == [entry["id"]] and out["after"] == out["exported"]


def test_a_hand_edit_the_running_service_sees_becomes_a_version(db_url, tmp_path):
    from tests.service import Process, service_env, texts, wait_for

    env = service_env(db_url, tmp_path / "home")
    folder = tmp_path / "home" / "memories"
    service = Process(["serve"], env, tmp_path / "serve.log")
    try:
        memory = remember(env, FACT)
        note = folder / memory["path"]
        note.write_text(note.read_text(encoding="utf-8").replace("three", "seven"), encoding="utf-8")
        wait_for(lambda: "seven" in texts(db_url, memory["path"]), 60, message="the hand edit indexed")
        wait_for(
            lambda: [
                e for e in service.events() if e["event"] == "memory_edit_recorded" and e.get("id") == memory["id"]
            ],
            30,
            message="the hand edit recorded",
        )
        recorded = recorded_versions(folder.resolve(), memory["id"])
        assert [version.event for version in recorded] == ["remember", "edit"]
        assert recorded[-1].content == note.read_bytes()
        # A change through pgrecall after it goes on from the edit, which restore can bring back.
        ok(run_cli("update", memory["id"], "--text", NEW_FACT, env=env))
        ok(run_cli("restore", memory["id"], "--version", "2", env=env))
        (note,) = folder.rglob(f"*-{memory['id']}.md")  # the update renamed it after its new text
        assert "seven replicas" in note.read_text(encoding="utf-8")
        shown = json.loads(ok(run_cli("memories", "history", memory["id"], "--json", env=env)))
        assert [entry["event"] for entry in shown] == ["remember", "edit", "update", "restore"]
    finally:
        assert service.stop() == 0
