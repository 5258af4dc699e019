"""Leases and fencing against a real PostgreSQL: one owner per shard, epochs bump, a deposed owner cannot write."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import asyncpg
import pytest

from groupcoord.server.cluster import leases
from groupcoord.server.coordinator.records import OffsetRecord, OffsetValue, TxnRecord, TxnValue
from groupcoord.server.storage import PostgresStateStore
from groupcoord.server.storage.postgres import FencedError
from groupcoord.server.storage.shards import shard_of


@dataclass
class HeldLeases:
    """What a ClusterNode tells the store (the `WriteFence` interface), here filled from real lease rows."""

    node_id: int
    epochs: dict[int, int] = field(default_factory=dict)

    def epoch_of(self, shard: int) -> int | None:
        return self.epochs.get(shard)


def commit(gid: str, off: int) -> OffsetRecord:
    return OffsetRecord(gid, "t", 0, OffsetValue(off, -1, "", 1, -1))


@pytest.fixture
async def store(pg_url: str):  # type: ignore[no-untyped-def]
    s = PostgresStateStore(pg_url, shards=8)
    await s.open()
    async with s.pool.acquire() as conn:
        await leases.prepare(conn, 8)
    yield s
    await s.close()


async def test_two_nodes_racing_for_every_shard_never_both_win_one(store: PostgresStateStore) -> None:
    async def grab(node: int) -> dict[int, int]:
        async with store.pool.acquire() as conn:
            return await leases.acquire(conn, node, 8, 5000)

    one, two = await asyncio.gather(grab(1), grab(2))
    assert not set(one) & set(two)
    assert set(one) | set(two) == set(range(8))
    async with store.pool.acquire() as conn:
        assert await leases.acquire(conn, 3, 8, 5000) == {}  # nothing free while the leases run


async def test_a_deposed_owner_cannot_write_and_its_successor_can(
    store: PostgresStateStore, pg_url: str
) -> None:
    gid = "fenced"
    shard = shard_of(gid, 8)
    async with store.pool.acquire() as conn:
        first = await leases.acquire(conn, 1, 8, 5000)
    old = HeldLeases(1, first)
    store.fence = old
    await store.write([commit(gid, 1)])
    # node 1's lease runs out (judged by the database clock) and node 2 takes the shard: a new epoch
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE shard_lease SET expires_at = now() - interval '1 second' WHERE owner = 1")
        second = await leases.acquire(conn, 2, 8, 5000)
    assert second[shard] == first[shard] + 1
    with pytest.raises(FencedError):
        await store.write([commit(gid, 2)])  # node 1 still believes it owns the shard: refused
    store.fence = HeldLeases(2, second)
    await store.write([commit(gid, 3)])
    # node 1 renewing finds nothing to renew; a renewal at the wrong epoch renews nothing either
    async with store.pool.acquire() as conn:
        assert await leases.renew(conn, 1, old.epochs, 5000) == {}
        assert await leases.renew(conn, 2, {s: e + 1 for s, e in second.items()}, 5000) == {}
        assert await leases.renew(conn, 2, second, 5000) == second
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT committed_offset FROM offsets WHERE group_id = $1", gid) == 3
    finally:
        await conn.close()


async def test_a_write_for_a_shard_not_held_is_refused_before_touching_the_database(
    store: PostgresStateStore,
) -> None:
    store.fence = HeldLeases(1, {})
    with pytest.raises(FencedError):
        await store.write([commit("nobody-owns-me", 1)])
    store.fence = None
    assert await store.load() == []


async def test_released_shards_are_taken_at_once_with_a_new_epoch(store: PostgresStateStore) -> None:
    async with store.pool.acquire() as conn:
        held = await leases.acquire(conn, 1, 8, 60_000)
        await leases.release(conn, 1, held)
        taken = await leases.acquire(conn, 2, 8, 60_000)
    assert taken == {s: e + 1 for s, e in held.items()}


async def test_transaction_state_is_fenced_by_its_ids_shard_and_loaded_with_it(
    store: PostgresStateStore,
) -> None:
    """Issue 27 item 3: a transactional id's state belongs to shard `shard_of(id)`: its coordinator's write
    is refused once another node took that shard, and the successor's takeover (`load_shards`) loads it."""
    tid = "fenced-txn"
    shard = shard_of(tid, 8)

    def state(pid: int, state: str) -> TxnRecord:
        return TxnRecord(tid, TxnValue(pid, 0, -1, -1, 60000, state, (("t", 0),), (), 1, 1))

    async with store.pool.acquire() as conn:
        first = await leases.acquire(conn, 1, 8, 5000)
    store.fence = HeldLeases(1, first)
    await store.write([state(7, "Ongoing")])
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE shard_lease SET expires_at = now() - interval '1 second' WHERE owner = 1")
        second = await leases.acquire(conn, 2, 8, 5000)
    with pytest.raises(FencedError):
        await store.write([state(7, "PrepareCommit")])  # the deposed coordinator decides nothing
    store.fence = HeldLeases(2, second)
    loaded = [r for r in await store.load_shards([shard]) if isinstance(r, TxnRecord)]
    assert [(r.transactional_id, r.value.state) for r in loaded] == [(tid, "Ongoing")]
    others = [s for s in range(8) if s != shard]
    assert not [r for r in await store.load_shards(others) if isinstance(r, TxnRecord)]
    await store.write([state(7, "PrepareAbort")])  # the successor's decision
    [again] = [r for r in await store.load_shards([shard]) if isinstance(r, TxnRecord)]
    assert again.value.state == "PrepareAbort"
