"""Retention by time and size, DeleteRecords and the durable log start offset (server/log/retention.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_helpers import make_batch

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log import LogManager
from groupcoord.server.log.config import LogConfig
from groupcoord.server.log.maintenance import MaintenanceConfig
from groupcoord.server.log.manager import EARLIEST_TIMESTAMP
from groupcoord.server.log.segment import wall_ms

IDLE = MaintenanceConfig(retention_check_interval_ms=10**9, cleaner_backoff_ms=10**9)
SMALL = len(make_batch(3)) * 4  # four 3-record batches per segment


async def manager(tmp_path: Path, storage: str = "disk") -> LogManager:
    m = LogManager(tmp_path if storage == "disk" else None, storage=storage, maintenance=IDLE)  # type: ignore[arg-type]
    await m.open()
    return m


async def fill(m: LogManager, batches: int, ts: int) -> None:
    for _ in range(batches):
        assert (await m.append("t", 0, make_batch(3, ts=ts), 1)).error == ErrorCode.NONE


@pytest.mark.parametrize("storage", ["disk", "memory"])
async def test_time_retention_deletes_expired_segments_and_moves_the_log_start(
    tmp_path: Path, storage: str
) -> None:
    m = await manager(tmp_path, storage)
    await m.create_topic("t", 1)
    m.set_log_config("t", LogConfig(retention_ms=60_000, segment_bytes=SMALL))
    now = wall_ms()
    await fill(m, 8, now - 3_600_000)  # an hour old: two full segments, expired
    await fill(m, 6, now - 10_000)  # recent
    await m.flush()
    plog = m.partition("t", 0)
    assert plog is not None and len(plog.segments) == 4
    assert await m.maintenance.retention_pass() == 2
    assert plog.log_start_offset == 24 and plog.log_end_offset == 42
    assert m.read("t", 0, 0, 1 << 20).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert m.read("t", 0, 24, 1 << 20).error == ErrorCode.NONE
    assert (await m.list_offsets("t", 0, EARLIEST_TIMESTAMP)).offset == 24
    if storage == "disk":
        assert sorted(p.name for p in (tmp_path / "topics" / "t-0").glob("*.log"))[0] == f"{24:020d}.log"
    # everything expires: the active segment is rolled first, so the log end offset stays
    m.set_log_config("t", LogConfig(retention_ms=1_000, segment_bytes=SMALL))
    assert await m.maintenance.retention_pass() == 2
    assert plog.log_start_offset == plog.log_end_offset == 42
    assert (await m.append("t", 0, make_batch(3), 1)).base_offset == 42
    await m.close()
    if storage == "disk":
        m2 = await manager(tmp_path)
        assert m2.partition("t", 0).log_start_offset == 42  # type: ignore[union-attr]
        await m2.close()


async def test_size_retention_keeps_the_partition_under_retention_bytes(tmp_path: Path) -> None:
    m = await manager(tmp_path)
    await m.create_topic("t", 1)
    m.set_log_config("t", LogConfig(retention_bytes=SMALL * 2, segment_bytes=SMALL))
    await fill(m, 20, wall_ms())  # 5 segments of 4 batches
    await m.flush()
    plog = m.partition("t", 0)
    assert plog is not None
    assert await m.maintenance.retention_pass() == 3
    assert plog.size_bytes <= SMALL * 2 and plog.log_start_offset == 36
    m.set_log_config(
        "t", LogConfig(retention_bytes=SMALL * 2, segment_bytes=SMALL, cleanup_policy=frozenset({"compact"}))
    )
    await fill(m, 8, wall_ms())
    await m.flush()
    assert await m.maintenance.retention_pass() == 0  # compact only: no size or time retention
    await m.close()


async def test_delete_records_moves_the_log_start_durably(tmp_path: Path) -> None:
    m = await manager(tmp_path)
    await m.create_topic("t", 1)
    m.set_log_config("t", LogConfig(segment_bytes=SMALL))
    await fill(m, 10, wall_ms())
    assert await m.delete_records("t", 0, 31) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert await m.delete_records("t", 0, -2) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert await m.delete_records("t", 1, 0) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert await m.delete_records("t", 0, 13) == (ErrorCode.NONE, 13)
    assert await m.delete_records("t", 0, 5) == (ErrorCode.NONE, 13)  # never moves back
    assert m.read("t", 0, 12, 1 << 20).error == ErrorCode.OFFSET_OUT_OF_RANGE
    r = m.read("t", 0, 13, 1 << 20)
    assert r.error == ErrorCode.NONE and r.log_start_offset == 13
    assert (await m.list_offsets("t", 0, EARLIEST_TIMESTAMP)).offset == 13
    assert await m.maintenance.retention_pass() == 1  # the segment [0, 12) is below the start now
    await m.close()
    m2 = await manager(tmp_path)
    assert m2.partition("t", 0).log_start_offset == 13  # type: ignore[union-attr]
    assert await m2.delete_records("t", 0, -1) == (ErrorCode.NONE, 30)  # -1: up to the high watermark
    m2.set_log_config("t", LogConfig(cleanup_policy=frozenset({"compact"})))
    assert await m2.delete_records("t", 0, 30) == (ErrorCode.POLICY_VIOLATION, -1)
    await m2.close()
