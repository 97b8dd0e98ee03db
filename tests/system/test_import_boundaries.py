"""The search side never loads the write side: checked on the import graph of the installed package.

Every module of pgrecall/, worker/, api/ and sql/ (installed as pgrecall, pgrecall.worker,
pgrecall.api and pgrecall.sql: package-dir in pyproject.toml) is parsed with ast. An edge is
any import a module can run: at the top, in a function (a lazy import), in a try or an else;
the body of `if TYPE_CHECKING:` never runs and is left out. `from X import Y` is an edge to
X and, where Y is a submodule, to X.Y; relative imports are resolved. Importing a module
runs its package's __init__ first, so each module has an edge to its package too.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import subprocess
import sys
import tomllib
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The side that writes: the indexer and its queue, the migrator and what it provisions.
MIGRATING = {"pgrecall.postgres.migrator", "pgrecall.postgres.reader_login"}
WRITE_LIBRARIES = {"procrastinate", "watchdog"}  # the queue and the file watcher: the worker's alone
# Modules that wire both sides together on purpose, named as such: the CLI's commands and the
# modules of pgrecall.composition (the eval: it indexes, then searches; the Python memory API: it
# migrates, then writes through the worker).
COMPOSITION_ROOTS = ("pgrecall.cli", "pgrecall.composition")


def is_composition_root(module: str) -> bool:
    return any(module == root or module.startswith(root + ".") for root in COMPOSITION_ROOTS)


def is_search_side(module: str) -> bool:
    return module == "pgrecall.api" or module.startswith("pgrecall.api.")


def is_worker(module: str) -> bool:
    return module == "pgrecall.worker" or module.startswith("pgrecall.worker.")


def is_write_side(module: str) -> bool:
    return is_worker(module) or module in MIGRATING or module in WRITE_LIBRARIES


@dataclasses.dataclass(frozen=True)
class Edge:
    target: str
    where: str  # file:line, or "package" for the implicit import of a module's package
    lazy: bool

    def __str__(self) -> str:
        return f"{self.target} ({'lazy, ' if self.lazy else ''}{self.where})"


def package_modules(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> file, as setuptools installs them (pyproject.toml's package-dir and packages)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    package_dir: dict[str, str] = config["package-dir"]
    modules = {}
    for package in config["packages"]:
        base = max((p for p in package_dir if package == p or package.startswith(p + ".")), key=len)
        folder = root / package_dir[base] / Path(*package[len(base) :].split(".")[1:])
        for path in sorted(folder.glob("*.py")):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Imports(ast.NodeVisitor):
    """(node, lazy) for every import statement that can run, and importlib.import_module("...") calls."""

    def __init__(self) -> None:
        self.found: list[tuple[ast.Import | ast.ImportFrom | ast.Call, bool]] = []
        self.depth = 0

    def _in_function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _in_function

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        self.found.append((node, self.depth > 0))

    visit_ImportFrom = visit_Import

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            self.found.append((node, self.depth > 0))
        self.generic_visit(node)


def _internal(name: str) -> bool:
    return name == "pgrecall" or name.startswith("pgrecall.")


def imports_of(
    module: str, source: str, is_package: bool, known: set[str], filename: str
) -> tuple[list[Edge], list[str]]:
    """The edges of one module's source, and the internal names it imports that are no module."""
    visitor = _Imports()
    visitor.visit(ast.parse(source))
    edges, unknown = [], []
    for node, lazy in visitor.found:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Call):
            names = [node.args[0].value]
        else:
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{node.module}" if node.module else package
            else:
                base = node.module or ""
            names = [base, *(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known)]
        for name in names:
            if _internal(name):
                if name not in known:
                    unknown.append(f"{filename}:{node.lineno}: {name}")
                    continue
                target = name
            else:
                target = name.partition(".")[0]  # an outside package: a leaf, by its top-level name
            if target != module:
                edges.append(Edge(target, f"{filename}:{node.lineno}", lazy))
    if "." in module:
        edges.append(Edge(module.rpartition(".")[0], "package", False))
    return edges, unknown


@dataclasses.dataclass(frozen=True)
class Graph:
    modules: dict[str, Path]
    edges: dict[str, list[Edge]]
    unknown: list[str]

    def chains(self, start: str, forbidden: Callable[[str], bool], avoid: Iterable[str] = ()) -> list[str]:
        """The shortest import chain from `start` to each forbidden module it reaches; `avoid`: modules
        not followed (their own rule checks them)."""
        avoid = set(avoid) - {start}
        came_from: dict[str, tuple[str, Edge] | None] = {start: None}
        queue, found = deque([start]), []
        while queue:
            node = queue.popleft()
            for edge in self.edges.get(node, ()):
                if edge.target in came_from:
                    continue
                came_from[edge.target] = (node, edge)
                if forbidden(edge.target):
                    found.append(self._render(edge.target, came_from))
                elif edge.target not in avoid:
                    queue.append(edge.target)
        return found

    @staticmethod
    def _render(target: str, came_from: dict[str, tuple[str, Edge] | None]) -> str:
        steps, node = [], target
        while (step := came_from[node]) is not None:
            node, edge = step
            steps.append(str(edge))
        return " -> ".join([node, *reversed(steps)])

    def violations(
        self, modules: Iterable[str], forbidden: Callable[[str], bool], avoid: Iterable[str] = ()
    ) -> list[str]:
        return [chain for module in sorted(modules) for chain in self.chains(module, forbidden, avoid)]


