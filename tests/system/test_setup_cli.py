"""`pgrecall setup claude-code` and `pgrecall setup claude-desktop` as a user runs them, on a temporary
home with realistic settings files: other hooks, other MCP servers, permissions, env, a status line."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess

import pytest

from pgrecall.claude_integration import claude_plugin
from tests.support.cli import COMMAND, run_cli

SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run lint)", "Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
    "env": {"BASH_DEFAULT_TIMEOUT_MS": "60000"},
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "jq -r '.tool_input.command' >> ~/.claude/bash-log.txt"}],
            }
        ],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "~/.claude/hooks/no-secrets.py", "timeout": 10}]}
        ],
    },
    "model": "opus",
}
CLAUDE_JSON = {
    "numStartups": 41,
    "theme": "dark",
    "oauthAccount": {"displayName": "Zoë Ångström"},
    "projects": {"/home/ada/src/shop": {"allowedTools": [], "mcpServers": {}}},
    "mcpServers": {
        "filesystem": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem"],
            "env": {},
        }
    },
}
DESKTOP = {
    "globalShortcut": "Ctrl+Space",
    "mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}},
}


@pytest.fixture
def home(tmp_path):
    """A user's home with Claude Code's two files written as Claude Code writes them (JSON.stringify, indent 2)."""
    home = tmp_path / "user"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2, ensure_ascii=False))
    (home / ".claude.json").write_text(json.dumps(CLAUDE_JSON, indent=2, ensure_ascii=False))
    (home / ".claude.json").chmod(0o600)
    return home


def setup(home, *args, env=None):
    return run_cli("setup", *args, "--home-dir", str(home), env=env)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def files_in(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def loaded(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_claude_code_gets_the_hooks_and_the_mcp_server_and_keeps_the_rest(home, tmp_path):
    output = ok(setup(home, "claude-code"))
    settings_file, config_file = home / ".claude" / "settings.json", home / ".claude.json"
    assert f"updated {settings_file} (backup: settings.json.pgrecall-backup-" in output
    assert f"updated {config_file} (backup: .claude.json.pgrecall-backup-" in output

    settings, config = loaded(settings_file), loaded(config_file)
    assert {k: v for k, v in settings.items() if k != "hooks"} == {k: v for k, v in SETTINGS.items() if k != "hooks"}
    assert list(settings) == list(SETTINGS)
    assert settings["hooks"]["PreToolUse"] == SETTINGS["hooks"]["PreToolUse"]
    users_prompt_hook, ours = settings["hooks"]["UserPromptSubmit"]
    assert users_prompt_hook == SETTINGS["hooks"]["UserPromptSubmit"][0]
    [session] = settings["hooks"]["SessionStart"]
    [prompt_entry], [session_entry] = ours["hooks"], session["hooks"]
    assert (prompt_entry["type"], prompt_entry["timeout"], session_entry["timeout"]) == ("command", 5, 5)

    # The tests' PGRECALL_HOME (tests/conftest.py isolated_home) is carried, the path is absolute.
    words = shlex.split(prompt_entry["command"])
    assert words[0] == f"PGRECALL_HOME={tmp_path / 'home'}"
    assert os.path.isabs(words[1]) and words[-2:] == ["hook", "prompt"]
    assert shlex.split(session_entry["command"])[-2:] == ["hook", "session-start"]

    assert {k: v for k, v in config.items() if k != "mcpServers"} == {
        k: v for k, v in CLAUDE_JSON.items() if k != "mcpServers"
    }
    assert list(config["mcpServers"]) == ["filesystem", "pgrecall"]
    server = config["mcpServers"]["pgrecall"]
    assert server == {
        "type": "stdio",
        "command": words[1],
        "args": [*words[2:-2], "mcp"],
        "env": {"PGRECALL_HOME": str(tmp_path / "home")},
    }
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert "Zoë Ångström" in config_file.read_text(encoding="utf-8")  # written as Claude Code writes it

    # What the entries run is this pgrecall, whatever PATH it is given.
    bare = {"PATH": "/nonexistent", **server["env"]}
    served = subprocess.run([server["command"], *server["args"], "--help"], env=bare, capture_output=True, text=True)
    assert served.returncode == 0 and served.stdout.startswith("usage: pgrecall mcp "), served.stderr
    hooked = subprocess.run(
        ["/bin/sh", "-c", prompt_entry["command"].removesuffix(" hook prompt") + " --help"],
        env={"PATH": "/nonexistent"},
        capture_output=True,
        text=True,
    )
    assert hooked.returncode == 0 and "usage: pgrecall" in hooked.stdout, hooked.stderr


def test_twice_changes_nothing_the_second_time_and_says_so(home):
    ok(setup(home, "claude-code"))
    after_first = files_in(home)
    output = ok(setup(home, "claude-code"))
    assert files_in(home) == after_first  # no file rewritten, no new backup
    assert output.splitlines()[-1] == "pgrecall is already set up in Claude Code: nothing changed"


def test_the_backups_hold_the_files_as_they_were(home):
    before = files_in(home)
    ok(setup(home, "claude-code"))
    backups = {name: data for name, data in files_in(home).items() if ".pgrecall-backup-" in name}
    assert sorted(backups.values()) == sorted(before.values())
    for name in backups:
        original = name.split(".pgrecall-backup-")[0]
        assert backups[name] == before[original]
        assert stat.S_IMODE((home / name).stat().st_mode) == stat.S_IMODE((home / original).stat().st_mode)


def test_remove_restores_the_files_byte_for_byte_and_is_idempotent(home):
    before = files_in(home)
    ok(setup(home, "claude-code"))
    output = ok(setup(home, "claude-code", "--remove"))
    assert "restart Claude Code" in output
    after = {name: data for name, data in files_in(home).items() if ".pgrecall-backup-" not in name}
    assert after == before
    output = ok(setup(home, "claude-code", "--remove"))
    assert output.splitlines()[-1] == "pgrecall is not set up in Claude Code: nothing to remove"


def test_dry_run_prints_the_diff_and_writes_nothing(home):
    before = files_in(home)
    output = ok(setup(home, "claude-code", "--dry-run"))
    assert files_in(home) == before
    assert f"--- {home / '.claude' / 'settings.json'}\n+++ {home / '.claude' / 'settings.json'}\n" in output
    assert f"--- {home / '.claude.json'}\n+++ {home / '.claude.json'}\n" in output
    added = [line for line in output.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert any(line.endswith(' hook prompt",') for line in added)
    assert any(line.endswith(' hook session-start",') for line in added)
    assert '+    "pgrecall": {' in added
    assert not [line for line in output.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert output.splitlines()[-1] == "dry run: nothing written"

    ok(setup(home, "claude-code"))
    after = files_in(home)
    removal = ok(setup(home, "claude-code", "--remove", "--dry-run"))
    assert files_in(home) == after
    assert '-    "pgrecall": {' in removal.splitlines()


def test_missing_files_and_folders_are_created(tmp_path):
    home = tmp_path / "new-user"
    home.mkdir()
    output = ok(setup(home, "claude-code"))
    assert f"created {home / '.claude' / 'settings.json'}" in output
    settings = loaded(home / ".claude" / "settings.json")
    assert list(settings) == ["hooks"]
    assert list(settings["hooks"]) == ["SessionStart", "UserPromptSubmit", "SessionEnd", "PreCompact"]
    assert list(loaded(home / ".claude.json")) == ["mcpServers"]
    assert not [name for name in files_in(home) if "backup" in name]


def test_the_home_is_home_without_home_dir(tmp_path):
    home = tmp_path / "from-env"
    home.mkdir()
    ok(run_cli("setup", "claude-desktop", env=dict(os.environ, HOME=str(home))))
    assert list(files_in(home)) == [".config/Claude/claude_desktop_config.json"]


@pytest.mark.parametrize("broken", [".claude.json", ".claude/settings.json"])
def test_malformed_json_is_refused_and_nothing_is_written(home, broken):
    text = (home / broken).read_text(encoding="utf-8")
    (home / broken).write_text(
        text.replace('"theme": "dark",', '"theme": "dark",,').replace('"model": "opus"', "model")
    )
    before = files_in(home)
    result = setup(home, "claude-code")
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"pgrecall: error: {home / broken}: invalid JSON at line ")
    assert ", column " in line and line.endswith("; nothing written")
    assert files_in(home) == before  # the other file was not written either


def test_a_read_only_file_is_refused_and_nothing_is_written(home):
    (home / ".claude.json").chmod(0o400)
    before = files_in(home)
    result = setup(home, "claude-code")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"pgrecall: error: {home / '.claude.json'}: the file is read-only; nothing written"
    ]
    assert files_in(home) == before


def test_a_read_only_folder_is_refused_and_nothing_is_written(home):
    (home / ".claude").chmod(0o555)
    try:
        before = files_in(home)
        result = setup(home, "claude-code")
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            f"pgrecall: error: {home / '.claude' / 'settings.json'}: its folder {home / '.claude'} is read-only;"
            " nothing written"
        ]
        assert files_in(home) == before
    finally:
        (home / ".claude").chmod(0o755)


def test_an_older_pgrecall_is_replaced_not_duplicated(home):
    settings = json.loads(json.dumps(SETTINGS))
    old = {"type": "command", "command": "PGRECALL_HOME=/old /opt/old/bin/pgrecall hook prompt", "timeout": 3}
    settings["hooks"]["UserPromptSubmit"].append({"hooks": [old]})
    (home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    config = json.loads(json.dumps(CLAUDE_JSON))
    config["mcpServers"] = {"pgrecall": {"type": "stdio", "command": "/opt/old/bin/pgrecall", "args": ["mcp"]}}
    (home / ".claude.json").write_text(json.dumps(config, indent=2))

    ok(setup(home, "claude-code"))
    prompt_hooks = [
        h["command"]
        for g in loaded(home / ".claude" / "settings.json")["hooks"]["UserPromptSubmit"]
        for h in g["hooks"]
    ]
    assert len(prompt_hooks) == 2 and prompt_hooks[0] == "~/.claude/hooks/no-secrets.py"
    assert "/opt/old" not in prompt_hooks[1] and prompt_hooks[1].endswith(" hook prompt")
    assert list(loaded(home / ".claude.json")["mcpServers"]) == ["pgrecall"]
    assert loaded(home / ".claude.json")["mcpServers"]["pgrecall"]["command"] != "/opt/old/bin/pgrecall"


def test_claude_desktop_gets_the_mcp_server_only(tmp_path):
    home = tmp_path / "user"
    config_file = home / ".config" / "Claude" / "claude_desktop_config.json"
    config_file.parent.mkdir(parents=True)
    original = json.dumps(DESKTOP, indent=2)
    config_file.write_text(original)
    env = {k: v for k, v in os.environ.items() if k not in ("PGRECALL_HOME", "PGRECALL_CONFIG")}

    output = ok(setup(home, "claude-desktop", env=env))
    assert output.splitlines()[-1] == "restart Claude Desktop to load pgrecall"
    config = loaded(config_file)
    assert config["globalShortcut"] == "Ctrl+Space" and list(config["mcpServers"]) == ["filesystem", "pgrecall"]
    server = config["mcpServers"]["pgrecall"]
    assert set(server) == {"command", "args"} and server["args"][-1] == "mcp"  # nothing set: no env
    assert os.path.isabs(server["command"])
    assert not (home / ".claude").exists() and not (home / ".claude.json").exists()

    assert ok(setup(home, "claude-desktop", env=env)).splitlines()[-1] == (
        "pgrecall is already set up in Claude Desktop: nothing changed"
    )
    ok(setup(home, "claude-desktop", "--remove", env=env))
    assert config_file.read_text() == original


def test_config_variables_are_carried_resolved(home, tmp_path):
    config = tmp_path / "conf" / "config.toml"
    config.parent.mkdir()
    config.write_text("")
    env = dict(os.environ, PGRECALL_CONFIG="conf/config.toml", PGRECALL_HOOK_DEADLINE="9")
    result = subprocess.run(
        [*COMMAND, "setup", "claude-code", "--home-dir", str(home)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    server = loaded(home / ".claude.json")["mcpServers"]["pgrecall"]
    assert server["env"] == {"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_CONFIG": str(config)}
    [group] = loaded(home / ".claude" / "settings.json")["hooks"]["SessionStart"]
    [entry] = group["hooks"]
    assert entry["timeout"] == 11
    assert shlex.split(entry["command"])[:3] == [
        f"PGRECALL_HOME={tmp_path / 'home'}",
        f"PGRECALL_CONFIG={config}",
        "PGRECALL_HOOK_DEADLINE=9",
    ]


HAND_WRITTEN = """{
  "permissions": {"allow": ["Bash(npm run lint)", "Read(~/notes/**)"], "deny": ["Read(./.env)"]},
  "env": { "BASH_DEFAULT_TIMEOUT_MS": "60000" },
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "log.sh"}]}]
  },
  "model": "opus"
}
"""


def test_the_users_one_line_arrays_and_objects_stay_as_written(home):
    """Only what pgrecall adds shows in the diff and changes in the file; the user's one-line
    `permissions`, `env` and hooks are neither reflowed nor re-spaced."""
    settings_file = home / ".claude" / "settings.json"
    settings_file.write_text(HAND_WRITTEN)
    output = ok(setup(home, "claude-code", "--dry-run"))
    diff = output.split(f"+++ {settings_file}\n", 1)[1].split("--- ", 1)[0]
    removed = [line for line in diff.splitlines() if line.startswith("-")]
    assert removed == ['-    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "log.sh"}]}]']
    assert '+    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "log.sh"}]}],' in diff
    changed = [line for line in diff.splitlines() if line[:1] in "+-"]
    assert not [line for line in changed if "permissions" in line or "BASH_DEFAULT_TIMEOUT_MS" in line]

    ok(setup(home, "claude-code"))
    written = settings_file.read_text()
    for line in HAND_WRITTEN.splitlines()[1:4] + ['  "model": "opus"']:
        assert line + "\n" in written, line
    assert set(loaded(settings_file)["hooks"]) == {
        "PreToolUse",
        "UserPromptSubmit",
        "SessionStart",
        "SessionEnd",
        "PreCompact",
    }
    ok(setup(home, "claude-code", "--remove"))
    assert settings_file.read_text() == HAND_WRITTEN


def test_sessions_are_kept_once_claude_codes_folder_is_an_archive_source(home, tmp_path):
    env = dict(os.environ, PGRECALL_CONFIG=str(tmp_path / "config.toml"))
    hint = "sessions are kept when they end once Claude Code's folder is a source: pgrecall sources add claude-code"
    assert hint in ok(setup(home, "claude-code", env=env)).splitlines()
    settings = loaded(home / ".claude" / "settings.json")
    [ended], [compacted] = settings["hooks"]["SessionEnd"], settings["hooks"]["PreCompact"]
    assert shlex.split(ended["hooks"][0]["command"])[-2:] == ["hook", "session-end"]
    assert shlex.split(compacted["hooks"][0]["command"])[-2:] == ["hook", "pre-compact"]
    (home / ".claude" / "projects").mkdir()
    added = run_cli("sources", "add", "claude-code", "--path", str(home / ".claude" / "projects"), env=env)
    assert added.returncode == 0, added.stderr
    assert hint not in ok(setup(home, "claude-code", env=env))


def test_the_plugin_route_replaces_the_settings_entries_and_says_how_to_register_without_claude(home, tmp_path):
    before = files_in(home)
    env = dict(os.environ, PATH="/usr/bin:/bin")  # no claude on it
    ok(setup(home, "claude-code", env=env))
    output = ok(setup(home, "claude-code", "--plugin", env=env))
    marketplace = tmp_path / "home" / "claude-code-marketplace"  # PGRECALL_HOME/claude-code-marketplace
    written = sorted(str(path.relative_to(marketplace)) for path in marketplace.rglob("*") if path.is_file())
    assert written == sorted(claude_plugin.repository_files())  # every file of the plugin, and no other
    assert f"wrote {len(written)} files of the plugin in {marketplace}" in output
    assert (
        f"claude is not on PATH: register the marketplace with `claude plugin marketplace add {marketplace}`" in output
    )
    assert "install the plugin with `claude plugin install pgrecall@pgrecall`" in output
    # The settings route's entries are gone: nothing runs twice.
    assert {name: data for name, data in files_in(home).items() if ".pgrecall-backup-" not in name} == before

    hooks = loaded(marketplace / "plugins" / "pgrecall" / "hooks" / "hooks.json")["hooks"]
    words = shlex.split(hooks["SessionEnd"][0]["hooks"][0]["command"])
    assert words[0] == f"PGRECALL_HOME={tmp_path / 'home'}" and os.path.isabs(words[1])
    assert words[-2:] == ["hook", "session-end"]
    server = loaded(marketplace / "plugins" / "pgrecall" / ".mcp.json")["mcpServers"]["pgrecall"]
    assert server["command"] == words[1] and server["args"][-1] == "mcp"

    again = ok(setup(home, "claude-code", "--plugin", env=env))
    assert f"{marketplace}: no change" in again and again.splitlines()[-1].endswith("nothing changed")
    removed = ok(setup(home, "claude-code", "--remove", env=env))
    assert "claude is not on PATH: if the plugin is installed, remove it with" in removed
    assert marketplace.is_dir()  # kept while Claude Code may still read it


def test_plugin_is_for_claude_code_only(tmp_path):
    done = setup(tmp_path, "claude-desktop", "--plugin")
    assert (done.returncode, done.stdout) == (1, "")
    assert "--plugin is for claude-code" in done.stderr
