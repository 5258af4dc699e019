"""Apache Kafka 4.4.0 as the tests' oracle: a single-node KRaft broker (broker and controller in one JVM) on
free loopback ports, started from the runtime jars `make setup` fetched with Maven (tests/oracle/pom.xml into
.venv/oracle/jars; no Kafka source, nothing built).

`SHARED_CONFIG` holds the settings both targets run with (Kafka's names; groupcoord takes the same names as
flags), so one scenario sees the same bounds on either; `KAFKA_ONLY` the ones groupcoord has no flag for.
A broker is "ready" only once it really serves groups: its listener opens, then FindCoordinator answers
COORDINATOR_NOT_AVAILABLE until __consumer_offsets exists and is loaded. CreateTopics also answers before the
broker's metadata cache lists the new topic, so `create_topic` waits for Metadata to show every partition led.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from groupcoord.protocol.messages.delete_groups import DeleteGroupsRequest
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.testing.ports import free_port
from tests.integration.helpers import RawClient

KAFKA_VERSION = "4.4.0"
ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "tests" / "oracle" / "pom.xml"
JARS = Path(os.environ.get("GROUPCOORD_ORACLE_JARS", ROOT / ".venv" / "oracle" / "jars"))
READY_TIMEOUT = float(os.environ.get("GROUPCOORD_ORACLE_READY_S", "120"))  # a loaded 2-core machine

# Both targets: the consumer/share bounds our tests use (Kafka's defaults are 45 s sessions, 5 s heartbeats).
SHARED_CONFIG: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.session.timeout.ms": "10000",
    "offsets.topic.num.partitions": "3",
    "num.partitions": "1",
}
# Kafka only: bounds groupcoord has no flag for (its share/streams minimums are not configurable), and what a
# one-node cluster needs (replication factor 1 for the internal topics).
KAFKA_ONLY: dict[str, str] = {
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.min.session.timeout.ms": "6000",
    "group.streams.heartbeat.interval.ms": "1000",
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.session.timeout.ms": "10000",
    "group.streams.min.session.timeout.ms": "6000",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "3",
}

LOG4J2 = """Configuration:
  Appenders:
    File: {{ name: F, fileName: "{log}", PatternLayout: {{ pattern: "[%d] %p %m (%c)%n" }} }}
  Loggers:
    Root: {{ level: INFO, AppenderRef: [ {{ ref: F }} ] }}
