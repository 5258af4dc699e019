"""One partition run (issue 43): PostgreSQL, three nodes and the clients each in a network namespace of their
own (netns.py), a randomised schedule of faults from a seed for a bounded time, healed at the end, then the
checker (checker.py).

Faults, one at a time, each lasting 0.5-2.5 lease TTLs with a pause between: a full partition between two
nodes, a one-way partition (node -> node, node -> PostgreSQL or PostgreSQL -> node), a node cut from
PostgreSQL only, a node cut from its clients only, a node isolated from everything, a node paused
(SIGSTOP, then SIGCONT). The same seed gives the same schedule.

    python -m tests.partitions.run --seed 7 --duration 60 [--workdir DIR]

Exit status 0 when the checker found nothing; the report (JSON) is written to <workdir>/report.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, TopicPartition

from groupcoord.testing.pgcluster import PgCluster
from tests.partitions import checker
from tests.partitions.netns import Net

ROOT = Path(__file__).resolve().parents[2]
NODES = (1, 2, 3)
TOPIC_PARTITIONS = 3
SHARDS = 50


@dataclass
class Fault:
    at: float  # seconds after the schedule starts
    kind: str
    args: tuple[str, ...]
    length: float

    def describe(self) -> str:
        return f"{self.kind}({', '.join(self.args)}) for {self.length:.1f} s at +{self.at:.1f} s"


def schedule(seed: int, duration: float, ttl_s: float) -> list[Fault]:
    rng = random.Random(seed)
    nodes = [f"n{k}" for k in NODES]
    faults, t = [], 2.0
    while True:
        length = rng.uniform(0.5, 2.5) * ttl_s
        if t + length > duration:
            return faults
        kind = rng.choice(["partition", "one-way", "cut-pg", "cut-clients", "isolate", "pause"])
        a = rng.choice(nodes)
        if kind == "partition":
            args: tuple[str, ...] = (a, rng.choice([n for n in nodes if n != a]))
        elif kind == "one-way":
            pair = rng.choice([(a, rng.choice([n for n in nodes if n != a])), (a, "pg"), ("pg", a)])
            args = pair
        else:
            args = (a,)
        faults.append(Fault(round(t, 2), kind, args, round(length, 2)))
        t += length + rng.uniform(0.5, 1.5) * ttl_s


class NodeExited(RuntimeError):
    """A node's process ended while it was awaited."""


