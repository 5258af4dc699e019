"""Nothing acknowledged is lost: records and committed offsets survive SIGTERM and SIGKILL restarts."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration.helpers import HeartbeatCounter, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


@pytest.fixture(params=["disk", "postgres"])
def durable_server(request: pytest.FixtureRequest, server_factory):  # type: ignore[no-untyped-def]
    """The server on each durable store: SQLite (`disk`) and PostgreSQL (`--storage postgresql://…`, a fresh
    database on the session's throw-away PostgreSQL). Topic data is in segment files either way."""
    if request.param == "postgres":
        return server_factory("--storage", request.getfixturevalue("pg_url"))
    return server_factory()


async def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int = 2, **kw) -> None:  # type: ignore[no-untyped-def]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **kw)
    await producer.start()
    try:
        futures = [await producer.send(topic, v, partition=i % partitions) for i, v in enumerate(values)]
        await asyncio.gather(*futures)  # every send acknowledged
    finally:
        await producer.stop()


async def consume(bootstrap: str, topic: str, group: str | None, count: int, commit: bool,
                  timeout: float = 30) -> list[bytes]:  # fmt: skip
    c = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
        enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
    )  # fmt: skip
    await c.start()
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            batch = await c.getmany(timeout_ms=300, max_records=count - len(got))
            for msgs in batch.values():
                got += [m.value for m in msgs]
        if commit:
            await c.commit()
    finally:
        await c.stop()
    return got


async def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
async def test_acknowledged_records_and_commits_survive_a_restart(durable_server, how: str) -> None:
    srv = durable_server
    await create(srv.bootstrap, "ledger", 2)
    values = [f"record-{i:04d}".encode() for i in range(300)]
    await produce(srv.bootstrap, "ledger", values)
    first = await consume(srv.bootstrap, "ledger", "resumer", 120, commit=True)
    assert len(first) == 120
    if how == "sigterm":
        assert srv.stop() == 0
    else:
        srv.kill()  # right after the acknowledged writes and the acknowledged commit
    srv.start()
    # every acknowledged record is there
    everything = await consume(srv.bootstrap, "ledger", None, 300, commit=False)
    assert sorted(everything) == sorted(values)
    # the group resumes exactly after its commits: nothing consumed twice, nothing skipped
    rest = await consume(srv.bootstrap, "ledger", "resumer", 180, commit=True)
    assert sorted(first + rest) == sorted(values)


async def test_committed_offsets_survive_sigkill_and_are_fetched_back(durable_server) -> None:
    srv = durable_server
    await create(srv.bootstrap, "marks", 3)
    c = AIOKafkaConsumer(
        "marks", bootstrap_servers=srv.bootstrap, group_id="marker", enable_auto_commit=False
    )
    await c.start()
    try:
        await wait_for(lambda: len(c.assignment()) == 3, 30, "the consumer to own all three partitions")
        await c.commit({TopicPartition("marks", p): 1000 + p for p in range(3)})
    finally:
        await c.stop()
    srv.kill()
    srv.start()
    c = AIOKafkaConsumer(
        "marks", bootstrap_servers=srv.bootstrap, group_id="marker", enable_auto_commit=False
    )
    await c.start()
    try:
        for p in range(3):
            assert await c.committed(TopicPartition("marks", p)) == 1000 + p
    finally:
        await c.stop()


async def test_a_torn_tail_on_disk_is_truncated_and_everything_acknowledged_is_served(
    durable_server,
) -> None:
    srv = durable_server
    await create(srv.bootstrap, "torn", 1)
    values = [f"v{i}".encode() for i in range(50)]
    await produce(srv.bootstrap, "torn", values, partitions=1)
    srv.kill()
    segments = sorted((srv.data_dir / "topics" / "torn-0").glob("*.log"))
    assert segments, "the partition has a segment file"
    with open(segments[-1], "ab") as f:  # half a batch header: what a crash mid-append leaves
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x32\x00\x00\x01\x00\x00\x00")
    srv.start()
    got = await consume(srv.bootstrap, "torn", None, 50, commit=False)
    assert sorted(got) == sorted(values)
    await produce(srv.bootstrap, "torn", [b"after"], partitions=1)
    got = await consume(srv.bootstrap, "torn", None, 51, commit=False)
    assert sorted(got) == sorted([*values, b"after"])


async def test_a_consumer_group_keeps_running_across_a_server_restart(durable_server) -> None:
    """A Stable group is reloaded Stable: its members reconnect and keep their generation."""
    srv = durable_server
    await create(srv.bootstrap, "steady", 2)
    c = AIOKafkaConsumer(
        "steady", bootstrap_servers=srv.bootstrap, group_id="steady-g", enable_auto_commit=False,
        session_timeout_ms=10000, heartbeat_interval_ms=300,
    )  # fmt: skip
    await c.start()
    try:
        await wait_for(lambda: len(c.assignment()) == 2, 30, "the consumer to own both partitions")
        heartbeats = HeartbeatCounter(c)
        gen = c._coordinator.generation
        srv.stop()
        heartbeats.ok = 0  # the server is down: only the restarted one can answer from here on
        srv.start()
        # a heartbeat succeeds only for a known member at its generation with no rebalance in progress
        await wait_for(
            lambda: heartbeats.ok >= 2, 30, "two successful heartbeats against the restarted server"
        )
        assert len(c.assignment()) == 2
        assert c._coordinator.generation == gen
    finally:
        await c.stop()


async def test_memory_storage_serves_clients_and_keeps_nothing_across_a_restart(server_factory) -> None:
    """`--storage memory` is documented as not durable: it works, writes no state, and forgets on restart."""
    srv = server_factory("--storage", "memory")
    await create(srv.bootstrap, "ephemeral", 2)
    values = [f"m{i}".encode() for i in range(20)]
    await produce(srv.bootstrap, "ephemeral", values)
    got = await consume(srv.bootstrap, "ephemeral", "mem-g", 20, commit=True)
    assert sorted(got) == sorted(values)
    assert not (srv.data_dir / "state.db").exists()
    assert not (srv.data_dir / "topics").exists()
    srv.stop()
    srv.start()
    admin = AIOKafkaAdminClient(bootstrap_servers=srv.bootstrap)
    await admin.start()
    try:
        groups = await admin.list_consumer_groups()
        assert "mem-g" not in [g[0] for g in groups]
    finally:
        await admin.close()
