"""`AppendBatcher`: group commit of cluster mode's record appends (issue 27), as Kafka's log flusher and
PostgreSQL's own commit grouping do.

Why: each append in cluster mode is a write to PostgreSQL fenced by the partition's lease; one transaction
per batch bounds a node's produce rate by the database's commit latency. Here appends arriving while a
commit is in flight — any partition led by this node, from any connection — wait in a queue and all go
to PostgreSQL in the next transaction, in **one statement**: the batches are passed as arrays, joined
with the lease rows of their partitions (locked `FOR SHARE`, in key order, and kept only while
`owner = me and epoch = e and expires_at > now()`), and inserted; the statement returns the partitions it
wrote. So:

* **No timer.** The first append of an idle node starts a commit at once (the next turn of the event loop);
  only while a commit is in flight do others gather. A lone producer waits for one round trip, as before.
* **Per-partition fencing inside a group.** A partition whose lease is gone (or at another epoch) has none
  of its rows inserted and only its appends fail (NOT_LEADER_OR_FOLLOWER); the others commit. A unique-key
  collision (which the fence should make impossible) rolls the whole statement back: each partition is then
  retried in a statement of its own so only the offending one fails. A deadlock with a lease renewal (both
  lock lease rows) rolls back too and is retried. Any other failure leaves every partition of the group in
  doubt (KAFKA_STORAGE_ERROR; the owner reloads them from PostgreSQL).
* **Order.** One commit is in flight at a time and a group is the queue's oldest entries, so a partition's
  batches reach PostgreSQL in offset order, and a batch is never written after an earlier batch of its
  partition failed: the owner (`ClusterLog`) drops a failed partition's memory log in `on_done`, before the
  next group is taken, and entries whose memory log is no longer served (`live`) are answered
  NOT_LEADER_OR_FOLLOWER without being written.

The batcher knows nothing of memory logs: `ClusterLog` prepares each batch (offsets, sequence checks) under
the partition's lock, `submit`s it, and is told each partition's outcome through `on_done` before any
append's future is answered.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import asyncpg

from groupcoord.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

Key = tuple[str, int]

#: a group is cut at this many batches or bytes (the rest waits for the next commit): one statement's
#: parameters stay a bounded size
MAX_GROUP_BATCHES = 2000
MAX_GROUP_BYTES = 32 << 20
#: retries of a group rolled back by a deadlock or a serialization failure (nothing was written)
RETRIES = 3

_GROUP_INSERT = """
WITH fence AS MATERIALIZED (
    SELECT l.topic, l.partition FROM partition_lease l
    JOIN unnest($2::text[], $3::int[], $4::bigint[]) AS h(topic, partition, epoch)
      ON l.topic = h.topic AND l.partition = h.partition
    WHERE l.owner = $1 AND l.epoch = h.epoch AND l.expires_at > now()
    ORDER BY l.topic, l.partition
    FOR SHARE OF l
), ins AS (
    INSERT INTO record_batches (topic, partition, base_offset, last_offset, batch)
    SELECT b.topic, b.partition, b.base_offset, b.last_offset, b.batch
    FROM unnest($5::text[], $6::int[], $7::bigint[], $8::bigint[], $9::bytea[])
         AS b(topic, partition, base_offset, last_offset, batch)
    JOIN fence f ON f.topic = b.topic AND f.partition = b.partition
    RETURNING topic, partition
)
SELECT DISTINCT topic, partition FROM ins
"""


@dataclass(eq=False)
class Pending:
    """One batch waiting for its commit: its partition, the leader epoch it was prepared at, its offsets, the
    bytes to store, the memory log it was prepared on (`owner`, checked by `live`), and whether the owner
    adds it to that log only after the commit (`after_commit`: transaction markers) or did already."""

    key: Key
    epoch: int
    base: int
    last: int
    stored: bytes
    owner: object
    after_commit: bool = False
    future: asyncio.Future[ErrorCode] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class AppendBatcher:
    """Gathers `Pending` batches and commits them a group per transaction; see the module docstring."""

    def __init__(
        self,
        node_id: int,
        pool: Callable[[], asyncpg.Pool],
        *,
        live: Callable[[Pending], bool],
        on_done: Callable[[Key, list[Pending], ErrorCode], None],
    ) -> None:
        self.node_id = node_id
        self._pool = pool
        self._live = live
        self._on_done = on_done
        self._queue: deque[Pending] = deque()
        self._task: asyncio.Task[None] | None = None
        self.commits = 0  # group statements that committed (tests, the bench)
        self.batches = 0  # batches they wrote
        self.largest = 0  # the most batches one commit wrote

    def submit(self, entry: Pending) -> asyncio.Future[ErrorCode]:
        """Queue `entry`; its future is answered once its group has committed (or failed). Call it right
        after preparing the batch, with no `await` between: the queue order is each partition's offset order."""
        self._queue.append(entry)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="cluster-append-batcher")
        return entry.future

    async def close(self, timeout: float = 10.0) -> None:
        """Let the commit in flight finish (its appends are answered); the owner drops its logs first, so
        what is still queued is answered NOT_LEADER_OR_FOLLOWER unwritten."""
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout)
            except TimeoutError:
                task.cancel()
        for entry in self._queue:
            _answer(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._queue.clear()

    async def _run(self) -> None:
        while self._queue:
            group = self._take()
            if not group:
                continue
            try:
                results = await self._commit(group)
            except BaseException as e:  # never leave an append unanswered
                log.error("group commit of %d batches failed: %r", len(group), e)
                results = {e2.key: ErrorCode.KAFKA_STORAGE_ERROR for e2 in group}
                self._finish(group, results)
                if isinstance(e, asyncio.CancelledError):
                    raise
                continue
            self._finish(group, results)

    def _take(self) -> list[Pending]:
        """The queue's oldest entries up to the group limits; those whose memory log is gone are answered
        NOT_LEADER_OR_FOLLOWER here and never written."""
        group: list[Pending] = []
        size = 0
        while self._queue and len(group) < MAX_GROUP_BATCHES and (not group or size < MAX_GROUP_BYTES):
            entry = self._queue.popleft()
            if not self._live(entry):
                _answer(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                continue
            group.append(entry)
            size += len(entry.stored)
        return group

    def _finish(self, group: list[Pending], results: dict[Key, ErrorCode]) -> None:
        """Tell the owner each partition's outcome (in queue order), then answer the appends."""
        by_key: dict[Key, list[Pending]] = {}
        for entry in group:
            by_key.setdefault(entry.key, []).append(entry)
        written = 0
        for key, entries in by_key.items():
            code = results.get(key, ErrorCode.KAFKA_STORAGE_ERROR)
            if code == ErrorCode.NONE:
                written += len(entries)
            try:
                self._on_done(key, entries, code)
            except Exception:  # the owner's bookkeeping must not leave the appends unanswered
                log.exception("%s-%d: recording a group commit failed", key[0], key[1])
                code = ErrorCode.KAFKA_STORAGE_ERROR
            for entry in entries:
                _answer(entry, code)
        if written:
            self.commits += 1
            self.batches += written
            self.largest = max(self.largest, written)

    async def _commit(self, group: list[Pending]) -> dict[Key, ErrorCode]:
        """One fenced statement for `group`: each partition NONE (written), NOT_LEADER_OR_FOLLOWER (fenced:
        nothing of it written) or KAFKA_STORAGE_ERROR (in doubt: the commit may have landed)."""
        epochs: dict[Key, int] = {}
        for entry in group:
            epochs.setdefault(entry.key, entry.epoch)
        keys = sorted(epochs)
        args = (
            self.node_id,
            [k[0] for k in keys],
            [k[1] for k in keys],
            [epochs[k] for k in keys],
            [e.key[0] for e in group],
            [e.key[1] for e in group],
            [e.base for e in group],
            [e.last for e in group],
            [e.stored for e in group],
        )
        for attempt in range(RETRIES + 1):
            try:
                async with self._pool().acquire() as conn:
                    rows = await conn.fetch(_GROUP_INSERT, *args)
            except (asyncpg.DeadlockDetectedError, asyncpg.SerializationError) as e:
                log.warning("group commit rolled back (%r); attempt %d", e, attempt + 1)
                continue  # rolled back: nothing was written
            except asyncpg.UniqueViolationError:
                break  # rolled back: find the partition it was, below
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                log.error(
                    "group commit of %d batches failed: %r; their partitions are in doubt", len(group), e
                )
                return dict.fromkeys(keys, ErrorCode.KAFKA_STORAGE_ERROR)
            done = {(r[0], r[1]) for r in rows}
            return {k: ErrorCode.NONE if k in done else ErrorCode.NOT_LEADER_OR_FOLLOWER for k in keys}
        else:
            if len(keys) == 1:  # rolled back every time: nothing written, but the partition must reload
                return {keys[0]: ErrorCode.KAFKA_STORAGE_ERROR}
        if len(keys) == 1:  # its offsets were taken: another leader wrote there, so this one is deposed
            return {keys[0]: ErrorCode.NOT_LEADER_OR_FOLLOWER}
        results: dict[Key, ErrorCode] = {}
        for key in keys:  # one statement per partition: only the colliding one fails
            results.update(await self._commit([e for e in group if e.key == key]))
        return results


def _answer(entry: Pending, code: ErrorCode) -> None:
    if not entry.future.done():
        entry.future.set_result(code)
