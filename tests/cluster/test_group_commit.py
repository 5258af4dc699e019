"""Group commit of cluster mode's appends (issue 27, server/cluster/append_batcher.py), against a real
PostgreSQL: appends of many partitions arriving together share one fenced statement; appends arriving while
a commit is in flight wait and go in the next one (pipelined per partition, beyond the high watermark, so no
reader sees them before their commit); a partition fenced inside a group fails alone; and many idempotent
aiokafka producers against one node get every acknowledged record stored exactly once, at its offset."""

from __future__ import annotations

import asyncio
import logging
import time

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.cluster import partitions
from groupcoord.server.cluster.cluster_log import ClusterLog
from groupcoord.server.storage import PostgresStateStore
from tests.cluster.helpers import start_nodes, stored_batches, wait_partitions_spread
from tests.integration.helpers import stop_aiokafka
from tests.log.log_helpers import decode, make_batch

TOPIC = "gc"
PARTS = 4
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


@pytest.fixture
async def leader(pg_url: str):  # type: ignore[no-untyped-def]
    """One `ClusterLog` leading every partition of `gc` (what its lease tick would do)."""
    store = PostgresStateStore(pg_url)  # applies the migrations
    await store.open()
    await store.close()
    log = ClusterLog(pg_url, 1)
    await log.open()
    await log.create_topic(TOPIC, PARTS)
    async with log.pool.acquire() as conn:
        got = await partitions.acquire(conn, 1, PARTS, 60_000)
    assert len(got) == PARTS
    for key, epoch in got.items():
        log.install(key, epoch, await log.read_partition(key, epoch))
    yield log
    await log.close()


