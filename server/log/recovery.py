"""Opening a partition's log from its files: segment scans, torn tails, corruption, producer state.

The rules (also in docs/storage.md and `server/log/partition.py`'s docstring): the last
RECOVERY_SCAN_SEGMENTS segments are scanned batch by batch; older ones trust a sane `.index`. A bad batch at
the very end of the last segment is a torn tail and is truncated; a bad batch followed by valid data is
corruption: the partition goes offline beyond it, nothing rewritten. Producer (idempotence) and transaction
state is the snapshot plus a replay of the headers after it. Split out of partition.py: these run once, at
open, while partition.py is the log's steady-state append and read path.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from groupcoord.server.log.batch import (
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    check_batch,
    crc_ok,
    parse_header,
    peek_length,
)
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.producer_state import ProducerStateManager
from groupcoord.server.log.segment import DiskFile, Segment, segment_name
from groupcoord.server.log.txn_state import PartitionTxnState, control_coordinator_epoch

log = logging.getLogger("groupcoord.server.log.partition")  # the partition's logger, as before the split

PRODUCER_SNAPSHOT = "producer_state.json"
RECOVERY_SCAN_SEGMENTS = 2


class RecoveringLog(Protocol):
    """What recovery reads and sets on the log it opens (`PartitionLog`; named here, not imported, so the
    two modules do not import each other)."""

    topic: str
    partition: int
    directory: Path | None
    index_interval_bytes: int
    segments: list[Segment]
    bases: list[int]
    next_offset: int
    corrupt_offset: int | None
    gaps: bool
    producers: ProducerStateManager
    txns: PartitionTxnState

    @property
    def log_start_offset(self) -> int: ...

    def iter_headers(self, from_offset: int) -> Iterator[BatchHeader]: ...

    def marker_type(self, h: BatchHeader) -> int: ...

    def read_control(self, h: BatchHeader, field: Callable[[bytes], int]) -> int: ...


def recover_segments(p: RecoveringLog, bases: list[int]) -> None:
    """Open every segment of `bases`; scan (validate) the last RECOVERY_SCAN_SEGMENTS and any whose index is not sane."""
    assert p.directory is not None
    first_scanned = max(0, len(bases) - RECOVERY_SCAN_SEGMENTS)
    for i, base in enumerate(bases):
        name = segment_name(base)
        seg = Segment(
            base,
            DiskFile(p.directory / f"{name}.log"),
            p.directory / f"{name}.index",
            p.index_interval_bytes,
        )
        p.segments.append(seg)
        p.bases.append(base)
        if p.corrupt_offset is not None and i < first_scanned:
            continue  # already offline beyond an earlier point; just open the files
        if i >= first_scanned or not seg.load_index():
            scan_segment(p, seg, is_last=i == len(bases) - 1)
        if i + 1 < len(bases):
            seg.next_offset = bases[i + 1]
    p.next_offset = p.segments[-1].next_offset


def scan_segment(p: RecoveringLog, seg: Segment, *, is_last: bool) -> None:
    """Validate every batch of `seg`, rebuild its index, and truncate or flag what does not validate."""
    headers: list[BatchHeader] = []
    bad_pos: int | None = None
    after: list[BatchHeader] = []
    with seg.data.mapped() as buf:
        size = len(buf)
        pos = 0
        expected = seg.base_offset
        while pos < size:
            try:
                h = check_batch(buf, pos)
            except LogError as e:
                bad_pos, reason = pos, e.message
                break
            if h.base_offset < expected or (h.base_offset != expected and not p.gaps):
                bad_pos, reason = pos, f"base offset {h.base_offset}, expected {expected}"
                break
            headers.append(h)
            pos += h.size
            expected = h.next_offset
        if bad_pos is not None:
            resume = resume_position(buf, bad_pos)
            if resume is not None:  # valid data follows: walk it to learn where the log really ends
                pos = resume
                while pos < size:
                    try:
                        h = check_batch(buf, pos)
                    except LogError:
                        break
                    after.append(h)
                    pos += h.size
    seg.rebuild_index(headers)
    seg.next_offset = headers[-1].next_offset if headers else seg.base_offset
    seg.max_timestamp = max((h.max_timestamp for h in headers), default=-1)
    if bad_pos is None:
        return
    if is_last and not after:
        log.warning(
            "%s-%d: truncating torn tail of segment %d at byte %d (%d bytes dropped): %s",
            p.topic,
            p.partition,
            seg.base_offset,
            bad_pos,
            seg.size - bad_pos,
            reason,
        )
        seg.truncate(bad_pos)
        return
    if p.corrupt_offset is None:
        p.corrupt_offset = seg.next_offset
        log.error(
            "%s-%d: corrupt batch in segment %d at byte %d (offset %d): %s. Data from offset %d on is "
            "not served and the partition refuses appends; inspect/repair %s",
            p.topic,
            p.partition,
            seg.base_offset,
            bad_pos,
            seg.next_offset,
            reason,
            seg.next_offset,
            p.directory,
        )
    if after:
        seg.next_offset = after[-1].next_offset


def recover_producers(p: RecoveringLog) -> None:
    """Producer state = snapshot (if it matches this log) + replay of the batch headers after it.

    Without a usable snapshot only the scanned tail segments are replayed: producers last seen before
    them become unknown, which Kafka also tolerates (any sequence is accepted from an unknown producer).
    """
    start = p.bases[max(0, len(p.bases) - RECOVERY_SCAN_SEGMENTS)]
    txn_start = p.log_start_offset  # without a snapshot the transaction state replays the whole log
    if p.directory is not None:
        path = p.directory / PRODUCER_SNAPSHOT
        try:
            snap = json.loads(path.read_text())
            if p.log_start_offset <= snap["offset"] <= p.next_offset:
                p.producers = ProducerStateManager.from_snapshot(snap)
                start = snap["offset"]
                if "txn" in snap:
                    p.txns = PartitionTxnState.from_snapshot(snap["txn"])
                    txn_start = start
            else:  # the log was truncated below it: delete it, or it could match a longer log later
                log.warning("%s-%d: dropping producer snapshot beyond the log end", p.topic, p.partition)
                path.unlink()
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError) as e:
            log.warning("%s-%d: ignoring unreadable producer snapshot: %s", p.topic, p.partition, e)
            path.unlink()
    for h in p.iter_headers(min(start, txn_start)):
        if h.last_offset >= start:
            p.producers.update(h, h.base_offset, p.read_control(h, control_coordinator_epoch))
        if h.last_offset >= txn_start and h.is_transactional:
            p.txns.on_batch(h, p.marker_type(h) if h.is_control else -1)


def valid_batch(data: bytes, pos: int, length: int) -> bool:
    if length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > len(data) or data[pos + 16] != 2:
        return False
    return crc_ok(data, parse_header(data, pos))


def resume_position(buf: bytes | memoryview, bad_pos: int) -> int | None:
    """If the bad batch's length field is plausible and a valid batch follows it, that batch's position."""
    if bad_pos + LOG_OVERHEAD > len(buf):
        return None
    _, length = peek_length(buf, bad_pos)
    nxt = bad_pos + LOG_OVERHEAD + length
    if length < MIN_BATCH_LENGTH or nxt >= len(buf):
        return None
    try:
        check_batch(buf, nxt)
    except LogError:
        return None
    return nxt
