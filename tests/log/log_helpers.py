"""Test-time record batch builder: aiokafka's DefaultRecordBatchBuilder is the oracle for valid v2 bytes."""

from __future__ import annotations

import struct

from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder


def make_batch(
    n: int = 3,
    *,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    value_size: int = 100,
    ts: int = 1_000,
    ts_step: int = 1,
    compression: int = 0,
    transactional: bool = False,
) -> bytes:
    """A magic-2 batch of `n` records with timestamps ts, ts+step, ... (baseOffset 0, as producers send)."""
    b = DefaultRecordBatchBuilder(2, compression, int(transactional), pid, epoch, seq, 1 << 30)
    for i in range(n):
        b.append(
            i, timestamp=ts + i * ts_step, key=b"k%d" % i, value=bytes([i % 256]) * value_size, headers=[]
        )
    return bytes(b.build())


def decode(data: bytes) -> list[tuple[int, int, bytes]]:
    """(offset, timestamp, value) of every record in a run of stored batches, via aiokafka's reader."""
    out = []
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        batch = DefaultRecordBatch(data[pos : pos + 12 + length])
        assert batch.validate_crc()
        out.extend((r.offset, r.timestamp, r.value) for r in batch)
        pos += 12 + length
    return out


def batch_offsets(data: bytes) -> list[tuple[int, int]]:
    """(baseOffset, lastOffset) of each batch in `data`."""
    out = []
    pos = 0
    while pos < len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append((base, base + delta))
        pos += 12 + length
    return out
