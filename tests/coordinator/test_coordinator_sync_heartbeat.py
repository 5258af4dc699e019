"""Spec §10 scenarios 35-39: SyncGroup, the sync timeout and Heartbeat."""

from __future__ import annotations

import pytest
from coordinator_harness import Harness, assignment, sync_ok

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.group import DEAD

G = "group"


@pytest.fixture
def h() -> Harness:
    return Harness()


def _completing(h: Harness, n: int = 2, session: int = 1000, **kw) -> tuple:
    """A group of n members just past the join phase (generation 1); returns (leader, followers)."""
    toks = [h.join(G, version=3, session=session, **kw) for _ in range(n)]
    h.advance(3000)
    results = [h.join_result(t) for t in toks]
    leader = next(r for r in results if r.leader == r.member_id)
    return leader, [r for r in results if r is not leader]


# ------------------------------------------------------------------------------------ 35-37 SyncGroup


def test_sync_group_from_unknown_group(h: Harness) -> None:
    r = h.reply(h.sync(G, "member", 1))
    assert (r.error, r.assignment) == (E.UNKNOWN_MEMBER_ID, b"")


def test_sync_group_from_unknown_member(h: Harness) -> None:
    _completing(h)
    r = h.reply(h.sync(G, "unknown-member", 1))
    assert (r.error, r.assignment, r.protocol_name) == (E.UNKNOWN_MEMBER_ID, b"", None)


def test_sync_group_from_illegal_generation(h: Harness) -> None:
    leader, _ = _completing(h)
    assert h.reply(h.sync(G, leader.member_id, 2)).error == E.ILLEGAL_GENERATION


def test_sync_group_returns_an_error_when_protocol_type_is_inconsistent(h: Harness) -> None:
    leader, _ = _completing(h, 1)
    r = h.reply(h.sync(G, leader.member_id, 1, version=5, ptype="connect", pname="range"))
    assert (r.error, r.protocol_type, r.protocol_name) == (E.INCONSISTENT_GROUP_PROTOCOL, None, None)


def test_sync_group_returns_an_error_when_protocol_name_is_inconsistent(h: Harness) -> None:
    leader, _ = _completing(h, 1)
    r = h.reply(h.sync(G, leader.member_id, 1, version=5, ptype="consumer", pname="roundrobin"))
    assert r.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_sync_group_v5_requires_protocol_type_and_name(h: Harness) -> None:
    leader, _ = _completing(h, 1)
    assert (
        h.reply(h.sync(G, leader.member_id, 1, version=5, pname="range")).error
        == E.INCONSISTENT_GROUP_PROTOCOL
    )


def test_sync_group_succeeds_when_protocol_type_and_name_are_not_provided(h: Harness) -> None:
    leader, _ = _completing(h, 1)
    r = sync_ok(h.reply(h.sync(G, leader.member_id, 1, version=3)))
    assert (r.protocol_type, r.protocol_name) == ("consumer", "range")


def test_sync_group_succeeds_when_protocol_type_and_name_are_consistent(h: Harness) -> None:
    leader, _ = _completing(h, 1)
    a = assignment({"foo": [0]})
    r = sync_ok(
        h.reply(
            h.sync(
                G, leader.member_id, 1, ((leader.member_id, a),), version=5, ptype="consumer", pname="range"
            )
        )
    )
    assert (r.protocol_type, r.protocol_name, r.assignment) == ("consumer", "range", a)


def test_sync_group_leader_after_follower(h: Harness) -> None:
    leader, (follower,) = _completing(h)
    sf = h.sync(G, follower.member_id, 1)
    assert h.reply(sf) is None
    la, fa = assignment({"foo": [0]}), assignment({"foo": [1]})
    sl = h.sync(G, leader.member_id, 1, ((leader.member_id, la), (follower.member_id, fa)))
    assert sync_ok(h.reply(sl)).assignment == la
    assert sync_ok(h.reply(sf)).assignment == fa
    assert h.group().state == "Stable"


def test_sync_group_follower_after_leader(h: Harness) -> None:
    leader, (follower,) = _completing(h)
    la, fa = assignment({"foo": [0]}), assignment({"foo": [1]})
    sync_ok(h.reply(h.sync(G, leader.member_id, 1, ((leader.member_id, la), (follower.member_id, fa)))))
    assert h.group().state == "Stable"
    assert sync_ok(h.reply(h.sync(G, follower.member_id, 1))).assignment == fa


# ---------------------------------------------------------------------------------- 38 sync timeout


def test_leader_failure_in_sync_group(h: Harness) -> None:
    leader, (follower,) = _completing(h)
    sf = h.sync(G, follower.member_id, 1)
    h.advance(499)
    assert h.reply(sf) is None
    h.advance(1)
    assert (h.reply(sf).error, h.reply(sf).assignment) == (E.REBALANCE_IN_PROGRESS, b"")
    g = h.group()
    assert leader.member_id not in g.members and follower.member_id in g.members
    assert g.state == "PreparingRebalance"
    assert h.events_of("member_removed", reason="sync_timeout", member_id=leader.member_id)


