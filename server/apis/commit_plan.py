"""What OffsetCommit and TxnOffsetCommit share at the broker layer: sorting a request's partitions into those
the coordinator is asked to store and those answered here (unknown partition, a fenced or loading producer),
then merging the coordinator's per-partition errors back into the request's own order.

Kafka answers both requests topic by topic and partition by partition in the order they were sent, and a
partition answered here never reaches the group state machine; keeping that in one place keeps the two APIs
from drifting apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from groupcoord.protocol.columns import Columns
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator import types as m


class CommitPartitionIn(Protocol):
    """A partition of an OffsetCommit or TxnOffsetCommit request (the fields both carry)."""

    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_leader_epoch(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class CommitTopicIn(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[CommitPartitionIn]: ...


# the answer's shape in request order: (topic, ((partition, error), ...))
Answer = tuple[tuple[str, tuple[tuple[int, int], ...]], ...]


@dataclass
class CommitPlan:
    """The partitions to store (`accepted`, by topic) and the errors known so far (`errors`)."""

    topics_in: Sequence[CommitTopicIn]
    accepted: list[tuple[str, tuple[m.CommitPartition, ...]]] = field(default_factory=list)
    errors: dict[tuple[str, int], int] = field(default_factory=dict)

    def failed(self) -> m.OffsetCommitResult:
        """What to answer for the accepted partitions when the write itself failed."""
        error = int(ErrorCode.UNKNOWN_SERVER_ERROR)
        return m.OffsetCommitResult(
            tuple(
                (topic, tuple((p.partition, error) for p in parts))  # rows, also of columns: a rare path
                for topic, parts in self.accepted
            )
        )

    def answer(self, result: m.OffsetCommitResult | None) -> Answer:
        """Every partition of the request, in its order, with the coordinator's error or the one set here."""
        if result is not None and not self.errors and _aligned(self.topics_in, result.topics):
            return result.topics  # every partition went to the coordinator: its answer is in request order
        if result is not None:
            for topic, parts in result.topics:
                for partition, error in parts:
                    self.errors[(topic, partition)] = error
        return tuple(
            (
                t.name,
                tuple(
                    (p.partition_index, self.errors.get((t.name, p.partition_index), 0)) for p in t.partitions
                ),
            )
            for t in self.topics_in
        )


def plan_commit(
    topics_in: Sequence[CommitTopicIn],
    has_partition: Callable[[str, int], bool],
    *,
    error_for_all: int = 0,
) -> CommitPlan:
    """Sorts the request's partitions: with `error_for_all` set every partition gets it; otherwise a partition
    of an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION and the rest go to the coordinator."""
    plan = CommitPlan(topics_in)
    for t in topics_in:
        cols = t.partitions
        if type(cols) is Columns and not error_for_all:  # protocol/fast.py's reader: no row objects
            indexes = cols.cols[0]
            # a topic's partitions are 0..n-1: when both ends exist, every one does
            if indexes and has_partition(t.name, min(indexes)) and has_partition(t.name, max(indexes)):
                plan.accepted.append((t.name, Columns(m.CommitPartition, *cols.cols)))  # type: ignore[arg-type]
                continue
        parts = []
        for p in t.partitions:
            if error_for_all:
                plan.errors[(t.name, p.partition_index)] = error_for_all
            elif not has_partition(t.name, p.partition_index):
                plan.errors[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                parts.append(
                    m.CommitPartition(
                        partition=p.partition_index,
                        offset=p.committed_offset,
                        leader_epoch=p.committed_leader_epoch,
                        # OffsetCommit v1 carries a commit timestamp; TxnOffsetCommit has none
                        commit_timestamp=getattr(p, "commit_timestamp", -1),
                        metadata=p.committed_metadata,
                    )
                )
        if parts:
            plan.accepted.append((t.name, tuple(parts)))
    return plan


def _aligned(topics_in: Sequence[CommitTopicIn], answered: Answer) -> bool:
    """Whether the coordinator's answer has the request's topics in its order, with as many partitions each
    (then it is the whole answer as it stands)."""
    return len(answered) == len(topics_in) and all(
        name == t.name and len(parts) == len(t.partitions)
        for (name, parts), t in zip(answered, topics_in, strict=True)
    )
