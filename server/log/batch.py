"""Record batch v2 (magic 2) headers: parsing, validation, and base-offset rewriting.

The engine stores batches exactly as producers sent them; it only parses the fixed 61-byte header and checks
the CRC-32C. Layout (big-endian), as documented for Kafka's DefaultRecordBatch:

    0  baseOffset int64          8  batchLength int32      12 partitionLeaderEpoch int32
    16 magic int8                17 crc uint32             21 attributes int16
    23 lastOffsetDelta int32     27 baseTimestamp int64    35 maxTimestamp int64
    43 producerId int64          51 producerEpoch int16    53 baseSequence int32
    57 recordsCount int32        61 records...

`batchLength` counts the bytes after itself, so a batch occupies `12 + batchLength` bytes. The CRC covers
`attributes` to the end of the batch; baseOffset and partitionLeaderEpoch sit before it, which is why the
broker can assign offsets and stamp the leader epoch without recomputing the CRC. Magic 0/1 message sets
place the magic byte at the same position (16), so one peek tells the formats apart.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.errors import LogError

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted by batchLength
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49: a batch with no records

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch: the part outside the CRC
_LENGTH = struct.Struct(">qi")


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed fields of one magic-2 batch, plus where it sits in the buffer it was parsed from."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int = 0  # byte position of the batch in the buffer/segment it came from

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies on the wire and on disk."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """baseSequence + lastOffsetDelta, wrapping past INT32_MAX to 0 the way producers do."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        last = self.base_sequence + self.last_offset_delta
        return last - INT32_MAX - 1 if last > INT32_MAX else last


def parse_header(
    buf: bytes | bytearray | memoryview, pos: int = 0, position: int | None = None
) -> BatchHeader:
    """Parse the 61-byte header at `pos` (no validation; the caller checks there are 61 bytes).

    `position` records where the batch lives when `buf` is a copy of just its header (defaults to `pos`).
    """
    return BatchHeader(*_HEADER.unpack_from(buf, pos), position=pos if position is None else position)


def peek_length(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(baseOffset, batchLength) at `pos`: the 12 bytes needed to step to the next batch."""
    return _LENGTH.unpack_from(buf, pos)


def crc_ok(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    """Whether the stored CRC matches CRC-32C over attributes..end of the batch."""
    start = header.position + ATTRIBUTES_OFFSET
    end = header.position + header.size
    return crc32c.crc32c(memoryview(buf)[start:end]) == header.crc


def check_batch(buf: bytes | bytearray | memoryview, pos: int, *, verify_crc: bool = True) -> BatchHeader:
    """Parse and validate the batch at `pos`, raising `LogError` with the code Kafka would answer.

    Checks: enough bytes for the header and the whole batch, magic 2 (0/1 → UNSUPPORTED_FOR_MESSAGE_FORMAT),
    a length of at least an empty batch, and the CRC (→ CORRUPT_MESSAGE).
    """
    avail = len(buf) - pos
    if avail < LOG_OVERHEAD + 5:  # not even up to the magic byte
        raise LogError(ErrorCode.CORRUPT_MESSAGE, f"truncated batch at byte {pos}: {avail} bytes left")
    magic = buf[pos + MAGIC_OFFSET]
    if magic in (0, 1):
        raise LogError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"message format v{magic} is not supported")
    if magic != 2:
        raise LogError(ErrorCode.CORRUPT_MESSAGE, f"unknown magic {magic} at byte {pos}")
    if avail < HEADER_SIZE:
        raise LogError(ErrorCode.CORRUPT_MESSAGE, f"truncated batch header at byte {pos}")
    header = parse_header(buf, pos)
    if header.batch_length < MIN_BATCH_LENGTH:
        raise LogError(ErrorCode.CORRUPT_MESSAGE, f"batch length {header.batch_length} too small")
    if header.size > avail:
        raise LogError(
            ErrorCode.CORRUPT_MESSAGE, f"truncated batch at byte {pos}: needs {header.size}, has {avail}"
        )
    if verify_crc and not crc_ok(buf, header):
        raise LogError(ErrorCode.CORRUPT_MESSAGE, f"CRC mismatch in batch at byte {pos}")
    return header


def validate_for_append(header: BatchHeader) -> None:
    """Checks Kafka's log validator makes on a produced v2 batch beyond the CRC.

    The record count must agree with the offset range (a producer never leaves gaps), clients may not
    write control batches, and a batch with a producer id needs a sequence. Whether a transactional batch
    belongs to an ongoing transaction is checked before the append by the transaction coordinator
    (`server/txn`, KIP-890 verification).
    """
    if header.last_offset_delta < 0 or header.records_count <= 0:
        raise LogError(ErrorCode.INVALID_RECORD, "batch has no records or an invalid offset range")
    if header.records_count != header.last_offset_delta + 1:
        raise LogError(ErrorCode.INVALID_RECORD, "inconsistent batch offset range and record count")
    if header.is_control:
        raise LogError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
    if header.is_transactional and not header.has_producer_id:
        raise LogError(ErrorCode.INVALID_RECORD, "a transactional batch needs a producer id")
    if header.has_producer_id and header.base_sequence < 0:
        raise LogError(
            ErrorCode.INVALID_RECORD, f"invalid sequence {header.base_sequence} with a producer id"
        )


def split_batches(blob: bytes | bytearray | memoryview, *, verify_crc: bool = True) -> list[BatchHeader]:
    """Split a Produce `records` blob into validated batch headers (positions relative to the blob).

    Any bad batch rejects the whole blob, as Kafka rejects the whole partition's data.
    """
    headers: list[BatchHeader] = []
    pos = 0
    end = len(blob)
    while pos < end:
        header = check_batch(blob, pos, verify_crc=verify_crc)
        headers.append(header)
        pos += header.size
    return headers


def iter_valid(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[BatchHeader]:
    """Yield validated headers from `pos` until the first invalid or incomplete batch (for recovery/reads)."""
    end = len(buf)
    while pos < end:
        try:
            header = check_batch(buf, pos)
        except LogError:
            return
        yield header
        pos += header.size


def stored_prefix(base_offset: int, header: BatchHeader, leader_epoch: int) -> bytes:
    """The 16 bytes that replace a produced batch's baseOffset/batchLength/partitionLeaderEpoch on disk.

    Producers send baseOffset 0; the broker assigns the real one. Both fields are outside the CRC, so the
    rest of the batch is stored byte for byte as received.
    """
    return _PREFIX.pack(base_offset, header.batch_length, leader_epoch)


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Rewrite baseOffset in place (the CRC does not cover it)."""
    struct.pack_into(">q", buf, pos, base_offset)


def _read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode one zigzag varint (as used inside v2 records); returns (value, next position)."""
    shift = 0
    raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
    return (raw >> 1) ^ -(raw & 1), pos


def first_record_at_or_after(
    buf: bytes | bytearray | memoryview, header: BatchHeader, timestamp: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record of an uncompressed batch with timestamp >= `timestamp`.

    Walks only each record's length, attributes, timestampDelta and offsetDelta. Returns None for compressed
    batches (the caller falls back to the batch granularity) or if no record qualifies.
    """
    if header.compression:
        return None
    pos = header.position + HEADER_SIZE
    end = header.position + header.size
    for _ in range(header.records_count):
        if pos >= end:
            return None
        length, body = _read_varint(buf, pos)
        ts_delta, p = _read_varint(buf, body + 1)  # skip the attributes byte
        offset_delta, _ = _read_varint(buf, p)
        ts = header.base_timestamp + ts_delta
        if ts >= timestamp:
            return header.base_offset + offset_delta, ts
        pos = body + length
    return None
