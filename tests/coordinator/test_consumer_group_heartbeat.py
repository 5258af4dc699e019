"""KIP-848 ConsumerGroupHeartbeat on the pure state machine (spec §2-§5, scenarios of §11 by number)."""

from __future__ import annotations

from consumer_group_harness import BAR, FOO, Harness, parts

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.modern.consumer.member import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
)
from groupcoord.server.coordinator.records import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT as CURRENT,
)
from groupcoord.server.coordinator.records import (
    CONSUMER_GROUP_MEMBER_METADATA as MEMBER,
)
from groupcoord.server.coordinator.records import (
    CONSUMER_GROUP_METADATA as EPOCH,
)
from groupcoord.server.coordinator.records import (
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER as TARGET,
)
from groupcoord.server.coordinator.records import (
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA as TARGET_META,
)


def two_members() -> Harness:
    """Scenario 9 up to convergence: m1 and m2 on foo, 3 partitions each, epoch 2, Stable."""
    h = Harness()
    r1 = h.hb("m1", 0)
    h.hb("m2", 0)
    r = h.hb("m1", 1)
    h.hb("m1", 1, owned={FOO: frozenset(parts(r))})
    h.hb("m2", 2)
    assert h.group().state == "Stable"
    assert parts(r1) == set(range(6))
    return h


# ------------------------------------------------------------------------------------------ validation


def test_1_v1_requires_a_member_id() -> None:
    r = Harness().hb("", 0)
    assert (r.error, r.error_message) == (E.INVALID_REQUEST, "MemberId can't be empty.")


def test_2_v0_join_without_member_id_gets_a_generated_one() -> None:
    r = Harness().hb("", 0, version=0)
    assert r.error == E.NONE and r.member_id and r.member_epoch == 1


def test_3_4_5_6_7_join_fields_are_validated() -> None:
    h = Harness()
    assert h.hb("m", 0, rebalance_timeout_ms=-1).error == E.INVALID_REQUEST
    assert h.hb("m", 0, owned=None).error == E.INVALID_REQUEST
    assert h.hb("m", 0, owned={FOO: frozenset({0})}).error == E.INVALID_REQUEST
    assert h.hb("m", 0, topics=None).error == E.INVALID_REQUEST
    r = h.hb("m", -3)
    assert (r.error, r.error_message) == (E.INVALID_REQUEST, "MemberEpoch is invalid.")
    assert h.hb("m", 0, assignor="sticky").error == E.UNSUPPORTED_ASSIGNOR
    assert h.hb("m", -2).error == E.INVALID_REQUEST  # static leave without an instance id
    assert h.group() is None  # nothing was created by any of these


def test_5_empty_subscription_joins_without_a_bump() -> None:
    h = Harness()
    r = h.hb("m", 0, topics=())
    assert (r.error, r.member_epoch, r.assignment) == (E.NONE, 0, {})
    assert h.group().group_epoch == 0


# ----------------------------------------------------------------------------------- join, reconcile


def test_8_first_member_gets_everything_and_kafkas_records() -> None:
    h = Harness()
    r = h.hb("m1", 0)
    assert (r.error, r.member_epoch, r.heartbeat_interval_ms) == (E.NONE, 1, 5000)
    assert parts(r) == set(range(6))
    g = h.group()
    assert (g.group_epoch, g.assignment_epoch, g.state) == (1, 1, "Stable")
    assert [x.kind for x in h.records] == [MEMBER, EPOCH, TARGET, TARGET_META, CURRENT]


