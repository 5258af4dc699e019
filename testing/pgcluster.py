"""A throw-away PostgreSQL server for tests and benches: `initdb` in a temp dir, `postgres` on a loopback port.

Why this shape:

* The PostgreSQL 15 binaries (`initdb`, `postgres`) are found on PATH or under /usr/lib/postgresql/*/bin.
* `initdb` and `postgres` refuse to run as root. CI runs as root on a fresh machine, so as root the cluster
  is created and run as an unprivileged user (`postgres` if it exists, else `nobody`) through `setpriv`,
  in a directory that user owns (under /tmp: pytest's own temp dirs are 0700 root, not traversable).
* Only TCP on 127.0.0.1, no Unix socket (nothing to clean up, nothing shared with a system server).
* `fsync` stays on by default: the store's durability claims are the database's; benches measure it.
* Databases are made with `createdb`, a subprocess, so fixtures need no event loop.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from groupcoord.testing.ports import free_port


def find_binary(name: str) -> str | None:
    """`name` from PATH, else the newest /usr/lib/postgresql/<v>/bin/<name>."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def available() -> str | None:
    """None when a cluster can be started here, else the reason it cannot."""
    missing = [n for n in ("initdb", "postgres", "createdb") if find_binary(n) is None]
    if missing:
        return f"PostgreSQL server binaries not found: {', '.join(missing)}"
    return None


def _unprivileged_user() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


class PgCluster:
    """One `postgres` process; `url(db)` gives a connection string, `create_database()` a fresh database."""

    def __init__(
        self,
        *,
        fsync: bool = True,
        max_connections: int = 200,
        host: str = "127.0.0.1",
        netns: str | None = None,
        port: int | None = None,
    ) -> None:
        """`host`/`netns`: listen on `host` inside network namespace `netns` (tests/partitions/), any client
        address trusted."""
        reason = available()
        if reason:
            raise RuntimeError(reason)
        self.fsync = fsync
        self.max_connections = max_connections
        self.host = host
        self._netns = ["ip", "netns", "exec", netns] if netns else []
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="groupcoord-pg-", dir="/tmp"))
        self.data = self.dir / "data"
        self.log_path = self.dir / "postgres.log"
        self.proc: subprocess.Popen | None = None
        self._prefix: list[str] = []
        if os.geteuid() == 0:
            user = _unprivileged_user()
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self._prefix = [
                shutil.which("setpriv") or "setpriv",
                f"--reuid={user.pw_uid}",
                f"--regid={user.pw_gid}",
                "--clear-groups",
            ]

    def _run(self, *cmd: str) -> None:
        env = dict(os.environ, LC_ALL="C", LANG="C")
        subprocess.run([*self._prefix, *cmd], check=True, capture_output=True, env=env, cwd=self.dir)

    def start(self, timeout: float = 30.0) -> PgCluster:
        initdb = find_binary("initdb")
        assert initdb is not None
        self._run(
            initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync",
            "--no-instructions",
        )  # fmt: skip
        if self.host != "127.0.0.1":
            with open(self.data / "pg_hba.conf", "a") as hba:
                hba.write("host all all 0.0.0.0/0 trust\n")
        return self._launch(timeout)

    def restart(self, timeout: float = 30.0) -> PgCluster:
        """Fast shutdown (every session is terminated, as a PostgreSQL restart does), then the same data
        directory and port again."""
        self._shutdown()
        return self._launch(timeout)

    def _launch(self, timeout: float) -> PgCluster:
        postgres = find_binary("postgres")
        assert postgres is not None
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        if self._prefix:
            os.chown(self.log_path, os.stat(self.dir).st_uid, os.stat(self.dir).st_gid)
        self.proc = subprocess.Popen(
            [
                *self._netns, *self._prefix, postgres, "-D", str(self.data), "-p", str(self.port), "-h", self.host,
                "-c", "unix_socket_directories=", "-c", f"fsync={'on' if self.fsync else 'off'}",
                "-c", f"max_connections={self.max_connections}", "-c", "shared_buffers=64MB",
            ],
            stdout=log, stderr=log, cwd=self.dir, env=dict(os.environ, LC_ALL="C", LANG="C"),
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}:\n{self.log()}")
            if self._accepts():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"postgres did not start within {timeout}s:\n{self.log()}")

    def _accepts(self) -> bool:
        pg_isready = find_binary("pg_isready")
        if pg_isready:
            r = subprocess.run(
                [pg_isready, "-h", self.host, "-p", str(self.port), "-U", "postgres"], capture_output=True
            )
            return r.returncode == 0
        try:
            with socket.create_connection((self.host, self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        createdb = find_binary("createdb")
        assert createdb is not None
        subprocess.run(
            [createdb, "-h", self.host, "-p", str(self.port), "-U", "postgres", name],
            check=True,
            capture_output=True,
        )
        return self.url(name)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-8000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then remove the directory."""
        self._shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _shutdown(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
