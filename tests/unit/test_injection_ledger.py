"""The hooks' records and switches as files: one line per run, sessions switched off, projects switched off."""

from __future__ import annotations

import json
import os

from pgrecall.claude_integration import injection_ledger


def test_records_are_appended_one_line_each_and_read_back(tmp_path):
    folder = tmp_path / "injections"
    for n in (1, 2):
        injection_ledger.append(folder, {"session_id": "s-1", "event": "prompt", "n": n})
    injection_ledger.append(folder, {"session_id": "s-2", "event": "session-start"})
    assert injection_ledger.prompt_count(folder, "s-1") == 2 and injection_ledger.prompt_count(folder, "s-2") == 0
    assert sorted(r.get("n", 0) for r in injection_ledger.records(folder)) == [0, 1, 2]
    assert oct(os.stat(folder / "s-1.jsonl").st_mode & 0o777) == "0o600"


def test_a_line_cut_short_is_skipped(tmp_path):
    folder = tmp_path / "injections"
    injection_ledger.append(folder, {"session_id": "s-1", "event": "prompt"})
    with (folder / "s-1.jsonl").open("a") as file:
        file.write('{"session_id": "s-1", "ev')
    assert len(list(injection_ledger.records(folder))) == 1


def test_a_session_id_never_reaches_outside_the_folder(tmp_path):
    folder = tmp_path / "injections"
    path = injection_ledger.session_file(folder, "../../etc/x")
    assert path.parent == folder and path.name.startswith("id-")
    injection_ledger.append(folder, {"session_id": "../../etc/x", "event": "prompt"})
    assert json.loads(path.read_text())["session_id"] == "../../etc/x"


def test_a_session_is_switched_off_and_on(tmp_path):
    folder = tmp_path / "injections"
    assert not injection_ledger.session_off(folder, "s-1")
    injection_ledger.switch_session(folder, "s-1", on=False)
    assert injection_ledger.session_off(folder, "s-1") and not injection_ledger.session_off(folder, "s-2")
    injection_ledger.switch_session(folder, "s-1", on=True)
    injection_ledger.switch_session(folder, "s-1", on=True)  # twice: no error
    assert not injection_ledger.session_off(folder, "s-1") and not injection_ledger.session_off(folder, None)


def test_a_project_is_switched_off_by_a_file_in_its_folder_or_above_up_to_its_git_top_level(tmp_path):
    top = tmp_path / "code" / "apollo"
    deep = top / "api" / "handlers"
    deep.mkdir(parents=True)
    (top / ".git").mkdir()
    assert not injection_ledger.project_off(str(deep))
    (top / injection_ledger.PROJECT_OFF).touch()
    assert injection_ledger.project_off(str(deep)) and injection_ledger.project_off(str(top))
    (top / injection_ledger.PROJECT_OFF).unlink()
    (tmp_path / "code" / injection_ledger.PROJECT_OFF).touch()  # above the git top-level: not this project's
    assert not injection_ledger.project_off(str(deep))
    assert not injection_ledger.project_off(None) and not injection_ledger.project_off("relative/dir")
