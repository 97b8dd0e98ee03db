import json
import os

from pgrecall.worker import scan
from pgrecall.worker.scan import iter_entries, iter_files, locate, stat_files


def test_hidden_ignored_and_escaping_links_are_skipped(tmp_path):
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".obsidian").mkdir()
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "drafts").mkdir()
    for name in [
        "a.md",
        "sub/b.txt",
        ".git/config",
        ".obsidian/x.md",
        "node_modules/pkg/r.md",
        "drafts/d.md",
        ".hidden.md",
        "a.md~",
        "a.md.swp",
        "4913",
        "keep.log",
    ]:
        (root / name).write_text("x")
    (root / ".pgrecallignore").write_text("drafts/\n*.log\n")
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    os.symlink(outside, root / "link-out.md")
    os.symlink(root / "a.md", root / "link-in.md")
    os.symlink(tmp_path, root / "folder-out")  # a link to a folder is never followed
    entries = {entry.relative: entry for entry in iter_entries(root)}
    assert list(entries) == ["a.md", "link-in.md", "link-out.md", "sub/b.txt"]
    # A link out of the root is listed so that its job records it as skipped, and is never to be read.
    assert entries["link-out.md"].problem == scan.OUTSIDE_ROOT
    assert entries["link-out.md"].real_path is None
    assert entries["link-in.md"].problem is None
    assert entries["link-in.md"].real_path == os.path.realpath(root / "a.md")


def test_a_symlink_loop_is_listed_with_a_reason_and_nothing_raises(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("x")
    os.symlink("loop.md", root / "loop.md")
    os.symlink("pong.md", root / "ping.md")
    os.symlink("ping.md", root / "pong.md")
    os.symlink("missing.md", root / "dangling.md")
    entries = {entry.relative: entry for entry in iter_entries(root)}
    assert list(entries) == ["a.md", "loop.md", "ping.md", "pong.md"]  # a dangling link is no file
    assert entries["loop.md"].problem.startswith("cannot read: Too many levels of symbolic links")
    # The same (size, mtime) the job records, so that reconciliation leaves it alone.
    states = stat_files(root)
    assert states["loop.md"] == entries["loop.md"].size_and_mtime
    assert states["loop.md"][0] is not None
    assert locate(root, "loop.md").problem == entries["loop.md"].problem


def test_names_that_are_not_utf8_are_listed_escaped_and_located_back(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "good.md").write_text("x")
    bad = os.fsdecode(b"caf\xe9.md")
    (root / bad).write_text("x")
    bad_folder = root / os.fsdecode(b"dossier-\xff")
    bad_folder.mkdir()
    (bad_folder / "inner.md").write_text("x")
    paths = list(iter_files(root))
    assert paths == ["caf\\xe9.md", "good.md", "dossier-\\xff/inner.md"]
    json.dumps(paths).encode("utf-8")  # storable, sendable
    entry = locate(root, "caf\\xe9.md")
    assert entry.problem == scan.UNDECODABLE_NAME
    assert entry.relative == "caf\\xe9.md"
    assert entry.size_and_mtime == stat_files(root)["caf\\xe9.md"]
    assert locate(root, "dossier-\\xff/inner.md").problem == scan.UNDECODABLE_NAME
    assert locate(root, "gone\\xe9.md") is None
    # The watcher asks is_ignored about each event's path: such a path is left to the scan.
    assert scan.is_ignored(bad, scan.load_ignore(root))
    assert not scan.is_ignored("good.md", scan.load_ignore(root))


def test_locate_refuses_paths_through_a_link_out_of_the_root(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    os.symlink(outside, root / "linked")
    assert list(iter_files(root)) == []  # the scan does not follow the folder link
    assert locate(root, "linked/secret.md").problem == scan.OUTSIDE_ROOT  # a job (from the watcher) refuses it
    assert locate(root, "linked") is None or locate(root, "linked").problem == scan.OUTSIDE_ROOT


def test_the_watcher_leaves_a_name_that_is_not_utf8_to_the_scan(tmp_path):
    from watchdog.events import FileCreatedEvent, FileMovedEvent

    from pgrecall.worker.watch import changes_for

    root = tmp_path / "notes"
    root.mkdir()
    bad = str(root / os.fsdecode(b"caf\xe9.md"))
    spec = scan.load_ignore(root)
    assert changes_for(FileCreatedEvent(bad), root, spec) == []
    moved = changes_for(FileMovedEvent(str(root / "a.md"), bad), root, spec)
    assert [(c.kind, c.path) for c in moved] == [("index", "a.md")]  # the old name leaves the index
    json.dumps([c.path for c in moved]).encode("utf-8")
