"""Record-level access to magic-2 batches, for what must look inside them: compaction and key checks.

The append path never decodes records (see batch.py); only compacted topics need to: the cleaner keeps the
latest record per key, and Kafka's `LogValidator` refuses a record without a key in a compacted topic. A
record (inside the batch's, possibly compressed, records section) is:

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint | headers...

(varints are zigzag-encoded; length -1 means null). Filtering records out of a batch keeps each retained
record's bytes unchanged (their offset deltas still count from the batch's base offset, so offsets are
preserved and gaps appear, as in Kafka's `MemoryRecords.filterTo`), then rewrites the header's length and
record count and recomputes the CRC-32C. Only gzip among the compressed formats can be opened with the
standard library; batches in another codec are treated as opaque (kept whole by the cleaner, not key-checked).
"""

from __future__ import annotations

import gzip
import struct
from typing import NamedTuple

import crc32c

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_SIZE, BatchHeader
from groupcoord.server.log.errors import LogError

NONE, GZIP = 0, 1
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")


class Record(NamedTuple):
    """What the cleaner needs of one record; `start:end` are its bytes in the decoded records section."""

    offset: int
    timestamp: int
    key: bytes | None
    tombstone: bool
    start: int
    end: int


def _varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def can_decode(header: BatchHeader) -> bool:
    return header.compression in (NONE, GZIP)


def records_section(batch: bytes | memoryview, header: BatchHeader) -> bytes:
    """The (decompressed) records bytes of a batch that starts at byte 0 of `batch`."""
    raw = bytes(batch[HEADER_SIZE : header.size])
    return gzip.decompress(raw) if header.compression == GZIP else raw


def parse_records(section: bytes, header: BatchHeader) -> list[Record]:
    """Decode every record of a batch's records section; ValueError/IndexError if it is malformed.

    The hot loop of the cleaner: one-byte varints (nearly all of them in practice) are decoded inline."""
    out: list[Record] = []
    append = out.append
    base_offset, base_ts = header.base_offset, header.base_timestamp
    n = len(section)
    pos = 0
    for _ in range(header.records_count):
        b = section[pos]
        if b < 0x80:
            length, body = (b >> 1) ^ -(b & 1), pos + 1
        else:
            length, body = _varint(section, pos)
        end = body + length
        if length < 0 or end > n:
            raise ValueError("record length outside the batch")
        ts_delta, p = _varint(section, body + 1)  # after the attributes byte
        b = section[p]
        if b < 0x80:
            off_delta, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            off_delta, p = _varint(section, p)
        b = section[p]
        if b < 0x80:
            key_len, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            key_len, p = _varint(section, p)
        if key_len < 0:
            key = None
        else:
            key = section[p : p + key_len]
            p += key_len
        b = section[p]
        if b < 0x80:
            value_len, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            value_len, p = _varint(section, p)
        if p + max(value_len, 0) > end:
            raise ValueError("record fields outside the record")
        append(Record(base_offset + off_delta, base_ts + ts_delta, key, value_len < 0, pos, end))
        pos = end
    return out


def check_keys(batch: bytes | memoryview, header: BatchHeader) -> None:
    """Kafka's `LogValidator.validateKey`: a compacted topic refuses records without a key (INVALID_RECORD).

    `batch` holds the batch from byte 0. Batches in a codec this server cannot open are not checked.
    """
    if not can_decode(header):
        return
    try:
        records = parse_records(records_section(batch, header), header)
    except (ValueError, IndexError, OSError, EOFError) as e:
        raise LogError(ErrorCode.CORRUPT_MESSAGE, f"undecodable records: {e}") from e
    for r in records:
        if r.key is None:
            raise LogError(ErrorCode.INVALID_RECORD, "Compacted topic cannot accept message without key")


def rebuild(batch: bytes | memoryview, header: BatchHeader, section: bytes, keep: list[Record]) -> bytes:
    """The batch with only `keep`'s records: same base offset, lastOffsetDelta, timestamps, producer fields
    and attributes (so the offset range and producer sequence range stay as written), new length, record
    count and CRC."""
    body = b"".join(section[r.start : r.end] for r in keep)
    if header.compression == GZIP:
        body = gzip.compress(body, compresslevel=6, mtime=0)
    out = bytearray(batch[:HEADER_SIZE])
    out += body
    _INT32.pack_into(out, 8, len(out) - 12)
    _INT32.pack_into(out, 57, len(keep))
    _UINT32.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)
