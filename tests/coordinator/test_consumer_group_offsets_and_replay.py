"""Consumer groups and the other group APIs (spec §8), and durability through replay (spec §6, scenario 46)."""

from __future__ import annotations

from consumer_group_harness import FOO, Harness

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupConfig
from groupcoord.server.coordinator.records import (
    ConsumerGroupRecord,
    decode_consumer_group_value,
    encode_consumer_group_value,
)
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import (
    CommitPartition,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)


def commit(h: Harness, member: str, epoch: int, partitions: tuple[int, ...], version: int = 9) -> set[int]:
    req = OffsetCommitRequest(
        version=version,
        group_id="g",
        generation_id=epoch,
        member_id=member,
        group_instance_id=None,
        retention_time_ms=-1,
        topics=(("foo", tuple(CommitPartition(p, 100 + p) for p in partitions)),),
    )
    h.apply(h.shard.commit_offsets(req, "c", h.now, topic_ids=lambda n: FOO if n == "foo" else None))
    ((_, result),) = h.replies
    return {err for _, ps in result.topics for _, err in ps}


def test_34_commit_with_the_current_epoch_and_stale_newer_epoch() -> None:
    h = Harness()
    h.hb("m1", 0)
    assert commit(h, "m1", 1, (0, 1)) == {E.NONE}
    assert commit(h, "m1", 2, (0,)) == {E.STALE_MEMBER_EPOCH}
    assert commit(h, "ghost", 1, (0,)) == {E.UNKNOWN_MEMBER_ID}
    assert h.shard.committed_offsets("g")[("foo", 0)].offset == 100
    assert not h.shard.group_manager.group("g")  # no classic "simple" group appeared


def test_35_older_epoch_passes_only_for_partitions_assigned_no_later() -> None:
    h = Harness()
    h.hb("m1", 0)  # F0-5 assigned at epoch 1
    h.hb("m2", 0)  # epoch 2: m1 must revoke 3
    h.hb("m1", 1)
    kept = h.group().members["m1"].assigned[FOO]
    h.hb("m1", 1, owned={FOO: frozenset(kept)})
    assert h.group().members["m1"].member_epoch == 2
    assert commit(h, "m1", 1, tuple(kept)) == {E.NONE}
    assert len(h.hb("m2", 2).assignment[FOO]) == 3  # the freed partitions, at epoch 2
    r = h.hb("m1", -1)
    assert r.error == E.NONE
    h.hb("m2", 2)  # epoch 3: m2 takes every partition, the freed ones at epoch 3
    m2 = h.group().members["m2"]
    assert m2.member_epoch == 3
    old = next(p for p, e in m2.assigned[FOO].items() if e == 2)
    new = next(p for p, e in m2.assigned[FOO].items() if e == 3)
    assert commit(h, "m2", 2, (old,)) == {E.NONE}
    assert commit(h, "m2", 2, (old, new)) == {E.STALE_MEMBER_EPOCH}


def test_36_consumer_member_needs_offset_commit_v9() -> None:
    h = Harness()
    h.hb("m1", 0)
    assert commit(h, "m1", 1, (0,), version=8) == {E.UNSUPPORTED_VERSION}


def test_37_offset_fetch_checks_the_member_epoch_from_v9() -> None:
    h = Harness()
    h.hb("m1", 0)
    commit(h, "m1", 1, (0,))

    def fetch(member: str | None, epoch: int) -> int:
        return h.shard.fetch_offsets(
            OffsetFetchRequest(9, "g", (("foo", (0,)),), False, member, epoch), h.now
        ).error

    assert fetch("m1", 1) == E.NONE
    assert fetch("m1", 7) == E.STALE_MEMBER_EPOCH
    assert fetch("nobody", 1) == E.UNKNOWN_MEMBER_ID
    assert fetch(None, -1) == E.NONE


