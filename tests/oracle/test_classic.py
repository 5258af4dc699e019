"""Classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup), raw, on Kafka 4.4 and groupcoord: the same
transcript after normalising (tests/oracle/transcript.py)."""

from __future__ import annotations

import pytest

from groupcoord.protocol.messages.join_group import JoinGroupRequestProtocol
from tests.oracle.reqs import describe, heartbeat, join, leave, sync
from tests.oracle.transcript import Names, Recorder, assert_same

pytestmark = pytest.mark.integration


def _first_join(r: Recorder, c, label: str, group: str, **kw):  # type: ignore[no-untyped-def]
    """A dynamic member's join from v4: MEMBER_ID_REQUIRED with its id, then the join with it."""
    first = join(r, c, f"{label} (no id)", group, **kw)
    return join(r, c, label, group, first.member_id, **kw)


def classic_errors(r: Recorder, n: Names) -> None:
    g = n("g")
    c1, c2 = r.conn("c1"), r.conn("c2")
    j1 = _first_join(r, c1, "m1 join", g)
    m1 = j1.member_id
    sync(r, c1, "sync wrong generation", g, j1.generation_id + 1, m1, {m1: b"a1"})
    sync(r, c1, "sync unknown member", g, j1.generation_id, "nobody", {})
    sync(r, c1, "sync protocol name mismatch", g, j1.generation_id, m1, {m1: b"a1"}, pname="roundrobin")
    sync(r, c1, "sync m1", g, j1.generation_id, m1, {m1: b"a1"})
    heartbeat(r, c1, "heartbeat ok", g, j1.generation_id, m1)
    heartbeat(r, c1, "heartbeat illegal generation", g, j1.generation_id + 5, m1)
    heartbeat(r, c1, "heartbeat unknown member", g, j1.generation_id, "nobody")
    heartbeat(r, c1, "heartbeat unknown group", n("nogroup"), 1, "nobody")
    join(r, c2, "join other protocol type", g, ptype="connect")
    join(
        r,
        c2,
        "join no common protocol",
        g,
        protocols=(JoinGroupRequestProtocol(name="roundrobin", metadata=b""),),
    )
    join(r, c2, "join session below min", g, session=500)
    join(r, c2, "join session above max", g, session=1800001)
    join(r, c2, "join empty group id", "")
    join(r, c2, "join unknown member id", g, "nobody")
    # a second member: the first must rejoin, then both complete one generation
    first = join(r, c2, "m2 join (no id)", g)
    m2 = first.member_id
    p2 = join(r, c2, "m2 join", g, m2, wait=False)
    r.poll(c1, *_hb(g, j1.generation_id, m1), until=lambda x: x.error_code != 0)
    r.note("m1 sees the rebalance", "REBALANCE_IN_PROGRESS")
    sync(r, c1, "sync during rebalance", g, j1.generation_id, m1, {m1: b"a1"})
    p1 = join(r, c1, "m1 rejoin", g, m1, wait=False)
    j1b, j2 = p1.result(), p2.result()
    assert j1b.generation_id == j2.generation_id
    gen = j1b.generation_id
    leader_conn, leader = (c1, m1) if j1b.leader == m1 else (c2, m2)
    follower_conn, follower = (c2, m2) if leader == m1 else (c1, m1)
    pf = sync(r, follower_conn, "follower sync", g, gen, follower, {}, wait=False)
    sync(r, leader_conn, "leader sync", g, gen, leader, {m1: b"a1", m2: b"a2"})
    pf.result()
    describe(r, c1, "describe stable", g, n("missing"))
    leave(r, c2, "leave m2 and an unknown member", g, (m2, None), ("nobody", None))
    heartbeat(r, c1, "m1 heartbeat after m2 left", g, gen, m1)
    describe(r, c1, "describe after leave", g)
    leave(r, c1, "leave m1", g, (m1, None))
    describe(r, c1, "describe empty", g)
    leave(r, c1, "leave from empty group", g, (m1, None))


def _hb(g: str, gen: int, m: str):  # type: ignore[no-untyped-def]
    from groupcoord.protocol.api import ApiKey
    from groupcoord.protocol.messages.heartbeat import HeartbeatRequest

    return ApiKey.HEARTBEAT, 4, HeartbeatRequest(group_id=g, generation_id=gen, member_id=m)


def static_membership(r: Recorder, n: Names) -> None:
    g = n("g")
    c1, c2 = r.conn("c1"), r.conn("c2")
    j = join(r, c1, "static join", g, instance="i1")
    m1 = j.member_id
    sync(r, c1, "static sync", g, j.generation_id, m1, {m1: b"a1"}, instance="i1")
    # the same instance restarts: a new member id replaces the old one; as the leader with the same
    # protocols, it is told to skip the assignment (KIP-814, JoinGroup v9)
    j2 = join(r, c2, "static rejoin (restart)", g, instance="i1")
    new = j2.member_id
    r.note("member id replaced", new != m1)
    heartbeat(r, c1, "old member id heartbeat", g, j.generation_id, m1, "i1")
    join(r, c1, "old member id joins", g, m1, instance="i1")
    sync(r, c2, "new member sync", g, j2.generation_id, new, {}, instance="i1")
    heartbeat(r, c2, "new member heartbeat", g, j2.generation_id, new, "i1")
    heartbeat(r, c2, "heartbeat without instance", g, j2.generation_id, new)
    describe(r, c2, "describe static", g)
    leave(r, c2, "leave with the old id", g, (m1, "i1"))
    leave(r, c2, "leave unknown instance", g, ("", "i9"))
    leave(r, c2, "leave by instance alone", g, ("", "i1"))
    describe(r, c2, "describe after static leave", g)


def old_versions(r: Recorder, n: Names) -> None:
    """JoinGroup v0-v3 has no MEMBER_ID_REQUIRED; v0 has no rebalance timeout; old heartbeat/sync versions."""
    g = n("g")
    c = r.conn("old")
    j = join(r, c, "join v3", g, version=3)
    m = j.member_id
    sync(r, c, "sync v0", g, j.generation_id, m, {m: b"x"}, version=0)
    heartbeat(r, c, "heartbeat v0", g, j.generation_id, m, version=0)
    j = join(r, c, "rejoin v5", g, m, version=5)
    sync(r, c, "sync v3", g, j.generation_id, m, {m: b"y"}, version=3)
    leave(r, c, "leave v0", g, (m, None), version=0)
    j = join(r, c, "join v0", g, version=0)
    leave(r, c, "leave v2", g, (j.member_id, None), version=2)
    describe(r, c, "describe v0", g, version=0)


@pytest.mark.parametrize(
    "scenario", [classic_errors, static_membership, old_versions], ids=lambda s: s.__name__
)
def test_classic_same_as_kafka(oracle_pair, scenario) -> None:  # type: ignore[no-untyped-def]
    assert_same(oracle_pair, scenario, scenario.__name__)
