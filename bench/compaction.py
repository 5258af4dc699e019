"""Compaction benchmark: cleaner throughput and what it costs foreground produce/fetch while it runs.

Engine level (LogManager in this process, no network), like bench/log.py:

* A compacted topic is filled with `--mb` MB of a changelog: `--keys` keys updated round-robin, 200-byte
  values, 16 records per uncompressed batch, 8 MiB segments.
* **clean alone**: one cleaner pass over it (all segments but the active one); MB/s = bytes read / seconds.
* **foreground**: a loop appends 16 KiB batches (acks=1) to another topic and fetches 1 MiB back, for
  `--seconds` without the cleaner (baseline), then again while a clean of a freshly dirtied changelog runs
  (in its worker thread), unthrottled and with `--throttle` MB/s (log.cleaner.io.max.bytes.per.second).
  Reported: MB/s of produce+fetch, and the p50/p99/max latency of one produce+fetch step (the max shows the
  longest the event loop waited, mostly for the GIL the cleaner thread holds while it parses records).

Usage: .venv/bin/python bench/compaction.py [--mb 64] [--keys 1000] [--seconds 3] [--throttle 16]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiokafka.record.default_records import DefaultRecordBatchBuilder

from groupcoord.server.log import LogManager
from groupcoord.server.log.config import LogConfig
from groupcoord.server.log.maintenance import MaintenanceConfig

PER_BATCH = 16
VALUE = 200
COMPACT = LogConfig(
    cleanup_policy=frozenset({"compact"}), segment_bytes=8 << 20, min_cleanable_dirty_ratio=0.01
)


def changelog_batch(first: int, keys: int) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 10**7)
    now = int(time.time() * 1000)
    for i in range(PER_BATCH):
        n = first + i
        b.append(i, timestamp=now, key=b"key-%06d" % (n % keys), value=b"%d" % n + b"." * VALUE, headers=[])
    return bytes(b.build())


def plain_batch() -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 10**7)
    now = int(time.time() * 1000)
    for i in range(PER_BATCH):
        b.append(i, timestamp=now, key=None, value=b"v" * 1024, headers=[])
    return bytes(b.build())


async def fill(m: LogManager, topic: str, mb: int, keys: int, start: int = 0) -> int:
    n = start
    total = 0
    while total < mb << 20:
        batch = changelog_batch(n, keys)
        await m.append(topic, 0, batch, 1)
        total += len(batch)
        n += PER_BATCH
    await m.append(topic, 0, changelog_batch(n, keys), 1)
    await m.flush()
    return n


async def foreground(m: LogManager, stop: asyncio.Event | None, seconds: float) -> tuple[float, list[float]]:
    """Produce+fetch steps until `stop` is set (or `seconds` pass); (MB/s, step latencies in ms)."""
    batch = plain_batch()
    lat: list[float] = []
    moved = 0
    offset = m.partition("fg", 0).log_end_offset  # type: ignore[union-attr]
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        await m.append("fg", 0, batch, 1)
        r = m.read("fg", 0, offset, 1 << 20)
        offset += PER_BATCH
        moved += len(batch) + len(r.records)
        await asyncio.sleep(0)
        lat.append((time.perf_counter() - t0) * 1000)
        elapsed = time.perf_counter() - started
        if (stop is not None and stop.is_set()) or (stop is None and elapsed >= seconds):
            return moved / elapsed / 1e6, lat


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--throttle", type=float, default=16.0, help="MB/s for the throttled run")
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="groupcoord-compaction-", dir=args.dir))
    try:
        idle = MaintenanceConfig(retention_check_interval_ms=10**9, cleaner_backoff_ms=10**9)
        m = LogManager(root, flush="never", maintenance=idle)
        await m.open()
        await m.create_topic("cl", 1)
        await m.create_topic("fg", 1)
        m.set_log_config("cl", COMPACT)
        n = await fill(m, "cl", args.mb, args.keys)
        plog = m.partition("cl", 0)
        assert plog is not None
        before = plog.size_bytes
        t0 = time.perf_counter()
        await m.maintenance.cleaner_pass()
        secs = time.perf_counter() - t0
        t = m.maintenance.totals
        print(
            f"clean alone: {t.bytes_read / 1e6:.1f} MB read -> {t.bytes_written / 1e6:.2f} MB written "
            f"in {secs:.2f} s = {t.bytes_read / 1e6 / secs:.1f} MB/s cleaned "
            f"(log {before / 1e6:.1f} -> {plog.size_bytes / 1e6:.2f} MB, {args.keys} keys)"
        )
        base_mbs, base_lat = await foreground(m, None, args.seconds)
        print(
            f"foreground alone: {base_mbs:.0f} MB/s produce+fetch, step p50 {pct(base_lat, 50):.3f} ms "
            f"p99 {pct(base_lat, 99):.3f} ms max {max(base_lat):.1f} ms"
        )
        for label, rate in (
            ("unthrottled", float("inf")),
            (f"throttled {args.throttle:g} MB/s", args.throttle * 1e6),
        ):
            n = await fill(m, "cl", args.mb, args.keys, n)  # dirty it again
            m.maintenance.config = MaintenanceConfig(
                retention_check_interval_ms=10**9,
                cleaner_backoff_ms=10**9,
                cleaner_io_max_bytes_per_second=rate,
            )
            read0, secs0 = t.bytes_read, t.seconds
            stop = asyncio.Event()
            fg = asyncio.create_task(foreground(m, stop, 0))
            await m.maintenance.cleaner_pass()
            stop.set()
            mbs, lat = await fg
            cleaned = (t.bytes_read - read0) / 1e6
            print(
                f"during clean ({label}): cleaner {cleaned / (t.seconds - secs0):.1f} MB/s; foreground "
                f"{mbs:.0f} MB/s ({mbs / base_mbs:.0%} of alone), step p50 {pct(lat, 50):.3f} ms "
                f"p99 {pct(lat, 99):.3f} ms max {max(lat):.1f} ms"
            )
        await m.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