def test_38_list_groups_by_type_and_state() -> None:
    h = Harness()
    h.hb("m1", 0)
    listed = h.shard.list_groups((), ("CONSUMER",))
    assert [(x.group_id, x.group_type, x.protocol_type, x.state) for x in listed] == [
        ("g", "consumer", "consumer", "Stable")
    ]
    assert h.shard.list_groups(("stable",), ()) == listed
    assert h.shard.list_groups(("empty",), ()) == []
    assert h.shard.list_groups((), ("classic",)) == []


def test_39_delete_only_when_empty() -> None:
    h = Harness()
    h.hb("m1", 0)
    commit(h, "m1", 1, (0,))
    results, _ = h.shard.delete_groups(["g"], h.now)
    assert results == [("g", E.NON_EMPTY_GROUP)]
    h.hb("m1", -1)
    assert h.group().state == "Empty"
    results, fx = h.shard.delete_groups(["g"], h.now)
    assert results == [("g", E.NONE)]
    assert fx.records[-1] == ConsumerGroupRecord(3, "g", "", None)
    assert h.hb("m1", 3).error == E.GROUP_ID_NOT_FOUND
    assert h.shard.committed_offsets("g") == {}


def test_classic_requests_on_a_consumer_group() -> None:
    """Migration policy `disabled`: no classic member joins a consumer group; otherwise a malformed
    embedded subscription is refused, once the member has an id (spec §9.3's order)."""
    h = Harness(migration_policy="disabled")
    h.hb("m1", 0)
    req = JoinGroupRequest(5, "g", 10000, 10000, "", None, "consumer", (("range", b""),))
    fx = h.shard.join_group(req, "j", h.now)
    assert fx.replies[0][1].error == E.INCONSISTENT_GROUP_PROTOCOL
    h = Harness()
    h.hb("m1", 0)
    fx = h.shard.join_group(req, "j", h.now)
    assert fx.replies[0][1].error == E.MEMBER_ID_REQUIRED
    known = JoinGroupRequest(
        5, "g", 10000, 10000, fx.replies[0][1].member_id, None, "consumer", (("range", b""),)
    )
    fx = h.shard.join_group(known, "j", h.now)
    assert fx.replies[0][1].error == E.INCONSISTENT_GROUP_PROTOCOL
    (classic,) = h.shard.describe_groups(["g"])
    assert classic.state == "Dead"


def test_heartbeat_on_a_classic_group() -> None:
    h = Harness()
    req = JoinGroupRequest(3, "cl", 10000, 10000, "", None, "consumer", (("range", b""),))
    h.apply(h.shard.join_group(req, "j", h.now))
    assert h.shard.group_manager.group("cl") is not None
    assert h.hb("m1", 0, group="cl").error == E.GROUP_ID_NOT_FOUND


def test_an_empty_classic_group_is_replaced() -> None:
    h = Harness()
    h.shard.group_manager.add_simple_group("g", h.now)
    r = h.hb("m1", 0)
    assert r.error == E.NONE and h.shard.group_manager.group("g") is None


def test_46_replay_restores_epochs_members_and_timers() -> None:
    h = Harness()
    h.hb("m1", 0, rebalance_timeout_ms=20000)
    h.hb("s2", 0, instance_id="i2")
    h.hb("m1", 1)  # m1 UNREVOKED
    rows: dict[tuple, ConsumerGroupRecord] = {}
    for r in h.records:  # what a store keeps: the latest value per key, through the JSON codec
        if r.value is None:
            rows.pop(r.key, None)
        else:
            text = encode_consumer_group_value(r.value)
            rows[r.key] = ConsumerGroupRecord(
                r.kind, r.group_id, r.member_id, decode_consumer_group_value(r.kind, text)
            )
    fresh = GroupCoordinatorShard(consumer_config=ConsumerGroupConfig(assignment_interval_ms=0))
    for r in reversed(list(rows.values())):  # any order between keys
        fresh.replay(r)
    fx = fresh.finish_load(h.now)
    a, b = h.group(), fresh.consumer_group("g")
    assert (a.group_epoch, a.assignment_epoch, a.metadata_hash, a.state) == (
        b.group_epoch,
        b.assignment_epoch,
        b.metadata_hash,
        b.state,
    )
    assert a.members == b.members and a.target == b.target and a.static_members == b.static_members
    keys = {op.key for op in fx.timers}
    assert {("cg-session", "g", "m1"), ("cg-session", "g", "s2"), ("cg-rebalance", "g", "m1")} <= keys
    for tp in (0, 1, 2, 3, 4, 5):
        assert a.partition_epoch(FOO, tp) == b.partition_epoch(FOO, tp)