class Cluster:
    """The processes of a run and the network between them; `close()` always leaves nothing behind."""

    def __init__(self, workdir: Path, ttl_ms: int) -> None:
        self.workdir = workdir
        self.ttl_ms = ttl_ms
        self.net = Net(["pg", *(f"n{k}" for k in NODES), "clients"])
        self.pg: PgCluster | None = None
        self.nodes: dict[int, subprocess.Popen[bytes]] = {}
        self.workload: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> Cluster:
        self.net.create()
        self.pg = PgCluster(host=self.net.ips["pg"], netns=self.net.ns("pg"), port=5432).start()
        self.url = self.pg.create_database("partitions")
        for k in NODES:
            self.nodes[k] = self._node(k)
        for k in NODES:
            self._start_node(k)
        return self

    def _start_node(self, k: int, tries: int = 3) -> None:
        """Wait for node k to listen. On a loaded machine its first connection to PostgreSQL across the bridge
        can time out before any fault is injected (the node then exits saying it cannot open the state store);
        that is start-up, not the faults under test, so it is started again, at most `tries` times."""
        for attempt in range(1, tries + 1):
            try:
                self._wait_listening(k)
                return
            except NodeExited:
                if attempt == tries:
                    raise
                print(f"node {k} exited during start-up (attempt {attempt}); starting it again", flush=True)
                self.nodes[k] = self._node(k)

    def _node(self, k: int) -> subprocess.Popen[bytes]:
        ip = self.net.ips[f"n{k}"]
        cmd = [
            *self.net.exec_prefix(f"n{k}"), sys.executable, "-m", "groupcoord.server", "serve",
            "--host", ip, "--port", "9092", "--data-dir", str(self.workdir / f"n{k}"),
            "--cluster", self.url, "--node-id", str(k), "--cluster-lease-ttl-ms", str(self.ttl_ms),
            "--topic", f"jp:{TOPIC_PARTITIONS}", "--group-initial-rebalance-delay-ms", "0",
            "--group-min-session-timeout-ms", "1000", "--log-level", "info",
        ]  # fmt: skip
        log = open(self.workdir / f"n{k}.log", "ab")  # noqa: SIM115 - owned by the child
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=log, stderr=log, env=dict(os.environ, PYTHONUNBUFFERED="1")
        )
        log.close()
        return proc

    def _wait_listening(self, k: int, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.nodes[k].poll() is not None:
                raise NodeExited(f"node {k} exited:\n{self.log(k)[-4000:]}")
            try:
                with socket.create_connection((self.net.ips[f"n{k}"], 9092), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"node {k} did not listen within {timeout} s")

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.net.ips[f'n{k}']}:9092" for k in NODES)

    def log(self, k: int) -> str:
        return (self.workdir / f"n{k}.log").read_text(errors="replace")

    def start_workload(self, history: Path) -> None:
        cmd = [*self.net.exec_prefix("clients"), sys.executable, "-m", "tests.partitions.workload"]
        log = open(self.workdir / "workload.log", "ab")  # noqa: SIM115 - owned by the child
        self.workload = subprocess.Popen(
            [*cmd, self.bootstrap, str(history)], cwd=ROOT, stdout=log, stderr=log
        )
        log.close()

    def apply(self, fault: Fault) -> None:
        net, a = self.net, fault.args
        if fault.kind == "partition":
            net.partition(a[0], a[1])
        elif fault.kind == "one-way":
            net.drop(a[0], a[1])
        elif fault.kind == "cut-pg":
            net.partition(a[0], "pg")
        elif fault.kind == "cut-clients":
            net.partition(a[0], "clients")
        elif fault.kind == "isolate":
            net.isolate(a[0], [m for m in net.members if m != a[0]])
        elif fault.kind == "pause":
            self.nodes[int(a[0][1:])].send_signal(signal.SIGSTOP)

    def heal(self) -> None:
        self.net.heal()
        for proc in self.nodes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)

    def close(self) -> None:
        for proc in [*self.nodes.values(), *([self.workload] if self.workload else [])]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
        if self.pg is not None:
            self.pg.stop()
        self.net.teardown()


