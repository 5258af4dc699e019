"""Retention and compaction of cluster mode's records in PostgreSQL (issue 27), run by each partition's
leader under its lease, with the single-node log's own rules.

Every node runs one loop over the partitions it leads and has loaded (`ClusterLog.led`):

* **Retention**, every `log.retention.check.interval.ms`: for a topic whose `cleanup.policy` includes
  `delete`, the oldest stored batches whose newest record is older than `retention.ms`, or whose removal
  still leaves the partition at least `retention.bytes` large, go (oldest first, stopping at the first that
  stays), as `UnifiedLog.deleteOldSegments` deletes segments. The log start offset moves past them in the
  partition's lease row and the batches wholly below it are deleted in the same fenced statement as
  DeleteRecords (`ClusterLog.trim`): a deposed leader's pass changes nothing. The newest stored batch stays
  as a row even when due (it holds the log end for the next leader); the log start offset passes it, so
  clients see an empty log starting at the log end, as Kafka shows a log whose every segment was deleted.
* **Compaction**, every `log.cleaner.backoff.ms` when `log.cleaner.enable`: for `cleanup.policy=compact`
  (or `compact,delete`) the leader's memory copy is cleaned by the segment log's own cleaner
  (`server/log/cleaner.py`: `plan` — non-active segments, `min.compaction.lag.ms`, `min.cleanable.dirty.ratio`,
  `max.compaction.lag.ms`; `clean` in a worker thread — offset map, superseded records and expired
  tombstones dropped, emptied batches gone, offsets kept), then `ClusterLog.replace_cleaned` replaces the
  range's stored batches with the cleaned ones in one fenced transaction before the memory copy swaps them
  in. The memory copy's segments roll at the topic's `segment.bytes` / `segment.ms`, so those bound what
  one pass can clean, as on disk. A new leader starts with the cleaner checkpoint at the log start and
  simply finds the range already clean.

Both run one after the other in one task, so a clean never reads a segment retention is dropping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from groupcoord.server.cluster.cluster_log import ClusterLog
from groupcoord.server.log import cleaner
from groupcoord.server.log.maintenance import MaintenanceConfig
from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.segment import wall_ms

log = logging.getLogger(__name__)


def retention_target(plog: PartitionLog, now_ms: int) -> int | None:
    """The log start offset retention moves `plog` to now, or None (nothing due, or no `delete` policy)."""
    cfg = plog.config
    if "delete" not in cfg.cleanup_policy or (cfg.retention_ms < 0 and cfg.retention_bytes < 0):
        return None
    headers = list(plog.iter_headers(plog.log_start_offset))
    remaining = sum(h.size for h in headers)
    target: int | None = None
    for h in headers:
        by_time = cfg.retention_ms >= 0 and now_ms - h.max_timestamp > cfg.retention_ms
        by_size = cfg.retention_bytes >= 0 and remaining - h.size >= cfg.retention_bytes
        if not (by_time or by_size):
            break
        remaining -= h.size
        target = h.next_offset
    return target


class ClusterMaintenance:
    """The retention and compaction loop of one node's led partitions; see the module docstring."""

    def __init__(self, logs: ClusterLog, config: MaintenanceConfig) -> None:
        self.logs = logs
        self.config = config
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="cluster-log-maintenance")

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        cfg = self.config
        now = time.monotonic()
        next_retention = now + cfg.retention_check_interval_ms / 1000
        next_clean = now + cfg.cleaner_backoff_ms / 1000
        while not self._stopping:
            due = [next_retention] + ([next_clean] if cfg.cleaner_enable else [])
            await asyncio.sleep(max(0.0, min(due) - time.monotonic()))
            now = time.monotonic()
            try:
                if now >= next_retention:
                    next_retention = now + cfg.retention_check_interval_ms / 1000
                    await self.retention_pass()
                if cfg.cleaner_enable and now >= next_clean:
                    next_clean = now + cfg.cleaner_backoff_ms / 1000
                    await self.cleaner_pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("cluster log maintenance pass failed; the next one retries")

    async def retention_pass(self, now_ms: int | None = None) -> int:
        """Trim every led partition that has batches due; returns how many were trimmed."""
        now_ms = wall_ms() if now_ms is None else now_ms
        trimmed = 0
        for key, plog in self.logs.led():
            target = retention_target(plog, now_ms)
            if target is not None and await self.logs.trim(key, plog, target):
                trimmed += 1
        return trimmed

    async def cleaner_pass(self, now_ms: int | None = None) -> int:
        """Compact every led partition the cleaner's plan says is due; returns how many were compacted."""
        now_ms = wall_ms() if now_ms is None else now_ms
        cleaned = 0
        for key, plog in self.logs.led():
            p = cleaner.plan(plog, now_ms)
            if p is None:
                continue

            def gone(key: tuple[str, int] = key, plog: PartitionLog = plog) -> bool:
                return self._stopping or self.logs.partition(*key) is not plog

            try:
                stats = await asyncio.to_thread(
                    cleaner.clean, plog, p, abort=gone, io_rate=self.config.cleaner_io_max_bytes_per_second
                )
            except cleaner.CleanAborted:
                continue
            if await self.logs.replace_cleaned(key, plog, stats, p.end):
                cleaned += 1
                log.info(
                    "%s-%d compacted: %d of %d records kept",
                    *key, stats.records_kept, stats.records_read,
                )  # fmt: skip
        return cleaned
