"""pgrecall's Claude Code plugin, with Claude Code's own CLI (installed from npm's cache, offline):
`pgrecall setup claude-code --plugin` writes and registers the marketplace, `claude plugin validate`
accepts it and the copy kept in the repository, `claude plugin install pgrecall@pgrecall` installs
it, `claude mcp list` starts its MCP server, and a whole `claude -p` session (against a stand-in
for the Anthropic API on loopback) runs its hooks: the session is searchable after it ends.
`pgrecall setup claude-code --remove` takes the plugin out again.

Skipped, with the reason, where npm's cache lacks the CLI (`make claude-code` fills it)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.service import service_env, wait_for
from tests.support import claude_code
from tests.support.cli import run_cli

pytestmark = pytest.mark.slow

REPOSITORY_COPY = Path(__file__).parents[2] / "deploy" / "claude-code"
PROMPT = "Write down the fix for the telescope mount: the counterweight must move 4 cm outward."
ANSWER = "Noted: the counterweight moves 4 cm outward and the periodic error correction is retrained."


@pytest.fixture(scope="module")
def claude(tmp_path_factory) -> Path:
    executable, why = claude_code.install(tmp_path_factory.mktemp("claude-code"))
    if executable is None:
        pytest.skip(why)
    return executable


def run_claude(claude: Path, home: Path, *args: str, cwd: Path | None = None, **extra: str):
    env = dict(os.environ, HOME=str(home), **extra)
    env["PATH"] = f"{claude.parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [str(claude), *args], env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, (done.args, done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


def test_claude_code_accepts_the_repositorys_marketplace_and_plugin(claude, tmp_path):
    for folder in (REPOSITORY_COPY, REPOSITORY_COPY / "plugins" / "pgrecall"):
        said = ok(run_claude(claude, tmp_path, "plugin", "validate", "--strict", str(folder)))
        assert "Validation passed" in said


def test_the_plugin_installs_its_server_starts_and_a_session_is_kept_when_it_ends(claude, db_url, tmp_path):
    home = tmp_path / "user"  # Claude Code's home: ~/.claude, ~/.claude.json
    projects = home / ".claude" / "projects"
    projects.mkdir(parents=True)
    project = tmp_path / "orbit"
    project.mkdir()
    env = service_env(db_url, tmp_path / "pgrecall", PGRECALL_CONFIG=str(tmp_path / "config.toml"))
    env["PATH"] = f"{claude.parent}{os.pathsep}{env['PATH']}"
    assert run_cli("sources", "add", "claude-code", "--path", str(projects), env=env).returncode == 0

    set_up = run_cli("setup", "claude-code", "--plugin", "--home-dir", str(home), env=env)
    said = ok(set_up)
    marketplace = tmp_path / "pgrecall" / "claude-code-marketplace"
    assert f"registered the marketplace pgrecall with Claude Code (claude plugin marketplace add {marketplace})" in said
    assert "claude plugin install pgrecall@pgrecall" in said and "sources add" not in said
    assert "Validation passed" in ok(run_claude(claude, home, "plugin", "validate", "--strict", str(marketplace)))

    pgrecall_env = {name: env[name] for name in ("PGRECALL_DATABASE_URL", "PGRECALL_HOME", "PGRECALL_CONFIG")}
    ok(run_claude(claude, home, "plugin", "install", "pgrecall@pgrecall", **pgrecall_env))
    [installed] = [
        p
        for p in json.loads(ok(run_claude(claude, home, "plugin", "list", "--json")))
        if p["id"] == "pgrecall@pgrecall"
    ]
    assert installed["enabled"] and installed["readFromFolder"] == str(marketplace / "plugins" / "pgrecall")
    details = ok(run_claude(claude, home, "plugin", "details", "pgrecall@pgrecall"))
    assert "SessionStart, UserPromptSubmit, SessionEnd, PreCompact" in details
    # The session switch's commands count as skills to Claude Code.
    assert "Skills (4)  off, on, recall, remember" in details and "MCP servers (1)  pgrecall" in details

    # Claude Code starts the plugin's MCP server (pgrecall mcp, by the absolute path setup wrote)
    # in a folder the user trusts.
    state = json.loads((home / ".claude.json").read_text())
    state.setdefault("projects", {})[str(project)] = {"hasTrustDialogAccepted": True}
    (home / ".claude.json").write_text(json.dumps(state, indent=2))
    servers = ok(run_claude(claude, home, "mcp", "list", cwd=project, **pgrecall_env))
    assert "plugin:pgrecall:pgrecall: " in servers and "✔ Connected" in servers, servers

    # A whole session: its hooks run pgrecall; SessionEnd keeps and indexes the transcript.
    with claude_code.FakeAnthropic(ANSWER) as api:
        session = run_claude(
            claude,
            home,
            "-p",
            PROMPT,
            cwd=project,
            ANTHROPIC_BASE_URL=api.url,
            ANTHROPIC_API_KEY="sk-ant-test",
            **pgrecall_env,
        )
    assert ok(session).strip() == ANSWER and api.requests
    [transcript] = list(projects.glob("*/*.jsonl"))
    copy = tmp_path / "pgrecall" / "archive" / "claude-code" / transcript.relative_to(projects)
    assert copy.is_file()

    def found() -> list[dict]:
        result = run_cli("search", "how far must the counterweight move", "--json", "-k", "3", env=env)
        assert result.returncode == 0, result.stderr
        return [hit for hit in json.loads(result.stdout) if hit["path"] == str(transcript.relative_to(projects))]

    wait_for(lambda: bool(found()), 180, message="the session searchable")
    assert found()[0]["metadata"]["session_id"] == transcript.stem

    removed = ok(run_cli("setup", "claude-code", "--remove", "--home-dir", str(home), env=env))
    assert "removed the marketplace pgrecall and its plugin from Claude Code" in removed
    listed = json.loads(ok(run_claude(claude, home, "plugin", "list", "--json")))
    assert not [p for p in listed if p["id"] == "pgrecall@pgrecall"] and not marketplace.exists()
    assert "pgrecall is not set up in Claude Code: nothing to remove" in ok(
        run_cli("setup", "claude-code", "--remove", "--home-dir", str(home), env=env)
    )