def build_graph(root: Path = ROOT) -> Graph:
    modules = package_modules(root)
    edges, unknown = {}, []
    for name, path in modules.items():
        found, missing = imports_of(
            name, path.read_text(encoding="utf-8"), path.stem == "__init__", set(modules), str(path.relative_to(root))
        )
        edges[name] = found
        unknown += missing
    return Graph(modules, edges, unknown)


GRAPH = build_graph()
SEARCH_SIDE = {m for m in GRAPH.modules if is_search_side(m)}
WRITE_SIDE = {m for m in GRAPH.modules if is_write_side(m)}
SHARED = {m for m in GRAPH.modules if m not in SEARCH_SIDE | WRITE_SIDE and not is_composition_root(m)}


def _report(rule: str, chains: list[str]) -> str:
    return f"{rule}; offending import chains:\n  " + "\n  ".join(chains)


def test_the_graph_is_the_installed_package():
    """Each parsed file is the one Python imports under that name, and the graph holds what the rules name."""
    for name, path in GRAPH.modules.items():
        spec = importlib.util.find_spec(name)
        assert spec is not None and Path(spec.origin).resolve() == path.resolve(), name
    assert {"pgrecall.api.searcher", "pgrecall.api.reader", "pgrecall.worker.run", "pgrecall.sql"} <= set(GRAPH.modules)
    composed = {"pgrecall.composition.memories", "pgrecall.composition.evaluation", "pgrecall.cli.server_commands"}
    assert (MIGRATING | set(COMPOSITION_ROOTS) | composed | {"pgrecall.api.http"}).issubset(GRAPH.modules)
    assert {
        "pgrecall.contract",
        "pgrecall.settings",
        "pgrecall.postgres.database",
        "pgrecall.postgres.reader_role",
    } <= SHARED


def test_every_internal_import_names_a_module():
    """A lazy import of a module that does not exist would otherwise be invisible to the rules."""
    assert not GRAPH.unknown, GRAPH.unknown


def test_the_parser_sees_lazy_imports_and_leaves_type_checking_out():
    source = """
from typing import TYPE_CHECKING
from . import kinds
if TYPE_CHECKING:
    from pgrecall.worker.memory import files as memories
else:
    import pgrecall.errors
def later():
    from pgrecall.api import reader
    import procrastinate.worker
    import pgrecall.gone
"""
    known = {"pgrecall", "pgrecall.kinds", "pgrecall.errors", "pgrecall.api", "pgrecall.api.reader", "pgrecall.worker"}
    edges, unknown = imports_of("pgrecall.contract", source, False, known, "x.py")
    found = {(e.target, e.lazy) for e in edges}
    assert found == {
        ("typing", False),
        ("pgrecall", False),  # `from . import kinds` and the module's own package
        ("pgrecall.kinds", False),
        ("pgrecall.errors", False),
        ("pgrecall.api", True),
        ("pgrecall.api.reader", True),
        ("procrastinate", True),
    }
    assert unknown == ["x.py:11: pgrecall.gone"]
    graph = Graph(
        {}, {"a": [Edge("b", "a.py:1", True)], "b": [Edge("pgrecall.postgres.migrator", "b.py:2", False)]}, []
    )
    assert graph.chains("a", lambda m: m in MIGRATING) == [
        "a -> b (lazy, a.py:1) -> pgrecall.postgres.migrator (b.py:2)"
    ]


def test_the_search_side_never_reaches_the_write_side():
    """pgrecall.api's modules reach (lazily or not) no worker module, no migrator, no queue or watcher."""
    checked = SEARCH_SIDE
    assert {"pgrecall.api", "pgrecall.api.searcher", "pgrecall.api.http", "pgrecall.api.mcp_server"} <= checked
    chains = GRAPH.violations(checked, is_write_side)
    assert not chains, _report("the search side imports the write side", chains)


def test_the_write_side_never_reaches_the_search_side():
    checked = WRITE_SIDE & set(GRAPH.modules)
    assert {"pgrecall.worker.run", "pgrecall.postgres.migrator", "pgrecall.postgres.reader_login"} <= checked
    chains = GRAPH.violations(checked, is_search_side)
    assert not chains, _report("the write side imports the search side", chains)


def test_shared_modules_reach_neither_side():
    chains = GRAPH.violations(SHARED, lambda m: is_search_side(m) or is_write_side(m))
    assert not chains, _report("a shared module imports a side", chains)


def test_importing_the_search_api_loads_no_write_side(tmp_path):
    """At run time, in a fresh interpreter of the installed package: import pgrecall.api.searcher, run nothing."""
    code = "import json, sys\nimport pgrecall.api.searcher\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stdout)
    assert "pgrecall.api.searcher" in loaded
    assert not [m for m in loaded if is_write_side(m) or is_write_side(m.partition(".")[0])]
