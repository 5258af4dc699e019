"""The web console's cost for a group of 1,000 members: the JSON behind the group page on the server, and the
page's render in a real headless Chromium (issue 29: < 20 ms and < 200 ms).

Not a test: it prints a table. The state is real coordinator state: a `GroupCoordinatorShard` replays a group
record of N members (each assigned partitions of one topic, consumer protocol) and committed offsets for every
partition, over an in-memory `LogManager` holding the topic; the console's own `AdminHttp` + `Console` serve
it on loopback, and Chromium loads `/ui/#/group/...` as a person would. Server time: `views.group` plus
`json.dumps` (what a cache miss costs), median and p95 of `--runs`. Browser time: from the JSON's arrival to
the page laid out (app.js records it in `window.__lastRender`), median of `--loads` page loads.

    python bench/console.py [--members 1000] [--partitions 1000] [--runs 50] [--loads 10] [--no-browser]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import free_port, print_rows  # noqa: E402
from groupcoord.protocol.consumer import (  # noqa: E402
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartitions,
    encode_assignment,
    encode_subscription,
)
from groupcoord.server.console import Console, views  # noqa: E402
from groupcoord.server.coordinator.records import (  # noqa: E402
    GroupMetadataValue,
    GroupRecord,
    MemberMetadataValue,
    OffsetRecord,
    OffsetValue,
)
from groupcoord.server.coordinator.shard import GroupCoordinatorShard  # noqa: E402
from groupcoord.server.log.manager import LogManager  # noqa: E402
from groupcoord.server.ops.http import AdminHttp  # noqa: E402

GROUP, TOPIC = "big-group", "events"


class Source:
    """A `views.ConsoleSource` over a replayed shard and an in-memory log."""

    def __init__(self, machine: GroupCoordinatorShard, logs: LogManager) -> None:
        self.machine, self.logs, self.txn, self.cluster, self.loading = machine, logs, None, None, False

    def console_facts(self) -> dict[str, Any]:
        return {"node_id": 0, "version": "bench", "listeners": [], "connections": 0, "started_ms": 0}


async def build_state(members: int, partitions: int) -> Source:
    logs = LogManager(None, storage="memory")
    await logs.open()
    await logs.create_topic(TOPIC, partitions)
    machine = GroupCoordinatorShard()
    now = int(time.time() * 1000)
    sub = encode_subscription(ConsumerProtocolSubscription(topics=(TOPIC,)))
    per: dict[int, list[int]] = {}
    for p in range(partitions):
        per.setdefault(p % members, []).append(p)
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=7,
        protocol="range",
        leader="member-0000",
        current_state_timestamp=now,
        members=tuple(
            MemberMetadataValue(
                member_id=f"member-{i:04d}",
                group_instance_id=None,
                client_id=f"client-{i:04d}",
                client_host=f"/10.0.{i // 250}.{i % 250}",
                rebalance_timeout_ms=300000,
                session_timeout_ms=45000,
                subscription=sub,
                assignment=encode_assignment(
                    ConsumerProtocolAssignment(
                        assigned_partitions=(TopicPartitions(topic=TOPIC, partitions=tuple(per.get(i, ()))),)
                    )
                ),
            )
            for i in range(members)
        ),
    )
    machine.replay(GroupRecord(GROUP, value))
    for p in range(partitions):
        machine.replay(OffsetRecord(GROUP, TOPIC, p, OffsetValue(p * 10, -1, "", now, -1)))
    machine.finish_load(now)
    return Source(machine, logs)


def server_times(console: Console, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        json.dumps(views.group(console.source, console.timeline, GROUP), separators=(",", ":"))
        out.append((time.perf_counter() - t0) * 1000)
    return out


def serve_in_thread(console: Console, port: int) -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    http = AdminHttp(registry=None, ready=lambda: True, console=console.handle)  # type: ignore[arg-type]
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(http.start("127.0.0.1", port))
        started.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    started.wait(10)
    return loop


def browser_times(port: int, loads: int) -> list[float]:
    sys.path.insert(0, str(ROOT))
    from tests.integration.browser import chromium

    out = []
    with chromium() as driver:
        for i in range(loads):
            driver.get(f"http://127.0.0.1:{port}/ui/?load={i}#/group/{GROUP}")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                r = driver.execute_script("return window.__lastRender || null")
                if r and "group" in r["api"]:
                    out.append(float(r["renderMs"]))
                    break
                time.sleep(0.05)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--loads", type=int, default=10)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    source = asyncio.run(build_state(args.members, args.partitions))
    console = Console(source, cache_ms=0)
    times = sorted(server_times(console, args.runs))
    size = len(json.dumps(views.group(source, console.timeline, GROUP)))
    rows = [
        (
            f"group page JSON, {args.members} members x {args.partitions} partitions: median",
            f"{statistics.median(times):.1f} ms",
        ),
        ("  p95", f"{times[int(len(times) * 0.95) - 1]:.1f} ms"),
        ("  JSON size", f"{size / 1024:.0f} KiB"),
    ]
    if not args.no_browser:
        port = free_port()
        serve_in_thread(console, port)
        render = sorted(browser_times(port, args.loads))
        rows += [
            ("browser: JSON arrival to page laid out, median", f"{statistics.median(render):.0f} ms"),
            ("  max", f"{render[-1]:.0f} ms"),
        ]
    rows.append(("load average (1 min) at the end", f"{os.getloadavg()[0]:.2f}"))
    print_rows("web console (bench/console.py)", rows, width=70)


if __name__ == "__main__":
    main()
