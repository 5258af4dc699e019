"""Scrape cost of /metrics with many groups: builds the state in-process (no network), times the exposition.

    .venv/bin/python bench/metrics.py [--groups 10000] [--partitions 4]

Each group is a simple group (admin commits, no members) with committed offsets on `--partitions` partitions of
one of 100 topics; we time `generate_latest` (what one scrape costs the event loop) and report its size.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from prometheus_client import generate_latest

from groupcoord.server.broker import Broker
from groupcoord.server.config import ServerConfig
from groupcoord.server.coordinator.types import CommitPartition, OffsetCommitRequest
from groupcoord.server.ops import Ops


async def build(groups: int, partitions: int) -> Broker:
    broker = Broker(
        ServerConfig(port=0, storage="memory", journal=False, data_dir=Path("/tmp/gc-bench-metrics"))
    )
    await broker.start()
    await broker.loaded
    for t in range(100):
        await broker.topics.create(f"topic-{t}", partitions)
    machine = broker.machine
    loop = asyncio.get_running_loop()
    for i in range(groups):
        gid, topic = f"group-{i}", f"topic-{i % 100}"
        commit = OffsetCommitRequest(
            2, gid, -1, "", None, -1, ((topic, tuple(CommitPartition(p, i) for p in range(partitions))),)
        )
        broker.runtime.call(
            gid, lambda now, c=commit: (None, machine.commit_offsets(c, loop.create_future(), now))
        )
    return broker


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=10000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    broker = await build(args.groups, args.partitions)
    for partition_lag in (True, False):
        ops = Ops(broker, partition_lag=partition_lag)
        times, size = [], 0
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            size = len(generate_latest(ops.registry))
            times.append(time.perf_counter() - t0)
        print(
            f"groups={len(broker.machine.group_ids())} partitions/group={args.partitions} "
            f"per-partition-series={partition_lag}: scrape median {statistics.median(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms, {size / 1e6:.1f} MB"
        )
    await broker.stop()


if __name__ == "__main__":
    asyncio.run(main())
