"""A share group and its members (Kafka's `ShareGroup` / `ShareGroupMember`), plus the request and result
types of ShareGroupHeartbeat and ShareGroupDescribe as the handlers hand them to the coordinator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from groupcoord.server.coordinator.records import ShareGroupValue, ShareMemberValue

EMPTY = "Empty"
STABLE = "Stable"

#: topic id (hex) -> partitions
TopicPartitions = dict[str, set[int]]


def frozen_assignment(a: Mapping[str, set[int]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """An assignment in a stable, comparable, storable form."""
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(a.items()) if ps)


@dataclass(slots=True)
class ShareGroupMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assignment: TopicPartitions = field(default_factory=dict)

    def value(self) -> ShareMemberValue:
        return ShareMemberValue(
            self.member_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.subscribed_topic_names,
            self.member_epoch,
            self.previous_member_epoch,
            frozen_assignment(self.assignment),
        )

    @classmethod
    def of(cls, v: ShareMemberValue) -> ShareGroupMember:
        return cls(
            v.member_id,
            v.rack_id,
            v.client_id,
            v.client_host,
            v.subscribed_topic_names,
            v.member_epoch,
            v.previous_member_epoch,
            {t: set(ps) for t, ps in v.assignment},
        )


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    #: hash of the subscribed topics' (name, id, partition count): a change bumps the group epoch
    metadata_hash: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    #: member id -> its target assignment at `assignment_epoch`
    target: dict[str, TopicPartitions] = field(default_factory=dict)
    #: the last topic metadata seen: name -> (topic id hex, partition count)
    topics: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: share partitions whose state was initialized (persisted for the offsets admin APIs to come)
    initialized: dict[str, set[int]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_names(self) -> set[str]:
        return {n for m in self.members.values() for n in m.subscribed_topic_names}

    def value(self) -> ShareGroupValue:
        return ShareGroupValue(
            self.group_epoch,
            self.assignment_epoch,
            self.metadata_hash,
            tuple(m.value() for m in self.members.values()),
            frozen_assignment(self.initialized),
        )

    @classmethod
    def of(cls, group_id: str, v: ShareGroupValue) -> ShareGroup:
        g = cls(group_id, v.group_epoch, v.assignment_epoch, v.metadata_hash)
        for mv in v.members:
            m = ShareGroupMember.of(mv)
            g.members[m.member_id] = m
            # the target is rebuilt from the members' assignments; a member behind it catches up on its
            # next heartbeat when the epoch next moves (a restart re-runs the assignor at the next bump)
            g.target[m.member_id] = {t: set(ps) for t, ps in m.assignment.items()}
        g.initialized = {t: set(ps) for t, ps in v.initialized}
        return g


# ------------------------------------------------------------------------------------ requests, results


@dataclass(frozen=True, slots=True)
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str = ""
    client_host: str = ""
    #: topic name -> (topic id hex, partition count) for every topic the group or this request subscribes to
    #: that exists (the handler resolves them; Kafka reads its metadata image)
    topics: Mapping[str, tuple[str, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    error: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: None: unchanged since the last response (Kafka's null Assignment)
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None = None


@dataclass(frozen=True, slots=True)
class DescribedShareMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class DescribedShareGroup:
    group_id: str
    error: int
    error_message: str | None = None
    state: str = ""  # an error answer's, as Kafka 4.4's: no state, no assignor
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedShareMember, ...] = ()
