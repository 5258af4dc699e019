"""Plain data model of the pure assignment core.

Everything here is immutable and free of I/O so that strategies can be tested with hypothesis and run
identically in any client adapter. Partition ids are explicit (not just a count) because that is what
cluster metadata reports, but topics are expected to carry partitions ``0..n-1`` as Kafka creates them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from groupcoord.assignors.ordering import java_key


class AssignmentError(ValueError):
    """Base class for inputs no strategy can satisfy (raised, never silently papered over)."""


class InvalidInputError(AssignmentError):
    """Malformed input: negative or duplicate partition ids, rack lists that do not match, bad config."""


class CopartitionMismatchError(AssignmentError):
    """Topics configured as co-partitioned have different partition counts, so partition p cannot align."""


class NotEnoughMembersError(AssignmentError):
    """A topic needs more distinct members than subscribe to it (replicated assignment with k too large)."""


class TopicPartition(NamedTuple):
    """A (topic, partition) pair; a tuple so that sorting is by topic, then partition, like Java's."""

    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic as the group leader sees it in cluster metadata.

    ``replica_racks`` maps a partition to the racks of its replicas (from Metadata's broker racks); a
    partition absent from it has no known rack. It only matters to rack-aware strategies.
    """

    name: str
    partitions: tuple[int, ...]
    replica_racks: Mapping[int, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parts = tuple(sorted(self.partitions))
        if any(p < 0 for p in parts):
            raise InvalidInputError(f"topic {self.name!r}: negative partition id in {parts[:5]}")
        if len(set(parts)) != len(parts):
            raise InvalidInputError(f"topic {self.name!r}: duplicate partition ids")
        unknown = set(self.replica_racks) - set(parts)
        if unknown:
            raise InvalidInputError(
                f"topic {self.name!r}: racks given for unknown partitions {sorted(unknown)[:5]}"
            )
        object.__setattr__(self, "partitions", parts)
        object.__setattr__(
            self, "replica_racks", {p: frozenset(r) for p, r in self.replica_racks.items() if r}
        )

    @classmethod
    def of(cls, name: str, count: int, racks: Iterable[Iterable[str]] | None = None) -> TopicMetadata:
        """Topic with partitions ``0..count-1``; ``racks[i]`` lists the replica racks of partition i."""
        if count < 0:
            raise InvalidInputError(f"topic {name!r}: negative partition count {count}")
        rack_map: dict[int, frozenset[str]] = {}
        if racks is not None:
            rack_list = [frozenset(r) for r in racks]
            if len(rack_list) != count:
                raise InvalidInputError(f"topic {name!r}: {len(rack_list)} rack sets for {count} partitions")
            rack_map = dict(enumerate(rack_list))
        return cls(name, tuple(range(count)), rack_map)

    def racks_of(self, partition: int) -> frozenset[str]:
        return self.replica_racks.get(partition, frozenset())


@dataclass(frozen=True, slots=True)
class Member:
    """One group member's subscription as decoded from ConsumerProtocolSubscription v0..v3.

    ``generation`` is the generation at which ``owned`` was assigned (-1: unknown, e.g. v0/v1 senders).
    ``instance_id`` is the group.instance.id; Java sorts static members before dynamic ones by it.
    ``labels`` are free-form key/values a member advertised in its user data (e.g. a rack).
    """

    member_id: str
    topics: frozenset[str]
    user_data: bytes | None = None
    owned: tuple[TopicPartition, ...] = ()
    generation: int = -1
    rack: str | None = None
    instance_id: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", frozenset(self.topics))
        object.__setattr__(self, "owned", tuple(TopicPartition(t, p) for t, p in self.owned))
        if self.rack == "":
            # Java treats an empty rack id as "no rack"; librdkafka always sends "".
            object.__setattr__(self, "rack", None)


@dataclass(frozen=True, slots=True)
class GroupInput:
    """Everything a strategy may look at: the topics' metadata and the members' subscriptions.

    Subscribed topics missing from ``topics`` are skipped (not yet created / no metadata), as Java does.
    """

    topics: Mapping[str, TopicMetadata]
    members: Mapping[str, Member]

    def __post_init__(self) -> None:
        for key, member in self.members.items():
            if key != member.member_id:
                raise InvalidInputError(f"member key {key!r} differs from member_id {member.member_id!r}")
        for key, topic in self.topics.items():
            if key != topic.name:
                raise InvalidInputError(f"topic key {key!r} differs from topic name {topic.name!r}")

    @classmethod
    def build(cls, topics: Iterable[TopicMetadata], members: Iterable[Member]) -> GroupInput:
        topic_map = {t.name: t for t in topics}
        member_map: dict[str, Member] = {}
        for m in members:
            if m.member_id in member_map:
                raise InvalidInputError(f"duplicate member id {m.member_id!r}")
            member_map[m.member_id] = m
        return cls(topic_map, member_map)

    def subscribed_topics(self) -> list[str]:
        """Sorted names of topics that some member subscribes to and that have metadata."""
        wanted: set[str] = set()
        for m in self.members.values():
            wanted.update(m.topics)
        return sorted((t for t in wanted if t in self.topics and self.topics[t].partitions), key=java_key)


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """What one member gets: sorted partitions, plus opaque user data for its ``on_assignment``."""

    partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes | None = None

    def by_topic(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for tp in self.partitions:
            out.setdefault(tp.topic, []).append(tp.partition)
        return out


GroupAssignment = dict[str, MemberAssignment]


def finish(raw: Mapping[str, Iterable[TopicPartition]], members: Iterable[str]) -> GroupAssignment:
    """Turn per-member partition collections into sorted MemberAssignments; every member gets an entry."""
    out: GroupAssignment = {}
    for member_id in members:
        out[member_id] = MemberAssignment(tuple(sorted(raw.get(member_id, ()))))
    return out
