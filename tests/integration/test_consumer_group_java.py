"""The Java consumer (kafka-clients 4.3) with `group.protocol=consumer` (KIP-848) against the real server.

The same drivers as the classic Java tests (tests/drivers/java/, `-Dgroup.protocol=consumer`); the server
side is read with ConsumerGroupDescribe. The Java consumer sends ConsumerGroupHeartbeat v1, OffsetCommit and
OffsetFetch v9 with its member epoch, and a static member leaves with epoch -2 on close.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from tests.integration import drivers
from tests.integration.helpers import RawClient, wait_for_sync
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(300)]

FLAGS = (
    "--group-consumer-assignment-interval-ms", "0",
    "--group-consumer-min-heartbeat-interval-ms", "300",
    "--group-consumer-heartbeat-interval-ms", "300",
)  # fmt: skip


@pytest.fixture(scope="session")
def java_cp() -> str:
    return drivers.java_classpath()


@pytest.fixture
def run_java(java_cp: str) -> Iterator:
    started: list[drivers.Driver] = []

    def run(main: str, *args: str) -> drivers.Driver:
        d = drivers.Driver(
            [
                "java",
                "-Xshare:auto",
                "-XX:TieredStopAtLevel=1",
                "-Dgroup.protocol=consumer",
                "-cp",
                java_cp,
                main,
                *args,
            ]
        )
        started.append(d)
        return d

    yield run
    for d in started:
        d.kill()


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


def client_view(phase: dict) -> dict[str, set[int]]:
    return {m["member_id"]: set(m["partitions"]) for m in phase["members"]}


def test_java_scale_one_three_two(server_factory, run_java) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    topic, group = "java-cg-scale", "java-cg-scale-g"
    d = run_java("GroupDriver", "scale", srv.bootstrap, topic, group)
    for name, size, records in (("one", 1, 30), ("three", 3, 60)):
        phase = d.phase(name)
        assert phase["records"] == records and len(phase["members"]) == size
        g = describe(srv, group)
        assert (g.group_state, g.group_epoch, g.assignment_epoch) == (
            "Stable",
            phase["generation"],
            phase["generation"],
        )
        assert server_view(srv, group) == client_view(phase)
        assert {m.member_type for m in g.members} == {1}
        d.go()
    two = d.phase("two")
    assert two["records"] == 90 and two["consumed_total"] == 90  # every record consumed exactly once
    wait_for_sync(lambda: server_view(srv, group) == client_view(two), 30, "the server agrees with the two")
    assert two["left"]["member_id"] not in server_view(srv, group)
    d.go()
    d.finish()
    g = describe(srv, group)
    assert (g.group_state, g.members) == ("Empty", ())


def test_java_static_member_restarted_without_reassignment(server_factory, run_java) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    topic, group = "java-cg-static", "java-cg-static-g"
    d = run_java("GroupDriver", "static", srv.bootstrap, topic, group)
    stable = d.phase("stable")
    before = describe(srv, group)
    assert {m.instance_id for m in before.members} == {"inst-0", "inst-1", "inst-2"}
    assert server_view(srv, group) == client_view(stable)
    d.go()
    restarted = d.phase("restarted")
    old, members = restarted["old"], restarted["members"]
    new = next(m for m in members if m["instance"] == "inst-1")
    assert new["member_id"] != old["member_id"] and new["partitions"] == old["partitions"]
    after = describe(srv, group)
    assert after.group_epoch == before.group_epoch  # the restart caused no rebalance
    assert server_view(srv, group) == client_view(restarted)
    # it resumed from its predecessor's commits: only records produced after the restart
    assert restarted["restarted_values"] and all(int(v[1:]) >= 20 for v in restarted["restarted_values"])
    d.go()
    d.finish()


def test_java_subscription_pattern_picks_up_a_new_matching_topic(server_factory, run_java) -> None:  # type: ignore[no-untyped-def]
    """`subscribe(SubscriptionPattern)` sends SubscribedTopicRegex: the coordinator resolves it (RE2, full
    match) and assigns a matching topic created later, bumping the group epoch."""
    srv = server_factory(*FLAGS)
    prefix, group = unique("jrx"), unique("jrx-g")
    d = run_java("RegexDriver", srv.bootstrap, prefix, group)
    first = d.phase("first")
    assert first["assignment"] == [f"{prefix}-a-0", f"{prefix}-a-1"]
    g = describe(srv, group)
    assert g.members[0].subscribed_topic_regex == f"{prefix}-.*"
    epoch = g.group_epoch
    d.go()
    second = d.phase("second")
    assert second["assignment"] == sorted(
        [f"{prefix}-a-0", f"{prefix}-a-1"] + [f"{prefix}-b-{p}" for p in range(3)]
    )
    assert describe(srv, group).group_epoch > epoch
    d.go()
    d.finish()


@pytest.mark.groupcoord(
    virtual_clock=False,
    group_consumer_assignment_interval_ms=0,
    group_consumer_min_heartbeat_interval_ms=300,
    group_consumer_heartbeat_interval_ms=300,
)
def test_java_commits_and_fetches_by_topic_id(groupcoord_process, run_java) -> None:  # type: ignore[no-untyped-def]
    """kafka-clients 4.3 sends the newest versions we advertise: OffsetCommit v10 and OffsetFetch v10, topics
    by id (server/apis/topic_ids.py), answered without error."""
    srv = groupcoord_process
    srv.record()
    topic, group = unique("java-cg-ids"), unique("java-cg-ids-g")
    d = run_java("GroupDriver", "scale", srv.bootstrap, topic, group)
    phase = d.phase("one")
    assert phase["records"] == 30
    # the member commits after each poll; the phase may be reported before its commit is answered
    wait_for_sync(lambda: bool(srv.recorded("OffsetCommit", group)), 60, "a commit from the Java member")
    commits = srv.recorded("OffsetCommit", group)
    assert commits and {r["version"] for r in commits} == {10}, [r["version"] for r in commits]
    answered = [p for r in commits for t in r["response"]["topics"] for p in t["partitions"]]
    assert answered and {p["error_code"] for p in answered} == {0}
    assert all(t["name"] == "" and t["topic_id"] for r in commits for t in r["request"]["topics"])
    fetches = srv.recorded("OffsetFetch", group)
    assert fetches and {r["version"] for r in fetches} == {10}
    assert {g["error_code"] for r in fetches for g in r["response"]["groups"]} == {0}
    d.kill()
