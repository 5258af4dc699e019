"""bench/share_groups.py at a tiny size: its own accounting check (every offset accepted exactly once by an
answered commit, over SQLite and memory storage, one consumer and several in two processes) runs, so
`make bench-share` cannot rot unnoticed. No timing is asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]


def test_the_share_group_bench_runs_with_exact_accounting() -> None:
    args = ["--records", "200", "--consumers", "1,3", "--batch", "20", "--processes", "2"]
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "share_groups.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.endswith(("exact: yes", "exact: NO"))]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("sqlite", "1", "1"), ("sqlite", "3", "2"), ("memory", "1", "1"), ("memory", "3", "2")
    ], out.stdout  # fmt: skip
    assert all(r[-1] == "yes" for r in rows), out.stdout
