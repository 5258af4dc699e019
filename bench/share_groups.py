"""Share groups (KIP-932, issue 26): records/s delivered to 1, 4 and 16 share consumers of ONE partition with
ACCEPT and durable acknowledgements, the round trip of an explicit commit (ShareAcknowledge, answered only
once the acknowledgements are durable), and what durability costs per acknowledgement batch (the same run
over `--storage memory`, the default SQLite store and, with `--pg`, a throw-away PostgreSQL cluster).

Run with `make bench-share` (or `python bench/share_groups.py [--records N] [--consumers 1,4,16] [--pg]`).
Not a test: it prints a table. Per storage one `groupcoord serve` subprocess on a free loopback port; per
consumer count a fresh one-partition topic, filled first with aiokafka (acks=all), then read by a fresh share
group. The consumers (`groupcoord.share.ShareConsumer`, explicit mode) run in `--processes` worker processes
(multiprocessing, spawn; several asyncio consumers per process) so one client event loop is not the limit.
Each consumer polls up to `--batch` records, acknowledges each ACCEPT and commits (ShareAcknowledge) before
its next poll; the commit's round trip is the latency measured. The clock runs from the moment every
consumer is a member until every record is accepted by an answered commit; the server's CPU (utime+stime from
/proc) over the same window, per record, is the figure the shared machine's load moves least. `--rounds`
repeats every storage in turn (medians of the rates, latencies pooled). Each run checks its accounting:
every offset accepted exactly once (`exact: yes`), else the bench exits non-zero.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from harness import free_port  # noqa: E402

GROUP = "bench-share"


async def produce(bootstrap: str, topic: str, n: int) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        futs = [await producer.send(topic, value=b"x" * 100, partition=0) for _ in range(n)]
        await producer.flush()
        for f in futs:
            await f
    finally:
        await producer.stop()


async def consume(
    bootstrap: str, topic: str, count: int, batch: int, shared: dict[str, Any], group: str = GROUP
) -> dict:
    """`count` share consumers in this process; returns the offsets they accepted, the commit round trips
    (seconds) and the records per commit."""
    from groupcoord.share import AcknowledgeType, ShareConsumer

    accepted: list[int] = []
    lat: list[float] = []
    sizes: list[int] = []
    errors = 0
    consumers = [
        ShareConsumer(
            bootstrap,
            group,
            [topic],
            acknowledgement_mode="explicit",
            max_poll_records=batch,
            fetch_max_wait_ms=100,
        )
        for _ in range(count)
    ]
    await asyncio.gather(*(c.start() for c in consumers))
    shared["joined"].release()
    while not shared["go"].is_set():
        await asyncio.sleep(0.01)

    async def one(c: ShareConsumer) -> None:
        nonlocal errors
        while not shared["stop"].is_set():
            recs = await c.poll(0.2)
            if not recs:
                continue
            for r in recs:
                c.acknowledge(r, AcknowledgeType.ACCEPT)
            t0 = time.perf_counter()
            result = await c.commit()
            lat.append(time.perf_counter() - t0)
            sizes.append(len(recs))
            if any(result.values()):
                errors += 1
                continue
            accepted.extend(r.offset for r in recs)
            with shared["done"].get_lock():
                shared["done"].value += len(recs)

    await asyncio.gather(*(one(c) for c in consumers))
    await asyncio.gather(*(c.close() for c in consumers), return_exceptions=True)
    return {"accepted": accepted, "lat": lat, "sizes": sizes, "errors": errors}


def worker(
    bootstrap: str, topic: str, count: int, batch: int, shared: dict[str, Any], out: Any, group: str = GROUP
) -> None:
    out.put(asyncio.run(consume(bootstrap, topic, count, batch, shared, group)))


def server_cpu_s(pid: int) -> float:
    """utime + stime of the server process so far (/proc/<pid>/stat), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def serve(*extra: str) -> Iterator[tuple[int, int]]:
    """A throw-away `groupcoord serve` as bench/harness.py starts one; yields (port, pid) once it listens."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        cmd = [sys.executable, "-m", "groupcoord.server", "serve", "--port", str(port), "--data-dir", data,
               "--log-level", "warning", "--journal", "false", *extra]  # fmt: skip
        srv = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    if srv.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"groupcoord serve {' '.join(extra)} did not start") from None
                    time.sleep(0.05)
            yield port, srv.pid
        finally:
            srv.terminate()
            srv.wait(10)


def run_once(
    port: int, pid: int, topic: str, records: int, consumers: int, procs: int, batch: int, group: str = GROUP
) -> dict:
    """`group` (bench/kafka.py: a fresh one per run, its share.auto.offset.reset set to earliest first)."""
    bootstrap = f"127.0.0.1:{port}"
    asyncio.run(produce(bootstrap, topic, records))
    ctx = mp.get_context("spawn")
    shared = {"joined": ctx.Semaphore(0), "go": ctx.Event(), "stop": ctx.Event(), "done": ctx.Value("q", 0)}
    out = ctx.Queue()
    procs = max(1, min(procs, consumers))
    split = [consumers // procs + (1 if i < consumers % procs else 0) for i in range(procs)]
    ps = [ctx.Process(target=worker, args=(bootstrap, topic, k, batch, shared, out, group)) for k in split]
    for p in ps:
        p.start()
    try:
        for _ in range(procs):
            if not shared["joined"].acquire(timeout=120):
                raise RuntimeError("the share consumers did not join within 120 s")
        cpu0, t0 = server_cpu_s(pid), time.perf_counter()
        shared["go"].set()
        deadline = t0 + max(120.0, records / 50)
        while shared["done"].value < records:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"only {shared['done'].value}/{records} records accepted in time")
            if not all(p.is_alive() for p in ps):
                raise RuntimeError("a consumer process died")
            time.sleep(0.005)
        elapsed, cpu = time.perf_counter() - t0, server_cpu_s(pid) - cpu0
        shared["stop"].set()
        parts = [out.get(timeout=120) for _ in ps]
    finally:
        shared["stop"].set()
        for p in ps:
            p.join(30)
            if p.is_alive():
                p.kill()
    accepted = [o for part in parts for o in part["accepted"]]
    return {
        "rate": records / elapsed,
        "cpu_us": cpu / records * 1e6,
        "exact": sorted(accepted) == list(range(records)),
        "lat": [x for part in parts for x in part["lat"]],
        "sizes": [x for part in parts for x in part["sizes"]],
        "errors": sum(part["errors"] for part in parts),
        "procs": procs,
    }


def summary(runs: list[dict]) -> dict:
    """Over the rounds of one (storage, consumers) cell: median rate and server CPU, pooled latencies."""
    lat = sorted(x for r in runs for x in r["lat"])
    sizes = [x for r in runs for x in r["sizes"]]
    return {
        "rate": statistics.median(r["rate"] for r in runs),
        "cpu_us": statistics.median(r["cpu_us"] for r in runs),
        "p50": lat[len(lat) // 2] * 1000,
        "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000,
        "per_commit": statistics.fmean(sizes),
        "commits": len(lat),
        "errors": sum(r["errors"] for r in runs),
        "procs": runs[0]["procs"],
        "exact": all(r["exact"] for r in runs),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20000, help="records per run (one partition)")
    ap.add_argument("--consumers", default="1,4,16", help="comma-separated share consumer counts")
    ap.add_argument("--processes", type=int, default=2, help="consumer worker processes (at most consumers)")
    ap.add_argument("--batch", type=int, default=100, help="max_poll_records: records per commit at most")
    ap.add_argument("--storage", default="disk,memory", help="comma-separated: disk (SQLite), memory")
    ap.add_argument("--pg", action="store_true", help="also PostgreSQL (a throw-away cluster, fsync on)")
    ap.add_argument(
        "--rounds", type=int, default=1, help="rounds over all storages (medians, pooled latency)"
    )
    args = ap.parse_args()
    counts = [int(x) for x in args.consumers.split(",")]
    names = {"disk": "sqlite", "memory": "memory"}
    storages: list[str] = [names[s] for s in args.storage.split(",")]
    pg = None
    if args.pg:
        from groupcoord.testing.pgcluster import PgCluster, available

        if available() is None:
            pg = PgCluster().start()
            storages.append("postgresql")
        else:
            print(f"postgresql skipped: {available()}")
    load = os.getloadavg()
    print(f"share groups: {args.records} records of 100 B per run, one partition, explicit ACCEPT + commit, "
          f"batch <= {args.batch}, consumers in <= {args.processes} processes, {args.rounds} round(s); "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} cpus")  # fmt: skip
    cells: dict[tuple[str, int], list[dict]] = {}
    try:
        for _ in range(args.rounds):  # storages alternate within a round: the machine's load hits all alike
            for name in storages:
                extra = {"sqlite": [], "memory": ["--storage", "memory"]}.get(name)
                if extra is None:
                    assert pg is not None
                    extra = ["--storage", pg.create_database()]
                topics = [a for n in counts for a in ("--topic", f"share-{n}:1")]
                with serve("--share-auto-offset-reset", "earliest", *topics, *extra) as (port, pid):
                    for n in counts:
                        run = run_once(port, pid, f"share-{n}", args.records, n, args.processes, args.batch)
                        cells.setdefault((name, n), []).append(run)
    finally:
        if pg is not None:
            pg.stop()
    head = f"{'storage':10} {'consumers':>9} {'procs':>5} {'records/s':>10} {'srv CPU/rec':>11} " \
           f"{'commit p50':>11} {'commit p99':>11} {'rec/commit':>10} {'commits':>8} {'errors':>6}  exact"  # fmt: skip
    print(head)
    ok = True
    for (name, n), runs in cells.items():
        r = summary(runs)
        ok &= r["exact"]
        print(f"{name:10} {n:>9} {r['procs']:>5} {r['rate']:>10.0f} {r['cpu_us']:>8.1f} us "
              f"{r['p50']:>8.2f} ms {r['p99']:>8.2f} ms {r['per_commit']:>10.1f} {r['commits']:>8} "
              f"{r['errors']:>6}  exact: {'yes' if r['exact'] else 'NO'}")  # fmt: skip
    load = os.getloadavg()
    print(f"load average after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
