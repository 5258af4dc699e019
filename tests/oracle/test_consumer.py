"""KIP-848 consumer groups (ConsumerGroupHeartbeat/ConsumerGroupDescribe), raw, on Kafka 4.4 and groupcoord."""

from __future__ import annotations

import time
from typing import Any

import pytest

from groupcoord.protocol.messages.consumer_group_heartbeat import HeartbeatTopicPartitions
from tests.oracle.reqs import cg_describe, cg_heartbeat
from tests.oracle.transcript import Conn, Names, Recorder, assert_same

pytestmark = pytest.mark.integration


def owned(resp: Any) -> tuple[HeartbeatTopicPartitions, ...]:
    """What a member owns once it has taken the assignment of `resp` (an answer with one)."""
    return tuple(resp.assignment.topic_partitions) if resp.assignment is not None else ()


Members = dict[str, tuple[int, tuple]]  # member id -> (epoch, owned)


def settle(r: Recorder, c: Conn, label: str, g: str, members: Members, until, timeout: float = 60) -> Members:  # type: ignore[no-untyped-def]
    """Every member heartbeats (unrecorded) in turn as a well-behaved one does, taking each assignment it
    is given, until `until(members)`; notes where each ended."""
    deadline = time.monotonic() + timeout
    members = dict(members)
    while not until(members):
        if time.monotonic() > deadline:
            raise AssertionError(f"{r.target.name}: {label} did not settle: {members}")
        for m, (epoch, have) in members.items():
            c.send(*_hb(g, m, epoch, have))
            resp = c.recv()
            assert resp.error_code == 0, resp
            members[m] = (resp.member_epoch, owned(resp) if resp.assignment is not None else have)
        time.sleep(0.2)
    for m, (epoch, have) in sorted(members.items()):
        r.note(
            f"{label}: {m}",
            {
                "member_epoch": epoch,
                "owned": [{"topic_id": t.topic_id, "partitions": t.partitions} for t in have],
            },
        )
    return members


def _hb(g: str, m: str, epoch: int, have: tuple):  # type: ignore[no-untyped-def]
    from groupcoord.protocol.api import ApiKey
    from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest

    return (
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        1,
        ConsumerGroupHeartbeatRequest(group_id=g, member_id=m, member_epoch=epoch, topic_partitions=have),
    )


def npartitions(have: tuple) -> int:
    return sum(len(t.partitions) for t in have)


def two_members_epochs(r: Recorder, n: Names) -> None:
    """Two members join a 6-partition topic; where each one's epoch goes, step by step."""
    g, t = n("g"), n("t")
    r.target.create_topic(t, 6)
    c = r.conn("c")
    r.epoch_shift = 1
    a = cg_heartbeat(r, c, "m1 joins", g, "m1", 0, topics=(t,), rebalance=30000)
    b = cg_heartbeat(r, c, "m2 joins", g, "m2", 0, topics=(t,), rebalance=30000)
    cg_describe(r, c, "describe after joins", g)
    ms = {"m1": (a.member_epoch, owned(a)), "m2": (b.member_epoch, owned(b))}
    ms = settle(
        r,
        c,
        "settled",
        g,
        ms,
        lambda ms: all(npartitions(o) == 3 for _, o in ms.values()) and len({e for e, _ in ms.values()}) == 1,
    )
    (e1, o1), (e2, o2) = ms["m1"], ms["m2"]
    cg_describe(r, c, "describe settled", g)
    cg_heartbeat(r, c, "m1 fenced epoch (ahead)", g, "m1", e1 + 1, owned=o1)
    cg_heartbeat(r, c, "m2 unknown member", g, "m9", 1, owned=())
    cg_heartbeat(r, c, "m2 leaves", g, "m2", -1)
    cg_heartbeat(r, c, "m2 heartbeats after leaving", g, "m2", e2, owned=o2)
    settle(r, c, "m1 takes all", g, {"m1": (e1, o1)}, lambda ms: npartitions(ms["m1"][1]) == 6)
    cg_describe(r, c, "describe one member", g)
    cg_heartbeat(r, c, "m1 leaves", g, "m1", -1)
    cg_describe(r, c, "describe empty", g)


