import os

from pgrecall.worker.scan import iter_files


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
    assert list(iter_files(root)) == ["a.md", "link-in.md", "sub/b.txt"]
