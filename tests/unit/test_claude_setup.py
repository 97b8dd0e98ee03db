"""pgrecall's entries in Claude Code's and Claude Desktop's settings (pgrecall.claude_integration.claude_setup), and the
file edits that write them (pgrecall.claude_integration.json_edits), on realistic settings files in a temporary folder."""

from __future__ import annotations

import copy
import json
import os
import shlex
import stat
from datetime import UTC, datetime

import pytest

from pgrecall.claude_integration import claude_setup as cs
from pgrecall.claude_integration import json_edits
from pgrecall.errors import ConfigurationError, InvalidInput

PGRECALL = "/home/ada/.local/pipx/venvs/pgrecall/bin/pgrecall"
ARGV = (PGRECALL,)
ENV = {"PGRECALL_HOME": "/home/ada/pgrecall data"}
WANTED = cs.hook_entries(ARGV, ENV, 5)
NOW = datetime(2026, 12, 2, 0, 30, 5, tzinfo=UTC)

# ~/.claude/settings.json as a user has it: permissions, env, a status line, a PreToolUse Bash
# hook and a UserPromptSubmit hook of their own.
SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run lint)", "Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
    "env": {"BASH_DEFAULT_TIMEOUT_MS": "60000", "CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
    "model": "opus",
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh", "padding": 0},
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
    "includeCoAuthoredBy": False,
}

# ~/.claude.json: Claude Code's state, with user-scope and project-scope MCP servers.
CLAUDE_JSON = {
    "numStartups": 41,
    "installMethod": "native",
    "autoUpdates": True,
    "theme": "dark",
    "oauthAccount": {"displayName": "Zoë Ångström", "emailAddress": "zoe@example.com"},
    "projects": {
        "/home/ada/src/shop": {
            "allowedTools": [],
            "mcpServers": {"pgrecall": {"type": "stdio", "command": "/opt/old/pgrecall", "args": ["mcp"], "env": {}}},
            "hasTrustDialogAccepted": True,
        }
    },
    "mcpServers": {
        "github": {
            "type": "http",
            "url": "https://api.githubcopilot.com/mcp/",
            "headers": {"Authorization": "Bearer x"},
        },
        "filesystem": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/ada/docs"],
            "env": {},
        },
    },
}


def dumped(data) -> str:
    return json.dumps(data, indent=2)


def pgrecall_commands(settings: dict) -> dict[str, list[str]]:
    return {
        event: [h["command"] for g in groups for h in g.get("hooks", []) if cs.pgrecall_hook(h.get("command"))]
        for event, groups in settings.get("hooks", {}).items()
    }


# --- the hooks ---------------------------------------------------------------------------------


def test_hooks_are_added_beside_the_users_own_and_everything_else_is_kept_in_order():
    result = cs.with_hooks(SETTINGS, WANTED)

    assert pgrecall_commands(result) == {
        "PreToolUse": [],
        "UserPromptSubmit": [f"PGRECALL_HOME='/home/ada/pgrecall data' {PGRECALL} hook prompt"],
        "SessionStart": [f"PGRECALL_HOME='/home/ada/pgrecall data' {PGRECALL} hook session-start"],
        "SessionEnd": [f"PGRECALL_HOME='/home/ada/pgrecall data' {PGRECALL} hook session-end"],
        "PreCompact": [f"PGRECALL_HOME='/home/ada/pgrecall data' {PGRECALL} hook pre-compact"],
    }
    # The user's prompt hook runs first, as before; pgrecall's is a matcher group of its own.
    assert result["hooks"]["UserPromptSubmit"] == [
        SETTINGS["hooks"]["UserPromptSubmit"][0],
        {"hooks": [WANTED["UserPromptSubmit"]]},
    ]
    assert result["hooks"]["SessionStart"] == [{"hooks": [WANTED["SessionStart"]]}]
    assert list(result) == list(SETTINGS)
    assert {k: v for k, v in result.items() if k != "hooks"} == {k: v for k, v in SETTINGS.items() if k != "hooks"}
    assert result["hooks"]["PreToolUse"] == SETTINGS["hooks"]["PreToolUse"]
    assert SETTINGS["hooks"]["UserPromptSubmit"] == [
        {"hooks": [{"type": "command", "command": "~/.claude/hooks/no-secrets.py", "timeout": 10}]}
    ]  # the input is not changed


def test_hook_entries_are_claude_codes_command_hooks_with_a_timeout_in_seconds():
    assert WANTED["SessionStart"] == {
        "type": "command",
        "command": f"PGRECALL_HOME='/home/ada/pgrecall data' {PGRECALL} hook session-start",
        "timeout": 5,
    }
    assert set(WANTED) == {"SessionStart", "UserPromptSubmit", "SessionEnd", "PreCompact"}