def test_rebalance_times_out_when_sync_request_is_not_received(h: Harness) -> None:
    leader, (follower,) = _completing(h)
    h.advance(250)
    assert h.heartbeat(G, leader.member_id, 1) == E.NONE
    assert h.heartbeat(G, follower.member_id, 1) == E.NONE  # heartbeats do not count as a sync
    h.advance(250)
    g = h.group()
    assert (g.state, g.generation_id, len(g.members)) == ("Empty", 2, 0)
    assert h.events_of("state_change", state_to="PreparingRebalance", reason="sync_timeout")


def test_rebalance_times_out_when_sync_request_is_not_received_from_followers(h: Harness) -> None:
    leader, followers = _completing(h, 3)
    sync_ok(h.reply(h.sync(G, leader.member_id, 1, ())))
    assert h.group().state == "Stable"
    h.advance(500)
    g = h.group()
    assert list(g.members) == [leader.member_id] and g.state == "PreparingRebalance"
    assert all(f.member_id not in g.members for f in followers)


def test_rebalance_times_out_when_sync_request_is_not_received_from_leaders(h: Harness) -> None:
    leader, followers = _completing(h, 3)
    toks = [h.sync(G, f.member_id, 1) for f in followers]
    h.advance(500)
    assert all(h.reply(t).error == E.REBALANCE_IN_PROGRESS for t in toks)
    g = h.group()
    assert leader.member_id not in g.members and len(g.members) == 2 and g.state == "PreparingRebalance"


def test_rebalance_does_not_time_out_when_all_sync_are_received(h: Harness) -> None:
    leader, (follower,) = _completing(h)
    sync_ok(h.reply(h.sync(G, leader.member_id, 1, ())))
    sync_ok(h.reply(h.sync(G, follower.member_id, 1)))
    assert ("sync", G, 1) not in h.timers
    for _ in range(4):
        h.advance(250)
        assert h.heartbeat(G, leader.member_id, 1) == E.NONE
        assert h.heartbeat(G, follower.member_id, 1) == E.NONE
    g = h.group()
    assert (g.state, len(g.members), g.generation_id) == ("Stable", 2, 1)


# ------------------------------------------------------------------------------------ 39 heartbeats


def test_heartbeat_unknown_group(h: Harness) -> None:
    assert h.heartbeat(G, "member", 1) == E.UNKNOWN_MEMBER_ID


def test_heartbeat_dead_group(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.group().transition_to(DEAD, h.now)
    assert h.heartbeat(G, r.member_id, 1) == E.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_empty_group(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.leave(G, (r.member_id, None))
    assert h.group().state == "Empty"
    assert h.heartbeat(G, r.member_id, 2) == E.UNKNOWN_MEMBER_ID


def test_heartbeat_illegal_generation(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    before = dict(h.timers)
    assert h.heartbeat(G, r.member_id, 2) == E.ILLEGAL_GENERATION
    assert h.timers == before  # rejected heartbeats do not reset the timer


def test_heartbeat_during_preparing_rebalance(h: Harness) -> None:
    results = h.stable_group(G, 2)
    h.join(G, member_id=results[0].leader, version=3)
    follower = next(r.member_id for r in results if r.member_id != results[0].leader)
    assert h.heartbeat(G, follower, 1) == E.REBALANCE_IN_PROGRESS
    assert h.timers[("heartbeat", G, follower)] == h.now + 500


def test_heartbeat_during_completing_rebalance(h: Harness) -> None:
    leader, _ = _completing(h, 1)
    h.advance(100)
    assert h.heartbeat(G, leader.member_id, 1) == E.NONE
    assert h.timers[("heartbeat", G, leader.member_id)] == h.now + 1000


def test_static_member_heartbeat_leader_with_invalid_member_id(h: Harness) -> None:
    results = h.stable_group(G, 1, instances=["leader-instance"])
    assert h.heartbeat(G, results[0].member_id, 1, "leader-instance") == E.NONE
    assert h.heartbeat(G, "invalid-member-id", 1, "leader-instance") == E.FENCED_INSTANCE_ID


def test_classic_group_member_session_timeout_during_rebalance(h: Harness) -> None:
    results = h.stable_group(G, 2, session=1000, rebalance=5000)
    leader = results[0].leader
    follower = next(r.member_id for r in results if r.member_id != leader)
    h.advance(100)
    t = h.join(G, member_id=leader, version=3, session=1000, rebalance=5000)
    h.advance(899)
    assert follower in h.group().members and h.reply(t) is None
    h.advance(1)  # follower's session expires mid-rebalance; the leader then completes alone
    assert follower not in h.group().members
    r = h.join_result(t)
    assert (r.generation_id, len(r.members)) == (2, 1)
    assert h.events_of("member_removed", reason="session_timeout", member_id=follower)
