"""Partition leases and the append fence against a real PostgreSQL, with no clock involved: two `ClusterLog`s
(two nodes) over one database; after a takeover the deposed leader's append is refused by the database
itself, even though it still believes it leads, and the successor appends at the offset left free."""

from __future__ import annotations

import asyncpg
import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.cluster import partitions
from groupcoord.server.cluster.cluster_log import ClusterLog
from groupcoord.server.storage import PostgresStateStore
from tests.cluster.helpers import stored_batches
from tests.log.log_helpers import decode, make_batch

KEY = ("fenced", 0)


@pytest.fixture
async def logs(pg_url: str):  # type: ignore[no-untyped-def]
    store = PostgresStateStore(pg_url)  # applies the migrations
    await store.open()
    await store.close()
    a, b = ClusterLog(pg_url, 1), ClusterLog(pg_url, 2)
    await a.open()
    await b.open()
    await a.create_topic("fenced", 1)
    async with b.pool.acquire() as conn:  # what node 2's next lease tick does
        await b.refresh_topics(conn)
    yield a, b
    await a.close()
    await b.close()


async def take(log: ClusterLog, node: int) -> int:
    async with log.pool.acquire() as conn:
        got = await partitions.acquire(conn, node, 1, 60_000)
    assert list(got) == [KEY]
    log.install(KEY, got[KEY], await log.read_partition(KEY, got[KEY]))
    return got[KEY]


async def test_a_deposed_leader_cannot_append_and_its_successor_can(
    logs: tuple[ClusterLog, ClusterLog], pg_url: str
) -> None:
    a, b = logs
    lost: list[tuple[str, int]] = []
    a.on_lost = lost.append
    first = await take(a, 1)
    assert (await a.append("fenced", 0, make_batch(2), -1)).base_offset == 0
    assert (await b.append("fenced", 0, make_batch(1), -1)).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    conn = await asyncpg.connect(pg_url)
    try:  # node 1's lease runs out (a pause, a partition) while it still believes it leads
        await conn.execute("UPDATE partition_lease SET expires_at = now() - interval '1 second'")
    finally:
        await conn.close()
    second = await take(b, 2)
    assert second == first + 1  # leader epochs move forward on takeover
    assert b.partition("fenced", 0).log_end_offset == 2  # the successor loaded what was acknowledged
    refused = await a.append("fenced", 0, make_batch(1), -1)
    assert refused.error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert lost == [KEY] and a.partition("fenced", 0) is None  # it stops serving the partition at once
    assert await stored_batches(pg_url, "fenced", 0) == [(0, 1)]
    assert (await b.append("fenced", 0, make_batch(3), -1)).base_offset == 2
    data = b.read("fenced", 0, 0, 1 << 20).records
    assert [o for o, _, _ in decode(data)] == [0, 1, 2, 3, 4]
    assert b.partition("fenced", 0).leader_epoch == second
    assert await stored_batches(pg_url, "fenced", 0) == [(0, 1), (2, 4)]
    # OffsetForLeaderEpoch as Kafka's leader epoch cache answers it: the old epoch ends where the new began
    assert b.epoch_end_offset("fenced", 0, first) == (first, 2)
    assert b.epoch_end_offset("fenced", 0, second) == (second, 5)
    assert b.epoch_end_offset("fenced", 0, second + 1) == (-1, -1)
    assert b.epoch_end_offset("fenced", 0, first - 1) == (first - 1, 0)


async def test_idempotent_producer_state_survives_the_takeover(logs: tuple[ClusterLog, ClusterLog]) -> None:
    a, b = logs
    await take(a, 1)
    batch = make_batch(2, pid=7, epoch=0, seq=0)
    assert (await a.append("fenced", 0, batch, -1)).base_offset == 0
    async with a.pool.acquire() as conn:
        await conn.execute("UPDATE partition_lease SET expires_at = now() - interval '1 second'")
    a.drop_partition(KEY)
    await take(b, 2)
    retried = await b.append("fenced", 0, batch, -1)  # the producer retries after the failover
    assert (retried.error, retried.base_offset) == (ErrorCode.NONE, 0)  # a duplicate: not appended again
    assert b.partition("fenced", 0).log_end_offset == 2
    gap = await b.append("fenced", 0, make_batch(1, pid=7, epoch=0, seq=5), -1)
    assert gap.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


async def test_markers_are_fenced_and_rebuild_the_transaction_state_on_takeover(
    logs: tuple[ClusterLog, ClusterLog], pg_url: str
) -> None:
    """Issue 27 item 3: a COMMIT/ABORT marker is appended under the partition's lease like any batch (a
    deposed leader's marker is refused by the database); a transactional batch whose verification fails is
    not stored; the successor rebuilds the open transaction, the last stable offset and the aborted index
    from the stored batches, so read_committed reads the same on the new leader."""
    a, b = logs
    await take(a, 1)

    async def refuse() -> ErrorCode:
        return ErrorCode.INVALID_TXN_STATE

    async def accept() -> ErrorCode:
        return ErrorCode.NONE

    txn = make_batch(2, pid=9, epoch=0, seq=0, transactional=True)
    assert (await a.append("fenced", 0, txn, -1, verify=refuse)).error == ErrorCode.INVALID_TXN_STATE
    assert await stored_batches(pg_url, "fenced", 0) == []
    assert (await a.append("fenced", 0, txn, -1, verify=accept)).base_offset == 0
    assert a.partition("fenced", 0).last_stable_offset == 0  # open: read_committed stops before it
    assert await a.write_marker("fenced", 0, 9, 0, False, 1) == ErrorCode.NONE  # ABORT at offset 2
    second = make_batch(1, pid=9, epoch=0, seq=2, transactional=True)
    assert (await a.append("fenced", 0, second, -1, verify=accept)).base_offset == 3
    async with a.pool.acquire() as conn:  # node 1's lease runs out while it believes it leads
        await conn.execute("UPDATE partition_lease SET expires_at = now() - interval '1 second'")
    await take(b, 2)
    assert await a.write_marker("fenced", 0, 9, 0, True, 1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert await stored_batches(pg_url, "fenced", 0) == [(0, 1), (2, 2), (3, 3)]
    moved = b.read("fenced", 0, 0, 1 << 20, read_committed=True)
    assert (moved.last_stable_offset, moved.aborted) == (3, ((9, 0),))  # the second transaction is open
    assert await b.write_marker("fenced", 0, 9, 0, True, 2) == ErrorCode.NONE
    done = b.read("fenced", 0, 0, 1 << 20, read_committed=True)
    assert done.last_stable_offset == 5 and done.high_watermark == 5
    assert await stored_batches(pg_url, "fenced", 0) == [(0, 1), (2, 2), (3, 3), (4, 4)]
