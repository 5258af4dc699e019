"""State-machine properties beyond the §10 scenarios: transitions, journal, timers, persistence, load, expiry."""

from __future__ import annotations

import itertools

import pytest
from coordinator_harness import START_MS, Harness, assignment, subscription, sync_ok

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.consumer import (
    EMPTY_CONSUMER_ASSIGNMENT,
    assignment_partitions,
    subscription_topics,
)
from groupcoord.server.coordinator.context import EVENT_KEYS
from groupcoord.server.coordinator.group import (
    VALID_PREVIOUS,
    ClassicGroup,
    GroupState,
    IllegalStateTransition,
)
from groupcoord.server.coordinator.machine import GroupStateMachine
from groupcoord.server.coordinator.records import GroupRecord, OffsetRecord
from groupcoord.server.coordinator.types import (
    CoordinatorConfig,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeaveMember,
    ScheduleTimer,
)

G = "group"
JOURNAL_FIELDS = set(EVENT_KEYS)


@pytest.fixture
def h() -> Harness:
    return Harness()


# --------------------------------------------------------------------------------- transition table

ALLOWED = {
    ("PreparingRebalance", "Empty"),
    ("Stable", "PreparingRebalance"),
    ("CompletingRebalance", "PreparingRebalance"),
    ("Empty", "PreparingRebalance"),
    ("PreparingRebalance", "CompletingRebalance"),
    ("CompletingRebalance", "Stable"),
    *((s, "Dead") for s in ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead")),
}


@pytest.mark.parametrize("source,target", list(itertools.product(list(GroupState), repeat=2)))
def test_transition_table(source: GroupState, target: GroupState) -> None:
    g = ClassicGroup(G, 0)
    g.state = source
    if (str(source), str(target)) in ALLOWED:
        g.transition_to(target, 42)
        assert (g.state, g.previous_state, g.current_state_timestamp) == (target, source, 42)
    else:
        with pytest.raises(IllegalStateTransition):
            g.transition_to(target, 42)
        assert g.state == source


def test_transition_table_matches_spec_size() -> None:
    assert sum(len(v) for v in VALID_PREVIOUS.values()) == len(ALLOWED) == 11


def test_can_rebalance() -> None:
    g = ClassicGroup(G, 0)
    for state, expected in [("Empty", True), ("PreparingRebalance", False), ("CompletingRebalance", True)]:
        g.state = GroupState(state)
        assert g.can_rebalance() is expected
    g.state = GroupState.STABLE
    assert g.can_rebalance()


# ------------------------------------------------------------------------------------------ journal


def test_journal_events_for_a_rebalance(h: Harness) -> None:
    results = h.stable_group(G, 2)
    leader = results[0].leader
    names = [(e["event"], e["state_to"], e["reason"]) for e in h.events]
    assert names == [
        ("group_created", None, None),
        ("member_joined", None, None),
        ("state_change", "PreparingRebalance", "new_member"),
        ("member_joined", None, None),
        ("state_change", "CompletingRebalance", "join_complete"),
        ("state_change", "Stable", "sync_complete"),
    ]
    for e in h.events:
        assert set(e) == JOURNAL_FIELDS
        assert e["group"] == G
    stable = h.events[-1]
    assert (stable["state_from"], stable["generation"], stable["members"], stable["leader"]) == (
        "CompletingRebalance",
        1,
        2,
        leader,
    )
    assert (stable["protocol_type"], stable["protocol"]) == ("consumer", "range")
    assert stable["assignment"] == {r.member_id: [f"foo-{i}"] for i, r in enumerate(results)}
    joined = h.events[1]
    assert (joined["member_id"], joined["client_id"], joined["members"]) == (
        results[0].member_id,
        "client",
        1,
    )
    # a leave: member_removed(left), then the rebalance and the empty group
    h.leave(G, (results[0].member_id, None), (results[1].member_id, None))
    tail = [(e["event"], e["state_to"], e["reason"]) for e in h.events[6:]]
    assert tail == [
        ("member_removed", None, "left"),
        ("member_removed", None, "left"),
        ("state_change", "PreparingRebalance", "leave"),
        ("state_change", "Empty", "join_complete"),
    ]
    assert h.events[-1]["generation"] == 2 and h.events[-1]["members"] == 0


def test_journal_assignment_null_when_undecodable_or_not_consumer() -> None:
    h = Harness()
    t = h.join(G, version=3)
    h.advance(3000)
    r = h.join_result(t)
    sync_ok(h.reply(h.sync(G, r.member_id, 1, ((r.member_id, b"\x00\x00\xff"),))))
    assert h.events[-1]["state_to"] == "Stable" and h.events[-1]["assignment"] is None
    t = h.join("connect-group", version=3, ptype="connect")
    h.advance(3000)
    r = h.join_result(t)
    sync_ok(h.reply(h.sync("connect-group", r.member_id, 1, ((r.member_id, assignment({"a": [1]})),))))
    assert h.events[-1]["assignment"] is None


def test_journal_static_replacement_events(h: Harness) -> None:
    h.stable_group(G, 2, instances=["i1", "i2"])
    old = h.group().static_members["i2"]
    t1 = h.join(G, member_id=h.group().leader_id, instance="i1")  # leader rejoin: rebalance
    t2 = h.join(G, instance="i2")  # replacement during PreparingRebalance: joins it, completing it
    assert h.join_result(t1).generation_id == h.join_result(t2).generation_id == 2
    removed = h.events_of("member_removed", reason="static_replaced")
    assert [(e["member_id"], e["previous_member_id"], e["group_instance_id"]) for e in removed] == [
        (old, old, "i2")
    ]


# ------------------------------------------------------------------------------------------- timers


def test_timers_of_replaced_members_do_nothing(h: Harness) -> None:
    results = h.stable_group(G, 2, instances=["i1", "i2"])
    old_id = next(r.member_id for r in results if r.member_id != r.leader)
    r = h.join_result(h.join(G, instance="i2"))
    assert r.error == E.NONE and h.group().state == "Stable"
    assert ("heartbeat", G, old_id) not in h.timers
    # a stale timer for the old id (e.g. already in flight when it was cancelled) must be a no-op
    before = (dict(h.group().members), h.group().state, h.group().generation_id)
    fx = h.m.on_timer(("heartbeat", G, old_id), h.now + 10_000)
    assert not fx.replies and not fx.records and not fx.events and not fx.timers
    assert (dict(h.group().members), h.group().state, h.group().generation_id) == before


def test_stale_timers_do_nothing(h: Harness) -> None:
    (r,) = h.stable_group(G, 1, session=1000)
    h.advance(900)
    assert h.heartbeat(G, r.member_id, 1) == E.NONE  # re-armed to now + 1000
    # the superseded deadline firing (a race in the actor, or an early timer) re-arms the real deadline
    fx = h.m.on_timer(("heartbeat", G, r.member_id), h.now + 100)
    assert not fx.events and fx.timers == [ScheduleTimer(("heartbeat", G, r.member_id), h.now + 1000)]
    assert not h.m.on_timer(("join", G), h.now).events
    assert not h.m.on_timer(("sync", G, 1), h.now + 10_000).events
    assert not h.m.on_timer(("heartbeat", "no-such-group", "m"), h.now).events
    assert r.member_id in h.group().members and h.group().state == "Stable"


def test_timer_keys_carry_group_id(h: Harness) -> None:
    h.stable_group(G, 2)
    assert h.timers and all(k[1] == G for k in h.timers)
    assert {k[0] for k in h.timers} == {"heartbeat"}


def test_heartbeat_fast_path(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    err, fx = h.m.heartbeat(HeartbeatRequest(1, G, 1, r.member_id, None), h.now)
    assert err == E.NONE
    assert fx.timers == [ScheduleTimer(("heartbeat", G, r.member_id), h.now + 500)]
    assert fx.replies == () and fx.records == () and fx.events == () and fx.after_persist is None
    assert h.m.heartbeat(HeartbeatRequest(1, G, 1, "unknown", None), h.now) == (E.UNKNOWN_MEMBER_ID, None)
    assert h.m.heartbeat(HeartbeatRequest(1, "", 1, "m", None), h.now) == (E.INVALID_GROUP_ID, None)


def test_initial_delay_last_extension_is_shortened_to_remaining(h: Harness) -> None:
    toks = [h.join(G, version=3, rebalance=7000)]  # remaining after the first delay: 4000
    h.advance(1)
    toks.append(h.join(G, version=3, rebalance=7000))
    h.advance(3000)  # t=3001: extended by 3000 (remaining 1000)
    toks.append(h.join(G, version=3, rebalance=7000))
    h.advance(2999)  # t=6000: extended by min(3000, 1000)
    assert h.reply(toks[0]) is None
    toks.append(h.join(G, version=3, rebalance=7000))
    h.advance(999)
    assert h.reply(toks[0]) is None
    h.advance(1)  # t=7000: remaining 0, completes
    assert [h.join_result(t).generation_id for t in toks] == [1, 1, 1, 1]


def test_join_v0_uses_session_timeout_as_rebalance_timeout(h: Harness) -> None:
    t1 = h.join(G, version=0, session=5000, rebalance=-1)
    h.advance(3000)
    r = h.join_result(t1)
    assert h.group().members[r.member_id].rebalance_timeout_ms == 5000
    assert h.timers[("sync", G, 1)] == h.now + 5000


def test_superseded_parked_join_is_answered(h: Harness) -> None:
    results = h.stable_group(G, 2)
    leader = results[0].leader
    t1 = h.join(G, member_id=leader, version=3)
    t2 = h.join(G, member_id=leader, version=3)
    assert h.join_result(t1).error == E.REBALANCE_IN_PROGRESS
    assert h.reply(t2) is None


# ------------------------------------------------------------------------------ assignment replies


def test_empty_consumer_assignment_rule(h: Harness) -> None:
    toks = [h.join(G, version=3) for _ in range(2)]
    h.advance(3000)
    leader, follower = sorted((h.join_result(t) for t in toks), key=lambda r: r.leader != r.member_id)
    sf = h.sync(G, follower.member_id, 1)
    # the leader leaves the follower out of its map
    sl = h.sync(G, leader.member_id, 1, ((leader.member_id, assignment({"foo": [0, 1]})),))
    assert sync_ok(h.reply(sf)).assignment == EMPTY_CONSUMER_ASSIGNMENT
    assert sync_ok(h.reply(sl)).assignment == assignment({"foo": [0, 1]})
    assert sync_ok(h.reply(h.sync(G, follower.member_id, 1))).assignment == EMPTY_CONSUMER_ASSIGNMENT
    assert assignment_partitions(EMPTY_CONSUMER_ASSIGNMENT) == []
    assert h.events[-1]["assignment"] == {leader.member_id: ["foo-0", "foo-1"], follower.member_id: []}


def test_empty_assignment_kept_for_non_consumer_groups(h: Harness) -> None:
    toks = [h.join(G, version=3, ptype="connect") for _ in range(2)]
    h.advance(3000)
    leader, follower = sorted((h.join_result(t) for t in toks), key=lambda r: r.leader != r.member_id)
    sync_ok(h.reply(h.sync(G, leader.member_id, 1, ())))
    assert sync_ok(h.reply(h.sync(G, follower.member_id, 1))).assignment == b""


def test_consumer_protocol_decoders() -> None:
    assert subscription_topics(subscription("a", "b")) == {"a", "b"}
    assert subscription_topics(b"\x00") is None
    assert assignment_partitions(assignment({"t": [3, 1], "u": []})) == ["t-3", "t-1"]
    assert assignment_partitions(b"\x00\x00\x00\x00\x00\x01\x00\x05ab") is None


# ------------------------------------------------------------------------------------- persistence


def test_leader_sync_persist_failure_rebalances(h: Harness) -> None:
    toks = [h.join(G, version=3) for _ in range(2)]
    h.advance(3000)
    leader, follower = sorted((h.join_result(t) for t in toks), key=lambda r: r.leader != r.member_id)
    sf = h.sync(G, follower.member_id, 1)
    h.fail_next_persists = 1
    sl = h.sync(G, leader.member_id, 1, ((leader.member_id, assignment({"foo": [0]})),))
    assert h.reply(sl).error == h.reply(sf).error == E.COORDINATOR_NOT_AVAILABLE
    g = h.group()
    assert g.state == "PreparingRebalance" and all(m.assignment == b"" for m in g.members.values())
    assert h.events_of("state_change", state_to="PreparingRebalance", reason="persist_failure")


def test_leader_sync_persist_completing_after_rebalance_does_nothing(h: Harness) -> None:
    toks = [h.join(G, version=3) for _ in range(2)]
    h.advance(3000)
    leader, follower = sorted((h.join_result(t) for t in toks), key=lambda r: r.leader != r.member_id)
    h.hold_persists = True
    sl = h.sync(G, leader.member_id, 1, ((leader.member_id, assignment({"foo": [0]})),))
    h.hold_persists = False
    h.leave(G, (follower.member_id, None))  # rebalance while the write is in flight
    assert h.reply(sl).error == E.REBALANCE_IN_PROGRESS
    h.flush_persists(ok=True)
    g = h.group()
    assert (g.state, g.generation_id) == ("PreparingRebalance", 1)
    assert g.members[leader.member_id].assignment == b""
    assert not h.events_of("state_change", state_to="Stable")


def test_group_creation_persist_failure_rolls_back(h: Harness) -> None:
    h.fail_next_persists = 1
    t = h.join(G, version=3)
    r = h.join_result(t)
    assert (r.error, r.member_id) == (E.COORDINATOR_NOT_AVAILABLE, "")
    assert not h.m.has_group(G)
    assert not [k for k in h.timers if k[1] == G]
    # a MEMBER_ID_REQUIRED answer is delivered regardless of the write
    h.fail_next_persists = 1
    assert h.join_result(h.join(G, version=4)).error == E.MEMBER_ID_REQUIRED
    assert not h.m.has_group(G)


def test_group_creation_writes_empty_group_record(h: Harness) -> None:
    h.join(G, version=3)
    (rec,) = h.records
    assert isinstance(rec, GroupRecord) and rec.value.generation == 0 and rec.value.members == ()


# ------------------------------------------------------------------------------------ replay / load


def _reload(h: Harness, config: CoordinatorConfig | None = None) -> GroupStateMachine:
    m = GroupStateMachine(config or h.config)
    latest: dict = {}
    for rec in h.records:
        latest[rec.key] = rec
    for rec in latest.values():
        m.replay(rec)
    return m


def test_replay_finish_load_round_trip(h: Harness) -> None:
    h.commit("simple", {("bar", 3): 7})
    (e,) = h.stable_group("empty", 1)
    h.leave("empty", (e.member_id, None))
    results = h.stable_group(G, 2, instances=[None, "i2"], session=700)
    h.reply(h.commit(G, {("foo", 0): 42}, generation=1, member_id=results[0].member_id, metadata="md"))
    m = _reload(h)
    fx = m.finish_load(h.now)
    g = m.group(G)
    old = h.group(G)
    assert (g.state, g.generation_id, g.protocol_type, g.protocol_name, g.leader_id) == (
        "Stable",
        1,
        "consumer",
        "range",
        old.leader_id,
    )
    assert g.static_members == old.static_members
    for mid, mem in old.members.items():
        new = g.members[mid]
        assert (new.assignment, new.metadata("range"), new.session_timeout_ms, new.client_host) == (
            mem.assignment,
            mem.metadata("range"),
            700,
            "/127.0.0.1",
        )
    assert g.subscribed_topics == {"foo"}
    assert {t.key: t.deadline_ms for t in fx.timers} == {
        ("heartbeat", G, mid): h.now + 700 for mid in old.members
    }
    assert (m.group("empty").state, m.group("empty").generation_id) == ("Empty", 2)
    assert m.group("simple").state == "Empty" and m.group("simple").protocol_type is None
    assert sorted((e["group"], e["state_to"], e["reason"]) for e in fx.events) == [
        ("empty", "Empty", "loaded"),
        ("simple", "Empty", "loaded"),
    ]
    f = m.committed_offsets(G)[("foo", 0)]
    assert (f.offset, f.metadata) == (42, "md")
    assert m.committed_offsets("simple")[("bar", 3)].offset == 7
    # members of the loaded group keep working: heartbeat, then follower rejoin gets the same generation
    err, _ = m.heartbeat(HeartbeatRequest(3, G, 1, results[1].member_id, "i2"), h.now)
    assert err == E.NONE


def test_loaded_members_expire_after_session_timeout(h: Harness) -> None:
    h.stable_group(G, 1, session=700)
    h2 = Harness()
    h2.m = _reload(h)
    h2.now = h.now
    h2.apply(h2.m.finish_load(h2.now))
    h2.advance(700)
    assert (h2.group().state, h2.group().generation_id) == ("Empty", 2)


def test_replay_group_tombstone(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.leave(G, (r.member_id, None))
    _, fx = h.m.delete_groups([G], h.now)
    h.apply(fx)
    m = GroupStateMachine(h.config)
    for rec in h.records:
        m.replay(rec)
    m.finish_load(h.now)
    assert not m.has_group(G)


# ------------------------------------------------------------------------------------------ expiry

RETENTION = 7 * 24 * 3600 * 1000


def test_offset_expiry_simple_group(h: Harness) -> None:
    h.commit(G, {("foo", 0): 1})
    h.advance(RETENTION - 1)
    fx = h.m.cleanup_expired_offsets(h.now)
    h.apply(fx)
    assert not fx.records and h.m.has_group(G)
    h.advance(1)
    fx = h.m.cleanup_expired_offsets(h.now)
    h.apply(fx)
    assert [(type(r).__name__, r.value) for r in fx.records] == [
        ("OffsetRecord", None),
        ("GroupRecord", None),
    ]
    assert not h.m.has_group(G)
    assert h.events_of("group_deleted", reason="expired")


def test_offset_expiry_empty_consumer_group_uses_empty_since(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.reply(h.commit(G, {("foo", 0): 1}, generation=1, member_id=r.member_id))
    # offsets are old, but the group is Stable and subscribed to foo
    h.apply(h.m.cleanup_expired_offsets(h.now + RETENTION))
    assert h.m.committed_offsets(G) and h.m.has_group(G)
    h.apply(h.m.leave_group(_leave(G, r.member_id), h.now)[1])
    assert h.group().state == "Empty"
    h.advance(RETENTION - 1)
    h.apply(h.m.cleanup_expired_offsets(h.now))
    assert h.m.committed_offsets(G)
    h.advance(1)
    h.apply(h.m.cleanup_expired_offsets(h.now))
    assert not h.m.has_group(G)


def test_offset_expiry_stable_consumer_group_only_unsubscribed_topics(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.reply(h.commit(G, {("foo", 0): 1, ("old-topic", 0): 2}, generation=1, member_id=r.member_id))
    assert not h.m.cleanup_expired_offsets(h.now + RETENTION - 1).records
    fx = h.m.cleanup_expired_offsets(h.now + RETENTION)  # the member stays: no clock advance
    assert [(x.topic, x.value) for x in fx.records if isinstance(x, OffsetRecord)] == [("old-topic", None)]
    assert list(h.m.committed_offsets(G)) == [("foo", 0)]


def test_offset_expiry_explicit_expire_timestamp(h: Harness) -> None:
    h.commit(G, {("foo", 0): 1}, version=2, retention=1000)
    h.commit(G, {("foo", 1): 1})
    h.advance(999)
    assert not h.m.cleanup_expired_offsets(h.now).records
    h.advance(1)
    fx = h.m.cleanup_expired_offsets(h.now)
    assert [(x.partition, x.value) for x in fx.records] == [(0, None)]
    assert h.m.has_group(G)


def test_cleanup_deletes_empty_group_without_offsets(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.leave(G, (r.member_id, None))
    fx = h.m.cleanup_expired_offsets(h.now)
    assert [type(x).__name__ for x in fx.records] == ["GroupRecord"] and not h.m.has_group(G)


def test_cleanup_keeps_groups_in_rebalance(h: Harness) -> None:
    h.join(G, version=3)
    assert not h.m.cleanup_expired_offsets(h.now + RETENTION).records
    assert h.m.has_group(G)


def _leave(gid: str, member_id: str) -> LeaveGroupRequest:
    return LeaveGroupRequest(3, gid, (LeaveMember(member_id, None),))


def test_join_request_types_are_frozen() -> None:
    req = JoinGroupRequest(5, G, 500, 500, "", None, "consumer", (), None, "c", "h")
    with pytest.raises(AttributeError):
        req.member_id = "x"  # type: ignore[misc]
    assert START_MS > 0


def test_unload_answers_parked_requests_not_coordinator(h: Harness) -> None:
    toks = [h.join(G, version=3) for _ in range(2)]
    h.advance(3000)
    follower = next(h.join_result(t) for t in toks if h.join_result(t).leader != h.join_result(t).member_id)
    sf = h.sync(G, follower.member_id, 1)
    parked_join = h.join("other", version=3)
    h.apply(h.m.unload(h.now))
    assert h.reply(sf).error == E.NOT_COORDINATOR and h.join_result(parked_join).error == E.NOT_COORDINATOR
    assert h.m.group_ids() == [] and h.timers == {}
    assert {e["group"] for e in h.events_of("state_change", state_to="Dead", reason="unloaded")} == {
        G,
        "other",
    }
