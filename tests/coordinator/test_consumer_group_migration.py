"""Online migration between classic and consumer groups (spec §9, scenarios 40-44), on the pure shard:
upgrade when a consumer-protocol member joins a classic group, classic members served inside the consumer
group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, their timers), downgrade when the last consumer-protocol
member leaves, the policy, and replay of it all from the written records."""

from __future__ import annotations

import uuid
from typing import Any

from consumer_group_harness import FOO, Harness, parts

from groupcoord.protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartitions,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.group import PREPARING
from groupcoord.server.coordinator.modern.consumer.group import MEMBER_TYPE_CLASSIC
from groupcoord.server.coordinator.records import (
    ConsumerGroupRecord,
    GroupRecord,
    decode_consumer_group_value,
    encode_consumer_group_value,
)
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeaveMember,
    SyncGroupRequest,
)


def sub(*topics: str, owned: dict[str, list[int]] | None = None, version: int = 1) -> bytes:
    tps = tuple(TopicPartitions(t, tuple(ps)) for t, ps in (owned or {}).items())
    return encode_subscription(
        ConsumerProtocolSubscription(topics=topics, owned_partitions=tps, version=version)
    )


def assignment(**topics: list[int]) -> bytes:
    tps = tuple(TopicPartitions(t, tuple(ps)) for t, ps in topics.items())
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=tps, version=1))


def decoded(payload: bytes) -> dict[str, set[int]]:
    return {tp.topic: set(tp.partitions) for tp in decode_assignment(payload).assigned_partitions}


