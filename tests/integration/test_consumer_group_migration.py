"""Online migration with real clients (spec §9, issue 25 item 5): a rolling upgrade of a running group from
aiokafka (classic protocol) to confluent-kafka 2.16 with `group.protocol=consumer`, one member at a time,
then a rolling downgrade back to aiokafka, without ever stopping the group: every partition keeps being
consumed and the committed offsets carry over from one protocol to the other."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from typing import Any

import pytest

from tests.integration.helpers import describe_group, wait_for_sync
from tests.integration.names import unique
from tests.integration.test_consumer_group_confluent import (
    FLAGS,
    Member,
    create_topic,
    describe,
    produce,
)

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(600)]

PARTITIONS = 6


class ClassicMember:
    """One aiokafka consumer (classic JoinGroup/SyncGroup/Heartbeat) on its own thread and event loop;
    records go to the shared `seen` (value -> member name); it commits after every batch."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, seen: dict, lock: threading.Lock):
        self.name = name
        self.partitions: set[int] = set()
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._args = (bootstrap, group, topic, seen, lock)
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name=name, daemon=True)
        self._thread.start()
        assert self._ready.wait(30), f"{name} did not start"

    async def _run(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.errors import KafkaError

        bootstrap, group, topic, seen, lock = self._args
        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=self.name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            heartbeat_interval_ms=300,
            session_timeout_ms=10000,
        )
        await c.start()
        self._ready.set()
        try:
            while not self._stop.is_set():
                batches = await c.getmany(timeout_ms=200)
                with lock:
                    for msgs in batches.values():
                        for m in msgs:
                            seen[m.value.decode()] = self.name
                if batches:
                    try:
                        await c.commit()
                    except KafkaError as exc:  # a rebalance took the partitions: they are consumed again
                        self.errors.append(exc)
                self.partitions = {tp.partition for tp in c.assignment()}
        finally:
            await c.stop()  # LeaveGroup

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.name} did not stop"


