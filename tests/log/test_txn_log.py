"""Transactions in the log: LSO, read_committed reads, the aborted index, markers, recovery after a crash."""

from __future__ import annotations

from pathlib import Path

from aiokafka.record.default_records import DefaultRecordBatch
from log_helpers import batch_offsets, make_batch

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log import LogManager
from groupcoord.server.log.txn_state import COMMIT, control_batch, control_type


def test_control_batch_is_a_valid_marker_that_aiokafka_reads() -> None:
    blob = control_batch(7, 3, True, 0)
    batch = DefaultRecordBatch(blob)
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    assert batch.producer_id == 7 and batch.producer_epoch == 3
    assert control_type(blob) == COMMIT


async def test_open_transaction_holds_the_lso_and_abort_is_indexed(tmp_path: Path) -> None:
    m = LogManager(tmp_path)
    await m.open()
    await m.create_topic("t", 1)
    await m.append("t", 0, make_batch(2), -1)  # offsets 0-1, not transactional
    r = await m.append("t", 0, make_batch(2, pid=5, epoch=0, seq=0, transactional=True), -1)  # 2-3
    assert r.error == ErrorCode.NONE
    await m.append("t", 0, make_batch(1), -1)  # 4
    committed = m.read("t", 0, 0, 1 << 20, read_committed=True)
    assert committed.last_stable_offset == 2 and committed.high_watermark == 5
    assert batch_offsets(committed.records) == [(0, 1)]
    assert m.read("t", 0, 2, 1 << 20, read_committed=True).records == b""
    assert len(batch_offsets(m.read("t", 0, 0, 1 << 20).records)) == 3  # read_uncommitted sees all
    assert (await m.list_offsets("t", 0, -1, read_committed=True)).offset == 2
    assert await m.write_marker("t", 0, 5, 0, False, 0) == ErrorCode.NONE  # ABORT at 5
    r2 = m.read("t", 0, 0, 1 << 20, read_committed=True)
    assert r2.last_stable_offset == 6 and r2.aborted == ((5, 2),)
    assert batch_offsets(r2.records)[-1] == (5, 5)
    assert m.read("t", 0, 6, 1 << 20, read_committed=True).aborted == ()
    await m.close()
    # a clean close writes the snapshot; reopening keeps the aborted index
    m2 = LogManager(tmp_path)
    await m2.open()
    assert m2.read("t", 0, 0, 1 << 20, read_committed=True).aborted == ((5, 2),)
    await m2.close()


async def test_recovery_without_snapshot_rebuilds_open_transactions(tmp_path: Path) -> None:
    m = LogManager(tmp_path)
    await m.open()
    await m.create_topic("t", 1)
    await m.append("t", 0, make_batch(1, pid=1, epoch=0, seq=0, transactional=True), -1)  # 0
    await m.append("t", 0, make_batch(1, pid=2, epoch=0, seq=0, transactional=True), -1)  # 1
    await m.write_marker("t", 0, 1, 0, False, 0)  # 2: pid 1 aborted
    await m.append("t", 0, make_batch(1, pid=3, epoch=0, seq=0, transactional=True), -1)  # 3
    await m.write_marker("t", 0, 3, 0, True, 0)  # 4: pid 3 committed; pid 2 still open
    # no close: as after kill -9 (no producer snapshot was written)
    assert not (tmp_path / "topics" / "t-0" / "producer_state.json").exists()
    m2 = LogManager(tmp_path)
    await m2.open()
    r = m2.read("t", 0, 0, 1 << 20, read_committed=True)
    assert r.last_stable_offset == 1 and r.aborted == ((1, 0),)
    await m2.write_marker("t", 0, 2, 0, True, 0)
    assert m2.read("t", 0, 0, 1 << 20, read_committed=True).last_stable_offset == 6
    await m2.close()
    await m.close()


async def test_marker_with_a_bumped_epoch_fences_the_old_epoch(tmp_path: Path) -> None:
    m = LogManager(None, storage="memory")
    await m.open()
    await m.create_topic("t", 1)
    await m.append("t", 0, make_batch(1, pid=9, epoch=0, seq=0, transactional=True), -1)
    assert await m.write_marker("t", 0, 9, 1, False, 0) == ErrorCode.NONE  # timeout abort: epoch 0 -> 1
    late = await m.append("t", 0, make_batch(1, pid=9, epoch=0, seq=1, transactional=True), -1)
    assert late.error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert await m.write_marker("t", 0, 9, 0, True, 0) == ErrorCode.INVALID_PRODUCER_EPOCH
    await m.close()
