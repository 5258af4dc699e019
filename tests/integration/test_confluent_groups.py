"""confluent-kafka (librdkafka) consumer groups against the real server: membership, rebalances, expiry, static
members, commits, and the AdminClient's group APIs.

A confluent Consumer may not be used from two threads at once (`assignment()` blocks while another thread
polls), so each consumer lives on its own `PollingThread`, which polls it and snapshots its assignment.
librdkafka does not expose the generation; the server's view (DescribeGroups over a raw connection, and the
group event journal) stands in for it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import (
    PollingThread,
    describe_group,
    exact_cover,
    journal_events,
    wait_for_sync,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

Partitions = frozenset[tuple[str, int]]


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = admin_client(bootstrap)  # keep a reference: a collected AdminClient fails its futures
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(15)


def snapshot(c: Consumer) -> Partitions:
    return frozenset((tp.topic, tp.partition) for tp in c.assignment())


def consumer(bootstrap: str, topic: str, group: str, **conf) -> PollingThread:  # type: ignore[no-untyped-def]
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "enable.auto.commit": False,
        "log_level": 0,
    }
    config.update(conf)

    def make() -> Consumer:
        c = Consumer(config)
        c.subscribe([topic])
        return c

    t = PollingThread(make, lambda c: c.poll(0.1), snapshot, name=f"ck-{group}")
    t.wait_ready()
    return t


def owned(t: PollingThread) -> Partitions:
    return t.state or frozenset()


def close(t: PollingThread) -> None:
    t.stop(lambda c: c.close())


def stable_generation(data_dir, group: str) -> int:  # type: ignore[no-untyped-def]
    """The generation of the group's latest transition to Stable, per the server's journal."""
    stables = [
        e
        for e in journal_events(data_dir, group)
        if e["event"] == "state_change" and e["state_to"] == "Stable"
    ]
    return stables[-1]["generation"] if stables else -1


def settled(server, group: str, consumers: list[PollingThread], expected: set, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    """Every consumer's own view is an exact cover, and the server agrees: Stable, with exactly these
    assignments (so all of them are in the same generation)."""

    def ok() -> bool:
        views = [owned(t) for t in consumers]
        if not exact_cover(views, expected):
            return False
        d = describe_group(server.host, server.port, group)
        served = [frozenset(m["partitions"]) for m in d["members"].values()]
        if d["state"] != "Stable" or Counter(served) != Counter(views):
            return False
        # and the journal (flushed in batches) has caught up: its latest transition is this Stable generation
        changes = [e for e in journal_events(server.data_dir, group) if e["event"] == "state_change"]
        return (
            bool(changes) and changes[-1]["state_to"] == "Stable" and changes[-1]["members"] == len(consumers)
        )

    wait_for_sync(ok, timeout, f"{len(consumers)} confluent consumers to share {len(expected)} partitions")


def first_removal(data_dir, group: str) -> str:  # type: ignore[no-untyped-def]
    """The reason of the group's first `member_removed` journal event (the journal is flushed in batches)."""

    def removed() -> list[dict]:
        return [e for e in journal_events(data_dir, group) if e["event"] == "member_removed"]

    wait_for_sync(lambda: bool(removed()), 5, f"a member_removed event for {group} in the journal")
    return removed()[0]["reason"]


@pytest.mark.parametrize("n", [1, 5, 20])
def test_consumers_join_and_cover_all_partitions_exactly_once(groupcoord_server, n: int) -> None:
    bootstrap = groupcoord_server.bootstrap
    partitions = 24
    create_topic(bootstrap, "orders", partitions)
    consumers: list[PollingThread] = []
    try:
        consumers = [consumer(bootstrap, "orders", "g-cover") for _ in range(n)]
        settled(
            groupcoord_server, "g-cover", consumers, {("orders", p) for p in range(partitions)}, timeout=45
        )
        sizes = sorted(len(owned(t)) for t in consumers)
        assert sizes[-1] - sizes[0] <= 1
    finally:
        for t in consumers:
            close(t)