async def _ready(url: str, timeout: float = 90) -> None:
    """Every shard and every partition of the topic has a live owner."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = await asyncpg.connect(url, timeout=5)
            try:
                shards = await conn.fetchval("SELECT count(*) FROM shard_lease WHERE expires_at > now()")
                parts = await conn.fetchval(
                    "SELECT count(*) FROM partition_lease WHERE topic = 'jp' AND expires_at > now()"
                )
            finally:
                await conn.close()
            if shards == SHARDS and parts == TOPIC_PARTITIONS:
                return
        except (OSError, asyncpg.PostgresError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the cluster did not get every shard and partition owned")
        await asyncio.sleep(0.3)


def _count(history: Path, op: str) -> int:
    try:
        return history.read_text().count(f'"op": "{op}"')
    except OSError:
        return 0


async def _progress(history: Path, ops: tuple[str, ...], timeout: float) -> list[str]:
    """The ops of `ops` the history shows none of within `timeout` (empty: all moved)."""
    before = {op: _count(history, op) for op in ops}
    deadline = time.monotonic() + timeout
    while True:
        stuck = [op for op in ops if _count(history, op) <= before[op]]
        if not stuck or time.monotonic() > deadline:
            return stuck
        await asyncio.sleep(0.3)


async def read_topic(bootstrap: str, timeout: float = 120) -> dict[tuple[int, int], str]:
    """Every record of the topic, by (partition, offset), read from the start with no group."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, request_timeout_ms=10000, metadata_max_age_ms=1000
    )
    await consumer.start()
    out: dict[tuple[int, int], str] = {}
    try:
        tps = [TopicPartition("jp", p) for p in range(TOPIC_PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        deadline = time.monotonic() + timeout
        while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
            if time.monotonic() > deadline:
                raise RuntimeError("reading the topic back did not reach its end")
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                for r in records:
                    out[(tp.partition, r.offset)] = r.value.decode()
    finally:
        await consumer.stop()
    return out


async def probe_coordinator(cluster: Cluster, group: str = "jg", timeout: float = 30) -> str | None:
    """After healing: a simple group on `group`'s shard commits at that shard's owner (raw OffsetCommit v2),
    so a stalled client can be told from a stalled coordinator. None when it did, else why not."""
    from groupcoord.server.storage.shards import shard_of
    from tests.cluster.helpers import raw_commit, read_commit_error

    shard = shard_of(group, SHARDS)
    probe = next(f"probe-{i}" for i in range(10**6) if shard_of(f"probe-{i}", SHARDS) == shard)
    deadline, why = time.monotonic() + timeout, "no owner"
    while time.monotonic() < deadline:
        conn = await asyncpg.connect(cluster.url)
        try:
            owner = await conn.fetchval(
                "SELECT owner FROM shard_lease WHERE shard = $1 AND expires_at > now()", shard
            )
        finally:
            await conn.close()
        if owner is not None:
            try:
                with socket.create_connection((cluster.net.ips[f"n{owner}"], 9092), timeout=5) as sock:
                    raw_commit(sock, probe, "jp", 1, 1)
                    code = read_commit_error(sock)
                if code == 0:
                    return None
                why = f"node {owner} answered error {code}"
            except OSError as e:
                why = f"node {owner}: {e!r}"
        await asyncio.sleep(0.5)
    return why


async def _final_commits(url: str) -> dict[int, int]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT partition, committed_offset FROM offsets WHERE group_id = 'jg'")
    finally:
        await conn.close()
    return {r[0]: r[1] for r in rows}


async def run(seed: int, duration: float, workdir: Path, ttl_ms: int = 2000) -> checker.Report:
    faults = schedule(seed, duration, ttl_ms / 1000)
    history = workdir / "history.jsonl"
    cluster = Cluster(workdir, ttl_ms)
    timeline: list[dict[str, Any]] = []
    try:
        cluster.start()
        await _ready(cluster.url)
        cluster.start_workload(history)
        if await _progress(history, ("produced", "committed"), 90):
            raise RuntimeError(
                f"the workload made no progress:\n{(workdir / 'workload.log').read_text()[-3000:]}"
            )
        began = time.monotonic()
        for fault in faults:
            await asyncio.sleep(max(0.0, began + fault.at - time.monotonic()))
            cluster.apply(fault)
            timeline.append({"t": time.time(), "fault": fault.describe()})
            await asyncio.sleep(fault.length)
            cluster.heal()
            timeline.append({"t": time.time(), "healed": fault.describe()})
        await asyncio.sleep(max(0.0, began + duration - time.monotonic()))
        cluster.heal()
        await _ready(cluster.url)
        stuck = await _progress(history, ("produced", "committed"), 60)
        unavailable = await probe_coordinator(cluster)
        history.with_suffix(".stop").touch()
        assert cluster.workload is not None
        try:
            await asyncio.to_thread(cluster.workload.wait, 60)
        except subprocess.TimeoutExpired:
            cluster.workload.kill()
        report = checker.Report()
        events = checker.read_history(history)
        checker.check_writes(report, events, await read_topic(cluster.bootstrap))
        checker.check_commits(report, events, await _final_commits(cluster.url))
        checker.check_polls(report, events)
        checker.check_split_brain(report, {k: cluster.log(k) for k in NODES})
        report.counts["faults"] = len(faults)
        for op in stuck:  # availability, not safety: reported beside the Jepsen names
            report.add("no-progress-after-heal", {"op": op, "within_s": 60})
        if unavailable is not None:
            report.add("coordinator-unavailable-after-heal", {"group": "jg", "why": unavailable})
    finally:
        cluster.close()
        (workdir / "timeline.json").write_text(json.dumps(timeline, indent=1))
    (workdir / "report.json").write_text(report.to_json())
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of faults (default 60)")
    ap.add_argument(
        "--ttl-ms", type=int, default=2000, help="the nodes' --cluster-lease-ttl-ms (default 2000)"
    )
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"partitions-{args.seed}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"seed {args.seed}, {args.duration:.0f} s of faults, TTL {args.ttl_ms} ms; files in {workdir}")
    for fault in schedule(args.seed, args.duration, args.ttl_ms / 1000):
        print("  ", fault.describe())
    report = asyncio.run(run(args.seed, args.duration, workdir, args.ttl_ms))
    print(report.summary())
    if not report.ok:
        print(report.to_json())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
