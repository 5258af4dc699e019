"""Real Kafka Streams 4.4 apps with `group.protocol=streams` (KIP-1071), against groupcoord and against a
Kafka 4.4 broker with the same assertions (`target` runs each test on both).

A word count with a repartition and a state store: exact counts in the output, the internal topics created
by the coordinator as Kafka creates them (partition counts from the topology, the client's TopicInfo
configs); then a second instance joins with one standby replica per stateful task: every active task runs
exactly once, the load is balanced, each instance keeps a standby of the other's stateful tasks, and
StreamsGroupDescribe agrees with what the instances run.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.streams_group_describe import StreamsGroupDescribeRequest
from tests.integration import drivers, streams_apps
from tests.integration.helpers import RawClient
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(420)]

#: groupcoord's flags for the broker configs the Kafka oracle gets (streams_apps.KAFKA_STREAMS_CONFIGS)
FLAGS = ("--group-streams-initial-rebalance-delay-ms", "0", "--group-streams-num-standby-replicas", "1")
LINES = ["the quick brown fox jumps over the lazy dog", "the end", "a fox and a dog"]
ROUNDS = 30


@pytest.fixture(scope="module")
def cp() -> str:
    return streams_apps.classpath()


@pytest.fixture(params=["groupcoord", "kafka"])
def target(request: pytest.FixtureRequest, server_factory: Any, tmp_path: Path) -> Iterator[str]:
    if request.param == "groupcoord":
        yield server_factory(*FLAGS).bootstrap
    else:
        with streams_apps.kafka_broker(tmp_path) as bootstrap:
            yield bootstrap


@pytest.fixture
def apps() -> Iterator[list[drivers.Driver]]:
    started: list[drivers.Driver] = []
    yield started
    for d in started:
        d.kill()


def expected_counts() -> dict[str, int]:
    out: dict[str, int] = {}
    for line in LINES * ROUNDS:
        for w in line.split():
            out[w] = out.get(w, 0) + 1
    return out


def setup_input(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 4, 1)])
    finally:
        admin.close()
    p = KafkaProducer(bootstrap_servers=bootstrap)
    for i, line in enumerate(LINES * ROUNDS):
        p.send(topic, key=str(i).encode(), value=line.encode())
    p.flush()
    p.close()


def read_counts(bootstrap: str, topic: str, want: dict[str, int], timeout: float = 180) -> dict[str, int]:
    """The last count per word in the output, polled until it equals `want` or the deadline passes."""
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None)
    last: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while last != want and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                for r in records:
                    last[r.key.decode()] = struct.unpack(">q", r.value)[0]
    finally:
        c.close()
    return last


def topic_configs(bootstrap: str, names: list[str]) -> dict[str, dict[str, str]]:
    """Each topic's non-default configs (DescribeConfigs)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
        by_name = next(iter(res.values())) if res else {}
        return {n: {k: _value(v) for k, v in by_name.get(n, {}).items()} for n in names}
    finally:
        admin.close()


def _value(v: Any) -> str:
    return v.get("value") if isinstance(v, dict) else getattr(v, "value", v)


def partitions(bootstrap: str, topic: str) -> int:
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        deadline = time.monotonic() + 30
        while (ps := c.partitions_for_topic(topic)) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        return len(ps or ())
    finally:
        c.close()


def describe(bootstrap: str, group: str) -> Any:
    host, port = bootstrap.rsplit(":", 1)
    c = RawClient(host, int(port))
    try:
        return c.request(
            ApiKey.STREAMS_GROUP_DESCRIBE, 0, StreamsGroupDescribeRequest(group_ids=(group,))
        ).groups[0]
    finally:
        c.close()


def latest_tasks(d: drivers.Driver) -> tuple[set[str], set[str]]:
    ev = d.of("tasks")
    return (set(ev[-1]["active"]), set(ev[-1]["standby"])) if ev else (set(), set())


def wait_for(what: str, check: Any, timeout: float = 180, *apps: drivers.Driver) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        for a in apps:
            if a.of("error"):
                raise AssertionError(f"{what}: app failed: {a.of('error')}")
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what} not reached within {timeout}s; events: {[a.events[-8:] for a in apps]}"
            )
        time.sleep(0.3)


ALL_TASKS = {f"{s}_{p}" for s in (0, 1) for p in range(4)}


def test_word_count_exact_with_internal_topics(target: str, cp: str, apps: list, tmp_path: Path) -> None:
    app_id, source, sink = unique("wc"), unique("wc-in"), unique("wc-out")
    setup_input(target, source)
    a = streams_apps.word_count(cp, target, app_id, source, sink, tmp_path / "state-a")
    apps.append(a)
    assert read_counts(target, sink, expected_counts()) == expected_counts()
    repartition, changelog = f"{app_id}-words-repartition", f"{app_id}-counts-changelog"
    assert partitions(target, repartition) == 4
    assert partitions(target, changelog) == 4
    configs = topic_configs(target, [repartition, changelog])
    assert configs[changelog]["cleanup.policy"] == "compact"
    assert configs[repartition]["cleanup.policy"] == "delete"
    assert configs[repartition]["retention.ms"] == "-1"
    wait_for("all tasks active", lambda: latest_tasks(a)[0] == ALL_TASKS, 120, a)
    g = describe(target, app_id)
    assert g.error_code == 0 and len(g.members) == 1
    assert g.group_state == "Stable"
    subs = {s.subtopology_id: s for s in g.topology.subtopologies}
    assert set(subs) == {"0", "1"}
    assert [t.name for t in subs["1"].repartition_source_topics] == [repartition]
    assert [(t.name, t.partitions) for t in subs["1"].state_changelog_topics] == [(changelog, 4)]
    active = {(t.subtopology_id, p) for t in g.members[0].assignment.active_tasks for p in t.partitions}
    assert active == {(s, p) for s in ("0", "1") for p in range(4)}


def test_scale_one_to_two_with_a_standby(target: str, cp: str, apps: list, tmp_path: Path) -> None:
    app_id, source, sink = unique("wcs"), unique("wcs-in"), unique("wcs-out")
    setup_input(target, source)
    a = streams_apps.word_count(cp, target, app_id, source, sink, tmp_path / "state-a")
    apps.append(a)
    wait_for("A runs every task", lambda: latest_tasks(a)[0] == ALL_TASKS, 180, a)
    b = streams_apps.word_count(cp, target, app_id, source, sink, tmp_path / "state-b")
    apps.append(b)

    def settled() -> bool:
        (aa, asb), (ba, bsb) = latest_tasks(a), latest_tasks(b)
        stateful_a = {t for t in aa if t.startswith("1_")}
        stateful_b = {t for t in ba if t.startswith("1_")}
        return (
            aa | ba == ALL_TASKS and not aa & ba and len(aa) == len(ba) == 4
            and asb == stateful_b and bsb == stateful_a
        )  # fmt: skip

    wait_for("two instances, balanced, a standby of each stateful task on the other", settled, 180, a, b)
    assert read_counts(target, sink, expected_counts()) == expected_counts()

    def described() -> bool:
        g = describe(target, app_id)
        if g.group_state != "Stable" or len(g.members) != 2:
            return False
        for m in g.members:
            act = {(t.subtopology_id, p) for t in m.assignment.active_tasks for p in t.partitions}
            sb = {(t.subtopology_id, p) for t in m.assignment.standby_tasks for p in t.partitions}
            if len(act) != 4 or act & sb or len(sb) != 2:
                return False
        return True

    wait_for("StreamsGroupDescribe shows both members Stable with their standbys", described, 60, a, b)