def test_clean_leave_rebalances_the_rest(groupcoord_server) -> None:
    bootstrap = groupcoord_server.bootstrap
    create_topic(bootstrap, "t", 6)
    everything = {("t", p) for p in range(6)}
    consumers = [consumer(bootstrap, "t", "g-leave") for _ in range(3)]
    try:
        settled(groupcoord_server, "g-leave", consumers, everything)
        before = stable_generation(groupcoord_server.data_dir, "g-leave")
        left_at = time.monotonic()
        close(consumers[2])  # close() sends LeaveGroup
        settled(groupcoord_server, "g-leave", consumers[:2], everything, timeout=20)
        # a LeaveGroup rebalances at once; waiting out the 6 s session timeout would mean it was ignored
        assert time.monotonic() - left_at < 5.0
        wait_for_sync(
            lambda: stable_generation(groupcoord_server.data_dir, "g-leave") > before, 5, "a new generation"
        )
    finally:
        for t in consumers:
            close(t)
    assert first_removal(groupcoord_server.data_dir, "g-leave") == "left"


CHILD = textwrap.dedent(
    """
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[3], "log_level": 0,
                  "session.timeout.ms": int(sys.argv[4]), "heartbeat.interval.ms": 300,
                  "enable.auto.commit": False})
    c.subscribe([sys.argv[2]])
    deadline = time.monotonic() + 30
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.1)
    print("assigned" if c.assignment() else "unassigned", flush=True)
    while True:
        c.poll(0.1)
    """
)


def test_killed_consumer_expires_when_its_session_timeout_passes_and_the_rest_rebalance(
    groupcoord_process,
) -> None:
    """On the virtual clock (groupcoord.testing): the killed member's 3 s session ends exactly when the clock
    passes it; the survivor (a 30 s session) stays and takes every partition."""
    groupcoord_server = groupcoord_process
    bootstrap = groupcoord_server.bootstrap
    create_topic(bootstrap, "k", 4)
    everything = {("k", p) for p in range(4)}
    survivor = consumer(
        bootstrap, "k", "g-kill", **{"session.timeout.ms": 30000, "heartbeat.interval.ms": 300}
    )
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, bootstrap, "k", "g-kill", "3000"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "assigned"
        wait_for_sync(lambda: 0 < len(owned(survivor)) < 4, 20, "the survivor to share the partitions")
        groupcoord_process.wait_group_sync("g-kill", members=2)
        child.kill()  # SIGKILL: no LeaveGroup, only the session timeout can remove it
        child.wait(10)
        groupcoord_process.advance_sync(2999)
        assert len(groupcoord_process.describe("g-kill").members) == 2
        groupcoord_process.advance_sync(1)
        assert len(groupcoord_process.describe("g-kill").members) == 1  # the survivor's session is 30 s
        wait_for_sync(lambda: owned(survivor) == everything, 30, "the survivor to own every partition")
        d = describe_group(groupcoord_server.host, groupcoord_server.port, "g-kill")
        assert d["state"] == "Stable" and len(d["members"]) == 1
    finally:
        child.kill()
        child.wait(10)
        close(survivor)
    assert first_removal(groupcoord_server.data_dir, "g-kill") == "session_timeout"


def test_static_member_restarted_inside_its_session_timeout_causes_no_rebalance(groupcoord_process) -> None:
    groupcoord_server = groupcoord_process
    bootstrap = groupcoord_server.bootstrap
    create_topic(bootstrap, "s", 4)
    everything = {("s", p) for p in range(4)}
    static = {"session.timeout.ms": 10000}
    a = consumer(bootstrap, "s", "g-static", **{"group.instance.id": "a", **static})
    b = consumer(bootstrap, "s", "g-static", **{"group.instance.id": "b", **static})
    b2 = None
    try:
        settled(groupcoord_server, "g-static", [a, b], everything)
        gen = stable_generation(groupcoord_server.data_dir, "g-static")
        a_parts, b_parts = owned(a), owned(b)
        close(b)  # a static librdkafka member sends no LeaveGroup
        b2 = consumer(bootstrap, "s", "g-static", **{"group.instance.id": "b", **static})
        wait_for_sync(
            lambda: owned(b2) == b_parts, 20, "the restarted static member to get its partitions back"
        )

        def rejoined() -> list[dict]:
            events = journal_events(groupcoord_server.data_dir, "g-static")
            return [e for e in events if e["event"] == "static_rejoin" and e["group_instance_id"] == "b"]

        wait_for_sync(lambda: bool(rejoined()), 5, "the static_rejoin journal event")
        # no waiting for a rebalance "had there been one": on the virtual clock b's session cannot lapse, and
        # a rebalance caused by the rejoin would have been journalled before b2 got its partitions back
        assert owned(a) == a_parts
        d = describe_group(groupcoord_server.host, groupcoord_server.port, "g-static")
        assert d["state"] == "Stable"
        assert {m["instance"]: frozenset(m["partitions"]) for m in d["members"].values()} == {
            "a": a_parts,
            "b": b_parts,
        }
        events = journal_events(groupcoord_server.data_dir, "g-static")
        at = rejoined()[0]["seq"]
        assert rejoined()[0]["generation"] == gen
        assert [e for e in events if e["seq"] > at and e["event"] == "state_change"] == []
    finally:
        close(a)
        if b2 is not None:
            close(b2)


