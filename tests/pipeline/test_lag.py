"""`lag` and `rebalance_lag` on hand-built journals whose answers are known (docs/report.md definitions)."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.pipeline import journal as J
from groupcoord.pipeline import lag as L
from groupcoord.pipeline import transform as T

pytestmark = pytest.mark.spark

T0 = 1_763_812_000_000


def snapshot(j: Any, group: str, ts: int, **parts: tuple[int, int | None]) -> None:
    offsets = {tp.replace("_", "-"): {"committed": c, "log_end": e} for tp, (c, e) in parts.items()}
    j.event(group, "lag_snapshot", ts, offsets=offsets)


def rebalance(j: Any, group: str, ts: int, reason: str = "new_member") -> None:
    j.rebalance(group, reason, ts, join_ms=100, sync_ms=10, assignment={"a": ["t-0", "t-1"]})


def run(spark: Any, data_dir: Any) -> tuple[list[dict], list[dict]]:
    prepared = T.prepare(J.read_journal(spark, data_dir))
    lag = L.lag_over_time(prepared)
    rl = L.rebalance_lag(lag, T.rebalances(prepared)).select(*L.REBALANCE_LAG_COLUMNS)
    return (
        [r.asDict() for r in lag.orderBy("group", "ts_ms").collect()],
        [r.asDict() for r in rl.orderBy("group", "started_ms").collect()],
    )


def test_lag_sums_partitions_clips_negatives_and_skips_unknown_log_ends(spark: Any, journal: Any) -> None:
    journal.create("g", T0)
    snapshot(journal, "g", T0 + 10, t_0=(5, 9), t_1=(7, 6), u_0=(1, None))
    lag, _ = run(spark, journal.write())
    assert [(r["lag"], r["max_partition_lag"], r["partitions"]) for r in lag] == [(4, 4, 2)]


def test_rebalance_lag_before_peak_catch_up_and_spike(spark: Any, journal: Any) -> None:
    j = journal
    j.create("g", T0)
    j.join("g", "a", T0)
    snapshot(j, "g", T0 + 1000, t_0=(10, 20))  # lag 10 before rebalance 1
    rebalance(j, "g", T0 + 2000)  # ends T0 + 2110
    snapshot(j, "g", T0 + 3000, t_0=(10, 500))  # peak 490: a spike
    snapshot(j, "g", T0 + 4000, t_0=(495, 500))  # 5 <= 10: caught up 1890 ms after the end
    rebalance(j, "g", T0 + 5000, "leader_rejoin")
    snapshot(j, "g", T0 + 6000, t_0=(495, 540))  # 45: grew, but by less than 100 messages
    j.create("h", T0)  # a group with rebalances but no snapshots: not in rebalance_lag
    rebalance(j, "h", T0 + 2000)
    _, rl = run(spark, j.write())
    assert [
        (r["group"], r["cause"], r["lag_before"], r["peak_lag"], r["time_to_catch_up_ms"], r["lag_spike"])
        for r in rl
    ] == [
        ("g", "new_member", 10, 490, 1890, True),
        ("g", "leader_rejoin", 5, 45, None, False),  # never back at 5 before the data ends
    ]
