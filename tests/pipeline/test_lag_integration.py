"""Lag analytics from a real run: aiokafka produces and consumes against the server, which journals lag
snapshots; the report's `lag` and `rebalance_lag` tables and summary then show what happened."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from groupcoord.pipeline.job import run_job

pytestmark = [pytest.mark.integration, pytest.mark.spark]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

GROUP = "g-lag"
TOPIC = "payments"
PARTITIONS = 2
INTERVAL_MS = 200
BURST = 1000


def _consumer(bootstrap: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )


async def _settled(consumers: list[AIOKafkaConsumer], timeout: float = 30) -> None:
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


async def _drain(consumers: list[AIOKafkaConsumer], total: int, timeout: float = 30) -> None:
    """Consume and commit until `total` messages were read by the consumers together."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    seen = 0
    while seen < total:
        for c in consumers:
            batch = await c.getmany(timeout_ms=100)
            seen += sum(len(v) for v in batch.values())
            if batch:
                await c.commit()
        if loop.time() > deadline:
            raise AssertionError(f"read {seen} of {total}")


async def _produce(bootstrap: str, n: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(n):
            await producer.send(TOPIC, b"x" * 10, partition=i % PARTITIONS)
        await producer.flush()
    finally:
        await producer.stop()


async def test_report_shows_lag_over_time_and_the_rebalance_that_caused_a_spike(
    server_factory: Any, spark: Any, tmp_path: Path
) -> None:
    srv = server_factory("--journal-lag-snapshot-interval-ms", str(INTERVAL_MS))
    bootstrap = srv.bootstrap
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        await admin.close()

    await _produce(bootstrap, 100)
    c1 = _consumer(bootstrap)
    await c1.start()
    await _settled([c1])
    await _drain([c1], 100)  # committed = log end: lag 0
    await asyncio.sleep(3 * INTERVAL_MS / 1000)
    c2 = _consumer(bootstrap)
    await c2.start()  # rebalance (new_member)
    await _settled([c1, c2])
    await _produce(bootstrap, BURST)  # nobody polls: the lag stays at BURST over several snapshots
    await asyncio.sleep(3 * INTERVAL_MS / 1000)
    await _drain([c1, c2], BURST)  # caught up: lag 0 again
    await asyncio.sleep(3 * INTERVAL_MS / 1000)
    for c in (c2, c1):
        await c.stop()
    srv.stop()  # SIGTERM flushes the journal

    journal = [
        json.loads(ln)
        for f in sorted((srv.data_dir / "journal").glob("*.jsonl"))
        for ln in f.read_text().splitlines()
        if ln
    ]
    snaps = [e for e in journal if e["event"] == "lag_snapshot" and e["group"] == GROUP]
    assert snaps and set(snaps[-1]["offsets"]) == {f"{TOPIC}-{p}" for p in range(PARTITIONS)}
    assert all(
        v == {"committed": 50 + BURST // 2, "log_end": 50 + BURST // 2} for v in snaps[-1]["offsets"].values()
    )

    out = tmp_path / "report"
    result = run_job(spark, srv.data_dir, out)
    lag = (
        spark.read.parquet(str(out / "tables" / "lag"))
        .filter(f"group = '{GROUP}'")
        .orderBy("ts_ms")
        .collect()
    )
    assert len(lag) == len(snaps)
    series = [r["lag"] for r in lag]
    assert max(series) == BURST and series[-1] == 0 and BURST in series[series.index(0) :]
    rl = spark.read.parquet(str(out / "tables" / "rebalance_lag")).filter(f"group = '{GROUP}'")
    rows = rl.orderBy("started_ms").collect()
    spikes = [r for r in rows if r["lag_spike"]]
    assert len(spikes) == 1, rows
    spike = spikes[0]
    # the rebalance c2's join started: lag 0 before, the burst after, caught up after the drain
    assert (spike["cause"], spike["lag_before"], spike["peak_lag"]) == ("new_member", 0, BURST)
    assert spike["time_to_catch_up_ms"] is not None and spike["time_to_catch_up_ms"] > 0
    g = result.summary["per_group"][GROUP]
    assert (g["lag_peak"], g["rebalances_with_lag_spike"]) == (BURST, 1)
    assert result.summary["totals"]["lag_snapshots"] >= len(snaps)
    assert (out / "lag.png").stat().st_size > 0 and "lag.png" in (out / "report.html").read_text()
