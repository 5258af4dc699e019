"""Spec §10 scenarios 1-34: JoinGroup, rebalance timing, pending members and static membership."""

from __future__ import annotations

from dataclasses import replace

import pytest
from coordinator_harness import DEFAULT_PROTOCOLS, Harness, assignment, subscription, sync_ok

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.records import GroupRecord
from groupcoord.server.coordinator.types import CoordinatorConfig

G = "group"


@pytest.fixture
def h() -> Harness:
    return Harness()


# ----------------------------------------------------------------------------------- 1-6 validation


def test_join_group_invalid_session_timeout(h: Harness) -> None:
    for session in (h.config.min_session_timeout_ms - 1, h.config.max_session_timeout_ms + 1):
        r = h.join_result(h.join(G, member_id="m", session=session))
        assert (r.error, r.member_id, r.generation_id) == (E.INVALID_SESSION_TIMEOUT, "m", -1)
        r = h.join_result(h.join(G, session=session))
        assert r.error == E.INVALID_SESSION_TIMEOUT
    assert not h.m.has_group(G)


def test_join_group_invalid_group_id(h: Harness) -> None:
    r = h.join_result(h.join("", member_id="m"))
    assert (r.error, r.member_id) == (E.INVALID_GROUP_ID, "m")
    assert h.m.group_ids() == []


def test_join_group_unknown_member_new_group(h: Harness) -> None:
    r = h.join_result(h.join(G, member_id="member-id"))
    assert (r.error, r.member_id, r.generation_id) == (E.UNKNOWN_MEMBER_ID, "member-id", -1)
    r = h.join_result(h.join(G, member_id="member-id", instance="instance"))
    assert (r.error, r.member_id) == (E.UNKNOWN_MEMBER_ID, "member-id")
    assert not h.m.has_group(G)
    assert h.records == []


