"""Idempotent producer rules (Kafka's ProducerStateManager semantics)."""

from __future__ import annotations

import pytest
from log_helpers import make_batch

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.batch import INT32_MAX, parse_header
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.producer_state import ProducerStateManager


def header(n: int, pid: int, epoch: int, seq: int):  # type: ignore[no-untyped-def]
    return parse_header(make_batch(n, pid=pid, epoch=epoch, seq=seq))


def code_of(plog: PartitionLog, blob: bytes) -> ErrorCode:
    with pytest.raises(LogError) as e:
        plog.append(blob)
    return e.value.code


def test_duplicates_are_acknowledged_with_their_original_offset_and_not_appended() -> None:
    plog = PartitionLog.open("t", 0, None)
    assert plog.append(make_batch(3, pid=1, epoch=0, seq=0)) == (0, False)
    assert plog.append(make_batch(3, pid=1, epoch=0, seq=3)) == (3, False)
    assert plog.append(make_batch(3, pid=1, epoch=0, seq=0)) == (0, True)
    assert plog.append(make_batch(3, pid=1, epoch=0, seq=3)) == (3, True)
    assert plog.log_end_offset == 6


def test_only_the_last_five_batches_are_remembered() -> None:
    plog = PartitionLog.open("t", 0, None)
    for i in range(6):
        plog.append(make_batch(1, pid=1, epoch=0, seq=i))
    assert plog.append(make_batch(1, pid=1, epoch=0, seq=1)) == (1, True)
    assert code_of(plog, make_batch(1, pid=1, epoch=0, seq=0)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_gap_and_wrong_size_retry_are_out_of_order() -> None:
    plog = PartitionLog.open("t", 0, None)
    plog.append(make_batch(3, pid=1, epoch=0, seq=0))
    assert code_of(plog, make_batch(1, pid=1, epoch=0, seq=5)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert code_of(plog, make_batch(2, pid=1, epoch=0, seq=0)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert plog.log_end_offset == 3


def test_epoch_bump_must_restart_at_zero_and_fences_the_old_epoch() -> None:
    plog = PartitionLog.open("t", 0, None)
    plog.append(make_batch(2, pid=1, epoch=0, seq=0))
    assert code_of(plog, make_batch(1, pid=1, epoch=1, seq=2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert plog.append(make_batch(1, pid=1, epoch=1, seq=0)) == (2, False)
    assert code_of(plog, make_batch(1, pid=1, epoch=0, seq=2)) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_unknown_producer_accepts_any_sequence_and_no_pid_skips_checks() -> None:
    plog = PartitionLog.open("t", 0, None)
    assert plog.append(make_batch(1, pid=5, epoch=2, seq=17)) == (0, False)
    assert plog.append(make_batch(1, pid=5, epoch=2, seq=18)) == (1, False)
    assert plog.append(make_batch(1)) == (2, False)
    assert plog.append(make_batch(1)) == (3, False)  # same bytes, no producer id: appended again


def test_sequence_wraps_after_int32_max() -> None:
    m = ProducerStateManager()
    m.update(header(2, 1, 0, INT32_MAX - 1), 0)
    assert m.producers[1].last_seq == INT32_MAX
    assert m.check(header(1, 1, 0, 0)) is None
    with pytest.raises(LogError):
        m.check(header(1, 1, 0, 1))


def test_snapshot_round_trip() -> None:
    m = ProducerStateManager()
    m.update(header(2, 1, 0, 0), 10)
    m.update(header(2, 1, 0, 2), 12)
    m2 = ProducerStateManager.from_snapshot(m.snapshot(14))
    assert m2.check(header(2, 1, 0, 2)) == 12
    assert m2.check(header(1, 1, 0, 4)) is None
