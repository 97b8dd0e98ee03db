"""`pgrecall sources` edits the config file's [[roots]]; archive copies are private and atomic."""

from __future__ import annotations

import stat

import pytest

from pgrecall import roots
from pgrecall.cli.sources_commands import add_source, list_sources, remove_source
from pgrecall.errors import ConfigurationError, InvalidInput
from pgrecall.worker import archive

USER_CONFIG = """\
# my pgrecall set-up
[memory]
folder = "~/memories"  # synced by Syncthing

[[roots]]
name = "notes"  # the notes
path = "{notes}"
"""


@pytest.fixture
def config(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "projects").mkdir()
    path = tmp_path / "config.toml"
    path.write_text(USER_CONFIG.format(notes=tmp_path / "notes"))
    path.chmod(0o640)
    return path


def test_adding_claude_code_keeps_the_users_entries_and_comments(config, tmp_path):
    entry, added = add_source(config, "claude-code", path=str(tmp_path / "projects"))
    assert added and entry == {"name": "claude-code", "path": str(tmp_path / "projects"), "archive": True}
    text = config.read_text()
    assert text.startswith(USER_CONFIG.format(notes=tmp_path / "notes"))  # byte for byte
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert [(r.name, r.path, r.archive) for r in roots.from_config(config)] == [
        ("notes", (tmp_path / "notes").resolve(), False),
        ("claude-code", (tmp_path / "projects").resolve(), True),
    ]
    assert [e["name"] for e in list_sources(config)] == ["notes", "claude-code"]
    assert list(tmp_path.glob(".config.toml.*")) == []  # no temporary file left


def test_removing_a_source_leaves_the_rest_as_it_was(config, tmp_path):
    add_source(config, "claude-code", path=str(tmp_path / "projects"))
    remove_source(config, "claude-code")
    assert config.read_text().rstrip("\n") == USER_CONFIG.format(notes=tmp_path / "notes").rstrip("\n")
    with pytest.raises(InvalidInput, match="no root named claude-code"):
        remove_source(config, "claude-code")


def test_a_new_config_file_is_private(tmp_path):
    (tmp_path / "projects").mkdir()
    config = tmp_path / "fresh" / "config.toml"
    add_source(config, "claude-code", path=str(tmp_path / "projects"))
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert roots.from_config(config)[0].archive is True


def test_a_source_is_added_once_and_only_from_a_folder(config, tmp_path):
    add_source(config, "claude-code", path=str(tmp_path / "projects"))
    before = config.read_text()
    entry, added = add_source(config, "claude-code", path=str(tmp_path / "projects"))  # again: nothing changes
    assert (added, entry["name"], config.read_text()) == (False, "claude-code", before)
    with pytest.raises(InvalidInput, match="not a folder"):
        add_source(config, "claude-code", path=str(tmp_path / "missing"), name="other")
    with pytest.raises(InvalidInput, match="plain folder name"):
        add_source(config, "claude-code", path=str(tmp_path / "projects"), name="../up")


def test_any_folder_is_added_as_notes_beside_the_others_and_removed_by_name_or_folder(config, tmp_path):
    (tmp_path / "work docs").mkdir()
    with pytest.raises(InvalidInput, match="give the folder: pgrecall sources add notes PATH"):
        add_source(config, "notes")
    with pytest.raises(InvalidInput, match="a root named notes is already in .* give this one another with --name"):
        add_source(config, "notes", str(tmp_path / "work docs"))
    entry, added = add_source(config, "notes", str(tmp_path / "work docs"), name="work")
    assert added and entry == {"name": "work", "path": str(tmp_path / "work docs"), "archive": False}
    assert add_source(config, "notes", str(tmp_path / "work docs"))[1] is False  # the same folder: already there
    assert [(r.name, r.path, r.archive) for r in roots.from_config(config)][-1] == (
        "work",
        (tmp_path / "work docs").resolve(),
        False,
    )
    assert remove_source(config, str(tmp_path / "work docs")) == "work"  # by its folder
    assert config.read_text().rstrip("\n") == USER_CONFIG.format(notes=tmp_path / "notes").rstrip("\n")


def test_a_folder_inside_or_around_a_root_or_the_memory_folder_is_refused(config, tmp_path):
    (tmp_path / "notes" / "sub").mkdir()
    (tmp_path / "memories").mkdir()
    (tmp_path / "elsewhere").mkdir()
    before = config.read_text()
    for folder in (tmp_path / "notes" / "sub", tmp_path):
        with pytest.raises(InvalidInput, match=r"and the root notes \(.*\) are inside one another"):
            add_source(config, "notes", str(folder), name="other")
    with pytest.raises(InvalidInput, match="and the memory folder .* are inside one another"):
        add_source(config, "notes", str(tmp_path / "memories"), name="mine", memory_folder=tmp_path / "memories")
    with pytest.raises(InvalidInput, match='"memories" is the memory folder'):
        add_source(config, "notes", str(tmp_path / "elsewhere"), name="memories")
    assert config.read_text() == before


@pytest.mark.parametrize("archive_value", ['"yes"', "1"])
def test_archive_must_be_a_boolean(tmp_path, archive_value):
    config = tmp_path / "config.toml"
    config.write_text(f'[[roots]]\npath = "{tmp_path}"\narchive = {archive_value}\n')
    with pytest.raises(ConfigurationError, match="archive must be true or false"):
        roots.from_config(config)


def test_copies_are_private_atomic_and_stay_inside_the_archive(tmp_path):
    folder = tmp_path / "home" / "archive" / "claude-code"
    copy = archive.keep(folder, "-home-ada/s1/subagents/agent-1.jsonl", b'{"type": "user"}\n')
    assert copy == folder / "-home-ada" / "s1" / "subagents" / "agent-1.jsonl"
    assert copy.read_bytes() == b'{"type": "user"}\n'
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    for parent in (folder, folder / "-home-ada", folder / "-home-ada" / "s1", copy.parent):
        assert stat.S_IMODE(parent.stat().st_mode) == 0o700
    archive.keep(folder, "-home-ada/s1/subagents/agent-1.jsonl", b'{"type": "user"}\n{"type": "assistant"}\n')
    assert copy.read_bytes().count(b"\n") == 2
    assert [p.name for p in copy.parent.iterdir()] == ["agent-1.jsonl"]  # no temporary file left
    for outside in ("../escape.jsonl", "/etc/passwd", "a/../../b.jsonl", ""):
        assert archive.keep(folder, outside, b"x") is None
    assert not (tmp_path / "home" / "archive" / "escape.jsonl").exists()
    assert archive.has_copy(folder, "-home-ada/s1/subagents/agent-1.jsonl")
    assert not archive.has_copy(folder, "-home-ada/other.jsonl")
