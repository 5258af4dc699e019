"""Property tests: recovery after a cut at any byte keeps exactly the whole batches before the cut;
compressed batches are stored and served untouched."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from log_helpers import batch_offsets, decode, make_batch

from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.segment import segment_name


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=8),
    cut_fraction=st.floats(min_value=0, max_value=1),
)
def test_recovery_after_a_cut_anywhere_keeps_the_whole_batches_before_it(
    sizes: list[int], cut_fraction: float
) -> None:
    d = Path(tempfile.mkdtemp()) / "t-0"
    try:
        plog = PartitionLog.open("t", 0, d)
        ends = []  # (byte end, next offset) after each batch
        for n in sizes:
            plog.append(make_batch(n, value_size=30))
            ends.append((plog.segments[-1].size, plog.log_end_offset))
        total = plog.segments[-1].size
        plog.close()
        cut = int(total * cut_fraction)
        path = d / f"{segment_name(0)}.log"
        path.write_bytes(path.read_bytes()[:cut])
        kept = [e for e in ends if e[0] <= cut]
        reopened = PartitionLog.open("t", 0, d)
        assert reopened.corrupt_offset is None
        assert reopened.log_end_offset == (kept[-1][1] if kept else 0)
        assert path.stat().st_size == (kept[-1][0] if kept else 0)
        if kept:
            assert [o for o, _, _ in decode(reopened.read(0, 1 << 20))] == list(range(kept[-1][1]))
        reopened.close()
    finally:
        shutil.rmtree(d.parent)


def test_compressed_batches_round_trip_untouched(tmp_path: Path) -> None:
    plog = PartitionLog.open("t", 0, tmp_path / "t-0")
    gz = make_batch(20, compression=1, ts=1_000, ts_step=10)  # gzip
    plog.append(make_batch(2))
    assert plog.append(gz) == (2, False)
    data = plog.read(2, 1 << 20)
    assert batch_offsets(data) == [(2, 21)]
    assert data[16:] == gz[16:]  # only baseOffset/partitionLeaderEpoch differ
    assert [o for o, _, _ in decode(data)] == list(range(2, 22))
    # by timestamp inside a compressed batch: the batch's base offset and max timestamp
    assert plog.offset_for_timestamp(1_050) == (2, 1_190)
    plog.close()