def test_9_revocation_comes_before_assignment() -> None:
    h = Harness()
    h.hb("m1", 0)
    r2 = h.hb("m2", 0)
    assert (r2.member_epoch, r2.assignment) == (2, {})
    assert h.group().members["m2"].state == UNRELEASED_PARTITIONS
    r1 = h.hb("m1", 1)
    kept = parts(r1)
    assert len(kept) == 3 and r1.member_epoch == 1
    assert h.group().members["m1"].state == UNREVOKED_PARTITIONS
    assert h.group().state == "Reconciling"
    # m2 gets nothing while m1 still owns the partitions
    assert h.hb("m2", 2).assignment is None
    r1 = h.hb("m1", 1, owned={FOO: frozenset(kept)})
    assert r1.member_epoch == 2 and h.group().members["m1"].state == STABLE
    r2 = h.hb("m2", 2)
    assert parts(r2) == set(range(6)) - kept and h.group().members["m2"].state == STABLE
    assert h.group().state == "Stable"


def test_10_lost_response_previous_epoch_is_accepted_with_a_subset() -> None:
    h = two_members()
    m1 = h.group().members["m1"]
    assert (m1.member_epoch, m1.previous_member_epoch) == (2, 1)
    owned = {FOO: frozenset(m1.assigned[FOO])}
    assert h.hb("m1", 1, owned=owned).error == E.NONE
    assert h.hb("m1", 1, owned={FOO: frozenset(range(6))}).error == E.FENCED_MEMBER_EPOCH
    assert h.hb("m1", 1).error == E.FENCED_MEMBER_EPOCH


def test_11_12_13_epoch_and_membership_errors() -> None:
    h = two_members()
    assert h.hb("m1", 5).error == E.FENCED_MEMBER_EPOCH
    assert h.hb("ghost", 3).error == E.UNKNOWN_MEMBER_ID
    assert h.hb("m1", 3, group="nope").error == E.GROUP_ID_NOT_FOUND
    assert h.hb("m1", -1, group="nope").error == E.GROUP_ID_NOT_FOUND


def test_14_group_max_size() -> None:
    h = Harness(max_size=1)
    h.hb("m1", 0)
    assert h.hb("m2", 0).error == E.GROUP_MAX_SIZE_REACHED
    assert h.hb("m1", 0).error == E.NONE


def test_15_leave_bumps_and_frees_the_partitions() -> None:
    h = two_members()
    h.records.clear()
    r = h.hb("m1", -1)
    assert (r.error, r.member_epoch, r.member_id) == (E.NONE, -1, "m1")
    assert [(x.kind, x.value) for x in h.records[:3]] == [(CURRENT, None), (TARGET, None), (MEMBER, None)]
    assert h.group().group_epoch == 3
    r2 = h.hb("m2", 2)
    assert parts(r2) == set(range(6)) and r2.member_epoch == 3


def test_16_session_timeout_removes_a_silent_member() -> None:
    h = two_members()
    for _ in range(10):
        h.advance(5000)
        h.hb("m2", h.group().members["m2"].member_epoch)
    assert "m1" not in h.group().members
    assert h.hb("m1", 2).error == E.UNKNOWN_MEMBER_ID
    assert ("cg-session", "g", "m1") not in h.timers


def test_heartbeats_keep_a_member_alive_past_the_session_timeout() -> None:
    h = Harness()
    h.hb("m1", 0)
    for _ in range(30):
        h.advance(5000)
        assert h.hb("m1", 1).error == E.NONE
    assert "m1" in h.group().members


def test_17_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    h = Harness()
    h.hb("m1", 0, rebalance_timeout_ms=1000)
    h.hb("m2", 0)
    h.hb("m1", 1)  # now UNREVOKED
    for _ in range(3):
        h.advance(400)
        h.hb("m1", 1, owned={FOO: frozenset(range(6))})
    assert "m1" not in h.group().members
    assert h.group().group_epoch == 3


def test_18_released_in_time_is_not_fenced() -> None:
    h = Harness()
    h.hb("m1", 0, rebalance_timeout_ms=1000)
    h.hb("m2", 0)
    kept = parts(h.hb("m1", 1))
    h.advance(500)
    h.hb("m1", 1, owned={FOO: frozenset(kept)})
    h.advance(2000)
    assert "m1" in h.group().members and h.group().members["m1"].member_epoch == 2


