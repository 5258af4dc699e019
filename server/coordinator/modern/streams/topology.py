"""A topology against the topics that exist: partition counts of the internal topics, the number of tasks per
subtopology, the status that keeps the group NotReady (Kafka's `InternalTopicManager.configureTopics`,
`RepartitionTopics`, `CopartitionedTopicsEnforcer`, `ChangelogTopics`; spec §4.2)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from groupcoord.server.coordinator.modern.streams.api import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    Subtopology,
    TopicToCreate,
    Topology,
)

PartitionCount = Callable[[str], int | None]


class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY: the heartbeat fails (not a status)."""


class _Status(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(detail)
        self.code, self.detail = code, detail


@dataclass(frozen=True, slots=True)
class ConfiguredSubtopology:
    subtopology_id: str
    number_of_tasks: int
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    #: (name, partitions, replication factor, configs) of the repartition sources and changelogs
    repartition_source_topics: tuple[TopicToCreate, ...]
    state_changelog_topics: tuple[TopicToCreate, ...]

    @property
    def stateful(self) -> bool:
        return bool(self.state_changelog_topics)

    def input_topics(self) -> list[str]:
        return [*self.source_topics, *(t.name for t in self.repartition_source_topics)]


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    epoch: int
    metadata_hash: int
    subtopologies: tuple[ConfiguredSubtopology, ...] | None  # None: not configured (missing sources...)
    topics_to_create: tuple[TopicToCreate, ...] = ()
    status: tuple[int, str] | None = None
    partition_counts: dict[str, int] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.status is None and self.subtopologies is not None

    def tasks(self) -> dict[str, int]:
        return {s.subtopology_id: s.number_of_tasks for s in self.subtopologies or ()}


def summarize(topics: Iterable[str]) -> str:
    names = sorted(topics)
    if len(names) <= 3:
        return ", ".join(names)
    return ", ".join(names[:3]) + f" and {len(names) - 3} additional topics"


def metadata_hash(topology: Topology, count: PartitionCount) -> int:
    """A stable 63-bit hash of (name, partition count) of every topic the topology names that exists."""
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(set(topology.required_topics())):
        n = count(name)
        if n is not None:
            h.update(f"{name}\0{n}\0".encode())
    return int.from_bytes(h.digest(), "big") >> 1


def configure(topology: Topology, count: PartitionCount, hash_value: int) -> ConfiguredTopology:
    try:
        missing = sorted({t for s in topology.subtopologies for t in s.source_topics if count(t) is None})
        if missing:
            raise _Status(MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} are missing.")
        decided = _decide(topology, count)
    except _Status as st:
        return ConfiguredTopology(topology.epoch, hash_value, None, status=(st.code, st.detail))

    def known(name: str) -> int:
        n = count(name)
        return n if n is not None else decided.get(name, 0)

    subs = []
    for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id):
        tasks = max(
            [known(t) for t in s.source_topics] + [known(t.name) for t in s.repartition_source_topics]
        )
        subs.append(
            ConfiguredSubtopology(
                s.subtopology_id,
                tasks,
                tuple(s.source_topics),
                tuple(s.repartition_sink_topics),
                tuple(_creatable(t.name, decided[t.name], t.replication_factor, t.topic_configs)
                      for t in s.repartition_source_topics),
                tuple(_creatable(t.name, decided[t.name], t.replication_factor, t.topic_configs)
                      for t in s.state_changelog_topics),
            )
        )  # fmt: skip
    to_create: dict[str, TopicToCreate] = {}
    for cs in subs:
        for t in (*cs.repartition_source_topics, *cs.state_changelog_topics):
            to_create[t.name] = t
    status = None
    try:
        for name in list(to_create):
            n = count(name)
            if n is not None:
                expected = to_create.pop(name)
                if n != expected.partitions:
                    raise _Status(
                        INCORRECTLY_PARTITIONED_TOPICS,
                        f"Existing topic {name} has different number of partitions: expected "
                        f"{expected.partitions}, found {n}",
                    )
    except _Status as st:
        return ConfiguredTopology(topology.epoch, hash_value, None, status=(st.code, st.detail))
    if to_create:
        status = (MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {summarize(to_create)}")
    creatable = tuple(to_create[n] for n in sorted(to_create))
    counts = {t: known(t) for s in topology.subtopologies for t in s.source_topics} | decided
    return ConfiguredTopology(topology.epoch, hash_value, tuple(subs), creatable, status, counts)


def _creatable(name: str, partitions: int, rf: int, configs: tuple[tuple[str, str], ...]) -> TopicToCreate:
    return TopicToCreate(name, partitions, rf if rf != 0 else -1, configs)


def _decide(topology: Topology, count: PartitionCount) -> dict[str, int]:
    """Partition counts of the internal topics: repartition topics, copartitioning, then changelogs."""
    decided: dict[str, int] = {}

    def known(name: str) -> int | None:
        n = count(name)
        return n if n is not None else decided.get(name)

    subs = topology.subtopologies
    for s in subs:
        for t in s.repartition_source_topics:
            if t.partitions > 0:
                decided[t.name] = t.partitions
    sinks = {t for s in subs for t in s.repartition_sink_topics}
    repartition = {t.name for s in subs for t in s.repartition_source_topics}
    for name in repartition - sinks - set(decided):
        raise InvalidTopology(
            f"Failed to compute number of partitions for repartition topic {name} because a repartition "
            "source topic is never used as a sink topic."
        )
    pending = [n for n in sorted(repartition) if known(n) is None]
    while pending:
        progress = False
        for name in pending:
            counts = []
            for s in subs:
                if name not in s.repartition_sink_topics:
                    continue
                for src in [*s.source_topics, *(t.name for t in s.repartition_source_topics)]:
                    n = known(src)
                    if n is not None:
                        counts.append(n)
            if counts:
                decided[name] = max(counts)
                progress = True
        pending = [n for n in pending if known(n) is None]
        if pending and not progress:
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics. There may be loops in "
                "the topology that cannot be resolved."
            )
    for name in repartition:  # an existing repartition topic keeps its own count
        decided.setdefault(name, known(name) or 0)
    fixed = {t.name for s in subs for t in s.repartition_source_topics if t.partitions != 0}
    for s in subs:
        for group in s.copartition_groups:
            _enforce(s, group, known, decided, fixed)
    for s in subs:
        n = max(
            [known(t) or 0 for t in s.source_topics]
            + [known(t.name) or 0 for t in s.repartition_source_topics]
        )
        for t in s.state_changelog_topics:
            decided[t.name] = n
    return decided


