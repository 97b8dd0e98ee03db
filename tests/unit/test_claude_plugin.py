"""The plugin's files (pgrecall.claude_integration.claude_plugin) against Claude Code's documented plugin and marketplace
format, and the copy kept in the repository (deploy/claude-code) against what the code writes.
tests/system/test_claude_code_plugin.py checks the same files with Claude Code's own CLI."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from pgrecall.claude_integration import claude_plugin as cp
from pgrecall.claude_integration import claude_setup as cs

REPOSITORY_COPY = Path(__file__).parents[2] / "deploy" / "claude-code"
ARGV = ("/home/ada/.local/pipx/venvs/pgrecall/bin/pgrecall",)
ENV = {"PGRECALL_HOME": "/home/ada/pgrecall data"}
FILES = cp.marketplace_files(ARGV, ENV, 5, "1.2.3")
KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
# Claude Code's hook events (hooks reference) that pgrecall may use, and the fields of a command hook.
HOOK_EVENTS = {"SessionStart", "UserPromptSubmit", "SessionEnd", "PreCompact", "Stop", "PreToolUse", "PostToolUse"}
COMMAND_HOOK_FIELDS = {"type", "command", "timeout"}


def loaded(relative: str) -> dict:
    return json.loads(FILES[relative])


def front_matter(text: str) -> dict[str, str]:
    assert text.startswith("---\n")
    head, _, body = text[4:].partition("\n---\n")
    assert body.strip()
    return dict(line.split(": ", 1) for line in head.splitlines())


def test_the_marketplace_lists_the_plugin_by_a_path_inside_it():
    market = loaded(".claude-plugin/marketplace.json")
    assert KEBAB.fullmatch(market["name"]) and market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == "pgrecall" and entry["version"] == "1.2.3"
    assert entry["source"] == "./plugins/pgrecall" and f"{entry['source'][2:]}/.claude-plugin/plugin.json" in FILES
    assert cp.PLUGIN_ID == f"{entry['name']}@{market['name']}" == "pgrecall@pgrecall"


def test_the_plugin_manifest_has_the_required_name_and_its_metadata():
    manifest = loaded("plugins/pgrecall/.claude-plugin/plugin.json")
    assert KEBAB.fullmatch(manifest["name"])
    assert set(manifest) <= {"name", "version", "description", "author", "license", "keywords", "homepage"}
    assert manifest["version"] == "1.2.3" and manifest["license"] == "MIT" and manifest["author"]["name"]


def test_the_hooks_run_this_pgrecall_for_each_event_within_a_timeout_in_seconds():
    hooks = loaded("plugins/pgrecall/hooks/hooks.json")["hooks"]
    assert set(hooks) == set(cs.HOOK_EVENTS) and set(hooks) <= HOOK_EVENTS
    for event, groups in hooks.items():
        [group] = groups
        assert set(group) == {"hooks"}  # no matcher: every session, prompt, end and compaction
        [hook] = group["hooks"]
        assert set(hook) == COMMAND_HOOK_FIELDS and hook["type"] == "command" and hook["timeout"] == 5
        words = shlex.split(hook["command"])
        assert words == ["PGRECALL_HOME=/home/ada/pgrecall data", *ARGV, "hook", cs.HOOK_EVENTS[event]]
        assert cs.pgrecall_hook(hook["command"]) == cs.HOOK_EVENTS[event]


def test_the_mcp_server_is_this_pgrecall_with_its_environment():
    assert loaded("plugins/pgrecall/.mcp.json") == {
        "mcpServers": {"pgrecall": {"command": ARGV[0], "args": ["mcp"], "env": ENV}}
    }
    assert cp.mcp_file(("/usr/bin/python3", "-m", "pgrecall.cli"), {}) == {
        "mcpServers": {"pgrecall": {"command": "/usr/bin/python3", "args": ["-m", "pgrecall.cli", "mcp"]}}
    }


@pytest.mark.parametrize("name", ["recall", "remember"])
def test_each_skill_is_a_folder_with_a_skill_md_named_as_its_folder(name):
    fields = front_matter(FILES[f"plugins/pgrecall/skills/{name}/SKILL.md"])
    assert fields["name"] == name and len(fields["description"]) > 40
    assert "search_memory" in FILES[f"plugins/pgrecall/skills/{name}/SKILL.md"]


@pytest.mark.parametrize("switch", ["off", "on"])
def test_the_plugin_carries_the_session_switch_as_a_command_the_prompt_hook_recognises(switch):
    from pgrecall.claude_integration import hooks

    text = FILES[f"plugins/pgrecall/commands/{switch}.md"]
    assert len(front_matter(text)["description"]) > 20
    body = text.split("---", 2)[2].strip()
    # Whether Claude Code hands the hook the command as typed (/pgrecall:off) or its text.
    assert hooks.switch_of(f"/pgrecall:{switch}") == hooks.switch_of(body) == (switch == "on")
    assert "/pgrecall-" not in text  # the plugin's commands are namespaced: /pgrecall:on, /pgrecall:off


def test_every_file_is_inside_the_marketplace_and_the_manifests_in_claude_plugin():
    for relative in FILES:
        assert not relative.startswith(("/", "..")) and ".." not in relative.split("/")
    assert [r for r in FILES if r.endswith(("plugin.json", "marketplace.json"))] == [
        ".claude-plugin/marketplace.json",
        "plugins/pgrecall/.claude-plugin/plugin.json",
    ]


def test_the_repository_copy_is_what_the_code_writes_for_pgrecall_on_path():
    """Regenerate it with: .venv/bin/python -m pgrecall.claude_integration.claude_plugin deploy/claude-code"""
    files = cp.repository_files()
    assert cp.changed_files(REPOSITORY_COPY, files) == []
    on_disk = {p.relative_to(REPOSITORY_COPY).as_posix() for p in REPOSITORY_COPY.rglob("*") if p.is_file()}
    assert on_disk == set(files)
    hook = json.loads(files["plugins/pgrecall/hooks/hooks.json"])["hooks"]["SessionEnd"][0]["hooks"][0]
    assert hook["command"] == "pgrecall hook session-end"


def test_changed_files_names_the_missing_and_the_different(tmp_path):
    (tmp_path / "a").write_text("same")
    (tmp_path / "b").write_text("old")
    assert cp.changed_files(tmp_path, {"a": "same", "b": "new", "c/d": "x"}) == ["b", "c/d"]
