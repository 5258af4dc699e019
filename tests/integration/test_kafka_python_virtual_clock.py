"""kafka-python on the virtual clock (groupcoord.testing): session expiry and static restarts fire when the test advances the clock.

The other group scenarios run once for every client in test_group_scenarios.py, on the wall clock.

kafka-python's KafkaConsumer is blocking and not thread-safe, so each consumer lives on its own
`PollingThread`, which polls it and snapshots (assignment, generation) after every poll.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient, NewTopic

from tests.integration.helpers import (
    PollingThread,
    describe_group,
    exact_cover,
    journal_events,
    wait_for_sync,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
logging.getLogger("kafka").setLevel(logging.CRITICAL)

Partitions = frozenset[tuple[str, int]]


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def snapshot(c: KafkaConsumer) -> tuple[Partitions, int, str]:
    g = c._coordinator._generation
    return frozenset((tp.topic, tp.partition) for tp in c.assignment()), g.generation_id, g.member_id


def consumer(bootstrap: str, topic: str, group: str, **kw) -> PollingThread:  # type: ignore[no-untyped-def]
    kw.setdefault("session_timeout_ms", 6000)
    kw.setdefault("heartbeat_interval_ms", 500)
    kw.setdefault("enable_auto_commit", False)

    def make() -> KafkaConsumer:
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, **kw)
        # kafka-python 3.0.12 joins before it has metadata for its subscription; a leader that then rejoins
        # for the metadata change and has its poll() time out mid-join never applies the SyncGroup answer
        # (need_rejoin() turns False while the join task is still in flight): no heartbeats, no rejoin, the
        # member just expires. Fetching the topic's metadata before subscribing avoids that client bug.
        assert c.partitions_for_topic(topic)
        c.subscribe([topic])
        return c

    # kafka-python 3.0.12 wedges a member whose poll() times out while its JoinGroup/SyncGroup round trip is in
    # flight and whose need_rejoin() has meanwhile turned False (seen for leaders): the SyncGroup answer is never
    # applied, heartbeats stay disabled and the member silently expires. Long polls make that window rare.
    t = PollingThread(make, lambda c: c.poll(timeout_ms=1000), snapshot, name=f"kp-{group}")
    t.wait_ready()
    return t


def owned(t: PollingThread) -> Partitions:
    return t.state[0] if t.state else frozenset()


def generation(t: PollingThread) -> int:
    return t.state[1] if t.state else -1


def close(t: PollingThread) -> None:
    t.stop(lambda c: c.close())


def settled(server, group: str, consumers: list[PollingThread], expected: set, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    """Every consumer is in the same generation, their assignments are an exact cover, and each one's view is
    what the server holds for its member id in a Stable group. (kafka-python bumps its generation on the
    JoinGroup answer, before SyncGroup hands out the new assignment, so the client's view alone can show a
    new generation next to an old assignment.)"""

    def ok() -> bool:
        states = [t.state for t in consumers]
        if any(s is None for s in states):
            return False
        if len({s[1] for s in states}) != 1 or not exact_cover([s[0] for s in states], expected):
            return False
        d = describe_group(server.host, server.port, group)
        served = {mid: frozenset(m["partitions"]) for mid, m in d["members"].items()}
        return d["state"] == "Stable" and served == {s[2]: s[0] for s in states}

    wait_for_sync(ok, timeout, f"{len(consumers)} kafka-python consumers to share {len(expected)} partitions")


def first_removal(data_dir, group: str) -> str:  # type: ignore[no-untyped-def]
    """The reason of the group's first `member_removed` journal event (the journal is flushed in batches)."""

    def removed() -> list[dict]:
        return [e for e in journal_events(data_dir, group) if e["event"] == "member_removed"]

    wait_for_sync(lambda: bool(removed()), 60, f"a member_removed event for {group} in the journal")
    return removed()[0]["reason"]


CHILD = textwrap.dedent(
    """
    import sys, time, logging
    from kafka import KafkaConsumer
    logging.disable(logging.CRITICAL)
    c = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                      session_timeout_ms=int(sys.argv[4]), heartbeat_interval_ms=300, enable_auto_commit=False)
    assert c.partitions_for_topic(sys.argv[2])  # see consumer() below
    c.subscribe([sys.argv[2]])
    deadline = time.monotonic() + 30
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(timeout_ms=100)
    print("assigned" if c.assignment() else "unassigned", flush=True)
    while True:
        c.poll(timeout_ms=100)
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
    survivor = consumer(bootstrap, "k", "g-kill", session_timeout_ms=30000, heartbeat_interval_ms=300)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, bootstrap, "k", "g-kill", "3000"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "assigned"
        wait_for_sync(lambda: 0 < len(owned(survivor)) < 4, 60, "the survivor to share the partitions")
        view = groupcoord_process.wait_group_sync("g-kill", members=2)
        child_id = next(m.member_id for m in view.members if m.member_id != survivor.state[2])  # type: ignore[index]
        child.kill()  # SIGKILL: no LeaveGroup, only the session timeout can remove it
        child.wait(10)
        groupcoord_process.advance_sync(2999)
        assert child_id in {m.member_id for m in groupcoord_process.describe("g-kill").members}
        groupcoord_process.advance_sync(1)
        assert child_id not in {m.member_id for m in groupcoord_process.describe("g-kill").members}
        wait_for_sync(lambda: owned(survivor) == everything, 30, "the survivor to own every partition")
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
    a = consumer(bootstrap, "s", "g-static", group_instance_id="a", session_timeout_ms=10000)
    b = consumer(bootstrap, "s", "g-static", group_instance_id="b", session_timeout_ms=10000)
    b2 = None
    try:
        settled(groupcoord_server, "g-static", [a, b], everything)
        gen = generation(a)
        b_parts = owned(b)
        close(b)  # a static kafka-python member sends no LeaveGroup
        b2 = consumer(bootstrap, "s", "g-static", group_instance_id="b", session_timeout_ms=10000)
        wait_for_sync(
            lambda: owned(b2) == b_parts, 60, "the restarted static member to get its partitions back"
        )

        def rejoined() -> list[dict]:
            events = journal_events(groupcoord_server.data_dir, "g-static")
            return [e for e in events if e["event"] == "static_rejoin" and e["group_instance_id"] == "b"]

        wait_for_sync(lambda: bool(rejoined()), 60, "the static_rejoin journal event")
        # no waiting for a rebalance "had there been one": on the virtual clock b's session cannot lapse, and
        # a rebalance caused by the rejoin would have been journalled before b2 got its partitions back
        assert generation(a) == gen
        assert generation(b2) == gen
        assert owned(a) == everything - b_parts
        events = journal_events(groupcoord_server.data_dir, "g-static")
        at = rejoined()[0]["seq"]
        assert rejoined()[0]["generation"] == gen
        assert [e for e in events if e["seq"] > at and e["event"] == "state_change"] == []
    finally:
        close(a)
        if b2 is not None:
            close(b2)
