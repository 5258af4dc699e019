"""Streams groups (KIP-1071) on the pure shard with a fake clock: spec STREAMS_GROUPS_SPEC §18's scenarios
(initial delay 0, assignment interval 0 unless stated). T1 = subtopology "0" reading `in` (4 partitions)
with the changelog `app-store-changelog`; T2 adds subtopology "1" reading the repartition topic `app-rep`."""

from __future__ import annotations

from typing import Any

from groupcoord.server.coordinator.modern.streams.api import (
    StreamsGroupConfig,
    StreamsHeartbeatRequest,
    StreamsHeartbeatResult,
    Subtopology,
    TopicInfo,
    Topology,
)
from groupcoord.server.coordinator.records import StreamsGroupRecord
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import CancelTimer, Effects, ScheduleTimer

CHANGELOG = TopicInfo("app-store-changelog", 0, 0, (("cleanup.policy", "compact"),))
T1 = Topology(0, (Subtopology("0", ("in",), state_changelog_topics=(CHANGELOG,)),))
T2 = Topology(
    0,
    (
        Subtopology("0", ("in",), repartition_sink_topics=("app-rep",)),
        Subtopology(
            "1", repartition_source_topics=(TopicInfo("app-rep"),), state_changelog_topics=(CHANGELOG,)
        ),
    ),
)
EMPTY: dict[str, frozenset[int]] = {}


class Harness:
    def __init__(self, **config: Any) -> None:
        config.setdefault("initial_rebalance_delay_ms", 0)
        config.setdefault("assignment_interval_ms", 0)
        self.shard = GroupCoordinatorShard(streams_config=StreamsGroupConfig(**config))
        self.topics: dict[str, int] = {"in": 4}
        self.now = 1000
        self.timers: dict[tuple, int] = {}
        self.records: list[StreamsGroupRecord] = []

    def apply(self, fx: Effects) -> list[Any]:
        for op in fx.timers:
            if isinstance(op, ScheduleTimer):
                self.timers[op.key] = op.deadline_ms
            elif isinstance(op, CancelTimer):
                self.timers.pop(op.key, None)
        self.records += [r for r in fx.records if isinstance(r, StreamsGroupRecord)]
        replies = list(fx.replies)
        if fx.after_persist is not None:
            replies += list(fx.after_persist(True, self.now).replies)
        return replies

    def hb(self, member: str, epoch: int, topology: Topology | None = None, owned: Any = None,
           **kw: Any) -> StreamsHeartbeatResult:  # fmt: skip
        if epoch == 0 and topology is None and "no_topology" not in kw:
            topology = T1
        kw.pop("no_topology", None)
        active = standby = warmup = None
        if owned is not None:
            active, standby, warmup = owned, EMPTY, EMPTY
        elif epoch == 0:
            active = standby = warmup = EMPTY
        kw.setdefault("rebalance_timeout_ms", 30000)
        kw.setdefault("process_id", f"p-{member}")
        req = StreamsHeartbeatRequest(1, kw.pop("group", "g"), member, epoch, topology=topology,
                                      active_tasks=active, standby_tasks=standby, warmup_tasks=warmup, **kw)  # fmt: skip
        fx = self.shard.streams_group_heartbeat(req, self.topics.get, "tok", self.now)
        (reply,) = [r for t, r in self.apply(fx) if t == "tok"]
        return reply

    def create_internal(self, res: StreamsHeartbeatResult) -> None:
        for t in res.topics_to_create:
            self.topics[t.name] = t.partitions

    def fire(self, kind: str) -> None:
        for key, deadline in sorted(self.timers.items(), key=lambda kv: kv[1]):
            if key[0] == kind:
                self.now = max(self.now, deadline)
                self.timers.pop(key)
                self.apply(self.shard.on_timer(key, self.now))


def active(res: StreamsHeartbeatResult) -> dict[str, frozenset[int]]:
    assert res.tasks is not None
    return dict(res.tasks[0])


def ready_single() -> tuple[Harness, StreamsHeartbeatResult]:
    h = Harness()
    first = h.hb("A", 0)
    h.create_internal(first)
    return h, h.hb("A", first.member_epoch)


def test_2_invalid_requests() -> None:
    h = Harness()
    assert h.hb(" ", 0, group="  ").error_message == "GroupId can't be empty."
    assert h.hb("A", 0, no_topology=True).error_message == "Topology must be non-null when (re-)joining."
    assert (
        h.hb("A", 0, rebalance_timeout_ms=-1).error_message
        == "RebalanceTimeoutMs must be provided in first request."
    )
    assert h.hb("A", 3, topology=T1).error_message == "Topology can only be provided when (re-)joining."
    assert h.hb("A", -3).error_message == "MemberEpoch is -3, but must be greater than or equal to -2."
    regex = Topology(0, (Subtopology("0", (), source_topic_regex=("in.*",)),))
    assert (
        h.hb("A", 0, topology=regex).error_message
        == "Regular expressions for source topics are not supported yet."
    )
    bad = Topology(0, (Subtopology("0", ("in",), state_changelog_topics=(TopicInfo("c", 4),)),))
    res = h.hb("A", 0, topology=bad)
    assert (res.error, res.error_message) == (
        130,
        "Changelog topic c must have an undefined partition count, but it is set to 4.",
    )


