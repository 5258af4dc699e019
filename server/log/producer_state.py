"""Idempotent-producer sequence checks per partition, after Kafka's ProducerStateManager.

For each producer id the partition remembers its epoch and the metadata of its last (up to) 5 batches: the
Java and kafka-python producers keep at most 5 requests in flight per connection, so a retry is always one
of those. The rules applied to a batch with a producer id (batches without one, producerId -1, skip them):

* epoch lower than the known epoch -> INVALID_PRODUCER_EPOCH (a fenced, older producer instance);
* same epoch and the exact (firstSeq, lastSeq) of a remembered batch -> duplicate: acknowledged with the
  original base offset and *not* appended again;
* same epoch: firstSeq must be lastSeq + 1 (INT32_MAX wraps to 0), else OUT_OF_ORDER_SEQUENCE_NUMBER;
* higher epoch (the producer bumped it, KIP-360): firstSeq must be 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
* unknown producer id: any sequence is accepted, as Kafka does (its state may have been lost to retention
  or, here, to a restart without a snapshot covering it).

State survives restarts through a JSON snapshot written at segment roll and at clean close, plus a replay of
the batch headers stored after the snapshot offset (see `PartitionLog` recovery).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.batch import INT32_MAX, BatchHeader
from groupcoord.server.log.errors import LogError

MAX_CACHED_BATCHES = 5


@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    #: the max timestamp of its last batch or marker, and the coordinator epoch of its last marker (-1: none),
    #: as Kafka's ProducerStateEntry keeps them for DescribeProducers
    last_timestamp: int = -1
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.epoch:
            return None
        first, last = header.base_sequence, header.last_sequence
        for b in self.batches:
            if b.first_seq == first and b.last_seq == last:
                return b
        return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    """Per-partition producer state: check a batch before it is appended, record it after."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader) -> int | None:
        """Validate `header` against the producer's state.

        Returns None when the batch should be appended, or the original base offset when it duplicates a
        remembered batch. Raises `LogError` (INVALID_PRODUCER_EPOCH / OUT_OF_ORDER_SEQUENCE_NUMBER).
        """
        if not header.has_producer_id:
            return None
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise LogError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than {entry.epoch}",
            )
        dup = entry.find_duplicate(header)
        if dup is not None:
            return dup.first_offset
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise LogError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {header.producer_id} new epoch {header.producer_epoch} must start at "
                    f"sequence 0, got {header.base_sequence}",
                )
        elif entry.batches and not _in_sequence(entry.last_seq, header.base_sequence):
            raise LogError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {header.producer_id} expected sequence {entry.last_seq + 1}, "
                f"got {header.base_sequence}",
            )
        return None

    def update(self, header: BatchHeader, base_offset: int, coordinator_epoch: int = -1) -> None:
        """Record an appended batch (also used to replay stored batches at recovery: no checks);
        `coordinator_epoch` is a marker's (its control record's value), unknown (-1) for other batches."""
        if not header.has_producer_id:
            return
        entry = self.producers.get(header.producer_id)
        if header.is_control:  # a transaction marker: it may carry a bumped epoch, never a sequence
            if entry is None or header.producer_epoch > entry.epoch:
                entry = ProducerEntry(header.producer_id, header.producer_epoch)
                self.producers[header.producer_id] = entry
            entry.last_timestamp = header.max_timestamp
            entry.coordinator_epoch = coordinator_epoch
            return
        if entry is None or header.producer_epoch != entry.epoch:
            old = entry
            entry = ProducerEntry(header.producer_id, header.producer_epoch)
            if old is not None:
                entry.coordinator_epoch = old.coordinator_epoch
            self.producers[header.producer_id] = entry
        entry.last_timestamp = header.max_timestamp
        entry.batches.append(
            BatchMetadata(
                header.base_sequence,
                header.last_sequence,
                base_offset,
                base_offset + header.last_offset_delta,
            )
        )

    def snapshot(self, offset: int) -> dict[str, Any]:
        """A JSON-able copy of the state as of log offset `offset` (state of everything before it)."""
        return {
            "version": 1,
            "offset": offset,
            "producers": [
                {
                    "id": e.producer_id,
                    "epoch": e.epoch,
                    "batches": [[b.first_seq, b.last_seq, b.first_offset, b.last_offset] for b in e.batches],
                    "ts": e.last_timestamp,
                    "ce": e.coordinator_epoch,
                }
                for e in self.producers.values()
            ],
        }

    @classmethod
    def from_snapshot(cls, snap: dict[str, Any]) -> ProducerStateManager:
        m = cls()
        for p in snap["producers"]:
            e = ProducerEntry(int(p["id"]), int(p["epoch"]))
            e.last_timestamp, e.coordinator_epoch = int(p.get("ts", -1)), int(p.get("ce", -1))
            for fs, ls, fo, lo in p["batches"]:
                e.batches.append(BatchMetadata(int(fs), int(ls), int(fo), int(lo)))
            m.producers[e.producer_id] = e
        return m