def values(log: ClusterLog, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of what a consumer reads from the leader now."""
    return [(o, v) for o, _, v in decode(log.read(TOPIC, partition, 0, 1 << 24).records)]


async def wait_until(cond, what: str, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


async def test_appends_to_many_partitions_arriving_together_share_one_commit(leader: ClusterLog) -> None:
    results = await asyncio.gather(*(leader.append(TOPIC, p, make_batch(p + 1), -1) for p in range(PARTS)))
    assert [(r.error, r.base_offset) for r in results] == [(ErrorCode.NONE, 0)] * PARTS
    assert (leader.batcher.commits, leader.batcher.largest) == (1, PARTS)  # one statement for all
    for p in range(PARTS):
        assert await stored_batches(leader.url, TOPIC, p) == [(0, p)]
        assert leader.partition(TOPIC, p).high_watermark == p + 1


async def test_many_appends_to_one_partition_are_pipelined_in_order(leader: ClusterLog) -> None:
    """Ten appends at once to one partition: each is checked and given its offsets under the partition's
    lock, which is released before its commit, so the others gather behind the commit in flight."""
    batches = [make_batch(2, pid=11, epoch=0, seq=2 * i, ts=1000 + i) for i in range(10)]
    results = await asyncio.gather(*(leader.append(TOPIC, 0, b, -1) for b in batches))
    assert [(r.error, r.base_offset) for r in results] == [(ErrorCode.NONE, 2 * i) for i in range(10)]
    assert leader.batcher.commits < 10 and leader.batcher.batches == 10
    assert await stored_batches(leader.url, TOPIC, 0) == [(2 * i, 2 * i + 1) for i in range(10)]
    assert [o for o, _ in values(leader, 0)] == list(range(20))


async def test_a_batch_is_read_and_answered_only_after_its_commit(leader: ClusterLog, pg_url: str) -> None:
    """A commit held up by a lock on the lease row (as a takeover's UPDATE would): the batch is in the memory
    log beyond the high watermark, but no fetch, list-offsets or long poll sees it and its producer (and one
    retrying it) waits; batches arriving meanwhile, to this partition and another, gather for the next commit."""
    assert (await leader.append(TOPIC, 0, make_batch(1, pid=5, epoch=0, seq=0), -1)).base_offset == 0
    plog = leader.partition(TOPIC, 0)
    blocker = await asyncpg.connect(pg_url)
    try:
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute(
            "SELECT 1 FROM partition_lease WHERE topic = $1 AND partition = 0 FOR UPDATE", TOPIC
        )
        held_up = asyncio.ensure_future(leader.append(TOPIC, 0, make_batch(2, pid=5, epoch=0, seq=1), -1))
        await wait_until(lambda: plog.log_end_offset == 3, "the batch enters the memory log")
        before = leader.batcher.commits
        then = asyncio.ensure_future(leader.append(TOPIC, 0, make_batch(1, pid=5, epoch=0, seq=3), -1))
        other = asyncio.ensure_future(leader.append(TOPIC, 1, make_batch(1), -1))
        retried = asyncio.ensure_future(leader.append(TOPIC, 0, make_batch(2, pid=5, epoch=0, seq=1), -1))
        await wait_until(lambda: plog.log_end_offset == 4, "the next batch is pipelined")
        await asyncio.sleep(0.3)  # time for anything wrongly answered early to be answered
        assert not any(t.done() for t in (held_up, then, other, retried))
        assert plog.high_watermark == 1
        assert values(leader, 0) == [(0, bytes(100))]
        assert (await leader.list_offsets(TOPIC, 0, -1)).offset == 1
        assert not await leader.wait_for_data({(TOPIC, 0): 1}, 0.05)
        await tx.rollback()
    finally:
        await blocker.close()
    done = await asyncio.gather(held_up, then, other, retried)
    assert [(r.error, r.base_offset) for r in done] == [(ErrorCode.NONE, b) for b in (1, 3, 0, 1)]
    assert leader.batcher.commits == before + 2  # the held-up one, then the three that gathered behind it
    assert [o for o, _ in values(leader, 0)] == [0, 1, 2, 3]
    assert await stored_batches(pg_url, TOPIC, 0) == [(0, 0), (1, 2), (3, 3)]


async def test_a_fenced_partition_fails_only_its_own_appends_in_a_group(
    leader: ClusterLog, pg_url: str
) -> None:
    lost: list[tuple[str, int]] = []
    leader.on_lost = lost.append
    conn = await asyncpg.connect(pg_url)
    try:  # partition 1's lease runs out (a pause) while this node still believes it leads
        await conn.execute(
            "UPDATE partition_lease SET expires_at = now() - interval '1 second' WHERE partition = 1"
        )
    finally:
        await conn.close()
    results = await asyncio.gather(
        *(leader.append(TOPIC, p, make_batch(1), -1) for p in (0, 1, 2, 1, 0, 3, 1))
    )
    assert [r.error for r in results] == [
        ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ]  # fmt: skip
    assert [r.base_offset for i, r in enumerate(results) if i in (0, 4)] == [0, 1]
    assert leader.batcher.commits == 1  # one statement: the others committed in it
    assert lost == [(TOPIC, 1)] and leader.partition(TOPIC, 1) is None  # it stops serving partition 1
    assert await stored_batches(pg_url, TOPIC, 1) == []
    assert await stored_batches(pg_url, TOPIC, 0) == [(0, 0), (1, 1)]
    assert (await leader.append(TOPIC, 0, make_batch(1), -1)).base_offset == 2  # the others go on


async def test_a_collision_fails_only_its_partition(leader: ClusterLog, pg_url: str) -> None:
    """A row already at the offset a partition would write (which the fence should rule out) rolls the group
    statement back; each partition is retried alone, so only that one fails."""
    lost: list[tuple[str, int]] = []
    leader.on_lost = lost.append
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(
            "INSERT INTO record_batches (topic, partition, base_offset, last_offset, batch)"
            " VALUES ($1, 2, 0, 0, $2)",
            TOPIC,
            b"x",
        )
    finally:
        await conn.close()
    results = await asyncio.gather(*(leader.append(TOPIC, p, make_batch(1), -1) for p in (0, 2, 3)))
    assert [r.error for r in results] == [
        ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE
    ]  # fmt: skip
    assert lost == [(TOPIC, 2)]
    assert await stored_batches(pg_url, TOPIC, 0) == [(0, 0)]
    assert await stored_batches(pg_url, TOPIC, 3) == [(0, 0)]
    assert values(leader, 3) == [(0, bytes(100))]


@pytest.mark.integration
async def test_many_idempotent_producers_to_one_node_every_acknowledged_record_once_in_order(
    server_factory, pg_url: str
) -> None:
    """Eight aiokafka producers (acks=all, idempotent) at once against one node leading every partition:
    every acknowledged record is read back exactly once, at the offset it was acknowledged with, and each
    producer's records of a partition in the order it sent them."""
    nodes = start_nodes(server_factory, pg_url, 1, "--topic", f"{TOPIC}:{PARTS}")
    await wait_partitions_spread(pg_url, TOPIC, PARTS, [1], timeout=60)
    bootstrap = nodes[1].bootstrap

    async def run(n: int) -> list[tuple[int, int, bytes]]:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=2,
            request_timeout_ms=30000,
        )  # fmt: skip
        await producer.start()
        try:
            futs = [
                await producer.send(TOPIC, b"%d-%d" % (n, i), partition=(n + i) % PARTS) for i in range(60)
            ]
            metas = [await f for f in futs]
            return [(m.partition, m.offset, b"%d-%d" % (n, i)) for i, m in enumerate(metas)]
        finally:
            await producer.stop()

    acked = [r for rs in await asyncio.gather(*(run(n) for n in range(8))) for r in rs]
    assert len(acked) == 480 and len({(p, o) for p, o, _ in acked}) == 480
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTS)])
        read: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + 60
        while len(read) < len(acked):
            assert time.monotonic() < deadline, f"read {len(read)} of {len(acked)}"
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                read += [(tp.partition, r.offset, r.value) for r in records]
        await asyncio.sleep(0.5)
        for tp, records in (await consumer.getmany(timeout_ms=500)).items():
            read += [(tp.partition, r.offset, r.value) for r in records]
    finally:
        await stop_aiokafka(consumer)
    assert sorted(read) == sorted(acked)  # each acknowledged record once, at its offset, nothing else
    for p in range(PARTS):
        offsets = sorted(o for q, o, _ in read if q == p)
        assert offsets == list(range(len(offsets)))  # dense: no record lost or doubled between them
        for n in range(8):
            mine = [(o, v) for q, o, v in sorted(read) if q == p and v.startswith(b"%d-" % n)]
            sent = [int(v.split(b"-")[1]) for _, v in mine]
            assert sent == sorted(sent)  # in the order this producer sent them


