"""confluent-kafka 2.16 (librdkafka) with `group.protocol=consumer` (KIP-848) against the real server.

librdkafka sends ConsumerGroupHeartbeat v1 only, reconciles incrementally (revocations first) and commits
with OffsetCommit v9 carrying its member epoch. The server side is checked with ConsumerGroupDescribe.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from tests.integration.helpers import PollingThread, RawClient, wait_for_sync
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(240)]

# a short heartbeat interval so that every reconciliation step takes well under a second
FLAGS = (
    "--group-consumer-assignment-interval-ms", "0",
    "--group-consumer-min-heartbeat-interval-ms", "300",
    "--group-consumer-heartbeat-interval-ms", "300",
)  # fmt: skip


def produce(bootstrap: str, topic: str, first: int, count: int, partitions: int = 6) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(first, first + count):
        p.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert p.flush(20) == 0


def create_topic(bootstrap: str, topic: str, partitions: int = 6) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(15)


class Member:
    """One KIP-848 consumer on its own thread; records go to the shared `seen` (value -> member name).

    librdkafka retries most errors silently, so a member that never joins would otherwise fail a test without
    a word: `errors` keeps what it reported (polled error events and its `error_cb`), and with `debug` set
    (librdkafka's contexts, e.g. "cgrp,consumer") its debug log is kept too; `diagnostics()` says both."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        name: str,
        seen: dict,
        instance: str | None = None,
        debug: str | None = None,
    ):
        self.name = name
        self.errors: list[str] = []
        self.debug_log: collections.deque[str] = collections.deque(maxlen=5000)
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "error_cb": lambda err: self.errors.append(f"{time.strftime('%H:%M:%S')} error_cb: {err}"),
        }
        if debug is not None:
            conf["debug"] = debug
            conf["logger"] = _lines_logger(name, self.debug_log)
        if instance is not None:
            conf["group.instance.id"] = instance
        self.lock = threading.Lock()
        self.dupes: list[str] = []

        def make() -> Consumer:
            c = Consumer(conf)
            c.subscribe([topic])
            return c

        def poll(c: Consumer) -> Any:
            m = c.poll(0.2)
            if m is None:
                return None
            if m.error():
                self.errors.append(f"{time.strftime('%H:%M:%S')} poll: {m.error()}")
                return None
            with self.lock:
                v = m.value().decode()
                if v in seen:
                    self.dupes.append(v)
                seen[v] = name
            c.commit(message=m, asynchronous=False)
            return m

        def snapshot(c: Consumer) -> tuple[str, set[int]]:
            return c.memberid() or "", {tp.partition for tp in c.assignment()}

        self.thread = PollingThread(make, poll, snapshot, name=name)
        self.thread.wait_ready()

    @property
    def partitions(self) -> set[int]:
        return self.thread.state[1] if self.thread.state else set()

    @property
    def member_id(self) -> str:
        return self.thread.state[0] if self.thread.state else ""

    def diagnostics(self) -> str:
        """What librdkafka told this member: its errors, then its debug log (if `debug` was set)."""
        return "\n".join(
            [
                f"--- {self.name}: member id {self.member_id!r}, partitions {sorted(self.partitions)}, "
                f"thread error {self.thread.error!r}",
                *self.errors,
                *(["--- debug log:", *self.debug_log] if self.debug_log else []),
            ]
        )

    def close(self) -> None:
        self.thread.stop(close=lambda c: c.close())


def _lines_logger(name: str, lines: collections.deque) -> logging.Logger:
    """A logger (not propagated) that keeps librdkafka's log lines, with the time they came, in `lines`."""

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(f"{time.strftime('%H:%M:%S')}.{int(record.msecs):03d} {record.getMessage()}")

    log = logging.getLogger(f"rdkafka.{name}.{id(lines)}")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    log.addHandler(_Keep())
    return log


def describe(srv: Any, group: str) -> Any:
    """ConsumerGroupDescribe v1 of one group; retried while a (re)started server is still loading its state
    (COORDINATOR_LOAD_IN_PROGRESS), as clients retry it."""
    c = RawClient(srv.host, srv.port)
    deadline = time.monotonic() + 60
    try:
        while True:
            g = c.request(
                ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=(group,))
            ).groups[0]
            if g.error_code != 14 or time.monotonic() > deadline:  # COORDINATOR_LOAD_IN_PROGRESS
                return g
            time.sleep(0.1)
    finally:
        c.close()


def server_view(srv: Any, group: str) -> dict[str, set[int]]:
    g = describe(srv, group)
    return {
        m.member_id: {p for tp in m.assignment.topic_partitions for p in tp.partitions} for m in g.members
    }


def settled(srv: Any, group: str, members: list[Member]) -> bool:
    """The server is Stable and every client owns exactly what the server says it owns, covering all 6."""
    g = describe(srv, group)
    if g.error_code or g.group_state != "Stable":
        return False
    view = server_view(srv, group)
    clients = {m.member_id: m.partitions for m in members}
    owned = [p for ps in clients.values() for p in ps]
    return view == clients and sorted(owned) == list(range(6))


