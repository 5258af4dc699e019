"""PostgreSQL-only parts of the store: versioned migrations, the shard column, the shard hash."""

from __future__ import annotations

import asyncpg
import pytest

from groupcoord.server.coordinator.records import OffsetRecord, OffsetValue
from groupcoord.server.storage import PostgresStateStore, StorageError
from groupcoord.server.storage.pg_migrations import SCHEMA_VERSION
from groupcoord.server.storage.shards import jump_consistent_hash, shard_of


def offset(gid: str, part: int, off: int) -> OffsetRecord:
    return OffsetRecord(gid, "t", part, OffsetValue(off, -1, "", 1, -1))


async def test_migrations_are_applied_once_and_a_newer_schema_is_refused(pg_url: str) -> None:
    for _ in range(2):  # the second open finds everything applied and changes nothing
        s = PostgresStateStore(pg_url)
        await s.open()
        await s.close()
    conn = await asyncpg.connect(pg_url)
    try:
        versions = [r[0] for r in await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == list(range(1, SCHEMA_VERSION + 1))
        await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", SCHEMA_VERSION + 1)
    finally:
        await conn.close()
    with pytest.raises(StorageError, match="newer"):
        await PostgresStateStore(pg_url).open()


async def test_rows_carry_their_groups_shard_and_load_shards_reads_only_those(pg_url: str) -> None:
    s = PostgresStateStore(pg_url, shards=8)
    await s.open()
    try:
        groups = [f"g{i}" for i in range(40)]
        await s.write([offset(g, 0, i) for i, g in enumerate(groups)])
        wanted = {shard_of("g0", 8), shard_of("g1", 8)}
        loaded = await s.load_shards(sorted(wanted))
        assert {r.group_id for r in loaded} == {g for g in groups if shard_of(g, 8) in wanted}
        async with s.pool.acquire() as conn:
            rows = await conn.fetch("SELECT group_id, shard FROM offsets")
        assert {r[0]: r[1] for r in rows} == {g: shard_of(g, 8) for g in groups}
    finally:
        await s.close()


async def test_an_unreachable_database_is_a_storage_error() -> None:
    with pytest.raises(StorageError, match="cannot open"):
        await PostgresStateStore("postgresql://nobody@127.0.0.1:1/none").open()


def test_shard_hash_is_stable_spread_and_consistent() -> None:
    # the same on every process (Python's hash() is salted; this must not be)
    assert [shard_of(f"group-{i}", 50) for i in range(5)] == [shard_of(f"group-{i}", 50) for i in range(5)]
    counts = [0] * 16
    for i in range(16_000):
        counts[shard_of(f"g-{i}", 16)] += 1
    assert min(counts) > 800 and max(counts) < 1200  # ~1000 each
    # jump hashing: going from 16 to 17 shards moves only keys into the new shard (~1/17 of them)
    moved = [i for i in range(16_000) if shard_of(f"g-{i}", 16) != shard_of(f"g-{i}", 17)]
    assert all(shard_of(f"g-{i}", 17) == 16 for i in moved)
    assert 500 < len(moved) < 1500
    assert jump_consistent_hash(12345, 1) == 0
    with pytest.raises(ValueError):
        jump_consistent_hash(1, 0)
