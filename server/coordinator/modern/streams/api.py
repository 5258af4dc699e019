"""The streams-group machine's request, result, topology and configuration types (the handlers build and
read them). Tasks are `{subtopology id: partitions}` maps, as Kafka's `TasksTuple` keeps them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

Tasks = Mapping[str, frozenset[int]]
KeyValues = tuple[tuple[str, str], ...]
Endpoint = tuple[str, int]

#: heartbeat statuses (Kafka's `StreamsGroupHeartbeatResponse.Status`)
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5
MISSING_CLIENT_TAGS = 6


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int = 0  # 0: not enforced (always 0 for changelogs)
    replication_factor: int = 0  # 0: the broker's default
    topic_configs: KeyValues = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's source topics and repartition source topics."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    def required_topics(self) -> list[str]:
        """Every topic the topology names: sources, repartition sources and sinks, changelogs."""
        out: dict[str, None] = {}
        for s in self.subtopologies:
            out.update(dict.fromkeys(s.source_topics))
            out.update(dict.fromkeys(t.name for t in s.repartition_source_topics))
            out.update(dict.fromkeys(s.repartition_sink_topics))
            out.update(dict.fromkeys(t.name for t in s.state_changelog_topics))
        return list(out)


@dataclass(frozen=True, slots=True)
class StreamsGroupConfig:
    """Kafka's `group.streams.*` broker configs (defaults and bounds as in Kafka 4.4)."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 2**31 - 1
    num_standby_replicas: int = 0
    initial_rebalance_delay_ms: int = 3000
    assignment_interval_ms: int = 1000
    assignors: tuple[str, ...] = ("sticky",)
    rack_aware_assignment_tags: tuple[str, ...] = ()
    task_offset_interval_ms: int = 60000
    num_warmup_replicas: int = 2
    acceptable_recovery_lag: int = 10000

    def for_group(self, group_configs: Mapping[str, str]) -> StreamsGroupConfig:
        """This broker config with a group's `streams.*` group configs (Kafka's `GroupConfig`) applied."""
        ints = {
            "streams.session.timeout.ms": "session_timeout_ms",
            "streams.heartbeat.interval.ms": "heartbeat_interval_ms",
            "streams.num.standby.replicas": "num_standby_replicas",
            "streams.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
            "streams.assignment.interval.ms": "assignment_interval_ms",
            "streams.task.offset.interval.ms": "task_offset_interval_ms",
            "streams.num.warmup.replicas": "num_warmup_replicas",
            "streams.acceptable.recovery.lag": "acceptable_recovery_lag",
        }
        changes: dict[str, object] = {ints[n]: int(v) for n, v in group_configs.items() if n in ints}
        tags = group_configs.get("streams.rack.aware.assignment.tags")
        if tags is not None:
            changes["rack_aware_assignment_tags"] = tuple(t.strip() for t in tags.split(",") if t.strip())
        return dataclasses.replace(self, **changes) if changes else self  # type: ignore[arg-type]

    def assignment_configs(self) -> KeyValues:
        """What Kafka stores as `LastAssignmentConfigs`: a change of these recomputes the assignment."""
        return (
            ("num.standby.replicas", str(self.num_standby_replicas)),
            ("rack.aware.assignment.tags", ",".join(self.rack_aware_assignment_tags)),
        )


@dataclass(frozen=True, slots=True)
class TaskOffset:
    subtopology_id: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class StreamsHeartbeatRequest:
    version: int
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    process_id: str | None = None
    user_endpoint: Endpoint | None = None
    client_tags: KeyValues | None = None
    task_offsets: tuple[TaskOffset, ...] | None = None
    task_end_offsets: tuple[TaskOffset, ...] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""
    #: StreamsGroupHeartbeat's own request checks (the topology's topic names) already failed with this
    precheck: tuple[int, str] | None = None


@dataclass(frozen=True, slots=True)
class TopicToCreate:
    name: str
    partitions: int
    replication_factor: int  # -1: the broker's default
    configs: KeyValues


@dataclass(frozen=True, slots=True)
class EndpointPartitions:
    endpoint: Endpoint
    active: tuple[tuple[str, tuple[int, ...]], ...]
    standby: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class StreamsHeartbeatResult:
    error: int
    error_message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    acceptable_recovery_lag: int = 10000
    task_offset_interval_ms: int = 60000
    status: tuple[tuple[int, str], ...] = ()
    #: (active, standby, warm-up) as sent; None: unchanged (not sent)
    tasks: tuple[Tasks, Tasks, Tasks] | None = None
    endpoint_information_epoch: int = 0
    partitions_by_user_endpoint: tuple[EndpointPartitions, ...] | None = None
    #: internal topics the broker creates after answering (Kafka's `internalTopicsToBeCreated`)
    topics_to_create: tuple[TopicToCreate, ...] = field(default=())
