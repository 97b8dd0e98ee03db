"""Running pgrecall's long-lived commands as real processes, and waiting on conditions."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psycopg

from tests.support.cli import start_cli


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.1, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)


class Process:
    """`pgrecall <command>` in the background, its JSON log lines in a file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path):
        self.log_path = log_path
        self.log_file = open(log_path, "ab")  # noqa: SIM115 (closed by stop or kill)
        self.popen = start_cli(*args, env=env, stdout=self.log_file, stderr=subprocess.STDOUT)

    def events(self, name: str | None = None) -> list[dict]:
        found = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if name is None or event.get("event") == name:
                found.append(event)
        return found

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        try:
            return self.popen.wait(timeout)
        finally:
            self.log_file.close()

    def kill(self) -> None:
        self.popen.kill()
        self.popen.wait(10)
        self.log_file.close()


def service_env(db_url: str, home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PGRECALL_DATABASE_URL": db_url,
            "PGRECALL_HOME": str(home),
            "PGRECALL_LOG_FORMAT": "json",
            "PGRECALL_WORKERS": "4",
            "PGRECALL_STALLED_SECONDS": "4",
            "PGRECALL_RECONCILE_SECONDS": "3600",
            "PGRECALL_CONFIG": str(home / "no-config.toml"),
        }
    )
    env.update(extra)
    return env


def query(url: str, sql: str, params=()):
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def index_state(url: str, root: Path) -> dict[str, str]:
    """path -> content hash of the root's file documents without errors."""
    return dict(
        query(
            url,
            "SELECT path, content_hash FROM pgrecall.documents WHERE source_root = %s AND parent_id IS NULL AND error IS NULL",
            (str(root),),
        )
    )


def folder_state(root: Path) -> dict[str, str]:
    from pgrecall.worker.scan import iter_files

    return {p: hashlib.sha256((root / p).read_bytes()).hexdigest() for p in iter_files(root)}


def queue_idle(url: str) -> bool:
    return query(url, "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')")[0][0] == 0


def in_sync(url: str, root: Path) -> bool:
    return queue_idle(url) and index_state(url, root) == folder_state(root)


def texts(url: str, path: str) -> str:
    """The chunk texts of the document at `path`, joined."""
    return " ".join(
        row[0]
        for row in query(
            url,
            "SELECT c.text FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id WHERE d.path = %s",
            (path,),
        )
    )
