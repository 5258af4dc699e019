"""Log compaction for `cleanup.policy=compact` (and `compact,delete`), after Kafka's `LogCleaner`.

One pass over a partition (`plan` on the event loop, `clean` in a worker thread, `swap_in`/`finish_swap`
to install the result):

* **Cleanable range**: the non-active segments from the log start, up to the first segment that is not yet
  fsynced or that holds a record newer than `min.compaction.lag.ms`. The active segment is never touched.
* **When**: the dirty part (from the cleaner checkpoint to the end of the range) is at least
  `min.cleanable.dirty.ratio` of the range's bytes, or a dirty segment is older than `max.compaction.lag.ms`.
* **Offset map**: the latest offset of every key in the dirty part. Every record of the range whose key maps
  to a later offset is dropped; the rest keep their bytes and offsets (batches are rewritten with a new
  length, count and CRC; an emptied batch disappears, leaving an offset gap, as in Kafka).
* **Tombstones** (null value) are dropped once their segment was last modified before the delete horizon:
  the last already-cleaned segment's modification time minus `delete.retention.ms` (Kafka's rule before
  KIP-534). So a tombstone survives at least one clean and `delete.retention.ms`.
* Control batches and batches in codecs the standard library cannot open (snappy, lz4, zstd) are kept whole.
* **Output**: consecutive segments are grouped up to `segment.bytes` and each group is written to one new
  segment named after the group's first base offset, via the crash-safe swap in `logstate.py`.
* **Bounds**: the thread reads and writes at most `io_max_bytes_per_second` (Kafka's
  `log.cleaner.io.max.bytes.per.second`), sleeping to stay under it, and yields the GIL between batches.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from groupcoord.server.log.batch import BatchHeader, iter_valid
from groupcoord.server.log.logstate import CLEANED, DELETED, SWAP, fsync_dir
from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.records import can_decode, parse_records, rebuild, records_section
from groupcoord.server.log.segment import DiskFile, MemoryFile, Segment, segment_name


class CleanAborted(Exception):
    """The partition went away (deleted topic, shutdown) during a clean; nothing was installed."""


@dataclass
class CleanPlan:
    segments: list[Segment]  # from the log start to `end`, all non-active and fsynced
    first_dirty: int
    end: int  # first offset not cleaned this pass
    delete_horizon_ms: int


@dataclass
class CleanedGroup:
    old: list[Segment]
    data: DiskFile | MemoryFile
    headers: list[BatchHeader]
    max_timestamp: int
    last_modified_ms: int


@dataclass
class CleanStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    groups: list[CleanedGroup] = field(default_factory=list)


class Throttler:
    """Keep a byte rate under `rate` per second by sleeping (Kafka's cleaner throttler)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.start = time.monotonic()
        self.done = 0

    def account(self, n: int) -> None:
        self.done += n
        if self.rate <= 0 or self.rate == float("inf"):
            return
        ahead = self.done / self.rate - (time.monotonic() - self.start)
        if ahead > 0.001:
            time.sleep(ahead)


def dirty_ratio(plog: PartitionLog, segments: list[Segment], first_dirty: int) -> float:
    clean = dirty = 0
    for i, seg in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else seg.next_offset
        if upper <= first_dirty:
            clean += seg.size
        else:
            dirty += seg.size
    return dirty / (clean + dirty) if clean + dirty else 0.0


def plan(plog: PartitionLog, now_ms: int) -> CleanPlan | None:
    """What to clean now, or None (not compacted, nothing dirty enough, partition damaged)."""
    cfg = plog.config
    if not plog.compacted or plog.corrupt_offset is not None or plog.offline_reason is not None:
        return None
    segs: list[Segment] = []
    for seg in plog.segments[:-1]:
        if seg in plog.unsynced:
            break
        if cfg.min_compaction_lag_ms > 0 and seg.max_timestamp > now_ms - cfg.min_compaction_lag_ms:
            break
        segs.append(seg)
    if not segs:
        return None
    end = plog.bases[len(segs)]
    first_dirty = max(plog.cleaner_offset, plog.log_start_offset)
    if first_dirty >= end:
        return None
    overdue = any(
        seg.next_offset > first_dirty and 0 <= seg.max_timestamp < now_ms - cfg.max_compaction_lag_ms
        for seg in segs
    )
    if not overdue and dirty_ratio(plog, segs, first_dirty) < cfg.min_cleanable_dirty_ratio:
        return None
    last_clean = [s for i, s in enumerate(segs) if (plog.bases[i + 1]) <= first_dirty]
    horizon = last_clean[-1].last_modified_ms - cfg.delete_retention_ms if last_clean else 0
    return CleanPlan(segs, first_dirty, end, horizon)


def _batches(seg: Segment) -> list[tuple[BatchHeader, bytes]]:
    data = seg.data.pread(seg.size, 0)
    return [(h, data[h.position : h.position + h.size]) for h in iter_valid(data)]


def clean(
    plog: PartitionLog,
    p: CleanPlan,
    *,
    abort: Callable[[], bool],
    io_rate: float = float("inf"),
) -> CleanStats:
    """Thread side: build the offset map over the dirty part, then write the cleaned groups as `.swap`
    files (committed; `swap_in` installs them). Reads only immutable segments; writes only new files."""
    stats = CleanStats()
    throttle = Throttler(io_rate)
    latest: dict[bytes, int] = {}
    for seg in p.segments:
        if seg.base_offset >= p.end or _upper(p, seg) <= p.first_dirty:
            continue
        for h, raw in _batches(seg):
            _check(abort)
            throttle.account(h.size)
            if h.is_control or not can_decode(h) or h.next_offset <= p.first_dirty:
                continue
            for r in parse_records(records_section(raw, h), h):
                if r.key is not None and r.offset >= p.first_dirty:
                    latest[r.key] = r.offset
    for group in _groups(p.segments, plog.segment_bytes):
        out = _new_output(plog, group[0].base_offset)
        headers: list[BatchHeader] = []
        max_ts = -1
        try:
            for seg in group:
                for h, raw in _batches(seg):
                    _check(abort)
                    stats.bytes_read += h.size
                    kept = _filter(h, raw, latest, seg.last_modified_ms <= p.delete_horizon_ms, stats)
                    if kept is None:
                        continue
                    kh = BatchHeader(*_header_fields(h, len(kept)), position=out.size)
                    out.append([kept])
                    headers.append(kh)
                    max_ts = max(max_ts, h.max_timestamp)
                    stats.bytes_written += len(kept)
                    throttle.account(h.size + len(kept))
            out.fsync()
            if isinstance(out, DiskFile):  # the commit point: from here a restart completes the swap
                swap = out.path.with_name(out.path.name.replace(CLEANED, SWAP))
                os.replace(out.path, swap)
                out.path = swap
                fsync_dir(swap.parent)
        except BaseException:
            out.close()
            if isinstance(out, DiskFile):
                out.path.unlink(missing_ok=True)
            for g in stats.groups:  # committed swaps not yet installed: undo them, the old segments stay
                g.data.close()
                if isinstance(g.data, DiskFile):
                    g.data.path.unlink(missing_ok=True)
            raise
        stats.groups.append(CleanedGroup(group, out, headers, max_ts, group[-1].last_modified_ms))
    return stats


def _upper(p: CleanPlan, seg: Segment) -> int:
    i = p.segments.index(seg)
    return p.segments[i + 1].base_offset if i + 1 < len(p.segments) else p.end


_last_yield = [0.0]


def _check(abort: Callable[[], bool]) -> None:
    """Between batches: stop if asked, and every millisecond of work hand the GIL to the event loop
    (the interpreter would otherwise keep it for up to its 5 ms switch interval)."""
    if abort():
        raise CleanAborted()
    now = time.perf_counter()
    if now - _last_yield[0] > 0.001:
        time.sleep(0)
        _last_yield[0] = time.perf_counter()


def _groups(segments: list[Segment], max_bytes: int) -> list[list[Segment]]:
    """Consecutive segments whose total size fits one segment (Kafka's `groupSegmentsBySize`)."""
    groups: list[list[Segment]] = []
    for seg in segments:
        if groups and sum(s.size for s in groups[-1]) + seg.size <= max_bytes:
            groups[-1].append(seg)
        else:
            groups.append([seg])
    return groups


def _new_output(plog: PartitionLog, base: int) -> DiskFile | MemoryFile:
    if plog.directory is None:
        return MemoryFile()
    path = plog.directory / f"{segment_name(base)}.log{CLEANED}"
    path.unlink(missing_ok=True)
    return DiskFile(path)


def _filter(
    h: BatchHeader, raw: bytes, latest: dict[bytes, int], drop_tombstones: bool, stats: CleanStats
) -> bytes | None:
    """The batch's bytes with superseded records (and expired tombstones) removed; None if none is left."""
    if h.is_control or not can_decode(h):
        return raw
    section = records_section(raw, h)
    records = parse_records(section, h)
    stats.records_read += len(records)
    keep = [
        r
        for r in records
        if r.key is None or (latest.get(r.key, -1) <= r.offset and not (r.tombstone and drop_tombstones))
    ]
    stats.records_kept += len(keep)
    if len(keep) == len(records):
        return raw
    if not keep:
        return None
    return rebuild(raw, h, section, keep)


def _header_fields(h: BatchHeader, size: int) -> tuple:
    return (
        h.base_offset,
        size - 12,
        h.partition_leader_epoch,
        h.magic,
        h.crc,
        h.attributes,
        h.last_offset_delta,
        h.base_timestamp,
        h.max_timestamp,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        h.records_count,
    )


def swap_in(plog: PartitionLog, stats: CleanStats, end: int) -> list[Segment]:
    """Event-loop side: replace the cleaned segments in memory (reads see the new ones at once); returns
    the old segments for `finish_swap`. Groups whose segments changed meanwhile are dropped."""
    replaced: list[Segment] = []
    for g in stats.groups:
        try:
            i = plog.segments.index(g.old[0])
        except ValueError:
            i = -1
        if i < 0 or plog.segments[i : i + len(g.old)] != g.old:
            discard(g)
            continue
        seg = Segment(g.old[0].base_offset, g.data, None, plog.index_interval_bytes)
        seg.rebuild_index(g.headers)
        seg.next_offset = g.old[-1].next_offset
        seg.max_timestamp = g.max_timestamp
        seg.last_modified_ms = g.last_modified_ms
        seg.created_ms = g.old[0].created_ms
        plog.segments[i : i + len(g.old)] = [seg]
        plog.bases[i : i + len(g.old)] = [seg.base_offset]
        replaced.extend(g.old)
    plog.cleaner_offset = max(plog.cleaner_offset, end)
    return replaced


def discard(g: CleanedGroup) -> None:
    g.data.close()
    if isinstance(g.data, DiskFile):
        g.data.path.unlink(missing_ok=True)


def finish_swap(plog: PartitionLog, old: list[Segment]) -> None:
    """Thread side, after `swap_in`: old segments → `.deleted`, `.swap` → `.log`, index written, state
    saved, `.deleted` removed (Kafka's `replaceSegments` order). Needs no scan of `plog` to be running."""
    for seg in old:
        seg.close()
    if plog.directory is None:
        return
    doomed: list[Path] = []
    for seg in old:
        path = plog.directory / f"{segment_name(seg.base_offset)}.log"
        dead = path.with_name(path.name + DELETED)
        os.replace(path, dead)
        doomed.append(dead)
        path.with_suffix(".index").unlink(missing_ok=True)
    for seg in plog.segments:
        data = seg.data
        if isinstance(data, DiskFile) and data.path.name.endswith(SWAP):
            final = data.path.with_name(data.path.name[: -len(SWAP)])
            os.replace(data.path, final)
            data.path = final
            seg.index_path = final.with_suffix(".index")
            seg.rebuild_index_file()
    fsync_dir(plog.directory)
    plog.save_state()
    for dead in doomed:
        dead.unlink(missing_ok=True)
