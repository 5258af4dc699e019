"""Consumer-group scenarios against the real server, each written once and run with every client driver
(`tests/integration/clients.py`: aiokafka, kafka-python, confluent-kafka in-process; the Java client and
kafkajs as command-driven processes): membership and exact cover, a clean leave, session expiry of a killed
consumer, a static member's restart (not for kafkajs, which has no static membership), commits, and the
admin clients' group APIs.

Each scenario checks what the client sees and, the same way for every client, what the server holds:
DescribeGroups over a raw connection, the event journal, and offsets fetched by kafka-python's admin. Where
a client hides something (librdkafka: the generation and member id; kafkajs: the generation; aiokafka: commit
metadata, ListGroups state) the scenario checks the server's view of it instead.

`test_java_client.py` and `test_kafkajs_client.py` keep those clients' longer scripted flows (producing and
consuming records, AdminClient calls the other clients lack).
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient

from tests.integration.client_api import GroupClient, Member
from tests.integration.clients import CLIENTS, STATIC_MEMBERSHIP
from tests.integration.helpers import describe_group, exact_cover, journal_events, wait_for_sync
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(params=list(CLIENTS))
def client(request: pytest.FixtureRequest) -> Iterator[GroupClient]:
    driver = CLIENTS[request.param]()
    yield driver
    driver.close()


def close_all(members: list[Member]) -> None:
    for m in members:
        m.close()


def offsets_seen_by_another_client(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets as kafka-python's admin (OffsetFetch) sees them."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
        return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()}
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    """Writes `counts[p]` records to each partition p (kafka-python's producer, the same for every client)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for partition, n in counts.items():
            for i in range(n):
                producer.send(topic, value=b"v%d" % i, partition=partition)
        producer.flush(30)
    finally:
        producer.close()


def stable_generation(data_dir, group: str) -> int:  # type: ignore[no-untyped-def]
    """The generation of the group's latest transition to Stable, per the server's journal."""
    stables = [
        e
        for e in journal_events(data_dir, group)
        if e["event"] == "state_change" and e["state_to"] == "Stable"
    ]
    return stables[-1]["generation"] if stables else -1


def first_removal(data_dir, group: str) -> str:  # type: ignore[no-untyped-def]
    """The reason of the group's first `member_removed` journal event (the journal is flushed in batches)."""

    def removed() -> list[dict]:
        return [e for e in journal_events(data_dir, group) if e["event"] == "member_removed"]

    wait_for_sync(lambda: bool(removed()), 60, f"a member_removed event for {group} in the journal")
    return removed()[0]["reason"]


def settled(server, group: str, members: list[Member], expected: set, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    """Every member's own view is an exact cover, all in one generation where the client shows it, and the
    server agrees: Stable with exactly these assignments (by member id where the client shows it; kafka-python
    bumps its generation on the JoinGroup answer, before SyncGroup hands out the new assignment, so the
    client's view alone can show a new generation next to an old assignment), and the journal (flushed in
    batches) has caught up: its latest transition is to Stable with this many members."""

    def ok() -> bool:
        views = [m.owned() for m in members]
        if not exact_cover(views, expected):
            return False
        generations = [m.generation() for m in members]
        if None not in generations and len(set(generations)) != 1:
            return False
        d = describe_group(server.host, server.port, group)
        if d["state"] != "Stable":
            return False
        served = {mid: frozenset(m["partitions"]) for mid, m in d["members"].items()}
        ids = [m.member_id() for m in members]
        if None not in ids:
            if served != dict(zip(ids, views, strict=True)):
                return False
        elif Counter(served.values()) != Counter(views):
            return False
        changes = [e for e in journal_events(server.data_dir, group) if e["event"] == "state_change"]
        return (
            bool(changes) and changes[-1]["state_to"] == "Stable" and changes[-1]["members"] == len(members)
        )

    wait_for_sync(ok, timeout, f"{len(members)} consumers to share {len(expected)} partitions")


@pytest.mark.owns_server
@pytest.mark.parametrize("n", [1, 5, 20])
def test_consumers_join_and_cover_all_partitions_exactly_once(groupcoord_server, client, n: int) -> None:
    bootstrap = groupcoord_server.bootstrap
    partitions = 24
    client.create_topic(bootstrap, "orders", partitions)
    members: list[Member] = []
    try:
        members = [client.consumer(bootstrap, "orders", "g-cover") for _ in range(n)]
        settled(groupcoord_server, "g-cover", members, {("orders", p) for p in range(partitions)}, timeout=60)
        sizes = sorted(len(m.owned()) for m in members)
        assert sizes[-1] - sizes[0] <= 1
        assert all(m.error() is None for m in members), [m.error() for m in members]
    finally:
        close_all(members)


@pytest.mark.owns_server
def test_clean_leave_rebalances_the_rest(groupcoord_server, client) -> None:
    server, bootstrap = groupcoord_server, groupcoord_server.bootstrap
    client.create_topic(bootstrap, "t", 6)
    everything = {("t", p) for p in range(6)}
    members = [client.consumer(bootstrap, "t", "g-leave") for _ in range(3)]
    try:
        settled(server, "g-leave", members, everything)
        before = stable_generation(server.data_dir, "g-leave")
        client_before = members[0].generation()
        left_at = time.monotonic()
        members[2].close()  # a dynamic member's close sends LeaveGroup
        settled(server, "g-leave", members[:2], everything, timeout=20)
        # a LeaveGroup rebalances at once; waiting out the 6 s session timeout would mean it was ignored
        assert time.monotonic() - left_at < 5.0
        wait_for_sync(lambda: stable_generation(server.data_dir, "g-leave") > before, 60, "a new generation")
        if client_before is not None:
            assert members[0].generation() > client_before
    finally:
        close_all(members)
    assert first_removal(server.data_dir, "g-leave") == "left"


@pytest.mark.owns_server
def test_killed_consumer_expires_after_session_timeout_and_the_rest_rebalance(
    groupcoord_server, client
) -> None:
    server, bootstrap = groupcoord_server, groupcoord_server.bootstrap
    client.create_topic(bootstrap, "k", 4)
    everything = {("k", p) for p in range(4)}
    survivor = client.consumer(bootstrap, "k", "g-kill", session_timeout_ms=3000, heartbeat_interval_ms=300)
    child = subprocess.Popen(
        client.child_command(bootstrap, "k", "g-kill", 3000),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "assigned"
        wait_for_sync(lambda: 0 < len(survivor.owned()) < 4, 60, "the survivor to share the partitions")
        child.kill()  # SIGKILL: no LeaveGroup, only the session timeout can remove it
        child.wait(10)
        killed_at = time.monotonic()
        wait_for_sync(lambda: survivor.owned() == everything, 30, "the survivor to own every partition")
        # not before the session timeout (3 s) ran out, give or take a heartbeat
        assert time.monotonic() - killed_at >= 2.0
        d = describe_group(server.host, server.port, "g-kill")
        assert d["state"] == "Stable" and len(d["members"]) == 1
    finally:
        child.kill()
        child.wait(10)
        survivor.close()
    assert first_removal(server.data_dir, "g-kill") == "session_timeout"


# kafkajs never sends a group.instance.id, so no kafkajs case is generated (rather than a skipped one)
@pytest.mark.owns_server
@pytest.mark.parametrize("client", STATIC_MEMBERSHIP, indirect=True)
def test_static_member_restarted_inside_its_session_timeout_causes_no_rebalance(
    groupcoord_server, client
) -> None:
    server, bootstrap = groupcoord_server, groupcoord_server.bootstrap
    client.create_topic(bootstrap, "s", 4)
    everything = {("s", p) for p in range(4)}
    a = client.consumer(bootstrap, "s", "g-static", instance="a", session_timeout_ms=10000)
    b = client.consumer(bootstrap, "s", "g-static", instance="b", session_timeout_ms=10000)
    b2 = None
    try:
        settled(server, "g-static", [a, b], everything)
        gen = stable_generation(server.data_dir, "g-static")
        a_parts, b_parts = a.owned(), b.owned()
        b.close()  # a static member sends no LeaveGroup
        b2 = client.consumer(bootstrap, "s", "g-static", instance="b", session_timeout_ms=10000)
        wait_for_sync(
            lambda: b2.owned() == b_parts, 60, "the restarted static member to get its partitions back"
        )

        def rejoined() -> list[dict]:
            events = journal_events(server.data_dir, "g-static")
            return [e for e in events if e["event"] == "static_rejoin" and e["group_instance_id"] == "b"]

        wait_for_sync(lambda: bool(rejoined()), 60, "the static_rejoin journal event")
        time.sleep(1.5)  # a rebalance, had there been one, would have bumped the generation by now
        if a.generation() is not None:
            assert a.generation() == gen
            assert b2.generation() == gen
        assert a.owned() == a_parts == everything - b_parts
        d = describe_group(server.host, server.port, "g-static")
        assert d["state"] == "Stable"
        assert {m["instance"]: frozenset(m["partitions"]) for m in d["members"].values()} == {
            "a": a_parts,
            "b": b_parts,
        }
        events = journal_events(server.data_dir, "g-static")
        at = rejoined()[0]["seq"]
        assert rejoined()[0]["generation"] == gen
        assert [e for e in events if e["seq"] > at and e["event"] == "state_change"] == []
    finally:
        a.close()
        if b2 is not None:
            b2.close()


def test_commits_are_fetched_back(groupcoord_server, client) -> None:
    topic, group = unique("c"), unique("g-commit")  # a shared server keeps other tests' topics
    bootstrap = groupcoord_server.bootstrap
    client.create_topic(bootstrap, topic, 2)
    # records up to the committed offsets: a consumer that starts at a committed offset beyond the log end
    # resets it, and kafkajs then commits its reset position over the offset this scenario checks
    produce(bootstrap, topic, {0: 50, 1: 50})
    tps = [(topic, 0), (topic, 1)]
    c1 = client.consumer(bootstrap, topic, group)
    try:
        wait_for_sync(lambda: len(c1.owned()) == 2, 60, "assignment")
        c1.commit({(topic, 0): (42, "meta-0"), (topic, 1): (7, "")})
        got = c1.committed(tps)
        assert (got[(topic, 0)][0], got[(topic, 1)][0]) == (42, 7)
        if got[(topic, 0)][1] is not None:  # aiokafka's committed() returns no metadata
            assert got[(topic, 0)][1] == "meta-0"
    finally:
        c1.close()
    c2 = client.consumer(bootstrap, topic, group)
    try:
        got = c2.committed(tps)
        assert (got[(topic, 0)][0], got[(topic, 1)][0]) == (42, 7)
    finally:
        c2.close()
    assert offsets_seen_by_another_client(bootstrap, group) == {(topic, 0): 42, (topic, 1): 7}


def test_describe_list_and_delete_groups_through_the_admin_client(groupcoord_server, client) -> None:
    topic, group, never = unique("adm"), unique("g-admin"), unique("g-never")
    server, bootstrap = groupcoord_server, groupcoord_server.bootstrap
    client.create_topic(bootstrap, topic, 2)
    client_id = f"{client.name}-admin-test"
    c = client.consumer(bootstrap, topic, group, client_id=client_id)
    admin = client.admin(bootstrap)
    try:
        wait_for_sync(lambda: len(c.owned()) == 2, 60, "assignment")
        c.commit({(topic, 0): (5, "")})
        listed = admin.list_groups()[group]
        assert listed.protocol_type in ("consumer", None)  # None: confluent's ListGroups result has no type
        assert listed.state in ("Stable", None)  # None: aiokafka's has no state
        assert listed.simple in (False, None)  # None: only confluent's result says whether it is simple

        described = admin.describe(group)
        assert (described.error, described.state, described.assignor) == (
            0,
            "Stable",
            client.default_assignor,
        )
        assert described.protocol_type in ("consumer", None)
        (member,) = described.members
        assert member.client_id in (client_id, None)
        assert member.partitions in ({(topic, 0), (topic, 1)}, None)
        assert member.topics in ([topic], None)
        # the server's own view, for every client
        raw = describe_group(server.host, server.port, group)
        assert (raw["state"], raw["protocol_type"], raw["protocol"]) == (
            "Stable",
            "consumer",
            client.default_assignor,
        )
        (raw_member,) = raw["members"].values()
        assert (raw_member["client_id"], raw_member["partitions"]) == (client_id, {(topic, 0), (topic, 1)})

        assert admin.delete(group) == {group: "non_empty"}
        c.close()  # LeaveGroup: the group becomes Empty
        wait_for_sync(lambda: admin.describe(group).state == "Empty", 60, "the group to become Empty")
        assert offsets_seen_by_another_client(bootstrap, group) == {(topic, 0): 5}
        assert admin.delete(group, never) == {group: "ok", never: "not_found"}
        if (
            client.name == "java"
        ):  # kafka-clients 4.3 sends DescribeGroups v6 (KIP-1043): a deleted group fails
            with pytest.raises(AssertionError, match="GroupIdNotFoundException"):
                admin.describe(group)
        else:
            assert admin.describe(group).state == "Dead"
        assert group not in admin.list_groups()
        assert describe_group(server.host, server.port, group)["state"] == "Dead"
        assert offsets_seen_by_another_client(bootstrap, group) == {}
    finally:
        c.close()
        admin.close()
