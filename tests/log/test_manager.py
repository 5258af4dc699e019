"""LogManager: topics, append/read/list_offsets, flush policy and group commit, waiters, memory mode."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from log_helpers import batch_offsets, decode, make_batch

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log import FlushPolicy, LogError, LogManager


@pytest.fixture
async def manager(tmp_path: Path):  # type: ignore[no-untyped-def]
    m = LogManager(tmp_path)
    await m.open()
    yield m
    await m.close()


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "slash/x", "ünïcode", "colon:x"])
async def test_invalid_topic_names(manager: LogManager, name: str) -> None:
    with pytest.raises(LogError) as e:
        await manager.create_topic(name, 1)
    assert e.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION


async def test_topic_lifecycle_and_registry(tmp_path: Path, manager: LogManager) -> None:
    tid = await manager.create_topic("a.b-C_9", 2)
    assert manager.topic_by_id(tid).name == "a.b-C_9"  # type: ignore[union-attr]
    assert await manager.create_topic("x" * 249, 1)
    for name, parts, code in [
        ("a.b-C_9", 1, ErrorCode.TOPIC_ALREADY_EXISTS),
        ("a_b-C_9", 1, ErrorCode.INVALID_TOPIC_EXCEPTION),  # collides with a.b-C_9
        ("zero", 0, ErrorCode.INVALID_PARTITIONS),
    ]:
        with pytest.raises(LogError) as e:
            await manager.create_topic(name, parts)
        assert e.value.code == code
    await manager.create_partitions("a.b-C_9", 3)
    with pytest.raises(LogError) as e:
        await manager.create_partitions("a.b-C_9", 3)
    assert e.value.code == ErrorCode.INVALID_PARTITIONS
    assert (await manager.append("a.b-C_9", 2, make_batch(), 1)).base_offset == 0
    registry = json.loads((tmp_path / "topics" / "topics.json").read_text())
    assert registry["topics"]["a.b-C_9"] == {"id": str(tid), "partitions": 3}
    assert (tmp_path / "topics" / "a.b-C_9-2").is_dir()
    await manager.delete_topic("a.b-C_9")
    assert manager.topic("a.b-C_9") is None and manager.topic_by_id(tid) is None
    assert not list((tmp_path / "topics").glob("a.b-C_9-*"))
    with pytest.raises(LogError) as e:
        await manager.delete_topic("a.b-C_9")
    assert e.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # a recreated topic gets a fresh id and an empty log
    tid2 = await manager.create_topic("a.b-C_9", 1)
    assert tid2 != tid and manager.partition("a.b-C_9", 0).log_end_offset == 0  # type: ignore[union-attr]


async def test_append_read_list_offsets(manager: LogManager) -> None:
    await manager.create_topic("t", 1)
    r = await manager.append("t", 0, make_batch(3, ts=100, ts_step=100), -1)
    assert (r.error, r.base_offset, r.log_start_offset) == (ErrorCode.NONE, 0, 0)
    r = await manager.append("t", 0, make_batch(3, ts=400, ts_step=100), 1)
    assert r.base_offset == 3
    rr = manager.read("t", 0, 4, 1 << 20)
    assert rr.error == ErrorCode.NONE and rr.high_watermark == 6 and rr.log_start_offset == 0
    assert batch_offsets(rr.records) == [(3, 5)]
    assert manager.read("t", 0, 7, 100).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert manager.read("t", 1, 0, 100).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert tuple(await manager.list_offsets("t", 0, -2)) == (ErrorCode.NONE, 0, -1)
    assert tuple(await manager.list_offsets("t", 0, -1)) == (ErrorCode.NONE, 6, -1)
    assert tuple(await manager.list_offsets("t", 0, 250)) == (ErrorCode.NONE, 2, 300)
    assert tuple(await manager.list_offsets("t", 0, 601)) == (ErrorCode.NONE, -1, -1)
    assert tuple(await manager.list_offsets("t", 0, -3)) == (ErrorCode.NONE, 5, 600)


async def test_append_errors(manager: LogManager) -> None:
    await manager.create_topic("t", 1)
    assert (await manager.append("nope", 0, make_batch(), 1)).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (await manager.append("t", 0, make_batch(), 2)).error == ErrorCode.INVALID_REQUIRED_ACKS
    old = bytearray(make_batch())
    old[16] = 1
    assert (await manager.append("t", 0, bytes(old), 1)).error == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
    bad = bytearray(make_batch())
    bad[-1] ^= 1
    assert (await manager.append("t", 0, bytes(bad), -1)).error == ErrorCode.CORRUPT_MESSAGE
    assert tuple(await manager.append("t", 0, b"", 1))[:3] == (ErrorCode.NONE, -1, 0)


async def test_acks_all_group_commit_shares_fsyncs(manager: LogManager) -> None:
    await manager.create_topic("t", 4)
    n = 200
    results = await asyncio.gather(*(manager.append("t", i % 4, make_batch(2), -1) for i in range(n)))
    assert all(r.error == ErrorCode.NONE for r in results)
    assert sorted(r.base_offset for r in results) == sorted([2 * k for k in range(n // 4)] * 4)
    assert 1 <= manager.fsyncs < n // 10  # many appends per fsync
    for p in range(4):
        plog = manager.partition("t", p)
        assert plog is not None and plog.durable_offset == plog.log_end_offset == n // 2


async def test_acks_1_does_not_wait_but_is_flushed_in_the_background(tmp_path: Path) -> None:
    m = LogManager(tmp_path, background_flush_ms=20)
    await m.open()
    await m.create_topic("t", 1)
    await m.append("t", 0, make_batch(), 1)
    plog = m.partition("t", 0)
    assert plog is not None and plog.durable_offset == 0
    for _ in range(100):
        if plog.durable_offset == 3:
            break
        await asyncio.sleep(0.01)
    assert plog.durable_offset == 3
    await m.close()


async def test_wait_for_data(manager: LogManager) -> None:
    await manager.create_topic("t", 2)
    t0 = time.monotonic()
    assert await manager.wait_for_data([("t", 0), ("t", 1)], 0.05) is False
    assert time.monotonic() - t0 >= 0.04
    waiter = asyncio.create_task(manager.wait_for_data([("t", 0), ("t", 1)], 5))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    await manager.append("t", 1, make_batch(), 1)
    assert await asyncio.wait_for(waiter, 30) is True
    assert not manager._data_waiters  # cleaned up


async def test_restart_keeps_topics_data_and_producer_ids(tmp_path: Path) -> None:
    m = LogManager(tmp_path)
    await m.open()
    tid = await m.create_topic("t", 2)
    pids = [(await m.init_producer_id())[0] for _ in range(3)]
    assert pids == [0, 1, 2]
    await m.append("t", 1, make_batch(3, pid=pids[0], epoch=0, seq=0), -1)
    await m.close()
    m = LogManager(tmp_path)
    await m.open()
    assert m.topic("t").topic_id == tid  # type: ignore[union-attr]
    assert [o for o, _, _ in decode(m.read("t", 1, 0, 1 << 20).records)] == [0, 1, 2]
    dup = await m.append("t", 1, make_batch(3, pid=pids[0], epoch=0, seq=0), -1)
    assert (dup.error, dup.base_offset) == (ErrorCode.NONE, 0)
    assert m.partition("t", 1).log_end_offset == 3  # type: ignore[union-attr]
    pid, epoch = await m.init_producer_id()
    assert pid > max(pids) and epoch == 0
    await m.close()


async def test_memory_mode_touches_no_disk(tmp_path: Path) -> None:
    m = LogManager(None, storage="memory")
    await m.open()
    await m.create_topic("t", 1)
    r = await m.append("t", 0, make_batch(), -1)
    assert r.error == ErrorCode.NONE and r.base_offset == 0
    assert batch_offsets(m.read("t", 0, 0, 100).records) == [(0, 2)]
    assert (await m.init_producer_id())[0] == 0
    await m.delete_topic("t")
    await m.close()
    assert list(tmp_path.iterdir()) == []


def test_flush_policy_parsing() -> None:
    assert FlushPolicy.parse("always") == FlushPolicy.parse("acks-all") == ("always", 0)
    assert FlushPolicy.parse("never").kind == "never"
    assert FlushPolicy.parse(250) == FlushPolicy.parse("interval:250") == ("interval", 250)
    for bad in ("sometimes", 0, "interval:x"):
        with pytest.raises(ValueError):
            FlushPolicy.parse(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("flush", ["never", "interval:10"])
async def test_other_flush_policies_do_not_wait(tmp_path: Path, flush: str) -> None:
    m = LogManager(tmp_path, flush=flush)
    await m.open()
    await m.create_topic("t", 1)
    r = await m.append("t", 0, make_batch(), -1)
    assert r.error == ErrorCode.NONE
    await m.close()
    m = LogManager(tmp_path, flush=flush)
    await m.open()
    assert m.partition("t", 0).log_end_offset == 3  # type: ignore[union-attr]
    await m.close()


async def test_fsync_failure_fails_the_waiters_and_takes_the_partition_offline(
    manager: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    await manager.create_topic("t", 2)

    def broken_fsync(self: object) -> None:
        raise OSError(5, "Input/output error")

    from groupcoord.server.log.segment import Segment

    monkeypatch.setattr(Segment, "fsync", broken_fsync)
    r = await manager.append("t", 0, make_batch(), -1)
    assert r.error == ErrorCode.KAFKA_STORAGE_ERROR
    assert (await manager.append("t", 0, make_batch(), 1)).error == ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.undo()
    assert (await manager.append("t", 1, make_batch(), -1)).error == ErrorCode.NONE  # others unaffected


async def test_wait_for_data_with_fetch_offsets_returns_at_once_if_data_is_there(manager: LogManager) -> None:
    await manager.create_topic("t", 1)
    await manager.append("t", 0, make_batch(), 1)
    assert await manager.wait_for_data({("t", 0): 0}, 5) is True
    assert await manager.wait_for_data({("t", 0): 3}, 0.01) is False


async def test_orphaned_partition_directory_does_not_resurface(tmp_path: Path) -> None:
    orphan = tmp_path / "topics" / "t-0"
    orphan.mkdir(parents=True)
    (orphan / f"{0:020d}.log").write_bytes(make_batch(5))  # left by a crash mid-deletion
    m = LogManager(tmp_path)
    await m.open()
    await m.create_topic("t", 1)
    assert m.partition("t", 0).log_end_offset == 0  # type: ignore[union-attr]
    await m.close()


async def test_concurrent_acks_all_with_segment_rolls_restart_cleanly(tmp_path: Path) -> None:
    size = len(make_batch(2, pid=0, epoch=0, seq=0))
    m = LogManager(tmp_path, segment_bytes=size * 5)
    await m.open()
    await m.create_topic("t", 3)

    async def producer(pid: int) -> None:
        for seq in range(0, 40, 2):
            r = await m.append("t", pid % 3, make_batch(2, pid=pid, epoch=0, seq=seq), -1 if seq % 4 else 1)
            assert r.error == ErrorCode.NONE

    await asyncio.gather(*(producer(pid) for pid in range(9)))
    ends = [m.partition("t", p).log_end_offset for p in range(3)]  # type: ignore[union-attr]
    assert ends == [120, 120, 120]
    assert len(m.partition("t", 0).segments) > 10  # type: ignore[union-attr]
    await m.close()
    assert (await m.append("t", 0, make_batch(), 1)).error == ErrorCode.KAFKA_STORAGE_ERROR
    m = LogManager(tmp_path, segment_bytes=size * 5)
    await m.open()
    for p in range(3):
        plog = m.partition("t", p)
        assert plog is not None and plog.log_end_offset == 120
        assert next(o for o, _, _ in decode(plog.read(0, 1 << 20))) == 0
    # every producer's last batch is still recognised as a duplicate after the restart
    for pid in range(9):
        r = await m.append("t", pid % 3, make_batch(2, pid=pid, epoch=0, seq=38), -1)
        assert r.error == ErrorCode.NONE and m.partition("t", pid % 3).log_end_offset == 120  # type: ignore[union-attr]
    await m.close()


async def test_producer_state_after_a_crash_uses_roll_snapshots_and_replay(tmp_path: Path) -> None:
    size = len(make_batch(2, pid=0, epoch=0, seq=0))
    m = LogManager(tmp_path, segment_bytes=size * 3)
    await m.open()
    await m.create_topic("t", 1)
    for pid in range(6):  # producer 0 writes only at the start, far behind the last two segments
        for seq in range(0, 6 if pid else 2, 2):
            assert (await m.append("t", 0, make_batch(2, pid=pid, epoch=0, seq=seq), -1)).error == 0
    assert m._flusher is not None and m._flusher._task is not None
    m._flusher._task.cancel()  # "crash": no clean close, no final snapshot
    crashed = m.partition("t", 0)
    m2 = LogManager(tmp_path, segment_bytes=size * 3)
    await m2.open()
    dup = await m2.append("t", 0, make_batch(2, pid=0, epoch=0, seq=0), -1)
    assert (dup.error, dup.base_offset) == (ErrorCode.NONE, 0)
    assert m2.partition("t", 0).log_end_offset == 32  # type: ignore[union-attr]
    await m2.close()
    assert crashed is not None
    crashed.close()
    if m._flusher._pool is not None:
        m._flusher._pool.shutdown()


def test_delete_dir_name_fits_the_file_name_limit_like_kafka() -> None:
    """Kafka's `LocalLog.logDeleteDirName`: the topic is cut so `<topic>-<p>.<id>-delete` fits 255 bytes."""
    from groupcoord.server.log.manager import delete_dir_name

    tag = "0123456789abcdef0123456789abcdef"
    assert delete_dir_name("short", 3, tag) == f"short-3.{tag}-delete"
    long_name = "t" * 249
    for partition in (0, 7, 12345):
        name = delete_dir_name(long_name, partition, tag)
        assert len(name.encode()) == 255
        assert name.endswith(f"-{partition}.{tag}-delete") and name.startswith("t" * 200)


async def test_deleting_a_topic_with_a_249_character_name_removes_its_directories(
    tmp_path: Path, manager: LogManager
) -> None:
    name = "x" * 249
    await manager.create_topic(name, 3)
    assert (tmp_path / "topics" / f"{name}-2").is_dir()
    await manager.delete_topic(name)
    assert manager.topic(name) is None
    assert sorted(p.name for p in (tmp_path / "topics").iterdir() if p.name.startswith("x")) == []
