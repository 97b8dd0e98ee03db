"""`pgrecall setup claude-code --plugin`: pgrecall as a Claude Code plugin, from a local marketplace.

The marketplace (pgrecall.claude_integration.claude_plugin) is written under PGRECALL_HOME, its commands with this
pgrecall's absolute path, and registered with Claude Code's own command, `claude plugin marketplace
add FOLDER` (which declares it in ~/.claude/settings.json and reads it from the folder: a later
setup's changes reach the plugin at Claude Code's next start). The user then installs it with
`claude plugin install pgrecall@pgrecall`. `--remove` runs `claude plugin marketplace remove
pgrecall`, which uninstalls the plugin too, and deletes the folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pgrecall.claude_integration import claude_plugin
from pgrecall.errors import ConfigurationError
from pgrecall.settings import Settings

FOLDER = "claude-code-marketplace"  # under PGRECALL_HOME
CLAUDE_TIMEOUT = 120  # seconds for one `claude plugin ...` command


def marketplace_folder(settings: Settings) -> Path:
    return settings.home / FOLDER


@dataclasses.dataclass(frozen=True)
class Claude:
    """Claude Code's CLI, run with the home whose settings it changes."""

    executable: str
    home: Path

    @classmethod
    def find(cls, home: Path) -> Claude | None:
        found = shutil.which("claude")
        return cls(found, home) if found else None

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.executable, "plugin", *args],
            env=dict(os.environ, HOME=str(self.home)),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLAUDE_TIMEOUT,
        )
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip() or f"exit code {done.returncode}").splitlines()[-1]
            raise ConfigurationError(f"claude plugin {' '.join(args)} failed: {said}")
        return done

    def marketplaces(self) -> list[str]:
        listed = json.loads(self.run("marketplace", "list", "--json").stdout or "[]")
        return [entry.get("name") for entry in listed if isinstance(entry, dict)]


def files(argv: tuple[str, ...], env: Mapping[str, str], timeout: int) -> dict[str, str]:
    return claude_plugin.marketplace_files(argv, env, timeout, claude_plugin.version())


def write(folder: Path, wanted: Mapping[str, str]) -> list[str]:
    """The files of `wanted` that changed, written under `folder` (each atomically); their paths."""
    from pgrecall.worker.private_files import write_atomically

    changed = claude_plugin.changed_files(folder, wanted)
    for relative in changed:
        target = folder / relative
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomically(target, wanted[relative].encode("utf-8"))
    return changed


def install(settings: Settings, home: Path, wanted: Mapping[str, str], dry_run: bool) -> bool:
    """Write the marketplace and register it; print what was done and the command that installs
    it. Whether a file of the plugin changed."""
    folder = marketplace_folder(settings)
    claude = Claude.find(home)
    add = f"claude plugin marketplace add {folder}"
    if dry_run:
        changed = claude_plugin.changed_files(folder, wanted)
        for relative in changed:
            print(f"would write {folder / relative}")
        print(f"{folder}: no change" if not changed else f"then: {add}")
        return bool(changed)
    changed = write(folder, wanted)
    print(f"wrote {len(changed)} files of the plugin in {folder}" if changed else f"{folder}: no change")
    if claude is None:
        print(f"claude is not on PATH: register the marketplace with `{add}`")
    else:
        claude.run("marketplace", "add", str(folder))
        print(f"registered the marketplace {claude_plugin.MARKETPLACE} with Claude Code ({add})")
    print(
        f"install the plugin with `claude plugin install {claude_plugin.PLUGIN_ID}` "
        f"(`claude plugin details {claude_plugin.PLUGIN_ID}` shows its token cost first)"
    )
    return bool(changed)


def uninstall(settings: Settings, home: Path, dry_run: bool) -> bool:
    """Take the marketplace (and with it the plugin) out of Claude Code and delete its folder;
    False when there was neither."""
    folder = marketplace_folder(settings)
    claude = Claude.find(home)
    registered = claude is not None and claude_plugin.MARKETPLACE in claude.marketplaces()
    if not registered and not folder.exists():
        return False
    remove = f"claude plugin marketplace remove {claude_plugin.MARKETPLACE}"
    if dry_run:
        print(f"would run `{remove}` and delete {folder}" if registered else f"would delete {folder}")
        return True
    if registered:
        assert claude is not None
        claude.run("marketplace", "remove", claude_plugin.MARKETPLACE)
        print(f"removed the marketplace {claude_plugin.MARKETPLACE} and its plugin from Claude Code ({remove})")
    elif claude is None:
        print(f"claude is not on PATH: if the plugin is installed, remove it with `{remove}`; {folder} is kept")
        return True
    shutil.rmtree(folder, ignore_errors=True)
    print(f"deleted {folder}")
    return True