"""
# -Dlog4j2.level=OFF: a JVM given no log4j2 configuration (a Kafka tool run with these options) logs nothing,
# as before the SLF4J binding was on the classpath; the broker's own configuration file overrides it.
JVM_OPTS = (
    "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
    "-Dlog4j2.level=OFF",
)  # fmt: skip


def groupcoord_flags() -> tuple[str, ...]:
    """SHARED_CONFIG as `groupcoord serve` flags (Kafka's names, dots as dashes)."""
    return tuple(x for k, v in SHARED_CONFIG.items() for x in ("--" + k.replace(".", "-"), v))


def _stamp() -> Path:
    return JARS / f".stamp-kafka-{KAFKA_VERSION}"


def fetch_jars() -> str | None:
    """Fetch the jars once (what `make setup` does); None when they are there, else why they cannot be."""
    if _stamp().exists():
        return None
    if shutil.which("mvn") is None:
        return "Maven (mvn) not found: install it (apt-get install maven) and run `make setup`"
    cmd = [
        "mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={JARS}",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return f"mvn could not fetch Kafka {KAFKA_VERSION}'s jars:\n{(done.stdout + done.stderr)[-3000:]}"
    _stamp().touch()
    return None


def unavailable() -> str | None:
    """Why the oracle cannot run here (a test that needs it is skipped with this reason), or None."""
    if shutil.which("java") is None:
        return "Java (17+) not found: the Kafka 4.4 oracle needs it (apt-get install openjdk-17-jre-headless)"
    return fetch_jars()


class KafkaBroker:
    """One Kafka 4.4 KRaft node in `workdir` (server.properties, data/, server.log, format.log, stdout.log)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.host = "127.0.0.1"
        self.port = 0
        self.controller_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "server.log"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def _java(self, main: str, *args: str) -> list[str]:
        log4j = f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.yaml'}"
        return ["java", *JVM_OPTS, log4j, "-cp", f"{JARS}/*", main, *args]

    def _write_config(self) -> Path:
        self.port, self.controller_port = free_port(), free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.quorum.bootstrap.servers": f"{self.host}:{self.controller_port}",
            "log.dirs": str(self.workdir / "data"),
            **SHARED_CONFIG,
            **KAFKA_ONLY,
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.workdir / "log4j2.yaml").write_text(LOG4J2.format(log=self.log_path))
        return path

    def start(self, timeout: float = READY_TIMEOUT) -> KafkaBroker:
        shutil.rmtree(self.workdir / "data", ignore_errors=True)
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        cluster_id = (
            "Z3JvdXBjb29yZC1vcmFjbA"  # a UUID in base64 (b"groupcoord-oracl"): no extra JVM for random-uuid
        )
        fmt = self._java(
            "kafka.tools.StorageTool", "format", "--standalone", "-t", cluster_id, "-c", str(config)
        )
        done = subprocess.run(fmt, capture_output=True, text=True, timeout=timeout)
        (self.workdir / "format.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(
                f"kafka StorageTool format failed ({done.returncode}):\n{done.stdout}{done.stderr}"
            )
        out = open(self.workdir / "stdout.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            self._java("kafka.Kafka", str(config)), stdout=out, stderr=out, start_new_session=True
        )
        out.close()
        try:
            self._wait_ready(time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, deadline: float) -> None:
        """Until FindCoordinator for a group answers NONE (the offsets topic exists and its partition loaded)."""
        last = "no connection yet"
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"kafka exited with {self.proc.returncode}:\n{self.log()}")
            try:
                c = RawClient(self.host, self.port, timeout=10)
            except OSError as e:
                last = str(e)
                time.sleep(0.25)
                continue
            try:
                while time.monotonic() < deadline:
                    err = self.find_coordinator(c, "groupcoord-oracle-ready", 0)
                    if err == ErrorCode.NONE:
                        return
                    last = f"FindCoordinator answered {ErrorCode(err).name}"
                    time.sleep(0.25)
            except (OSError, ConnectionError) as e:
                last = str(e)
            finally:
                c.close()
        raise RuntimeError(f"kafka not ready in time ({last}):\n{self.log()}")

    @staticmethod
    def find_coordinator(c: RawClient, key: str, key_type: int) -> int:
        r = c.request(
            ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=key_type, coordinator_keys=(key,))
        )
        return int(r.coordinators[0].error_code)

    def wait_coordinator(self, key: str, key_type: int = 0, timeout: float = READY_TIMEOUT) -> None:
        """Until the coordinator of `key` answers (key_type 1: the transaction coordinator, whose topic Kafka
        only creates on the first transactional request)."""
        wait_coordinator(self.host, self.port, key, key_type, timeout)

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        create_topic(self.host, self.port, name, partitions, configs)

    def log(self) -> str:
        parts = []
        for name in ("stdout.log", "server.log"):
            try:
                parts.append((self.workdir / name).read_text(errors="replace")[-6000:])
            except OSError:
                pass
        return "\n".join(parts)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a controlled shutdown), then SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait_coordinator(
    host: str, port: int, key: str, key_type: int = 0, timeout: float = READY_TIMEOUT
) -> None:
    deadline = time.monotonic() + timeout
    c = RawClient(host, port, timeout=10)
    try:
        while (err := KafkaBroker.find_coordinator(c, key, key_type)) != ErrorCode.NONE:
            if time.monotonic() > deadline:
                raise AssertionError(f"coordinator for {key!r} (type {key_type}) still {ErrorCode(err).name}")
            time.sleep(0.2)
    finally:
        c.close()


def create_topic(
    host: str,
    port: int,
    name: str,
    partitions: int = 1,
    configs: dict[str, str] | None = None,
    timeout: float = 60,
) -> None:
    """CreateTopics, then wait until Metadata lists the topic with every partition led (Kafka answers
    CreateTopics before its metadata cache has the topic; groupcoord has it at once). Idempotent."""
    c = RawClient(host, port, timeout=30)
    try:
        cfg = tuple(CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items())
        topic = CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, configs=cfg)
        r = c.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=(topic,), timeout_ms=30000))
        err = r.topics[0].error_code
        if err not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            raise AssertionError(f"CreateTopics {name}: {ErrorCode(err).name} {r.topics[0].error_message}")
        deadline = time.monotonic() + timeout
        req = MetadataRequest(topics=(MetadataRequestTopic(name=name),), allow_auto_topic_creation=False)
        while True:
            t = c.request(ApiKey.METADATA, 12, req).topics[0]
            led = [p for p in t.partitions if p.error_code == 0 and p.leader_id >= 0]
            if t.error_code == 0 and len(led) == partitions:
                _wait_group_coordinator_sees(c, name, partitions, deadline)
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {name} not in metadata after {timeout}s: {t}")
            time.sleep(0.1)
    finally:
        c.close()


def _wait_group_coordinator_sees(c: RawClient, topic: str, partitions: int, deadline: float) -> None:
    """Kafka's group coordinator reads its own metadata image, which may lag the broker's metadata cache: a
    group that subscribes at once may get an empty assignment, then an epoch bump when the image catches up.
    A throw-away KIP-848 member subscribes until it is assigned every partition, then leaves and the group
    is deleted."""
    group = f"oracle-probe-{topic}"
    epoch, owned = 0, ()
    try:
        while time.monotonic() < deadline:
            req = ConsumerGroupHeartbeatRequest(
                group_id=group, member_id="probe", member_epoch=epoch, rebalance_timeout_ms=5000,
                subscribed_topic_names=(topic,) if epoch == 0 else None, topic_partitions=owned,
            )  # fmt: skip
            r = c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req)
            if r.error_code != ErrorCode.NONE:
                raise AssertionError(
                    f"probe member for {topic}: {ErrorCode(r.error_code).name} {r.error_message}"
                )
            epoch = r.member_epoch
            if r.assignment is not None:
                owned = r.assignment.topic_partitions
            if sum(len(tp.partitions) for tp in owned) == partitions:
                return
            time.sleep(0.1)
        raise AssertionError(f"the group coordinator never assigned {topic}'s {partitions} partitions")
    finally:
        if epoch > 0:
            leave = ConsumerGroupHeartbeatRequest(group_id=group, member_id="probe", member_epoch=-1)
            c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, leave)
            c.request(ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=(group,)))
