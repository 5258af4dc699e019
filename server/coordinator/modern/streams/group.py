"""A streams group and its members (Kafka's `StreamsGroup`, `StreamsGroupMember`; spec §3, §7)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from groupcoord.server.coordinator.modern.streams.api import Endpoint, KeyValues, TaskOffset, Tasks, Topology
from groupcoord.server.coordinator.modern.streams.topology import ConfiguredTopology

STABLE = 1
UNREVOKED_TASKS = 2
UNRELEASED_TASKS = 3
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE_STATE, DEAD = (
    "Empty",
    "NotReady",
    "Assigning",
    "Reconciling",
    "Stable",
    "Dead",
)
#: ListGroups' state filter names
LISTED_STATES = {
    EMPTY: "empty",
    NOT_READY: "not_ready",
    ASSIGNING: "assigning",
    RECONCILING: "reconciling",
    STABLE_STATE: "stable",
}

NO_TASKS: dict[str, frozenset[int]] = {}


def tasks_union(a: Tasks, b: Tasks) -> dict[str, frozenset[int]]:
    out = {s: frozenset(ps) for s, ps in a.items() if ps}
    for s, ps in b.items():
        if ps:
            out[s] = out.get(s, frozenset()) | ps
    return out


def tasks_minus(a: Tasks, b: Tasks) -> dict[str, frozenset[int]]:
    out = {}
    for s, ps in a.items():
        rest = ps - b.get(s, frozenset())
        if rest:
            out[s] = frozenset(rest)
    return out


def tasks_intersect(a: Tasks, b: Tasks) -> dict[str, frozenset[int]]:
    out = {}
    for s, ps in a.items():
        both = ps & b.get(s, frozenset())
        if both:
            out[s] = frozenset(both)
    return out


def tasks_equal(a: Tasks, b: Tasks) -> bool:
    return {s: ps for s, ps in a.items() if ps} == {s: ps for s, ps in b.items() if ps}


def task_set(t: Tasks) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in t.items() for p in ps}


@dataclass(frozen=True, slots=True)
class TaskTuple:
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return (
            not any(self.active.values()) and not any(self.standby.values()) and not any(self.warmup.values())
        )

    def same(self, other: TaskTuple) -> bool:
        return (
            tasks_equal(self.active, other.active)
            and tasks_equal(self.standby, other.standby)
            and tasks_equal(self.warmup, other.warmup)
        )


EMPTY_TASKS = TaskTuple()


@dataclass(frozen=True, slots=True)
class StreamsGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: Endpoint | None = None
    client_tags: KeyValues = ()
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = STABLE
    assigned: TaskTuple = EMPTY_TASKS
    pending_revocation: TaskTuple = EMPTY_TASKS
    #: active task -> the assignment epoch it was given in (offset-commit validation)
    active_epochs: dict[tuple[str, int], int] = field(default_factory=dict)

    def replace(self, **changes: object) -> StreamsGroupMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def metadata_key(self) -> tuple[object, ...]:
        return (
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.rebalance_timeout_ms,
            self.topology_epoch,
            self.process_id,
            self.user_endpoint,
            self.client_tags,
        )

    def epoch_relevant_key(self) -> tuple[object, ...]:
        return (self.topology_epoch, self.rack_id, self.client_tags, self.process_id)


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: KeyValues = ()
    assignment_epoch: int = 0
    assignment_timestamp: int = 0
    topology: Topology | None = None
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    target: dict[str, TaskTuple] = field(default_factory=dict)
    # ---- in memory only (as in Kafka)
    configured: ConfiguredTopology | None = None
    endpoint_epoch: int = 0
    shutdown_requester: str | None = None
    #: the initial rebalance delay runs until this time (0: none)
    initial_delay_until: int = 0
    task_offsets: dict[str, tuple[TaskOffset, ...]] = field(default_factory=dict)
    task_end_offsets: dict[str, tuple[TaskOffset, ...]] = field(default_factory=dict)

    def static_member(self, instance_id: str | None) -> StreamsGroupMember | None:
        if instance_id is None:
            return None
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        for m in self.members.values():
            if m.state != STABLE or m.member_epoch != self.assignment_epoch:
                return RECONCILING
        return STABLE_STATE

    def source_topics(self) -> set[str]:
        if self.topology is None:
            return set()
        return {t for s in self.topology.subtopologies for t in s.source_topics}

    def validate_offset_commit(
        self,
        member_id: str,
        member_epoch: int,
        transactional: bool,
        api_version: int,
        partitions: list[tuple[str, int]],
    ) -> int:
        """Kafka's `StreamsGroup.validateOffsetCommit` (spec §12.3): NONE (0) or the error of the request."""
        if member_epoch < 0 and not self.members:
            return 0
        if transactional and member_epoch == -1 and member_id == "":
            return 0
        m = self.members.get(member_id)
        if m is None:
            return 25  # UNKNOWN_MEMBER_ID
        if not transactional and api_version < 9:
            return 35  # UNSUPPORTED_VERSION
        if member_epoch == m.member_epoch:
            return 0
        if member_epoch > m.member_epoch:
            return 113  # STALE_MEMBER_EPOCH
        subs = (
            {}
            if self.topology is None
            else {
                t: s.subtopology_id
                for s in self.topology.subtopologies
                for t in (*s.source_topics, *(r.name for r in s.repartition_source_topics))
            }
        )
        for topic, p in partitions:
            sub = subs.get(topic)
            owned = sub is not None and (
                p in m.assigned.active.get(sub, ()) or p in m.pending_revocation.active.get(sub, ())
            )
            if not owned or member_epoch < m.active_epochs.get((sub or "", p), 0):
                return 113
        return 0  # fmt: skip

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int:
        if member_id is None and member_epoch < 0:
            return 0
        m = self.members.get(member_id or "")
        if m is None:
            return 25
        if member_epoch != m.member_epoch:
            return 113
        return 0