# ------------------------------------------------------------------------------------- static members


def static_pair() -> Harness:
    h = Harness()
    h.hb("s1", 0, instance_id="i1")
    h.hb("m2", 0)
    kept = parts(h.hb("s1", 1, instance_id="i1"))
    h.hb("s1", 1, owned={FOO: frozenset(kept)}, instance_id="i1")
    h.hb("m2", 2)
    assert h.group().state == "Stable"
    return h


def test_19_20_static_temporary_leave_and_return_keep_the_partitions() -> None:
    h = static_pair()
    before = set(h.group().members["s1"].assigned[FOO])
    epoch = h.group().group_epoch
    r = h.hb("s1", -2, instance_id="i1")
    assert (r.error, r.member_epoch) == (E.NONE, -2)
    assert h.group().members["s1"].member_epoch == -2 and h.group().group_epoch == epoch
    assert h.hb("m2", 2).assignment is None  # nobody else gets s1's partitions
    r = h.hb("s1-new", 0, instance_id="i1")
    assert r.error == E.NONE and parts(r) == before and r.member_epoch == epoch
    assert "s1" not in h.group().members and h.group().group_epoch == epoch


def test_21_22_unreleased_and_fenced_instance() -> None:
    h = static_pair()
    assert h.hb("other", 0, instance_id="i1").error == E.UNRELEASED_INSTANCE_ID
    assert h.hb("s1", 0, instance_id="i1").error == E.UNRELEASED_INSTANCE_ID
    assert h.hb("other", 2, instance_id="i1").error == E.FENCED_INSTANCE_ID
    assert h.hb("other", -1, instance_id="i1").error == E.FENCED_INSTANCE_ID
    assert h.hb("x", 2, instance_id="nope").error == E.UNKNOWN_MEMBER_ID


def test_static_member_that_does_not_return_is_fenced_by_its_session() -> None:
    h = static_pair()
    h.hb("s1", -2, instance_id="i1")
    for _ in range(10):
        h.advance(5000)
        h.hb("m2", h.group().members["m2"].member_epoch)
    assert "s1" not in h.group().members
    assert set(h.group().target["m2"][FOO]) == set(range(6))
    assert set(h.group().members["m2"].assigned[FOO]) == set(range(6))


# ---------------------------------------------------------------------------- subscriptions, metadata


def test_23_unsubscribed_topic_is_dropped_at_once() -> None:
    h = Harness(assignment_interval_ms=60000)
    r = h.hb("m1", 0, topics=("foo", "bar"))
    assert parts(r, FOO) == set(range(6)) and parts(r, BAR) == {0, 1, 2}
    r = h.hb("m1", 1, topics=("bar",))
    assert r.assignment == {BAR: frozenset({0, 1, 2})}
    m = h.group().members["m1"]
    assert m.state == UNREVOKED_PARTITIONS and set(m.pending_revocation[FOO]) == set(range(6))
    assert h.group().state == "Assigning"


def test_24_assignment_interval_delays_the_new_target() -> None:
    h = Harness(assignment_interval_ms=1000)
    h.hb("m1", 0)
    h.advance(100)
    r2 = h.hb("m2", 0)
    g = h.group()
    assert (g.group_epoch, g.assignment_epoch, r2.assignment) == (2, 1, {})
    h.advance(500)
    h.hb("m1", 1)
    assert h.group().assignment_epoch == 1
    h.advance(500)
    h.hb("m1", 1)
    assert h.group().assignment_epoch == 2


def test_25_partitions_added_bump_the_epoch_and_are_assigned() -> None:
    h = Harness()
    h.hb("m1", 0)
    h.image.topics["foo"] = (FOO, 8)
    r = h.hb("m1", 1)
    assert r.member_epoch == 2 and parts(r) == set(range(8))


