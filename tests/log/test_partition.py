"""PartitionLog on disk and in memory: append/read/index/roll, recovery, corruption handling."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from log_helpers import batch_offsets, decode, make_batch

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.partition import PRODUCER_SNAPSHOT, PartitionLog
from groupcoord.server.log.segment import segment_name


def open_log(d: Path | None, **kw: object) -> PartitionLog:
    return PartitionLog.open("t", 0, d, **kw)  # type: ignore[arg-type]


def fill(plog: PartitionLog, batches: int, n: int = 3, **kw: object) -> list[int]:
    return [plog.append(make_batch(n, ts=1_000 + 10 * i, **kw))[0] for i in range(batches)]  # type: ignore[arg-type]


@pytest.mark.parametrize("on_disk", [True, False])
def test_append_assigns_offsets_and_reads_whole_batches(tmp_path: Path, on_disk: bool) -> None:
    plog = open_log(tmp_path / "t-0" if on_disk else None)
    assert fill(plog, 4) == [0, 3, 6, 9]
    assert (plog.log_start_offset, plog.log_end_offset, plog.high_watermark) == (0, 12, 12)
    data = plog.read(0, 1 << 20)
    assert [o for o, _, _ in decode(data)] == list(range(12))
    # offset 4 is inside the second batch: the read starts with that whole batch
    assert batch_offsets(plog.read(4, 1 << 20))[0] == (3, 5)
    assert plog.read(12, 1 << 20) == b""
    for bad in (-1, 13):
        with pytest.raises(LogError) as e:
            plog.read(bad, 100)
        assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    plog.close()


def test_max_bytes_returns_whole_batches_and_at_least_one(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    fill(plog, 3, n=2)
    size = len(make_batch(2))
    assert batch_offsets(plog.read(0, size * 2 + 10)) == [(0, 1), (2, 3)]
    assert batch_offsets(plog.read(0, 10)) == [(0, 1)]  # first batch returned whole even if larger
    assert plog.read(0, 10, min_one=False) == b""
    plog.close()


def test_roll_by_size_and_read_across_segments(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    size = len(make_batch(3))
    plog = open_log(d, segment_bytes=size * 4, index_interval_bytes=1)
    fill(plog, 10)
    assert len(plog.segments) == 3
    assert sorted(p.name for p in d.glob("*.log")) == [f"{segment_name(b)}.log" for b in (0, 12, 24)]
    assert len(list(d.glob("*.index"))) == 3
    # a read never crosses a segment: from 6 it returns the rest of the first segment
    assert batch_offsets(plog.read(6, 1 << 20)) == [(6, 8), (9, 11)]
    assert batch_offsets(plog.read(12, 1 << 20))[0] == (12, 14)
    assert batch_offsets(plog.read(29, 1 << 20)) == [(27, 29)]
    plog.close()
    reopened = open_log(d, segment_bytes=size * 4, index_interval_bytes=1)
    assert reopened.log_end_offset == 30
    assert next(o for o, _, _ in decode(reopened.read(13, 1 << 20))) == 12
    reopened.close()


def test_sparse_index_lookup_and_rebuild_of_a_missing_index(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    size = len(make_batch(3))
    plog = open_log(d, segment_bytes=size * 20, index_interval_bytes=size * 3)
    fill(plog, 50)
    first = plog.segments[0]
    assert 1 < len(first.index_offsets) < 20  # sparse
    assert first.lookup(35) <= (35 // 3) * size
    plog.close()
    (d / f"{segment_name(0)}.index").unlink()
    (d / f"{segment_name(60)}.index").write_bytes(b"\x00\x00\x00\x05garbage!")  # insane: rebuilt
    reopened = open_log(d, segment_bytes=size * 20, index_interval_bytes=size * 3)
    assert reopened.segments[0].index_offsets.tolist() == first.index_offsets.tolist()
    for off in (0, 35, 59, 61, 100, 149):
        assert batch_offsets(reopened.read(off, 1))[0][0] == off - off % 3
    reopened.close()


@pytest.mark.parametrize(
    "tail",
    [
        b"\x00" * 7,  # a few zero bytes (size extended, data never written)
        b"garbage garbage garbage garbage garbage garbage garbage garbage garbage",
        "partial",  # the first 100 bytes of a real batch
        "bad-crc-last",  # a complete final batch whose bytes did not all reach the disk
    ],
)
def test_recovery_truncates_a_torn_tail(
    tmp_path: Path, tail: object, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    plog = open_log(d)
    fill(plog, 5)
    good_size = plog.segments[-1].size
    plog.close()
    path = d / f"{segment_name(0)}.log"
    with open(path, "ab") as f:
        if tail == "partial":
            f.write(make_batch(3)[:100])
        elif tail == "bad-crc-last":
            blob = bytearray(make_batch(3))
            blob[-5] ^= 0x55
            f.write(blob)
        else:
            f.write(tail)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        reopened = open_log(d)
    assert "torn tail" in caplog.text
    assert path.stat().st_size == good_size
    assert reopened.log_end_offset == 15 and reopened.corrupt_offset is None
    assert reopened.append(make_batch(2))[0] == 15
    assert [o for o, _, _ in decode(reopened.read(0, 1 << 20))] == list(range(17))
    reopened.close()


def corrupt_batch_at(path: Path, batch_index: int, batch_size: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[batch_index * batch_size + 70] ^= 0xFF  # inside the records: only the CRC notices
    path.write_bytes(raw)


def test_corruption_in_the_middle_is_detected_and_not_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    plog = open_log(d)
    fill(plog, 6)
    plog.close()
    corrupt_batch_at(d / f"{segment_name(0)}.log", 3, len(make_batch(3)))  # offsets 9..11
    with caplog.at_level(logging.ERROR):
        reopened = open_log(d)
    assert "corrupt batch" in caplog.text
    assert reopened.corrupt_offset == 9
    assert reopened.log_end_offset == 18  # offsets after the hole are never reused
    # below the corruption: served, and the read stops before the bad batch
    assert [o for o, _, _ in decode(reopened.read(0, 1 << 20))] == list(range(9))
    for off in (9, 10, 12):
        with pytest.raises(LogError) as e:
            reopened.read(off, 1 << 20)
        assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    with pytest.raises(LogError) as e:
        reopened.append(make_batch())
    assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert (d / f"{segment_name(0)}.log").stat().st_size == 6 * len(make_batch(3))  # nothing truncated
    reopened.close()


def test_corruption_in_an_old_trusted_segment_is_caught_on_read(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    size = len(make_batch(3))
    opts = {"segment_bytes": size * 4, "index_interval_bytes": 1}
    plog = open_log(d, **opts)
    fill(plog, 16)  # 4 segments; recovery scans only the last two
    plog.close()
    corrupt_batch_at(d / f"{segment_name(0)}.log", 2, size)  # offsets 6..8
    reopened = open_log(d, **opts)
    assert reopened.corrupt_offset is None  # not scanned at start (its index is sane)
    assert batch_offsets(reopened.read(0, 1 << 20)) == [(0, 2), (3, 5)]  # stops before the bad batch
    assert reopened.corrupt_offset == 6
    with pytest.raises(LogError) as e:
        reopened.read(6, 1 << 20)
    assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    reopened.close()


def test_restart_recovers_data_and_producer_state(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = open_log(d)
    for i in range(4):
        plog.append(make_batch(2, pid=7, epoch=0, seq=2 * i))
    plog.close()
    assert not (d / PRODUCER_SNAPSHOT).exists()  # no roll, no manager close: recovered by replay
    reopened = open_log(d)
    assert reopened.log_end_offset == 8
    assert reopened.append(make_batch(2, pid=7, epoch=0, seq=6)) == (6, True)  # a duplicate, by replay
    with pytest.raises(LogError) as e:
        reopened.append(make_batch(2, pid=7, epoch=0, seq=10))
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert reopened.append(make_batch(2, pid=7, epoch=0, seq=8)) == (8, False)
    reopened.close()


def test_producer_snapshot_plus_replay(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    size = len(make_batch(2))
    opts = {"segment_bytes": size * 2}
    plog = open_log(d, **opts)
    for i in range(7):  # rolls write snapshots; producer 9 lives only in the first segment
        plog.append(make_batch(2, pid=7, epoch=0, seq=2 * i))
        if i == 0:
            plog.append(make_batch(2, pid=9, epoch=1, seq=0))
        if plog.pending_snapshot is not None:
            plog.write_producer_snapshot(plog.pending_snapshot)
            plog.pending_snapshot = None
    plog.close()
    reopened = open_log(d, **opts)
    assert reopened.producers.producers[9].last_seq == 1  # from the snapshot
    assert reopened.producers.producers[7].last_seq == 13  # snapshot + replay of the tail
    assert reopened.append(make_batch(2, pid=9, epoch=1, seq=0)) == (2, True)
    reopened.close()


def test_offset_for_timestamp(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    for i in range(4):
        plog.append(make_batch(3, ts=1_000 * (i + 1), ts_step=100))  # 1000,1100,1200, 2000,...
    assert plog.offset_for_timestamp(0) == (0, 1_000)
    assert plog.offset_for_timestamp(1_150) == (2, 1_200)
    assert plog.offset_for_timestamp(1_201) == (3, 2_000)
    assert plog.offset_for_timestamp(4_200) == (11, 4_200)
    assert plog.offset_for_timestamp(4_201) is None
    assert plog.max_timestamp_offset() == (11, 4_200)
    plog.close()


def test_single_batch_per_request_and_size_limit(tmp_path: Path) -> None:
    plog = open_log(None, max_batch_bytes=500)
    with pytest.raises(LogError) as e:
        plog.append(make_batch(1) + make_batch(1))
    assert e.value.code == ErrorCode.INVALID_RECORD
    with pytest.raises(LogError) as e:
        plog.append(make_batch(10, value_size=100))
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert plog.log_end_offset == 0


def test_producer_snapshot_beyond_a_truncated_log_is_dropped(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = open_log(d)
    plog.append(make_batch(2, pid=3, epoch=0, seq=0))
    plog.write_producer_snapshot(plog.producers.snapshot(50))  # claims more log than exists
    plog.close()
    reopened = open_log(d)
    assert not (d / PRODUCER_SNAPSHOT).exists()
    assert reopened.append(make_batch(2, pid=3, epoch=0, seq=0)) == (0, True)  # state came from replay
    reopened.close()


def test_damaged_base_offset_is_caught_by_continuity(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = open_log(d)
    fill(plog, 6)
    plog.close()
    path = d / f"{segment_name(0)}.log"
    raw = bytearray(path.read_bytes())
    raw[3 * len(make_batch(3)) + 7] ^= 0x40  # baseOffset of the 4th batch: not covered by the CRC
    path.write_bytes(raw)
    reopened = open_log(d)
    assert reopened.corrupt_offset == 9 and reopened.log_end_offset == 18
    assert batch_offsets(reopened.read(0, 1 << 20))[-1] == (6, 8)
    reopened.close()


def test_damaged_header_found_while_seeking_stops_the_read(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    size = len(make_batch(3))
    opts = {"segment_bytes": size * 4, "index_interval_bytes": size * 10}  # one index entry per segment
    plog = open_log(d, **opts)
    fill(plog, 16)
    plog.close()
    path = d / f"{segment_name(0)}.log"
    raw = bytearray(path.read_bytes())
    raw[size + 16] = 7  # magic of the 2nd batch (offsets 3..5) of the first, trusted, segment
    path.write_bytes(raw)
    reopened = open_log(d, **opts)
    with pytest.raises(LogError) as e:
        reopened.read(7, 1 << 20)  # seeking from the segment start walks over the damaged header
    assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert reopened.corrupt_offset == 3
    assert batch_offsets(reopened.read(0, 1 << 20)) == [(0, 2)]
    with pytest.raises(LogError):  # later segments are beyond the corruption point too
        reopened.read(12, 1 << 20)
    reopened.close()
