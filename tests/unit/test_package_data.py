"""Every file the code reads beside its modules (templates, static files, SQL) is package data in
pyproject.toml, so an install that is not editable carries it too."""

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def package_data_files() -> set[Path]:
    """The files of the tree that the package-data globs take, by their folder's import name."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    folders = setuptools["package-dir"]
    taken = set()
    for package, patterns in setuptools["package-data"].items():
        # The longest package-dir entry it lies in: pgrecall.api.x is api/x, pgrecall.memory is pgrecall/memory.
        top_name = max((name for name in folders if package == name or package.startswith(name + ".")), key=len)
        folder = ROOT / folders[top_name] / Path(*package.split(".")[len(top_name.split(".")) :])
        for pattern in patterns:
            taken |= {path for path in folder.glob(pattern) if path.is_file()}
    return taken


def test_every_template_static_file_and_sql_file_is_package_data():
    wanted = [
        path
        for folder in (
            "api/templates",
            "api/static",
            "sql/migrations",
            "sql/queries",
            "pgrecall/claude_integration/claude_commands",
        )
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and not fnmatch.fnmatch(path.name, "*.pyc") and path.name != "__init__.py"
    ]
    assert wanted
    missing = sorted(str(path.relative_to(ROOT)) for path in set(wanted) - package_data_files())
    assert not missing, "not package data in pyproject.toml, so missing from a non-editable install:\n" + "\n".join(
        missing
    )