def test_adding_twice_is_adding_once():
    once = cs.with_hooks(SETTINGS, WANTED)
    assert dumped(cs.with_hooks(once, WANTED)) == dumped(once)


def test_removing_restores_the_original_in_order():
    assert dumped(cs.without_hooks(cs.with_hooks(SETTINGS, WANTED))) == dumped(SETTINGS)
    assert cs.without_hooks(cs.with_hooks({}, WANTED)) == {}


def test_an_older_pgrecall_hook_is_replaced_in_place_and_duplicates_go():
    old = "PGRECALL_HOME=/old/home /opt/old-venv/bin/pgrecall hook prompt"
    other = {"type": "command", "command": "~/.claude/hooks/no-secrets.py"}
    settings = {
        "hooks": {
            "UserPromptSubmit": [
                {"matcher": "", "hooks": [other, {"type": "command", "command": old, "timeout": 3}]},
                {"hooks": [{"type": "command", "command": "python3 -m pgrecall.cli hook prompt"}]},
            ],
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "pgrecall hook session-start"}]}
            ],
        }
    }
    result = cs.with_hooks(settings, WANTED)
    assert result["hooks"]["UserPromptSubmit"] == [{"matcher": "", "hooks": [other, WANTED["UserPromptSubmit"]]}]
    # The user narrowed pgrecall's session hook to new sessions: that choice stays.
    assert result["hooks"]["SessionStart"] == [{"matcher": "startup", "hooks": [WANTED["SessionStart"]]}]


def test_removing_takes_only_pgrecalls_entries_out():
    other = {"type": "command", "command": "~/.claude/hooks/no-secrets.py"}
    settings = {
        "hooks": {
            "UserPromptSubmit": [{"hooks": [other, {"type": "command", "command": f"{PGRECALL} hook prompt"}]}],
            "SessionStart": [{"hooks": [{"type": "command", "command": "/usr/bin/pgrecall hook session-start"}]}],
            "Stop": [],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send 'pgrecall hook prompt'"}]}],
        },
        "model": "opus",
    }
    assert cs.without_hooks(settings) == {
        "hooks": {
            "UserPromptSubmit": [{"hooks": [other]}],
            "Stop": [],  # empty before: not pgrecall's to remove
            "Notification": settings["hooks"]["Notification"],
        },
        "model": "opus",
    }
    assert cs.without_hooks({"model": "opus"}) == {"model": "opus"}
    assert cs.without_hooks({"hooks": {}}) == {"hooks": {}}


@pytest.mark.parametrize(
    ("command", "subcommand"),
    [
        (f"{PGRECALL} hook prompt", "prompt"),
        ("pgrecall hook session-start", "session-start"),
        ("PGRECALL_HOME=/x PGRECALL_CONFIG='/a b/c.toml' /opt/v/bin/pgrecall hook prompt", "prompt"),
        ("'/home/ada/my tools/bin/pgrecall' -v hook prompt", "prompt"),
        ("/usr/bin/python3.11 -m pgrecall.cli hook session-start", "session-start"),
        ("python -m pgrecall hook prompt", "prompt"),
        ("/opt/v/bin/pgrecall hook session-end", "session-end"),
        ("pgrecall hook pre-compact", "pre-compact"),
        ("pgrecall search 'hook prompt'", None),
        ("pgrecall hook stop", None),
        ("echo pgrecall hook prompt", None),
        ("/usr/bin/pgrecall-wrapper hook prompt", None),
        ("python -m other hook prompt", None),
        ("pgrecall hook 'prompt", None),  # unbalanced quote
        ("", None),
        (None, None),
        (["pgrecall", "hook", "prompt"], None),
    ],
)
def test_pgrecall_hook_recognises_pgrecalls_hook_commands_only(command, subcommand):
    assert cs.pgrecall_hook(command) == subcommand


def test_hook_command_quotes_for_the_shell_and_is_recognised():
    argv = ("/home/ada/my tools/bin/python", "-m", "pgrecall.cli")
    env = {"PGRECALL_HOME": "/home/ada/it's here", "PGRECALL_CONFIG": "/c.toml"}
    command = cs.hook_command(argv, "prompt", env)
    words = shlex.split(command)
    assert words == [
        "PGRECALL_HOME=/home/ada/it's here",
        "PGRECALL_CONFIG=/c.toml",
        "/home/ada/my tools/bin/python",
        "-m",
        "pgrecall.cli",
        "hook",
        "prompt",
    ]
    assert cs.pgrecall_hook(command) == "prompt"


