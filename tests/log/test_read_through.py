"""`PartitionLog.read(..., through=N)` (issue 39): a share fetch reads the batches holding the records it
acquired and nothing after them. Every (offset, through) pair of a multi-segment log gives the prefix of the
unbounded read that ends with the batch holding `through`, and a corrupt batch past `through` is neither
read nor noticed (no CRC pass over bytes that are not sent), while reading into it still is caught."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_helpers import batch_offsets, make_batch

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.segment import segment_name

SIZE = len(make_batch(3))


@pytest.mark.parametrize("on_disk", [True, False])
@pytest.mark.parametrize("interval", [1, SIZE * 3])
def test_through_ends_with_the_batch_that_holds_it(tmp_path: Path, on_disk: bool, interval: int) -> None:
    plog = PartitionLog.open(
        "t", 0, tmp_path / "t-0" if on_disk else None, segment_bytes=SIZE * 4, index_interval_bytes=interval
    )
    for i in range(10):  # offsets 0..29, three per batch, four batches per segment
        plog.append(make_batch(3, ts=1_000 + i))
    for offset in range(30):
        full = batch_offsets(plog.read(offset, 1 << 20))
        for through in range(offset, 32):
            got = batch_offsets(plog.read(offset, 1 << 20, through=through))
            want = [b for b in full if b[0] <= through] if through < 30 else full
            assert got == want, (offset, through)
        # a byte budget still applies (and the first batch is still whole)
        assert batch_offsets(plog.read(offset, 10, through=29)) == full[:1]
    plog.close()


def test_a_corrupt_batch_past_through_is_not_read(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = PartitionLog.open("t", 0, d)
    for i in range(6):
        plog.append(make_batch(3, ts=1_000 + i))
    with open(d / f"{segment_name(0)}.log", "r+b") as fh:  # batch 4 (offsets 12..14) rots on disk
        fh.seek(4 * SIZE + 70)
        byte = fh.read(1)
        fh.seek(4 * SIZE + 70)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert batch_offsets(plog.read(0, 1 << 20, through=7)) == [(0, 2), (3, 5), (6, 8)]
    assert batch_offsets(plog.read(3, 1 << 20, through=11)) == [(3, 5), (6, 8), (9, 11)]
    assert plog.corrupt_offset is None  # never read, never CRC-checked
    assert batch_offsets(plog.read(0, 1 << 20, through=12)) == [(0, 2), (3, 5), (6, 8), (9, 11)]
    assert plog.corrupt_offset == 12  # reading into it still catches it
    with pytest.raises(LogError) as e:
        plog.read(12, 1 << 20, through=12)
    assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    plog.close()
