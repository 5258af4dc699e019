"""confluent-kafka on the virtual clock (groupcoord.testing): session expiry and static restarts fire when the test advances the clock.

The other group scenarios run once for every client in test_group_scenarios.py, on the wall clock.

A confluent Consumer may not be used from two threads at once (`assignment()` blocks while another thread
polls), so each consumer lives on its own `PollingThread`, which polls it and snapshots its assignment.
librdkafka does not expose the generation; the server's view (DescribeGroups over a raw connection, and the
group event journal) stands in for it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter

import pytest
from confluent_kafka import Consumer
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

    wait_for_sync(lambda: bool(removed()), 60, f"a member_removed event for {group} in the journal")
    return removed()[0]["reason"]


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
        wait_for_sync(lambda: 0 < len(owned(survivor)) < 4, 60, "the survivor to share the partitions")
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
            lambda: owned(b2) == b_parts, 60, "the restarted static member to get its partitions back"
        )

        def rejoined() -> list[dict]:
            events = journal_events(groupcoord_server.data_dir, "g-static")
            return [e for e in events if e["event"] == "static_rejoin" and e["group_instance_id"] == "b"]

        wait_for_sync(lambda: bool(rejoined()), 60, "the static_rejoin journal event")
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
