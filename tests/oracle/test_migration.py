"""The online migration both ways (KIP-848 `group.consumer.migration.policy`, bidirectional by default), raw, on
Kafka 4.4 and groupcoord: a classic consumer group (JoinGroup/SyncGroup with the "consumer" protocol type and a
ConsumerProtocol subscription) is upgraded when a ConsumerGroupHeartbeat member joins it, and downgraded back
to a classic group when that member leaves. At each step the group's type and state (ListGroups,
DescribeGroups, ConsumerGroupDescribe) and the classic member's heartbeat error are compared."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartitions,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.join_group import JoinGroupRequestProtocol
from tests.oracle.reqs import cg_describe, cg_heartbeat, describe, heartbeat, join, list_groups, sync
from tests.oracle.test_consumer import owned, settle
from tests.oracle.transcript import Conn, Names, Recorder, assert_same

pytestmark = pytest.mark.integration


def _protocols(topic: str, owned_parts: tuple[int, ...] = ()) -> tuple[JoinGroupRequestProtocol, ...]:
    sub = ConsumerProtocolSubscription(
        topics=(topic,), owned_partitions=(TopicPartitions(topic, owned_parts),) if owned_parts else ()
    )
    return (JoinGroupRequestProtocol(name="range", metadata=encode_subscription(sub)),)


def _assignment(topic: str, parts: tuple[int, ...]) -> bytes:
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=(TopicPartitions(topic, parts),)))


def _state(r: Recorder, c: Conn, label: str, g: str) -> None:
    """The group as ListGroups (type, state, protocol type) and DescribeGroups (state, protocol) show it."""
    resp = list_groups(r, c)
    got = [(x.protocol_type, x.group_state, x.group_type) for x in resp.groups if x.group_id == g]
    r.note(f"{label}: list", {"error_code": resp.error_code, "groups": got})
    describe(r, c, f"{label}: describe", g)


def _join_sync(r: Recorder, c: Conn, label: str, g: str, t: str, m: str, owned_parts: tuple[int, ...]) -> Any:
    """The classic member's (re)join and sync as the Java client's eager consumer does: it leads, so it assigns
    every partition of `t` to itself (a lone classic member), or takes what the consumer group computed."""
    j = join(r, c, f"{label} join", g, m, protocols=_protocols(t, owned_parts))
    assignments = {m: _assignment(t, (0, 1))} if j.leader == m and j.members else {}
    s = sync(r, c, f"{label} sync", g, j.generation_id, m, assignments)
    got = decode_assignment(s.assignment) if s.assignment else None
    parts = sorted(p for tp in got.assigned_partitions for p in tp.partitions) if got else []
    r.note(f"{label} assigned", parts)
    return j.generation_id, tuple(parts)


def migration(r: Recorder, n: Names) -> None:
    g, t = n("g"), n("t")
    r.target.create_topic(t, 2)
    # no epoch shift (difference 82 is about a group a KIP-848 member creates): the converted consumer group's
    # epoch continues the classic generation on both servers
    c, ck = r.conn("classic"), r.conn("kip848")
    first = join(r, c, "classic join (no id)", g, protocols=_protocols(t))
    a = first.member_id
    gen, have = _join_sync(r, c, "classic", g, t, a, ())
    heartbeat(r, c, "classic heartbeat", g, gen, a)
    _state(r, c, "classic group", g)
    # upgrade: a KIP-848 member joins the classic group
    b = cg_heartbeat(r, ck, "consumer member joins", g, "m-b", 0, topics=(t,), rebalance=30000)
    _state(r, c, "after upgrade", g)
    cg_describe(r, c, "consumer describe after upgrade", g)
    # the classic member learns of the rebalance from its heartbeat (what it owns must be revoked)
    hb = r.poll(c, ApiKey.HEARTBEAT, 4, HeartbeatRequest(g, gen, a, None), until=lambda x: x.error_code != 0)
    r.note("classic heartbeat after upgrade", hb.error_code)
    # an eager consumer revokes everything before it rejoins
    gen, have = _join_sync(r, c, "classic rejoin", g, t, a, ())
    heartbeat(r, c, "classic heartbeat after rejoin", g, gen, a)
    settle(
        r, ck, "settled", g, {"m-b": (b.member_epoch, owned(b))},
        until=lambda m: sum(len(x.partitions) for x in m["m-b"][1]) == 1,
    )  # fmt: skip
    cg_describe(r, c, "consumer describe settled", g)
    heartbeat(r, c, "classic heartbeat settled", g, gen, a)
    # downgrade: the last KIP-848 member leaves
    cg_heartbeat(r, ck, "consumer member leaves", g, "m-b", -1, owned=None)
    _state(r, c, "after downgrade", g)
    cg_describe(r, c, "consumer describe after downgrade", g)
    hb = heartbeat(r, c, "classic heartbeat after downgrade", g, gen, a)
    if hb.error_code != 0:
        _join_sync(r, c, "classic rejoin after downgrade", g, t, a, have)
        _state(r, c, "classic again", g)


def test_online_migration_both_ways_same_as_kafka(oracle_pair: tuple) -> None:
    assert_same(oracle_pair, migration, "migration")
