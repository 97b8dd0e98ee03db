"""The manual (docs/, mkdocs.yml) builds as a site with `mkdocs build --strict`: a broken link, a
missing anchor or page, or a page left out of the nav fails here. Built into a temporary folder,
never into the tree."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_manual_builds_strictly_with_every_page(tmp_path):
    built = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    pages = sorted(path.stem for path in (ROOT / "docs").glob("*.md"))
    assert pages, "no page in docs/"
    for page in pages:
        html = tmp_path / "site" / ("index.html" if page == "index" else f"{page}/index.html")
        assert html.is_file(), f"docs/{page}.md was not built"
    for image in (ROOT / "docs").glob("*.png"):
        assert (tmp_path / "site" / image.name).is_file(), image.name
    assert not (ROOT / "site").exists()


def test_a_broken_link_or_anchor_or_a_page_outside_the_nav_fails_the_build(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    with (copy / "docs" / "index.md").open("a", encoding="utf-8") as page:
        page.write("\n[gone](no-such-page.md) and [no anchor](service.md#no-such-anchor)\n")
    (copy / "docs" / "orphan.md").write_text("# Not in the nav\n", encoding="utf-8")
    built = build(copy / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "no-such-page.md" in built.stderr
    assert "#no-such-anchor" in built.stderr
    assert "orphan.md" in built.stderr
