"""The durable coordinator-state interface (the part of Kafka's `__consumer_offsets` this server keeps).

The group state machine emits `GroupRecord`/`OffsetRecord`s at Kafka's persist points; a store keeps the
latest value per key (`record.key`) and deletes the key on a tombstone (value None). A group tombstone
deletes only the group row: the state machine sends the offset tombstones itself.

Two kinds of store exist and the runtime treats them differently: an asynchronous one (SQLite) is awaited
through `write()` while the group's mailbox holds later requests; a synchronous one (memory) is written with
`write_now()` inside the call, so the whole request runs without a task switch. `synchronous` says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from groupcoord.server.coordinator.records import Record


class StorageError(Exception):
    """A write that may not be durable (I/O error, disk full, closed store). The caller must not
    acknowledge the operation that produced the records."""


class StateStore(Protocol):
    #: True when `write_now()` exists and the runtime should use it instead of awaiting `write()`
    synchronous: bool

    async def open(self) -> None:
        """Create or open the store (and its schema)."""

    async def load(self) -> list[Record]:
        """Every live record (latest value per key) for replay at start: groups first, then offsets."""

    async def write(self, records: Sequence[Record]) -> None:
        """Persist `records` in order; durable when this returns. Raises StorageError on failure."""

    async def close(self) -> None:
        """Finish in-flight writes and release the store."""


@runtime_checkable
class SynchronousStateStore(StateStore, Protocol):
    """A store whose writes complete inside the call (`synchronous` is True)."""

    def write_now(self, records: Sequence[Record]) -> None:
        """Apply `records` in order before returning. Raises StorageError on failure."""