def test_offset_delete_on_a_consumer_group_spares_subscribed_topics() -> None:
    h = Harness()
    h.hb("m1", 0)
    commit(h, "m1", 1, (0,))
    req = OffsetCommitRequest(9, "g", 1, "m1", None, -1, (("bar", (CommitPartition(0, 5),)),))
    h.apply(h.shard.commit_offsets(req, "c", h.now, topic_ids=lambda n: None))
    (err, topics), _ = h.shard.delete_offsets("g", [("foo", [0]), ("bar", [0])], h.now)
    assert err == E.NONE
    assert dict(topics) == {"foo": ((0, E.GROUP_SUBSCRIBED_TO_TOPIC),), "bar": ((0, E.NONE),)}
    assert set(h.shard.committed_offsets("g")) == {("foo", 0)}


def test_txn_offset_commit_on_a_consumer_group_checks_member_epochs_and_makes_no_classic_group() -> None:
    """A KIP-848 member's transactional commit (Java's sendOffsetsToTransaction with the group metadata)."""
    from groupcoord.server.coordinator.types import TxnOffsetCommitRequest

    h = Harness()
    h.hb("m1", 0)

    def txn(member: str, epoch: int, pid: int) -> set[int]:
        req = TxnOffsetCommitRequest(3, "g", pid, epoch, member, None, (("foo", (CommitPartition(0, 7),)),))
        h.apply(h.shard.txn_commit_offsets(req, "t", h.now, topic_ids=lambda n: FOO))
        ((_, result),) = h.replies
        return {err for _, ps in result.topics for _, err in ps}

    assert txn("m1", 1, 100) == {E.NONE}
    assert txn("m1", 2, 101) == {E.STALE_MEMBER_EPOCH}
    assert txn("ghost", 1, 102) == {E.UNKNOWN_MEMBER_ID}
    assert txn("", -1, 103) == {E.NONE}  # no member information: accepted, as Kafka
    h.apply(h.shard.complete_transaction("g", 100, True, "m", h.now))
    assert h.shard.committed_offsets("g")[("foo", 0)].offset == 7
    assert h.shard.group_manager.group("g") is None
    assert h.hb("m1", 1).error == E.NONE  # still a consumer group


def test_offsets_expire_by_commit_time_except_subscribed_topics_then_the_empty_group_goes() -> None:
    h = Harness()
    h.shard.config = h.shard.config.__class__(offsets_retention_ms=10_000)
    h.hb("m1", 0)
    commit(h, "m1", 1, (0,))
    req = OffsetCommitRequest(9, "g", 1, "m1", None, -1, (("bar", (CommitPartition(0, 5),)),))
    h.apply(h.shard.commit_offsets(req, "c", h.now, topic_ids=lambda n: None))
    h.now += 20_000
    h.apply(h.shard.cleanup_expired_offsets(h.now))
    assert set(h.shard.committed_offsets("g")) == {("foo", 0)}  # foo is subscribed: kept
    h.hb("m1", -1)
    h.apply(h.shard.cleanup_expired_offsets(h.now))
    assert h.shard.committed_offsets("g") == {} and h.group() is None
    assert h.records[-1] == ConsumerGroupRecord(3, "g", "", None)


def test_request_validation_comes_before_the_group_lookup() -> None:
    h = Harness()
    h.shard.group_manager.add_simple_group("g", h.now)
    r = h.hb("", 0)  # v1 without a member id, on a classic group id
    assert (r.error, r.error_message) == (E.INVALID_REQUEST, "MemberId can't be empty.")
    assert h.shard.group_manager.group("g") is not None  # an invalid request converts nothing
