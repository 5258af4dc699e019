"""Compaction (server/log/cleaner.py): latest record per key, offsets kept, tombstones, crash-safe swaps."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log import LogManager
from groupcoord.server.log.cleaner import clean, plan
from groupcoord.server.log.config import LogConfig
from groupcoord.server.log.maintenance import MaintenanceConfig
from groupcoord.server.log.segment import wall_ms

IDLE = MaintenanceConfig(retention_check_interval_ms=10**9, cleaner_backoff_ms=10**9)
COMPACT = LogConfig(cleanup_policy=frozenset({"compact"}), segment_bytes=2000, min_cleanable_dirty_ratio=0.01)


def keyed_batch(
    records: list[tuple[bytes | None, bytes | None]], *, ts: int | None = None, gzip: bool = False
) -> bytes:
    b = DefaultRecordBatchBuilder(2, 1 if gzip else 0, 0, -1, -1, -1, 1 << 30)
    ts = wall_ms() if ts is None else ts
    for i, (k, v) in enumerate(records):
        b.append(i, timestamp=ts, key=k, value=v, headers=[])
    return bytes(b.build())


def read_all(m: LogManager, topic: str = "c") -> list[tuple[int, bytes | None, bytes | None]]:
    plog = m.partition(topic, 0)
    assert plog is not None
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = m.read(topic, 0, offset, 1 << 20).records
        if not data:
            break
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            batch = DefaultRecordBatch(data[pos : pos + 12 + length])
            assert batch.validate_crc()
            out.extend((r.offset, r.key, r.value) for r in batch if r.offset >= offset)
            pos += 12 + length
        offset = max(o for o, _, _ in out) + 1 if out else plog.log_end_offset
    return out


async def new_manager(tmp_path: Path, storage: str = "disk") -> LogManager:
    m = LogManager(tmp_path if storage == "disk" else None, storage=storage, maintenance=IDLE)  # type: ignore[arg-type]
    await m.open()
    return m


async def fill_changelog(m: LogManager, n: int = 300, keys: int = 5, *, gzip: bool = False) -> None:
    await m.create_topic("c", 1)
    m.set_log_config("c", COMPACT)
    for i in range(n):
        r = await m.append("c", 0, keyed_batch([(b"k%d" % (i % keys), b"v%d" % i)], gzip=gzip), 1)
        assert r.error == ErrorCode.NONE


def expected_after_clean(before: list[tuple[int, bytes | None, bytes | None]], end: int) -> list:
    """Kafka's result: below `end` only the last record of each key (within the cleaned range) is kept."""
    last = {k: o for o, k, _ in before if o < end}
    return [(o, k, v) for o, k, v in before if o >= end or last[k] == o]


@pytest.mark.parametrize("storage", ["disk", "memory"])
@pytest.mark.parametrize("gzip", [False, True])
async def test_compaction_keeps_the_latest_record_per_key_at_its_offset(
    tmp_path: Path, storage: str, gzip: bool
) -> None:
    m = await new_manager(tmp_path, storage)
    await fill_changelog(m, gzip=gzip)
    await m.flush()
    plog = m.partition("c", 0)
    assert plog is not None and len(plog.segments) > 3
    before = read_all(m)
    size_before, end = plog.size_bytes, plog.segments[-1].base_offset
    assert await m.maintenance.cleaner_pass() == 1
    after = read_all(m)
    assert after == expected_after_clean(before, end)
    assert plog.size_bytes < size_before / 3
    assert plog.log_end_offset == 300 and plog.log_start_offset == 0
    assert await m.maintenance.cleaner_pass() == 0  # nothing dirty left below the active segment
    # appends continue at the log end; a later clean folds in the new data
    for i in range(300, 400):
        await m.append("c", 0, keyed_batch([(b"k%d" % (i % 5), b"v%d" % i)]), 1)
    await m.flush()
    before2 = read_all(m)
    end2 = plog.segments[-1].base_offset
    assert await m.maintenance.cleaner_pass() == 1
    assert read_all(m) == expected_after_clean(before2, end2)
    await m.close()
    if storage == "disk":  # the cleaned log survives a restart, offsets and all
        m2 = await new_manager(tmp_path)
        assert read_all(m2) == expected_after_clean(before2, end2)
        assert m2.partition("c", 0).cleaner_offset == end2  # type: ignore[union-attr]
        await m2.close()


