"""A consumer group member (Kafka's `ConsumerGroupMember`): an immutable value; every change builds a new one.

Assignments map a topic id to {partition: assignment epoch} (KIP-1251, Kafka 4.3): the target epoch at
which the partition was added to the member, kept while it stays, used to fence late offset commits.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

#: topic id -> {partition: assignment epoch}
Assignment = Mapping[uuid.UUID, Mapping[int, int]]
#: topic id -> partitions (the target assignment, the partitions a client reports owning)
Partitions = Mapping[uuid.UUID, frozenset[int]]

# MemberState, persisted as an int8 (spec §3)
STABLE = 0
UNREVOKED_PARTITIONS = 1
UNRELEASED_PARTITIONS = 2
UNKNOWN = 127
STATE_NAMES = {
    STABLE: "STABLE",
    UNREVOKED_PARTITIONS: "UNREVOKED_PARTITIONS",
    UNRELEASED_PARTITIONS: "UNRELEASED_PARTITIONS",
    UNKNOWN: "UNKNOWN",
}

#: MemberEpoch values a heartbeat uses for leaving
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """Kafka's `ClassicMemberMetadata`: what a member that speaks the classic protocol (JoinGroup/SyncGroup/
    Heartbeat) inside a consumer group keeps of its JoinGroup: its session timeout and every (name, metadata)
    protocol it offered, in its order (the first one names the protocol and the embedded version)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()  # sorted, distinct
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    #: set for a member that uses the classic protocol (online migration, spec §9); None: consumer protocol
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def replace(self, **changes: object) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """Kafka's `updateMemberEpoch`: previous := current, even when the value does not change."""
        return self.replace(previous_member_epoch=self.member_epoch, member_epoch=epoch)

    def assigned_partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        return {t: frozenset(ps) for t, ps in self.assigned.items() if ps}

    def metadata_key(self) -> tuple[object, ...]:
        """The fields of the member metadata record: a change of any of them is persisted."""
        return (
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.rebalance_timeout_ms,
            self.server_assignor,
            self.classic,
        )

    def assignment_key(self) -> tuple[object, ...]:
        """The fields of the current assignment record."""
        return (
            self.member_epoch,
            self.previous_member_epoch,
            self.state,
            self.assigned,
            self.pending_revocation,
        )

    def subscribed_topics(self, resolved: Mapping[str, frozenset[str]] | None) -> set[str]:
        """The names subscribed by name and those its regex resolved to (`resolved`: regex -> topics)."""
        out = set(self.subscribed_topic_names)
        if self.subscribed_topic_regex and resolved:
            out |= resolved.get(self.subscribed_topic_regex, frozenset())
        return out

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == epoch


def pairs(a: Assignment) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in a.items() for p in ps}
