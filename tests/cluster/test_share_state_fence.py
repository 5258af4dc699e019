"""Cluster mode's share-partition state against a real PostgreSQL, with no clock involved: two nodes'
`ClusterShareState`s over one database and the real share service of each. After a takeover the deposed
leader's acknowledgement is refused by the database itself (NOT_LEADER_OR_FOLLOWER, the partition dropped
from its memory) although it still believes it leads; the successor loads what was acknowledged, with the
acquired records AVAILABLE again; an admin call's new state cannot be overwritten by a leader holding the old
one (NOT_LEADER_OR_FOLLOWER, as Kafka maps FENCED_STATE_EPOCH), and the leader reads the new one."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.cluster import partitions
from groupcoord.server.cluster.cluster_log import ClusterLog
from groupcoord.server.cluster.share_state import ClusterShareState
from groupcoord.server.coordinator.modern.share.config import ShareGroupConfig
from groupcoord.server.share.partition import ACCEPT, AckBatch, SharePartition
from groupcoord.server.share.service import ShareService
from groupcoord.server.storage import PostgresStateStore
from tests.log.log_helpers import make_batch

KEY = ("q", 0)
EARLIEST = ShareGroupConfig(auto_offset_reset="earliest")


@pytest.fixture
async def nodes(pg_url: str):  # type: ignore[no-untyped-def]
    store = PostgresStateStore(pg_url)  # applies the migrations
    await store.open()
    await store.close()
    a, b = ClusterLog(pg_url, 1), ClusterLog(pg_url, 2)
    await a.open()
    await b.open()
    await a.create_topic("q", 1)
    async with b.pool.acquire() as conn:
        await b.refresh_topics(conn)
    loop = asyncio.get_running_loop()
    services = []
    for logs in (a, b):
        home = ClusterShareState(logs, logs.node_id, pg_url)
        service = ShareService(logs, store, EARLIEST, loop, home=home)
        service.ready.set()  # nothing to load up front in cluster mode (as server/cluster_setup.py does)
        services.append(service)
    yield (a, services[0]), (b, services[1])
    for s in services:
        await s.quiesce()
        s.close()
    await a.close()
    await b.close()


async def take(log: ClusterLog, node: int) -> int:
    async with log.pool.acquire() as conn:
        got = await partitions.acquire(conn, node, 1, 60_000)
    assert list(got) == [KEY]
    log.install(KEY, got[KEY], await log.read_partition(KEY, got[KEY]))
    return got[KEY]


async def fetch(service: ShareService, topic_id: str, member: str) -> tuple[int, list[tuple[int, int]]]:
    out = await service.fetch(
        "g", member, [((topic_id, 0), "q")], max_records=100, max_bytes=1 << 20, min_bytes=1, max_wait_ms=0
    )
    f = out[(topic_id, 0)]
    return f.error, [(r.first_offset, r.last_offset) for r in f.acquired]


async def expire(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("UPDATE partition_lease SET expires_at = now() - interval '1 second'")
    finally:
        await conn.close()


async def test_a_deposed_leader_cannot_store_share_state_and_its_successor_loads_it(
    nodes: tuple[tuple[ClusterLog, ShareService], tuple[ClusterLog, ShareService]], pg_url: str
) -> None:
    (a, sa), (b, sb) = nodes
    tid = a.topic("q").topic_id.hex  # type: ignore[union-attr]
    await take(a, 1)
    assert (await a.append("q", 0, make_batch(10), -1)).base_offset == 0
    assert await fetch(sb, tid, "m2") == (ErrorCode.NOT_LEADER_OR_FOLLOWER, [])  # b does not lead it
    assert await fetch(sa, tid, "m1") == (0, [(0, 9)])
    acked = await sa.acknowledge("g", "m1", {(tid, 0): [AckBatch(0, 3, (ACCEPT,))]}, False)
    assert acked == {(tid, 0): (0, None)}

    await expire(pg_url)  # node 1's lease runs out while it still believes it leads
    await take(b, 2)
    late = await sa.acknowledge("g", "m1", {(tid, 0): [AckBatch(4, 5, (ACCEPT,))]}, False)
    assert late == {(tid, 0): (ErrorCode.NOT_LEADER_OR_FOLLOWER, None)}
    assert not [k for k in sa.partitions if k[1] == tid]  # dropped from the deposed leader's memory
    # the successor: offsets 0-3 acknowledged (never again), 4-9 available again, 4-5 not acknowledged
    assert await fetch(sb, tid, "m2") == (0, [(4, 9)])
    assert sb.partitions[("g", tid, 0)].start == 4


async def test_an_admin_reset_wins_over_a_leader_holding_the_old_state(
    nodes: tuple[tuple[ClusterLog, ShareService], tuple[ClusterLog, ShareService]], pg_url: str
) -> None:
    (a, sa), (_, sb) = nodes
    tid = a.topic("q").topic_id.hex  # type: ignore[union-attr]
    await take(a, 1)
    assert (await a.append("q", 0, make_batch(10), -1)).base_offset == 0
    assert await fetch(sa, tid, "m1") == (0, [(0, 9)])
    # node 2 (the group's coordinator, say) resets the stored state to start at 7; node 1 has not heard yet
    assert sb.home is not None
    await sb.home.replace("g", {(tid, 0): SharePartition(7).snapshot()})
    got = await sa.acknowledge("g", "m1", {(tid, 0): [AckBatch(0, 1, (ACCEPT,))]}, False)
    # not written over the new state; answered as Kafka answers FENCED_STATE_EPOCH from its share coordinator
    assert got[(tid, 0)][0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    deadline = asyncio.get_running_loop().time() + 30
    while (sp := sa.partitions.get(("g", tid, 0))) is None or sp.start != 7:  # it read the new one
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    assert await fetch(sa, tid, "m1") == (0, [(7, 9)])


async def test_the_leader_hears_of_an_admin_reset_and_serves_the_new_state(
    nodes: tuple[tuple[ClusterLog, ShareService], tuple[ClusterLog, ShareService]], pg_url: str
) -> None:
    """NOTIFY: the leader reads the replaced state again without waiting for a write of its own to fail."""
    (a, sa), (_, sb) = nodes
    assert isinstance(sa.home, ClusterShareState) and sb.home is not None
    await sa.home.start()
    try:
        tid = a.topic("q").topic_id.hex  # type: ignore[union-attr]
        await take(a, 1)
        assert (await a.append("q", 0, make_batch(10), -1)).base_offset == 0
        assert await fetch(sa, tid, "m1") == (0, [(0, 9)])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not sa.home.listening:
            assert loop.time() < deadline
            await asyncio.sleep(0.05)
        await sb.home.replace("g", {(tid, 0): SharePartition(5).snapshot()})
        while (sp := sa.partitions.get(("g", tid, 0))) is None or sp.start != 5:
            assert loop.time() < deadline, "the leader never read the new state"
            await asyncio.sleep(0.05)
        assert await fetch(sa, tid, "m1") == (0, [(5, 9)])
    finally:
        await sa.home.close()
