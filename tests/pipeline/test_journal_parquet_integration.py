"""End to end: a real server rotating a small journal rolls each closed file into Parquet while aiokafka
consumers rebalance; the report over those segments equals the report over the same events as JSON lines."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

pytest.importorskip("pyarrow")

from groupcoord.server.journal.cli import segments
from groupcoord.server.journal.roll import read_segment, segment_start_ms
from tests.pipeline.compare import summary, table_rows

pytestmark = [pytest.mark.integration, pytest.mark.spark]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

TOPIC = "rolled"
PARTITIONS = 4


async def _settled(consumers: list[AIOKafkaConsumer], timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        owned = [tp for c in consumers for tp in c.assignment()]
        if len(owned) == PARTITIONS and len(set(owned)) == PARTITIONS:
            return
        if loop.time() > deadline:
            raise AssertionError(f"consumers did not settle: {owned}")
        await asyncio.sleep(0.1)


async def _wait_for(pred: Any, timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def test_rotated_journal_files_become_parquet_and_report_the_same_as_json_lines(
    server_factory: Any, spark: Any, tmp_path: Path
) -> None:
    server = server_factory("--journal-max-bytes", "1500", "--journal-parquet", "on")
    journal = server.data_dir / "journal"
    admin = AIOKafkaAdminClient(bootstrap_servers=server.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        await admin.close()
    consumers = []
    for group in ("g-rolled-a", "g-rolled-b"):
        for _ in range(2):  # each join and leave rebalances the group
            c = AIOKafkaConsumer(
                TOPIC,
                bootstrap_servers=server.bootstrap,
                group_id=group,
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
                enable_auto_commit=False,
            )
            await c.start()
            consumers.append(c)
        await _settled(consumers[-2:])
        await consumers[-1].stop()
        await _settled(consumers[-2:-1])
    await _wait_for(lambda: len(list(journal.glob("*.parquet"))) >= 2, 60, "rolled Parquet segments")
    for c in consumers[::2]:
        await c.stop()
    await asyncio.sleep(0.5)  # the server journals the last leaves
    server.stop()  # SIGTERM: the current file is not rolled (the next start does it)

    parquet = sorted(journal.glob("*.parquet"))
    jsonl = sorted(journal.glob("*.jsonl"))
    assert not [p for p in jsonl if p.with_suffix(".parquet").exists()], "a rolled JSONL file was kept"
    assert {segment_start_ms(p) for p in parquet + jsonl} == {segment_start_ms(parquet[0])}  # one process
    # every event the process wrote is in exactly one segment: seq runs 1..N with no gap
    events = [e for p in segments(journal) for e in read_segment(p)]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["v"] for e in events} == {2}

    # the same events as JSON lines only (one file per segment, as `groupcoord journal cat` prints them)
    copy = tmp_path / "jsonl-only"
    (copy / "journal").mkdir(parents=True)
    for p in segments(journal):
        lines = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in read_segment(p))
        (copy / "journal" / p.with_suffix(".jsonl").name).write_text(lines)

    from groupcoord.pipeline.job import TABLES, run_job

    mixed = run_job(spark, server.data_dir, tmp_path / "out-parquet", html=False)
    plain = run_job(spark, copy, tmp_path / "out-jsonl", html=False)
    assert mixed.events == plain.events == len(events)
    assert mixed.summary["totals"]["rebalances"] >= 6
    for t in TABLES:
        assert table_rows(spark, mixed.tables[t]) == table_rows(spark, plain.tables[t]), t
    s_mixed, s_plain = summary(mixed.out), summary(plain.out)
    assert s_mixed.pop("data_dir") != s_plain.pop("data_dir")
    assert s_mixed == s_plain
    assert s_mixed["journal_versions"] == [2]
