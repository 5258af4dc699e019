"""What the load generator measures with: a server process's CPU seconds and RSS from /proc, a CPU-share
window, and a fixed-bucket latency histogram (bounded memory whatever the request count)."""

from __future__ import annotations

import os
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------- /proc
def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class CpuWindow:
    """CPU share of a server process over a wall-clock window (None when no pid was given)."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.t0 = time.perf_counter()
        self.c0 = proc_cpu_seconds(pid) if pid else 0.0

    def result(self) -> dict:
        wall = time.perf_counter() - self.t0
        if not self.pid:
            return {"wall_s": wall}
        cpu = proc_cpu_seconds(self.pid) - self.c0
        return {"wall_s": wall, "cpu_s": cpu, "cpu_share": cpu / wall, "rss_mb": proc_rss_mb(self.pid)}


# ------------------------------------------------------------------------------------------ histogram
class Histogram:
    """Fixed 10 µs buckets up to 2 s (one overflow bucket): bounded memory whatever the count."""

    STEP_NS = 10_000
    N = 200_000

    def __init__(self) -> None:
        self.counts = [0] * (self.N + 1)
        self.total = 0
        self.max_ns = 0

    def add(self, ns: int) -> None:
        i = ns // self.STEP_NS
        self.counts[i if i < self.N else self.N] += 1
        self.total += 1
        if ns > self.max_ns:
            self.max_ns = ns

    def percentile_us(self, p: float) -> float:
        if not self.total:
            return float("nan")
        rank = p / 100 * self.total
        seen = 0
        for i, c in enumerate(self.counts):
            seen += c
            if seen >= rank and c:
                return (i + 0.5) * self.STEP_NS / 1000  # bucket midpoint
        return self.max_ns / 1000

    def summary(self) -> dict:
        return {
            "count": self.total,
            "p50_us": self.percentile_us(50),
            "p99_us": self.percentile_us(99),
            "max_us": self.max_ns / 1000,
        }