def test_join_group_with_empty_protocol_type(h: Harness) -> None:
    r = h.join_result(h.join(G, ptype=""))
    assert (r.error, r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    r = h.join_result(h.join(G, ptype="", instance="instance"))
    assert (r.error, r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")


def test_join_group_with_empty_group_protocol(h: Harness) -> None:
    r = h.join_result(h.join(G, protocols=()))
    assert (r.error, r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")


def test_classic_group_join_inconsistent_protocol_type(h: Harness) -> None:
    t1 = h.join(G, version=3)
    assert h.reply(t1) is None
    r = h.join_result(h.join(G, version=3, ptype="connect"))
    assert (r.error, r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    assert len(h.group().members) == 1


# ------------------------------------------------------------------------------------ 7-11 capacity


def test_join_group_inconsistent_group_protocol(h: Harness) -> None:
    t1 = h.join(G, version=3, protocols=(("range", b"r"),))
    r2 = h.join_result(h.join(G, version=3, protocols=(("roundrobin", b"x"),)))
    assert (r2.error, r2.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    assert h.reply(t1) is None
    h.advance(h.config.initial_rebalance_delay_ms)
    r1 = h.join_result(t1)
    assert (r1.error, r1.generation_id, r1.protocol_name) == (E.NONE, 1, "range")
    assert r1.leader == r1.member_id and len(r1.members) == 1


def test_join_group_second_join_inconsistent_protocol(h: Harness) -> None:
    mid = h.new_pending_member(G, version=4)
    r = h.join_result(h.join(G, member_id=mid, version=4, protocols=()))
    assert (r.error, r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, mid)
    t = h.join(G, member_id=mid, version=4)
    assert h.reply(t) is None
    h.advance(h.config.initial_rebalance_delay_ms - 1)
    assert h.reply(t) is None
    h.advance(1)
    r = h.join_result(t)
    assert (r.error, r.member_id, r.generation_id, r.leader) == (E.NONE, mid, 1, mid)


def test_join_group_should_receive_error_if_group_over_max_size() -> None:
    h = Harness(CoordinatorConfig(min_session_timeout_ms=10, max_size=10))
    toks = [h.join(G, version=3) for _ in range(10)]
    r = h.join_result(h.join(G, version=3))
    assert (r.error, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert all(h.reply(t) is None for t in toks)
    h.advance(3000)
    assert all(h.join_result(t).error == E.NONE for t in toks)
    assert len(h.group().members) == 10


def test_dynamic_members_join_group_with_max_size_and_required_known_member() -> None:
    h = Harness(CoordinatorConfig(min_session_timeout_ms=10, max_size=10))
    ids = [h.new_pending_member(G, version=4, session=10_000) for _ in range(11)]
    assert len(h.group().pending_join_members) == 11 and h.group().state == "Empty"
    toks = [h.join(G, member_id=mid, version=4, session=10_000) for mid in ids]
    rejected = [h.reply(t) for t in toks if h.reply(t) is not None]
    assert [(r.error, r.member_id) for r in rejected] == [(E.GROUP_MAX_SIZE_REACHED, "")]
    assert ids[10] not in h.group().pending_join_members and ids[10] not in h.group().members
    h.advance(3000)
    g = h.group()
    assert g.state == "CompletingRebalance" and len(g.members) == 10
    # accepted members can rejoin (same metadata: immediate answer); the rejected one cannot
    r = h.join_result(h.join(G, member_id=ids[3], version=4, session=10_000))
    assert (r.error, r.generation_id) == (E.NONE, 1)
    r = h.join_result(h.join(G, member_id=ids[10], version=4, session=10_000))
    assert (r.error, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size(h: Harness) -> None:
    results = h.stable_group(G, 12, session=10_000)
    h.m.config = replace(h.m.config, max_size=10)  # max size lowered (as after a restart)
    ids = [r.member_id for r in results]
    leader = results[0].leader
    order = [leader] + [i for i in ids if i != leader]
    toks = [h.join(G, member_id=mid, version=3, session=10_000) for mid in order]
    for t in toks[:10]:
        assert h.reply(t) is None
    for t in toks[10:]:
        r = h.join_result(t)
        assert (r.error, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert set(h.group().members) == set(order[:10])
    assert h.group().state == "PreparingRebalance" and h.group().num_awaiting_join == 10
    assert len(h.events_of("member_removed", reason="group_max_size")) == 2
    h.advance(500)  # the join timer completes the phase
    assert all(h.join_result(t).generation_id == 2 for t in toks[:10])


# ---------------------------------------------------------------------------- 12-14 initial delay


def test_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group(h: Harness) -> None:
    t = h.join(G, version=3)
    h.advance(2999)
    assert h.reply(t) is None and h.group().state == "PreparingRebalance"
    h.advance(1)
    assert h.join_result(t).generation_id == 1
    assert h.group().state == "CompletingRebalance"


def test_reset_rebalance_delay_when_new_member_joins_group_during_initial_rebalance(h: Harness) -> None:
    t1 = h.join(G, version=3, rebalance=10_000)
    h.advance(2999)
    t2 = h.join(G, version=3, rebalance=10_000)
    h.advance(1)  # first window ends with a new member: extended by one delay
    assert h.reply(t1) is None and h.reply(t2) is None
    h.advance(2999)
    assert h.reply(t1) is None
    h.advance(1)
    assert h.join_result(t1).generation_id == 1 and h.join_result(t2).generation_id == 1
    assert len(h.group().members) == 2


def test_delay_rebalance_upto_rebalance_timeout(h: Harness) -> None:
    # rebalance timeout = 2 x delay: at most one extension
    t1 = h.join(G, version=3, rebalance=6000)
    h.advance(1)
    t2 = h.join(G, version=3, rebalance=6000)
    h.advance(3000)  # t=3001: the window with a new member was extended
    assert h.reply(t1) is None
    t3 = h.join(G, version=3, rebalance=6000)
    h.advance(2998)  # t=5999
    assert h.reply(t1) is None
    h.advance(1)  # t=6000: no remaining time, completes despite the new member
    assert {h.join_result(t).generation_id for t in (t1, t2, t3)} == {1}


# ---------------------------------------------------------------------------- 15-18 member expiry


def test_new_member_join_expiration(h: Harness) -> None:
    (r1,) = h.stable_group(G, 1, session=600_000, rebalance=600_000)
    t2 = h.join(G, version=3)  # new member: rebalance; member 1 will take long to rejoin
    assert h.group().state == "PreparingRebalance"
    h.advance(299_999)
    assert h.reply(t2) is None
    h.advance(1)
    r2 = h.join_result(t2)
    assert (r2.error, r2.member_id) == (E.UNKNOWN_MEMBER_ID, "")
    assert list(h.group().members) == [r1.member_id]
    assert h.events_of("member_removed", reason="session_timeout")


def test_new_member_timeout_completion(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.advance(499)
    assert r.member_id in h.group().members
    h.advance(1)  # session timeout (500), not the 5-minute new-member timeout
    g = h.group()
    assert (g.state, g.generation_id, len(g.members)) == ("Empty", 2, 0)
    rec = h.records[-1]
    assert isinstance(rec, GroupRecord) and rec.value.generation == 2 and rec.value.members == ()


def test_heartbeat_expiration_should_remove_pending_member(h: Harness) -> None:
    mid = h.new_pending_member(G, version=4, session=1000)
    assert mid in h.group().pending_join_members
    h.advance(1000)
    assert mid not in h.group().pending_join_members
    r = h.join_result(h.join(G, member_id=mid, version=4, session=1000))
    assert (r.error, r.member_id) == (E.UNKNOWN_MEMBER_ID, mid)


def _stable_then_pending_and_rejoins(h: Harness) -> tuple[list, str, list[int]]:
    results = h.stable_group(G, 2, session=10_000, rebalance=1000)
    pending = h.new_pending_member(G, version=4, session=600)
    h.advance(100)
    leader = results[0].leader
    order = [leader] + [r.member_id for r in results if r.member_id != leader]
    toks = [h.join(G, member_id=mid, version=4, session=10_000, rebalance=1000) for mid in order]
    assert all(h.reply(t) is None for t in toks) and h.group().state == "PreparingRebalance"
    return results, pending, toks


def test_join_group_completion_when_pending_member_joins(h: Harness) -> None:
    _, pending, toks = _stable_then_pending_and_rejoins(h)
    t3 = h.join(G, member_id=pending, version=4, session=10_000, rebalance=1000)
    for t in [*toks, t3]:
        r = h.join_result(t)
        assert (r.error, r.generation_id) == (E.NONE, 2)
    assert len(h.group().members) == 3


def test_join_group_completion_when_pending_member_times_out(h: Harness) -> None:
    _, _pending, toks = _stable_then_pending_and_rejoins(h)
    h.advance(499)
    assert h.reply(toks[0]) is None
    h.advance(1)  # the pending id's session timeout (600 ms after its first join) unblocks completion
    assert all(h.join_result(t).generation_id == 2 for t in toks)
    assert len(h.group().members) == 2 and not h.group().pending_join_members


# ----------------------------------------------------------------------- 19-24 known-member rules


def test_join_group_existing_member_updated_metadata_triggers_rebalance(h: Harness) -> None:
    t = h.join(G, version=3)
    h.advance(3000)
    r = h.join_result(t)
    assert (r.generation_id, h.group().state) == (1, "CompletingRebalance")
    t2 = h.join(G, member_id=r.member_id, version=3, protocols=(("range", subscription("foo", "bar")),))
    r2 = h.join_result(t2)
    assert (r2.error, r2.generation_id, r2.member_id) == (E.NONE, 2, r.member_id)
    assert h.events_of("state_change", state_to="PreparingRebalance", reason="metadata_change")


def test_join_group_from_unchanged_leader_should_rebalance(h: Harness) -> None:
    results = h.stable_group(G, 2)
    leader = results[0].leader
    follower = next(r.member_id for r in results if r.member_id != leader)
    t1 = h.join(G, member_id=leader, version=3)
    assert h.reply(t1) is None and h.group().state == "PreparingRebalance"
    assert h.events_of("state_change", state_to="PreparingRebalance", reason="leader_rejoin")
    t2 = h.join(G, member_id=follower, version=3)
    assert h.join_result(t1).generation_id == 2 and h.join_result(t2).generation_id == 2


def test_join_group_from_unchanged_follower_does_not_rebalance(h: Harness) -> None:
    results = h.stable_group(G, 2)
    leader = results[0].leader
    follower = next(r.member_id for r in results if r.member_id != leader)
    r = h.join_result(h.join(G, member_id=follower, version=3))
    assert (r.error, r.generation_id, r.leader, r.members, r.protocol_name) == (
        E.NONE,
        1,
        leader,
        (),
        "range",
    )
    assert h.group().state == "Stable"


def test_join_group_existing_member_in_empty_state(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.leave(G, (r.member_id, None))
    assert h.group().state == "Empty"
    r2 = h.join_result(h.join(G, member_id=r.member_id, version=3))
    assert (r2.error, r2.generation_id, r2.member_id) == (E.UNKNOWN_MEMBER_ID, -1, r.member_id)


def test_complete_join_remove_not_yet_rejoined_dynamic_members(h: Harness) -> None:
    results = h.stable_group(G, 2, session=10_000)
    leader = results[0].leader
    follower = next(r.member_id for r in results if r.member_id != leader)
    t = h.join(G, member_id=follower, version=3, session=10_000, protocols=(("range", subscription("x")),))
    h.advance(500)  # rebalance timeout: the old leader did not rejoin
    r = h.join_result(t)
    assert (r.generation_id, r.leader, len(r.members)) == (2, follower, 1)
    assert list(h.group().members) == [follower]
    assert h.events_of("member_removed", reason="rebalance_timeout", member_id=leader)


def test_complete_join_phase_no_members_rejoined_extends_join_phase(h: Harness) -> None:
    results = h.stable_group(G, 2, instances=["i1", "i2"], session=10_000)
    t = h.join(G, version=3, session=10_000)  # dynamic newcomer starts a rebalance, then leaves
    new_id = next(m for m in h.group().members if m not in {r.member_id for r in results})
    h.leave(G, (new_id, None))
    assert h.join_result(t).error == E.UNKNOWN_MEMBER_ID
    for _ in range(3):
        h.advance(500)
        g = h.group()
        assert (g.state, g.generation_id, len(g.members)) == ("PreparingRebalance", 1, 2)
        assert ("join", G) in h.timers
        for r in results:
            assert h.heartbeat(G, r.member_id, 1) == E.REBALANCE_IN_PROGRESS
    toks = [
        h.join(G, member_id=r.member_id, instance=i, session=10_000)
        for r, i in zip(results, ["i1", "i2"], strict=True)
    ]
    assert all(h.join_result(t).generation_id == 2 for t in toks)


# ------------------------------------------------------------------------------- 25-34 static members


def test_join_group_replace_static_member(h: Harness) -> None:
    t1 = h.join(G, instance="i1")
    old_id = next(iter(h.group().members))
    t2 = h.join(G, instance="i1")
    r1 = h.join_result(t1)
    assert (r1.error, r1.member_id, r1.generation_id, r1.protocol_name, r1.leader) == (
        E.FENCED_INSTANCE_ID,
        old_id,
        -1,
        None,
        "",
    )
    assert len(h.group().members) == 1
    h.advance(3000)
    r2 = h.join_result(t2)
    assert (r2.error, r2.generation_id) == (E.NONE, 1) and r2.leader == r2.member_id != old_id


def _static_stable(h: Harness, protocols=DEFAULT_PROTOCOLS, n: int = 2, **kw) -> list:
    instances = [f"i{k + 1}" for k in range(n)]
    results = h.stable_group(G, n, instances=instances, protocols=protocols, **kw)
    by_instance = {h.group().members[r.member_id].group_instance_id: r for r in results}
    assert h.group().leader_id == by_instance["i1"].member_id
    return [by_instance[i] for i in instances]


@pytest.mark.parametrize("version", [8, 9])
def test_replace_static_member_in_stable_state_no_error(h: Harness, version: int) -> None:
    r1, r2 = _static_stable(h)
    persists = h.persist_count
    r = h.join_result(h.join(G, instance="i1", version=version))
    assert h.persist_count == persists + 1
    assert isinstance(h.records[-1], GroupRecord)
    assert (r.error, r.generation_id, r.protocol_type, r.protocol_name) == (E.NONE, 1, "consumer", "range")
    assert r.member_id not in (r1.member_id, r2.member_id)
    if version >= 9:
        assert r.leader == r.member_id and r.skip_assignment
        assert {m.member_id for m in r.members} == {r.member_id, r2.member_id}
    else:
        assert r.leader == r1.member_id and not r.skip_assignment and r.members == ()
    g = h.group()
    assert (g.state, g.generation_id, g.leader_id) == ("Stable", 1, r.member_id)
    assert g.members[r.member_id].assignment == assignment({"foo": [0]})
    (ev,) = h.events_of("static_rejoin")
    assert (ev["member_id"], ev["previous_member_id"], ev["skip_assignment"]) == (
        r.member_id,
        r1.member_id,
        version >= 9,
    )
    assert not h.events_of("state_change", state_to="PreparingRebalance", reason="static_replacement")


def test_replace_static_member_in_stable_state_with_updated_protocol_triggers_rebalance(h: Harness) -> None:
    both = (("range", subscription("foo")), ("roundrobin", subscription("foo")))
    _, r2 = _static_stable(h, protocols=both)
    t = h.join(G, instance="i1", protocols=(("roundrobin", subscription("foo")),))
    assert h.reply(t) is None and h.group().state == "PreparingRebalance"
    assert h.events_of("state_change", state_to="PreparingRebalance", reason="static_replacement")
    t2 = h.join(G, member_id=r2.member_id, instance="i2", protocols=both)
    r = h.join_result(t)
    assert (r.generation_id, r.protocol_name) == (2, "roundrobin")
    assert h.join_result(t2).generation_id == 2


def test_replace_static_member_in_stable_state_errors(h: Harness) -> None:
    r1, _ = _static_stable(h)
    h.fail_next_persists = 1
    r = h.join_result(h.join(G, instance="i1", version=9, session=2000, rebalance=3000))
    assert (r.error, r.member_id, r.generation_id, r.protocol_name, r.leader) == (
        E.COORDINATOR_NOT_AVAILABLE,
        "",
        1,
        "range",
        r1.member_id,
    )
    g = h.group()
    assert g.static_members["i1"] == r1.member_id and g.leader_id == r1.member_id
    m = g.members[r1.member_id]
    assert (m.session_timeout_ms, m.rebalance_timeout_ms, m.protocols) == (500, 500, DEFAULT_PROTOCOLS)
    assert len(g.members) == 2
    assert ("heartbeat", G, r1.member_id) in h.timers
    assert h.heartbeat(G, r1.member_id, 1, "i1") == E.NONE


def test_replace_static_member_in_completing_rebalance_state_triggers_rebalance(h: Harness) -> None:
    t1, t2 = h.join(G, instance="i1"), h.join(G, instance="i2")
    h.advance(3000)
    r1, r2 = h.join_result(t1), h.join_result(t2)
    assert h.group().state == "CompletingRebalance"
    t3 = h.join(G, instance="i2")
    assert h.reply(t3) is None and h.group().state == "PreparingRebalance"
    assert h.events_of("state_change", state_to="PreparingRebalance", reason="static_replacement")
    t4 = h.join(G, member_id=r1.member_id, instance="i1")
    assert h.join_result(t3).generation_id == 2 and h.join_result(t4).generation_id == 2
    assert r2.member_id not in h.group().members


def test_static_member_rejoin_with_leader_id_and_unknown_member_id(h: Harness) -> None:
    r1, _ = _static_stable(h)
    new = h.join_result(h.join(G, instance="i1", version=9))
    assert new.error == E.NONE
    r = h.join_result(h.join(G, member_id=r1.member_id, instance="i1", version=9))
    assert (r.error, r.member_id) == (E.FENCED_INSTANCE_ID, r1.member_id)
    assert h.reply(h.sync(G, r1.member_id, 1, instance="i1")).error == E.FENCED_INSTANCE_ID
    assert h.reply(h.sync(G, r1.member_id, 1)).error == E.UNKNOWN_MEMBER_ID


def test_static_member_fence_duplicate_syncing_follower_after_member_id_changed(h: Harness) -> None:
    t1, t2 = h.join(G, instance="i1"), h.join(G, instance="i2")
    h.advance(3000)
    r2 = h.join_result(t2)
    follower = r2 if r2.leader != r2.member_id else h.join_result(t1)
    instance = h.group().members[follower.member_id].group_instance_id
    s = h.sync(G, follower.member_id, 1, instance=instance)
    assert h.reply(s) is None
    t3 = h.join(G, instance=instance)
    rs = h.reply(s)
    assert (rs.error, rs.assignment) == (E.FENCED_INSTANCE_ID, b"")
    assert h.reply(t3) is None and h.group().state == "PreparingRebalance"


def test_static_member_rejoin_as_follower_with_mismatched_instance_id(h: Harness) -> None:
    _, r2 = _static_stable(h)
    r = h.join_result(h.join(G, member_id=r2.member_id, instance="i1"))
    assert (r.error, r.member_id, r.protocol_name) == (E.FENCED_INSTANCE_ID, r2.member_id, None)


def test_static_member_join_with_unknown_instance_id_and_known_member_id(h: Harness) -> None:
    _, r2 = _static_stable(h)
    r = h.join_result(h.join(G, member_id=r2.member_id, instance="unknown"))
    assert (r.error, r.member_id) == (E.UNKNOWN_MEMBER_ID, r2.member_id)


def test_static_member_leader_fail_to_rejoin_before_rebalance_timeout(h: Harness) -> None:
    r1, r2, r3 = _static_stable(h, n=3, session=10_000)
    changed = (("range", subscription("foo", "bar")),)
    t2 = h.join(G, member_id=r2.member_id, instance="i2", session=10_000, protocols=changed)
    t3 = h.join(G, member_id=r3.member_id, instance="i3", session=10_000)
    h.advance(500)
    j2, j3 = h.join_result(t2), h.join_result(t3)
    assert j2.generation_id == j3.generation_id == 2
    assert r1.member_id in h.group().members  # static leader kept
    new_leader = j2 if j2.leader == j2.member_id else j3
    assert new_leader.leader in (r2.member_id, r3.member_id)
    assert {m.member_id for m in new_leader.members} == {r1.member_id, r2.member_id, r3.member_id}


def _stuck_with_static_leader(h: Harness) -> tuple:
    r1, r2 = _static_stable(h, session=10_000)
    t2 = h.join(G, member_id=r2.member_id, instance="i2", session=10_000, protocols=(("range", b"changed"),))
    h.advance(500)
    assert h.join_result(t2).generation_id == 2
    h.leave(G, (r2.member_id, "i2"))
    for _ in range(2):
        h.advance(500)
        g = h.group()
        assert (g.state, g.generation_id, list(g.members)) == ("PreparingRebalance", 2, [r1.member_id])
    return r1, r2


def test_group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member(h: Harness) -> None:
    _stuck_with_static_leader(h)
    assert ("join", G) in h.timers


def test_group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member_session_expires(h: Harness) -> None:
    _stuck_with_static_leader(h)
    h.advance(10_000)
    g = h.group()
    assert (g.state, g.generation_id, len(g.members)) == ("Empty", 3, 0)


def test_group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member_leader_rejoins(h: Harness) -> None:
    r1, _ = _stuck_with_static_leader(h)
    r = h.join_result(h.join(G, member_id=r1.member_id, instance="i1", session=10_000))
    assert (r.error, r.generation_id, r.leader) == (E.NONE, 3, r1.member_id)
    sync_ok(h.reply(h.sync(G, r1.member_id, 3, (), instance="i1")))
