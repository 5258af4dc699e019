"""bench/cluster_data_plane.py at a tiny size (half a second of produce, 8-record batches, one failover), so
`make bench-cluster` cannot rot unnoticed: the bench's own check (every acknowledged record read back from
its partition's leader) runs, every row is printed, and a send is acknowledged again after kill -9 of a
partition's leader. No timing is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.testing.pgcluster import available

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_the_cluster_bench_runs_and_reads_back_every_acknowledged_record() -> None:
    reason = available()
    if reason:
        pytest.skip(reason)
    args = ["--seconds", "0.5", "--per-batch", "8", "--trials", "1"]
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "cluster_data_plane.py"), *args],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    rows = re.findall(r"^\| (single node \(disk log\)|3-node cluster \(PostgreSQL\)) \| ([^|]+) \| (\w+) \|"
                      r" ([\d.]+) \| ([\d,]+) \|$", out.stdout, re.M)  # fmt: skip
    seen = {(setup, "node" if who.startswith("node ") else who, op) for setup, who, op, *_ in rows}
    single, cluster = "single node (disk log)", "3-node cluster (PostgreSQL)"
    assert seen == {(single, "the node", op) for op in ("produce", "fetch")} | {
        (cluster, who, op) for who in ("node", "cluster") for op in ("produce", "fetch")
    }, out.stdout
    per_node = [r for r in rows if r[0] == cluster and r[1].startswith("node ")]
    assert sorted(r[1].split()[1] for r in per_node) == ["1", "1", "2", "2", "3", "3"], out.stdout
    assert all(int(r[4].replace(",", "")) > 0 for r in rows), out.stdout
    assert re.search(r"^\| until an aiokafka send to partition 0 is acknowledged again \| 1 \| [\d.]+ s", out.stdout,
                     re.M), out.stdout  # fmt: skip
