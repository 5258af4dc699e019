"""The background side of the log: retention passes and the compaction cleaner.

One task runs both, so a partition is never cleaned and trimmed at once: retention every
`retention_check_interval_ms` (Kafka's `log.retention.check.interval.ms`), a cleaner pass every
`cleaner_backoff_ms` (`log.cleaner.backoff.ms`) when `cleaner_enable`. Heavy work (header walks, cleaning,
file removal) runs in worker threads; the event loop only swaps segment lists, which reads see at once.
Closing sets a flag the cleaner thread checks between batches, then waits for the task, so no thread is
left reading a closed file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.server.log.cleaner import CleanAborted, clean, discard, finish_swap, plan, swap_in
from groupcoord.server.log.flush import Flusher
from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.retention import drop_segments, due_segments, load_timestamps, remove_files
from groupcoord.server.log.segment import wall_ms

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MaintenanceConfig:
    retention_check_interval_ms: int = 300_000
    cleaner_backoff_ms: int = 15_000
    cleaner_enable: bool = True
    cleaner_io_max_bytes_per_second: float = float("inf")


@dataclass(slots=True)
class CleanerTotals:
    """Cumulative cleaner work, for tests, the bench and logs."""

    passes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    seconds: float = 0.0


class Maintenance:
    def __init__(
        self,
        config: MaintenanceConfig,
        logs: Callable[[], list[PartitionLog]],
        is_live: Callable[[PartitionLog], bool],
        flusher: Flusher | None,
        state_lock: asyncio.Lock,
    ) -> None:
        self.config = config
        self._logs = logs
        self._is_live = is_live
        self._flusher = flusher
        self._state_lock = state_lock
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.totals = CleanerTotals()

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="log-maintenance")

    def kick(self) -> None:
        """Run a retention pass (and a cleaner pass if due) now, e.g. after DeleteRecords."""
        self._wakeup.set()

    async def stop(self) -> None:
        self._stopping = True
        self._wakeup.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _loop(self) -> None:
        cfg = self.config
        start = time.monotonic()  # first passes one interval after start, as Kafka delays its first run
        next_retention = start + cfg.retention_check_interval_ms / 1000
        next_clean = start + cfg.cleaner_backoff_ms / 1000
        while not self._stopping:
            now = time.monotonic()
            kicked = self._wakeup.is_set()
            self._wakeup.clear()
            try:
                if kicked or now >= next_retention:
                    next_retention = now + cfg.retention_check_interval_ms / 1000
                    await self.retention_pass()
                if cfg.cleaner_enable and (kicked or now >= next_clean) and not self._stopping:
                    next_clean = now + cfg.cleaner_backoff_ms / 1000
                    await self.cleaner_pass()
            except Exception:
                log.exception("log maintenance pass failed")
            wait = (
                min(next_retention, next_clean if cfg.cleaner_enable else next_retention) - time.monotonic()
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), max(wait, 0.001))

    async def _wait_idle(self, plog: PartitionLog) -> None:
        while plog.busy:
            await asyncio.sleep(0.005)

    async def retention_pass(self) -> int:
        """Delete due segments of every partition; returns how many segments went."""
        deleted = 0
        for plog in self._logs():
            if self._stopping:
                break
            if any(s.max_timestamp < 0 and s.size for s in plog.segments):
                plog.busy += 1
                try:
                    await asyncio.to_thread(load_timestamps, plog)
                finally:
                    plog.busy -= 1
            if not self._is_live(plog):
                continue
            doomed = due_segments(plog, wall_ms())
            if not doomed:
                continue
            if self._flusher is not None:
                async with self._flusher.paused():
                    drop_segments(plog, doomed)
            else:
                drop_segments(plog, doomed)
            await self._wait_idle(plog)
            async with self._state_lock:
                await asyncio.to_thread(remove_files, plog, doomed)
            deleted += len(doomed)
            log.info(
                "%s-%d: retention deleted %d segment(s); log start offset %d",
                plog.topic,
                plog.partition,
                len(doomed),
                plog.log_start_offset,
            )
        return deleted

    async def cleaner_pass(self) -> int:
        """Compact every partition that is due; returns how many were cleaned."""
        cleaned = 0
        for plog in self._logs():
            if self._stopping:
                break
            p = plan(plog, wall_ms())
            if p is None:
                continue
            started = time.monotonic()
            if not plog.gaps:  # durable before any cleaned segment can exist (recovery then allows gaps)
                plog.gaps = True
                async with self._state_lock:
                    await asyncio.to_thread(plog.save_state)
            plog.busy += 1
            try:
                stats = await asyncio.to_thread(
                    clean,
                    plog,
                    p,
                    abort=lambda plog=plog: self._stopping or not self._is_live(plog),
                    io_rate=self.config.cleaner_io_max_bytes_per_second,
                )
            except CleanAborted:
                continue
            finally:
                plog.busy -= 1
            if not self._is_live(plog):
                for g in stats.groups:
                    discard(g)
                continue
            old = swap_in(plog, stats, p.end)
            await self._wait_idle(plog)
            async with self._state_lock:
                await asyncio.to_thread(finish_swap, plog, old)
            elapsed = time.monotonic() - started
            t = self.totals
            t.passes += 1
            t.bytes_read += stats.bytes_read
            t.bytes_written += stats.bytes_written
            t.seconds += elapsed
            cleaned += 1
            log.info(
                "%s-%d: cleaned offsets [%d, %d): %d -> %d bytes, %d of %d records kept, %.3f s",
                plog.topic,
                plog.partition,
                plog.log_start_offset,
                p.end,
                stats.bytes_read,
                stats.bytes_written,
                stats.records_kept,
                stats.records_read,
                elapsed,
            )
        return cleaned
