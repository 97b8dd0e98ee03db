"""Ordinary accidents to a memory folder, under a running `pgrecall serve` (issue 22, item 0), and
updaters racing from several processes (item 2): each ends in one line or a recorded failure,
never a traceback or a 500, never a file indexed from outside the memory folder.

A note made unreadable (mode 000) stays readable to root: when the tests run as root (as in
containers), the commands of the unreadable-note test run as an ordinary user through setpriv
(the user owning the embedded server's data, who may reach its socket; else nobody), in a home of
that user's.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import textwrap

import httpx
import psycopg
import pytest

from tests.notes import write_notes
from tests.service import Process, query, service_env, wait_for
from tests.support.cli import COMMAND

OTHER = "Deploys go out on Tuesdays: Friday deploys broke on-call twice in March."
FACT = "The zorblax cache expires after 17 minutes because the upstream API rate-limits us."


@pytest.fixture
def user_home(db_url, tmp_path):
    """(the prefix that runs a command as an ordinary user, a home of that user's): the test's own
    user and tmp_path/user; under root, the owner of the embedded server's data (who may reach its
    socket) or nobody, through setpriv."""
    home = tmp_path / "user"
    home.mkdir()
    if os.geteuid() != 0:
        return (), home
    host = psycopg.conninfo.conninfo_to_dict(db_url).get("host") or ""
    uid = os.stat(host).st_uid if host.startswith("/") else 0
    account = pwd.getpwuid(uid) if uid != 0 else pwd.getpwnam("nobody")
    for folder in (tmp_path.parent, tmp_path):  # pytest's are 0700: let the user pass through
        folder.chmod(0o711)
    os.chown(home, account.pw_uid, account.pw_gid)
    return ("setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups"), home


def cli(*args: str, env: dict[str, str], user=(), timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*user, *COMMAND, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


class UserProcess(Process):
    """A long-lived `pgrecall` command, run as `user` (a prefix from user_home)."""

    def __init__(self, args: list[str], env: dict[str, str], log_path, user=()):
        self.log_path = log_path
        self.log_file = open(log_path, "ab")  # noqa: SIM115 (closed by stop or kill)
        self.popen = subprocess.Popen(
            [*user, *COMMAND, *args], env=env, stdin=subprocess.DEVNULL, stdout=self.log_file, stderr=subprocess.STDOUT
        )


def one_line_error(result, *fragments: str) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    error = result.stderr.strip()
    assert "Traceback" not in result.stderr and "\n" not in error, result.stderr
    assert error.startswith("pgrecall: error: ") and all(fragment in error for fragment in fragments), error
    return error


def ok(result) -> str:
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _watched(db_url) -> list[tuple[str, str]]:
    return query(db_url, "SELECT name, path FROM pgrecall.roots WHERE watch_mode IS NOT NULL ORDER BY name")


@pytest.mark.slow  # a service, an API and a dozen commands
def test_an_unreadable_note_ends_in_one_line_everywhere_under_a_running_service(db_url, tmp_path, user_home):
    user, base = user_home
    notes = write_notes(base / "notes", {"a.md": "# A\n\nLighthouses along the northern coast."})
    home = base / "home"
    home.mkdir()
    owner = base.stat()
    for path in (notes, notes / "a.md", home):
        os.chown(path, owner.st_uid, owner.st_gid)
    env = service_env(db_url, home, PGRECALL_RECONCILE_SECONDS="1", HOME=str(base))
    folder = home / "memories"

    def as_user(*args: str, env: dict[str, str]):
        return cli(*args, env=env, user=user)

    service = UserProcess(["serve", str(notes)], env, tmp_path / "serve.log", user)
    api = None
    try:
        wait_for(lambda: len(_watched(db_url)) == 2, 120, message="both roots watched")
        hidden = json.loads(ok(as_user("remember", FACT, "--json", env=env)))
        shown = json.loads(ok(as_user("remember", OTHER, "--json", env=env)))
        note = folder / hidden["path"]
        note.chmod(0o000)

        listing = as_user("memories", env=env)
        assert [line.split()[0] for line in ok(listing).splitlines()] == [shown["id"]]
        assert listing.stderr.strip() == (
            f"pgrecall: warning: cannot read the memory note {hidden['path']} (its permissions?): not listed"
        )
        assert "memories:" in ok(as_user("status", env=env))
        for args in (("forget", hidden["id"]), ("update", hidden["id"], "--text", "x")):
            one_line_error(
                as_user(*args, env=env), f"cannot read the memory note {hidden['path']}", "Permission denied"
            )
        one_line_error(as_user("remember", FACT, env=env), f"memory {hidden['id']} holds this text", "cannot be read")
        assert sorted(p.name for p in folder.rglob("*.md")) == sorted(
            [note.name, (folder / shown["path"]).name]
        )  # no second copy, nothing moved to the trash

        port = _free_port()
        api = UserProcess(["api", "--read-only", "--port", str(port)], env, tmp_path / "api.log", user)

        def listed():
            try:
                return httpx.get(f"http://127.0.0.1:{port}/memories", timeout=5)
            except httpx.TransportError:
                return None

        response = wait_for(listed, 120, interval=0.5, message="the read-only API up")
        assert response.status_code == 200, response.text
        assert [m["id"] for m in response.json()["memories"]] == [shown["id"]]
        assert response.json()["unreadable"] == [hidden["path"]]

        # The service meets it when the note changes: a recorded failure, the service keeps running.
        os.utime(note)
        failed = "SELECT error FROM pgrecall.documents WHERE source_root = %s AND path = %s AND error IS NOT NULL"
        error = wait_for(lambda: query(db_url, failed, (str(folder), hidden["path"])), 60, message="the failure")
        assert "Permission denied" in error[0][0]
        failures = json.loads(ok(as_user("failures", "--json", env=env)))
        assert hidden["path"] in json.dumps(failures)
        assert service.popen.poll() is None
    finally:
        note.chmod(0o600)
        if api is not None:
            api.stop()
        assert service.stop() == 0


@pytest.mark.slow  # two services in turn and a few commands
def test_a_memory_folder_replaced_by_a_link_is_never_followed_by_a_running_service(db_url, tmp_path):
    notes = write_notes(tmp_path / "notes", {"a.md": "# A\n\nLighthouses along the northern coast."})
    home = tmp_path / "home"
    env = service_env(db_url, home, PGRECALL_RECONCILE_SECONDS="1", PGRECALL_MEMORY_TRASH_DAYS="0")
    folder = home / "memories"
    elsewhere = write_notes(tmp_path / "elsewhere", {"private.md": "# Private\n\nThe neighbour's diary, not ours."})
    outside = "SELECT count(*) FROM pgrecall.documents WHERE path = 'private.md' AND error IS NULL"
    service = UserProcess(["serve", str(notes)], env, tmp_path / "serve.log")
    try:
        wait_for(lambda: len(_watched(db_url)) == 2, 120, message="both roots watched")
        kept = json.loads(ok(cli("remember", OTHER, "--json", env=env)))
        # A forgotten memory goes to the trash, and the service purges it after PGRECALL_MEMORY_TRASH_DAYS (0).
        gone = json.loads(ok(cli("remember", FACT, "--json", env=env)))
        ok(cli("forget", gone["id"], env=env))
        wait_for(lambda: service.events("memory_purged"), 60, message="the trash purged by the service")
        assert not list((folder / ".trash").rglob("*.md"))
        assert "no forgotten memories" in ok(cli("memories", "--forgotten", env=env))
        # Its removal from the index is the service's job, done in its own time: waited for here,
        # since once the folder is a link the memory root is refused and nothing in it moves.
        in_index = "SELECT path FROM pgrecall.documents WHERE source_root = %s AND parent_id IS NULL"
        wait_for(
            lambda: query(db_url, in_index, (str(folder),)) == [(kept["path"],)],
            60,
            message="the forgotten memory out of the index",
        )

        shutil.move(folder, tmp_path / "moved-away")
        folder.symlink_to(elsewhere, target_is_directory=True)
        wait_for(lambda: service.events("root_is_a_link"), 60, message="the reconciliation refusing the link")
        one_line_error(cli("remember", "Written through a link?", env=env), "is a symbolic link")
        one_line_error(cli("memories", env=env), "is a symbolic link")
        assert sorted(p.name for p in elsewhere.iterdir()) == ["private.md"]
        assert query(db_url, outside) == [(0,)]
        assert service.popen.poll() is None
    finally:
        assert service.stop() == 0

    # After a restart the memory root is still the folder's own path, never the link's target.
    again = UserProcess(["serve", str(notes)], env, tmp_path / "serve-again.log")
    try:
        wait_for(lambda: again.events("root_is_a_link"), 120, message="the restarted reconciliation refusing it")
        assert ("memories", str(folder)) in _watched(db_url)
        assert query(db_url, "SELECT count(*) FROM pgrecall.roots WHERE path = %s", (str(elsewhere),)) == [(0,)]
        assert query(db_url, outside) == [(0,)]
        indexed = "SELECT path FROM pgrecall.documents WHERE source_root = %s AND parent_id IS NULL"
        assert query(db_url, indexed, (str(folder),)) == [(kept["path"],)]  # kept as it was, not doubled
    finally:
        assert again.stop() == 0


PYTHON_UPDATER = textwrap.dedent(
    """
    import sys
    from pgrecall.composition.memories import update_memory
    from pgrecall.memory.client import StaleVersion
    try:
        update_memory(sys.argv[1], text=sys.argv[3], expect=sys.argv[2])
    except StaleVersion as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    """
)


@pytest.mark.slow  # eight processes at once
def test_updaters_racing_from_several_processes_lose_no_update(db_url, tmp_path):
    """Eight processes (four `pgrecall update --expect`, four Python update_memory(expect=)) update
    one memory from the version they all read: exactly one wins, the others are refused in one
    line, and the memory holds the winner's text."""
    env = service_env(db_url, tmp_path / "home")
    saved = json.loads(ok(cli("remember", FACT, "--json", env=env)))
    texts = [f"The zorblax cache expires after {minutes} minutes." for minutes in range(20, 28)]
    racers = []
    for number, text in enumerate(texts):
        if number % 2:
            args = [*COMMAND, "update", saved["id"], "--expect", saved["version"], "--text", text]
        else:
            args = [sys.executable, "-c", PYTHON_UPDATER, saved["id"], saved["version"], text]
        racers.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outcomes = [(racer.wait(300), racer.stderr.read()) for racer in racers]
    for racer in racers:
        racer.stdout.close()
        racer.stderr.close()
    winners = [text for text, (code, _) in zip(texts, outcomes, strict=True) if code == 0]
    assert len(winners) == 1, outcomes
    for code, stderr in outcomes:
        if code != 0:
            assert code == 1 and "changed since it was read" in stderr and "Traceback" not in stderr, stderr
    listed = json.loads(ok(cli("memories", "--json", env=env)))
    assert [(m["id"], m["text"]) for m in listed] == [(saved["id"], winners[0])]
    assert listed[0]["version"] != saved["version"]
