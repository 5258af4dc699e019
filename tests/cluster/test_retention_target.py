"""`retention_target`, the pure rule cluster mode's leader applies to its memory copy before trimming the
stored batches (server/cluster/cluster_maintenance.py): Kafka's deleteOldSegments, batch by batch."""

from __future__ import annotations

from groupcoord.server.cluster.cluster_maintenance import retention_target
from groupcoord.server.log.config import LogConfig
from groupcoord.server.log.partition import PartitionLog
from tests.log.log_helpers import make_batch

NOW = 10_000_000
SIZE = len(make_batch(2))  # one stored two-record batch


def _log(config: LogConfig, stamps: list[int]) -> PartitionLog:
    """A memory log of one two-record batch per timestamp."""
    plog = PartitionLog.open("t", 0, None)
    plog.apply_config(config)
    for ts in stamps:
        plog.append(make_batch(2, ts=ts, ts_step=0))
    return plog


def test_batches_older_than_retention_ms_go_oldest_first_stopping_at_the_first_kept() -> None:
    plog = _log(LogConfig(retention_ms=1000), [NOW - 5000, NOW - 5000, NOW, NOW - 5000])
    assert retention_target(plog, NOW) == 4  # the old batch after a fresh one stays (as a segment would)


def test_every_batch_due_moves_the_start_to_the_log_end() -> None:
    plog = _log(LogConfig(retention_ms=1000), [NOW - 5000, NOW - 5000])
    assert retention_target(plog, NOW) == 4


def test_retention_bytes_keeps_at_least_that_many_bytes() -> None:
    plog = _log(LogConfig(retention_ms=-1, retention_bytes=2 * SIZE), [NOW] * 5)
    assert retention_target(plog, NOW) == 6  # three batches go, two (2 * SIZE bytes) stay


def test_nothing_due_or_no_delete_policy_or_no_limits_is_none() -> None:
    assert retention_target(_log(LogConfig(retention_ms=1000), [NOW]), NOW) is None
    compact = LogConfig(cleanup_policy=frozenset({"compact"}), retention_ms=1)
    assert retention_target(_log(compact, [NOW - 5000]), NOW) is None
    assert retention_target(_log(LogConfig(retention_ms=-1, retention_bytes=-1), [0]), NOW) is None


def test_the_search_starts_at_the_log_start_offset() -> None:
    plog = _log(LogConfig(retention_ms=1000), [NOW - 5000, NOW - 5000, NOW])
    plog.advance_start(2)
    assert retention_target(plog, NOW) == 4
