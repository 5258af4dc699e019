"""groupcoord against Apache Kafka 4.4 on the same machine, in the same run (issue 39): `make bench-kafka`.

Not a test: it prints one table. Both servers run at once on loopback, pinned to core 0 (`taskset`, when
there is one and more than one core), each load generator (`bench/loadgen.py`, the share consumers of
`bench/share_groups.py`) in its own process on core 1. Kafka is a single-node KRaft broker (broker and
controller in one JVM) from the jars in KAFKA_JARS, with the settings `/work/oracle/start-kafka.sh` uses
(initial rebalance delay 0); groupcoord is `groupcoord serve` with its defaults (SQLite, synchronous=FULL).

Method:
- The same pre-encoded frames go to both (bench/loadgen.py encodes them once with our codec); every
  response's error codes are counted (per partition for OffsetCommit/OffsetFetch/TxnOffsetCommit, each
  distinct reply decoded once), and a row with any error other than NONE is flagged in the table.
- Server CPU is utime+stime of the whole server process from /proc/<pid>/stat (all JVM threads for Kafka:
  GC, JIT, the controller, the log flusher) over each measured window; the figure is CPU per operation
  (per heartbeat, per member joined, per committed/fetched partition, per transaction, per record
  delivered). The ratio column is Kafka's CPU per operation over ours: above 1 means groupcoord is cheaper.
- Kafka is warmed up first (`--warmup-rounds` whole passes over every row, not counted: the JIT), then
  `--rounds` rounds in which every row runs on both servers, the order alternating round by round; the
  table shows medians over the rounds, and the range of the ratio.
- Cold start: wall and CPU seconds from `exec` to the first answered ApiVersions, for each server's start
  at the beginning of the run (Kafka's storage format step, a separate JVM, is not counted).
- Topics both need (OffsetCommit checks the topic exists): "bench" with 100 partitions, one fresh
  one-partition topic per share row and round; share groups get share.auto.offset.reset=earliest by
  IncrementalAlterConfigs before their consumers join.

The machine is shared (2 cores, other work running): absolute figures move with the load, the ratios within
one run are what this measures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from coordinator import PY, SERVER_CORE, free_port, loadavg, machine, pinned  # noqa: E402
from measure import proc_cpu_seconds, proc_rss_mb  # noqa: E402

from groupcoord.protocol.codec import decode_response, encode_request  # noqa: E402

DEFAULT_JARS = ROOT / ".venv" / "oracle" / "jars"
KAFKA_PROPS = """process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.quorum.bootstrap.servers=127.0.0.1:{cport}
log.dirs={data}
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
"""
LOG4J = "Configuration:\n  Loggers:\n    Root: { level: WARN }\n"


# -------------------------------------------------------------------------------------------- servers
def api_versions_answered(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.settimeout(2.0)
            from groupcoord.protocol.messages.api_versions import ApiVersionsRequest

            s.sendall(encode_request(18, 0, 1, ApiVersionsRequest(), client_id="bench"))
            head = s.recv(4)
            return len(head) == 4
    except OSError:
        return False


class Target:
    """One server process we started (always stopped: TERM, then KILL), with its cold start measured."""

    def __init__(
        self, name: str, argv: list[str], tmp: str, port: int, env: dict[str, str] | None = None
    ) -> None:
        self.name, self.target, self.tmp, self.port = name, name, tmp, port
        self.log = open(os.path.join(tmp, "server.log"), "wb")  # noqa: SIM115
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            pinned(SERVER_CORE, argv),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        self.pid = self.proc.pid
        deadline = t0 + 180
        while not api_versions_answered(port):
            if self.proc.poll() is not None or time.perf_counter() > deadline:
                self.stop()
                raise RuntimeError(f"{name} did not answer ApiVersions (log: {tmp}/server.log)")
            time.sleep(0.02)
        self.cold_wall = time.perf_counter() - t0
        self.cold_cpu = proc_cpu_seconds(self.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def start_groupcoord(name: str = "groupcoord", source: Path | None = None) -> Target:
    """This checkout's server, or (`source`) the tree of an earlier commit laid out by `baseline_tree`."""
    port, tmp = free_port(), tempfile.mkdtemp(prefix="bench-kafka-gc-")
    # this interpreter, not .venv/bin/groupcoord (a copied venv's script runs its origin's interpreter)
    argv = [PY, "-m", "groupcoord.server", "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", f"{tmp}/data",
            "--group-initial-rebalance-delay-ms", "0", "--log-level", "warning"]  # fmt: skip
    env = None
    if source is not None:  # its packages first on the path: `groupcoord.*` is that commit's code
        env = {**os.environ, "PYTHONPATH": str(source / "_src"), "PYTHONDONTWRITEBYTECODE": "1"}
    return Target(name, argv, tmp, port, env)