def test_scale_one_three_two_every_record_once_and_commits_fetched_back(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    topic, group = unique("cg-scale"), unique("cg-scale-g")
    create_topic(srv.bootstrap, topic)
    produce(srv.bootstrap, topic, 0, 30)
    seen: dict[str, str] = {}
    members = [Member(srv.bootstrap, group, topic, "c0", seen)]
    try:
        wait_for_sync(lambda: len(seen) == 30 and settled(srv, group, members), 60, "one member consumes 30")
        epoch_one = describe(srv, group).group_epoch
        members += [Member(srv.bootstrap, group, topic, f"c{i}", seen) for i in (1, 2)]
        wait_for_sync(lambda: settled(srv, group, members), 60, "three members settle")
        g = describe(srv, group)
        assert g.group_epoch > epoch_one and len(g.members) == 3
        assert sorted(len(m.partitions) for m in members) == [2, 2, 2]
        # librdkafka's admin describes (ConsumerGroupDescribe) and lists (ListGroups v5) the group as Kafka's
        from confluent_kafka import ConsumerGroupState, ConsumerGroupType
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": srv.bootstrap})
        d = admin.describe_consumer_groups([group])[group].result(15)
        assert (d.state, d.type, d.partition_assignor) == (
            ConsumerGroupState.STABLE,
            ConsumerGroupType.CONSUMER,
            "uniform",
        )
        assert {m.member_id: {tp.partition for tp in m.assignment.topic_partitions} for m in d.members} == {
            m.member_id: m.partitions for m in members
        }
        listed = {g.group_id: g.type for g in admin.list_consumer_groups().result(15).valid}
        assert listed[group] == ConsumerGroupType.CONSUMER
        produce(srv.bootstrap, topic, 30, 30)
        wait_for_sync(lambda: len(seen) == 60, 60, "three members consume the next 30")
        assert {seen[f"v{i}"] for i in range(30, 60)} <= {"c0", "c1", "c2"}
        leaving = members.pop(0)
        leaving.close()
        wait_for_sync(lambda: settled(srv, group, members), 60, "two members settle")
        assert leaving.member_id not in server_view(srv, group)
        produce(srv.bootstrap, topic, 60, 30)
        wait_for_sync(lambda: len(seen) == 90, 60, "two members consume the last 30")
        assert {seen[f"v{i}"] for i in range(60, 90)} <= {"c1", "c2"}
        assert [d for m in [leaving, *members] for d in m.dupes] == []  # every record consumed exactly once
    finally:
        for m in members:
            m.close()
    # the commits are fetched back by another client (OffsetFetch) once the group is left
    c = Consumer({"bootstrap.servers": srv.bootstrap, "group.id": group})
    try:
        from confluent_kafka import TopicPartition

        committed = c.committed([TopicPartition(topic, p) for p in range(6)], timeout=15)
        assert {tp.partition: tp.offset for tp in committed} == dict.fromkeys(range(6), 15)
    finally:
        c.close()
    g = describe(srv, group)
    assert (g.group_state, g.members) == ("Empty", ())


def test_static_member_restarted_keeps_its_partitions_without_a_rebalance(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    topic, group = unique("cg-static"), unique("cg-static-g")
    create_topic(srv.bootstrap, topic)
    produce(srv.bootstrap, topic, 0, 12)
    seen: dict[str, str] = {}
    members = [Member(srv.bootstrap, group, topic, f"s{i}", seen, instance=f"inst-{i}") for i in range(2)]
    try:
        wait_for_sync(
            lambda: len(seen) == 12 and settled(srv, group, members), 60, "two static members settle"
        )
        before = describe(srv, group)
        old = members[1]
        old_parts, old_id = old.partitions, old.member_id
        old.close()  # a static member leaves temporarily (epoch -2): its partitions stay reserved
        g = describe(srv, group)
        gone = next(m for m in g.members if m.instance_id == "inst-1")
        assert gone.member_epoch == -2
        members[1] = Member(srv.bootstrap, group, topic, "s1-restarted", seen, instance="inst-1")
        wait_for_sync(lambda: settled(srv, group, members), 60, "the restarted member is back")
        assert members[1].partitions == old_parts and members[1].member_id != old_id
        after = describe(srv, group)
        assert after.group_epoch == before.group_epoch  # no rebalance
        assert members[0].partitions == {p for p in range(6)} - old_parts
        produce(srv.bootstrap, topic, 12, 12)
        wait_for_sync(lambda: len(seen) == 24, 60, "both consume on")
        # the restarted member resumed from its predecessor's commits
        assert {v for v, who in seen.items() if who == "s1-restarted"} <= {f"v{i}" for i in range(12, 24)}
        assert [d for m in members for d in m.dupes] == []
    finally:
        for m in members:
            m.close()
