"""What `pgrecall index` is given: a folder to scan or a file alone, refused before any connection if missing."""

import pytest

from pgrecall.errors import InvalidInput
from pgrecall.worker.run import resolve_targets


def test_a_missing_path_is_a_clear_error(tmp_path):
    (tmp_path / "notes").mkdir()
    with pytest.raises(InvalidInput, match="^no such file or folder: .*does-not-exist$"):
        resolve_targets([str(tmp_path / "notes"), str(tmp_path / "does-not-exist")])


def test_a_folder_is_scanned_and_a_file_is_indexed_alone(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "a.md").write_text("# A\n")
    assert resolve_targets([str(tmp_path / "notes"), str(tmp_path / "a.md")]) == [
        (tmp_path / "notes", None),
        (tmp_path, ["a.md"]),
    ]


def test_a_file_inside_a_root_is_indexed_under_that_root_else_under_its_folder_alone(tmp_path):
    (tmp_path / "notes" / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "notes" / "sub" / "deeper" / "a.md").write_text("# A\n")
    (tmp_path / "loose.md").write_text("# Loose\n")
    roots = [tmp_path / "notes", tmp_path / "notes" / "sub", tmp_path / "other"]
    assert resolve_targets([str(tmp_path / "notes/sub/deeper/a.md"), str(tmp_path / "loose.md")], roots) == [
        (tmp_path / "notes" / "sub", ["deeper/a.md"]),  # the innermost root that holds it
        (tmp_path, ["loose.md"]),
    ]
    assert resolve_targets([str(tmp_path / "notes")], roots) == [(tmp_path / "notes", None)]
