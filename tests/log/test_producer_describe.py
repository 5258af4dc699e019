"""What DescribeProducers reads from a partition's producer state (issue 30 item 16): last timestamp and the
coordinator epoch of the last marker, as Kafka's ProducerStateEntry keeps them, after appends, after a clean
reopen (snapshot) and after a crash (replay of the stored batches)."""

from __future__ import annotations

from pathlib import Path

from log_helpers import make_batch

from groupcoord.server.log import LogManager
from groupcoord.server.log.producer_state import ProducerStateManager
from groupcoord.server.log.txn_state import control_batch, control_coordinator_epoch


def entries(m: LogManager) -> dict[int, tuple[int, int, int]]:
    plog = m.partition("t", 0)
    assert plog is not None
    return {
        pid: (e.last_seq, e.last_timestamp, e.coordinator_epoch)
        for pid, e in plog.producers.producers.items()
    }


def test_control_coordinator_epoch_reads_the_marker_value() -> None:
    assert control_coordinator_epoch(control_batch(7, 3, True, 42)) == 42
    assert control_coordinator_epoch(control_batch(7, 3, False, -1)) == -1
    assert control_coordinator_epoch(b"\x00" * 10) == -1  # unreadable


async def write(m: LogManager) -> None:
    await m.create_topic("t", 1)
    await m.append("t", 0, make_batch(3, pid=1, epoch=0, seq=0, ts=5_000), -1)
    await m.append("t", 0, make_batch(2, pid=2, epoch=4, seq=0, ts=7_000, transactional=True), -1)
    await m.write_marker("t", 0, 2, 4, False, 17)


async def test_timestamps_and_marker_epochs_survive_a_clean_reopen_and_a_crash(tmp_path: Path) -> None:
    m = LogManager(tmp_path)
    await m.open()
    await write(m)
    first = entries(m)
    assert first[1] == (2, 5_002, -1)  # the max timestamp of its last batch; no marker yet
    assert first[2][0] == 1 and first[2][1] > 7_001 and first[2][2] == 17  # the marker's time and epoch
    crashed = LogManager(tmp_path)  # opened without closing `m`: no snapshot, the batches are replayed
    await crashed.open()
    assert entries(crashed) == first
    await crashed.close()
    await m.close()  # a clean close writes the producer snapshot
    reopened = LogManager(tmp_path)
    await reopened.open()
    assert entries(reopened) == first
    await reopened.close()


def test_an_old_snapshot_without_the_new_fields_reads_as_unknown() -> None:
    m = ProducerStateManager.from_snapshot(
        {"version": 1, "offset": 3, "producers": [{"id": 9, "epoch": 1, "batches": [[0, 2, 0, 2]]}]}
    )
    e = m.producers[9]
    assert (e.last_seq, e.last_timestamp, e.coordinator_epoch) == (2, -1, -1)
    again = ProducerStateManager.from_snapshot(m.snapshot(3)).producers[9]
    assert (again.last_timestamp, again.coordinator_epoch) == (-1, -1)