def invalid_heartbeats(r: Recorder, n: Names) -> None:
    g, t = n("g"), n("t")
    r.epoch_shift = 1
    r.target.create_topic(t, 2)
    c = r.conn("c")
    cg_heartbeat(r, c, "empty member id", g, "", 0, topics=(t,), rebalance=30000)
    cg_heartbeat(r, c, "empty group id", "", "m1", 0, topics=(t,), rebalance=30000)
    cg_heartbeat(r, c, "join without subscription", g, "m1", 0, rebalance=30000)
    cg_heartbeat(r, c, "join without rebalance timeout", g, "m1", 0, topics=(t,))
    cg_heartbeat(r, c, "unknown assignor", g, "m1", 0, topics=(t,), rebalance=30000, assignor="nope")
    cg_heartbeat(r, c, "invalid regex", g, "m1", 0, regex="[", rebalance=30000)
    cg_heartbeat(r, c, "names and regex", g, "m1", 0, topics=(t,), regex=n("nomatch") + ".*", rebalance=30000)
    cg_heartbeat(
        r, c, "join with null owned partitions", g, "m1", 0, topics=(t,), rebalance=30000, owned=None
    )
    cg_heartbeat(r, c, "negative epoch -3", g, "m1", -3, topics=(t,), rebalance=30000)
    cg_heartbeat(r, c, "unknown member at epoch 5", g, "m1", 5)
    cg_heartbeat(r, c, "leave unknown member", g, "m1", -1)
    cg_heartbeat(r, c, "range assignor join", g, "m1", 0, topics=(t,), rebalance=30000, assignor="range")
    cg_heartbeat(r, c, "static leave of a dynamic member", g, "m1", -2)
    cg_describe(r, c, "describe", g, "", n("missing"))


def static_members(r: Recorder, n: Names) -> None:
    g, t = n("g"), n("t")
    r.epoch_shift = 1
    r.target.create_topic(t, 2)
    c = r.conn("c")
    a = cg_heartbeat(r, c, "static join", g, "m1", 0, topics=(t,), rebalance=30000, instance="i1")
    cg_heartbeat(r, c, "same instance, other member", g, "m2", 0, topics=(t,), rebalance=30000, instance="i1")
    e, o = settle(
        r, c, "m1 settled", g, {"m1": (a.member_epoch, owned(a))}, lambda ms: npartitions(ms["m1"][1]) == 2
    )["m1"]
    cg_heartbeat(r, c, "static leave (-2)", g, "m1", -2, instance="i1")
    cg_describe(r, c, "describe after static leave", g)
    cg_heartbeat(r, c, "instance rejoins as m3", g, "m3", 0, topics=(t,), rebalance=30000, instance="i1")
    cg_heartbeat(r, c, "old member id", g, "m1", e, owned=o, instance="i1")
    cg_describe(r, c, "describe rejoined", g)


@pytest.mark.parametrize(
    "scenario", [two_members_epochs, invalid_heartbeats, static_members], ids=lambda s: s.__name__
)
def test_consumer_same_as_kafka(oracle_pair, scenario) -> None:  # type: ignore[no-untyped-def]
    assert_same(oracle_pair, scenario, scenario.__name__)


def test_named_difference_first_epoch(oracle_pair) -> None:  # type: ignore[no-untyped-def]
    """docs/differences.md "KIP-848 and share groups start at epoch 0": Kafka 4.4 creates a group at epoch 1
    with an empty assignment at 1 (KAFKA-20268), so its first member gets epoch 2; groupcoord's gets 1. When
    this fails, groupcoord matches Kafka: drop `Recorder.epoch_shift` and the entry."""

    def first_join(r: Recorder, n: Names) -> None:
        g, t = n("g"), n("t")
        r.target.create_topic(t, 1)
        r.note(
            "epoch", cg_heartbeat(r, r.conn(), "join", g, "m1", 0, topics=(t,), rebalance=30000).member_epoch
        )

    from tests.oracle.transcript import run_both

    kafka_t, ours = run_both(oracle_pair, first_join, "first_epoch")
    assert (kafka_t[-1][1], ours[-1][1]) == (2, 1)


def test_named_difference_assignor_tie(oracle_pair) -> None:  # type: ignore[no-untyped-def]
    """docs/differences.md 83: one member names `range`, one `uniform`: Kafka 4.4 uses `uniform`, groupcoord
    `range` (the lowest name)."""

    def tie(r: Recorder, n: Names) -> None:
        g, t = n("g"), n("t")
        r.target.create_topic(t, 2)
        c = r.conn()
        cg_heartbeat(r, c, "m1", g, "m1", 0, topics=(t,), rebalance=30000, assignor="range")
        cg_heartbeat(r, c, "m2", g, "m2", 0, topics=(t,), rebalance=30000, assignor="uniform")
        c.send(*_describe(g))
        r.note("assignor", c.recv().groups[0].assignor_name)

    from tests.oracle.transcript import run_both

    kafka_t, ours = run_both(oracle_pair, tie, "assignor_tie")
    assert (kafka_t[-1][1], ours[-1][1]) == ("uniform", "range")


def _describe(g: str):  # type: ignore[no-untyped-def]
    from groupcoord.protocol.api import ApiKey
    from groupcoord.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest

    return ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=(g,))
