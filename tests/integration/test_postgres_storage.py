"""The server on PostgreSQL (`--storage postgresql://…`): what Kafka persists is written, heartbeats are not."""

from __future__ import annotations

import asyncio
import logging

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from tests.integration.helpers import HeartbeatCounter, wait_for
from tests.integration.test_durability import create

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


async def test_heartbeats_of_a_stable_group_write_nothing_to_postgresql(server_factory, pg_url: str) -> None:
    srv = server_factory("--storage", pg_url)
    await create(srv.bootstrap, "beats", 2)
    consumers = [
        AIOKafkaConsumer(
            "beats",
            bootstrap_servers=srv.bootstrap,
            group_id="beaters",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=100,
        )
        for _ in range(2)
    ]
    for c in consumers:
        await c.start()
    conn = await asyncpg.connect(pg_url)
    try:
        await wait_for(
            lambda: all(len(c.assignment()) == 1 for c in consumers), 30, "each member to own a partition"
        )
        tp = TopicPartition("beats", 0)
        await next(c for c in consumers if tp in c.assignment()).commit({tp: 7})
        # the completed generation and the commit are in the database
        row = await conn.fetchrow("SELECT xmin::text AS x, value FROM groups WHERE group_id = 'beaters'")
        assert row is not None and '"generation":' in row["value"]
        offsets_before = await conn.fetch("SELECT xmin::text, committed_offset FROM offsets")
        assert [r[1] for r in offsets_before] == [7]
        counters = [HeartbeatCounter(c) for c in consumers]
        await wait_for(lambda: all(h.ok >= 10 for h in counters), 30, "ten heartbeats from each member")
        # twenty successful heartbeats later neither row has a new version: nothing was written
        after = await conn.fetchrow("SELECT xmin::text AS x FROM groups WHERE group_id = 'beaters'")
        assert after is not None and after["x"] == row["x"]
        assert await conn.fetch("SELECT xmin::text, committed_offset FROM offsets") == offsets_before
    finally:
        await conn.close()
        await asyncio.gather(*(c.stop() for c in consumers))


async def test_an_unreachable_database_stops_the_server_with_a_clear_message(server_factory) -> None:
    with pytest.raises(RuntimeError, match="cannot open the state store"):
        server_factory("--storage", "postgresql://nobody@127.0.0.1:1/none")
