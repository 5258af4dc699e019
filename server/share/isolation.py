"""`share.isolation.level` read_committed for share partitions (Kafka's
`SharePartition.fetchAbortedTransactionRecordBatches`).

A read_committed share fetch acquires only below the last stable offset and reads the log as a read_committed
Fetch does (the aborted transactions of the range come with the read). The batches of aborted transactions
are then archived instead of delivered: walking the batches in order, an aborted transaction whose first
offset is at or before a batch's last offset puts its producer id in the aborted set; a transactional data
batch of a producer in that set is aborted; that producer's ABORT marker takes it out again. Control batches
(the markers themselves) are delivered as in read_uncommitted: clients skip them. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.server.log.batch import HEADER_SIZE, parse_header, peek_length
from groupcoord.server.log.txn_state import ABORT, control_type

READ_COMMITTED = "read_committed"


def aborted_batches(records: bytes, aborted: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """(first, last offset) of each whole batch in `records` that belongs to an aborted transaction, given
    the read's aborted transactions as (producer id, first offset)."""
    pending = sorted(aborted, key=lambda a: a[1])
    if not pending:
        return []
    active: set[int] = set()
    out: list[tuple[int, int]] = []
    pos = 0
    view = memoryview(records)
    while pos + HEADER_SIZE <= len(records):
        _, length = peek_length(records, pos)
        end = pos + 12 + length
        if end > len(records):
            break
        h = parse_header(records, pos)
        if h.has_producer_id:
            while pending and pending[0][1] <= h.last_offset:
                active.add(pending.pop(0)[0])
            if h.is_control:
                if control_type(view[pos:end]) == ABORT:
                    active.discard(h.producer_id)
            elif h.is_transactional and h.producer_id in active:
                out.append((h.base_offset, h.last_offset))
        pos = end
    return out
