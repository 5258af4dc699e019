"""Transactions survive kill -9: committed transactions stay committed, an ongoing one is aborted after its
timeout once the server is back (markers written, pending offsets dropped), and the id can be used again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from groupcoord.protocol.errors import ErrorCode
from tests.integration.test_transactions_aiokafka import fetch_stable, produce_plain, read_all

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


@pytest.mark.parametrize("storage", ["disk", "postgres"])
async def test_kill_9_mid_transaction_then_restart_aborts_it_after_the_timeout(
    server_factory, storage: str, request: pytest.FixtureRequest
) -> None:
    """On SQLite and on PostgreSQL (`--storage postgresql://…`): transaction state and pending offsets are
    durable in both."""
    extra = ("--storage", request.getfixturevalue("pg_url")) if storage == "postgres" else ()
    srv = server_factory("--transaction-abort-timed-out-transaction-cleanup-interval-ms", "200", *extra)
    await produce_plain(srv.bootstrap, "k-in", [b"1", b"2", b"3"])
    tp = TopicPartition("k-in", 0)
    p = AIOKafkaProducer(
        bootstrap_servers=srv.bootstrap, transactional_id="crash-app", transaction_timeout_ms=1500
    )
    await p.start()
    async with p.transaction():
        await p.send_and_wait("k-out", b"a", partition=0)
        await p.send_offsets_to_transaction({tp: OffsetAndMetadata(3, "")}, "kg")
    await p.begin_transaction()
    await p.send_and_wait("k-out", b"b", partition=0)
    await p.send_offsets_to_transaction({tp: OffsetAndMetadata(99, "")}, "kg")
    assert fetch_stable(srv, "kg", "k-in")[1] == ErrorCode.UNSTABLE_OFFSET_COMMIT
    srv.kill()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(p.stop(), 2)
    srv.start()

    deadline = time.monotonic() + 60
    waiting = (ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    while fetch_stable(srv, "kg", "k-in")[1] in waiting:
        assert time.monotonic() < deadline, "the ongoing transaction was never aborted"
        await asyncio.sleep(0.2)
    assert fetch_stable(srv, "kg", "k-in") == (3, 0)  # the aborted offsets were dropped
    assert await read_all(srv.bootstrap, "k-out", "read_committed") == [b"a"]
    assert await read_all(srv.bootstrap, "k-out", "read_uncommitted") == [b"a", b"b"]

    again = AIOKafkaProducer(bootstrap_servers=srv.bootstrap, transactional_id="crash-app")
    await again.start()
    try:
        async with again.transaction():
            await again.send_and_wait("k-out", b"c", partition=0)
            await again.send_offsets_to_transaction({tp: OffsetAndMetadata(3, "")}, "kg")
    finally:
        await again.stop()
    assert await read_all(srv.bootstrap, "k-out", "read_committed") == [b"a", b"c"]
