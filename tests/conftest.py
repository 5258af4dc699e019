"""Shared fixtures: the real groupcoord server as a subprocess on a free loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.testing.ports import free_port  # tests import it from here too

# `pytester` (tests/testing/test_plugin_modes.py runs small user projects against the groupcoord plugin)
pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent


# How `make test` shares the suite among pytest-xdist workers (`-n N --dist loadfile`). A file's tests stay on
# one worker, so module fixtures are built once; every Spark test file (tests/pipeline/) shares one worker, so at
# most one Spark JVM works at a time, as in a serial run; and the slowest scopes are handed out first, so no
# long file starts last and runs alone. (xdist's own `loadgroup` marks do not work with pytest 9: xdist 3.8 sets
# an attribute pytest no longer reads.) Without xdist none of this applies.
SLOW_FIRST = (
    "tests/pipeline/",
    "tests/partitions/",
    "tests/oracle/",
    "tests/cluster/",
    "tests/integration/",
    "tests/testing/",
)


GROUPED = (
    "tests/pipeline/",
    "tests/oracle/",
)  # each one scope: one Spark JVM, one Kafka oracle JVM at a time


def _scope(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return next((prefix for prefix in GROUPED if path.startswith(prefix)), path)


def _rank(nodeid: str) -> int:
    return next((i for i, prefix in enumerate(SLOW_FIRST) if nodeid.startswith(prefix)), len(SLOW_FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # every worker sorts alike, so the controller sees one order
        items.sort(key=lambda item: _rank(item.nodeid))  # stable: files keep their order within a rank


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class _Scheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return _Scheduling(config, log)


class ServerProcess:
    """`groupcoord serve` in a child process; its stderr goes to `<data_dir>/../server-N.log`."""

    def __init__(self, data_dir: Path, args: tuple[str, ...], port: int | None = None) -> None:
        self.data_dir = data_dir
        self.args = args
        self.port = port or free_port()
        self._port_retries = 3 if port is None else 0  # see start()
        self.host = "127.0.0.1"
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.log_path = data_dir.parent / f"{data_dir.name}-server.log"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> ServerProcess:
        self.starts += 1
        cmd = [
            sys.executable, "-m", "groupcoord.server", "serve",
            "--host", self.host, "--port", str(self.port), "--data-dir", str(self.data_dir),
            "--group-initial-rebalance-delay-ms", "0", "--group-min-session-timeout-ms", "1000",
            "--log-level", os.environ.get("GROUPCOORD_TEST_LOG_LEVEL", "info"),
            *self.args,
        ]  # fmt: skip
        loaded_before = self._loaded_count()
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log, env=env)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if self.starts == 1 and self._port_retries and "address already in use" in self.log():
                    # another process took the port between free_port() and the bind: take another one
                    self.starts, self._port_retries, self.port = 0, self._port_retries - 1, free_port()
                    return self.start(timeout)
                raise RuntimeError(f"groupcoord exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    pass
            except OSError:
                time.sleep(0.05)
                continue
            self._wait_loaded(loaded_before, deadline)
            return self
        self.kill()
        raise RuntimeError(f"groupcoord did not listen within {timeout}s:\n{self.log()}")

    def _loaded_count(self) -> int:
        try:
            return self.log_path.read_text(errors="replace").count("state loaded")
        except OSError:
            return 0

    def _wait_loaded(self, before: int, deadline: float) -> None:
        """The listener opens before the state is replayed, and group APIs answer COORDINATOR_LOAD_IN_PROGRESS
        until then (clients retry it; raw-frame tests would not): wait for the server's "state loaded" line.
        Cluster nodes load shard by shard as they take leases: not waited for here."""
        if "--cluster" in self.args or os.environ.get("GROUPCOORD_TEST_LOG_LEVEL", "info") not in (
            "info",
            "debug",
        ):
            return
        while time.monotonic() < deadline and self._loaded_count() <= before and self.alive():
            time.sleep(0.05)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-8000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait: a clean shutdown flushes the journal and state."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> ServerProcess:
        self.stop()
        return self.start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class ExternalServer:
    """A server this test run does not control (GROUPCOORD_BOOTSTRAP, e.g. the compose `coordinator`), shared
    by every test of the run (so tests use unique topic and group names: `tests/integration/names.py`).

    A test that stops, kills, restarts the server or reads its data directory is marked `owns_server` and
    gets its own subprocess even in this mode (in compose, inside the clients container); reaching for those
    here means the mark is missing, which fails the test rather than skipping it silently."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.host, _, port = bootstrap.rpartition(":")
        self.port = int(port)

    def _cannot(self, what: str) -> None:
        pytest.fail(
            f"{what} needs a server process this test starts itself, and GROUPCOORD_BOOTSTRAP is set: "
            "mark the test @pytest.mark.owns_server"
        )

    @property
    def data_dir(self) -> Path:
        self._cannot("reading the data directory")
        raise AssertionError

    def stop(self, timeout: float = 15.0) -> int:
        self._cannot("stopping the server")
        return 0

    def kill(self) -> None:
        self._cannot("killing the server")

    def start(self) -> ExternalServer:
        self._cannot("starting the server")
        return self

    def restart(self) -> ExternalServer:
        self._cannot("restarting the server")
        return self

    def log(self) -> str:
        return ""


