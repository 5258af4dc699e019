"""KIP-932 share groups in the pure coordinator: ShareGroupHeartbeat, the simple assignor, session timeout,
leave, describe and replay, on a fake clock (spec SHARE_GROUPS_SPEC.md §2, scenarios 1-11)."""

from __future__ import annotations

import itertools
from typing import Any

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.modern.share.assignor import assign
from groupcoord.server.coordinator.modern.share.config import ShareGroupConfig
from groupcoord.server.coordinator.modern.share.group import ShareHeartbeatRequest, ShareHeartbeatResult
from groupcoord.server.coordinator.modern.share.manager import session_key
from groupcoord.server.coordinator.records import ShareGroupRecord
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import CancelTimer, Effects, JoinGroupRequest, ScheduleTimer

T = {"t": ("00aa", 2)}
_tokens = itertools.count()


def hb(
    shard: GroupCoordinatorShard,
    member: str,
    epoch: int,
    topics: tuple[str, ...] | None = ("t",),
    *,
    group: str = "g",
    meta: dict[str, tuple[str, int]] = T,
    now: int = 0,
) -> tuple[ShareHeartbeatResult, Effects]:
    token = next(_tokens)
    req = ShareHeartbeatRequest(group, member, epoch, None, topics, "cid", "/127.0.0.1", meta)
    fx = shard.share_group_heartbeat(req, token, now)
    replies = list(fx.replies)
    if fx.after_persist is not None:
        replies += list(fx.after_persist(True, now).replies)
    [(tok, result)] = replies
    assert tok == token
    return result, fx


def parts(result: Any) -> set[int]:
    assert result.assignment is not None
    return {p for _, ps in result.assignment for p in ps}


def test_join_creates_group_and_assigns() -> None:
    shard = GroupCoordinatorShard()
    r, fx = hb(shard, "u1", 0)
    assert r.error == 0 and r.member_epoch >= 1 and r.heartbeat_interval_ms == 5000
    assert parts(r) == {0, 1}
    assert any(isinstance(x, ShareGroupRecord) for x in fx.records)
    assert ScheduleTimer(session_key("g", "u1"), 45000) in fx.timers
    [d] = shard.share_group_describe(["g"])
    assert d.state == "Stable" and d.assignor_name == "simple" and d.group_epoch == r.member_epoch


def test_invalid_requests() -> None:
    shard = GroupCoordinatorShard()
    assert hb(shard, "u1", 0, None)[0].error == E.INVALID_REQUEST
    assert hb(shard, "u1", 0, ())[0].error == E.INVALID_REQUEST
    assert hb(shard, "", 0)[0].error == E.INVALID_REQUEST
    assert hb(shard, "u1", -2)[0].error == E.INVALID_REQUEST
    assert not shard.has_share_group("g")


def test_unknown_member_and_missing_group() -> None:
    shard = GroupCoordinatorShard()
    assert hb(shard, "u9", 3)[0].error == E.GROUP_ID_NOT_FOUND
    hb(shard, "u1", 0)
    assert hb(shard, "u9", 3)[0].error == E.UNKNOWN_MEMBER_ID


def test_steady_heartbeat_writes_nothing_and_sends_no_assignment() -> None:
    shard = GroupCoordinatorShard()
    r, _ = hb(shard, "u1", 0)
    r2, fx = hb(shard, "u1", r.member_epoch, None)
    assert r2.error == 0 and r2.assignment is None and not fx.records


def test_lost_response_previous_epoch_accepted_others_fenced() -> None:
    shard = GroupCoordinatorShard()
    r1, _ = hb(shard, "u1", 0)
    hb(shard, "u2", 0)  # bumps the group epoch
    r1b, _ = hb(shard, "u1", r1.member_epoch, None)
    assert r1b.member_epoch == r1.member_epoch + 1
    ok, _ = hb(shard, "u1", r1.member_epoch, None)  # the previous epoch: its response was lost
    assert ok.error == 0
    assert hb(shard, "u1", r1b.member_epoch + 1, None)[0].error == E.FENCED_MEMBER_EPOCH
    hb(shard, "u3", 0)
    r1c, _ = hb(shard, "u1", r1b.member_epoch, None)
    assert r1c.member_epoch == r1b.member_epoch + 1
    # older than the previous epoch: fenced
    assert hb(shard, "u1", r1.member_epoch, None)[0].error == E.FENCED_MEMBER_EPOCH


def test_type_clash_with_classic_group() -> None:
    shard = GroupCoordinatorShard()
    shard.group_manager.add_simple_group("c", 0)
    assert hb(shard, "u1", 0, group="c")[0].error == E.GROUP_ID_NOT_FOUND
    hb(shard, "u1", 0, group="s")
    fx = shard.join_group(
        JoinGroupRequest(5, "s", 10000, 10000, "", None, "consumer", (("range", b""),)), "tok", 0
    )
    assert fx.replies[0][1].error == E.GROUP_ID_NOT_FOUND


def test_max_size() -> None:
    shard = GroupCoordinatorShard(share_config=ShareGroupConfig(max_size=2))
    hb(shard, "u1", 0)
    hb(shard, "u2", 0)
    assert hb(shard, "u3", 0)[0].error == E.GROUP_MAX_SIZE_REACHED
    assert hb(shard, "u1", 0)[0].error == 0  # existing members still fine