async def test_tombstones_survive_one_clean_and_go_after_delete_retention(tmp_path: Path) -> None:
    m = await new_manager(tmp_path)
    await fill_changelog(m, 100)
    m.set_log_config("c", LogConfig(**{**_fields(COMPACT), "delete_retention_ms": 0}))
    await m.append("c", 0, keyed_batch([(b"k1", None)]), 1)  # tombstone for k1
    for i in range(100):  # push the tombstone out of the active segment
        await m.append("c", 0, keyed_batch([(b"other%d" % (i % 3), b"x")]), 1)
    await m.flush()
    assert await m.maintenance.cleaner_pass() == 1
    keys = [(k, v) for _, k, v in read_all(m)]
    assert (b"k1", None) in keys and all(k != b"k1" or v is None for k, v in keys)
    for i in range(100):
        await m.append("c", 0, keyed_batch([(b"more%d" % (i % 3), b"y")]), 1)
    await m.flush()
    assert await m.maintenance.cleaner_pass() == 1
    assert all(k != b"k1" for _, k, _ in read_all(m))  # the tombstone itself is gone now
    await m.close()


def _fields(c: LogConfig) -> dict:
    return {f: getattr(c, f) for f in c.__slots__}  # type: ignore[attr-defined]


async def test_min_compaction_lag_and_dirty_ratio_decide_when_to_clean(tmp_path: Path) -> None:
    m = await new_manager(tmp_path)
    await fill_changelog(m, 200, keys=100)
    m.set_log_config("c", LogConfig(**{**_fields(COMPACT), "min_compaction_lag_ms": 3_600_000}))
    await m.flush()
    assert await m.maintenance.cleaner_pass() == 0  # every record is younger than the lag
    m.set_log_config("c", COMPACT)
    assert await m.maintenance.cleaner_pass() == 1
    for i in range(60):  # a little dirty data on top of 100 distinct clean keys
        await m.append("c", 0, keyed_batch([(b"k%d" % (i % 100), b"w")]), 1)
    await m.flush()
    plog = m.partition("c", 0)
    assert plog is not None
    m.set_log_config("c", LogConfig(**{**_fields(COMPACT), "min_cleanable_dirty_ratio": 0.9}))
    assert plan(plog, wall_ms()) is None and await m.maintenance.cleaner_pass() == 0
    m.set_log_config("c", LogConfig(**{**_fields(COMPACT), "min_cleanable_dirty_ratio": 0.1}))
    assert await m.maintenance.cleaner_pass() == 1
    await m.close()


async def test_a_record_without_a_key_is_refused_by_a_compacted_topic(tmp_path: Path) -> None:
    m = await new_manager(tmp_path)
    await fill_changelog(m, 1)
    for gzip in (False, True):
        r = await m.append("c", 0, keyed_batch([(b"a", b"1"), (None, b"2")], gzip=gzip), 1)
        assert r.error == ErrorCode.INVALID_RECORD and "without key" in (r.error_message or "")
    m.set_log_config("c", LogConfig())  # back to delete: keyless records are fine
    assert (await m.append("c", 0, keyed_batch([(None, b"2")]), 1)).error == ErrorCode.NONE
    await m.close()


@pytest.mark.parametrize("crash_point", ["cleaned", "swap", "swap-after-deleted"])
async def test_a_crash_mid_clean_leaves_a_complete_readable_log(tmp_path: Path, crash_point: str) -> None:
    """Stop at each commit point of the swap (files as a kill -9 would leave them) and restart."""
    m = await new_manager(tmp_path)
    await fill_changelog(m, 300)
    await m.flush()
    plog = m.partition("c", 0)
    assert plog is not None
    before = read_all(m)
    p = plan(plog, wall_ms())
    assert p is not None
    plog.gaps = True  # as the maintenance task records before cleaning
    plog.save_state()
    stats = clean(plog, p, abort=lambda: False)  # writes committed .swap files, installs nothing
    await m.close()
    d = tmp_path / "topics" / "c-0"
    swaps = sorted(d.glob("*.log.swap"))
    assert swaps
    if crash_point == "cleaned":  # not yet committed: the old segments stay
        for s in swaps:
            s.rename(s.with_name(s.name.replace(".swap", ".cleaned")))
    elif crash_point == "swap-after-deleted":  # old segments renamed to .deleted, swap not yet renamed
        for g in stats.groups:
            for seg in g.old:
                f = d / f"{seg.base_offset:020d}.log"
                f.rename(f.with_name(f.name + ".deleted"))
    m2 = await new_manager(tmp_path)
    after = read_all(m2)
    assert [(o, k, v) for o, k, v in after] == (
        before if crash_point == "cleaned" else expected_after_clean(before, p.end)
    )
    assert not list(d.glob("*.swap")) and not list(d.glob("*.cleaned")) and not list(d.glob("*.deleted"))
    assert m2.partition("c", 0).log_end_offset == 300  # type: ignore[union-attr]
    r = await m2.append("c", 0, keyed_batch([(b"k0", b"new")]), -1)
    assert r.base_offset == 300
    await m2.close()
