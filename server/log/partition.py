"""One partition's log: segments, appends with offset assignment, reads, recovery.

Directory `<data-dir>/topics/<topic>-<partition>/` holds `<base offset, 20 digits>.log` + `.index` per
segment and `producer_state.json` (idempotent-producer snapshot). With `directory=None` everything is in RAM.

Recovery (`PartitionLog.open`) rules, also in docs/storage.md:

* The last two segments are scanned batch by batch (length, magic 2, CRC-32C). Older segments trust their
  `.index` when it is sane; a missing or insane index is rebuilt by scanning (validating) that segment.
* A bad batch with no valid batch right after it, at the end of the last segment, is a torn tail (a write
  cut short by a crash): the file is truncated to the last good batch and the log continues from there.
* A bad batch anywhere else (valid data follows it) is corruption of acknowledged data. It is logged as an
  error and the partition goes *offline beyond that point*: reads below the corrupt offset are served, reads
  at or after it and every append answer KAFKA_STORAGE_ERROR. Nothing is truncated or rewritten, so an
  operator can inspect or repair the files. Reads also verify CRCs and apply the same rule if corruption
  appears later (for example in an old segment that recovery trusted).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import struct
from bisect import bisect_right
from collections.abc import Callable, Iterator
from pathlib import Path

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.batch import (
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    first_record_at_or_after,
    parse_header,
    peek_length,
    split_batches,
    stored_prefix,
    validate_for_append,
)
from groupcoord.server.log.config import LogConfig
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.logstate import read_log_state, recover_swaps, write_log_state
from groupcoord.server.log.producer_state import ProducerStateManager
from groupcoord.server.log.records import check_keys
from groupcoord.server.log.recovery import (
    PRODUCER_SNAPSHOT,
    recover_producers,
    recover_segments,
    valid_batch,
)
from groupcoord.server.log.segment import DiskFile, MemoryFile, Segment, segment_name, wall_ms
from groupcoord.server.log.txn_state import (
    PartitionTxnState,
    control_batch,
    control_coordinator_epoch,
    control_type,
)

log = logging.getLogger(__name__)

_LAST_DELTA = struct.Struct(">i")

DEFAULT_SEGMENT_BYTES = 256 * 1024 * 1024
DEFAULT_INDEX_INTERVAL_BYTES = 4096
DEFAULT_MAX_BATCH_BYTES = 1048588  # Kafka's message.max.bytes


class PartitionLog:
    """The log of one partition. All methods are synchronous and quick except `open` and the
    timestamp/producer scans, which the manager runs in a thread."""

    def __init__(
        self,
        topic: str,
        partition: int,
        directory: Path | None,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        leader_epoch: int = 0,
        verify_on_read: bool = True,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.max_batch_bytes = max_batch_bytes
        self.leader_epoch = leader_epoch
        self.verify_on_read = verify_on_read
        self.segments: list[Segment] = []
        self.bases: list[int] = []
        self.next_offset = 0
        self.producers = ProducerStateManager()
        self.txns = PartitionTxnState()  # open transactions, LSO, aborted index (server/log/txn_state.py)
        self.corrupt_offset: int | None = None  # reads at/after it and all appends are refused
        self.offline_reason: str | None = None  # set on write/fsync failure: the partition refuses appends
        # flush bookkeeping (the manager's flusher drives these)
        self.durable_offset = 0
        self.dirty = False
        self.unsynced: list[Segment] = []
        self.pending_snapshot: dict | None = None
        self.busy = 0  # scans running in a thread; closing waits for 0
        # retention and compaction (server/log/retention.py, cleaner.py); both durable in log_state.json
        self.config = LogConfig(segment_bytes=segment_bytes, max_message_bytes=max_batch_bytes)
        self.start_offset = 0  # the log start offset, at least the first segment's base
        self.cleaner_offset = 0  # first offset not yet compacted (Kafka's cleaner checkpoint)
        # once compacted, batches may leave offset gaps: the baseOffset check relaxes from "== previous
        # batch's next offset" to ">=" (baseOffset is outside the CRC, so this check is all that guards it)
        self.gaps = False
        # cluster mode (server/cluster/cluster_log.py): the end of what PostgreSQL holds, the high watermark;
        # batches past it await their group commit and no reader sees them. None: all appended is committed
        self.committed_end: int | None = None

    # -- opening and recovery --------------------------------------------------------------------------
    @classmethod
    def open(cls, topic: str, partition: int, directory: Path | None, **kwargs: object) -> PartitionLog:
        """Open (creating if needed) and recover a partition. Blocking: call it in a thread for disk logs."""
        p = cls(topic, partition, directory, **kwargs)  # type: ignore[arg-type]
        if directory is None:
            p._add_segment(0)
            return p
        directory.mkdir(parents=True, exist_ok=True)
        for stray in directory.glob("*.tmp"):
            stray.unlink()
        recover_swaps(directory)
        bases = sorted(int(f.stem) for f in directory.glob("*.log") if f.stem.isdigit())
        for f in directory.glob("*.index"):
            if f.stem.isdigit() and int(f.stem) not in bases:
                f.unlink()
        p.start_offset, p.cleaner_offset, p.gaps = read_log_state(directory)
        if not bases:
            p._add_segment(0)
        else:
            recover_segments(p, bases)
        p.durable_offset = p.next_offset
        recover_producers(p)
        p.start_offset = min(max(p.start_offset, p.bases[0]), p.next_offset)
        return p

    def _add_segment(self, base: int) -> Segment:
        if self.directory is None:
            seg = Segment(base, MemoryFile(), None, self.index_interval_bytes)
        else:
            name = segment_name(base)
            seg = Segment(
                base,
                DiskFile(self.directory / f"{name}.log"),
                self.directory / f"{name}.index",
                self.index_interval_bytes,
            )
        seg.next_offset = base
        self.segments.append(seg)
        self.bases.append(base)
        self.next_offset = base
        return seg

    def marker_type(self, h: BatchHeader) -> int:
        return self.read_control(h, control_type)

    def read_control(self, h: BatchHeader, field: Callable[[bytes], int]) -> int:
        """A field of a stored control batch's marker (type, coordinator epoch); -1 for other batches."""
        if not h.is_control:
            return -1
        seg = self.segments[bisect_right(self.bases, h.base_offset) - 1]
        return field(seg.data.pread(h.size, h.position))

    def state_snapshot(self) -> dict:
        """Producer (idempotence) and transaction state as of the log end, for `producer_state.json`."""
        snap = self.producers.snapshot(self.next_offset)
        snap["txn"] = self.txns.snapshot()
        return snap

    @property
    def last_stable_offset(self) -> int:
        """Kafka's LSO: the first offset of the oldest open transaction, else the high watermark."""
        return self.txns.last_stable_offset(self.high_watermark)

    # -- properties ------------------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        """Kafka's logStartOffset: the first segment's base, or higher after DeleteRecords."""
        return max(self.start_offset, self.bases[0])

    @property
    def compacted(self) -> bool:
        return "compact" in self.config.cleanup_policy

    def apply_config(self, config: LogConfig) -> None:
        """Take a topic's settings: the next roll uses the new segment size, the next pass the retention."""
        self.config = config
        self.segment_bytes = min(config.segment_bytes, 2**31 - 1)
        self.max_batch_bytes = config.max_message_bytes

    def save_state(self) -> None:
        """Make the log start offset and cleaner checkpoint durable (blocking; call it in a thread)."""
        if self.directory is not None:
            write_log_state(self.directory, self.log_start_offset, self.cleaner_offset, self.gaps)

    def advance_start(self, offset: int) -> bool:
        """Move the log start offset up to `offset` (DeleteRecords, retention); False if it was there."""
        if offset <= self.log_start_offset:
            return False
        self.start_offset = min(offset, self.next_offset)
        return True

    @property
    def log_end_offset(self) -> int:
        return self.next_offset

    @property
    def high_watermark(self) -> int:
        """Single replica: everything appended is committed (Kafka's HW with replication factor 1); in
        cluster mode, what PostgreSQL has committed (`committed_end`)."""
        return self.next_offset if self.committed_end is None else min(self.committed_end, self.next_offset)

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- append ----------------------------------------------------------------------------------------
    def append(self, blob: bytes | bytearray | memoryview) -> tuple[int, bool]:
        """Validate and append one produced batch; returns (base offset, was_duplicate).

        Kafka accepts exactly one v2 batch per partition in a Produce request; so does this. The batch is
        written as received except baseOffset and partitionLeaderEpoch, which sit outside the CRC.
        """
        h, dup = self.prepare(blob)
        if dup is not None:
            return dup, True
        return self._store(blob, h), False

    def prepare(self, blob: bytes | bytearray | memoryview) -> tuple[BatchHeader, int | None]:
        """The checks of `append` without appending: (the batch's header, the base offset of the batch it
        duplicates or None). Raises `LogError` as `append` would. Cluster mode (server/cluster/) checks,
        writes `stored_bytes` to PostgreSQL, then `restore`s them here: nothing unacknowledged is readable."""
        if self.offline_reason is not None or self.corrupt_offset is not None:
            raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, self._offline_message())
        headers = split_batches(blob)
        if len(headers) != 1:
            raise LogError(
                ErrorCode.INVALID_RECORD, "a produce request must hold exactly one batch per partition"
            )
        h = headers[0]
        if h.size > self.max_batch_bytes:
            raise LogError(
                ErrorCode.MESSAGE_TOO_LARGE, f"batch of {h.size} bytes exceeds {self.max_batch_bytes}"
            )
        validate_for_append(h)
        if self.compacted:
            check_keys(memoryview(blob)[: h.size], h)
        return h, self.producers.check(h)

    def stored_bytes(self, blob: bytes | bytearray | memoryview, h: BatchHeader) -> bytes:
        """The bytes `append` would store for `blob` now: at the log end, stamped with the leader epoch."""
        return stored_prefix(self.next_offset, h, self.leader_epoch) + bytes(memoryview(blob)[16 : h.size])

    def restore(self, stored: bytes) -> None:
        """Append one batch exactly as stored elsewhere (cluster mode's PostgreSQL copy): at its own base
        offset, which must be the log end (or anywhere at or past it in an empty log, or past it after a
        compaction's gap when `gaps`), epoch kept as is."""
        h = parse_header(stored)
        if h.base_offset > self.next_offset and self.gaps and self.next_offset > self.log_start_offset:
            pass  # a compacted log's offset gap (an emptied batch was removed), after the first stored batch
        elif h.base_offset != self.next_offset:
            if self.next_offset != self.log_start_offset or h.base_offset < self.next_offset:
                raise LogError(
                    ErrorCode.CORRUPT_MESSAGE,
                    f"{self.topic}-{self.partition}: stored batch at {h.base_offset}, log end {self.next_offset}",
                )
            self.segments, self.bases = [], []  # an empty log: it starts where the stored batches do
            self._add_segment(h.base_offset)
            self.start_offset = h.base_offset
        self._put([stored], h, h.base_offset, stored)

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> int:
        """Write a COMMIT/ABORT control batch for `producer_id` (the transaction coordinator's marker);
        returns its offset. An epoch older than the producer's is INVALID_PRODUCER_EPOCH, as in Kafka."""
        if self.offline_reason is not None or self.corrupt_offset is not None:
            raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, self._offline_message())
        blob = control_batch(producer_id, producer_epoch, commit, coordinator_epoch)
        h = parse_header(blob)
        entry = self.producers.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise LogError(
                ErrorCode.INVALID_PRODUCER_EPOCH, f"marker epoch {producer_epoch} is older than {entry.epoch}"
            )
        return self._store(blob, h)

    def _store(self, blob: bytes | bytearray | memoryview, h: BatchHeader) -> int:
        base = self.next_offset
        parts = [stored_prefix(base, h, self.leader_epoch), memoryview(blob)[16 : h.size]]
        self._put(parts, h, base, blob)
        return base

    def _put(self, parts: list, h: BatchHeader, base: int, blob: bytes | bytearray | memoryview) -> None:
        seg = self.segments[-1]
        if seg.size > 0 and (
            seg.size + h.size > self.segment_bytes or wall_ms() - seg.created_ms > self.config.segment_ms
        ):
            seg = self.roll()
        next_offset = base + h.last_offset_delta + 1
        try:
            seg.append(parts, [(base, h.size, next_offset, h.max_timestamp)])
        except OSError as e:
            self.offline_reason = f"write failed: {e}"
            log.error("%s-%d: %s", self.topic, self.partition, self.offline_reason)
            raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, self.offline_reason) from e
        self.next_offset = next_offset
        self.producers.update(
            h, base, control_coordinator_epoch(memoryview(blob)[: h.size]) if h.is_control else -1
        )
        if h.is_transactional:
            kind = control_type(memoryview(blob)[: h.size]) if h.is_control else -1
            self.txns.on_batch(dataclasses.replace(h, base_offset=base), kind)
        self.dirty = True

    def roll(self) -> Segment:
        """Start a new segment at the log end; the old one is fsynced by the next flush."""
        old = self.segments[-1]
        old._close_index()
        if self.directory is not None and old not in self.unsynced:  # memory logs have nothing to fsync
            self.unsynced.append(old)
        seg = self._add_segment(self.next_offset)
        if self.directory is not None:
            self.pending_snapshot = self.state_snapshot()
        return seg

    def _offline_message(self) -> str:
        if self.offline_reason is not None:
            return f"{self.topic}-{self.partition} is offline: {self.offline_reason}"
        return f"{self.topic}-{self.partition} has a corrupt batch at offset {self.corrupt_offset}"

    # -- read ------------------------------------------------------------------------------------------
    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one: bool = True,
        max_offset: int | None = None,
        through: int | None = None,
    ) -> bytes:
        """Whole batches starting with the one that contains `offset`, up to `max_bytes`; with `through`, none
        after the batch that holds that offset (a share fetch reads only the records it acquired: the bytes
        past them are neither read nor CRC-checked).

        Kafka semantics: the first batch may start before `offset` (the consumer skips the records before
        it); when `min_one` is set and the first batch alone exceeds `max_bytes` it is returned anyway so a
        consumer can always make progress. `offset == log end` gives b""; outside [log start, log end]
        raises OFFSET_OUT_OF_RANGE. A read never crosses a segment boundary (as in Kafka).
        """
        if offset < self.log_start_offset or offset > self.next_offset:
            raise LogError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} not in [{self.log_start_offset}, {self.next_offset}]",
            )
        limit = self.corrupt_offset if self.corrupt_offset is not None else self.high_watermark
        if max_offset is not None:  # read_committed: stop at the last stable offset
            limit = min(limit, max_offset)
        if offset >= limit:
            if self.corrupt_offset is not None and offset >= self.corrupt_offset:
                raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, self._offline_message())
            return b""
        i = bisect_right(self.bases, offset) - 1
        while i < len(self.segments):
            seg = self.segments[i]
            pos = self._find_position(seg, offset)
            if pos is not None:
                if through is not None and through >= offset:
                    max_bytes = min(max_bytes, self._batch_end(seg, through, pos) - pos)
                data = self._read_from(seg, pos, max_bytes, min_one, limit)
                if not data and self.corrupt_offset is not None and offset >= self.corrupt_offset:
                    raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, self._offline_message())
                return data
            if self.corrupt_offset is not None and offset >= self.corrupt_offset:  # found while walking
                raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, self._offline_message())
            i += 1
        return b""

    def _find_position(self, seg: Segment, offset: int) -> int | None:
        """Position of the batch containing `offset` in `seg`, None if `seg` ends before it."""
        pos = seg.lookup(offset)
        size = seg.size
        while pos < size:
            h = seg.read_header(pos)
            if h is None or h.magic != 2 or h.batch_length < MIN_BATCH_LENGTH or pos + h.size > size:
                self._mark_corrupt(seg, pos, "unreadable batch header")
                return None
            if h.last_offset >= offset:
                return pos
            pos += h.size
        return None

    def _batch_end(self, seg: Segment, offset: int, start: int) -> int:
        """Where the batch holding `offset` ends in `seg` (found from the offset index, walking headers from
        the indexed batch at or before it, never before `start`); the segment's size if it ends before."""
        pos = max(seg.lookup(offset), start)
        size = seg.size
        while pos < size:
            h = seg.read_header(pos)
            if h is None or h.magic != 2 or h.batch_length < MIN_BATCH_LENGTH or pos + h.size > size:
                return size  # the read itself meets it and marks it
            if h.last_offset >= offset:
                return pos + h.size
            pos += h.size
        return size

    def _read_from(self, seg: Segment, pos: int, max_bytes: int, min_one: bool, limit: int) -> bytes:
        data = seg.data.pread(min(max(max_bytes, 0), seg.size - pos), pos)
        end = 0
        n = len(data)
        expected = -1
        while end + LOG_OVERHEAD <= n:
            base, length = peek_length(data, end)
            size = LOG_OVERHEAD + length
            if base >= limit:
                return data[:end]
            if end + size > n:
                break
            if self.verify_on_read and (
                not valid_batch(data, end, length)
                or (expected >= 0 and (base < expected or (base != expected and not self.gaps)))
            ):
                self._mark_corrupt(seg, pos + end, "corrupt batch (CRC or offset) on read", expected)
                return data[:end]
            expected = base + _LAST_DELTA.unpack_from(data, end + 23)[0] + 1
            end += size
        if end == 0 and min_one:  # the first batch alone is larger than max_bytes: return it whole
            h = seg.read_header(pos)
            if h is None or h.base_offset >= limit:
                return b""
            data = seg.data.pread(h.size, pos)
            if self.verify_on_read and not valid_batch(data, 0, h.batch_length):
                self._mark_corrupt(seg, pos, "CRC mismatch on read")
                return b""
            return data
        return data[:end]

    def _mark_corrupt(self, seg: Segment, pos: int, reason: str, offset: int = -1) -> None:
        """Take the partition offline from the batch at `pos` (whose offset is `offset` when the caller
        knows it from the previous batch) on; the lowest detected point wins."""
        if offset < 0:
            h = seg.read_header(pos)
            offset = h.base_offset if h is not None else seg.base_offset
            if not seg.base_offset <= offset < self.next_offset:  # the offset field itself is damaged
                offset = seg.base_offset
        if self.corrupt_offset is None or offset < self.corrupt_offset:
            self.corrupt_offset = offset
            log.error(
                "%s-%d: %s in segment %d at byte %d; not serving offsets >= %d, refusing appends",
                self.topic,
                self.partition,
                reason,
                seg.base_offset,
                pos,
                offset,
            )

    # -- scans (run in a thread by the manager) --------------------------------------------------------
    def iter_headers(self, from_offset: int) -> Iterator[BatchHeader]:
        """Headers of stored batches whose last offset is >= `from_offset`, up to the corruption point."""
        limit = self.corrupt_offset if self.corrupt_offset is not None else self.next_offset
        i = max(0, bisect_right(self.bases, from_offset) - 1)
        for seg in list(self.segments[i:]):
            pos = seg.lookup(from_offset) if seg.base_offset <= from_offset else 0
            size = seg.size
            while pos < size:
                h = seg.read_header(pos)
                if h is None or h.base_offset >= limit or h.batch_length < MIN_BATCH_LENGTH:
                    return
                if h.last_offset >= from_offset:
                    yield h
                pos += h.size

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp`, None if none.

        Batches are found by maxTimestamp; within an uncompressed batch the exact record is located. For a
        compressed batch the answer is the batch's base offset and maxTimestamp (no decompression).
        """
        for h in self.iter_headers(self.log_start_offset):
            if h.max_timestamp >= timestamp:
                seg = self.segments[bisect_right(self.bases, h.base_offset) - 1]
                data = seg.data.pread(h.size, h.position)
                exact = first_record_at_or_after(data, parse_header(data, 0), timestamp)
                return exact if exact is not None else (h.base_offset, h.max_timestamp)
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) for ListOffsets MAX_TIMESTAMP (-3), at batch granularity: the last offset of
        the first batch with the greatest maxTimestamp."""
        best: tuple[int, int] | None = None
        for h in self.iter_headers(self.log_start_offset):
            if best is None or h.max_timestamp > best[1]:
                best = (h.last_offset, h.max_timestamp)
        return best

    # -- flush support ---------------------------------------------------------------------------------
    def begin_flush(self) -> tuple[list[Segment], int]:
        """Segments to fsync and the offset they make durable; resets the dirty marks."""
        segs = list(self.unsynced)
        if self.dirty and self.segments[-1] not in segs:
            segs.append(self.segments[-1])
        self.unsynced.clear()
        self.dirty = False
        return segs, self.next_offset

    def write_producer_snapshot(self, snap: dict) -> None:
        """Atomically replace the producer snapshot (blocking; called from the flusher thread)."""
        if self.directory is None:
            return
        path = self.directory / PRODUCER_SNAPSHOT
        tmp = path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump(snap, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
