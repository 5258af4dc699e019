"""Issue 27 items 3 and 6: an exactly-once consume-transform-produce loop (aiokafka's transactional producer
and consumer) over three nodes survives kill -9 of its **group** coordinator's node mid-loop: every input
record appears in the output topic exactly once for a read_committed reader.

The group's coordinator and the transactional id's coordinator are different nodes, so the kill takes the
group (its offsets, pending transactional offsets, the consumer's membership) and two partitions' leadership,
not the transaction. The loop: getmany, begin, produce, send_offsets_to_transaction (TxnOffsetCommit to the
group's coordinator, which is where the dead node bites), commit; on an error abort and rewind to the
committed offsets. The new owner of the group's shard loads the group Stable and its offsets; the
transaction coordinator completes the transactional offsets there with a forwarded marker.

librdkafka 2.16 is not used here: its send_offsets_to_transaction waits past its timeout for a group
coordinator whose broker died (docs/cluster.md)."""

from __future__ import annotations

import asyncio
import logging
import time

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError, ProducerFenced
from aiokafka.structs import OffsetAndMetadata

from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import fetched_offset, shard_owner, start_nodes, wait_balanced
from tests.cluster.test_eos_failover import produce_input, txn_log, wait_led
from tests.cluster.test_transactions import read_all
from tests.integration.helpers import stop_aiokafka

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

TID = "eos-group-loop"
RECORDS = 300


class Loop:
    """The exactly-once loop; `committed` counts the input records of committed transactions."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.committed = 0
        self.events: list[str] = []  # the client errors met, for the failure message
        self.deadline = time.monotonic() + 170

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(
            "in",
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            session_timeout_ms=30_000,
        )
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=TID, acks="all")
        await consumer.start()
        await producer.start()
        try:
            while self.committed < RECORDS:
                assert time.monotonic() < self.deadline, f"only {self.committed} of {RECORDS} committed"
                batch = await consumer.getmany(timeout_ms=1000, max_records=25)
                if not any(batch.values()):
                    continue
                n = sum(len(msgs) for msgs in batch.values())
                try:
                    async with producer.transaction():  # aborts on an exception
                        for tp, msgs in batch.items():
                            for m in msgs:
                                await producer.send("out", b"out-" + m.value, partition=tp.partition)
                        offsets = {
                            tp: OffsetAndMetadata(msgs[-1].offset + 1, "") for tp, msgs in batch.items()
                        }
                        await producer.send_offsets_to_transaction(offsets, self.group)
                    self.committed += n
                except ProducerFenced:
                    raise
                except KafkaError as e:
                    self.events.append(f"{self.committed}: {e!r}")
                    await self._rewind(consumer)
        finally:
            await producer.stop()
            await stop_aiokafka(consumer)

    async def _rewind(self, consumer: AIOKafkaConsumer) -> None:
        """Back to the committed offsets: the aborted transaction's records are processed again."""
        for tp in consumer.assignment():
            offset = await fetched_offset(consumer, tp)
            if offset is None:
                await consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, offset)


async def test_exactly_once_loop_survives_kill_of_its_group_coordinator(server_factory, pg_url: str) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "in:3", "--topic", "out:3")
    await wait_balanced(pg_url, list(nodes))
    await wait_led(pg_url)
    txn_owner = await shard_owner(pg_url, shard_of(TID, 50))
    owners = {f"eos-g-{i}": await shard_owner(pg_url, shard_of(f"eos-g-{i}", 50)) for i in range(20)}
    group = next(g for g, owner in owners.items() if owner not in (None, txn_owner))
    victim = owners[group]
    assert victim in nodes and txn_owner in nodes
    bootstrap = nodes[txn_owner].bootstrap  # survives
    await asyncio.to_thread(produce_input, bootstrap)
    loop = Loop(bootstrap, group)
    task = asyncio.create_task(loop.run())
    deadline = time.monotonic() + 120
    while loop.committed < 60 and not task.done():
        assert time.monotonic() < deadline, "the loop committed nothing"
        await asyncio.sleep(0.05)
    nodes[victim].kill()  # kill -9 of the group's coordinator, mid-loop
    at_kill = loop.committed
    assert at_kill < RECORDS, "the loop ended before the kill"
    try:
        await asyncio.wait_for(asyncio.shield(task), 200)
    except BaseException:
        print(loop.committed, loop.events, *[txn_log(n) for n in nodes.values()], sep="\n")
        task.cancel()
        raise
    assert loop.committed == RECORDS, loop.events
    print(f"committed {at_kill} before the kill; errors met after it: {loop.events}")
    assert await shard_owner(pg_url, shard_of(group, 50)) not in (None, victim)  # the group moved
    out = await asyncio.to_thread(read_all, bootstrap, "out", 3, "read_committed")
    assert sorted(out) == sorted(b"out-r%d" % i for i in range(RECORDS)), loop.events  # exactly once
    # and the transactional offsets reached the group's new coordinator: the input's ends, durably
    conn = await asyncpg.connect(pg_url)
    try:
        rows = await conn.fetch("SELECT partition, committed_offset FROM offsets WHERE group_id = $1", group)
        pending = await conn.fetchval("SELECT count(*) FROM pending_offsets WHERE group_id = $1", group)
    finally:
        await conn.close()
    assert sorted((r[0], r[1]) for r in rows) == [(p, RECORDS // 3) for p in range(3)]
    assert pending == 0
