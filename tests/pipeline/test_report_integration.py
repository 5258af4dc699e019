"""End to end: real server, aiokafka consumers join and leave, then `groupcoord report` on its journal."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.spark]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

GROUP = "g-report"
TOPIC = "orders"
PARTITIONS = 6


def _groupcoord() -> list[str]:
    exe = Path(sys.executable).with_name("groupcoord")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "groupcoord.server"]


async def _settled(consumers: list[AIOKafkaConsumer], timeout: float = 30) -> None:
    """Every partition owned exactly once by the given consumers, all on one generation."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        owned = [tp for c in consumers for tp in c.assignment()]
        gens = {c._coordinator.generation for c in consumers}
        if len(owned) == PARTITIONS and len(set(owned)) == PARTITIONS and len(gens) == 1:
            return
        if loop.time() > deadline:
            raise AssertionError(f"consumers did not settle: {owned}")
        await asyncio.sleep(0.1)


def _consumer(bootstrap: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        enable_auto_commit=False,
    )


async def test_report_counts_joins_and_leaves(groupcoord_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bootstrap = groupcoord_server.bootstrap
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        await admin.close()

    c1, c2 = _consumer(bootstrap), _consumer(bootstrap)
    await c1.start()
    await _settled([c1])  # rebalance 1 (new_member): first assignment, 6 partitions
    await c2.start()
    await _settled([c1, c2])  # rebalance 2 (new_member): 3 partitions move to c2
    await c2.stop()  # LeaveGroup
    await _settled([c1])  # rebalance 3 (leave): c2's 3 partitions move back to c1
    await c1.stop()  # LeaveGroup: rebalance 4 (leave) ends Empty, no assignment
    groupcoord_server.stop()  # SIGTERM flushes the journal

    data_dir = groupcoord_server.data_dir
    lines = [
        ln for f in sorted((data_dir / "journal").glob("*.jsonl")) for ln in f.read_text().splitlines() if ln
    ]
    out = tmp_path / "report"
    r = subprocess.run(
        [*_groupcoord(), "report", "--data-dir", str(data_dir), "--out", str(out), "--master", "local[2]"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total_events"] == len(lines)
    g = summary["per_group"][GROUP]
    assert (g["members_joined"], g["members_left"], g["members_expired"], g["members_fenced"]) == (2, 2, 0, 0)
    assert g["causes"].get("leave") == 2 and g["causes"].get("new_member", 0) >= 2
    assert g["rebalances"] == sum(g["causes"].values()) >= 4
    assert (g["partitions_moved"], g["partitions_moved_incl_first"]) == (6, 12)
    assert (g["static_rejoins_without_rebalance"], g["skip_assignments"]) == (0, 0)
    assert g["rebalance_p50_ms"] is not None and g["rebalance_p99_ms"] >= g["rebalance_p50_ms"]
    assert (out / "report.html").exists()
    for table in ("rebalances", "member_sessions", "group_summary"):
        assert any((out / "tables" / table).glob("*.parquet"))
