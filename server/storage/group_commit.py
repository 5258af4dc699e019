"""Group commit: many concurrent writers, one storage transaction at a time.

Both durable stores (SQLite and PostgreSQL) answer `write(records)` only once the records are committed
(persist-then-reply). Writers arriving while a transaction runs are queued, and the whole queue goes into the
next transaction: under load one commit (one fsync) serves many requests, and records still reach the
storage in the order they were written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from groupcoord.server.coordinator.records import (
    ConsumerGroupRecord,
    ConsumerGroupValue,
    GroupMetadataValue,
    OffsetRecord,
    OffsetValue,
    PendingOffsetRecord,
    Record,
    ShareGroupRecord,
    SharePartitionRecord,
    StreamsGroupRecord,
    TxnRecord,
    TxnValue,
    encode_share_record,
)
from groupcoord.server.storage.base import StorageError


class GroupCommit:
    """The queue and its single writer task; `commit` writes one batch in one transaction."""

    def __init__(self, commit: Callable[[list[Record]], Awaitable[None]], name: str) -> None:
        self._commit = commit
        self._name = name
        self._pending: list[tuple[Sequence[Record], asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def write(self, records: Sequence[Record]) -> None:
        """Return once `records` are committed; raise StorageError if their transaction failed."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((records, fut))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_loop(), name=self._name)
        await fut

    async def drain(self) -> None:
        """Wait for the writer to finish what is queued (used on close)."""
        if self._writer is not None:
            await asyncio.shield(self._writer)

    async def _write_loop(self) -> None:
        """Drain the queue: everything queued while a transaction runs goes into the next one."""
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                await self._commit([r for records, _ in batch for r in records])
            except Exception as e:
                err = e if isinstance(e, StorageError) else StorageError(f"state write failed: {e}")
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(err)
            else:
                for _, fut in batch:
                    if not fut.done():
                        fut.set_result(None)


@dataclass
class LatestByKey:
    """A batch folded to the last value per key, as a replay would leave it (None: delete the key): one
    upsert or delete per row however often the batch wrote it. Keys: group id; (group, topic, partition) for
    offsets; (group, producer id, topic, partition) for pending transactional offsets; transactional id; the share records' own key."""

    groups: dict[str, GroupMetadataValue | None] = field(default_factory=dict)
    offsets: dict[tuple[str, str, int], OffsetValue | None] = field(default_factory=dict)
    pending: dict[tuple[str, int, str, int], OffsetValue | None] = field(default_factory=dict)
    txns: dict[str, TxnValue | None] = field(default_factory=dict)
    #: KIP-848 consumer-group records by (record type, group, member id or "")
    consumer_groups: dict[tuple[int, str, str], ConsumerGroupValue | None] = field(default_factory=dict)
    #: share groups and share-partition state (KIP-932): record key as JSON -> value as JSON (None: delete)
    share: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Sequence[Record]) -> LatestByKey:
        out = cls()
        for r in records:
            if isinstance(r, OffsetRecord):
                out.offsets[(r.group_id, r.topic, r.partition)] = r.value
            elif isinstance(r, PendingOffsetRecord):
                out.pending[(r.group_id, r.producer_id, r.topic, r.partition)] = r.value
            elif isinstance(r, TxnRecord):
                out.txns[r.transactional_id] = r.value
            elif isinstance(r, ConsumerGroupRecord):
                out.consumer_groups[(r.kind, r.group_id, r.member_id)] = r.value
            elif isinstance(r, ShareGroupRecord | SharePartitionRecord | StreamsGroupRecord):
                key, value = encode_share_record(r)
                out.share[key] = value
            else:
                out.groups[r.group_id] = r.value
        return out
