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
from groupcoord.server.txn.state import ONGOING, STATES, Decision, Markers, TxnStateMachine

log = structlog.get_logger("groupcoord.txn")
E = ErrorCode

#: (group id, producer id, commit) -> durable?: the group coordinator's side of a transaction marker
CompleteGroup = Callable[[str, int, bool], Awaitable[bool]]


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
    ) -> None:
        self.machine = TxnStateMachine(max_timeout_ms=max_timeout_ms)
        self.store = store
        self.logs = logs
        self.complete_group = complete_group
        self.allocate_producer_id = allocate_producer_id
        self.now_ms = now_ms
        self.cleanup_interval_ms = cleanup_interval_ms
        self.coordinator_epoch = coordinator_epoch
        self._locks: dict[str, asyncio.Lock] = {}
        self._task: asyncio.Task[None] | None = None
        self.timed_out_aborts = 0  # transactions aborted by the timeout check (tests, metrics)

    # -------------------------------------------------------------------------------- life cycle
    def replay(self, record: TxnRecord) -> None:
        self.machine.replay(record.transactional_id, record.value)

    def start(self) -> None:
        """Finish transactions a crash left in Prepare*, then check timeouts periodically."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="txn-timeouts")

    async def close(self) -> None:
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
    async def _persist(self, tid: str, value: TxnValue) -> bool:
        try:
            await self.store.write([TxnRecord(tid, value)])
        except StorageError as e:
            log.error("transaction state write failed", transactional_id=tid, error=str(e))
            return False
        self.machine.apply(tid, value)
        return True

    async def _decide(self, tid: str, decision: Decision) -> ErrorCode:
        """Persist a decision, then write its markers and complete; the error to answer."""
        if decision.value is not None and not await self._persist(tid, decision.value):
            return E.COORDINATOR_NOT_AVAILABLE
        if decision.markers is not None:
            await self._complete(decision.markers)
        return decision.error

    async def _complete(self, m: Markers) -> bool:
        """Markers to every partition, completion of every group, then Complete* (durable)."""
        ok = True
        for topic, partition in m.partitions:
            err = await self.logs.write_marker(
                topic, partition, m.producer_id, m.producer_epoch, m.commit, self.coordinator_epoch
            )
            if err not in (E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION):  # a deleted topic needs no marker
                ok = False
        for group_id in m.groups:
            if not await self.complete_group(group_id, m.producer_id, m.commit):
                ok = False
        if not ok:  # left in Prepare*: the periodic check (or the next start) finishes it
            log.warning("transaction markers incomplete; will retry", transactional_id=m.transactional_id)
            return False
        value = self.machine.complete(m.transactional_id, self.now_ms())
        return value is not None and await self._persist(m.transactional_id, value)

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

    def check_offsets_producer(self, tid: str, producer_id: int, epoch: int, group_id: str) -> ErrorCode:
        """TxnOffsetCommit's producer check: the group must be in this producer's ongoing transaction."""
        v = self.machine.get(tid)
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
