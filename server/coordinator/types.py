"""Request, result and effect types of the group state machine.

The dispatch layer normalises every wire version into these requests; the state machine answers with these
results and with `Effects`, a small bag of side effects (replies to parked requests, timers, records to
persist, journal events) that the actor applies. Keeping the machine free of I/O is what makes it testable
with a fake clock.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from groupcoord.server.coordinator.records import Record

# ---------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    version: int
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    reason: str | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    error: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    version: int
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    version: int
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    version: int
    group_id: str
    members: tuple[LeaveMember, ...]


@dataclass(frozen=True, slots=True)
class LeaveGroupResult:
    error: int
    members: tuple[
        tuple[str, str | None, int], ...
    ]  # (member_id, group_instance_id, error) per request entry


@dataclass(frozen=True, slots=True)
class CommitPartition:
    partition: int
    offset: int
    leader_epoch: int = -1
    commit_timestamp: int = -1
    metadata: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    version: int
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    topics: tuple[tuple[str, tuple[CommitPartition, ...]], ...]


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    """TxnOffsetCommit normalised: v0-v2 carry no member (generation -1, member "")."""

    version: int
    group_id: str
    producer_id: int
    generation_id: int
    member_id: str
    group_instance_id: str | None
    topics: tuple[tuple[str, tuple[CommitPartition, ...]], ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitResult:
    topics: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (topic, ((partition, error), ...))


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    version: int
    group_id: str
    topics: tuple[tuple[str, tuple[int, ...]], ...] | None  # None: every committed partition
    require_stable: bool = False
    member_id: str | None = None  # v9+: checked against a consumer group's member (KIP-848)
    member_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: int


@dataclass(frozen=True, slots=True)
class OffsetFetchResult:
    error: int
    topics: tuple[tuple[str, tuple[FetchedPartition, ...]], ...]


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error: int
    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...]
    #: why an empty Dead answer is empty ("Group g not found." / "Group g is not a classic group."): what
    #: DescribeGroups v6+ returns with GROUP_ID_NOT_FOUND (KIP-1043); None for a described classic group
    not_found: str | None = None


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    max_size: int = 2**31 - 1
    new_member_join_timeout_ms: int = 300000
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offset_metadata_max_bytes: int = 4096


# ----------------------------------------------------------------------------------------------- effects


class ScheduleTimer:
    """Arm (or re-arm: the key replaces any timer with the same key) a timer at an absolute deadline."""

    __slots__ = ("deadline_ms", "key")

    def __init__(self, key: tuple[Any, ...], deadline_ms: int) -> None:
        self.key = key
        self.deadline_ms = deadline_ms

    def __repr__(self) -> str:
        return f"ScheduleTimer({self.key!r}, {self.deadline_ms})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScheduleTimer) and (self.key, self.deadline_ms) == (
            other.key,
            other.deadline_ms,
        )

    __hash__ = None  # type: ignore[assignment]


class CancelTimer:
    """Disarm the timer with this key, if any."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[Any, ...]) -> None:
        self.key = key

    def __repr__(self) -> str:
        return f"CancelTimer({self.key!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CancelTimer) and self.key == other.key

    __hash__ = None  # type: ignore[assignment]


TimerOp = ScheduleTimer | CancelTimer
_EMPTY: tuple[()] = ()


class Effects:
    """Side effects of one state-machine step, applied by the actor in this order:

    1. `timers` and `events` immediately; 2. if `records` is non-empty, await the durable write;
    3. `after_persist(ok, now_ms)` if set (its Effects are applied the same way); 4. deliver `replies`.

    The four collections start as one shared empty tuple and become lists on first use, so a step that does
    nothing allocates nothing but this object (heartbeats are the hot path).
    """

    __slots__ = ("after_persist", "events", "records", "replies", "timers")

    def __init__(self) -> None:
        self.replies: list[tuple[Hashable, Any]] | tuple[()] = _EMPTY
        self.timers: list[TimerOp] | tuple[()] = _EMPTY
        self.records: list[Record] | tuple[()] = _EMPTY
        self.events: list[dict[str, Any]] | tuple[()] = _EMPTY
        self.after_persist: Callable[[bool, int], Effects] | None = None

    def reply(self, token: Hashable, result: Any) -> None:
        if self.replies is _EMPTY:
            self.replies = []
        self.replies.append((token, result))  # type: ignore[union-attr]

    def timer(self, op: TimerOp) -> None:
        if self.timers is _EMPTY:
            self.timers = []
        self.timers.append(op)  # type: ignore[union-attr]

    def record(self, rec: Record) -> None:
        if self.records is _EMPTY:
            self.records = []
        self.records.append(rec)  # type: ignore[union-attr]

    def record_all(self, recs: Iterable[Record]) -> None:
        """Many records at once (an OffsetCommit's partitions, issue 39)."""
        if self.records is _EMPTY:
            self.records = []
        self.records.extend(recs)  # type: ignore[union-attr]

    def event(self, ev: dict[str, Any]) -> None:
        if self.events is _EMPTY:
            self.events = []
        self.events.append(ev)  # type: ignore[union-attr]

    def __bool__(self) -> bool:
        return bool(self.replies or self.timers or self.records or self.events or self.after_persist)

    def __repr__(self) -> str:
        return (
            f"Effects(replies={self.replies!r}, timers={self.timers!r}, records={len(self.records)}, "
            f"events={[e['event'] for e in self.events]}, after_persist={self.after_persist is not None})"
        )
