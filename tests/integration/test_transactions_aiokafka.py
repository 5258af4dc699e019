"""Exactly-once with aiokafka's transactional producer against groupcoord: the consume-transform-produce loop
with send_offsets_to_transaction, commit and abort, read_committed vs read_uncommitted consumers, RequireStable
OffsetFetch while offsets are pending, zombie fencing, and the transaction timeout."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError, ProducerFenced
from aiokafka.structs import OffsetAndMetadata

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import offset_fetch as of
from tests.integration.helpers import RawClient, wait_for
from tests.integration.names import unique

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


async def produce_plain(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await p.start()
    try:
        for v in values:
            await p.send_and_wait(topic, v, partition=0)
    finally:
        await p.stop()


async def read_all(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    """Everything a fresh consumer with `isolation` reads from the start up to the partition's end as that
    isolation sees it (the last stable offset for read_committed, the high watermark otherwise): a position
    to reach, not a quiet spell, which a loaded machine can fake."""
    c = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await c.start()
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    await c.seek_to_beginning(tp)
    got: list[bytes] = []
    try:
        end = (await c.end_offsets([tp]))[tp]
        deadline = time.monotonic() + 60
        while await c.position(tp) < end:
            assert time.monotonic() < deadline, f"{topic}: at {await c.position(tp)} of {end} after 60 s"
            batch = await c.getmany(tp, timeout_ms=200)
            for msgs in batch.values():
                got += [m.value for m in msgs]
    finally:
        await c.stop()
    return got


def fetch_stable(srv, group: str, topic: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(offset, error) of partition 0 from OffsetFetch v7 with RequireStable, from server `srv` (its own
    subprocess or the shared one of GROUPCOORD_BOOTSTRAP); (-1, the group-level error) when the answer has
    no topics (a restarted server still loading says COORDINATOR_LOAD_IN_PROGRESS for the whole group)."""
    raw = RawClient(srv.host, srv.port)
    try:
        req = of.OffsetFetchRequest(
            group_id=group,
            topics=(of.OffsetFetchRequestTopic(name=topic, partition_indexes=(0,)),),
            require_stable=True,
        )
        resp = raw.request(9, 7, req)
        if not resp.topics:
            return -1, resp.error_code
        p = resp.topics[0].partitions[0]
        return p.committed_offset, p.error_code
    finally:
        raw.close()


async def test_exactly_once_loop_commits_output_and_offsets_together_and_abort_hides_both(
    groupcoord_server,
) -> None:
    srv = groupcoord_server
    t_in, t_out, group = unique("eos-in"), unique("eos-out"), unique("eos")
    await produce_plain(srv.bootstrap, t_in, [f"in-{i}".encode() for i in range(10)])
    consumer = AIOKafkaConsumer(
        t_in,
        bootstrap_servers=srv.bootstrap,
        group_id=group,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    producer = AIOKafkaProducer(bootstrap_servers=srv.bootstrap, transactional_id=unique("eos-app"))
    await consumer.start()
    await producer.start()
    try:
        got: list = []
        while len(got) < 10:
            for msgs in (await consumer.getmany(timeout_ms=500)).values():
                got += msgs
        tp = TopicPartition(t_in, 0)
        async with producer.transaction():  # the committed transaction
            for m in got:
                await producer.send_and_wait(t_out, m.value.replace(b"in", b"out"), partition=0)
            await producer.send_offsets_to_transaction({tp: OffsetAndMetadata(got[-1].offset + 1, "")}, group)
        assert fetch_stable(srv, group, t_in) == (10, 0)

        await producer.begin_transaction()  # the aborted one
        for i in range(5):
            await producer.send_and_wait(t_out, b"doomed-%d" % i, partition=0)
        await producer.send_offsets_to_transaction({tp: OffsetAndMetadata(99, "")}, group)
        assert fetch_stable(srv, group, t_in)[1] == ErrorCode.UNSTABLE_OFFSET_COMMIT
        pending_view = await read_all(srv.bootstrap, t_out, "read_committed")
        assert pending_view == [f"out-{i}".encode() for i in range(10)]  # stops at the LSO
        await producer.abort_transaction()
        assert fetch_stable(srv, group, t_in) == (10, 0)
    finally:
        await producer.stop()
        await consumer.stop()
    committed = await read_all(srv.bootstrap, t_out, "read_committed")
    uncommitted = await read_all(srv.bootstrap, t_out, "read_uncommitted")
    assert committed == [f"out-{i}".encode() for i in range(10)]
    assert uncommitted == committed + [b"doomed-%d" % i for i in range(5)]


async def test_second_producer_with_the_same_transactional_id_fences_the_zombie(groupcoord_server) -> None:
    srv = groupcoord_server
    t_out, txid = unique("fence-out"), unique("fenced-app")
    zombie = AIOKafkaProducer(bootstrap_servers=srv.bootstrap, transactional_id=txid)
    await zombie.start()
    await zombie.begin_transaction()
    await zombie.send_and_wait(t_out, b"zombie", partition=0)
    successor = AIOKafkaProducer(bootstrap_servers=srv.bootstrap, transactional_id=txid)
    await successor.start()  # InitProducerId aborts the zombie's transaction and bumps the epoch
    try:
        async with successor.transaction():
            await successor.send_and_wait(t_out, b"successor", partition=0)
        with pytest.raises((ProducerFenced, KafkaError)):
            await zombie.send_and_wait(t_out, b"zombie-again", partition=0)
            await zombie.commit_transaction()
    finally:
        await successor.stop()
        with pytest.raises(Exception):  # noqa: B017 - a fenced producer may fail to stop cleanly
            await asyncio.wait_for(zombie.stop(), 5)
            raise RuntimeError("stopped")
    assert await read_all(srv.bootstrap, t_out, "read_committed") == [b"successor"]
    assert await read_all(srv.bootstrap, t_out, "read_uncommitted") == [b"zombie", b"successor"]


async def test_transaction_past_its_timeout_is_aborted_and_its_producer_fenced(server_factory) -> None:
    srv = server_factory("--transaction-abort-timed-out-transaction-cleanup-interval-ms", "200")
    p = AIOKafkaProducer(
        bootstrap_servers=srv.bootstrap, transactional_id="slow-app", transaction_timeout_ms=1000
    )
    await p.start()
    try:
        await p.begin_transaction()
        await p.send_and_wait("slow-out", b"too-late", partition=0)
        await wait_for(  # the coordinator aborts it (epoch bumped); EndTxn waits for that abort to finish
            lambda: "aborting timed-out transaction" in srv.log_path.read_text(errors="replace"),
            60,
            "the coordinator to abort the timed-out transaction",
        )
        assert await read_all(srv.bootstrap, "slow-out", "read_committed") == []
        with pytest.raises(KafkaError):
            await p.commit_transaction()
    finally:
        with pytest.raises(Exception):  # noqa: B017
            await asyncio.wait_for(p.stop(), 5)
            raise RuntimeError("stopped")
    assert await read_all(srv.bootstrap, "slow-out", "read_uncommitted") == [b"too-late"]