class Migration(Harness):
    """The consumer-group harness plus classic requests; records of every kind are kept for replay."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.next_ids: list[str] = []  # the member ids the coordinator hands out next (then random ones)
        self.shard = GroupCoordinatorShard(
            consumer_config=self.shard.consumer_manager.config,
            id_factory=lambda prefix: self.next_ids.pop(0) if self.next_ids else f"{prefix}-{uuid.uuid4()}",
            topics=self.image,
        )
        self.all_records: list[Any] = []
        self.answers: dict[Any, Any] = {}  # token -> its latest reply, whichever call produced it

    def apply(self, fx: Any, nested: bool = False) -> Any:
        self.all_records += list(fx.records)
        out = super().apply(fx, nested)
        self.answers.update(self.replies)
        return out

    def join(
        self,
        member_id: str,
        metadata: bytes,
        *,
        instance_id: str | None = None,
        version: int = 3,
        session_timeout_ms: int = 10000,
        rebalance_timeout_ms: int = 20000,
        new: bool = False,
    ) -> None:
        """JoinGroup as `member_id`; `new`: as a member without id that the coordinator names `member_id`."""
        if new:
            self.next_ids.append(member_id)
        req = JoinGroupRequest(
            version, "g", session_timeout_ms, rebalance_timeout_ms, "" if new else member_id, instance_id,
            "consumer",
            (("range", metadata),), client_id="classic", client_host="/127.0.0.1",
        )  # fmt: skip
        self.apply(self.shard.join_group(req, ("join", member_id), self.now))

    def sync(self, member_id: str, generation: int, assignments: tuple[tuple[str, bytes], ...] = ()) -> None:
        req = SyncGroupRequest(5, "g", generation, member_id, None, "consumer", "range", assignments)
        self.apply(self.shard.sync_group(req, ("sync", member_id), self.now))

    def reply(self, token: Any) -> Any:
        return self.answers.pop(token)

    def heartbeat(self, member_id: str, generation: int) -> int:
        err, fx = self.shard.heartbeat(HeartbeatRequest(4, "g", generation, member_id), self.now)
        if fx is not None:
            self.apply(fx)
        return err

    def leave(self, *member_ids: str) -> Any:
        result, fx = self.shard.leave_group(
            LeaveGroupRequest(4, "g", tuple(LeaveMember(m) for m in member_ids)), self.now
        )
        self.apply(fx)
        return result

    def stable_classic_group(self) -> None:
        """c1 and c2 on foo: generation 1, c1 holds foo 0-2, c2 foo 3-5 (what a range leader gives)."""
        self.join("c1", sub("foo"), new=True)
        self.join("c2", sub("foo"), new=True)
        while ("join", "c1") not in self.answers:  # the initial rebalance delay, extended once per joiner
            self.advance(1000)
        r1 = self.reply(("join", "c1"))
        assert (r1.error, r1.generation_id) == (0, 1)
        self.sync("c2", 1)
        self.sync("c1", 1, (("c1", assignment(foo=[0, 1, 2])), ("c2", assignment(foo=[3, 4, 5]))))
        assert self.shard.group("g").state == "Stable"


def test_upgrade_keeps_assignments_and_classic_members_rejoin() -> None:
    """Scenario 40: the consumer group starts at the generation; classic heartbeats get
    REBALANCE_IN_PROGRESS; a classic JoinGroup answers with its member epoch as generation."""
    h = Migration()
    h.stable_classic_group()
    mark = len(h.all_records)
    r = h.hb("m3", 0)
    assert r.error == 0 and r.member_epoch == 2
    # Kafka's conversion records: the classic tombstone, then the consumer group at the generation (members,
    # epoch, targets, target metadata, current assignments), then what m3's own heartbeat writes
    written = h.all_records[mark:]
    assert written[0] == GroupRecord("g", None)
    conversion = [(r.kind, r.member_id) for r in written[1:9]]
    assert conversion == [(5, "c1"), (5, "c2"), (3, ""), (7, "c1"), (7, "c2"), (6, ""), (8, "c1"), (8, "c2")]
    assert written[3].value.epoch == 1 and written[6].value.assignment_epoch == 1
    assert [r.member_id for r in written[9:] if r.kind == 5] == ["m3"]
    assert h.shard.group("g") is None
    g = h.group()
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)
    # the classic members keep what they had until they give it up; m3 waits for partitions to be freed
    assert {p for ps in g.members["c1"].assigned.values() for p in ps} == {0, 1, 2}
    assert g.members["c1"].classic is not None and g.members["c1"].classic.session_timeout_ms == 10000
    assert parts(r) == set()
    assert h.timers[("cg-session", "g", "c1")] == h.now + 10000  # the classic session timeout
    assert h.heartbeat("c1", 1) == E.REBALANCE_IN_PROGRESS
    assert ("cg-join", "g", "c1") in h.timers
    # c1 rejoins (eager: it owns nothing now) and gets its new target at the new epoch
    h.join("c1", sub("foo"))
    j = h.reply(("join", "c1"))
    assert (j.error, j.generation_id, j.protocol_type, j.protocol_name, j.leader) == (
        0,
        2,
        "consumer",
        "range",
        "",
    )
    assert ("cg-join", "g", "c1") not in h.timers and ("cg-sync", "g", "c1") in h.timers
    h.sync("c1", 2)
    s = h.reply(("sync", "c1"))
    assert s.error == 0
    assert decoded(s.assignment) == {"foo": set(g.target["c1"][FOO])}
    assert ("cg-sync", "g", "c1") not in h.timers
    assert h.heartbeat("c1", 2) == 0
    # c2 does the same; then m3 collects everything its target holds
    assert h.heartbeat("c2", 1) == E.REBALANCE_IN_PROGRESS
    h.join("c2", sub("foo"))
    h.sync("c2", 2)
    assert h.reply(("sync", "c2")).error == 0
    final = h.hb("m3", 2, owned={})
    assert parts(final) == set(g.target["m3"][FOO]) and len(parts(final)) == 2
    assert h.group().state == "Stable"
    described = h.shard.consumer_group_describe(["g"], h.image)[0]
    assert {m.member_id: m.member_type for m in described.members}["c1"] == MEMBER_TYPE_CLASSIC


def test_upgrade_refused_by_policy_and_empty_classic_group_always_converts() -> None:
    """Scenario 41."""
    h = Migration(migration_policy="downgrade")
    h.stable_classic_group()
    r = h.hb("m3", 0)
    assert r.error == E.GROUP_ID_NOT_FOUND and "online upgrade is disabled" in (r.error_message or "")
    assert h.shard.group("g").state == "Stable" and h.group() is None
    h2 = Migration(migration_policy="disabled")
    h2.join("c1", sub("foo"), new=True)
    while ("join", "c1") not in h2.answers:
        h2.advance(1000)
    h2.leave("c1")
    assert h2.shard.group("g").state == "Empty"
    assert h2.hb("m3", 0).error == 0 and h2.group() is not None


def test_disabled_policy_refuses_classic_join_to_consumer_group() -> None:
    """Scenario 43, and today's answer kept under `disabled`."""
    h = Migration(migration_policy="disabled")
    assert h.hb("m1", 0).error == 0
    h.join("c1", sub("foo"))
    assert h.reply(("join", "c1")).error == E.INCONSISTENT_GROUP_PROTOCOL
    h2 = Migration(migration_policy="disabled")
    h2.stable_classic_group()
    assert h2.hb("m3", 0).error == E.GROUP_ID_NOT_FOUND


