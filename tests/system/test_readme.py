"""The paths, commands, flags and variables that the README and every page of the manual (docs/)
name exist: no database, no model.

Each check reads the pages as they are when the test runs, so a file moved, a command renamed or
a flag dropped without its line in README.md or docs/ fails here, naming the page and the word.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

import pytest

from pgrecall.settings import ENVIRONMENT_VARIABLES

ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").is_file())
# The README and every page of the manual; a page added to docs/ is checked without a change here.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SETTINGS_PAGE = ROOT / "docs" / "settings.md"

PATH_SUFFIXES = (".py", ".sql", ".toml", ".service", ".md", ".example")
# Words in backticks that look like paths but name no file of this repository, with the reason.
NOT_REPOSITORY_PATHS = {
    "projects/": "a path_prefix filter value",
    ".git/": "a folder ignored in the user's notes",
    ".obsidian/": "a folder ignored in the user's notes",
    "node_modules/": "a folder ignored in the user's notes",
    "memories/": "the memory folder, inside the data directory",
    ".venv/bin/pgrecall": "made by make install",
    "build/": "made by the strict editable install",
    "pgrecall/worker/": "the folder that the package mapping says is not there",
    "v1/128": "a chunking version, as documents record it",
    "Lock/extend": "a PostgreSQL wait event",
    "Lock/page": "a PostgreSQL wait event",
    "h.md#x.md": "a file name the text says a user might have",
    "caf\\xe9.md": "how a file name that is not UTF-8 is shown",
}
SKIPPED_DIRECTORIES = {"__pycache__", "node_modules", "build", "dist"}  # and every hidden one (.venv, .git)
SHELL_LANGUAGES = {"", "sh", "bash", "shell", "console"}


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each ``` block."""
    return re.findall(r"^```([\w-]*)[ \t]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def inline_spans(text: str) -> list[str]:
    """The `code` spans outside fenced blocks, a span broken over lines joined with a space."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]


def link_targets(text: str) -> list[str]:
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text)


def shell_lines(text: str) -> list[str]:
    """The commands of the shell blocks: one string per line, continuation lines joined."""
    lines: list[str] = []
    for language, body in fenced_blocks(text):
        if language.lower() in SHELL_LANGUAGES:
            lines += body.replace("\\\n", " ").splitlines()
    return lines


def tokens(command: str) -> list[str]:
    """Shell words, comments dropped; `a|b` (alternatives) split in two, `[` `]` dropped; a pipe, `&&`
    or `;` stays a token of its own, so a command's arguments end there."""
    command = re.sub(r"(?<=\S)\|(?=\S)", " ", command).replace("[", " ").replace("]", " ")
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote in prose: words are enough here
        return command.split()


def pgrecall_commands(commands: Iterable[str]) -> dict[str, set[str]]:
    """Each `pgrecall COMMAND` shown, with the flags shown after it (until a pipe or `;`)."""
    found: dict[str, set[str]] = {}
    for command in commands:
        words = tokens(command)
        for position, word in enumerate(words[:-1]):
            if (word != "pgrecall" and not word.endswith("/pgrecall")) or not re.fullmatch(
                r"[a-z][a-z-]*", words[position + 1]
            ):
                continue
            flags = found.setdefault(words[position + 1], set())
            for argument in words[position + 2 :]:
                if argument in {"|", "||", "&", "&&", ";"}:
                    break
                if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", argument):
                    flags.add(argument.split("=", 1)[0])
    return found


def path_candidates(text: str) -> set[str]:
    """Words in backticks and shell blocks that look like paths (from the repository's top)."""
    words: list[str] = []
    for span in inline_spans(text):
        words += span.split()
    for line in shell_lines(text):
        words += [word for word in tokens(line) if not any(c.isspace() for c in word)]
    found = set()
    for word in words:
        word = word.split("=", 1)[1] if re.match(r"[A-Z_]+=", word) else word  # NOTES=~/notes
        word = word.strip("()[],;:'\"").rstrip(".")
        if word.startswith("-") or not ("/" in word or word.endswith(PATH_SUFFIXES)):
            continue
        found.add(word)
    return found


def is_repository_path(word: str) -> bool:
    """False for what is clearly not a file of this repository."""
    if "://" in word:  # a URL
        return False
    if re.fullmatch(r"pgrecall(\.\w+)+", word):  # an import name: `pgrecall.sql`
        return False
    if word.startswith(".") and "/" not in word:  # a file type (`.md`) or a dot file in the user's notes
        return False
    if word.startswith(("/", "~", "$", "../")):  # absolute (or an HTTP route), home, data directory, ../shared
        return False
    if any(c in word for c in "<>{}@"):  # a template (`YYYY/MM/<date>-<slug>-<id>.md`), an embedding space
        return False
    return word not in NOT_REPOSITORY_PATHS


def repository_files() -> list[Path]:
    """The files of the checkout, without the virtualenv, caches and hidden folders."""
    found = []
    for folder, directories, files in os.walk(ROOT):
        directories[:] = [
            d
            for d in directories
            if d not in SKIPPED_DIRECTORIES and not d.startswith(".") and not d.endswith(".egg-info")
        ]
        found += [Path(folder, name) for name in files]
    return found


def linked_paths(text: str) -> set[str]:
    """The targets of the text's links that are files, without their #anchor (from the page's folder)."""
    targets = {target.split("#", 1)[0] for target in link_targets(text)}
    return {target for target in targets if target and is_repository_path(target)}


def missing_paths(text: str, folder: Path = ROOT) -> list[str]:
    """Each path the text names that the repository does not hold (a bare file name: anywhere in it),
    and each link whose target is not there, seen from the page's folder."""
    files = None
    missing = [target for target in sorted(linked_paths(text)) if not (folder / target).exists()]
    for word in sorted(path_candidates(text)):
        if not is_repository_path(word):
            continue
        if "/" in word:
            exists = any(ROOT.glob(word.rstrip("/"))) if "*" in word else (ROOT / word).exists()
        else:
            files = {path.name for path in repository_files()} if files is None else files
            exists = word in files
        if not exists:
            missing.append(word)
    return missing


def entry_point() -> tuple[str, str]:
    """The module and function that the installed `pgrecall` script runs (pyproject.toml)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, function = scripts["pgrecall"].split(":")
    return module, function


HELP_PROGRAM = """
import contextlib, io, json, sys
from {module} import {function} as main

texts = {{}}
for command in sys.argv[1:]:
    sys.argv = ["pgrecall", command, "--help"]
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            code = main()
        except SystemExit as exc:
            code = exc.code
    texts[command] = [code or 0, output.getvalue()]
print(json.dumps(texts))
"""


_HELP_TEXTS: dict[str, tuple[int, str]] = {}


def help_texts(commands: Iterable[str]) -> dict[str, tuple[int, str]]:
    """`pgrecall COMMAND --help` for each command, through the installed script's entry point: exit
    code and output. The commands not asked before are asked in one fresh process."""
    commands = set(commands)
    unknown = sorted(commands - set(_HELP_TEXTS))
    if unknown:
        module, function = entry_point()
        program = HELP_PROGRAM.format(module=module, function=function)
        run = subprocess.run(
            [sys.executable, "-c", program, *unknown], capture_output=True, text=True, cwd=ROOT, timeout=120
        )
        assert run.returncode == 0, run.stderr
        _HELP_TEXTS.update((command, (code, text)) for command, (code, text) in json.loads(run.stdout).items())
    return {command: _HELP_TEXTS[command] for command in commands}


def mentioned(flag: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def command_problems(text: str) -> list[str]:
    commands = pgrecall_commands(shell_lines(text) + inline_spans(text))
    problems = []
    for command, (code, output) in sorted(help_texts(commands).items()):
        if code != 0:
            problems.append(f"pgrecall {command}: not a command ({output.strip().splitlines()[-1:]})")
            continue
        problems += [
            f"pgrecall {command} {flag}: no such flag"
            for flag in sorted(commands[command])
            if not mentioned(flag, output)
        ]
    return problems


def bench_flag_problems(text: str) -> list[str]:
    """Flags shown after a bench/ script that the script never names."""
    problems = []
    for command in shell_lines(text) + inline_spans(text):
        words = tokens(command)
        for position, word in enumerate(words):
            script = ROOT / word
            if not (word.startswith("bench/") and word.endswith(".py") and script.is_file()):
                continue
            source = script.read_text(encoding="utf-8")
            for argument in words[position + 1 :]:
                flag = argument.split("=", 1)[0]
                if flag.startswith("--") and f'"{flag}"' not in source:
                    problems.append(f"{word} {flag}: no such flag")
    return sorted(set(problems))


def source_text() -> str:
    """Every Python, service and example file of the repository, this test excepted."""
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in repository_files()
        if path.suffix in {".py", ".service", ".example"} and path != Path(__file__).resolve()
    )


def unknown_variables(text: str) -> list[str]:
    named = set(re.findall(r"\bPGRECALL_[A-Z0-9_]*[A-Z0-9]\b", text))
    unknown = named - set(ENVIRONMENT_VARIABLES)
    if not unknown:
        return []
    code = source_text()
    return sorted(name for name in unknown if not re.search(rf"\b{name}\b", code))


def page_name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def read(page: Path) -> str:
    return page.read_text(encoding="utf-8")


@pytest.fixture(scope="module", autouse=True)
def every_commands_help():
    """Every page's commands asked for their --help in one process, not one process a page."""
    help_texts(pgrecall_commands(line for page in PAGES for line in shell_lines(read(page)) + inline_spans(read(page))))


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_path_a_page_names_exists(page):
    missing = missing_paths(read(page), page.parent)
    assert not missing, f"{page_name(page)} names paths the repository does not hold:\n" + "\n".join(missing)


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_command_and_flag_a_page_shows_exists(page):
    problems = command_problems(read(page))
    assert not problems, f"{page_name(page)} shows commands or flags that pgrecall does not have:\n" + "\n".join(
        problems
    )


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_bench_flag_a_page_shows_exists(page):
    problems = bench_flag_problems(read(page))
    assert not problems, f"{page_name(page)} shows bench/ flags that the scripts do not have:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_variable_a_page_names_is_read_by_the_code(page):
    unknown = unknown_variables(read(page))
    assert not unknown, f"{page_name(page)} names variables that no code reads:\n" + "\n".join(unknown)


def unknown_tests(text: str) -> list[str]:
    """The tests a text cites as its evidence (`test_name`) that tests/ neither defines nor holds as a file."""
    cited = set(re.findall(r"\btest_[a-z0-9_]+\b", text))
    files = {path.stem for path in (ROOT / "tests").rglob("test_*.py")}
    code = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "tests").rglob("*.py"))
    defined = set(re.findall(r"^\s*(?:async )?def (test_[a-z0-9_]+)", code, re.MULTILINE))
    return sorted(cited - files - defined)


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_test_a_page_cites_exists(page):
    unknown = unknown_tests(read(page))
    assert not unknown, f"{page_name(page)} cites tests that tests/ does not hold:\n" + "\n".join(unknown)


