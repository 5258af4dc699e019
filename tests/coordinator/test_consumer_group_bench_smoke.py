"""bench/consumer_groups.py at a small scale: its own checks (every assignor's result an exact cover, the
group Stable again after a join and after a leave, every partition owned once) run, so `make bench` cannot
rot unnoticed. No timing is asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_consumer_group_bench_runs_and_converges() -> None:
    args = ["--members", "40", "--topics", "3", "--partitions-per-topic", "50", "--runs", "1"]
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "consumer_groups.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for line in ("uniform, 40 members x 150 partitions: one member joins -> Stable",
                 "range, 40 members x 150 partitions: one member leaves -> Stable",
                 "uniform, 40 members x 150 partitions: heterogeneous, fresh"):  # fmt: skip
        assert line in out.stdout, out.stdout
