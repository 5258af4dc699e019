"""Server CPU per request over the wire, without a profiler: the classic Heartbeat (64 connections in 8
groups) and the steady-state ConsumerGroupHeartbeat (64 one-member groups), alternately, 16 in flight per
connection (issue 28: "the same budget" for both). Not a test: it prints one line per run.

    python bench/heartbeat_wire.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coordinator import GEN_CORE, PY, ROOT, Server, pinned

MODES = (("Heartbeat", ["--groups", "8"]), ("ConsumerGroupHeartbeat, steady state", ["--consumer-group"]))


def run(mode: list[str]) -> dict:
    with Server("groupcoord", None) as srv:
        argv = pinned(GEN_CORE, [PY, str(ROOT / "bench" / "loadgen.py"), "heartbeat", *mode])
        argv += ["--connections", "64", "--depth", "16", "--port", str(srv.port), "--pid", str(srv.pid)]
        argv += ["--duration", "4", "--warmup", "1", "--timeout", "120"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    for _ in range(ap.parse_args().rounds):
        for name, mode in MODES:
            r = run(mode)
            us = r["cpu_s"] / max(1, r["requests"]) * 1e6
            print(
                f"{name}: {us:.2f} µs of server CPU each, {r['requests'] / r['cpu_s'] / 1000:.0f}k per "
                f"server-CPU-s, errors {r['errors'] or 'none'}; loadavg {os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
