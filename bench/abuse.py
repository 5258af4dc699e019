"""Heartbeat latency of a probe group while one abusive client misbehaves (issue 11).

Run with `make bench` (or `python bench/abuse.py [--seconds 8] [--src DIR]`). Not a test: it prints a table.
For each scenario a fresh server (pinned to core 0 with taskset when there are two cores) gets one probe
member that heartbeats every 20 ms from this process (pinned to core 1), while one abuser runs:

  quiet         nothing else (the floor);
  never-reader  one connection pipelining all-topics Metadata requests (200 topics) and never reading;
  flooder       one connection pipelining the same requests as fast as it can while reading every answer;
  slowloris     300 connections sending one byte of a request per second;
  conn-flood    2000 connections opened as fast as possible from 127.0.0.2 and held.

Reported: the probe's heartbeat p50/p99/max over the window, heartbeats answered, and the server's RSS before
and after. `--src DIR` runs the server from another checkout of this repository (a `git archive` of an older
commit, say) so the same bench measures the code before a change: see bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.abusers import (  # noqa: E402 - after the path set-up
    ConnectionFlood,
    FastFlooder,
    NeverReader,
    Probe,
    Slowloris,
    rss_mb,
)

TASKSET = shutil.which("taskset")
TWO_CORES = (os.cpu_count() or 1) > 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def namespace_for(src: Path, tmp: str) -> str:
    """A `groupcoord` package whose sub-packages are `src`'s folders (the pyproject package-dir mapping)."""
    pkg = Path(tmp) / "ns" / "groupcoord"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name in ("protocol", "server", "assignors", "pipeline"):
        (pkg / name).symlink_to(src.resolve() / name)
    return str(pkg.parent)


def start_server(tmp: str, topics: int, src: Path | None) -> tuple[subprocess.Popen, int]:
    port = free_port()
    argv = [
        sys.executable, "-m", "groupcoord.server", "serve", "--host", "127.0.0.1", "--port", str(port),
        "--data-dir", os.path.join(tmp, "data"), "--group-initial-rebalance-delay-ms", "0",
        "--log-level", "error", *(a for i in range(topics) for a in ("--topic", f"topic-{i}:4")),
    ]  # fmt: skip
    if TASKSET and TWO_CORES:
        argv = [TASKSET, "-c", "0", *argv]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = namespace_for(src, tmp)
    log = open(os.path.join(tmp, "server.log"), "wb")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: see {tmp}/server.log")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not listen")


def make_abuser(kind: str, port: int):  # type: ignore[no-untyped-def]
    host = "127.0.0.1"
    return {
        "quiet": lambda: None,
        "never-reader": lambda: NeverReader(host, port),
        "flooder": lambda: FastFlooder(host, port),
        "slowloris": lambda: Slowloris(host, port, count=300, every=1.0),
        "conn-flood": lambda: ConnectionFlood(host, port, count=2000, source="127.0.0.2"),
    }[kind]()


def run(kind: str, seconds: float, topics: int, src: Path | None) -> dict:
    tmp = tempfile.mkdtemp(prefix=f"bench-abuse-{kind}-")
    proc, port = start_server(tmp, topics, src)
    try:
        probe = Probe("127.0.0.1", port, "probe", interval=0.02, session_ms=30000)
        probe.start()
        if not probe.ready.wait(30) or probe.failure is not None:
            raise RuntimeError(f"probe could not join: {probe.failure}")
        time.sleep(0.5)
        rss0 = rss_mb(proc.pid)
        probe.reset()
        abuser = make_abuser(kind, port)
        if abuser is not None:
            abuser.start()
        time.sleep(seconds)
        rss1 = rss_mb(proc.pid)
        answered = len(probe.latencies)
        pending = probe.pending_since
        stall = (
            time.perf_counter() - pending if pending is not None else 0.0
        )  # unanswered at the window's end
        probe.stop_event.set()
        if abuser is not None:
            abuser.stop()
        probe.join(60)
        lat = sorted(probe.latencies[:answered]) or [0.0]
        return {
            "scenario": kind,
            "heartbeats": answered,
            "expected": int(seconds / 0.02),
            "errors": sorted({e for e in probe.errors if e}),
            "p50_ms": lat[len(lat) // 2] * 1000,
            "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000,
            "max_ms": max(lat[-1], stall) * 1000,
            "unanswered_ms": stall * 1000,
            "rss_before_mb": rss0,
            "rss_after_mb": rss1,
            "probe_failed": repr(probe.failure) if probe.failure else "",
            "abuser_sent": getattr(abuser, "sent", 0),
        }
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="abuse window per scenario (default 8)")
    parser.add_argument("--topics", type=int, default=200, help="topics listed by each Metadata answer")
    parser.add_argument("--src", type=Path, default=None, help="run the server from this checkout instead")
    parser.add_argument(
        "--scenarios", default="quiet,never-reader,flooder,slowloris,conn-flood", help="comma-separated"
    )
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    if TWO_CORES and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {1})
    label = str(args.src) if args.src else "this checkout"
    started = time.monotonic()
    print(
        f"abuse bench: server from {label}; {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        flush=True,
    )
    print("| scenario | probe heartbeats | p50 | p99 | max | server RSS | notes |")
    print("|---|---|---|---|---|---|---|")
    results = []
    for kind in args.scenarios.split(","):
        r = run(kind, args.seconds, args.topics, args.src)
        results.append(r)
        note = f"probe: {r['probe_failed']}" if r["probe_failed"] else ""
        if r["unanswered_ms"]:
            note += f" a heartbeat was still unanswered after {r['unanswered_ms']:.0f} ms at the window's end"
        if r["errors"]:
            note += f" errors {r['errors']}"
        if r["abuser_sent"]:
            note += f" abuser sent {r['abuser_sent']} requests"
        print(
            f"| {kind} | {r['heartbeats']} of {r['expected']} | {r['p50_ms']:.2f} ms | {r['p99_ms']:.2f} ms "
            f"| {r['max_ms']:.1f} ms | {r['rss_before_mb']:.0f} → {r['rss_after_mb']:.0f} MB | {note.strip()} |",
            flush=True,
        )
    print(
        f"\n- total {time.monotonic() - started:.0f} s; loadavg {Path('/proc/loadavg').read_text().split()[:3]}"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