EXTERNAL = os.environ.get("GROUPCOORD_BOOTSTRAP")


@pytest.fixture
def server_factory(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator:
    """Starts `groupcoord serve` subprocesses. With GROUPCOORD_BOOTSTRAP set, a test that needs nothing of its
    own shares that server; one that passes options or a data directory, or is marked `owns_server`, still
    gets its own process (so the compose run covers it too, from inside the clients container)."""
    started: list[ServerProcess] = []
    owns = request.node.get_closest_marker("owns_server") is not None

    def make(*args: str, data_dir: Path | None = None) -> ServerProcess:
        if EXTERNAL and not (owns or args or data_dir):
            return ExternalServer(EXTERNAL)  # type: ignore[return-value]
        d = data_dir or tmp_path / f"data{len(started)}"
        srv = ServerProcess(d, tuple(args))
        started.append(srv)
        return srv.start()

    yield make
    for srv in started:
        srv.kill()


@pytest.fixture
def groupcoord_server(server_factory) -> ServerProcess:  # type: ignore[no-untyped-def]
    return server_factory()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator:
    """One throw-away PostgreSQL server for the whole session (testing/pgcluster.py); skipped only when the
    server binaries are truly absent."""
    from groupcoord.testing.pgcluster import PgCluster, available

    reason = available()
    if reason:
        pytest.skip(reason)
    cluster = PgCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster) -> str:  # type: ignore[no-untyped-def]
    """A fresh empty database on the session's PostgreSQL server."""
    return pg_cluster.create_database()


# --- Kafka 4.4 as the oracle (tests/oracle/: kafka.py starts the broker, targets.py wraps either server) ---


@pytest.fixture(scope="session")
def kafka_oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """One Apache Kafka 4.4.0 KRaft broker per pytest(-xdist) worker, serving groups when given; skipped (with
    the reason) only where Java or the jars (Maven) are missing. Tests share it: use unique names."""
    from tests.oracle import kafka

    reason = kafka.unavailable()
    if reason:
        pytest.skip(reason)
    broker = kafka.KafkaBroker(tmp_path_factory.mktemp("kafka-oracle")).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def groupcoord_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A groupcoord server for the whole session, started with the oracle's settings
    (tests/oracle/kafka.SHARED_CONFIG), so a scenario sees the same bounds on both."""
    from tests.oracle import kafka

    srv = ServerProcess(tmp_path_factory.mktemp("groupcoord-peer") / "data", kafka.groupcoord_flags())
    srv.start()
    yield srv
    srv.kill()


@pytest.fixture(scope="session")
def oracle_pair(kafka_oracle, groupcoord_peer) -> tuple:  # type: ignore[no-untyped-def]
    """(kafka, groupcoord) as tests/oracle/targets.Target: a differential test runs a scenario on both."""
    from tests.oracle.targets import GROUPCOORD, KAFKA, Target

    return (
        Target(KAFKA, kafka_oracle.host, kafka_oracle.port),
        Target(GROUPCOORD, groupcoord_peer.host, groupcoord_peer.port),
    )


@pytest.fixture(params=["kafka", "groupcoord"])
def oracle_target(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Either target, as tests/oracle/targets.Target: a scenario that asserts Kafka's answers runs twice."""
    from tests.oracle.targets import GROUPCOORD, KAFKA, Target

    if request.param == KAFKA:
        broker = request.getfixturevalue("kafka_oracle")
        return Target(KAFKA, broker.host, broker.port)
    srv = request.getfixturevalue("groupcoord_peer")
    return Target(GROUPCOORD, srv.host, srv.port)