def test_commits_are_fetched_back(groupcoord_server) -> None:
    bootstrap = groupcoord_server.bootstrap
    create_topic(bootstrap, "c", 2)
    c1 = consumer(bootstrap, "c", "g-commit")

    def committed(t: PollingThread) -> dict[int, tuple[int, str | None]]:
        tps = t.call(lambda c: c.committed([TopicPartition("c", 0), TopicPartition("c", 1)], timeout=10))
        return {tp.partition: (tp.offset, tp.metadata) for tp in tps}

    try:
        wait_for_sync(lambda: len(owned(c1)) == 2, 20, "assignment")
        c1.call(
            lambda c: c.commit(
                offsets=[TopicPartition("c", 0, 42, metadata="meta-0"), TopicPartition("c", 1, 7)],
                asynchronous=False,
            )
        )
        got = committed(c1)
        assert got[0] == (42, "meta-0")
        assert got[1][0] == 7
    finally:
        close(c1)
    c2 = consumer(bootstrap, "c", "g-commit")
    try:
        got = committed(c2)
        assert (got[0][0], got[1][0]) == (42, 7)
    finally:
        close(c2)


def test_describe_list_and_delete_groups_through_the_admin_client(groupcoord_server) -> None:
    bootstrap = groupcoord_server.bootstrap
    create_topic(bootstrap, "adm", 2)
    admin = admin_client(bootstrap)
    c = consumer(bootstrap, "adm", "g-admin", **{"client.id": "ck-admin-test"})
    try:
        wait_for_sync(lambda: len(owned(c)) == 2, 20, "assignment")
        listed = {g.group_id: g for g in admin.list_consumer_groups(request_timeout=10).result(15).valid}
        assert listed["g-admin"].state == ConsumerGroupState.STABLE
        assert not listed["g-admin"].is_simple_consumer_group

        described = admin.describe_consumer_groups(["g-admin"], request_timeout=10)["g-admin"].result(15)
        assert described.state == ConsumerGroupState.STABLE
        assert described.partition_assignor == "range"  # librdkafka's first default assignor
        (member,) = described.members
        assert member.client_id == "ck-admin-test"
        assert {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions} == {
            ("adm", 0),
            ("adm", 1),
        }

        def delete(*groups: str) -> dict[str, int]:
            out = {}
            for g, f in admin.delete_consumer_groups(list(groups), request_timeout=10).items():
                try:
                    f.result(15)
                    out[g] = KafkaError.NO_ERROR
                except KafkaException as exc:
                    out[g] = exc.args[0].code()
            return out

        assert delete("g-admin") == {"g-admin": KafkaError.NON_EMPTY_GROUP}
        close(c)  # LeaveGroup: the group becomes Empty
        wait_for_sync(
            lambda: (
                admin.describe_consumer_groups(["g-admin"])["g-admin"].result(15).state
                == ConsumerGroupState.EMPTY
            ),
            10,
            "the group to become Empty",
        )
        assert delete("g-admin", "g-never") == {
            "g-admin": KafkaError.NO_ERROR,
            "g-never": KafkaError.GROUP_ID_NOT_FOUND,
        }
        assert "g-admin" not in {g.group_id for g in admin.list_consumer_groups().result(15).valid}
        assert describe_group(groupcoord_server.host, groupcoord_server.port, "g-admin")["state"] == "Dead"
    finally:
        close(c)
