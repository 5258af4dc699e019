"""Retention: delete whole old segments of a partition, as Kafka's `UnifiedLog.deleteOldSegments` does.

A segment (oldest first, stopping at the first one that is kept) is deleted when

* the topic's `cleanup.policy` includes `delete` and its newest record is older than `retention.ms`
  (by record timestamp; a segment whose timestamps are unknown uses its modification time), or deleting it
  still leaves the partition at least `retention.bytes` large; or
* the whole segment lies below the log start offset (moved by DeleteRecords), whatever the policy.

The active segment is deleted too when it is due and not empty: a new empty one is rolled first, so the log
end offset never moves back. The log start offset becomes the first remaining segment's base (or stays
higher after DeleteRecords); the caller makes it durable and removes the files.
"""

from __future__ import annotations

from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.segment import Segment


def load_timestamps(plog: PartitionLog) -> None:
    """Fill in the newest record timestamp of segments recovery did not scan (blocking: a header walk)."""
    for i, seg in enumerate(list(plog.segments)):
        if seg.max_timestamp >= 0 or seg.size == 0:
            continue
        upper = plog.bases[i + 1] if i + 1 < len(plog.bases) else plog.next_offset
        for h in plog.iter_headers(seg.base_offset):
            if h.base_offset >= upper:
                break
            seg.max_timestamp = max(seg.max_timestamp, h.max_timestamp)


def due_segments(plog: PartitionLog, now_ms: int) -> list[Segment]:
    """The oldest segments retention deletes now (see the module docstring); may include the active one."""
    cfg = plog.config
    delete = "delete" in cfg.cleanup_policy
    diff = plog.size_bytes - cfg.retention_bytes if delete and cfg.retention_bytes >= 0 else -1
    out: list[Segment] = []
    start = plog.log_start_offset
    for i, seg in enumerate(plog.segments):
        last = i == len(plog.segments) - 1
        if last and seg.size == 0:
            break
        newest = seg.max_timestamp if seg.max_timestamp >= 0 else seg.last_modified_ms
        by_start = not last and plog.bases[i + 1] <= start
        by_time = delete and cfg.retention_ms >= 0 and now_ms - newest > cfg.retention_ms
        by_size = diff >= 0 and diff - seg.size >= 0
        if not (by_start or by_time or by_size):
            break
        if diff >= 0:
            diff -= seg.size
        out.append(seg)
    return out


def drop_segments(plog: PartitionLog, doomed: list[Segment]) -> None:
    """Event-loop side: take `doomed` (a prefix of the segments) out of the log; the caller closes and
    removes the files once no scan uses them."""
    if not doomed:
        return
    if doomed[-1] is plog.segments[-1]:
        plog.roll()
    n = len(doomed)
    assert plog.segments[:n] == doomed
    del plog.segments[:n]
    del plog.bases[:n]
    for seg in doomed:
        if seg in plog.unsynced:
            plog.unsynced.remove(seg)
    plog.start_offset = max(plog.start_offset, plog.bases[0])
    plog.cleaner_offset = max(plog.cleaner_offset, plog.start_offset)


def remove_files(plog: PartitionLog, doomed: list[Segment]) -> None:
    """Thread side: close and delete the dropped segments' files, after saving the new log start offset."""
    plog.save_state()
    for seg in doomed:
        seg.close()
        if plog.directory is not None:
            for suffix in (".log", ".index"):
                (plog.directory / f"{seg.base_offset:020d}{suffix}").unlink(missing_ok=True)
