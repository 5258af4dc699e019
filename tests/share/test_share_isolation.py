"""`aborted_batches` (server/share/isolation.py): which batches of a read_committed log read belong to aborted
transactions, over batches built by the log's own encoder (data batches and real control markers)."""

from __future__ import annotations

import struct

import crc32c

from groupcoord.server.log.batch import HEADER_SIZE
from groupcoord.server.log.txn_state import control_batch
from groupcoord.server.share.isolation import aborted_batches


def data_batch(base: int, count: int, producer_id: int, transactional: bool) -> bytes:
    """A magic-2 batch of `count` empty records at `base` (only the header matters here)."""
    records = b"".join(bytes([7 * 2, 0, 0, i * 2, 1, 1, 0]) for i in range(count))
    attributes = 0x10 if transactional else 0
    after_crc = struct.pack(">hiqqqhii", attributes, count - 1, 0, 0, producer_id, 0, 0, count) + records
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiib", base, length, 0, 2) + struct.pack(">I", crc) + after_crc


def at(batch: bytes, base: int) -> bytes:
    return struct.pack(">q", base) + batch[8:]


def test_aborted_transaction_batches_only() -> None:
    blob = b"".join(
        [
            data_batch(0, 2, 7, True),  # committed transaction of producer 7
            at(control_batch(7, 0, True, 0), 2),
            data_batch(3, 2, 8, True),  # aborted transaction of producer 8
            data_batch(5, 1, -1, False),  # not transactional, inside the aborted range
            at(control_batch(8, 0, False, 0), 6),
            data_batch(7, 1, 8, True),  # producer 8 again, a later (open) transaction: not aborted
        ]
    )
    assert len(blob) > HEADER_SIZE
    assert aborted_batches(blob, [(8, 3)]) == [(3, 4)]
    assert aborted_batches(blob, []) == []