def _enforce(
    s: Subtopology,
    group: object,
    known: Callable[[str], int | None],
    decided: dict[str, int],
    fixed: set[str],
) -> None:
    """Kafka's `CopartitionedTopicsEnforcer.enforce` for one copartition group."""
    src = [s.source_topics[i] for i in getattr(group, "source_topics", ())]
    rep = [s.repartition_source_topics[i].name for i in getattr(group, "repartition_source_topics", ())]
    if not src:
        counts = {t: known(t) or 0 for t in rep if t in fixed}
        if len(set(counts.values())) > 1:
            raise _Status(INCORRECTLY_PARTITIONED_TOPICS, _mismatch(counts))
        target = next(iter(counts.values()), None) or max((known(t) or 0 for t in rep), default=0)
        if target == 0:
            raise InvalidTopology("All topics in the copartition group had undefined partition number")
    else:
        counts = {t: known(t) or 0 for t in src}
        if len(set(counts.values())) > 1:
            raise _Status(INCORRECTLY_PARTITIONED_TOPICS, _mismatch(counts))
        target = next(iter(counts.values()))
    for t in rep:
        if t in fixed and (known(t) or 0) != target:
            raise _Status(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{known(t)}] of repartition topic [{t}] doesn't match number of "
                f"partitions [{target}] of the source topic.",
            )
        decided[t] = target


def _mismatch(counts: dict[str, int]) -> str:
    inner = ", ".join(f"{t}={n}" for t, n in sorted(counts.items()))
    return f"Following topics do not have the same number of partitions: [{{{inner}}}]"