@pytest.mark.parametrize(
    "settings",
    [
        {"hooks": []},
        {"hooks": {"UserPromptSubmit": {"hooks": []}}},
        {"hooks": {"SessionStart": ["pgrecall hook session-start"]}},
        {"hooks": {"SessionStart": [{"hooks": "pgrecall hook session-start"}]}},
        [],
        "settings",
    ],
)
def test_settings_of_another_shape_are_refused(settings):
    with pytest.raises(InvalidInput):
        cs.with_hooks(settings, WANTED)


# --- the MCP server ----------------------------------------------------------------------------


def test_the_mcp_server_is_stored_as_claude_mcp_add_stores_it_last_among_the_users():
    server = cs.mcp_server(ARGV, ENV)
    assert server == {"type": "stdio", "command": PGRECALL, "args": ["mcp"], "env": ENV}
    result = cs.with_mcp_server(CLAUDE_JSON, server)
    assert list(result["mcpServers"]) == ["github", "filesystem", "pgrecall"]
    assert {k: v for k, v in result.items() if k != "mcpServers"} == {
        k: v for k, v in CLAUDE_JSON.items() if k != "mcpServers"
    }
    assert list(result) == list(CLAUDE_JSON)
    assert dumped(cs.with_mcp_server(result, server)) == dumped(result)
    assert dumped(cs.without_mcp_server(result)) == dumped(CLAUDE_JSON)
    # A project's own pgrecall server (`claude mcp add` in its local scope) is the user's.
    assert cs.without_mcp_server(result)["projects"] == CLAUDE_JSON["projects"]


def test_an_older_mcp_entry_is_replaced_where_it_is():
    config = copy.deepcopy(CLAUDE_JSON)
    config["mcpServers"] = {"pgrecall": {"command": "/opt/old/pgrecall", "args": ["mcp"]}, **config["mcpServers"]}
    result = cs.with_mcp_server(config, cs.mcp_server(ARGV, {}))
    assert list(result["mcpServers"]) == ["pgrecall", "github", "filesystem"]
    assert result["mcpServers"]["pgrecall"] == {"type": "stdio", "command": PGRECALL, "args": ["mcp"], "env": {}}


def test_claude_desktops_entry_has_no_transport_type_and_env_only_when_set():
    argv = ("/usr/bin/python3", "-m", "pgrecall.cli")
    assert cs.mcp_server(argv, {}, desktop=True) == {
        "command": "/usr/bin/python3",
        "args": ["-m", "pgrecall.cli", "mcp"],
    }
    assert cs.mcp_server(ARGV, ENV, desktop=True) == {"command": PGRECALL, "args": ["mcp"], "env": ENV}
    assert cs.without_mcp_server(cs.with_mcp_server({}, {"command": "x"})) == {}
    assert cs.without_mcp_server({"mcpServers": {}}) == {"mcpServers": {}}


def test_mcp_servers_of_another_shape_are_refused():
    with pytest.raises(InvalidInput, match="mcpServers must be a JSON object"):
        cs.with_mcp_server({"mcpServers": ["pgrecall"]}, {})


# --- what the entries run ----------------------------------------------------------------------


def test_launcher_is_the_pgrecall_script_by_absolute_path_else_python_m():
    scripts = {"/venv/bin/pgrecall", "/other/bin/pgrecall"}
    is_file = scripts.__contains__
    assert cs.launcher("/other/bin/pgrecall", "/venv/bin/python", is_file) == ("/other/bin/pgrecall",)
    # python -m pgrecall.cli: argv[0] is the module's file; the script beside this Python is the same install.
    assert cs.launcher("/src/pgrecall/cli/__main__.py", "/venv/bin/python", is_file) == ("/venv/bin/pgrecall",)
    assert cs.launcher("/src/pgrecall/cli/__main__.py", "/usr/bin/python3", is_file) == (
        "/usr/bin/python3",
        "-m",
        "pgrecall.cli",
    )
    assert cs.launcher("pgrecall", "/usr/bin/python3", lambda path: path == "pgrecall") == (
        os.path.join(os.getcwd(), "pgrecall"),
    )


