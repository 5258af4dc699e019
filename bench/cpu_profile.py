"""Where the server's CPU goes per request: a sampling profile of `groupcoord serve` under the heartbeat (or
OffsetCommit) load of `bench/loadgen.py`, printed as µs of server CPU per request by function and by layer.

Not a test. `python bench/cpu_profile.py [--scenario heartbeat|commit|consumer-group] [--duration 10] [--top 25]`, or
`make bench-profile`. The server runs pinned to core 0 and the load generator to core 1 (as in
`bench/coordinator.py`); py-spy (PyPI; needs ptrace rights, so root or CAP_SYS_PTRACE) samples the server's
Python and native stacks (`--native`, so time in uvloop/libuv and the kernel's socket calls is seen as such)
for the measured window. Each sample is charged to the innermost frame that is ours (or to the library /
event loop layer it is in); the per-request figure is that share of the server's measured CPU seconds
divided by the requests answered in the window.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from coordinator import GEN_CORE, PY, Server, loadavg, pinned  # noqa: E402

EVENT_LOOP = "event loop and socket syscalls (uvloop, libuv, kernel)"
#: (layer, fragments of a Python frame's file) tried in order on the innermost Python frame of a sample
LAYERS = (
    ("protocol/: decode and encode", ("protocol/",)),
    ("construct's compiled codecs", ("(<string>", "construct/")),
    ("server/net/network.py: framing, writes", ("server/net/network.py",)),
    ("server/net/dispatch.py: routing, version checks", ("server/net/dispatch.py",)),
    ("server/apis/: handlers", ("server/apis/",)),
    ("server/runtime.py, timers.py: mailbox, timers", ("server/runtime.py", "server/timers.py")),
    ("server/coordinator/: the state machine", ("server/coordinator/",)),
    ("server/ops/: metrics", ("server/ops/",)),
    ("other server code", ("server/",)),
    ("asyncio (Python side)", ("asyncio/",)),
    ("structlog / logging", ("structlog/", "logging/")),
)
UV_FRAMES = ("(loop.c:", "(core.c:", "(stream.c:", "(linux.c:", "(handles", "(uv-common", "(tcp.c:", "uv__")


#: a sample in one of these is a thread waiting (a worker on its queue, the loop in epoll), not CPU spent
IDLE_FRAMES = ("PyThread_acquire_lock_timed", "epoll_wait", "epoll_pwait", "pthread_cond_wait", "sem_wait")


def is_idle(stack: tuple[str, ...]) -> bool:
    return any(f in frame for frame in stack[-6:] for f in IDLE_FRAMES)


def is_python(frame: str) -> bool:
    return ".py:" in frame or "(<string>" in frame


def layer_of(stack: list[str]) -> str:
    """Charge a sample to its innermost frame that is Python code (by file) or the event loop (uvloop's C and
    libuv, with the kernel calls under them); C frames of the interpreter and libc are charged upwards."""
    for frame in reversed(stack):
        if is_python(frame):
            for name, fragments in LAYERS:
                if any(f in frame for f in fragments):
                    return name
            return "other Python code"
        if any(f in frame for f in UV_FRAMES):
            return EVENT_LOOP
    return "interpreter, GC, other"


def our_function(stack: list[str]) -> str:
    """The innermost Python frame (`Dispatcher.dispatch (server/dispatch.py:174)`), or the event loop."""
    for frame in reversed(stack):
        if is_python(frame):
            return frame
        if any(f in frame for f in UV_FRAMES):
            return EVENT_LOOP
    return stack[-1] if stack else "?"


def parse_raw(path: Path) -> collections.Counter[tuple[str, ...]]:
    out: collections.Counter[tuple[str, ...]] = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            out[tuple(stack.split(";"))] += int(count)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=("heartbeat", "commit", "consumer-group"), default="heartbeat")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument(
        "--rate", type=int, default=250, help="py-spy samples per second (each pauses the server briefly)"
    )
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument(
        "--partitions", type=int, default=100, help="partitions per OffsetCommit (commit scenario)"
    )
    args = ap.parse_args()
    spy = shutil.which("py-spy") or str(ROOT / ".venv" / "bin" / "py-spy")
    if not os.path.exists(spy):
        sys.exit("py-spy not found: pip install py-spy (it is in the dev extra)")
    out = Path(tempfile.mkdtemp(prefix="groupcoord-profile-")) / "stacks.txt"
    with Server("groupcoord", None) as srv:
        if args.scenario == "commit":  # OffsetCommit answers UNKNOWN_TOPIC_OR_PARTITION for a missing topic
            import asyncio

            from kafka import create_topic  # bench/kafka.py

            asyncio.run(create_topic(srv.port, "bench", max(100, args.partitions)))
        load = ["heartbeat", "--connections", "64", "--depth", "16"]
        if args.scenario == "commit":
            load = ["heartbeat", "--commit", "--connections", "64", "--depth", "4"]
            load += ["--partitions", str(args.partitions), "--groups", "64"]
        elif args.scenario == "consumer-group":  # KIP-848 steady state (one member per group)
            load = ["heartbeat", "--consumer-group", "--connections", "64", "--depth", "16"]
        argv = pinned(GEN_CORE, [PY, str(ROOT / "bench" / "loadgen.py"), *load])
        argv += ["--port", str(srv.port), "--pid", str(srv.pid), "--duration", str(args.duration + 2)]
        argv += ["--warmup", "1", "--timeout", "120"]
        gen = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(2.5)  # joined and warmed up
        subprocess.run(
            [spy, "record", "--pid", str(srv.pid), "--duration", str(int(args.duration)), "--rate",
             str(args.rate), "--format", "raw", "--output", str(out), "--native"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        stdout, stderr = gen.communicate(timeout=300)
        if gen.returncode != 0:
            sys.exit(f"loadgen failed: {stderr.decode()[-2000:]}")
        import json

        result = json.loads(stdout.decode().strip().splitlines()[-1])
    stacks = parse_raw(out)
    idle = sum(n for st, n in stacks.items() if is_idle(st))
    stacks = collections.Counter({st: n for st, n in stacks.items() if not is_idle(st)})
    total = sum(stacks.values()) or 1
    us_per_req = result["cpu_s"] / max(1, result["requests"]) * 1e6
    layers: collections.Counter[str] = collections.Counter()
    funcs: collections.Counter[str] = collections.Counter()
    for stack, n in stacks.items():
        layers[layer_of(list(stack))] += n
        funcs[our_function(list(stack))] += n
    print(f"profile of {args.scenario}: {result['requests']:,} requests, {result['per_s'] / 1000:.1f}k/s, "
          f"server CPU {result['cpu_s']:.2f} s -> {us_per_req:.2f} µs per request; {total:,} busy samples "
          f"({idle:,} idle dropped); "
          f"loadavg {loadavg()}")  # fmt: skip
    print(f"\n{'layer (innermost frame)':58} {'share':>7} {'µs/req':>8}")
    for name, n in layers.most_common():
        print(f"{name:58} {n / total:7.1%} {us_per_req * n / total:8.2f}")
    print(f"\n{'innermost frame of ours':90} {'share':>7} {'µs/req':>8}")
    for name, n in funcs.most_common(args.top):
        print(f"{name[:90]:90} {n / total:7.1%} {us_per_req * n / total:8.2f}")
    print(f"\nraw stacks: {out}")


if __name__ == "__main__":
    main()
