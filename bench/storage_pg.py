"""PostgreSQL storage and cluster-mode benchmarks (issue 19). Not a test: it prints a table.

`python bench/storage_pg.py [--quick] [--parts store,server,cluster,failover]`. A throw-away PostgreSQL
(fsync on, `groupcoord.testing.pgcluster`) is started for the run.

* store: commits/s of the StateStore (64 concurrent writers of one offset each, group commit) and the load
  time of 5000 groups x (10 members + 4 offsets), SQLite vs PostgreSQL; PostgreSQL also loads one shard
  (what a takeover reads).
* server: heartbeats/s of `groupcoord serve` over the wire (bench/loadgen.py heartbeat, 64 connections in 8
  groups, and one 100-member group), --storage disk vs postgresql://. Heartbeats never write, so both should
  match: this row exists to show that.
* cluster: the same heartbeat load against 1 node and against 2 nodes of a cluster (one load generator per
  node, each driving groups whose shard that node owns); the sum per node count is the scaling figure.
* failover: seconds from kill -9 (and from SIGTERM) of the node owning a group's shard until another node
  answers an OffsetCommit for that group with NONE (polled every 20 ms over raw connections to every node):
  the server side of a failover, without the client's own rediscovery backoff.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncpg  # noqa: E402

from groupcoord.protocol.codec import decode_response, encode_request  # noqa: E402
from groupcoord.protocol.messages import offset_commit as oc  # noqa: E402
from groupcoord.server.coordinator.records import (  # noqa: E402
    GroupMetadataValue,
    GroupRecord,
    MemberMetadataValue,
    OffsetRecord,
    OffsetValue,
)
from groupcoord.server.storage import PostgresStateStore, SqliteStateStore, StateStore  # noqa: E402
from groupcoord.server.storage.shards import shard_of  # noqa: E402
from groupcoord.testing.pgcluster import PgCluster  # noqa: E402

PY = sys.executable
SHARDS = 50


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------ store


async def commits_per_s(store: StateStore, writers: int, seconds: float) -> dict:
    done = 0
    stop = time.perf_counter() + seconds
    lat: list[float] = []

    async def writer(w: int) -> None:
        nonlocal done
        i = 0
        while time.perf_counter() < stop:
            t = time.perf_counter()
            await store.write([OffsetRecord(f"g{w}", "t", 0, OffsetValue(i, -1, "", 1, -1))])
            lat.append(time.perf_counter() - t)
            i += 1
            done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    wall = time.perf_counter() - t0
    lat.sort()
    return {
        "commits_per_s": done / wall,
        "p50_ms": lat[len(lat) // 2] * 1000,
        "p99_ms": lat[int(len(lat) * 0.99)] * 1000,
        "transactions": getattr(store, "transactions", None),
    }


def group_records(n: int) -> list:
    out = []
    for g in range(n):
        members = tuple(
            MemberMetadataValue(f"m{m}", None, "c", "/127.0.0.1", 30000, 10000, b"\x00" * 24, b"\x00" * 40)
            for m in range(10)
        )
        out.append(GroupRecord(f"grp-{g}", GroupMetadataValue("consumer", 3, "range", "m0", 1, members)))
        out += [OffsetRecord(f"grp-{g}", "t", p, OffsetValue(100, -1, "", 1, -1)) for p in range(4)]
    return out


async def bench_store(pg: PgCluster, quick: bool) -> list[str]:
    rows = []
    seconds = 2.0 if quick else 5.0
    n_groups = 1000 if quick else 5000
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (
            ("sqlite", lambda: SqliteStateStore(Path(tmp) / "state.db")),
            ("postgresql", lambda: PostgresStateStore(pg.create_database(), shards=SHARDS)),
        ):
            store = make()
            await store.open()
            one = await commits_per_s(store, 1, seconds / 2)
            many = await commits_per_s(store, 64, seconds)
            recs = group_records(n_groups)
            for i in range(0, len(recs), 1000):
                await store.write(recs[i : i + 1000])
            t = time.perf_counter()
            loaded = await store.load()
            load_s = time.perf_counter() - t
            shard_s = None
            if isinstance(store, PostgresStateStore):
                t = time.perf_counter()
                await store.load_shards([0])
                shard_s = time.perf_counter() - t
            await store.close()
            rows.append(
                f"| {name} | {one['commits_per_s']:.0f} (p50 {one['p50_ms']:.2f} ms) | "
                f"{many['commits_per_s']:.0f} (p50 {many['p50_ms']:.1f} / p99 {many['p99_ms']:.1f} ms) | "
                f"{len(loaded)} records in {load_s * 1000:.0f} ms | "
                f"{'-' if shard_s is None else f'{shard_s * 1000:.0f} ms'} |"
            )
    return [
        "| store | commits/s, 1 writer | commits/s, 64 writers | load all | load one shard of 50 |",
        "|---|---|---|---|---|",
        *rows,
    ]


# ------------------------------------------------------------------------------------------ server


class Node:
    def __init__(self, args: list[str], data: Path) -> None:
        self.port = free_port()
        self.data = data
        self.args = args
        self.proc: subprocess.Popen | None = None

    def start(self) -> Node:
        cmd = [
            PY, "-m", "groupcoord.server", "serve", "--host", "127.0.0.1", "--port", str(self.port),
            "--data-dir", str(self.data), "--group-initial-rebalance-delay-ms", "0", "--journal", "false",
            "--log-level", "warning", *self.args,
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("node did not start")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


def loadgen(port: int, pid: int, seconds: float, *extra: str) -> dict:
    cmd = [
        PY, str(ROOT / "bench" / "loadgen.py"), "heartbeat", "--port", str(port), "--pid", str(pid),
        "--duration", str(seconds), "--warmup", "1", *extra,
    ]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_server(pg: PgCluster, quick: bool, tmp: Path) -> list[str]:
    seconds = 3.0 if quick else 8.0
    rows = []
    for name, args in (("disk (SQLite)", []), ("postgresql", ["--storage", pg.create_database()])):
        node = Node(args, tmp / f"srv-{len(rows)}").start()
        try:
            assert node.proc is not None
            many = loadgen(node.port, node.proc.pid, seconds, "--connections", "64", "--groups", "8")
            big = loadgen(
                node.port, node.proc.pid, seconds, "--connections", "100", "--groups", "1", "--depth", "4"
            )
        finally:
            node.stop()
        rows.append(
            f"| {name} | {many['per_s']:.0f} (p99 {many['p99_us'] / 1000:.1f} ms) | "
            f"{big['per_s']:.0f} (p99 {big['p99_us'] / 1000:.1f} ms) |"
        )
    return [
        "| storage | heartbeats/s, 64 conns in 8 groups | heartbeats/s, one 100-member group |",
        "|---|---|---|",
        *rows,
    ]


# ------------------------------------------------------------------------------------------ cluster


async def owners(url: str) -> dict[int, int]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT shard, owner FROM shard_lease WHERE expires_at > now()")
    finally:
        await conn.close()
    return {r[0]: r[1] for r in rows}


async def wait_spread(url: str, node_ids: list[int], timeout: float = 30) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    while True:
        own = await owners(url)
        held = [list(own.values()).count(n) for n in node_ids]
        if len(own) == SHARDS and all(0 < h <= -(-SHARDS // len(node_ids)) for h in held):
            return own
        if time.monotonic() > deadline:
            raise RuntimeError(f"leases not spread: {own}")
        await asyncio.sleep(0.2)


def owned_names(own: dict[int, int], node: int, count: int, tag: str) -> list[str]:
    names, i = [], 0
    while len(names) < count:
        name = f"{tag}-{i}"
        if own.get(shard_of(name, SHARDS)) == node:
            names.append(name)
        i += 1
    return names


def start_cluster(url: str, n: int, tmp: Path, tag: str, extra: list[str] | None = None) -> dict[int, Node]:
    nodes = {}
    for i in range(1, n + 1):
        nodes[i] = Node(["--cluster", url, "--node-id", str(i), *(extra or [])], tmp / f"{tag}-{i}").start()
    return nodes


def bench_cluster(pg: PgCluster, quick: bool, tmp: Path) -> list[str]:
    seconds = 3.0 if quick else 8.0
    rows = []
    for n in (1, 2):
        url = pg.create_database()
        nodes = start_cluster(url, n, tmp, f"scale{n}")
        try:
            own = asyncio.run(wait_spread(url, list(nodes)))
            procs = []
            for node_id, node in nodes.items():
                names = owned_names(own, node_id, 8, f"hb{n}")
                assert node.proc is not None
                cmd = [
                    PY, str(ROOT / "bench" / "loadgen.py"), "heartbeat", "--port", str(node.port),
                    "--pid", str(node.proc.pid), "--duration", str(seconds), "--warmup", "1",
                    "--connections", "64", "--group-names", ",".join(names),
                ]  # fmt: skip
                procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True))
            results = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1]) for p in procs]
        finally:
            for node in nodes.values():
                node.stop()
        total = sum(r["per_s"] for r in results)
        errors = {k: v for r in results for k, v in r["errors"].items()}
        rows.append((n, total, [round(r["per_s"]) for r in results], errors))
    base = rows[0][1]
    return [
        "| nodes | heartbeats/s (sum) | per node | ratio to 1 node | errors |",
        "|---|---|---|---|---|",
        *(f"| {n} | {t:.0f} | {per} | {t / base:.2f} | {err or 'none'} |" for n, t, per, err in rows),
    ]


# ------------------------------------------------------------------------------------------ failover


def commit_ok(port: int, group: str) -> bool:
    body = oc.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=(oc.OffsetCommitRequestTopic(name="t", partitions=(
            oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata=""),)),),
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(encode_request(8, 2, 1, body))
            size = int.from_bytes(_read(s, 4), "big")
            _, resp = decode_response(_read(s, size), 8, 2)
            return resp.topics[0].partitions[0].error_code == 0
    except OSError:
        return False


def _read(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError
        buf += chunk
    return buf


def bench_failover(pg: PgCluster, quick: bool, tmp: Path) -> list[str]:
    trials = 3 if quick else 6
    url = pg.create_database()
    nodes = start_cluster(url, 3, tmp, "fo", ["--topic", "t:1"])
    out: dict[str, list[float]] = {"kill -9": [], "SIGTERM": []}
    try:
        for trial in range(trials):
            for how, sig in (("kill -9", signal.SIGKILL), ("SIGTERM", signal.SIGTERM)):
                asyncio.run(wait_spread(url, list(nodes)))
                group = f"fo-{how[:4]}-{trial}"
                deadline = time.monotonic() + 30
                while True:  # the owner answers once its shard is loaded
                    victim = asyncio.run(owners(url))[shard_of(group, SHARDS)]
                    if commit_ok(nodes[victim].port, group):
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError("the owner does not answer")
                    time.sleep(0.1)
                t0 = time.monotonic()
                nodes[victim].stop(sig)
                others = [n.port for i, n in nodes.items() if i != victim]
                while not any(commit_ok(p, group) for p in others):
                    if time.monotonic() - t0 > 60:
                        raise RuntimeError("no failover within 60 s")
                    time.sleep(0.02)
                out[how].append(time.monotonic() - t0)
                nodes[victim].start()
    finally:
        for node in nodes.values():
            node.stop()
    rows = ["| how | trials | min | median | max |", "|---|---|---|---|---|"]
    for how, xs in out.items():
        rows.append(
            f"| {how} | {len(xs)} | {min(xs):.2f} s | {statistics.median(xs):.2f} s | {max(xs):.2f} s |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", default="store,server,cluster,failover")
    args = parser.parse_args()
    parts = args.parts.split(",")
    pg = PgCluster(fsync=True, max_connections=300).start()
    print(f"# bench/storage_pg.py on {os.cpu_count()} cores, loadavg {os.getloadavg()[0]:.1f}", flush=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if "store" in parts:
                print("\n".join(asyncio.run(bench_store(pg, args.quick))), "\n", flush=True)
            if "server" in parts:
                print("\n".join(bench_server(pg, args.quick, Path(tmp))), "\n", flush=True)
            if "cluster" in parts:
                print("\n".join(bench_cluster(pg, args.quick, Path(tmp))), "\n", flush=True)
            if "failover" in parts:
                print("\n".join(bench_failover(pg, args.quick, Path(tmp))), "\n", flush=True)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
