"""The part of the SessionEnd and PreCompact hooks that needs no database: which archive root holds
the transcript, and its copy in that root's archive (pgrecall.worker.kept_sessions)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from pgrecall.claude_integration import hooks
from pgrecall.errors import InvalidInput
from pgrecall.roots import Root
from pgrecall.settings import load_settings
from pgrecall.worker import kept_sessions

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"


@pytest.mark.parametrize(("name", "event"), [("session_end.json", "SessionEnd"), ("pre_compact.json", "PreCompact")])
def test_the_payloads_as_claude_code_sends_them(name, event):
    parsed = hooks.parse_payload((FIXTURES / name).read_text(), event)
    assert parsed.transcript_path == (
        "/home/ada/.claude/projects/-home-ada-src-orbit/0c0ffee0-1111-4222-8333-444455556666.jsonl"
    )
    assert parsed.session_id == "0c0ffee0-1111-4222-8333-444455556666"


def test_the_innermost_archive_root_holding_the_transcript_is_its_root(tmp_path):
    projects = tmp_path / ".claude" / "projects"
    configured = [
        Root("notes", tmp_path / "notes"),
        Root("claude-code", projects, archive=True),
        Root("laptop", tmp_path / "laptop" / "projects", archive=True),
    ]
    assert kept_sessions.archive_root(configured, projects / "-a" / "s.jsonl") == configured[1]
    assert kept_sessions.archive_root(configured, tmp_path / "notes" / "s.jsonl") is None  # not an archive root
    assert kept_sessions.archive_root(configured, tmp_path / "elsewhere" / "s.jsonl") is None
    assert kept_sessions.archive_root(configured, projects) is None  # the root itself is no file of it


@pytest.fixture
def settings(tmp_path):
    projects = tmp_path / "claude" / "projects"
    (projects / "-home-ada-src-orbit").mkdir(parents=True)
    config = tmp_path / "config.toml"
    config.write_text(f'[[roots]]\nname = "claude-code"\npath = "{projects}"\narchive = true\n')
    return load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_CONFIG": str(config)})


def test_the_transcript_is_copied_privately_into_its_roots_archive(settings, tmp_path):
    transcript = tmp_path / "claude" / "projects" / "-home-ada-src-orbit" / "s1.jsonl"
    transcript.write_text(json.dumps({"type": "user"}) + "\n")
    kept = kept_sessions.keep(settings, str(transcript), "SessionEnd")
    assert kept.relative == "-home-ada-src-orbit/s1.jsonl" and kept.root.name == "claude-code"
    assert kept.copy == tmp_path / "home" / "archive" / "claude-code" / "-home-ada-src-orbit" / "s1.jsonl"
    assert kept.copy.read_bytes() == transcript.read_bytes()
    assert stat.S_IMODE(kept.copy.stat().st_mode) == 0o600
    transcript.write_text(transcript.read_text() + json.dumps({"type": "assistant"}) + "\n")
    assert kept_sessions.keep(settings, str(transcript), "PreCompact").copy.read_bytes() == transcript.read_bytes()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (None, "the SessionEnd JSON has no transcript_path"),
        ("claude/projects/-home-ada-src-orbit/gone.jsonl", "not kept: no transcript at {tmp}/claude/projects/"),
        ("elsewhere/s1.jsonl", "not kept: {tmp}/elsewhere/s1.jsonl is in no archive source"),
    ],
)
def test_what_cannot_be_kept_is_one_line(settings, tmp_path, path, message):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "s1.jsonl").write_text("{}\n")
    with pytest.raises(InvalidInput) as raised:
        kept_sessions.keep(settings, str(tmp_path / path) if path else None, "SessionEnd")
    assert str(raised.value).startswith(message.format(tmp=tmp_path))
    assert not (tmp_path / "home" / "archive").exists()