def test_the_settings_page_lists_every_setting():
    table = set(re.findall(r"^\| `(PGRECALL_[A-Z0-9_]+)` \|", read(SETTINGS_PAGE), re.MULTILINE))
    missing = sorted(set(ENVIRONMENT_VARIABLES) - table)
    assert not missing, "docs/settings.md's table lacks:\n" + "\n".join(missing)


def test_the_readme_is_one_screen_that_leads_to_the_manual():
    readme = read(ROOT / "README.md")
    assert len(readme.splitlines()) <= 300, "the README is a newcomer's first hour: reference goes in docs/"
    assert "docs/index.md" in {target.split("#", 1)[0] for target in link_targets(readme)}


def test_the_checks_report_what_is_wrong():
    wrong = """
Run `pgrecall frobnicate` or see `worker/no_such_module.py` and `nosuch.sql`, then `~/notes` is fine.
See [the manual](docs/index.md#set-up), [a page gone](docs/gone.md#top) and [the web](https://example.org/x.md).

```sh
pgrecall search "x" --no-such-flag -k 3 | grep --also-not-ours x
PGRECALL_NO_SUCH_VARIABLE=1 pgrecall status --json
bench/index_bench.py --not-a-bench-flag
```
"""
    assert missing_paths(wrong) == ["docs/gone.md", "nosuch.sql", "worker/no_such_module.py"]
    problems = command_problems(wrong)
    assert problems[0].startswith("pgrecall frobnicate: not a command")
    assert problems[1:] == ["pgrecall search --no-such-flag: no such flag"]
    assert bench_flag_problems(wrong) == ["bench/index_bench.py --not-a-bench-flag: no such flag"]
    assert unknown_variables(wrong) == ["PGRECALL_NO_SUCH_VARIABLE"]
    assert unknown_tests("as `test_the_checks_report_what_is_wrong` and `test_no_such_test` show") == [
        "test_no_such_test"
    ]
