"""The flush policy and the group-commit flusher behind it.

The flusher owns every fsync of the data plane. Appends mark their partition dirty; an acks=all append
under the "always" policy also registers a waiter for "durable up to offset N" and wakes the flusher. One
flush round takes every dirty partition, notes its log end offset, fsyncs its dirty segment files in
worker threads (all files in parallel: the filesystem folds concurrent fsyncs into a shared journal
commit) and then marks those offsets durable and releases the waiters they cover. Appends that arrive
during a round are covered by the next one, so N concurrent acks=all producers share one fsync.

Producer-state snapshots requested by segment rolls are written in the same round, after the fsync of the
data they describe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, NamedTuple

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.segment import Segment

log = logging.getLogger(__name__)

FSYNC_THREADS = 8


class FlushPolicy(NamedTuple):
    """`always` (acks=all waits for fsync), `never` (fsync at close only), or `interval` (every N ms)."""

    kind: Literal["always", "never", "interval"]
    interval_ms: int = 0

    @classmethod
    def parse(cls, value: str | int) -> FlushPolicy:
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            ms = int(value)
            if ms <= 0:
                raise ValueError("flush interval must be > 0 ms")
            return cls("interval", ms)
        if value in ("always", "acks-all"):  # "acks-all" is the CLI's name for it
            return cls("always")
        if value == "never":
            return cls("never")
        if value.startswith("interval:") and value[9:].isdigit() and int(value[9:]) > 0:
            return cls("interval", int(value[9:]))
        raise ValueError(f"unknown flush policy {value!r}: use always, never or interval:<ms>")


class Flusher:
    """Group commit for a set of partition logs; see the module docstring."""

    def __init__(self, policy: FlushPolicy, background_flush_ms: int) -> None:
        self.policy = policy
        self.background_flush_ms = background_flush_ms
        self.rounds = 0  # fsync rounds performed (tests and the bench count group commits with it)
        self._dirty: set[PartitionLog] = set()
        self._waiters: list[tuple[PartitionLog, int, asyncio.Future[ErrorCode]]] = []
        self._wakeup = asyncio.Event()
        self._lock = asyncio.Lock()  # held for a whole round: files must not close during one
        self._task: asyncio.Task[None] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._stopping = False

    def start(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=FSYNC_THREADS, thread_name_prefix="log-fsync")
        self._task = asyncio.create_task(self._loop(), name="log-flusher")

    async def stop(self) -> None:
        """Fsync everything still dirty (whatever the policy) and stop; waiters left get an error."""
        if self._task is not None:  # let it finish its current round
            self._stopping = True
            self._wakeup.set()
            await self._task
            self._task = None
        if self._pool is not None:
            await self._round(fsync=True)
            self._pool.shutdown(wait=True)
            self._pool = None
        for _, _, fut in self._waiters:
            if not fut.done():
                fut.set_result(ErrorCode.KAFKA_STORAGE_ERROR)
        self._waiters = []

    def mark_dirty(self, plog: PartitionLog) -> None:
        self._dirty.add(plog)

    async def wait_durable(self, plog: PartitionLog, offset: int) -> ErrorCode:
        """Wait until `plog` is fsynced up to (excluding) `offset`; KAFKA_STORAGE_ERROR if it cannot be."""
        if plog.durable_offset >= offset:
            return ErrorCode.NONE
        if self._task is None:
            return ErrorCode.KAFKA_STORAGE_ERROR
        fut: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self._waiters.append((plog, offset, fut))
        self._dirty.add(plog)
        self._wakeup.set()
        return await fut

    async def flush(self) -> None:
        """One fsync round now."""
        await self._round(fsync=True)

    @contextlib.asynccontextmanager
    async def paused(self):  # type: ignore[no-untyped-def]
        """Hold off flush rounds (while partitions close)."""
        async with self._lock:
            yield

    def forget(self, logs: list[PartitionLog], code: ErrorCode) -> None:
        """Drop partitions that are going away; their waiters get `code`."""
        doomed = set(logs)
        self._dirty -= doomed
        for plog, _, fut in self._waiters:
            if plog in doomed and not fut.done():
                fut.set_result(code)
        self._waiters = [w for w in self._waiters if w[0] not in doomed]

    async def _loop(self) -> None:
        kind = self.policy.kind
        period = (self.policy.interval_ms if kind == "interval" else self.background_flush_ms) / 1000
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), period)
            self._wakeup.clear()
            if self._stopping:
                return
            try:
                # "never" still writes producer snapshots of rolled segments, without fsyncing the logs
                await self._round(fsync=kind != "never")
                # acks=all appends that arrived during that round share the next one
                while self._waiters and not self._stopping:
                    await self._round(fsync=True)
            except Exception:  # keep the flusher alive, and never leave an acks=all producer hanging
                log.exception("flush failed")
                waiters, self._waiters = self._waiters, []
                for _, _, fut in waiters:
                    if not fut.done():
                        fut.set_result(ErrorCode.KAFKA_STORAGE_ERROR)

    async def _round(self, *, fsync: bool) -> None:
        async with self._lock:
            logs = list(self._dirty) if fsync else [p for p in self._dirty if p.pending_snapshot]
            work: list[tuple[PartitionLog, list[Segment], int, dict | None]] = []
            for plog in logs:
                if fsync:
                    self._dirty.discard(plog)
                    segs, target = plog.begin_flush()
                else:
                    segs, target = [], -1
                snap, plog.pending_snapshot = plog.pending_snapshot, None
                work.append((plog, segs, target, snap))
            if work and self._pool is not None:
                loop = asyncio.get_running_loop()
                results = await asyncio.gather(
                    *(loop.run_in_executor(self._pool, _sync_one, w) for w in work)
                )
                if fsync:
                    self.rounds += 1
                for (plog, _, target, _), err in zip(work, results, strict=True):
                    if err is not None:
                        plog.offline_reason = f"fsync failed: {err}"
                        log.error("%s-%d: %s", plog.topic, plog.partition, plog.offline_reason)
                    elif target > plog.durable_offset:
                        plog.durable_offset = target
            self._resolve()

    def _resolve(self) -> None:
        pending = []
        for plog, target, fut in self._waiters:
            if fut.done():
                continue
            if plog.offline_reason is not None:
                fut.set_result(ErrorCode.KAFKA_STORAGE_ERROR)
            elif plog.durable_offset >= target:
                fut.set_result(ErrorCode.NONE)
            else:
                pending.append((plog, target, fut))
                self._dirty.add(plog)
        self._waiters = pending


def _sync_one(item: tuple[PartitionLog, list[Segment], int, dict | None]) -> OSError | None:
    """Thread side of a round for one partition: fsync its dirty segments, then write its snapshot.

    After a failed fsync the page cache state is unknown (the kernel may have dropped the dirty pages), so
    the caller takes the partition offline rather than retrying.
    """
    plog, segs, _, snap = item
    try:
        for seg in segs:
            seg.fsync()
        if snap is not None:
            plog.write_producer_snapshot(snap)
    except OSError as e:
        return e
    return None
