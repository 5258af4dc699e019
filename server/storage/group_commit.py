"""Group commit: many concurrent writers, one storage transaction at a time.

Both durable stores (SQLite and PostgreSQL) answer `write(records)` only once the records are committed
(persist-then-reply). Writers arriving while a transaction runs are queued, and the whole queue goes into the
next transaction: under load one commit (one fsync) serves many requests, and records still reach the
storage in the order they were written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from groupcoord.server.coordinator.records import Record
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
