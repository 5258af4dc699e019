"""Committed offsets: OffsetCommit, OffsetFetch (with RequireStable), retention and expiry, and the offset
half of deletion and loading (Kafka's `OffsetMetadataManager`).

Commits are validated against the group manager's groups (generation, member, fencing) but the offsets and
the count of commits still being written (`inflight`, what RequireStable reports as UNSTABLE_OFFSET_COMMIT)
live here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.commit_checks import validate_offset_commit
from groupcoord.server.coordinator.consumer import CONSUMER
from groupcoord.server.coordinator.context import NONE, PERSIST_ERROR, OperationContext
from groupcoord.server.coordinator.group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup
from groupcoord.server.coordinator.group_manager import GroupMetadataManager
from groupcoord.server.coordinator.records import OffsetRecord, OffsetValue
from groupcoord.server.coordinator.registry import GroupRegistry
from groupcoord.server.coordinator.txn_offsets import TxnOffsets
from groupcoord.server.coordinator.types import (
    CommitPartition,
    Effects,
    FetchedPartition,
    OffsetCommitRequest,
    OffsetCommitResult,
    OffsetFetchRequest,
    OffsetFetchResult,
)

E = ErrorCode


class _EveryTopic(frozenset[str]):
    """Contains every topic name."""

    def __contains__(self, _: object) -> bool:
        return True


_EVERY_TOPIC = _EveryTopic()


class OffsetMetadataManager:
    """Every committed offset of the shard, by group then (topic, partition)."""

    def __init__(
        self, ctx: OperationContext, group_manager: GroupMetadataManager, registry: GroupRegistry
    ) -> None:
        self.ctx = ctx
        self.group_manager = group_manager
        #: which type owns a group id: offsets of a group of no type get a classic "simple" group
        self.registry = registry
        self.offsets: dict[str, dict[tuple[str, int], OffsetValue]] = {}
        self.inflight: dict[
            tuple[str, str, int], int
        ] = {}  # unpersisted commits per partition (RequireStable)
        #: transactional offsets waiting for their transaction's marker (also UNSTABLE with RequireStable)
        self.txn = TxnOffsets(ctx, group_manager, self.offsets, registry)
        #: offsets OffsetDelete removed since start: Kafka's offset-deletion-count (the tombstones written)
        self.deleted_count = 0

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetValue]:
        return dict(self.offsets.get(group_id, {}))

    # ================================================================================ OffsetCommit

    def commit_offsets(
        self, req: OffsetCommitRequest, token: Hashable, now_ms: int, checked: int | None = None
    ) -> Effects:
        """`checked`: the commit was already validated by another kind of group (a consumer group's
        `validate_offset_commit`), with this outcome; else the classic checks run."""
        fx = self.ctx.begin(now_ms)
        err = validate_offset_commit(self.ctx, self.group_manager, req) if checked is None else checked
        if err:
            fx.reply(token, _commit_result(req, lambda t, p: err))
            return fx
        max_meta = self.ctx.config.offset_metadata_max_bytes
        retention = req.retention_time_ms if 2 <= req.version <= 4 and req.retention_time_ms != -1 else None
        pending: dict[tuple[str, int], OffsetValue] = {}
        for topic, parts in req.topics:
            for p in parts:
                meta = p.metadata if p.metadata is not None else ""
                if len(meta) > max_meta:
                    continue
                commit_ts = p.commit_timestamp if req.version == 1 and p.commit_timestamp != -1 else now_ms
                value = OffsetValue(
                    offset=p.offset,
                    leader_epoch=p.leader_epoch,
                    metadata=meta,
                    commit_timestamp=commit_ts,
                    expire_timestamp=now_ms + retention if retention is not None else -1,
                )
                pending[(topic, p.partition)] = value
                fx.record(OffsetRecord(req.group_id, topic, p.partition, value))

        def error_of(topic: str, p: CommitPartition, ok: bool) -> int:
            meta = p.metadata if p.metadata is not None else ""
            if len(meta) > max_meta:
                return int(E.OFFSET_METADATA_TOO_LARGE)
            return NONE if ok else PERSIST_ERROR

        if not pending:
            fx.reply(token, _commit_result(req, lambda t, p: error_of(t, p, True)))
            return fx
        gid = req.group_id
        for topic, partition in pending:
            k = (gid, topic, partition)
            self.inflight[k] = self.inflight.get(k, 0) + 1

        def after(ok: bool, now: int) -> Effects:
            fx2 = self.ctx.begin(now)
            for topic, partition in pending:
                k = (gid, topic, partition)
                n = self.inflight.get(k, 0) - 1
                if n > 0:
                    self.inflight[k] = n
                else:
                    self.inflight.pop(k, None)
            if ok:
                if not self.registry.holds_offsets(gid):
                    # deleted meanwhile: recreated, as a replay would
                    self.group_manager.add_simple_group(gid, now)
                self.offsets.setdefault(gid, {}).update(pending)
            fx2.reply(token, _commit_result(req, lambda t, p: error_of(t, p, ok)))
            return fx2

        fx.after_persist = after
        return fx

    # ================================================================================= OffsetFetch

    def fetch_offsets(self, req: OffsetFetchRequest, now_ms: int) -> OffsetFetchResult:
        offsets = self.offsets.get(req.group_id, {})
        gid = req.group_id
        if req.topics is None:
            by_topic: dict[str, list[FetchedPartition]] = {}
            for (topic, partition), v in offsets.items():
                by_topic.setdefault(topic, []).append(
                    self._fetched(gid, topic, partition, v, req.require_stable)
                )
            return OffsetFetchResult(
                NONE, tuple((t, tuple(sorted(ps, key=lambda p: p.partition))) for t, ps in by_topic.items())
            )
        topics = tuple(
            (
                topic,
                tuple(
                    self._fetched(gid, topic, p, offsets.get((topic, p)), req.require_stable)
                    for p in partitions
                ),
            )
            for topic, partitions in req.topics
        )
        return OffsetFetchResult(NONE, topics)

    def _fetched(
        self, gid: str, topic: str, partition: int, v: OffsetValue | None, require_stable: bool
    ) -> FetchedPartition:
        if require_stable and (
            (gid, topic, partition) in self.inflight or self.txn.is_pending(gid, topic, partition)
        ):
            return FetchedPartition(partition, -1, -1, "", int(E.UNSTABLE_OFFSET_COMMIT))
        if v is None:
            return FetchedPartition(partition, -1, -1, "", NONE)
        return FetchedPartition(partition, v.offset, v.leader_epoch, v.metadata, NONE)

    # ================================================================================ OffsetDelete

    def delete_offsets(
        self, group_id: str, topics: Iterable[tuple[str, Iterable[int]]]
    ) -> tuple[int, tuple[tuple[str, tuple[tuple[int, int], ...]], ...]]:
        """Kafka's `OffsetMetadataManager.deleteOffsets` for a classic group: (top-level error, per-topic
        partition errors). An unknown or Dead group is GROUP_ID_NOT_FOUND; a non-Empty group not using the
        consumer protocol is NON_EMPTY_GROUP; partitions of a topic the live consumer group subscribes to get
        GROUP_SUBSCRIBED_TO_TOPIC; every other partition gets NONE, with a tombstone when it had an offset.
        The offsets leave memory now, as Kafka replays its tombstones at once; the caller answers after the
        write."""
        g = self.group_manager.group(group_id)
        if g is None or g.state == DEAD:
            return int(E.GROUP_ID_NOT_FOUND), ()
        if g.state in (STABLE, PREPARING, COMPLETING) and g.protocol_type != CONSUMER:
            return int(E.NON_EMPTY_GROUP), ()
        subscribed: Collection[str] = g.subscribed_topics or ()
        if g.subscribed_topics is None and g.protocol_type == CONSUMER:
            # Kafka's `ClassicGroup.isSubscribedToTopic`: a consumer group whose members' subscriptions do not
            # parse is taken to subscribe to every topic (asked of Kafka 4.4: tests/oracle/test_offsets_admin.py)
            subscribed = _EVERY_TOPIC
        return NONE, self.delete_unsubscribed(group_id, topics, subscribed)

    def delete_unsubscribed(
        self, group_id: str, topics: Iterable[tuple[str, Iterable[int]]], subscribed_topics: Collection[str]
    ) -> tuple[tuple[str, tuple[tuple[int, int], ...]], ...]:
        """OffsetDelete's per-partition part, for any kind of group: a topic the group subscribes to gets
        GROUP_SUBSCRIBED_TO_TOPIC, every other partition NONE (with a tombstone when it had an offset)."""
        offsets = self.offsets.get(group_id, {})
        out = []
        for topic, partitions in topics:
            subscribed = topic in subscribed_topics
            errors = []
            for p in partitions:
                if subscribed:
                    errors.append((p, int(E.GROUP_SUBSCRIBED_TO_TOPIC)))
                    continue
                if offsets.pop((topic, p), None) is not None:
                    self.ctx.fx.record(OffsetRecord(group_id, topic, p, None))
                    self.deleted_count += 1
                errors.append((p, NONE))
            out.append((topic, tuple(errors)))
        return tuple(out)

    # ========================================================================= retention and expiry

    def cleanup_expired_offsets(self, g: ClassicGroup, now_ms: int) -> bool:
        """Spec §6.6: tombstone this group's expired offsets; True when none (and no commit in flight) is
        left, so that the shard may delete the group if it is Empty (Kafka's `cleanupExpiredOffsets`)."""
        gid = g.group_id
        offsets = self.offsets.get(gid, {})
        base: Callable[[OffsetValue], int] | None
        subscribed: set[str] = set()
        if g.protocol_type is not None and g.state == EMPTY:
            state_ts = g.current_state_timestamp

            def base(v: OffsetValue, ts: int | None = state_ts) -> int:
                return ts if ts is not None else v.commit_timestamp
        elif g.protocol_type == CONSUMER and g.state == STABLE and g.subscribed_topics is not None:
            subscribed = g.subscribed_topics

            def base(v: OffsetValue) -> int:
                return v.commit_timestamp
        elif g.protocol_type is None:

            def base(v: OffsetValue) -> int:
                return v.commit_timestamp
        else:
            base = None
        if base is not None:
            self._expire(gid, base, subscribed, now_ms)
        return not offsets and not self.has_pending_commits(gid)

    def cleanup_expired_by_commit_time(self, group_id: str, subscribed: Collection[str], now_ms: int) -> bool:
        """A KIP-848 consumer group's expiry (Kafka's `ConsumerGroup.offsetExpirationCondition`): an offset of
        a topic the group does not subscribe to expires `offsets.retention` after its commit; True when none
        is left (the shard then deletes the group if it is Empty)."""
        self._expire(group_id, lambda v: v.commit_timestamp, subscribed, now_ms)
        return not self.offsets.get(group_id) and not self.has_pending_commits(group_id)

    def _expire(
        self, gid: str, base: Callable[[OffsetValue], int], subscribed: Collection[str], now_ms: int
    ) -> None:
        offsets = self.offsets.get(gid, {})
        retention = self.ctx.config.offsets_retention_ms
        for (topic, partition), v in list(offsets.items()):
            if (
                topic in subscribed
                or (gid, topic, partition) in self.inflight
                or self.txn.is_pending(gid, topic, partition)
            ):
                continue
            expired = (
                now_ms >= v.expire_timestamp if v.expire_timestamp != -1 else now_ms - base(v) >= retention
            )
            if expired:
                del offsets[(topic, partition)]
                self.ctx.fx.record(OffsetRecord(gid, topic, partition, None))

    # ====================================================================== deletion and loading

    def has_pending_commits(self, group_id: str) -> bool:
        return any(k[0] == group_id for k in self.inflight) or self.txn.has_pending(group_id)

    def tombstone_group_offsets(self, group_id: str) -> None:
        """Write a tombstone for every committed offset of a group being deleted."""
        for topic, partition in self.offsets.get(group_id, {}):
            self.ctx.fx.record(OffsetRecord(group_id, topic, partition, None))
        self.txn.tombstone_group(group_id)

    def remove_group(self, group_id: str) -> None:
        """Forget a group's offsets, pending transactional ones included (the group itself is gone)."""
        self.offsets.pop(group_id, None)
        self.txn.pending.pop(group_id, None)

    def replay_offset(self, record: OffsetRecord) -> None:
        """Apply one persisted offset record; offsets without a group record make a simple group."""
        offsets = self.offsets.setdefault(record.group_id, {})
        if record.value is None:
            offsets.pop((record.topic, record.partition), None)
            return
        offsets[(record.topic, record.partition)] = record.value
        if not self.registry.holds_offsets(record.group_id):
            self.group_manager.add_simple_group(record.group_id, record.value.commit_timestamp)

    def on_loaded(self) -> None:
        """Drop the empty per-group maps that tombstones left behind during replay."""
        for gid in [gid for gid, offs in self.offsets.items() if not offs]:
            del self.offsets[gid]
        self.txn.on_loaded()

    def unload(self, group_ids: Collection[str] | None = None) -> None:
        """Forget every group's offsets, or only those of `group_ids` (a shard this node stopped owning)."""
        self.txn.unload(group_ids)
        if group_ids is None:
            self.offsets.clear()
            self.inflight.clear()
            return
        for gid in group_ids:
            self.offsets.pop(gid, None)
        for k in [k for k in self.inflight if k[0] in group_ids]:
            del self.inflight[k]


# ============================================================================================ helpers


def _commit_result(
    req: OffsetCommitRequest, error_of: Callable[[str, CommitPartition], int]
) -> OffsetCommitResult:
    return OffsetCommitResult(
        tuple((topic, tuple((p.partition, error_of(topic, p)) for p in parts)) for topic, parts in req.topics)
    )
