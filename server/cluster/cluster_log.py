"""`ClusterLog`: cluster mode's topic data — the records in PostgreSQL, one leader per
partition (issue 27).

Why this shape: a record acknowledged by any node must survive that node's disk and be read by every
consumer, so the records live where every node reaches them, and exactly one node — the holder of the
partition's lease (server/cluster/partitions.py) — assigns offsets. It is the `LogManager` the handlers
already use, with every partition log in memory (`PartitionLog` without a directory) and PostgreSQL as the
durable copy:

* **Only the leader serves a partition.** `_logs` holds the partitions this node leads and has loaded;
  Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and DeleteRecords of any other partition of a known
  topic answer NOT_LEADER_OR_FOLLOWER, so clients refresh Metadata and go to the leader it names.
* **Append = check, apply, group-commit to PostgreSQL fenced, then answer.** Under the partition's lock the
  batch is checked (`PartitionLog.prepare`: CRC, sequence, duplicates, size), its stored bytes (base offset
  and leader epoch set, `stored_bytes`) are added to the memory log beyond its high watermark
  (`committed_end`: readers stop there) and handed to the `AppendBatcher` (append_batcher.py), which writes
  the batches of every partition led here that arrived while a commit was in flight in one statement fenced
  by each partition's lease row (`FOR SHARE`, `owner = me and epoch = e and expires_at > now()`): a
  takeover's lease UPDATE waits for such an insert and then loads it, or comes first and that partition's
  rows are not written. The lock is released before the commit, so the next batch of the partition is
  checked against the producer state that includes this one and can join the same commit, as a Kafka leader
  appends before its high watermark moves. After the commit the high watermark moves and waiters wake, then
  the producer is answered: nothing a consumer reads was not durable, and a deposed leader can never append.
  A failed commit drops the partition's memory log (the lease side reloads it from PostgreSQL), so nothing
  beyond the durable prefix is ever served. A duplicate of one of the producer's last five batches is
  answered with its first offset once that batch is durable (the producer state is rebuilt from the stored
  batches on takeover, so idempotence survives a failover).
* **Takeover loads the partition** from `record_batches` (ordered by offset) into a fresh memory log,
  stamped with the new leader epoch for the batches it will append.
* **Registry** (which topics exist, their partition counts and configs): `topic_registry.py`, the base class.
* **Producer ids** for idempotent producers come from the `producer_ids` sequence, unique over the cluster.
* **Retention and compaction** are `cluster_maintenance.py`'s, stored
  through `trim` and `replace_cleaned`, both fenced by the partition's lease.
* **Transactions**: a transactional batch is verified against its transaction's durable state under the
  partition's lock (`append(verify=…)`), and COMMIT/ABORT markers are appended by the leader under the same
  lock and the same lease fence (`write_marker`; a marker enters the memory log only once committed, so the
  last stable offset never passes an undurable marker); takeover rebuilds the open transactions, the last stable
  offset and the aborted index from the stored batches, so read_committed fetches see the same on any leader.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import asyncpg

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.cluster.append_batcher import AppendBatcher, Pending
from groupcoord.server.cluster.topic_registry import ClusterTopics
from groupcoord.server.coordinator.records import TxnValue
from groupcoord.server.log.batch import parse_header
from groupcoord.server.log.cleaner import CleanStats, discard, swap_in
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.maintenance import MaintenanceConfig
from groupcoord.server.log.manager import (
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendResult,
    OffsetResult,
    ReadResult,
    Verify,
)
from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.retention import drop_segments
from groupcoord.server.log.segment import Segment
from groupcoord.server.log.topics import TopicInfo
from groupcoord.server.log.txn_state import control_batch
from groupcoord.server.storage.base import StorageError
from groupcoord.server.storage.postgres import redact
from groupcoord.server.storage.sqlite import decode_txn

log = logging.getLogger(__name__)

Key = tuple[str, int]

_DELETE_RECORDS = """
WITH fence AS (
    UPDATE partition_lease SET log_start_offset = greatest(log_start_offset, $5)
    WHERE topic = $1 AND partition = $2 AND owner = $3 AND epoch = $4 AND expires_at > now()
    RETURNING log_start_offset
), gone AS (
    DELETE FROM record_batches
    WHERE topic = $1 AND partition = $2 AND last_offset < $5 AND EXISTS (SELECT 1 FROM fence)
      AND base_offset < (SELECT max(base_offset) FROM record_batches WHERE topic = $1 AND partition = $2)
)
SELECT log_start_offset FROM fence
"""


_FENCE = """
SELECT true FROM partition_lease
WHERE topic = $1 AND partition = $2 AND owner = $3 AND epoch = $4 AND expires_at > now()
FOR SHARE
"""


def _contiguous(plog: PartitionLog, old: list[Segment]) -> bool:
    """`old` still lies in `plog` as one run of segments (nothing trimmed or swapped since the clean began)."""
    try:
        i = plog.segments.index(old[0])
    except ValueError:
        return False
    return plog.segments[i : i + len(old)] == old


def _drop_below_start(plog: PartitionLog) -> None:
    """Free the memory segments wholly below the log start offset (never the active one)."""
    doomed = []
    for i, seg in enumerate(plog.segments[:-1]):
        if plog.bases[i + 1] > plog.log_start_offset:
            break
        doomed.append(seg)
    drop_segments(plog, doomed)
    for seg in doomed:
        seg.close()


class ClusterLog(ClusterTopics):
    """The handlers' `LogManager` in cluster mode; see the module docstring."""

    def __init__(
        self, url: str, node_id: int, *, pool_size: int = 8, server_settings: dict[str, str] | None = None
    ) -> None:
        super().__init__(None, storage="memory", maintenance=MaintenanceConfig(cleaner_enable=False))
        self.url = url
        #: every session's startup settings (storage/pg_liveness.py: a silent leader's transaction ends
        #: before its partition leases can expire)
        self.server_settings = dict(server_settings or {})
        self.pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        self.node_id = node_id
        self.epochs: dict[Key, int] = {}  # led and loaded partitions -> leader epoch
        self._locks: dict[Key, asyncio.Lock] = {}
        #: led partitions -> their leader epoch history [(epoch, start offset)], oldest first
        self._epoch_starts: dict[Key, list[tuple[int, int]]] = {}
        #: (log start, log end) of every partition as PostgreSQL held it at the last `refresh_ends`
        self._ends: dict[Key, tuple[int, int]] = {}
        #: told when a write finds the lease gone (or in doubt): the lease side stops holding the partition
        self.on_lost: Callable[[Key], None] = lambda key: None
        self.on_topics: Callable[[dict[str, TopicInfo]], None] = lambda topics: None
        #: led partitions -> the commit future of their newest batch not yet answered (see `_settle`)
        self._tails: dict[Key, asyncio.Future[ErrorCode]] = {}
        self.batcher = AppendBatcher(node_id, lambda: self.pool, live=self._live, on_done=self._committed)

    # -- life cycle: no files, no flusher, no retention pass (the records are in PostgreSQL)

    async def open(self) -> None:
        try:
            self._pool = await asyncpg.create_pool(
                self.url,
                min_size=1,
                max_size=self.pool_size,
                command_timeout=30,
                server_settings=self.server_settings or None,
            )
            async with self.pool.acquire() as conn:
                await self._refresh(conn)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            if self._pool is not None:
                await self._pool.close()
                self._pool = None
            raise StorageError(f"cannot open the cluster's topic data in {redact(self.url)}: {e}") from e

    async def close(self) -> None:
        self._closed = True
        for key in list(self._logs):
            self.drop_partition(key)
        await self.batcher.close()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    def led(self) -> list[tuple[Key, PartitionLog]]:
        """The partitions this node leads and has loaded, with their memory copies (retention, compaction)."""
        return list(self._logs.items())

    # -- leadership (server/cluster/partitions.py drives these)

    async def read_partition(self, key: Key, epoch: int) -> PartitionLog:
        """A memory log holding every stored batch of `key`, stamped with `epoch` for new appends."""
        topic, partition = key
        async with self.pool.acquire() as conn:
            start = await conn.fetchval(
                "SELECT log_start_offset FROM partition_lease WHERE topic = $1 AND partition = $2",
                topic,
                partition,
            )
            rows = await conn.fetch(
                "SELECT batch FROM record_batches WHERE topic = $1 AND partition = $2 ORDER BY base_offset",
                topic,
                partition,
            )
        plog = PartitionLog.open(topic, partition, None, **self._log_options)
        plog.gaps = (
            True  # compaction (cluster_maintenance.py) may have left offset gaps between stored batches
        )
        config = self._configs.get(topic)
        if config is not None:
            plog.apply_config(config)
        for r in rows:
            plog.restore(r[0])
        plog.advance_start(start or 0)
        plog.leader_epoch = epoch
        plog.committed_end = plog.next_offset  # readers stop here: appends beyond it await their commit
        return plog

    def install(self, key: Key, epoch: int, plog: PartitionLog) -> None:
        """Serve `key` from `plog` as its leader at `epoch`; its epoch history is read off the batches'
        partitionLeaderEpoch and ends with `epoch` starting at the log end, as Kafka's leader epoch cache."""
        starts: list[tuple[int, int]] = []
        for h in plog.iter_headers(plog.log_start_offset):
            if not starts or h.partition_leader_epoch > starts[-1][0]:
                starts.append((h.partition_leader_epoch, h.base_offset))
        if not starts or epoch > starts[-1][0]:
            starts.append((epoch, plog.log_end_offset))
        self._epoch_starts[key] = starts
        self._logs[key] = plog
        self.epochs[key] = epoch

    def epoch_end_offset(self, topic: str, partition: int, epoch: int) -> tuple[int, int]:
        """Kafka's `LeaderEpochFileCache.endOffsetFor`: the latest epoch ends at the log end; an older one at
        the start of the next; an unknown newer one, or -1, is (-1, -1)."""
        plog = self._logs[(topic, partition)]
        starts = self._epoch_starts.get((topic, partition), [(plog.leader_epoch, 0)])
        if epoch < 0:
            return -1, -1
        if epoch == starts[-1][0]:
            return epoch, plog.log_end_offset
        higher = next((s for s in starts if s[0] > epoch), None)
        if higher is None:
            return -1, -1
        floor = [s for s in starts if s[0] <= epoch]
        return (floor[-1][0] if floor else epoch), higher[1]

    def drop_partition(self, key: Key) -> None:
        """Stop serving `key`: requests answer NOT_LEADER_OR_FOLLOWER, waiting fetches wake to say so."""
        plog = self._logs.pop(key, None)
        self.epochs.pop(key, None)
        self._epoch_starts.pop(key, None)
        self._tails.pop(key, None)
        if plog is not None:
            self._wake(plog)

    def _lose(self, key: Key) -> None:
        self.drop_partition(key)
        self.on_lost(key)

    def _absent(self, topic: str, partition: int) -> ErrorCode:
        """The error for a partition not served here: not its leader, or no such partition."""
        info = self._topics.get(topic)
        if info is not None and 0 <= partition < info.partitions:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    # -- data plane

    async def append(
        self,
        topic: str,
        partition: int,
        records: bytes | bytearray | memoryview,
        acks: int,
        verify: Verify | None = None,
    ) -> AppendResult:
        """`verify` (a transactional batch) runs under the partition's lock, right before the fenced insert:
        a marker, written under the same lock, cannot slip between the check and the append."""
        if acks not in (0, 1, -1):
            return AppendResult(ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, error_message=f"acks={acks}")
        key = (topic, partition)
        plog = self._logs.get(key)
        if plog is None or self._closed:
            return AppendResult(self._absent(topic, partition), -1, -1)
        if len(records) == 0:
            return AppendResult(ErrorCode.NONE, -1, plog.log_start_offset)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if self._logs.get(key) is not plog:  # lost while waiting for the lock
                return AppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1)
            if verify is not None:
                code = await verify()
                if code != ErrorCode.NONE:
                    return AppendResult(code, -1, -1, error_message=f"{topic}-{partition}: {code.name}")
                if self._logs.get(key) is not plog:
                    return AppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1)
            try:
                h, duplicate = plog.prepare(records)
            except LogError as e:
                return AppendResult(e.code, -1, plog.log_start_offset, error_message=e.message)
            if duplicate is None:
                base = plog.next_offset
                stored = plog.stored_bytes(records, h)
                try:
                    plog.restore(stored)  # beyond the high watermark: no reader sees it before its commit
                except LogError as e:
                    return AppendResult(e.code, -1, plog.log_start_offset, error_message=e.message)
                fut = self._submit(key, plog, base, base + h.last_offset_delta, stored)
        if duplicate is not None:  # answered once the batch it repeats is durable
            code = await self._settle(key, plog) if duplicate >= plog.high_watermark else ErrorCode.NONE
            base = duplicate
        else:
            code = await asyncio.shield(fut)
        if code != ErrorCode.NONE:
            return AppendResult(code, -1, -1)
        return AppendResult(ErrorCode.NONE, base, plog.log_start_offset)

    def _submit(
        self, key: Key, plog: PartitionLog, base: int, last: int, stored: bytes, *, after_commit: bool = False
    ) -> asyncio.Future[ErrorCode]:
        """Hand a prepared batch to the group commit (under the partition's lock, no `await` since the
        offsets were taken); the partition's newest pending commit is its tail for `_settle`."""
        entry = Pending(key, self.epochs[key], base, last, stored, plog, after_commit)
        fut = self.batcher.submit(entry)
        self._tails[key] = fut
        return fut

    async def _settle(self, key: Key, plog: PartitionLog) -> ErrorCode:
        """Wait until every batch of `key` handed to the group commit so far is durable (commits complete in
        order): NONE, or NOT_LEADER_OR_FOLLOWER when one failed (the memory log was dropped with it)."""
        tail = self._tails.get(key)
        if tail is not None and not tail.done():
            await asyncio.shield(tail)
        return ErrorCode.NONE if self._logs.get(key) is plog else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def _live(self, entry: Pending) -> bool:
        """A queued batch is written only while its memory log is still the one served (else an earlier
        batch of it failed, or the partition was handed over meanwhile)."""
        return not self._closed and self._logs.get(entry.key) is entry.owner

    def _committed(self, key: Key, entries: list[Pending], code: ErrorCode) -> None:
        """The group commit's outcome for `key`'s `entries` (before their appends are answered): the high
        watermark moves past them and readers wake; or the partition is dropped so nothing beyond what
        PostgreSQL holds is served (the lease side releases it and a later load reads the truth)."""
        plog = entries[0].owner
        assert isinstance(plog, PartitionLog)
        served = self._logs.get(key) is plog
        if code == ErrorCode.NONE:
            try:
                for entry in entries:
                    if entry.after_commit:
                        plog.restore(entry.stored)
            except LogError:  # durable but not in the memory copy: serve it again only after a reload
                if served:
                    self._lose(key)
                raise
            plog.committed_end = max(plog.committed_end or 0, entries[-1].last + 1)
            self._wake(plog)
        elif served:
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                log.warning("%s-%d: lease lost; no longer its leader", *key)
            else:  # in doubt (the commit may have landed): reload from PostgreSQL before serving again
                log.error("%s-%d: append failed; reloading the partition", *key)
            self._lose(key)

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        *,
        min_one: bool = True,
        read_committed: bool = False,
    ) -> ReadResult:
        if (topic, partition) not in self._logs:
            return ReadResult(self._absent(topic, partition), b"", -1, -1, -1)
        return super().read(
            topic, partition, offset, max_bytes, min_one=min_one, read_committed=read_committed
        )

    async def list_offsets(
        self, topic: str, partition: int, timestamp: int, read_committed: bool = False
    ) -> OffsetResult:
        """As on a single node, but bounded by the high watermark as Kafka's ListOffsets for consumers:
        LATEST is the high watermark, and a timestamp found only in batches awaiting their commit is none."""
        plog = self._logs.get((topic, partition))
        if plog is None:
            return OffsetResult(self._absent(topic, partition), -1, -1)
        if timestamp == LATEST_TIMESTAMP and not read_committed:
            return OffsetResult(ErrorCode.NONE, plog.high_watermark, -1)
        found = await super().list_offsets(topic, partition, timestamp, read_committed)
        if found.offset >= plog.high_watermark and (timestamp >= 0 or timestamp == MAX_TIMESTAMP):
            return OffsetResult(ErrorCode.NONE, -1, -1)
        return found

    async def delete_records(self, topic: str, partition: int, offset: int) -> tuple[ErrorCode, int]:
        """DeleteRecords, durable in PostgreSQL (the lease row's log start offset, fenced) before the answer;
        batches wholly below it are deleted, the last batch kept so the log end survives a takeover."""
        key = (topic, partition)
        plog = self._logs.get(key)
        if plog is None or self._closed:
            return self._absent(topic, partition), -1
        if "delete" not in plog.config.cleanup_policy:
            return ErrorCode.POLICY_VIOLATION, -1
        target = plog.high_watermark if offset == -1 else offset
        if target < 0 or target > plog.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1
        async with self._locks.setdefault(key, asyncio.Lock()):
            if await self._settle(key, plog) != ErrorCode.NONE:  # appends in flight land first
                return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
            try:
                async with self.pool.acquire() as conn:
                    start = await conn.fetchval(
                        _DELETE_RECORDS, topic, partition, self.node_id, self.epochs[key], target
                    )
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                log.error("%s-%d: DeleteRecords failed: %r", topic, partition, e)
                return ErrorCode.KAFKA_STORAGE_ERROR, -1
            if start is None:
                self._lose(key)
                return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
            plog.advance_start(start)
            _drop_below_start(plog)
        return ErrorCode.NONE, plog.log_start_offset

    async def trim(self, key: Key, plog: PartitionLog, target: int) -> bool:
        """Retention: move the log start up to `target` durably (the lease row, fenced) and delete the stored
        batches wholly below it, then here; memory segments wholly below it are dropped. False: not led here
        any more (nothing changed), or PostgreSQL failed (logged; the next pass retries)."""
        topic, partition = key
        async with self._locks.setdefault(key, asyncio.Lock()):
            settled = await self._settle(key, plog)  # the target may lie in batches still in flight
            if settled != ErrorCode.NONE or target <= plog.log_start_offset:
                return False
            try:
                async with self.pool.acquire() as conn:
                    start = await conn.fetchval(
                        _DELETE_RECORDS, topic, partition, self.node_id, self.epochs[key], target
                    )
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, KeyError) as e:
                log.error("%s-%d: retention failed: %r", topic, partition, e)
                return False
            if start is None:
                self._lose(key)
                return False
            plog.advance_start(start)
            _drop_below_start(plog)
            return True

    async def replace_cleaned(self, key: Key, plog: PartitionLog, stats: CleanStats, end: int) -> bool:
        """Compaction: in one fenced transaction, the stored batches of the cleaned range are replaced by the
        cleaned ones (same offsets, superseded records gone, emptied batches gone); then the memory log swaps
        the cleaned segments in. False (nothing changed, the cleaned copies discarded): the segments changed
        meanwhile, the lease is gone, or PostgreSQL failed."""
        topic, partition = key
        async with self._locks.setdefault(key, asyncio.Lock()):
            settled = await self._settle(key, plog)  # the cleaned range may hold batches in flight
            if (
                settled != ErrorCode.NONE
                or not stats.groups
                or any(not _contiguous(plog, g.old) for g in stats.groups)
            ):
                for g in stats.groups:
                    discard(g)
                return False
            lo = stats.groups[0].old[0].base_offset
            rows = [
                (topic, partition, h.base_offset, h.last_offset, g.data.pread(h.size, h.position))
                for g in stats.groups
                for h in g.headers
            ]
            try:
                async with self.pool.acquire() as conn, conn.transaction():
                    held = await conn.fetchval(_FENCE, topic, partition, self.node_id, self.epochs[key])
                    if held:
                        await conn.execute(
                            "DELETE FROM record_batches WHERE topic = $1 AND partition = $2"
                            " AND base_offset >= $3 AND base_offset < $4",
                            topic, partition, lo, end,
                        )  # fmt: skip
                        await conn.executemany(
                            "INSERT INTO record_batches (topic, partition, base_offset, last_offset, batch)"
                            " VALUES ($1, $2, $3, $4, $5)",
                            rows,
                        )
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, KeyError) as e:
                log.error("%s-%d: storing the compacted batches failed: %r", topic, partition, e)
                held = False
            if not held:
                for g in stats.groups:
                    discard(g)
                return False
            for seg in swap_in(plog, stats, end):
                seg.close()
            return True

    async def write_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        """A COMMIT/ABORT marker appended by this partition's leader, fenced by its lease as any batch
        (a deposed leader can never append one), under the partition's lock (ordered with transactional
        appends, which verify their transaction under it). NOT_LEADER_OR_FOLLOWER when not led here: the
        coordinator asks the leader (server/cluster/markers.py)."""
        key = (topic, partition)
        plog = self._logs.get(key)
        if plog is None or self._closed:
            return self._absent(topic, partition)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if self._logs.get(key) is not plog:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            entry = plog.producers.producers.get(producer_id)
            if entry is not None and producer_epoch < entry.epoch:
                log.error(
                    "%s-%d: marker epoch %d is older than %d", topic, partition, producer_epoch, entry.epoch
                )
                return ErrorCode.INVALID_PRODUCER_EPOCH
            blob = control_batch(producer_id, producer_epoch, commit, coordinator_epoch)
            h = parse_header(blob)
            base = plog.next_offset
            stored = plog.stored_bytes(blob, h)
            # enters the memory log only once committed (`_committed`), still under the lock: the last
            # stable offset never passes a marker that is not durable
            fut = self._submit(key, plog, base, base + h.last_offset_delta, stored, after_commit=True)
            return await asyncio.shield(fut)

    async def read_txn(self, transactional_id: str) -> TxnValue | None:
        """A transactional id's durable state, read on this log's own pool: the verification of every
        transactional batch must not take the connections the lease renewals use (the state store's)."""
        try:
            async with self.pool.acquire() as conn:
                value = await conn.fetchval(
                    "SELECT value FROM transactions WHERE transactional_id = $1", transactional_id
                )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise StorageError(f"transaction state read failed: {e}") from e
        return None if value is None else decode_txn(value)

    async def init_producer_id(self) -> tuple[int, int]:
        async with self.pool.acquire() as conn:
            return await conn.fetchval("SELECT nextval('producer_ids')"), 0
