"""What a server-side assignor sees and returns (Kafka's `GroupSpec`, `MemberSubscriptionAndAssignment`,
`SubscribedTopicDescriber` and `GroupAssignment`, reduced to plain immutable values)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

#: one member's partitions: topic id -> partition numbers
MemberAssignment = Mapping[uuid.UUID, frozenset[int]]


class PartitionAssignorError(Exception):
    """The assignor could not assign (a subscribed topic missing from metadata, partitions left over); the
    heartbeat that triggered it gets UNKNOWN_SERVER_ERROR, as Kafka's `PartitionAssignorException`."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed: frozenset[uuid.UUID]  # topic ids that exist in metadata
    current: MemberAssignment  # the member's current *target* assignment


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The members (iterated in member id order) and whether every member subscribes to the same topics."""

    members: tuple[MemberSpec, ...]
    homogeneous: bool
    partitions: Mapping[uuid.UUID, int] = field(default_factory=dict)  # topic id -> count, -1 missing

    def partition_count(self, topic_id: uuid.UUID) -> int:
        return self.partitions.get(topic_id, -1)


class ServerAssignor(Protocol):
    name: str

    def assign(self, group: GroupSpec) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
        """The new target assignment of every member of `group` (empty topics left out)."""
        ...


def ordered(topics: frozenset[uuid.UUID] | set[uuid.UUID]) -> list[uuid.UUID]:
    """Topic ids in the one order every assignor iterates them (their string form, as Kafka prints them)."""
    return sorted(topics, key=str)


def counts_of(group: GroupSpec, topics: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    """Partition counts of `topics`; a topic missing from metadata fails the assignment (Kafka throws)."""
    out: dict[uuid.UUID, int] = {}
    for t in topics:
        n = group.partition_count(t)
        if n < 0:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {t} which doesn't exist in the topic metadata."
            )
        out[t] = n
    return out
