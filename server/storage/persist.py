"""Persist, then answer (issue 40): the one way the group runtime (`server/runtime.py`), the share service
(`server/share/service.py`) and the transaction coordinator (`server/txn/service.py`) make records durable
before a request is answered.

A synchronous store (memory) is written inside the call, so a request runs to its answer without a task
switch; an asynchronous one (SQLite, PostgreSQL) is awaited (storage/base.py). Either way the write raises
`StorageError` (`FencedError` in cluster mode) when the records may not be durable, and the caller must then
answer with an error, never as if the write had succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.server.coordinator.records import Record
from groupcoord.server.storage.base import StateStore, SynchronousStateStore


class Persister:
    """The write path over one store."""

    __slots__ = ("_sync", "store")

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._sync: SynchronousStateStore | None = (
            store if store.synchronous and isinstance(store, SynchronousStateStore) else None
        )

    @property
    def synchronous(self) -> bool:
        """Whether `write_now` may be used: the write completes inside the call."""
        return self._sync is not None

    def write_now(self, records: Sequence[Record]) -> None:
        """A synchronous store's write, inside the call (only when `synchronous`)."""
        assert self._sync is not None, "write_now on an asynchronous store"
        self._sync.write_now(records)

    async def write(self, records: Sequence[Record]) -> None:
        """Durable when this returns: inside the call for a synchronous store, else awaited."""
        if self._sync is not None:
            self._sync.write_now(records)
        else:
            await self.store.write(records)