def baseline_tree(rev: str) -> Path:
    """`git archive` of `rev` in a temporary directory, with _src/groupcoord/ linking each of its packages as
    pyproject's package-dir maps them (what `make links` does for a checkout)."""
    import tomllib

    out = Path(tempfile.mkdtemp(prefix="bench-kafka-base-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    top = out / "_src" / "groupcoord"
    top.mkdir(parents=True)
    dirs = tomllib.loads((out / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for name, folder in dirs.items():
        (top / name.removeprefix("groupcoord.")).symlink_to(out / folder)
    return out


def start_kafka(jars: Path) -> Target:
    port, cport, tmp = free_port(), free_port(), tempfile.mkdtemp(prefix="bench-kafka-k-")
    props, log4j = Path(tmp, "server.properties"), Path(tmp, "log4j2.yaml")
    props.write_text(KAFKA_PROPS.format(port=port, cport=cport, data=f"{tmp}/data"))
    log4j.write_text(LOG4J)
    cp = f"{jars}/*"
    jvm = ["java", "-Xms512m", "-Xmx1g", "-XX:+UseG1GC", f"-Dlog4j2.configurationFile={log4j}", "-cp", cp]
    uuid = subprocess.run([*jvm, "kafka.tools.StorageTool", "random-uuid"], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    subprocess.run([*jvm, "kafka.tools.StorageTool", "format", "--standalone", "-t", uuid, "-c", str(props)],
                   check=True, capture_output=True)  # fmt: skip
    return Target("kafka", [*jvm, "kafka.Kafka", str(props)], tmp, port)


# -------------------------------------------------------------------------------------------- set-up
async def call(port: int, api: int, version: int, body: object) -> object:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(encode_request(api, version, 1, body, client_id="bench-kafka"))
        size = int.from_bytes(await reader.readexactly(4), "big")
        return decode_response(await reader.readexactly(size), api, version)[1]
    finally:
        writer.close()


async def prepare(port: int) -> None:
    """Coordinators ready (Kafka creates __consumer_offsets / __transaction_state on the first
    FindCoordinator) and topic "bench" with 100 partitions."""
    from groupcoord.protocol.messages import find_coordinator as fc

    deadline = time.monotonic() + 120
    for key_type in (0, 1):
        while True:
            r = await call(port, 10, 4, fc.FindCoordinatorRequest(key_type=key_type, coordinator_keys=("x",)))
            if all(c.error_code == 0 for c in r.coordinators):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"no coordinator of key type {key_type} on port {port}")
            await asyncio.sleep(0.5)
    await create_topic(port, "bench", 100)


async def create_topic(port: int, name: str, partitions: int) -> None:
    from groupcoord.protocol.messages import create_topics as ct

    r = await call(port, 19, 5, ct.CreateTopicsRequest(
        topics=(ct.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, assignments=(),
                                  configs=()),)))  # fmt: skip
    if r.topics[0].error_code not in (0, 36):  # TOPIC_ALREADY_EXISTS
        raise RuntimeError(f"CreateTopics {name}: error {r.topics[0].error_code}")


async def share_earliest(port: int, group: str) -> None:
    from groupcoord.protocol.messages import incremental_alter_configs as iac

    cfg = iac.IncrementalAlterableConfig(name="share.auto.offset.reset", config_operation=0, value="earliest")
    res = iac.IncrementalAlterConfigsResource(resource_type=32, resource_name=group, configs=(cfg,))
    r = await call(port, 44, 1, iac.IncrementalAlterConfigsRequest(resources=(res,), validate_only=False))
    if r.responses[0].error_code:
        raise RuntimeError(f"share.auto.offset.reset on {group}: error {r.responses[0].error_code}")


def idle_share(t: Target, seconds: float = 3.0) -> float:
    """The server's CPU share while nothing is asked of it (Kafka's JVM works at rest: controller, GC)."""
    c0, t0 = proc_cpu_seconds(t.pid), time.perf_counter()
    time.sleep(seconds)
    return (proc_cpu_seconds(t.pid) - c0) / (time.perf_counter() - t0)


# ----------------------------------------------------------------------------------------------- rows
def run_loadgen(t: Target, scenario: str, *extra: str, timeout: float = 300.0) -> dict:
    from coordinator import loadgen

    return loadgen(t, scenario, *extra, timeout=timeout)  # type: ignore[arg-type]


def _nonzero(errors: dict) -> dict[str, int]:
    return {str(k): v for k, v in errors.items() if str(k) != "0" and v}


def row_pipeline(t: Target, args: argparse.Namespace, per: int, *load: str) -> dict:
    r = run_loadgen(
        t, "heartbeat", *load, "--duration", str(args.duration), "--warmup", "1", "--timeout", "120"
    )
    ops = r["requests"] * per
    return {"cpu_us": r["cpu_s"] / max(1, ops) * 1e6, "ops": ops, "rate": ops / r["wall_s"],
            "p50_ms": r["p50_us"] / 1000, "errors": _nonzero(r["errors"])}  # fmt: skip


def row_join(t: Target, args: argparse.Namespace, members: int) -> dict:
    """`reps` fresh groups of `members` one after another (CPU is read in 10 ms ticks: small groups repeat)."""
    reps = max(1, 2000 // members)
    r = run_loadgen(t, "join", "--members", str(members), "--reps", str(reps), "--timeout", "120")
    cpu_ms = sum(run["server_cpu_ms"] for run in r["runs"])
    return {"cpu_us": cpu_ms * 1000 / (members * reps), "ops": members * reps,
            "wall_ms": r["median_ms"], "errors": {}}  # fmt: skip


def row_txn(t: Target, args: argparse.Namespace, seq: list[int]) -> dict:
    r = run_loadgen(t, "txn", "--connections", "16", "--partitions", "10", "--duration", str(args.duration))
    return {"cpu_us": r["cpu_s"] / max(1, r["requests"]) * 1e6, "ops": r["requests"], "rate": r["per_s"],
            "retries": r["retries"], "errors": _nonzero(r["errors"])}  # fmt: skip


def row_share(t: Target, args: argparse.Namespace, consumers: int, seq: list[int]) -> dict:
    import share_groups

    seq[0] += 1
    topic, group = f"bench-share-{consumers}-{seq[0]}", f"bench-share-{consumers}-{seq[0]}-{os.getpid()}"
    asyncio.run(create_topic(t.port, topic, 1))
    asyncio.run(share_earliest(t.port, group))
    r = share_groups.run_once(t.port, t.pid, topic, args.records, consumers, min(2, consumers), 100, group)
    errors = {"commit": r["errors"]} if r["errors"] else {}
    if not r["exact"]:
        errors["not exactly once"] = 1
    return {"cpu_us": r["cpu_us"], "ops": args.records, "rate": r["rate"], "errors": errors}


ROWS = (
    ("hb", "classic Heartbeat, 64 conns x 16 in flight", "µs CPU/heartbeat",
     lambda t, a, s: row_pipeline(t, a, 1, "--connections", "64", "--depth", "16")),
    ("cg", "KIP-848 heartbeat (steady), 64 x 16", "µs CPU/heartbeat",
     lambda t, a, s: row_pipeline(t, a, 1, "--consumer-group", "--connections", "64", "--depth", "16")),
    ("j10", "join+sync, 10 classic members", "µs CPU/member", lambda t, a, s: row_join(t, a, 10)),
    ("j100", "join+sync, 100 classic members", "µs CPU/member", lambda t, a, s: row_join(t, a, 100)),
    ("j1000", "join+sync, 1000 classic members", "µs CPU/member", lambda t, a, s: row_join(t, a, 1000)),
    ("commit", "OffsetCommit v8, 64 groups x 100 partitions", "µs CPU/partition",
     lambda t, a, s: row_pipeline(t, a, 100, "--commit", "--partitions", "100", "--groups", "64",
                                  "--connections", "64", "--depth", "4")),
    ("fetch", "OffsetFetch v8, 64 groups x 100 partitions", "µs CPU/partition",
     lambda t, a, s: row_pipeline(t, a, 100, "--fetch", "--partitions", "100", "--groups", "64",
                                  "--connections", "64", "--depth", "4")),
    ("txn", "AddOffsetsToTxn+TxnOffsetCommit(10)+EndTxn, 16 producers", "µs CPU/transaction", row_txn),
    ("share1", "share delivery + ACCEPT, 1 consumer, 1 partition", "µs CPU/record",
     lambda t, a, s: row_share(t, a, 1, s)),
    ("share4", "share delivery + ACCEPT, 4 consumers, 1 partition", "µs CPU/record",
     lambda t, a, s: row_share(t, a, 4, s)),
)  # fmt: skip


def fmt_ratio(rs: list[float]) -> str:
    if not rs:
        return "-"
    med = statistics.median(rs)
    return f"{med:.2f}x" if len(rs) == 1 else f"{med:.2f}x ({min(rs):.2f}-{max(rs):.2f})"


def _cell(xs: list[dict]) -> str:
    return f"{statistics.median(x['cpu_us'] for x in xs):.2f}" if xs else "FAILED"


def _notes(name: str, xs: list[dict], idle: float = 0.0) -> list[str]:
    """`idle`: the server's CPU share at rest; for a row with a rate, the CPU per operation net of it is
    shown too (a slow row otherwise carries the JVM's background work)."""
    med = lambda k: statistics.median(x[k] for x in xs if k in x)  # noqa: E731
    errs: dict[str, int] = {}
    for x in xs:
        for c, n in x["errors"].items():
            errs[c] = errs.get(c, 0) + n
    out = []
    if xs and "rate" in xs[0]:
        out.append(f"{name} {med('rate'):,.0f}/s")
        if idle:
            net = statistics.median(x["cpu_us"] - idle * 1e6 / x["rate"] for x in xs if x["rate"])
            out.append(f"{name} net of idle {net:.2f}")
    if xs and "wall_ms" in xs[0]:
        out.append(f"{name} {med('wall_ms'):.0f} ms after the last join")
    if xs and "retries" in xs[0]:
        out.append(f"{name} {sum(x['retries'] for x in xs)} CONCURRENT_TRANSACTIONS retries")
    out.append(f"{name} errors: {errs or 'none'}")
    return out


def table(
    results: dict,
    cold: dict,
    selected: list[str],
    ours: list[str],
    info: dict,
    la: tuple[str, str],
    idle: dict,
) -> str:
    """One row per scenario: each of `ours` (this checkout first, then a baseline) and Kafka, and Kafka's CPU
    per operation over each of ours (median of the rounds' ratios, their range in brackets)."""
    heads = [*ours, "Kafka 4.4", *(f"Kafka CPU / {n}" for n in ours)]
    lines = [
        f"groupcoord vs Apache Kafka 4.4, {info['date']}; {info['platform']}, python {info['python']}, "
        f"nproc {info['nproc']}, {info['cpu']}; {info['taskset']}; loadavg {la[0]} -> {la[1]}",
        "",
        f"| row | unit | {' | '.join(heads)} | notes |",
        "|---|---|" + "---|" * len(heads) + "---|",
    ]
    for key, title, unit, _ in ROWS:
        if key not in selected:
            continue
        kafka = results["kafka"].get(key, [])
        cells = [_cell(results[n].get(key, [])) for n in ours] + [_cell(kafka)]
        notes: list[str] = []
        for n in ours:
            mine = results[n].get(key, [])
            rs = [k["cpu_us"] / o["cpu_us"] for o, k in zip(mine, kafka, strict=False) if o["cpu_us"]]
            cells.append(fmt_ratio(rs))
            notes += _notes(n, mine, idle.get(n, 0.0))
        notes += _notes("Kafka", kafka, idle.get("kafka", 0.0))
        if key in results["failures"]:
            notes.append(f"FAILED {results['failures'][key][:120]}")
        lines.append(f"| {title} | {unit} | {' | '.join(cells)} | {'; '.join(notes)} |")
    k = cold["kafka"]
    cells = [f"{cold[n][1]:.2f} ({cold[n][0]:.1f})" for n in ours] + [f"{k[1]:.2f} ({k[0]:.1f})"]
    cells += [f"{k[1] / cold[n][1]:.2f}x" for n in ours]
    lines.append(f"| cold start to the first answered ApiVersions | CPU-s (wall s) | {' | '.join(cells)} | "
                 "one start each; Kafka's storage format step not counted |")  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jars", default=os.environ.get("KAFKA_JARS") or str(DEFAULT_JARS),
                    help="Kafka 4.4 runtime jars [env KAFKA_JARS; default .venv/oracle/jars, `make setup`]")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup-rounds", type=int, default=1, help="whole passes over Kafka first, not counted")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per pipelined row")
    ap.add_argument("--records", type=int, default=10000, help="records per share row")
    ap.add_argument("--rows", default=",".join(r[0] for r in ROWS), help="comma-separated row keys")
    ap.add_argument("--baseline", default=None, metavar="REV",
                    help="also run groupcoord at this git revision (before/after in the same run)")  # fmt: skip
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    if not Path(args.jars).is_dir() or not any(Path(args.jars).glob("kafka_2.13-*.jar")):
        sys.exit(f"no Kafka jars in {args.jars}: run `make setup` or set KAFKA_JARS")
    selected = args.rows.split(",")
    rows = [r for r in ROWS if r[0] in selected]
    info, la0 = machine(), loadavg()
    ours = ["groupcoord"] + ([f"groupcoord@{args.baseline}"] if args.baseline else [])
    results: dict = {n: {} for n in [*ours, "kafka"]} | {"failures": {}}
    targets: dict[str, Target] = {}
    base_tree = baseline_tree(args.baseline) if args.baseline else None
    seq = [0]
    try:
        targets["kafka"] = start_kafka(Path(args.jars))
        targets["groupcoord"] = start_groupcoord()
        if base_tree is not None:
            targets[ours[1]] = start_groupcoord(ours[1], base_tree)
        for t in targets.values():
            asyncio.run(prepare(t.port))
        idle = {n: idle_share(t) for n, t in targets.items()}
        names = [*ours, "kafka"]
        plan = [("warm-up", ["kafka"])] * args.warmup_rounds
        plan += [
            (f"round {i + 1}", names[i % len(names) :] + names[: i % len(names)]) for i in range(args.rounds)
        ]
        for label, order in plan:
            for key, title, _, fn in rows:
                for name in order:
                    print(f"... {label}: {title} on {name}", file=sys.stderr, flush=True)
                    try:
                        r = fn(targets[name], args, seq)
                    except Exception as exc:  # one failed row must not hide the others
                        results["failures"][key] = (
                            f"{name}: {str(exc).splitlines()[0] if str(exc) else exc!r}"
                        )
                        continue
                    if label != "warm-up":
                        results[name].setdefault(key, []).append(r)
        cold = {n: (t.cold_wall, t.cold_cpu) for n, t in targets.items()}
        rss = {n: proc_rss_mb(t.pid) for n, t in targets.items()}
    finally:
        for t in targets.values():
            t.stop()
        if base_tree is not None:
            shutil.rmtree(base_tree, ignore_errors=True)
    text = table(results, cold, selected, ours, info, (la0, loadavg()), idle)
    text += "\n\nCPU share at rest (3 s, nothing asked): " + ", ".join(
        f"{n} {v:.1%}" for n, v in idle.items()
    )
    text += "\n\nserver RSS at the end: " + ", ".join(f"{n} {v:.0f} MB" for n, v in rss.items())
    print(text, flush=True)
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps({"machine": info, "results": results, "cold": cold}, indent=1)
        )
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
