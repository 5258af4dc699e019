"""The transaction coordinator service: runs the pure `TxnStateMachine`, persists before answering, writes
the COMMIT/ABORT markers through the log and completes the groups' transactional offsets.

Why this shape:

* One lock per transactional id serialises its requests (Kafka serialises them through the transaction
  log partition). Different ids run concurrently; their state writes share the store's group commit.
* Persist-then-reply: a decision's `TxnRecord` is durable before its effect is visible or answered. For
  EndTxn the order is Kafka's: PrepareCommit/PrepareAbort durable, then a marker to every partition (acks=all
  under the "always" flush policy) and the completion of every group's pending offsets, then the Complete*
  record. The client is answered after the Complete* record here (Kafka answers after Prepare*); the markers
  are local writes, so this costs little and spares clients CONCURRENT_TRANSACTIONS retries.
* Recovery (kill -9): the records are replayed; a Prepare* state re-writes its markers and group completions
  (both idempotent) and completes; an Ongoing one keeps its start time and is aborted by the timeout check
  like any other, with a bumped epoch, as Kafka's coordinator does after a failover.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.records import TxnRecord, TxnValue
from groupcoord.server.log.manager import LogManager
from groupcoord.server.storage.base import StateStore, StorageError
from groupcoord.server.storage.persist import Persister
from groupcoord.server.storage.postgres import FencedError
from groupcoord.server.txn.state import ONGOING, STATES, Decision, Markers, TxnStateMachine

log = structlog.get_logger("groupcoord.txn")
E = ErrorCode

#: (group id, producer id, commit) -> durable?: the group coordinator's side of a transaction marker
CompleteGroup = Callable[[str, int, bool], Awaitable[bool]]
#: (topic, partition, producer id, producer epoch, commit, coordinator epoch) -> error: one marker written
WriteMarker = Callable[[str, int, int, int, bool, int], Awaitable[ErrorCode]]
#: a transactional id's durable state (cluster mode: read where the coordinator wrote it)
ReadTxn = Callable[[str], Awaitable[TxnValue | None]]


@dataclass(frozen=True, slots=True)
class TxnListing:
    transactional_id: str
    producer_id: int
    state: str


class TxnCoordinator:
    """Transactional ids on this node; see the module docstring."""

    def __init__(
        self,
        store: StateStore,
        logs: LogManager,
        complete_group: CompleteGroup,
        allocate_producer_id: Callable[[], Awaitable[int]],
        now_ms: Callable[[], int],
        *,
        max_timeout_ms: int = 900_000,
        cleanup_interval_ms: int = 10_000,
        coordinator_epoch: int = 0,
        write_marker: WriteMarker | None = None,
        read_txn: ReadTxn | None = None,
        epoch_of: Callable[[str], int] | None = None,
    ) -> None:
        self.machine = TxnStateMachine(max_timeout_ms=max_timeout_ms)
        self.store = store
        self.persister = Persister(store)  # persist, then answer (storage/persist.py)
        self.logs = logs
        self.complete_group = complete_group
        self.allocate_producer_id = allocate_producer_id
        self.now_ms = now_ms
        self.cleanup_interval_ms = cleanup_interval_ms
        self.coordinator_epoch = coordinator_epoch
        #: cluster mode: markers go through each partition's leader (server/cluster/markers.py)
        self.write_marker: WriteMarker = write_marker or logs.write_marker
        #: cluster mode: the durable state of ids coordinated elsewhere (None on a single node)
        self.read_txn = read_txn
        #: cluster mode: the coordinator epoch of an id = its shard's lease epoch (markers carry it)
        self.epoch_of = epoch_of
        self._locks: dict[str, asyncio.Lock] = {}
        self._task: asyncio.Task[None] | None = None
        self._recoveries: set[asyncio.Task[None]] = set()
        self.timed_out_aborts = 0  # transactions aborted by the timeout check (tests, metrics)

    # -------------------------------------------------------------------------------- life cycle
    def replay(self, record: TxnRecord) -> None:
        self.machine.replay(record.transactional_id, record.value)

    def load(self, records: list[TxnRecord]) -> None:
        """Cluster mode's takeover of coordinator shards: adopt their transactional ids' durable state and
        finish, in the background, what a dead or deposed coordinator left in Prepare*; an Ongoing one goes
        on (its producer finds this node) or is aborted by the timeout check, as after a Kafka failover."""
        for record in records:
            self.replay(record)
        prepared = [
            r.transactional_id for r in records if r.value is not None and r.value.state.startswith("Prepare")
        ]
        if prepared:
            task = asyncio.get_running_loop().create_task(self._finish_all(prepared), name="txn-recovery")
            self._recoveries.add(task)
            task.add_done_callback(self._recoveries.discard)

    async def _finish_all(self, tids: list[str]) -> None:
        for tid in tids:
            try:
                await self._finish_prepared(tid)
            except Exception:
                log.exception("finishing a prepared transaction failed", transactional_id=tid)

    def unload(self, tids: list[str]) -> None:
        """Forget ids whose shard this node gave up: their new coordinator owns them (writes here would be
        fenced anyway)."""
        for tid in tids:
            self.machine.txns.pop(tid, None)

    def start(self) -> None:
        """Finish transactions a crash left in Prepare*, then check timeouts periodically."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="txn-timeouts")

    async def close(self) -> None:
        for task in list(self._recoveries):
            task.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _run(self) -> None:
        for tid in list(self.machine.txns):
            await self._finish_prepared(tid)
        while True:
            await asyncio.sleep(self.cleanup_interval_ms / 1000)
            try:
                await self.abort_timed_out()
            except Exception:
                log.exception("transaction timeout check failed")

    async def abort_timed_out(self) -> int:
        """Abort every Ongoing transaction past its timeout (bumping the epoch); retry stuck Prepare* states."""
        n = 0
        for tid in self.machine.timed_out(self.now_ms()):
            async with self._lock(tid):
                decision = self.machine.timeout_abort(tid, self.now_ms())
                if decision.value is None:
                    continue
                log.info("aborting timed-out transaction", transactional_id=tid)
                if await self._decide(tid, decision) == E.NONE:
                    n += 1
                    self.timed_out_aborts += 1
        for tid in [t for t, v in self.machine.txns.items() if v.state.startswith("Prepare")]:
            await self._finish_prepared(tid)
        return n

    async def _finish_prepared(self, tid: str) -> None:
        async with self._lock(tid):
            markers = self.machine.markers_of(tid)
            if markers is not None:
                await self._complete(markers)

    def _lock(self, tid: str) -> asyncio.Lock:
        lock = self._locks.get(tid)
        if lock is None:
            lock = self._locks[tid] = asyncio.Lock()
        return lock

    # ------------------------------------------------------------------------------------- steps
    async def _persist(self, tid: str, value: TxnValue) -> ErrorCode:
        try:
            await self.persister.write([TxnRecord(tid, value)])
        except FencedError as e:  # cluster mode: the id's shard moved; its new owner answers from now on
            log.warning("transaction state write fenced", transactional_id=tid, error=str(e))
            self.machine.txns.pop(tid, None)
            return E.NOT_COORDINATOR
        except StorageError as e:
            log.error("transaction state write failed", transactional_id=tid, error=str(e))
            return E.COORDINATOR_NOT_AVAILABLE
        self.machine.apply(tid, value)
        return E.NONE

    async def _decide(self, tid: str, decision: Decision) -> ErrorCode:
        """Persist a decision, then write its markers and complete; the error to answer."""
        if decision.value is not None and (err := await self._persist(tid, decision.value)) != E.NONE:
            return err
        if decision.markers is not None:
            await self._complete(decision.markers)
        return decision.error

    async def _complete(self, m: Markers) -> bool:
        """Markers to every partition, completion of every group, then Complete* (durable)."""
        epoch = self.coordinator_epoch if self.epoch_of is None else self.epoch_of(m.transactional_id)
        # every partition and group at once: in cluster mode each may be another node's, retried on its own
        written = await asyncio.gather(
            *(
                self.write_marker(topic, partition, m.producer_id, m.producer_epoch, m.commit, epoch)
                for topic, partition in m.partitions
            )
        )
        completed = await asyncio.gather(*(self.complete_group(g, m.producer_id, m.commit) for g in m.groups))
        # a deleted topic needs no marker
        ok = all(err in (E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION) for err in written) and all(completed)
        if not ok:  # left in Prepare*: the periodic check (or the next start) finishes it
            log.warning("transaction markers incomplete; will retry", transactional_id=m.transactional_id)
            return False
        value = self.machine.complete(m.transactional_id, self.now_ms())
        return value is not None and await self._persist(m.transactional_id, value) == E.NONE

    # ---------------------------------------------------------------------------------- requests
    async def init_producer_id(
        self, tid: str, timeout_ms: int, producer_id: int = -1, producer_epoch: int = -1
    ) -> tuple[ErrorCode, int, int]:
        async with self._lock(tid):
            for _ in range(3):  # an ongoing transaction is aborted first, then the epoch is bumped
                fresh = await self.allocate_producer_id() if self.machine.needs_producer_id(tid) else None
                decision = self.machine.init_producer_id(
                    tid, timeout_ms, producer_id, producer_epoch, fresh, self.now_ms()
                )
                err = await self._decide(tid, decision)
                if err != E.NONE or not decision.retry_init:
                    break
                producer_id = producer_epoch = -1  # the fence is done: the new producer takes over
            if err != E.NONE:
                return err, -1, -1
            v = self.machine.get(tid)
            assert v is not None
            return E.NONE, v.producer_id, v.producer_epoch

    async def add_partitions(
        self, tid: str, producer_id: int, epoch: int, partitions: tuple[tuple[str, int], ...]
    ) -> ErrorCode:
        async with self._lock(tid):
            return await self._decide(
                tid, self.machine.add_partitions(tid, producer_id, epoch, partitions, self.now_ms())
            )

    async def add_offsets(self, tid: str, producer_id: int, epoch: int, group_id: str) -> ErrorCode:
        async with self._lock(tid):
            return await self._decide(
                tid, self.machine.add_group(tid, producer_id, epoch, group_id, self.now_ms())
            )

    async def end_txn(self, tid: str, producer_id: int, epoch: int, commit: bool) -> ErrorCode:
        async with self._lock(tid):
            return await self._decide(
                tid, self.machine.end_txn(tid, producer_id, epoch, commit, self.now_ms())
            )

    def verify(self, tid: str, producer_id: int, epoch: int, topic: str, partition: int) -> ErrorCode:
        """Synchronous: call it right before the append, with no await in between."""
        return self.machine.verify_partition(tid, producer_id, epoch, topic, partition)

    async def verify_durable(
        self, tid: str, producer_id: int, epoch: int, topic: str, partition: int
    ) -> ErrorCode:
        """Cluster mode's `verify` on a partition leader: the id's state as its coordinator (any node) made
        it durable. The leader calls it under the partition's append lock, and the coordinator writes
        Prepare* before any marker, which that same lock orders after the append: no batch of a
        transaction can land after its marker (no hanging transaction)."""
        if self.read_txn is None:
            return self.verify(tid, producer_id, epoch, topic, partition)
        try:
            value = await self.read_txn(tid)
        except StorageError:
            return E.KAFKA_STORAGE_ERROR
        return TxnStateMachine.verify_value(value, producer_id, epoch, topic, partition)

    async def check_offsets_producer_durable(
        self, tid: str, producer_id: int, epoch: int, group_id: str
    ) -> ErrorCode:
        """Cluster mode's TxnOffsetCommit producer check on a group coordinator that may not coordinate
        `tid`: against the state its coordinator made durable."""
        if self.read_txn is None:
            return self.check_offsets_producer(tid, producer_id, epoch, group_id)
        try:
            value = await self.read_txn(tid)
        except StorageError:
            return E.COORDINATOR_NOT_AVAILABLE
        return self._offsets_producer(value, producer_id, epoch, group_id)

    def check_offsets_producer(self, tid: str, producer_id: int, epoch: int, group_id: str) -> ErrorCode:
        """TxnOffsetCommit's producer check: the group must be in this producer's ongoing transaction."""
        return self._offsets_producer(self.machine.get(tid), producer_id, epoch, group_id)

    @staticmethod
    def _offsets_producer(v: TxnValue | None, producer_id: int, epoch: int, group_id: str) -> ErrorCode:
        if v is None or v.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if epoch != v.producer_epoch:
            return E.PRODUCER_FENCED
        if v.state != ONGOING or group_id not in v.groups:
            return E.INVALID_TXN_STATE
        return E.NONE

    # ------------------------------------------------------------------------------- operators
    def describe(self, tid: str) -> TxnValue | None:
        return self.machine.get(tid)

    def list(
        self,
        states: tuple[str, ...],
        producer_ids: tuple[int, ...],
        min_duration_ms: int,
        pattern: str | None,
    ) -> tuple[list[TxnListing], list[str]]:
        """ListTransactions' filters; returns the listings and the unknown state names. A bad pattern
        raises `re.error` (the handler answers INVALID_REGULAR_EXPRESSION)."""
        unknown = [s for s in states if s not in STATES]
        rx = re.compile(pattern) if pattern else None
        now = self.now_ms()
        out = []
        for tid, v in sorted(self.machine.txns.items()):
            if states and v.state not in states:
                continue
            if producer_ids and v.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and (v.start_ms < 0 or now - v.start_ms < min_duration_ms):
                continue
            if rx is not None and not rx.fullmatch(tid):
                continue
            out.append(TxnListing(tid, v.producer_id, v.state))
        return out, unknown