def test_4_missing_source_topic_is_a_status_and_not_ready() -> None:
    h = Harness()
    h.topics = {}
    res = h.hb("A", 0)
    assert res.error == 0 and res.member_epoch == 1 and active(res) == {}
    assert res.status == ((1, "Source topics in are missing."),)
    assert h.shard.streams_group("g").state == "NotReady"
    h.topics = {"in": 4}  # the topic appears: the next heartbeat configures the topology
    res = h.hb("A", 1)
    h.create_internal(res)
    res = h.hb("A", res.member_epoch)
    assert res.status == () and active(res) == {"0": frozenset(range(4))}


def test_5_missing_changelog_is_created_then_tasks_are_assigned() -> None:
    h = Harness()
    first = h.hb("A", 0)
    assert first.member_epoch == 1 and active(first) == {}
    assert first.status == ((3, "Internal topics are missing: app-store-changelog"),)
    [t] = first.topics_to_create
    assert (t.name, t.partitions, t.replication_factor, t.configs) == (
        "app-store-changelog",
        4,
        -1,
        (("cleanup.policy", "compact"),),
    )
    h.create_internal(first)
    res = h.hb("A", 1)
    assert res.status == () and res.member_epoch == 2 and active(res) == {"0": frozenset(range(4))}
    assert h.shard.streams_group("g").state == "Stable"


def test_6_repartition_topic_gets_the_source_partition_count() -> None:
    h = Harness()
    first = h.hb("A", 0, topology=T2)
    assert {(t.name, t.partitions) for t in first.topics_to_create} == {
        ("app-rep", 4),
        ("app-store-changelog", 4),
    }
    h.create_internal(first)
    res = h.hb("A", 1)
    assert active(res) == {"0": frozenset(range(4)), "1": frozenset(range(4))}


def test_8_existing_changelog_with_other_partitions_is_incorrectly_partitioned() -> None:
    h = Harness()
    h.topics["app-store-changelog"] = 2
    res = h.hb("A", 0)
    assert res.status == (
        (2, "Existing topic app-store-changelog has different number of partitions: expected 4, found 2"),
    )


def test_11_topology_updates_are_refused() -> None:
    h, _ = ready_single()
    other = Topology(0, (Subtopology("0", ("in",)),))
    assert h.hb("B", 0, topology=other).error_message == "Topology updates are not supported yet."


def test_12_revocation_before_assignment() -> None:
    h, a = ready_single()
    epoch_a = a.member_epoch
    b = h.hb("B", 0)
    assert active(b) == {}
    a2 = h.hb("A", epoch_a)
    kept = active(a2)["0"]
    assert len(kept) == 2 and a2.member_epoch == epoch_a  # A revokes first, at its old epoch
    b2 = h.hb("B", b.member_epoch)
    assert b2.tasks is None or active(b2) == {}  # nothing until A has let go
    a3 = h.hb("A", epoch_a, owned={"0": kept})
    assert a3.member_epoch > epoch_a
    b3 = h.hb("B", b2.member_epoch)
    assert active(b3)["0"] == frozenset(range(4)) - kept
    assert h.shard.streams_group("g").state == "Stable"


def test_13_rebalance_timeout_fences_a_member_that_never_revokes() -> None:
    h, a = ready_single()
    h.hb("B", 0)
    h.hb("A", a.member_epoch)  # told to revoke
    h.fire("sg-rebalance")
    assert "A" not in h.shard.streams_group("g").members
    assert h.hb("A", a.member_epoch).error == 25  # UNKNOWN_MEMBER_ID


def test_14_15_epoch_errors() -> None:
    h, a = ready_single()
    assert h.hb("A", a.member_epoch + 1).error == 110
    assert h.hb("X", 5).error == 25
    assert h.hb("X", 5, group="nope").error == 69


def test_16_owned_tasks_are_validated_against_the_topology() -> None:
    h, a = ready_single()
    assert (
        h.hb("A", a.member_epoch, owned={"9": frozenset({0})}).error_message
        == "Subtopology 9 does not exist in the topology."
    )
    res = h.hb("A", a.member_epoch, owned={"0": frozenset({7})})
    assert res.error_message == "Task 7 for subtopology 0 is invalid. Number of tasks for this subtopology: 4"


def test_17_18_leave_and_session_timeout() -> None:
    h, _a = ready_single()
    b = h.hb("B", 0)
    assert h.hb("B", -1).member_epoch == -1
    g = h.shard.streams_group("g")
    assert set(g.members) == {"A"}
    h.fire("sg-session")
    assert not g.members and g.state == "Empty" and g.assignment_epoch == g.group_epoch
    assert b.error == 0