def test_26_missing_topic_then_created() -> None:
    h = Harness()
    r = h.hb("m1", 0, topics=("ghost",))
    assert r.error == E.NONE and r.assignment == {}
    import uuid

    ghost = uuid.UUID(int=99)
    h.image.topics["ghost"] = (ghost, 2)
    r = h.hb("m1", h.group().members["m1"].member_epoch)
    assert r.assignment == {ghost: frozenset({0, 1})}


def test_47_librdkafka_names_are_a_set_and_empty_regex_means_none() -> None:
    h = Harness()
    r = h.hb("m1", 0, topics=("foo", "bar", "foo"), regex="")
    assert r.error == E.NONE
    assert h.group().members["m1"].subscribed_topic_names == ("bar", "foo")


def test_30_uniform_fourth_member_keeps_the_others_sticky() -> None:
    h = Harness()
    for i, m in enumerate(("a", "b", "c")):
        h.hb(m, 0)
        for _ in range(3):
            for mm in ("a", "b", "c")[: i + 1]:
                g = h.group()
                cur = g.members[mm]
                h.hb(mm, cur.member_epoch, owned={FOO: frozenset(cur.assigned.get(FOO, {}))})
    before = {m: set(h.group().members[m].assigned[FOO]) for m in "abc"}
    assert sorted(len(v) for v in before.values()) == [2, 2, 2]
    h.hb("d", 0)
    target = {m: set(h.group().target[m].get(FOO, ())) for m in "abcd"}
    assert sorted(len(v) for v in target.values()) == [1, 1, 2, 2]
    for m in "abc":
        assert target[m] & before[m]


def test_32_describe_reports_the_preferred_assignor() -> None:
    h = Harness()
    h.hb("a", 0, assignor="range")
    h.hb("b", 0, assignor="range")
    h.hb("c", 0, assignor="uniform")
    (d,) = h.shard.consumer_group_describe(["g"], h.image)
    assert d.assignor_name == "range"
    # the range assignor placed a contiguous range on the first member
    assert set(h.group().target["a"][FOO]) == {0, 1}


def test_33_describe_shows_pending_revocations_and_the_target() -> None:
    h = Harness()
    h.hb("m1", 0)
    h.hb("m2", 0)
    h.hb("m1", 1)
    (d,) = h.shard.consumer_group_describe(["g"], h.image)
    assert (d.error, d.state, d.group_epoch, d.assignment_epoch) == (0, "Reconciling", 2, 2)
    m1 = next(m for m in d.members if m.member_id == "m1")
    assert m1.assignment[0].partitions == tuple(range(6)) and m1.member_type == 1
    assert len(m1.target_assignment[0].partitions) == 3 and m1.target_assignment[0].topic_name == "foo"
    (missing,) = h.shard.consumer_group_describe(["nope"], h.image)
    assert missing.error == E.GROUP_ID_NOT_FOUND


def test_a_heartbeat_is_answered_after_its_records_and_a_failed_write_is_coordinator_not_available() -> None:
    from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupHeartbeatRequest

    h = Harness()
    req = ConsumerGroupHeartbeatRequest(
        1, "g", "m1", 0, rebalance_timeout_ms=1000, subscribed_topic_names=("foo",), topic_partitions={}
    )
    fx = h.shard.consumer_group_heartbeat(req, h.image, "t", h.now)
    assert fx.records and not fx.replies  # nothing is answered before the write
    failed = fx.after_persist(False, h.now)
    assert [(tok, r.error) for tok, r in failed.replies] == [("t", E.COORDINATOR_NOT_AVAILABLE)]
    # a heartbeat that changes nothing writes nothing and is answered at once
    h = Harness()
    h.hb("m1", 0)
    same = ConsumerGroupHeartbeatRequest(1, "g", "m1", 1, client_id="client", client_host="/127.0.0.1")
    fx = h.shard.consumer_group_heartbeat(same, h.image, "u", h.now)
    assert not fx.records and [(tok, r.error, r.member_epoch) for tok, r in fx.replies] == [("u", E.NONE, 1)]
