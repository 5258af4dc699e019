"""`MemoryStateStore`: the store `--storage memory` runs (and tests use). Instant, and NOT durable.

It is synchronous: the runtime calls `write_now()` inside the request, so with this store a request runs to
its reply without waiting on a write.
"""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.server.coordinator.records import (
    ConsumerGroupRecord,
    GroupRecord,
    OffsetRecord,
    PendingOffsetRecord,
    Record,
    ShareGroupRecord,
    SharePartitionRecord,
    StreamsGroupRecord,
    TxnRecord,
)
from groupcoord.server.storage.base import StorageError


class MemoryStateStore:
    synchronous = True

    def __init__(self) -> None:
        self._rows: dict[tuple, Record] = {}
        self._closed = False
        self.transactions = 0

    @property
    def rows(self) -> dict[tuple, Record]:
        """What is stored now, by record key (a read view for tests and inspection; write through `write_now`)."""
        return self._rows

    async def open(self) -> None:
        self._closed = False

    async def load(self) -> list[Record]:
        groups = [r for r in self._rows.values() if isinstance(r, GroupRecord | ConsumerGroupRecord)]
        offsets = [r for r in self._rows.values() if isinstance(r, OffsetRecord | PendingOffsetRecord)]
        txns = [r for r in self._rows.values() if isinstance(r, TxnRecord)]
        share = [
            r
            for r in self._rows.values()
            if isinstance(r, ShareGroupRecord | SharePartitionRecord | StreamsGroupRecord)
        ]
        return [*groups, *offsets, *txns, *share]

    def write_now(self, records: Sequence[Record]) -> None:
        if self._closed:
            raise StorageError("store is closed")
        for r in records:
            if r.value is None:
                self._rows.pop(r.key, None)
            else:
                self._rows[r.key] = r
        self.transactions += 1

    async def write(self, records: Sequence[Record]) -> None:
        self.write_now(records)

    async def close(self) -> None:
        self._closed = True