def test_classic_join_sync_heartbeat_errors() -> None:
    """Scenario 44 and §9.3's checks: MEMBER_ID_REQUIRED, ILLEGAL_GENERATION, a consumer member's SyncGroup,
    a wrong protocol name."""
    h = Migration()
    assert h.hb("m1", 0).error == 0
    h.join("", sub("foo"), version=5)
    required = h.reply(("join", ""))
    assert required.error == E.MEMBER_ID_REQUIRED and required.member_id
    h.join(required.member_id, sub("foo"), version=5)
    j = h.reply(("join", required.member_id))
    assert j.error == 0 and j.generation_id == h.group().members[required.member_id].member_epoch
    h.sync(required.member_id, j.generation_id + 1)
    assert h.reply(("sync", required.member_id)).error == E.ILLEGAL_GENERATION
    h.sync("m1", 1)
    assert h.reply(("sync", "m1")).error == E.UNKNOWN_MEMBER_ID
    req = SyncGroupRequest(5, "g", j.generation_id, required.member_id, None, "consumer", "roundrobin")
    h.apply(h.shard.sync_group(req, "bad", h.now))
    assert h.reply("bad").error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.heartbeat("nobody", 1) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(required.member_id, j.generation_id + 5) == E.ILLEGAL_GENERATION


def test_classic_member_timers_fence() -> None:
    """A classic member that joined and never synced is fenced after its rebalance timeout; its session
    timeout is its own."""
    h = Migration()
    assert h.hb("m1", 0).error == 0
    h.join("c1", sub("foo"), rebalance_timeout_ms=5000)
    assert h.reply(("join", "c1")).error == 0
    epoch = h.group().group_epoch
    h.advance(5000)
    assert "c1" not in h.group().members and h.group().group_epoch == epoch + 1


def test_downgrade_when_last_consumer_member_leaves() -> None:
    """Scenario 42: m3 leaves a mixed group -> a classic group preparing a rebalance, generation = the last
    group epoch, members keeping their targets as assignments; with policy `upgrade` it stays a consumer
    group."""
    for policy, downgrades in (("bidirectional", True), ("upgrade", False)):
        h = Migration(migration_policy=policy)
        h.stable_classic_group()
        assert h.hb("m3", 0).error == 0
        epoch = h.group().group_epoch
        targets = {mid: set(t.get(FOO, ())) for mid, t in h.group().target.items()}
        left = h.hb("m3", -1)
        assert (left.error, left.member_epoch) == (0, -1)
        if not downgrades:
            assert h.group() is not None and set(h.group().members) == {"c1", "c2"}
            continue
        assert h.group() is None
        classic = h.shard.group("g")
        assert classic is not None and classic.state == PREPARING and classic.generation_id == epoch
        assert set(classic.members) == {"c1", "c2"}
        assert decoded(classic.members["c1"].assignment).get("foo", set()) == targets["c1"]
        assert ("heartbeat", "g", "c1") in h.timers and ("cg-session", "g", "c1") not in h.timers
        assert h.heartbeat("c1", 1) in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION)
        # the classic members rejoin and the classic group completes a rebalance as usual
        h.join("c1", sub("foo"))
        h.join("c2", sub("foo"))
        assert h.reply(("join", "c2")).generation_id == epoch + 1


def test_classic_leave_group_of_last_consumer_member_survivor() -> None:
    """LeaveGroup of a classic member inside a consumer group fences it (unknown ones answered per member)."""
    h = Migration()
    h.stable_classic_group()
    assert h.hb("m3", 0).error == 0
    result = h.leave("c1", "ghost")
    assert [e for _, _, e in result.members] == [0, E.UNKNOWN_MEMBER_ID]
    assert set(h.group().members) == {"c2", "m3"}


def _replayed(h: Migration) -> GroupCoordinatorShard:
    """A fresh shard from the latest value of every key (what the stores keep), values through JSON."""
    latest: dict[Any, Any] = {}
    for r in h.all_records:
        if isinstance(r, ConsumerGroupRecord) and r.value is not None:
            text = encode_consumer_group_value(r.value)
            r = ConsumerGroupRecord(
                r.kind, r.group_id, r.member_id, decode_consumer_group_value(r.kind, text)
            )
        latest[r.key] = r
    fresh = GroupCoordinatorShard(consumer_config=h.shard.consumer_manager.config)
    fresh.topics = h.image
    for r in latest.values():
        if r.value is not None and isinstance(r, GroupRecord | ConsumerGroupRecord):
            fresh.replay(r)
    fresh.finish_load(h.now)
    return fresh


def test_replay_after_upgrade_and_after_downgrade() -> None:
    """Scenario 46 for migration: the records of an upgrade rebuild the same consumer group with its classic
    members (protocols, session timeouts); those of a downgrade the classic group."""
    h = Migration()
    h.stable_classic_group()
    assert h.hb("m3", 0).error == 0
    h.join("c1", sub("foo"))
    fresh = _replayed(h)
    assert fresh.group("g") is None
    a, b = h.group(), fresh.consumer_group("g")
    assert b is not None
    assert (a.group_epoch, a.assignment_epoch, a.target) == (b.group_epoch, b.assignment_epoch, b.target)
    assert a.members == b.members  # classic metadata included
    assert b.members["c2"].classic is not None and b.members["c2"].classic.protocols[0][0] == "range"
    h.hb("m3", -1)
    fresh = _replayed(h)
    assert fresh.consumer_group("g") is None
    classic = fresh.group("g")
    assert classic is not None and set(classic.members) == {"c1", "c2"}
    assert classic.generation_id == h.shard.group("g").generation_id