def test_only_the_variables_the_user_set_are_carried_with_absolute_values():
    resolved = {"PGRECALL_HOME": "/home/ada/pg", "PGRECALL_CONFIG": "/home/ada/.config/pgrecall/config.toml"}
    assert cs.carried_environment({"PGRECALL_HOME": "~/pg", "PATH": "/bin"}, resolved) == {
        "PGRECALL_HOME": "/home/ada/pg"
    }
    assert cs.carried_environment({"PGRECALL_HOME": ""}, resolved) == {}
    assert cs.carried_environment({"PGRECALL_CONFIG": "c.toml", "PGRECALL_HOME": "x"}, resolved) == resolved


@pytest.mark.parametrize(("deadline", "timeout"), [(None, 5), ("", 5), ("1.5", 5), ("3", 5), ("3.2", 6), ("10", 12)])
def test_claude_codes_timeout_stays_above_the_hooks_deadline(deadline, timeout):
    assert cs.hook_timeout(deadline) == timeout


@pytest.mark.parametrize("deadline", ["soon", "0", "-1", "nan", "inf"])
def test_a_bad_deadline_is_refused(deadline):
    with pytest.raises(ConfigurationError, match="PGRECALL_HOOK_DEADLINE"):
        cs.hook_timeout(deadline)


@pytest.mark.parametrize(
    ("platform", "parts"),
    [
        ("linux", (".config", "Claude")),
        ("darwin", ("Library", "Application Support", "Claude")),
        ("win32", ("AppData", "Roaming", "Claude")),
    ],
)
def test_claude_desktops_config_file(tmp_path, platform, parts):
    assert cs.claude_desktop_file(tmp_path, platform) == tmp_path.joinpath(*parts, "claude_desktop_config.json")


def test_claude_codes_files(tmp_path):
    assert cs.claude_code_files(tmp_path) == (tmp_path / ".claude" / "settings.json", tmp_path / ".claude.json")


# --- rendering and diffs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "original",
    [
        json.dumps(CLAUDE_JSON, indent=2),
        json.dumps(CLAUDE_JSON, indent=2) + "\n",
        json.dumps(CLAUDE_JSON, indent=2, ensure_ascii=False),  # as JSON.stringify(data, null, 2) writes it
        json.dumps(CLAUDE_JSON, indent=4) + "\n",
        json.dumps(CLAUDE_JSON, indent="\t"),
    ],
)
def test_render_writes_as_the_original_was_written(original):
    assert cs.render(json.loads(original), original) == original


def test_render_of_a_new_file():
    assert cs.render({"a": "é"}) == '{\n  "a": "é"\n}\n'


def test_unified_diff_of_a_new_and_of_a_changed_file():
    diff = cs.unified_diff("/h/.claude.json", None, '{\n  "a": 1\n}\n')
    assert diff.splitlines() == ["--- /dev/null", "+++ /h/.claude.json", "@@ -0,0 +1,3 @@", "+{", '+  "a": 1', "+}"]
    diff = cs.unified_diff("/h/s.json", '{\n  "a": 1\n}', '{\n  "a": 2\n}')
    assert '-  "a": 1\n+  "a": 2\n' in diff
    assert diff.endswith(" }\n\\ No newline at end of file\n")


# --- the files ---------------------------------------------------------------------------------


def add_hooks(data):
    return cs.with_hooks(data, WANTED)


def files_in(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_missing_file_and_folder_are_created_private(tmp_path):
    path = tmp_path / "home" / ".claude" / "settings.json"
    change = json_edits.plan(path, add_hooks)
    assert change.before is None and change.changed
    [written] = json_edits.apply([change], NOW)
    assert written == json_edits.Written(path, None)
    assert json.loads(path.read_text()) == {"hooks": {event: [{"hooks": [WANTED[event]]}] for event in WANTED}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert files_in(tmp_path) == {"home/.claude/settings.json": path.read_bytes()}


def test_a_missing_file_is_not_created_to_remove_nothing(tmp_path):
    change = json_edits.plan(tmp_path / "settings.json", cs.without_hooks, create=False)
    assert not change.changed
    assert json_edits.apply([change], NOW) == []
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_backed_up_then_replaced_with_its_mode(tmp_path):
    path = tmp_path / "settings.json"
    original = json.dumps(SETTINGS, indent=2)
    path.write_text(original)
    path.chmod(0o640)
    [written] = json_edits.apply([json_edits.plan(path, add_hooks)], NOW)

    assert written.backup == tmp_path / "settings.json.pgrecall-backup-20261202T003005Z"
    assert written.backup.read_text() == original
    assert stat.S_IMODE(written.backup.stat().st_mode) == 0o640
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert json.loads(path.read_text()) == add_hooks(SETTINGS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json", written.backup.name]  # no temporary left

    # Unchanged: nothing written, no backup.
    assert not json_edits.plan(path, add_hooks).changed
    [removed] = json_edits.apply([json_edits.plan(path, cs.without_hooks)], NOW)
    assert path.read_text() == original
    assert removed.backup.name == "settings.json.pgrecall-backup-20261202T003005Z-2"


def test_an_empty_file_is_an_empty_object(tmp_path):
    path = tmp_path / ".claude.json"
    path.write_text("\n")
    [written] = json_edits.apply([json_edits.plan(path, lambda d: cs.with_mcp_server(d, {"command": "x"}))], NOW)
    assert path.read_text() == '{\n  "mcpServers": {\n    "pgrecall": {\n      "command": "x"\n    }\n  }\n}\n'
    assert written.backup.read_text() == "\n"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "model": "opus",\n}\n', "line 3, column 1"),
        ('{\n  "hooks": {\n    "Stop": [\n  }\n}', "line 4, column 3"),
        ("{'model': 'opus'}", "line 1, column 2"),
    ],
)
def test_malformed_json_is_refused_with_its_line_and_column(tmp_path, text, where):
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(json_edits.SetupError) as error:
        json_edits.plan(path, add_hooks)
    message = str(error.value)
    assert message.startswith(f"{path}: invalid JSON at {where}: ")
    assert message.endswith("nothing written") and "\n" not in message
    assert files_in(tmp_path) == {"settings.json": text.encode()}


