"""Kafka Streams 4.4 apps for the streams-group tests, and a Kafka 4.4 broker to run them against too.

The jars: the oracle's Maven copy in `.venv/oracle/jars` (tests/oracle, `make setup`) when present, else
`$GROUPCOORD_KAFKA_JARS`, else `/work/oracle/jars` (a development machine's copy); without any the tests
skip. `tests/drivers/streams/*.java` is compiled against them at test time into `.venv/drivers/`, like the
other Java drivers (tests/integration/drivers.py).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from groupcoord.testing.ports import free_port
from tests.integration import drivers

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "tests" / "drivers" / "streams"


def jars_dir() -> Path:
    for d in (
        ROOT / ".venv" / "oracle" / "jars",
        Path(os.environ.get("GROUPCOORD_KAFKA_JARS", "")),
        Path("/work/oracle/jars"),
    ):
        if str(d) and (d / "kafka-streams-4.4.0.jar").exists():
            return d
    pytest.skip("no Kafka Streams 4.4 jars (make setup fetches them into .venv/oracle/jars)")


def classpath() -> str:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK (javac/java) on PATH")
    jars = jars_dir()
    sources = sorted(SOURCES.glob("*.java"))
    digest = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:16]
    classes = ROOT / ".venv" / "drivers" / f"streams-classes-{digest}"
    cp = f"{jars}/*"
    if not (classes / ".compiled").exists():
        tmp = classes.with_name(classes.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        done = subprocess.run(
            ["javac", "--release", "17", "-nowarn", "-d", str(tmp), "-cp", cp, *map(str, sources)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"javac failed:\n{done.stdout}\n{done.stderr}")
        (tmp / ".compiled").touch()
        try:
            tmp.rename(classes)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return os.pathsep.join([str(classes), cp])


def word_count(
    cp: str, bootstrap: str, app_id: str, source: str, sink: str, state_dir: Path
) -> drivers.Driver:
    return drivers.Driver(
        ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", cp, "WordCountApp",
         bootstrap, app_id, source, sink, str(state_dir)]
    )  # fmt: skip


#: the broker configs a Kafka 4.4 oracle runs streams groups with in these tests (groupcoord: the same flags)
KAFKA_STREAMS_CONFIGS = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.num.standby.replicas": "1",
}


@contextmanager
def kafka_broker(tmp: Path) -> Iterator[str]:
    """A single-node KRaft Kafka 4.4 broker on a free port; its bootstrap address."""
    jars = jars_dir()
    if not (jars / "kafka_2.13-4.4.0.jar").exists() and not list(jars.glob("kafka_2.13-*.jar")):
        pytest.skip("no Kafka broker jar beside the Kafka Streams jars")
    port, cport = free_port(), free_port()
    data = tmp / "kafka"
    data.mkdir(parents=True, exist_ok=True)
    props = {
        "process.roles": "broker,controller", "node.id": "1",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{cport}", "log.dirs": str(data / "logs"),
        "num.partitions": "1", "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1", "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0", **KAFKA_STREAMS_CONFIGS,
    }  # fmt: skip
    conf = data / "server.properties"
    conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    cp = f"{jars}/*"
    java = ["java", "-Xms256m", "-Xmx768m", "-cp", cp]
    cluster = subprocess.run(
        [*java, "kafka.tools.StorageTool", "random-uuid"], capture_output=True, text=True, timeout=120
    )
    subprocess.run(
        [*java, "kafka.tools.StorageTool", "format", "--standalone", "-t", cluster.stdout.strip(), "-c", str(conf)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    log = open(data / "stdout.log", "ab")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen([*java, "kafka.Kafka", str(conf)], stdout=log, stderr=log)
    log.close()
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "Kafka did not start: " + (data / "stdout.log").read_text()[-3000:]
                    ) from None
                time.sleep(0.3)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