async def test_a_commit_in_doubt_drops_its_partitions_and_nothing_after_it_is_written(
    leader: ClusterLog, pg_url: str
) -> None:
    """The connection of a commit in flight dies (its outcome unknown): every partition of the group is
    dropped (KAFKA_STORAGE_ERROR, reloaded from PostgreSQL by a later load), and a batch of one of them that
    was queued behind it is never written, so no offset past an unknown one is ever stored."""
    lost: list[tuple[str, int]] = []
    leader.on_lost = lost.append
    blocker = await asyncpg.connect(pg_url)
    try:
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute(
            "SELECT 1 FROM partition_lease WHERE topic = $1 AND partition = 0 FOR UPDATE", TOPIC
        )
        first = [asyncio.ensure_future(leader.append(TOPIC, p, make_batch(1), -1)) for p in (0, 1)]
        pid = None
        deadline = time.monotonic() + 30
        while pid is None:  # the group's statement waits for the lease row
            assert time.monotonic() < deadline, "the group commit never reached PostgreSQL"
            await asyncio.sleep(0.02)
            await blocker.execute("SELECT pg_stat_clear_snapshot()")  # else read once per transaction
            pid = await blocker.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%unnest%'"
            )
        behind = asyncio.ensure_future(leader.append(TOPIC, 1, make_batch(1), -1))
        other = asyncio.ensure_future(leader.append(TOPIC, 2, make_batch(1), -1))
        await wait_until(lambda: leader.partition(TOPIC, 1).log_end_offset == 2, "queued behind the commit")
        await blocker.fetchval("SELECT pg_terminate_backend($1)", pid)
        await tx.rollback()
    finally:
        await blocker.close()
    assert [r.error for r in await asyncio.gather(*first)] == [ErrorCode.KAFKA_STORAGE_ERROR] * 2
    assert (await behind).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (await other).error == ErrorCode.NONE  # a partition outside the failed group goes on
    assert sorted(lost) == [(TOPIC, 0), (TOPIC, 1)]
    assert leader.partition(TOPIC, 0) is None and leader.partition(TOPIC, 1) is None
    assert await stored_batches(pg_url, TOPIC, 1) == []  # the killed statement rolled back; nothing after it
    assert await stored_batches(pg_url, TOPIC, 2) == [(0, 0)]