def test_19_static_member_leaves_with_minus_2_and_comes_back_with_its_tasks() -> None:
    h = Harness()
    first = h.hb("A", 0, instance_id="i1")
    h.create_internal(first)
    a = h.hb("A", first.member_epoch, instance_id="i1")
    g = h.shard.streams_group("g")
    epoch = g.group_epoch
    assert h.hb("A", -2, instance_id="i1").member_epoch == -2
    assert g.members["A"].member_epoch == -2
    back = h.hb("A2", 0, instance_id="i1", process_id="p-A")
    assert active(back) == active(a) and g.group_epoch == epoch and set(g.members) == {"A2"}
    assert h.hb("A3", 0, instance_id="i1").error == 111  # UNRELEASED_INSTANCE_ID
    assert h.hb("A", back.member_epoch, instance_id="i1").error == 82  # FENCED_INSTANCE_ID


def test_20_group_max_size() -> None:
    h = Harness(max_size=1)
    h.hb("A", 0)
    assert h.hb("B", 0).error == 81


def test_21_standby_replicas_on_the_other_process() -> None:
    h = Harness(num_standby_replicas=1)
    first = h.hb("A", 0)
    h.create_internal(first)
    a = h.hb("A", 1)
    b = h.hb("B", 0)
    for _ in range(4):
        a = h.hb("A", a.member_epoch, owned=h.shard.streams_group("g").members["A"].assigned.active)
        b = h.hb("B", b.member_epoch)
    g = h.shard.streams_group("g")
    ma, mb = g.members["A"].assigned, g.members["B"].assigned
    assert ma.active["0"] | mb.active["0"] == frozenset(range(4)) and not ma.active["0"] & mb.active["0"]
    assert ma.standby == mb.active and mb.standby == ma.active


def test_24_initial_delay_reports_assignment_delayed() -> None:
    h = Harness(initial_rebalance_delay_ms=3000)
    h.topics["app-store-changelog"] = 4
    res = h.hb("A", 0)
    assert (5, "Assignment delayed due to the configured initial rebalance delay.") in res.status
    assert active(res) == {}
    h.now += 3000
    res = h.hb("A", res.member_epoch)
    assert active(res) == {"0": frozenset(range(4))}


def test_23_shutdown_application_reaches_every_member() -> None:
    h, a = ready_single()
    b = h.hb("B", 0)
    h.hb("B", b.member_epoch, shutdown_application=True)
    res = h.hb("A", a.member_epoch)
    assert (
        4,
        "Streams group member B encountered a fatal error and requested a shutdown for the entire application.",
    ) in res.status


def test_30_33_delete_and_list() -> None:
    h, _a = ready_single()
    listed = h.shard.list_groups((), ("streams",))
    assert [(x.group_id, x.group_type, x.state) for x in listed] == [("g", "streams", "Stable")]
    assert h.shard.list_groups(("NotReady",), ()) == []  # Kafka matches `not_ready`
    results, _ = h.shard.delete_groups(["g"], h.now)
    assert results == [("g", 68)]  # NON_EMPTY_GROUP
    h.hb("A", -1)
    results, fx = h.shard.delete_groups(["g"], h.now)
    assert results == [("g", 0)] and h.shard.streams_group("g") is None
    assert {r.kind for r in fx.records if isinstance(r, StreamsGroupRecord) and r.value is None} >= {
        17,
        20,
        23,
    }


def test_32_other_group_types_refuse_the_id() -> None:
    h, _ = ready_single()
    from groupcoord.server.coordinator.modern.consumer.api import (
        ConsumerGroupHeartbeatRequest,
        StaticTopicImage,
    )

    fx = h.shard.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(1, "g", "c", 0, rebalance_timeout_ms=1000,
        subscribed_topic_names=("in",), topic_partitions={}), StaticTopicImage(), "t", h.now)  # fmt: skip
    assert fx.replies[0][1].error == 69


def test_35_replay_rebuilds_the_group() -> None:
    h, _a = ready_single()
    h.hb("B", 0)
    latest: dict[tuple, StreamsGroupRecord] = {}
    for r in h.records:
        if r.value is None:
            latest.pop(r.key, None)
        else:
            latest[r.key] = r
    fresh = GroupCoordinatorShard(streams_config=StreamsGroupConfig(initial_rebalance_delay_ms=0))
    for r in reversed(list(latest.values())):  # any order between keys
        fresh.replay(r)
    old, new = h.shard.streams_group("g"), fresh.streams_group("g")
    assert (new.group_epoch, new.assignment_epoch, new.topology) == (
        old.group_epoch,
        old.assignment_epoch,
        old.topology,
    )
    assert {m: (x.member_epoch, x.assigned, x.process_id) for m, x in new.members.items()} == {
        m: (x.member_epoch, x.assigned, x.process_id) for m, x in old.members.items()
    }
    assert new.target.keys() == old.target.keys()