def test_more_members_than_partitions_share_them() -> None:
    shard = GroupCoordinatorShard()
    hb(shard, "a", 0)
    hb(shard, "b", 0)
    hb(shard, "c", 0)
    got = {}
    for m in ("a", "b", "c"):
        [d] = shard.share_group_describe(["g"])
        epoch = next(x.member_epoch for x in d.members if x.member_id == m)
        r, _ = hb(shard, m, epoch, ("t",))
        got[m] = parts(r)
    assert sorted(len(v) for v in got.values()) == [1, 1, 2]
    assert (
        sum(p == 0 for v in got.values() for p in v) == 2
        and sum(p == 1 for v in got.values() for p in v) == 2
    )


def test_assignor_examples_and_stickiness() -> None:
    six = {"t": ("aa", 6)}
    first = assign({"a": ["t"], "b": ["t"], "c": ["t"]}, six, {})
    assert [len(first[m]["aa"]) for m in "abc"] == [2, 2, 2]
    assert set().union(*(first[m]["aa"] for m in "abc")) == set(range(6))
    second = assign({"a": ["t"], "b": ["t"], "c": ["t"], "d": ["t"]}, six, first)
    assert sorted(len(second[m].get("aa", ())) for m in "abcd") == [1, 1, 2, 2]
    for m in "abc":  # sticky: nobody gains a partition it did not have while others lose theirs
        assert second[m]["aa"] <= first[m]["aa"]
    assert assign({"a": ["t"], "b": ["t"]}, {"t": ("aa", 1)}, {}) == {"a": {"aa": {0}}, "b": {"aa": {0}}}
    assert assign({"a": ["t"]}, {}, {}) == {"a": {}}
    hetero = assign({"a": ["t", "u"], "b": ["u"]}, {"t": ("aa", 2), "u": ("bb", 2)}, {})
    assert hetero["a"]["aa"] == {0, 1} and hetero["a"]["bb"] | hetero["b"]["bb"] == {0, 1}


def test_leave_bumps_epoch_and_last_leave_empties() -> None:
    shard = GroupCoordinatorShard()
    hb(shard, "u1", 0)
    hb(shard, "u2", 0)
    before = shard.share_group_describe(["g"])[0].group_epoch
    r, fx = hb(shard, "u1", -1, None)
    assert r.error == 0 and r.member_epoch == -1
    assert CancelTimer(session_key("g", "u1")) in fx.timers
    d = shard.share_group_describe(["g"])[0]
    assert d.group_epoch == before + 1 and [m.member_id for m in d.members] == ["u2"]
    r2, _ = hb(shard, "u2", d.members[0].member_epoch, None)
    assert parts(r2) == {0, 1}  # u2 now has both partitions
    hb(shard, "u2", -1, None)
    assert shard.share_group_describe(["g"])[0].state == "Empty"
    assert hb(shard, "u2", -1, None)[0].error == E.UNKNOWN_MEMBER_ID


def test_session_timeout_removes_member() -> None:
    shard = GroupCoordinatorShard()
    hb(shard, "u1", 0, now=0)
    fx = shard.on_timer(session_key("g", "u1"), 45000)
    assert any(isinstance(x, ShareGroupRecord) for x in fx.records)
    assert hb(shard, "u1", 1, None)[0].error == E.UNKNOWN_MEMBER_ID
    assert shard.share_group_describe(["g"])[0].state == "Empty"


def test_replay_restores_group_and_arms_sessions() -> None:
    shard = GroupCoordinatorShard()
    r, fx = hb(shard, "u1", 0)
    [rec] = [x for x in fx.records if isinstance(x, ShareGroupRecord)]
    again = GroupCoordinatorShard()
    again.replay(rec)
    load = again.finish_load(1000)
    assert ScheduleTimer(session_key("g", "u1"), 46000) in load.timers
    r2, fx2 = hb(again, "u1", r.member_epoch, None)
    assert r2.error == 0 and not fx2.records  # same metadata hash after the reload: no new epoch


def test_list_and_delete_share_groups() -> None:
    shard = GroupCoordinatorShard()
    hb(shard, "u1", 0)
    listed = shard.list_groups((), ("share",))
    assert [(x.group_id, x.group_type, x.state) for x in listed] == [("g", "share", "Stable")]
    assert shard.list_groups((), ("classic",)) == []
    results, _ = shard.delete_groups(["g"], 0)
    assert results == [("g", E.NON_EMPTY_GROUP)]
    hb(shard, "u1", -1, None)
    results, fx = shard.delete_groups(["g"], 0)
    assert results == [("g", 0)] and ShareGroupRecord("g", None) in fx.records
    assert shard.share_group_describe(["g"])[0].error == E.GROUP_ID_NOT_FOUND


def test_new_partitions_bump_epoch_and_reassign() -> None:
    shard = GroupCoordinatorShard()
    r, _ = hb(shard, "u1", 0)
    r2, _ = hb(shard, "u1", r.member_epoch, None, meta={"t": ("00aa", 3)})
    assert r2.member_epoch == r.member_epoch + 1 and parts(r2) == {0, 1, 2}


def test_offsets_apis_refuse_a_share_group() -> None:
    from groupcoord.server.coordinator.types import CommitPartition, OffsetCommitRequest, OffsetFetchRequest

    shard = GroupCoordinatorShard()
    hb(shard, "u1", 0)
    fx = shard.commit_offsets(
        OffsetCommitRequest(8, "g", -1, "", None, -1, (("t", (CommitPartition(0, 5),)),)), "tok", 0
    )
    assert fx.replies[0][1].topics == (("t", ((0, E.GROUP_ID_NOT_FOUND),)),)
    assert not shard.has_group("g")  # no classic group was created beside it
    assert shard.fetch_offsets(OffsetFetchRequest(8, "g", None), 0).error == E.GROUP_ID_NOT_FOUND
    assert shard.delete_offsets("g", [("t", [0])], 0)[0][0] == E.GROUP_ID_NOT_FOUND
