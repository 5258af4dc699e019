"""The consumer-group machine's request, result and configuration types (the handlers build and read them),
and the `TopicImage` through which it sees topics: names, ids and partition counts, never the log itself."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

Partitions = Mapping[uuid.UUID, frozenset[int]]

#: Kafka's `ConsumerGroupMigrationPolicy` values
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class TopicImage(Protocol):
    """The topics as the coordinator sees them now (Kafka's `MetadataImage`)."""

    def topic_by_name(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count) of a topic that exists, else None."""
        ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...

    def topic_names(self) -> frozenset[str]:
        """Every topic a regex subscription may resolve to (internal ones included, as in Kafka)."""
        ...


@dataclass(frozen=True, slots=True)
class StaticTopicImage:
    """A fixed `TopicImage` (tests; a snapshot)."""

    topics: Mapping[str, tuple[uuid.UUID, int]] = field(default_factory=dict)

    def topic_by_name(self, name: str) -> tuple[uuid.UUID, int] | None:
        return self.topics.get(name)

    def topic_names(self) -> frozenset[str]:
        return frozenset(self.topics)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for name, (tid, _) in self.topics.items():
            if tid == topic_id:
                return name
        return None


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """Kafka's `group.consumer.*` broker configs (defaults as in Kafka 4.3)."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")
    assignment_interval_ms: int = 1000
    #: `group.consumer.migration.policy` (lower case): disabled, upgrade, downgrade or bidirectional
    migration_policy: str = "bidirectional"

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")

    def for_group(self, group_configs: Mapping[str, str]) -> ConsumerGroupConfig:
        """This broker config with a group's `consumer.*` group configs (Kafka's `GroupConfig`) applied."""
        fields = {
            "consumer.session.timeout.ms": "session_timeout_ms",
            "consumer.heartbeat.interval.ms": "heartbeat_interval_ms",
            "consumer.assignment.interval.ms": "assignment_interval_ms",
        }
        changes = {fields[n]: int(v) for n, v in group_configs.items() if n in fields}
        return dataclasses.replace(self, **changes) if changes else self  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    version: int
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: Partitions | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResult:
    error: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None  # None: unchanged (not sent)


@dataclass(frozen=True, slots=True)
class DescribedTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopicPartitions, ...]
    target_assignment: tuple[DescribedTopicPartitions, ...]
    member_type: int


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    error: int
    error_message: str | None
    group_id: str
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()
