"""Cluster data-plane benchmark (issue 27): Produce and Fetch MB/s and records/s per node and for a cluster of
three `groupcoord serve --cluster` nodes on one PostgreSQL, beside a single-node server (segment log on disk)
in the same run; and partition failover time. Not a test: it prints a table.

`python bench/cluster_data_plane.py [--seconds S] [--per-batch N] [--conns C] [--trials T]`. A throw-away PostgreSQL
(fsync on, `groupcoord.testing.pgcluster`) is started for the run; nodes are started as the cluster tests start
them (tests/cluster/helpers.py).

* produce/fetch: topic `bench` with 3 partitions. In the cluster each node leads one partition (leases spread
  first) and is driven only with its own partition; the single node is driven with all three at once, so the
  load offered is the same. Produce is acks=all (the cluster acknowledges once PostgreSQL has committed the
  batch; the single node once the segment is fsynced), 1 KB records, pre-encoded raw Produce v9 frames with
  batches built by aiokafka's record builder, 2 connections per partition (`--conns`: more concurrent
  producers, which the cluster's group commit gathers into shared commits); Fetch reads each partition back
  to its end on one connection (Fetch v12, 4 MB per request), and every acknowledged record must come back.
  Raw frames keep the client thin, so the figures are what the servers sustain (as bench/data_plane.py).
* failover: an aiokafka producer (acks=all, bootstrapped at all three nodes) has a send to partition 0
  acknowledged; the node leading partition 0 is killed with kill -9; the figure is the time until the next
  send to partition 0 is acknowledged through the new leader (the lease TTL, `--cluster-lease-ttl-ms`
  5000 by default, bounds the takeover; aiokafka's own metadata refresh and retry backoff are included).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GROUPCOORD_TEST_LOG_LEVEL", "warning")

from aiokafka import AIOKafkaProducer  # noqa: E402

from bench.data_plane import Conn, batch  # noqa: E402
from groupcoord.protocol.codec import encode_request  # noqa: E402
from groupcoord.protocol.messages import fetch as fe  # noqa: E402
from groupcoord.protocol.messages import produce as pr  # noqa: E402
from groupcoord.testing.pgcluster import PgCluster  # noqa: E402
from tests.cluster.helpers import partition_leases, wait_partitions_spread  # noqa: E402
from tests.conftest import ServerProcess  # noqa: E402

TOPIC = "bench"
PARTITIONS = 3
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


async def produce(
    port: int, partition: int, seconds: float, per_batch: int, conns: int
) -> tuple[int, int, float]:
    """(bytes, records, elapsed s) acknowledged with NONE for `partition` by the server on `port`."""
    blob = batch(per_batch)
    req = pr.ProduceRequest(acks=-1, timeout_ms=30000, topic_data=(
        pr.TopicProduceData(name=TOPIC, partition_data=(pr.PartitionProduceData(index=partition, records=blob),)),))  # fmt: skip
    frame = encode_request(0, 9, 1, req)
    clients = [await Conn.open(port) for _ in range(conns)]
    sent = records = 0
    t0 = time.perf_counter()
    stop = t0 + seconds

    async def loop(c: Conn) -> None:
        nonlocal sent, records
        while time.perf_counter() < stop:
            await c.send_raw(frame)
            resp = await c.read(0, 9)
            code = resp.responses[0].partition_responses[0].error_code  # type: ignore[attr-defined]
            if code != 0:
                raise RuntimeError(f"produce to partition {partition} answered error {code}")
            sent += len(blob)
            records += per_batch

    await asyncio.gather(*(loop(c) for c in clients))
    elapsed = time.perf_counter() - t0
    for c in clients:
        c.writer.close()
    return sent, records, elapsed


async def fetch(port: int, partition: int, timeout: float = 120) -> tuple[int, int, float]:
    """(bytes, records, elapsed s) read back from `partition`, from offset 0 to its end."""
    c = await Conn.open(port)
    got = records = offset = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        req = fe.FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, topics=(
            fe.FetchTopic(topic=TOPIC, partitions=(fe.FetchPartition(partition=partition, fetch_offset=offset,
                                                                      partition_max_bytes=4 << 20),)),))  # fmt: skip
        part = (await c.call(1, 12, req)).responses[0].partitions[0]  # type: ignore[attr-defined]
        if part.error_code != 0:
            raise RuntimeError(f"fetch of partition {partition} answered error {part.error_code}")
        data = part.records or b""
        pos, before = 0, offset
        while pos + 61 <= len(data):  # whole batches only: walk the headers to the next offset
            base, length = struct.unpack_from(">qi", data, pos)
            if pos + 12 + length > len(data):
                break
            offset = base + struct.unpack_from(">i", data, pos + 23)[0] + 1
            pos += 12 + length
        if offset == before:
            break  # the end of the partition
        got += pos
        records += offset - before
    elapsed = time.perf_counter() - t0
    c.writer.close()
    return got, records, elapsed


async def drive(
    ports: dict[int, int], seconds: float, per_batch: int, conns: int = 2
) -> dict[str, dict[int, tuple]]:
    """ports: partition -> port of the server that leads it. Produce to every partition at once, then fetch
    every partition back at once; per partition (bytes, records, elapsed s). Every acknowledged record must
    be read back: a short read is an error, not a figure."""
    produced = await asyncio.gather(
        *(produce(port, p, seconds, per_batch, conns) for p, port in ports.items())
    )
    fetched = await asyncio.gather(*(fetch(port, p) for p, port in ports.items()))
    for p, (_, wrote, _), (_, read, _) in zip(ports, produced, fetched, strict=True):
        if read != wrote:
            raise RuntimeError(f"partition {p}: {wrote} records acknowledged, {read} read back")
    return {
        "produce": dict(zip(ports, produced, strict=True)),
        "fetch": dict(zip(ports, fetched, strict=True)),
    }


def rows_of(setup: str, label: dict[int, str] | None, result: dict[str, dict[int, tuple]]) -> list[tuple]:
    """(setup, server, op, MB/s, records/s): one row per node when `label` names each partition's leader, and
    the whole setup's row (for the single node, that node's)."""
    rows = []
    for op, per in result.items():
        for p, (nbytes, records, wall) in per.items() if label else ():
            rows.append((setup, label[p], op, nbytes / wall / 1e6, records / wall))
        wall = max(w for _, _, w in per.values())  # the phase ran while its slowest partition did
        total = sum(b for b, _, _ in per.values()), sum(r for _, r, _ in per.values())
        rows.append((setup, "cluster" if label else "the node", op, total[0] / wall / 1e6, total[1] / wall))
    return rows


def start(tmp: Path, name: str, *args: str) -> ServerProcess:
    (tmp / name).mkdir()
    return ServerProcess(tmp / name, args).start()


async def bench_single(tmp: Path, seconds: float, per_batch: int, conns: int = 2) -> list[tuple]:
    srv = start(tmp, "single", "--topic", f"{TOPIC}:{PARTITIONS}")
    try:
        result = await drive(dict.fromkeys(range(PARTITIONS), srv.port), seconds, per_batch, conns)
    finally:
        srv.stop()
    return rows_of("single node (disk log)", None, result)


async def bench_cluster(
    pg: PgCluster, tmp: Path, seconds: float, per_batch: int, conns: int = 2
) -> list[tuple]:
    url = pg.create_database()
    nodes = {n: start(tmp, f"node{n}", "--cluster", url, "--node-id", str(n), "--topic",
                      f"{TOPIC}:{PARTITIONS}") for n in (1, 2, 3)}  # fmt: skip
    try:
        leases = await wait_partitions_spread(url, TOPIC, PARTITIONS, list(nodes), timeout=60)
        if len({leader for leader, _ in leases.values()}) != len(nodes):
            raise RuntimeError(f"each node should lead one partition: {leases}")
        ports = {p: nodes[leader].port for p, (leader, _) in leases.items()}
        result = await drive(ports, seconds, per_batch, conns)
    finally:
        for node in nodes.values():
            node.stop()
    label = {p: f"node {leader} (partition {p})" for p, (leader, _) in leases.items()}
    return rows_of("3-node cluster (PostgreSQL)", label, result)


async def acked_send(producer: AIOKafkaProducer, deadline: float) -> None:
    """Send to partition 0 until one send is acknowledged (aiokafka retries NOT_LEADER itself)."""
    while True:
        try:
            await producer.send_and_wait(TOPIC, b"failover", partition=0)
            return
        except Exception:  # a send that timed out or met a dead connection: send again
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def bench_failover(pg: PgCluster, tmp: Path, trials: int) -> list[float]:
    url = pg.create_database()
    nodes = {n: start(tmp, f"fo{n}", "--cluster", url, "--node-id", str(n), "--topic",
                      f"{TOPIC}:{PARTITIONS}") for n in (1, 2, 3)}  # fmt: skip
    took: list[float] = []
    try:
        for _ in range(trials):
            await wait_partitions_spread(url, TOPIC, PARTITIONS, list(nodes), timeout=90)
            producer = AIOKafkaProducer(bootstrap_servers=",".join(n.bootstrap for n in nodes.values()),
                                        acks="all", request_timeout_ms=15000, retry_backoff_ms=50)  # fmt: skip
            await producer.start()
            try:
                await acked_send(producer, time.monotonic() + 60)
                victim = (await partition_leases(url, TOPIC))[0][0]
                t0 = time.monotonic()
                nodes[victim].kill()
                await acked_send(producer, t0 + 120)
                took.append(time.monotonic() - t0)
            finally:
                await producer.stop()
            nodes[victim].start()
    finally:
        for node in nodes.values():
            node.stop()
    return took


def table(rows: list[tuple], took: list[float]) -> str:
    out = ["| setup | server | op | MB/s | records/s |", "|---|---|---|---|---|"]
    out += [f"| {s} | {who} | {op} | {mb:.1f} | {rps:,.0f} |" for s, who, op, mb, rps in rows]
    if took:
        out += ["", "| partition failover (kill -9 of the leader of partition 0) | trials | min | median | max |",
                "|---|---|---|---|---|",
                f"| until an aiokafka send to partition 0 is acknowledged again | {len(took)} | {min(took):.2f} s"
                f" | {statistics.median(took):.2f} s | {max(took):.2f} s |"]  # fmt: skip
    return "\n".join(out)


async def run(args: argparse.Namespace) -> str:
    pg = PgCluster(fsync=True, max_connections=300).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows = await bench_single(Path(tmp), args.seconds, args.per_batch, args.conns)
            rows += await bench_cluster(pg, Path(tmp), args.seconds, args.per_batch, args.conns)
            took = await bench_failover(pg, Path(tmp), args.trials) if args.trials else []
    finally:
        pg.stop()
    return table(rows, took)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="per produce and per fetch phase")
    parser.add_argument("--per-batch", type=int, default=256, help="1 KB records per produced batch")
    parser.add_argument("--conns", type=int, default=2, help="produce connections per partition")
    parser.add_argument("--trials", type=int, default=3, help="failover trials (0: none)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"# bench/cluster_data_plane.py {' '.join(sys.argv[1:])} on {os.cpu_count()} cores, loadavg {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f} at start; clients in this process", flush=True)  # fmt: skip
    print(asyncio.run(run(args)))
    load = os.getloadavg()
    print(f"# loadavg {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end")


if __name__ == "__main__":
    main()
