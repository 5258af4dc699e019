"""Engine-level storage benchmark: produce and fetch MB/s through LogManager, durable OffsetCommit rate.

Measures the engines without the wire protocol (the end-to-end bench over the network is separate):

* produce: 1 KiB records in 16-record (~16 KiB) batches from idempotent producers (sequence checks on),
  as a producer with linger/batch.size would send, from `--producers` concurrent tasks (x5 for the second
  acks=all run, like 5 in-flight requests) over `--partitions` partitions. acks=1 measures appends to the
  page cache; acks=all measures durable appends (flush policy "always": each waits for its group-commit
  fsync).
* fetch: read the produced log back, 1 MiB per partition read.
* offsets: SqliteStateStore.write() from `--writers` concurrent tasks, each writing batches of
  `--offsets-per-commit` partition offsets; reports durable partition offsets/s and transactions used.

Usage: .venv/bin/python bench/log.py [--mb 256] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import crc32c
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from groupcoord.server.coordinator.records import OffsetRecord, OffsetValue
from groupcoord.server.log import LogManager
from groupcoord.server.storage import SqliteStateStore

RECORD = 1024
PER_BATCH = 16


def make_batch(pid: int = -1, seq: int = -1, epoch: int = -1) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, 0, pid, epoch, seq, 10**7)
    value = b"v" * RECORD
    now = int(time.time() * 1000)
    for i in range(PER_BATCH):
        b.append(i, timestamp=now, key=None, value=value, headers=[])
    return bytes(b.build())


def idempotent_batches(template: bytes, pid: int, count: int) -> list[bytes]:
    """`count` copies of `template` from producer `pid` with consecutive sequences (re-CRCed), built
    before the clock starts: the Java and kafka-python producers are idempotent by default."""
    out = []
    for k in range(count):
        b = bytearray(template)
        struct.pack_into(">qhi", b, 43, pid, 0, k * PER_BATCH)
        struct.pack_into(">I", b, 17, crc32c.crc32c(memoryview(b)[21:]))
        out.append(bytes(b))
    return out


async def bench_produce(
    data_dir: Path | None, storage: str, acks: int, total_mb: int, producers: int, partitions: int
) -> tuple[float, float, int]:
    m = LogManager(data_dir, storage=storage)  # type: ignore[arg-type]
    await m.open()
    await m.create_topic("bench", partitions)
    template = make_batch()
    n_batches = total_mb * 1024 * 1024 // len(template)
    per_producer = n_batches // producers
    batches = [idempotent_batches(template, 1000 + i, per_producer) for i in range(producers)]

    async def producer(i: int) -> None:
        part = i % partitions
        for k, batch in enumerate(batches[i]):
            r = await m.append("bench", part, batch, acks)
            assert r.error == 0, r
            if acks != -1 and k % 64 == 0:
                await asyncio.sleep(0)  # let other producers interleave, as network I/O would

    t0 = time.perf_counter()
    await asyncio.gather(*(producer(i) for i in range(producers)))
    dt = time.perf_counter() - t0
    produced = per_producer * producers * len(template)
    fsyncs = m.fsyncs
    # fetch back
    t1 = time.perf_counter()
    fetched = 0
    for part in range(partitions):
        offset = 0
        end = m.partition("bench", part).log_end_offset
        while offset < end:
            r = m.read("bench", part, offset, 1024 * 1024)
            fetched += len(r.records)
            # next offset: walk the batch headers' (base, lastOffsetDelta) of the last batch returned
            offset = last_next_offset(r.records)
    ft = time.perf_counter() - t1
    await m.close()
    return produced / dt / 1e6, fetched / ft / 1e6, fsyncs


def last_next_offset(data: bytes) -> int:
    import struct

    pos = 0
    nxt = 0
    while pos < len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        nxt = base + delta + 1
        pos += 12 + length
    return nxt


async def bench_offsets(path: Path, writers: int, per_commit: int, seconds: float) -> tuple[float, int, int]:
    store = SqliteStateStore(path)
    await store.open()
    value = OffsetValue(123456, 5, "", int(time.time() * 1000), -1)
    done = 0

    # records are built before the clock starts: the store is measured, not dataclass construction
    prebuilt = [
        [
            [
                OffsetRecord(f"group-{w}", f"topic-{(i + k) // 64}", (i + k) % 64, value)
                for k in range(per_commit)
            ]
            for i in range(0, 256, per_commit)
        ]
        for w in range(writers)
    ]

    async def writer(w: int) -> None:
        nonlocal done
        i = 0
        mine = prebuilt[w]
        while time.perf_counter() < stop:
            await store.write(mine[i])
            i = (i + 1) % len(mine)
            done += per_commit

    t0 = time.perf_counter()
    stop = t0 + seconds
    await asyncio.gather(*(writer(w) for w in range(writers)))
    dt = time.perf_counter() - t0
    tx = store.transactions
    await store.close()
    return done / dt, tx, done


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256, help="MiB to produce per run")
    ap.add_argument("--producers", type=int, default=8)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--writers", type=int, default=64)
    ap.add_argument("--offsets-per-commit", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--dir", type=Path, default=None, help="scratch directory (default: a temp dir)")
    args = ap.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="groupcoord-bench-"))
    rows = []
    try:
        runs = [("disk", 1, args.producers), ("disk", -1, args.producers), ("disk", -1, args.producers * 5)]
        runs.append(("memory", 1, args.producers))
        for storage, acks, producers in runs:
            d = base / f"log-{storage}-{acks}-{producers}"
            mbps, fetch, fsyncs = await bench_produce(
                d if storage == "disk" else None, storage, acks, args.mb, producers, args.partitions
            )
            label = f"produce {storage} acks={'all' if acks == -1 else acks}, {producers} in flight"
            rows.append((label, f"{mbps:8.1f} MB/s", f"fetch {fetch:8.1f} MB/s", f"group commits: {fsyncs}"))
            shutil.rmtree(d, ignore_errors=True)
        for writers, per_commit in ((args.writers, args.offsets_per_commit), (args.writers * 4, 1)):
            path = base / f"state-{writers}-{per_commit}.db"
            rate, tx, n = await bench_offsets(path, writers, per_commit, args.seconds)
            rows.append(
                (
                    f"sqlite offsets, {writers} writers x {per_commit}/commit",
                    f"{rate:8.0f} offsets/s",
                    f"{n} offsets",
                    f"{tx} transactions ({n / max(tx, 1):.0f} offsets/tx)",
                )
            )
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    print(
        f"record {RECORD} B, {PER_BATCH} records/batch, {args.mb} MiB per produce run, {args.partitions} partitions"
    )
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    asyncio.run(main())
