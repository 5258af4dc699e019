"""Spec §10 scenario 40: LeaveGroup, OffsetCommit/OffsetFetch, Describe/List/Delete, protocol vote."""

from __future__ import annotations

import pytest
from coordinator_harness import Harness, assignment, subscription

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.group import ClassicGroup, Member
from groupcoord.server.coordinator.records import GroupRecord, OffsetRecord
from groupcoord.server.coordinator.types import (
    CommitPartition,
    FetchedPartition,
    OffsetCommitRequest,
    OffsetCommitResult,
)

G = "group"


@pytest.fixture
def h() -> Harness:
    return Harness()


# ----------------------------------------------------------------------------------------- leave


def test_valid_leave_group(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    res = h.leave(G, (r.member_id, None))
    assert (res.error, res.members) == (E.NONE, ((r.member_id, None, E.NONE),))
    g = h.group()
    assert (g.state, g.generation_id) == ("Empty", 2)
    assert ("heartbeat", G, r.member_id) not in h.timers
    assert isinstance(h.records[-1], GroupRecord) and h.records[-1].value.generation == 2


def test_leave_group_static_member_with_unknown_member_id(h: Harness) -> None:
    results = h.stable_group(G, 2, instances=["i1", "i2"])
    res = h.leave(G, ("", "i2"))
    assert res.members == (("", "i2", E.NONE),)
    g = h.group()
    assert "i2" not in g.static_members and len(g.members) == 1
    assert {r.member_id for r in results} - set(g.members)
    assert h.leave(G, ("", "i9")).members == (("", "i9", E.UNKNOWN_MEMBER_ID),)


def test_static_members_fenced_instance_batch_leave_group(h: Harness) -> None:
    h.stable_group(G, 2, instances=["i1", "i2"])
    g = h.group()
    i1 = g.static_members["i1"]
    res = h.leave(G, (i1, "i1"), ("some-other-id", "i2"))
    assert res.members == ((i1, "i1", E.NONE), ("some-other-id", "i2", E.FENCED_INSTANCE_ID))
    assert "i2" in g.static_members and i1 not in g.members


def test_joined_member_pending_member_batch_leave_group_with_unknown_member(h: Harness) -> None:
    results = h.stable_group(G, 2)
    pending = h.new_pending_member(G, version=4)
    m1 = results[0].member_id
    res = h.leave(G, (m1, None), (pending, None), ("unknown-member", None))
    assert res.members == (
        (m1, None, E.NONE),
        (pending, None, E.NONE),
        ("unknown-member", None, E.UNKNOWN_MEMBER_ID),
    )
    g = h.group()
    assert pending not in g.pending_join_members and m1 not in g.members
    assert ("heartbeat", G, pending) not in h.timers
    assert g.state == "PreparingRebalance"


def test_leave_group_unknown_group(h: Harness) -> None:
    res = h.leave(G, ("member", None), ("", "instance"))
    assert res.error == E.NONE
    assert res.members == (("member", None, E.UNKNOWN_MEMBER_ID), ("", "instance", E.UNKNOWN_MEMBER_ID))


def test_pending_members_leave_group_unblocks_completion(h: Harness) -> None:
    results = h.stable_group(G, 1, session=10_000, rebalance=5000)
    pending = h.new_pending_member(G, version=4, session=10_000)
    t = h.join(G, member_id=results[0].member_id, version=4, session=10_000, rebalance=5000)
    assert h.reply(t) is None
    h.leave(G, (pending, None))
    assert h.join_result(t).generation_id == 2


# ------------------------------------------------------------------------------------------ commits


def _errors(result: OffsetCommitResult) -> set[int]:
    return {err for _, parts in result.topics for _, err in parts}


def test_simple_group_offset_commit(h: Harness) -> None:
    r = h.reply(h.commit(G, {("foo", 0): 100, ("foo", 1): 200, ("bar", 0): 5}))
    assert r.topics == (("foo", ((0, E.NONE), (1, E.NONE))), ("bar", ((0, E.NONE),)))
    g = h.group()
    assert (g.state, g.protocol_type) == ("Empty", None)
    assert h.m.list_groups()[0].protocol_type == ""
    assert h.events_of("group_created", reason="simple_group")
    assert not [x for x in h.records if isinstance(x, GroupRecord)]
    f = h.fetch(G, {"foo": [0, 1, 2]})
    assert [p.offset for p in f.topics[0][1]] == [100, 200, -1]
    # a simple group keeps accepting generation -1 commits
    assert _errors(h.reply(h.commit(G, {("foo", 0): 101}))) == {E.NONE}


def test_offset_commit_with_unknown_group(h: Harness) -> None:
    assert _errors(h.reply(h.commit(G, {("foo", 0): 1}, generation=10, member_id="m", version=9))) == {
        E.GROUP_ID_NOT_FOUND
    }
    assert _errors(h.reply(h.commit(G, {("foo", 0): 1}, generation=10, member_id="m", version=8))) == {
        E.ILLEGAL_GENERATION
    }
    assert not h.m.has_group(G)


def test_generic_group_offset_commit_while_in_completing_rebalance_state(h: Harness) -> None:
    t = h.join(G, version=3)
    h.advance(3000)
    r = h.join_result(t)
    err = _errors(h.reply(h.commit(G, {("foo", 0): 1}, generation=1, member_id=r.member_id)))
    assert err == {E.REBALANCE_IN_PROGRESS}


def test_generic_group_offset_commit_without_member_id_and_generation(h: Harness) -> None:
    h.stable_group(G, 1)
    assert _errors(h.reply(h.commit(G, {("foo", 0): 1}))) == {E.UNKNOWN_MEMBER_ID}


def test_generic_group_offset_commit_validation(h: Harness) -> None:
    (r,) = h.stable_group(G, 1, instances=["i1"])
    assert _errors(h.reply(h.commit(G, {("foo", 0): 1}, generation=2, member_id=r.member_id))) == {
        E.ILLEGAL_GENERATION
    }
    assert _errors(h.reply(h.commit(G, {("foo", 0): 1}, generation=1, member_id="x", instance="i1"))) == {
        E.FENCED_INSTANCE_ID
    }
    ok = h.reply(
        h.commit(G, {("foo", 0): 1, ("foo", 1): 2}, generation=1, member_id=r.member_id, metadata="m")
    )
    assert _errors(ok) == {E.NONE}


def test_generic_group_offset_commit_maintains_session(h: Harness) -> None:
    (r,) = h.stable_group(G, 1, session=1000)
    h.advance(600)
    assert _errors(h.reply(h.commit(G, {("foo", 0): 1}, generation=1, member_id=r.member_id))) == {E.NONE}
    h.advance(600)
    assert r.member_id in h.group().members
    h.advance(400)
    assert r.member_id not in h.group().members


def test_offset_commit_metadata_too_large(h: Harness) -> None:
    h.commit(G, {("foo", 0): 1})
    big = "x" * (h.config.offset_metadata_max_bytes + 1)
    req = OffsetCommitRequest(
        8,
        G,
        -1,
        "",
        None,
        -1,
        (("foo", (CommitPartition(0, 7, -1, -1, big), CommitPartition(1, 8, 3, -1, None))),),
    )
    tok = h.token()
    h.apply(h.m.commit_offsets(req, tok, h.now))
    assert h.reply(tok).topics == (("foo", ((0, E.OFFSET_METADATA_TOO_LARGE), (1, E.NONE))),)
    f = h.fetch(G, {"foo": [0, 1]})
    assert f.topics[0][1] == (FetchedPartition(0, 1, -1, "", E.NONE), FetchedPartition(1, 8, 3, "", E.NONE))


def test_offset_commit_persist_failure(h: Harness) -> None:
    h.commit(G, {("foo", 0): 1})
    h.fail_next_persists = 1
    assert _errors(h.reply(h.commit(G, {("foo", 0): 2}))) == {E.COORDINATOR_NOT_AVAILABLE}
    assert h.fetch(G, {"foo": [0]}).topics[0][1][0].offset == 1


def test_fetch_offsets_with_unknown_group(h: Harness) -> None:
    f = h.fetch("unknown", {"foo": [0, 1]})
    assert f.error == E.NONE
    assert f.topics == (("foo", (FetchedPartition(0, -1, -1, "", 0), FetchedPartition(1, -1, -1, "", 0))),)
    assert h.fetch("unknown", None).topics == ()


def test_fetch_offsets_with_pending_transactional_offsets(h: Harness) -> None:
    # our analogue of a pending transactional offset: a commit whose write is still in flight
    h.commit(G, {("foo", 0): 1})
    h.hold_persists = True
    tok = h.commit(G, {("foo", 0): 2})
    assert h.fetch(G, {"foo": [0]}).topics[0][1][0] == FetchedPartition(0, 1, -1, "", E.NONE)
    assert h.fetch(G, {"foo": [0]}, require_stable=True).topics[0][1][0] == FetchedPartition(
        0, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT
    )
    h.flush_persists()
    assert _errors(h.reply(tok)) == {E.NONE}
    assert h.fetch(G, {"foo": [0]}, require_stable=True).topics[0][1][0].offset == 2


def test_fetch_all_offsets(h: Harness) -> None:
    h.commit(G, {("foo", 1): 11, ("foo", 0): 10, ("bar", 0): 5})
    f = h.fetch(G, None)
    assert {t: [(p.partition, p.offset) for p in ps] for t, ps in f.topics} == {
        "foo": [(0, 10), (1, 11)],
        "bar": [(0, 5)],
    }


# ----------------------------------------------------------------------------- describe/list/delete


def test_describe_group_stable(h: Harness) -> None:
    results = h.stable_group(G, 1)
    (d,) = h.m.describe_groups([G])
    assert (d.error, d.state, d.protocol_type, d.protocol_data) == (E.NONE, "Stable", "consumer", "range")
    (m,) = d.members
    assert (m.member_id, m.client_id, m.client_host) == (results[0].member_id, "client", "/127.0.0.1")
    assert (m.metadata, m.assignment) == (subscription("foo"), assignment({"foo": [0]}))


def test_describe_group_rebalancing(h: Harness) -> None:
    results = h.stable_group(G, 1)
    h.join(G, member_id=results[0].member_id, version=3, protocols=(("range", b"new"),))
    h.join(G, version=3)  # second member keeps the group in PreparingRebalance
    (d,) = h.m.describe_groups([G])
    assert (d.state, d.protocol_type, d.protocol_data) == ("PreparingRebalance", "consumer", "")
    assert all(m.metadata == b"" for m in d.members)


def test_describe_groups_group_id_not_found(h: Harness) -> None:
    (d,) = h.m.describe_groups(["unknown"])
    assert (d.error, d.group_id, d.state, d.protocol_type, d.protocol_data, d.members) == (
        E.NONE,
        "unknown",
        "Dead",
        "",
        "",
        (),
    )


def test_list_groups(h: Harness) -> None:
    h.stable_group("stable-group", 1)
    h.commit("simple-group", {("foo", 0): 1})
    assert {(x.group_id, x.state, x.protocol_type, x.group_type) for x in h.m.list_groups([], [])} == {
        ("stable-group", "Stable", "consumer", "classic"),
        ("simple-group", "Empty", "", "classic"),
    }
    assert [x.group_id for x in h.m.list_groups(["stable"], [])] == ["stable-group"]
    assert [x.group_id for x in h.m.list_groups([" EMPTY "], [])] == ["simple-group"]
    assert len(h.m.list_groups(["Stable", "empty"], [])) == 2
    assert h.m.list_groups(["Unknown"], []) == []
    assert len(h.m.list_groups([], ["Classic"])) == 2
    assert h.m.list_groups([], ["consumer"]) == []


def test_list_groups_with_states(h: Harness) -> None:
    h.join("preparing", version=3)
    assert [x.state for x in h.m.list_groups(["preparingrebalance"], [])] == ["PreparingRebalance"]
    assert h.m.list_groups(["completingrebalance"], []) == []


def test_delete_non_empty_group(h: Harness) -> None:
    h.stable_group(G, 1)
    results, _ = h.m.delete_groups([G], h.now)
    assert results == [(G, E.NON_EMPTY_GROUP)]
    assert h.m.has_group(G)


def test_delete_empty_group(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.reply(h.commit(G, {("foo", 0): 1}, generation=1, member_id=r.member_id))
    h.leave(G, (r.member_id, None))
    results, fx = h.m.delete_groups([G, G, "unknown"], h.now)
    h.apply(fx)
    assert results == [(G, E.NONE), ("unknown", E.GROUP_ID_NOT_FOUND)]
    assert [type(x).__name__ for x in fx.records] == ["OffsetRecord", "GroupRecord"]
    assert all(x.value is None for x in fx.records)
    assert h.m.describe_groups([G])[0].state == "Dead"
    assert h.fetch(G, {"foo": [0]}).topics[0][1][0].offset == -1
    assert h.events_of("group_deleted", reason="deleted")
    assert h.events_of("state_change", state_from="Empty", state_to="Dead", reason="deleted")


def test_validate_delete_group(h: Harness) -> None:
    t = h.join(G, version=3)
    assert h.m.delete_groups([G], h.now)[0] == [(G, E.NON_EMPTY_GROUP)]  # PreparingRebalance
    h.advance(3000)
    h.join_result(t)
    assert h.m.delete_groups([G], h.now)[0] == [(G, E.NON_EMPTY_GROUP)]  # CompletingRebalance
    assert h.m.delete_groups(["never-existed"], h.now)[0] == [("never-existed", E.GROUP_ID_NOT_FOUND)]


# ------------------------------------------------------------------------------ protocol vote (CGT)


def _member(mid: str, *names: str) -> Member:
    return Member(mid, None, "c", "h", 500, 500, "consumer", tuple((n, b"") for n in names))


def test_select_protocol() -> None:
    g = ClassicGroup(G, 0)
    g.add(_member("m1", "range", "roundrobin"), None)
    g.add(_member("m2", "roundrobin", "range"), None)
    assert g.select_protocol() in {"range", "roundrobin"}
    g.add(_member("m3", "roundrobin", "range"), None)
    assert g.select_protocol() == "roundrobin"
    g.add(_member("m4", "range"), None)  # only range is supported by everyone now
    assert g.select_protocol() == "range"


def test_supports_protocols() -> None:
    g = ClassicGroup(G, 0)
    assert not g.supports_protocols("", (("range", b""),))
    assert not g.supports_protocols("consumer", ())
    assert g.supports_protocols("consumer", (("range", b""),))
    g.add(_member("m1", "range", "roundrobin"), None)
    g.transition_to("PreparingRebalance", 0)
    assert g.supports_protocols("consumer", (("roundrobin", b""), ("x", b"")))
    assert not g.supports_protocols("consumer", (("x", b""),))
    assert not g.supports_protocols("connect", (("range", b""),))
    g.add(_member("m2", "roundrobin"), None)
    assert not g.supports_protocols("consumer", (("range", b""),))
    assert g.supports_protocols("consumer", (("roundrobin", b""),))


def test_offset_records_carry_expire_timestamp_for_v2_to_v4(h: Harness) -> None:
    h.commit(G, {("foo", 0): 1}, version=3, retention=1000)
    h.commit(G, {("foo", 1): 1}, version=5, retention=1000)  # v5+ has no retention field: ignored
    recs = {r.partition: r.value for r in h.records if isinstance(r, OffsetRecord)}
    assert recs[0].expire_timestamp == h.now + 1000 and recs[1].expire_timestamp == -1
