"""Transactional offsets (TxnOffsetCommit) of a shard: pending per group and producer until the marker.

Kafka's `OffsetMetadataManager` keeps `pendingTransactionalOffsets` next to the committed ones: a
TxnOffsetCommit is written with the producer id and stays invisible (OffsetFetch answers the previous
committed offset, or UNSTABLE_OFFSET_COMMIT with RequireStable) until the transaction coordinator's COMMIT
marker makes it the committed offset; an ABORT marker drops it. Here the marker is `complete_transaction`,
called by the transaction coordinator (`server/txn`) for every group of the transaction. Pending offsets are
durable (`PendingOffsetRecord`), replayed at load, and never expire while pending.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.commit_checks import validate_offset_commit
from groupcoord.server.coordinator.context import NONE, PERSIST_ERROR, OperationContext
from groupcoord.server.coordinator.group_manager import GroupMetadataManager
from groupcoord.server.coordinator.records import OffsetRecord, OffsetValue, PendingOffsetRecord
from groupcoord.server.coordinator.registry import GroupRegistry
from groupcoord.server.coordinator.types import Effects, OffsetCommitResult, TxnOffsetCommitRequest

E = ErrorCode


class TxnOffsets:
    """Pending transactional offsets: group -> producer id -> (topic, partition) -> value."""

    def __init__(
        self,
        ctx: OperationContext,
        group_manager: GroupMetadataManager,
        committed: dict[str, dict[tuple[str, int], OffsetValue]],
        registry: GroupRegistry,
    ) -> None:
        self.ctx = ctx
        self.group_manager = group_manager
        self.registry = registry
        self.committed = committed  # the offset manager's map: the COMMIT marker writes into it
        self.pending: dict[str, dict[int, dict[tuple[str, int], OffsetValue]]] = {}
        #: whether a KIP-848 consumer group holds this id (then no classic "simple" group is made for it)

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in offs for offs in self.pending.get(group_id, {}).values())

    def has_pending(self, group_id: str) -> bool:
        return bool(self.pending.get(group_id))

    def commit(
        self, req: TxnOffsetCommitRequest, token: Hashable, now_ms: int, checked: int | None = None
    ) -> Effects:
        """Validate (KIP-447 member checks), persist the offsets as pending, then answer. `checked`: already
        validated by another kind of group (a KIP-848 consumer group), with this outcome."""
        fx = self.ctx.begin(now_ms)
        err = validate_offset_commit(self.ctx, self.group_manager, req) if checked is None else checked
        max_meta = self.ctx.config.offset_metadata_max_bytes
        if err:
            fx.reply(token, _result(req, lambda t, p: err))
            return fx
        staged: dict[tuple[str, int], OffsetValue] = {}
        for topic, parts in req.topics:
            for p in parts:
                meta = p.metadata if p.metadata is not None else ""
                if len(meta) > max_meta:
                    continue
                value = OffsetValue(p.offset, p.leader_epoch, meta, now_ms, -1)
                staged[(topic, p.partition)] = value
                fx.record(PendingOffsetRecord(req.group_id, req.producer_id, topic, p.partition, value))

        def error_of(topic: str, partition: int, ok: bool) -> int:
            if (topic, partition) not in staged:
                return int(E.OFFSET_METADATA_TOO_LARGE)
            return NONE if ok else PERSIST_ERROR

        if not staged:
            fx.reply(token, _result(req, lambda t, p: error_of(t, p, True)))
            return fx

        def after(ok: bool, now: int) -> Effects:
            fx2 = self.ctx.begin(now)
            if ok:
                if not self.registry.holds_offsets(req.group_id):
                    self.group_manager.add_simple_group(req.group_id, now)
                by_pid = self.pending.setdefault(req.group_id, {})
                by_pid.setdefault(req.producer_id, {}).update(staged)
            fx2.reply(token, _result(req, lambda t, p: error_of(t, p, ok)))
            return fx2

        fx.after_persist = after
        return fx

    def complete(
        self, group_id: str, producer_id: int, commit: bool, token: Hashable, now_ms: int
    ) -> Effects:
        """The transaction marker for this group: COMMIT makes the producer's pending offsets committed,
        ABORT drops them; `token` is answered True once that is durable (False if the write failed).
        Idempotent: a marker re-sent after a restart finds nothing pending."""
        fx = self.ctx.begin(now_ms)
        offsets = self.pending.get(group_id, {}).get(producer_id)
        if not offsets:
            fx.reply(token, True)
            return fx
        for (topic, partition), value in offsets.items():
            fx.record(PendingOffsetRecord(group_id, producer_id, topic, partition, None))
            if commit:
                fx.record(OffsetRecord(group_id, topic, partition, value))

        def after(ok: bool, now: int) -> Effects:
            if ok:
                by_pid = self.pending.get(group_id, {})
                by_pid.pop(producer_id, None)
                if not by_pid:
                    self.pending.pop(group_id, None)
                if commit:
                    if not self.registry.holds_offsets(group_id):
                        self.group_manager.add_simple_group(group_id, now)
                    self.committed.setdefault(group_id, {}).update(offsets)
            fx2 = self.ctx.begin(now)
            fx2.reply(token, ok)
            return fx2

        fx.after_persist = after
        return fx

    def tombstone_group(self, group_id: str) -> None:
        """Tombstones for every pending offset of a group being deleted (spec: DeleteGroups of an Empty
        group removes its pending transactional offsets too); a later marker then finds nothing."""
        for pid, offsets in self.pending.get(group_id, {}).items():
            for topic, partition in offsets:
                self.ctx.fx.record(PendingOffsetRecord(group_id, pid, topic, partition, None))

    def replay(self, record: PendingOffsetRecord) -> None:
        by_pid = self.pending.setdefault(record.group_id, {})
        if record.value is None:
            by_pid.get(record.producer_id, {}).pop((record.topic, record.partition), None)
            return
        by_pid.setdefault(record.producer_id, {})[(record.topic, record.partition)] = record.value
        if not self.registry.holds_offsets(record.group_id):
            self.group_manager.add_simple_group(record.group_id, record.value.commit_timestamp)

    def on_loaded(self) -> None:
        for gid in list(self.pending):
            by_pid = self.pending[gid]
            for pid in [pid for pid, offs in by_pid.items() if not offs]:
                del by_pid[pid]
            if not by_pid:
                del self.pending[gid]

    def unload(self, group_ids: Collection[str] | None = None) -> None:
        """Forget every group's pending offsets, or only those of `group_ids` (a shard this node stopped
        owning: the store keeps them for the next owner's load)."""
        if group_ids is None:
            self.pending.clear()
            return
        for gid in group_ids:
            self.pending.pop(gid, None)


def _result(req: TxnOffsetCommitRequest, error_of) -> OffsetCommitResult:  # type: ignore[no-untyped-def]
    return OffsetCommitResult(
        tuple(
            (topic, tuple((p.partition, error_of(topic, p.partition)) for p in parts))
            for topic, parts in req.topics
        )
    )