def consumer_group_members(srv: Any, group: str) -> dict[str, int] | None:
    """ConsumerGroupDescribe: client id -> member type (0 classic, 1 consumer); None if not a consumer group."""
    g = describe(srv, group)
    if g.error_code:
        return None
    return {m.client_id: m.member_type for m in g.members}


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def test_rolling_upgrade_to_consumer_protocol_and_back(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    topic, group = unique("mig"), unique("mig-g")
    create_topic(srv.bootstrap, topic, PARTITIONS)
    seen: dict[str, str] = {}
    lock = threading.Lock()
    produced = 0

    def produce_and_wait(what: str, count: int = 4 * PARTITIONS) -> None:
        """New records on every partition; the group (whatever it is made of now) consumes them all."""
        nonlocal produced
        produce(srv.bootstrap, topic, produced, count, PARTITIONS)
        produced += count
        wait_for_sync(lambda: len(seen) == produced, 90, f"{what}: all {produced} records consumed")

    classic = [ClassicMember(srv.bootstrap, group, topic, f"a{i}", seen, lock) for i in range(3)]
    modern: list[Member] = []
    try:
        produce_and_wait("three aiokafka members")
        g = describe_group(srv.host, srv.port, group)
        assert (g["state"], g["protocol_type"], len(g["members"])) == ("Stable", "consumer", 3)

        # rolling upgrade: each aiokafka member is replaced by a KIP-848 consumer; the group never stops
        for i in range(3):
            modern.append(Member(srv.bootstrap, group, topic, f"k{i}", seen))
            wait_for_sync(
                lambda i=i: (consumer_group_members(srv, group) or {}).get(f"k{i}") == 1,
                60,
                f"k{i} joined the upgraded consumer group",
            )
            # the aiokafka members still in the group are classic members of the consumer group now
            assert consumer_group_members(srv, group) == {
                **{f"a{j}": 0 for j in range(i, 3)},
                **{f"k{j}": 1 for j in range(i + 1)},
            }
            produce_and_wait(f"k{i} joined")
            classic.pop(0).close()
            produce_and_wait(f"a{i} left")
        assert consumer_group_members(srv, group) == {"k0": 1, "k1": 1, "k2": 1}
        wait_for_sync(
            lambda: sorted(p for m in modern for p in m.partitions) == list(range(PARTITIONS)),
            60,
            "the consumer-protocol members own every partition",
        )

        # rolling downgrade: aiokafka members come back; when the last KIP-848 member leaves, the group is
        # a classic group again
        for i in range(3):
            classic.append(ClassicMember(srv.bootstrap, group, topic, f"b{i}", seen, lock))
            wait_for_sync(
                lambda i=i: (consumer_group_members(srv, group) or {}).get(f"b{i}") == 0,
                60,
                f"b{i} joined as a classic member of the consumer group",
            )
            produce_and_wait(f"b{i} joined")
            modern.pop(0).close()
            produce_and_wait(f"k{i} left")
        assert consumer_group_members(srv, group) is None  # no longer a consumer group
        wait_for_sync(
            lambda: (
                describe_group(srv.host, srv.port, group)["state"] == "Stable"
                and sorted(p for m in classic for p in m.partitions) == list(range(PARTITIONS))
            ),
            60,
            "the downgraded classic group is Stable with every partition owned",
        )
        g = describe_group(srv.host, srv.port, group)
        assert (g["protocol_type"], {m["client_id"] for m in g["members"].values()}) == (
            "consumer",
            {"b0", "b1", "b2"},
        )
        produce_and_wait("downgraded")
        # the commits of all three generations of members add up to the end of every partition
        wait_for_sync(
            lambda: (
                committed(srv.bootstrap, group, topic)
                == dict.fromkeys(range(PARTITIONS), produced // PARTITIONS)
            ),
            60,
            "committed offsets at the end of every partition",
        )
    finally:
        for m in classic:
            m.close()
        for k in modern:
            k.close()
    assert set(seen) == {f"v{i}" for i in range(produced)}


def test_upgraded_group_survives_kill_9(server_factory) -> None:  # type: ignore[no-untyped-def]
    """The records an upgrade writes (classic tombstone, consumer-group records with each classic member's
    protocols and session timeout) rebuild the same mixed group after SIGKILL."""
    from groupcoord.protocol.consumer import (
        ConsumerProtocolAssignment,
        ConsumerProtocolSubscription,
        TopicPartitions,
        encode_assignment,
        encode_subscription,
    )
    from groupcoord.protocol.messages import consumer_group_heartbeat as cgh
    from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
    from groupcoord.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
    from tests.integration.helpers import RawClient

    srv = server_factory(*FLAGS, "--group-initial-rebalance-delay-ms", "0")
    topic, group = unique("mig-kill"), unique("mig-kill-g")
    create_topic(srv.bootstrap, topic, PARTITIONS)
    c = RawClient(srv.host, srv.port)
    try:
        meta = encode_subscription(ConsumerProtocolSubscription(topics=(topic,), version=1))
        join = JoinGroupRequest(
            group, 30000, 60000, "", None, "consumer", (JoinGroupRequestProtocol("range", meta),)
        )
        member_id = c.request(11, 5, join).member_id  # MEMBER_ID_REQUIRED hands out the id
        joined = c.request(11, 5, dataclasses.replace(join, member_id=member_id))
        assert (joined.error_code, joined.leader) == (0, member_id)
        mine = encode_assignment(
            ConsumerProtocolAssignment(
                assigned_partitions=(TopicPartitions(topic, tuple(range(6))),), version=1
            )
        )
        sync = SyncGroupRequest(
            group, joined.generation_id, member_id, None, "consumer", "range",
            (SyncGroupRequestAssignment(member_id, mine),),
        )  # fmt: skip
        assert c.request(14, 5, sync).error_code == 0
        hb = cgh.ConsumerGroupHeartbeatRequest(
            group_id=group, member_id="k-member-0000000000000", member_epoch=0, rebalance_timeout_ms=60000,
            subscribed_topic_names=(topic,), subscribed_topic_regex="", topic_partitions=(),
        )  # fmt: skip
        r = c.request(68, 1, hb)
        assert r.error_code == 0 and r.member_epoch == joined.generation_id + 1
    finally:
        c.close()
    before = describe(srv, group)
    assert {m.member_id: m.member_type for m in before.members} == {member_id: 0, "k-member-0000000000000": 1}
    srv.kill()  # SIGKILL
    srv.start()
    after = describe(srv, group)
    key = lambda g: (  # noqa: E731
        g.group_epoch, g.assignment_epoch,
        sorted((m.member_id, m.member_type, m.member_epoch, str(m.assignment), str(m.target_assignment))
               for m in g.members),
    )  # fmt: skip
    assert key(after) == key(before)
    assert describe_group(srv.host, srv.port, group)["state"] == "Dead"  # not a classic group any more
    # the classic member goes on after the restart: its heartbeat tells it to rejoin for the new assignment
    c = RawClient(srv.host, srv.port)
    try:
        from groupcoord.protocol.messages.heartbeat import HeartbeatRequest

        assert c.request(12, 3, HeartbeatRequest(group, joined.generation_id, member_id)).error_code == 27
    finally:
        c.close()


class CooperativeMember:
    """A confluent-kafka consumer on the classic protocol with `cooperative-sticky` (its subscriptions report
    owned partitions, so inside a consumer group it revokes incrementally)."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, seen: dict, lock: threading.Lock):
        from confluent_kafka import Consumer

        from tests.integration.helpers import PollingThread

        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "classic",
            "partition.assignment.strategy": "cooperative-sticky",
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "heartbeat.interval.ms": 300,
            "session.timeout.ms": 10000,
            "error_cb": lambda err: self.errors.append(f"{time.strftime('%H:%M:%S')} error_cb: {err}"),
        }
        self.name = name
        self.errors: list[str] = []

        def make() -> Any:
            c = Consumer(conf)
            c.subscribe([topic])
            return c

        def poll(c: Any) -> Any:
            m = c.poll(0.2)
            if m is None:
                return None
            if m.error():
                self.errors.append(f"{time.strftime('%H:%M:%S')} poll: {m.error()}")
                return None
            with lock:
                seen[m.value().decode()] = name
            c.commit(message=m, asynchronous=False)
            return m

        self.thread = PollingThread(make, poll, lambda c: {tp.partition for tp in c.assignment()}, name=name)
        self.thread.wait_ready()

    @property
    def partitions(self) -> set[int]:
        return self.thread.state or set()

    def diagnostics(self) -> str:
        return "\n".join(
            [
                f"--- {self.name}: partitions {sorted(self.partitions)}, thread error {self.thread.error!r}",
                *self.errors,
            ]
        )

    def close(self) -> None:
        self.thread.stop(close=lambda c: c.close())


def test_cooperative_classic_members_inside_a_kip848_group_and_back(server_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """librdkafka's classic cooperative-sticky consumers joining a consumer group that a KIP-848 member
    started: served inside it while partitions move incrementally, downgraded to a classic group when the
    KIP-848 member leaves; nothing is missed.

    The KIP-848 member comes first on purpose: a group of librdkafka cooperative-sticky members that has
    rebalanced with sticky state cannot be upgraded at all (next test), and whether it has when the KIP-848
    member arrives depends on timing (whether the second member joined before the first one's first
    SyncGroup). Starting the other way round was this test's flake."""
    srv = server_factory(*FLAGS)
    topic, group = unique("mig-coop"), unique("mig-coop-g")
    create_topic(srv.bootstrap, topic, PARTITIONS)
    seen: dict[str, str] = {}
    lock = threading.Lock()
    produced = 0

    def produce_and_wait(what: str) -> None:
        nonlocal produced
        produce(srv.bootstrap, topic, produced, 4 * PARTITIONS, PARTITIONS)
        produced += 4 * PARTITIONS
        wait_for_sync(lambda: len(seen) == produced, 90, f"{what}: all {produced} records consumed")

    coop: list[CooperativeMember] = []
    kip848: Member | None = None
    k0 = kip848 = Member(srv.bootstrap, group, topic, "k0", seen, debug="cgrp,consumer,protocol")
    try:
        wait_for_sync(
            lambda: consumer_group_members(srv, group) == {"k0": 1} and len(k0.partitions) == PARTITIONS,
            90,
            "the KIP-848 member owns every partition",
        )
        produce_and_wait("one KIP-848 member")
        coop += [CooperativeMember(srv.bootstrap, group, topic, f"c{i}", seen, lock) for i in range(2)]
        wait_for_sync(
            lambda: (
                consumer_group_members(srv, group) == {"c0": 0, "c1": 0, "k0": 1}
                and sorted([*coop[0].partitions, *coop[1].partitions, *k0.partitions])
                == list(range(PARTITIONS))
                and all(m.partitions for m in [*coop, k0])
            ),
            90,
            "the mixed group shares every partition",
        )
        produce_and_wait("mixed group")
        kip848.close()
        kip848 = None
        wait_for_sync(
            lambda: (
                consumer_group_members(srv, group) is None
                and describe_group(srv.host, srv.port, group)["state"] == "Stable"
                and sorted([*coop[0].partitions, *coop[1].partitions]) == list(range(PARTITIONS))
            ),
            90,
            "downgraded to a classic group that owns every partition",
        )
        produce_and_wait("downgraded")
    except BaseException:  # say what the clients saw: librdkafka retries silently
        report = "\n".join(m.diagnostics() for m in [*coop, k0])
        (tmp_path / "clients.log").write_text(report)
        print(report[-60000:], f"\n--- server log tail:\n{srv.log()}")
        raise
    finally:
        for m in coop:
            m.close()
        if kip848 is not None:
            kip848.close()
    assert set(seen) == {f"v{i}" for i in range(produced)}


def test_librdkafka_cooperative_group_with_sticky_user_data_is_not_upgraded(server_factory) -> None:  # type: ignore[no-untyped-def]
    """As Kafka 4.3 (`ConsumerGroup.fromClassicGroup`): an assignment carrying user data cannot be converted,
    so the upgrade is refused with GROUP_ID_NOT_FOUND ("an unsupported custom assignor is in use"), which
    librdkafka's KIP-848 consumer takes as fatal. librdkafka's group leader copies each member's subscription
    user data into its assignment, and its cooperative-sticky members send their previous assignment and
    generation there once they have had one: a group of them that rebalanced after a member's first
    SyncGroup carries user data in its assignments. The classic group goes on untouched."""
    from groupcoord.protocol.consumer import decode_assignment
    from groupcoord.protocol.messages import consumer_group_heartbeat as cgh
    from groupcoord.protocol.messages.describe_groups import DescribeGroupsRequest
    from tests.integration.helpers import RawClient

    srv = server_factory(*FLAGS)
    topic, group = unique("mig-sticky"), unique("mig-sticky-g")
    create_topic(srv.bootstrap, topic, PARTITIONS)
    seen: dict[str, str] = {}
    lock = threading.Lock()
    coop = [CooperativeMember(srv.bootstrap, group, topic, "c0", seen, lock)]
    try:  # c0 has had an assignment (sticky state) before c1 joins: the next generation carries user data
        wait_for_sync(lambda: len(coop[0].partitions) == PARTITIONS, 90, "c0 owns every partition")
        coop.append(CooperativeMember(srv.bootstrap, group, topic, "c1", seen, lock))
        wait_for_sync(
            lambda: (
                describe_group(srv.host, srv.port, group)["state"] == "Stable"
                and sorted([*coop[0].partitions, *coop[1].partitions]) == list(range(PARTITIONS))
                and all(m.partitions for m in coop)
            ),
            90,
            "two cooperative classic members share every partition",
        )
        c = RawClient(srv.host, srv.port)
        try:
            described = c.request(15, 4, DescribeGroupsRequest(groups=(group,))).groups[0]
            assert any(decode_assignment(m.member_assignment).user_data for m in described.members)
            hb = cgh.ConsumerGroupHeartbeatRequest(
                group_id=group, member_id="k-member-0000000000000", member_epoch=0, rebalance_timeout_ms=60000,
                subscribed_topic_names=(topic,), subscribed_topic_regex="", topic_partitions=(),
            )  # fmt: skip
            r = c.request(68, 1, hb)
        finally:
            c.close()
        assert r.error_code == 69  # GROUP_ID_NOT_FOUND
        assert r.error_message == (
            f"Cannot upgrade classic group {group} to consumer group because an unsupported custom assignor is "
            "in use. Please refer to the documentation or switch to a default assignor before re-attempting "
            "the upgrade."
        )
        assert consumer_group_members(srv, group) is None
        after = describe_group(srv.host, srv.port, group)
        assert after["state"] == "Stable" and len(after["members"]) == 2
    finally:
        for m in coop:
            m.close()


@pytest.mark.parametrize("driver", ["java", "kafkajs"])
def test_classic_drivers_inside_a_consumer_group_and_back(server_factory, driver: str) -> None:  # type: ignore[no-untyped-def]
    """The Java consumer 4.3 (classic protocol, `range` first) and kafkajs as classic members: upgraded when a
    KIP-848 member joins, served inside the consumer group until every partition is shared, downgraded when
    it leaves, after which they own every partition again in a Stable classic group."""
    from tests.integration.process_clients import JavaClient, KafkajsClient

    srv = server_factory(*FLAGS)
    topic, group = unique(f"mig-{driver}"), unique(f"mig-{driver}-g")
    create_topic(srv.bootstrap, topic, PARTITIONS)
    client = JavaClient() if driver == "java" else KafkajsClient()
    seen: dict[str, str] = {}
    kip848: Member | None = None
    members: list[Any] = []
    try:
        members = [
            client.consumer(
                srv.bootstrap,
                topic,
                group,
                session_timeout_ms=10000,
                heartbeat_interval_ms=300,
                client_id=f"c{i}",
            )
            for i in range(2)
        ]
        everything = {(topic, p) for p in range(PARTITIONS)}

        def classic_owned() -> list[tuple[str, int]]:
            return sorted(tp for m in members for tp in m.owned())

        wait_for_sync(lambda: classic_owned() == sorted(everything), 90, "two classic members own everything")
        kip848 = Member(srv.bootstrap, group, topic, "k0", seen)
        wait_for_sync(
            lambda: (
                consumer_group_members(srv, group) == {"c0": 0, "c1": 0, "k0": 1}
                and describe(srv, group).group_state == "Stable"
                and sorted([*classic_owned(), *((topic, p) for p in kip848.partitions)]) == sorted(everything)
                and all(m.owned() for m in members)
                and bool(kip848.partitions)
            ),
            120,
            "classic members and the KIP-848 member share every partition",
        )
        kip848.close()
        kip848 = None
        wait_for_sync(
            lambda: (
                consumer_group_members(srv, group) is None
                and describe_group(srv.host, srv.port, group)["state"] == "Stable"
                and classic_owned() == sorted(everything)
            ),
            120,
            "downgraded: the classic members own every partition of a Stable classic group",
        )
        assert all(m.error() is None for m in members)
    finally:
        for m in members:
            m.close()
        if kip848 is not None:
            kip848.close()
        client.close()
