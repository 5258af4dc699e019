"""Transactions in one partition's log: control batches, the last stable offset, the aborted-transactions index.

Kafka's rules (KIP-98), kept here apart from the segment mechanics of `partition.py`:

* A transactional batch (attributes bit 4) of producer P opens P's transaction in this partition at its base
  offset unless one is open already. The transaction stays open until a control batch (bit 5) of P: the
  COMMIT or ABORT marker the transaction coordinator writes to every partition of the transaction.
* The last stable offset (LSO) is the first offset of the oldest open transaction, or the high watermark
  when none is open. read_committed consumers read only below it.
* An ABORT marker records (producer id, first offset, marker offset) in the aborted-transactions index;
  a read_committed Fetch returns the entries overlapping the fetched range so the consumer can drop those
  records (Kafka's `AbortedTxn` / `.txnindex`).

Durability: the state is part of the producer snapshot (`producer_state.json`, written at roll and at clean
close) and rebuilt after it by replaying the stored batches, like the idempotence state; without a snapshot the
whole log is replayed (headers only, plus the one record of each control batch).
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import Any

import crc32c

from groupcoord.server.log.batch import CONTROL_MASK, HEADER_SIZE, TRANSACTIONAL_MASK, BatchHeader

ABORT = 0
COMMIT = 1

_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. recordsCount
_PREFIX = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


def _varint(value: int) -> bytes:
    """Zigzag varint, as v2 records encode lengths and deltas."""
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int) -> bytes:
    """A v2 control batch holding one COMMIT/ABORT marker record (Kafka's `EndTransactionMarker`): key =
    version 0 + type, value = version 0 + coordinator epoch. baseOffset 0, as produced batches arrive."""
    key = struct.pack(">hh", 0, COMMIT if commit else ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    body = (
        b"\x00"  # record attributes
        + _varint(0)  # timestamp delta
        + _varint(0)  # offset delta
        + _varint(len(key))
        + key
        + _varint(len(value))
        + value
        + _varint(0)  # headers
    )
    record = _varint(len(body)) + body
    now = int(time.time() * 1000)
    after_crc = (
        _HEADER_AFTER_CRC.pack(
            TRANSACTIONAL_MASK | CONTROL_MASK, 0, now, now, producer_id, producer_epoch, -1, 1
        )
        + record
    )
    crc = crc32c.crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # partitionLeaderEpoch, magic, crc, rest
    return _PREFIX.pack(0, batch_length, 0, 2) + struct.pack(">I", crc) + after_crc


def control_type(batch: bytes | memoryview) -> int:
    """COMMIT or ABORT of a control batch's marker (its first record's key), -1 if unreadable."""
    try:
        pos = HEADER_SIZE
        pos = _skip_varint(batch, pos)  # record length
        pos += 1  # attributes
        pos = _skip_varint(batch, pos)  # timestamp delta
        pos = _skip_varint(batch, pos)  # offset delta
        pos = _skip_varint(batch, pos)  # key length
        _, kind = struct.unpack_from(">hh", batch, pos)
        return kind
    except (IndexError, struct.error):
        return -1


def control_coordinator_epoch(batch: bytes | memoryview) -> int:
    """The coordinator epoch of a control batch's marker (its first record's value), -1 if unreadable."""
    try:
        pos = HEADER_SIZE
        pos = _skip_varint(batch, pos)  # record length
        pos += 1  # attributes
        pos = _skip_varint(batch, pos)  # timestamp delta
        pos = _skip_varint(batch, pos)  # offset delta
        pos = _skip_varint(batch, pos) + 4  # key length, key (version, type)
        pos = _skip_varint(batch, pos)  # value length
        _, epoch = struct.unpack_from(">hi", batch, pos)
        return epoch
    except (IndexError, struct.error):
        return -1


def _skip_varint(buf: bytes | memoryview, pos: int) -> int:
    while buf[pos] & 0x80:
        pos += 1
    return pos + 1


class PartitionTxnState:
    """Open transactions and aborted ones of one partition."""

    def __init__(self) -> None:
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted: list[AbortedTxn] = []  # in marker order (ascending last_offset)

    def on_batch(self, header: BatchHeader, marker_type: int = -1) -> None:
        """Account for an appended (or replayed) batch; `marker_type` is the control record's type."""
        if not header.is_transactional or not header.has_producer_id:
            return
        pid = header.producer_id
        if header.is_control:
            first = self.ongoing.pop(pid, None)
            if marker_type == ABORT and first is not None:
                self.aborted.append(AbortedTxn(pid, first, header.base_offset))
            return
        self.ongoing.setdefault(pid, header.base_offset)

    def last_stable_offset(self, high_watermark: int) -> int:
        return min(self.ongoing.values(), default=high_watermark)

    def aborted_in(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions a read_committed fetch of [start, end) must be told about (Kafka's
        `collectAbortedTxns`: marker at or after `start`, first offset before `end`)."""
        return [a for a in self.aborted if a.last_offset >= start and a.first_offset < end]

    def truncate_before(self, log_start: int) -> None:
        """Forget aborted transactions wholly below the log start (retention, DeleteRecords)."""
        if self.aborted and self.aborted[0].last_offset < log_start:
            self.aborted = [a for a in self.aborted if a.last_offset >= log_start]

    def snapshot(self) -> dict[str, Any]:
        return {
            "ongoing": [[pid, first] for pid, first in self.ongoing.items()],
            "aborted": [[a.producer_id, a.first_offset, a.last_offset] for a in self.aborted],
        }

    @classmethod
    def from_snapshot(cls, snap: dict[str, Any]) -> PartitionTxnState:
        s = cls()
        s.ongoing = {int(pid): int(first) for pid, first in snap.get("ongoing", [])}
        s.aborted = [AbortedTxn(int(p), int(f), int(last)) for p, f, last in snap.get("aborted", [])]
        return s