def test_classic_join_replaces_an_empty_consumer_group() -> None:
    """An empty consumer group is replaced by a classic group when a classic member joins (Kafka's
    `classicGroupJoinToClassicGroup`); a classic join with a session timeout out of bounds is refused."""
    h = Migration()
    assert h.hb("m1", 0).error == 0
    h.join("c1", sub("foo"), session_timeout_ms=1000, new=True)
    assert h.reply(("join", "c1")).error == E.INVALID_SESSION_TIMEOUT
    h.next_ids.clear()
    assert h.hb("m1", -1).error == 0 and h.group() is not None and not h.group().members
    h.join("c1", sub("foo"), new=True)
    assert h.group() is None and h.shard.group("g") is not None
    assert ConsumerGroupRecord(3, "g", "", None) in h.all_records


def test_cooperative_classic_member_revokes_before_it_advances() -> None:
    """A classic member that reports its owned partitions (cooperative, subscription v1+) and must give some
    up stays at its epoch in UNREVOKED_PARTITIONS: its JoinGroup answers the old generation, SyncGroup hands it
    the partitions it keeps, Heartbeat asks it to rejoin; rejoining without the revoked ones advances it."""
    h = Migration()
    h.stable_classic_group()
    assert h.hb("m3", 0).error == 0
    g = h.group()
    keep = set(g.target["c1"][FOO])
    assert keep < {0, 1, 2}
    h.join("c1", sub("foo", owned={"foo": [0, 1, 2]}))
    j = h.reply(("join", "c1"))
    assert (j.error, j.generation_id) == (0, 1)
    assert g.members["c1"].state == 1  # UNREVOKED_PARTITIONS
    h.sync("c1", 1)
    s = h.reply(("sync", "c1"))
    assert s.error == 0 and decoded(s.assignment) == {"foo": keep}
    assert h.heartbeat("c1", 1) == E.REBALANCE_IN_PROGRESS
    h.join("c1", sub("foo", owned={"foo": sorted(keep)}))
    j = h.reply(("join", "c1"))
    assert (j.error, j.generation_id) == (0, 2)
    assert g.members["c1"].state == 0 and set(g.members["c1"].assigned[FOO]) == keep


def test_static_classic_member_replacing_the_last_consumer_member_downgrades() -> None:
    """Spec §9.2 trigger B: a classic JoinGroup with the instance id of the last consumer-protocol member
    takes its place and the group becomes a classic group at once (no rebalance: the assignment is current);
    the joiner syncs its predecessor's target at the classic generation."""
    h = Migration()
    h.stable_classic_group()
    assert h.hb("m3", 0, instance_id="i3").error == 0
    g = h.group()
    epoch, target = g.group_epoch, set(g.target["m3"].get(FOO, ()))
    h.join("s3", sub("foo"), instance_id="i3", version=5, new=True)
    j = h.reply(("join", "s3"))
    assert (j.error, j.member_id, j.generation_id) == (0, "s3", epoch)
    assert h.group() is None
    classic = h.shard.group("g")
    assert classic is not None and classic.state == "Stable" and classic.generation_id == epoch
    assert set(classic.members) == {"c1", "c2", "s3"} and classic.static_members == {"i3": "s3"}
    h.sync("s3", epoch)
    s = h.reply(("sync", "s3"))
    assert s.error == 0 and decoded(s.assignment).get("foo", set()) == target
    # policy `upgrade`: the classic member joins the consumer group instead
    h = Migration(migration_policy="upgrade")
    h.stable_classic_group()
    assert h.hb("m3", 0, instance_id="i3").error == 0
    h.join("s3", sub("foo"), instance_id="i3", version=5, new=True)
    assert h.reply(("join", "s3")).error == 0
    assert h.group() is not None and set(h.group().members) == {"c1", "c2", "s3"}


def test_upgrade_during_the_first_rebalance() -> None:
    """A classic group still in its first rebalance (no generation, no protocol chosen yet) converts too:
    the parked JoinGroup is answered REBALANCE_IN_PROGRESS and the member rejoins the consumer group."""
    h = Migration()
    h.join("c1", sub("foo"), new=True)
    assert h.shard.group("g").state == "PreparingRebalance"
    r = h.hb("m3", 0)
    assert r.error == 0 and h.shard.group("g") is None
    assert h.reply(("join", "c1")).error == E.REBALANCE_IN_PROGRESS
    assert h.group().members["c1"].subscribed_topic_names == ("foo",)
    h.join("c1", sub("foo"))
    assert h.reply(("join", "c1")).error == 0