def test_a_file_of_another_shape_is_refused_naming_it(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": ["pgrecall"]}')
    with pytest.raises(json_edits.SetupError, match=r"settings.json: hooks must be a JSON object, not list; nothing"):
        json_edits.plan(path, add_hooks)


def test_a_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "settings.json"
    path.write_bytes(b'{"model": "\xff"}')
    with pytest.raises(json_edits.SetupError, match="not UTF-8 text"):
        json_edits.plan(path, add_hooks)


def test_a_read_only_file_is_refused_and_nothing_is_written(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(SETTINGS, indent=2))
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps(CLAUDE_JSON, indent=2))
    config.chmod(0o444)
    before = files_in(tmp_path)
    changes = [
        json_edits.plan(settings, add_hooks),
        json_edits.plan(config, lambda d: cs.with_mcp_server(d, cs.mcp_server(ARGV, {}))),
    ]
    with pytest.raises(json_edits.SetupError, match=r"\.claude\.json: the file is read-only; nothing written$"):
        json_edits.apply(changes, NOW)
    assert files_in(tmp_path) == before


def test_a_read_only_folder_is_refused_and_nothing_is_written(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o555)
    try:
        change = json_edits.plan(home / ".claude" / "settings.json", add_hooks)
        with pytest.raises(json_edits.SetupError, match=f"its folder {home} is read-only; nothing written$"):
            json_edits.apply([change], NOW)
        assert list(home.iterdir()) == []
    finally:
        home.chmod(0o755)


def test_a_linked_file_is_written_where_the_link_points(tmp_path):
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps(SETTINGS, indent=2))
    link = tmp_path / "settings.json"
    link.symlink_to(dotfiles)
    [written] = json_edits.apply([json_edits.plan(link, add_hooks)], NOW)
    assert link.is_symlink() and link.resolve() == dotfiles
    assert json.loads(dotfiles.read_text()) == add_hooks(SETTINGS)
    assert written.backup.parent == dotfiles.parent


def test_a_file_changed_meanwhile_stops_the_set_up_and_the_earlier_files_are_restored(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(SETTINGS, indent=2))
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps(CLAUDE_JSON, indent=2))
    changes = [
        json_edits.plan(settings, add_hooks),
        json_edits.plan(config, lambda d: cs.with_mcp_server(d, cs.mcp_server(ARGV, {}))),
    ]
    # Claude Code saves its state between our read and our write.
    changed = dict(CLAUDE_JSON, numStartups=42)
    config.write_text(json.dumps(changed, indent=2))
    with pytest.raises(json_edits.SetupError, match="changed by another program meanwhile; run the command again"):
        json_edits.apply(changes, NOW)
    assert files_in(tmp_path) == {
        ".claude.json": json.dumps(changed, indent=2).encode(),
        "settings.json": json.dumps(SETTINGS, indent=2).encode(),
    }


def test_backup_names_never_collide(tmp_path):
    target = tmp_path / "settings.json"
    taken = {tmp_path / "settings.json.pgrecall-backup-20261202T003005Z"}
    assert (
        json_edits.backup_path(target, NOW, taken.__contains__).name
        == "settings.json.pgrecall-backup-20261202T003005Z-2"
    )
