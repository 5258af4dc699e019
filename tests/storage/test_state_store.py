"""StateStore implementations: round trip, tombstones, group commit batching, durability, crash safety."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from groupcoord.server.coordinator.records import (
    GroupMetadataValue,
    GroupRecord,
    MemberMetadataValue,
    OffsetRecord,
    OffsetValue,
    PendingOffsetRecord,
    TxnRecord,
    TxnValue,
)
from groupcoord.server.storage import (
    MemoryStateStore,
    PostgresStateStore,
    SqliteStateStore,
    StateStore,
    StorageError,
    SynchronousStateStore,
)

REPO = Path(__file__).resolve().parents[2]


def group(gid: str, generation: int = 1) -> GroupRecord:
    member = MemberMetadataValue(
        member_id="m-1",
        group_instance_id=None,
        client_id="c",
        client_host="/127.0.0.1",
        rebalance_timeout_ms=30_000,
        session_timeout_ms=10_000,
        subscription=b"\x00\x01sub\xff",
        assignment=b"",
    )
    return GroupRecord(
        gid, GroupMetadataValue("consumer", generation, "range", "m-1", 1_700_000_000_000, (member,))
    )


def offset(gid: str, topic: str, part: int, off: int) -> OffsetRecord:
    return OffsetRecord(gid, topic, part, OffsetValue(off, 3, "meta", 1_700_000_000_000, -1))


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> StateStore:
    if kind == "memory":
        return MemoryStateStore()
    if kind == "postgres":
        return PostgresStateStore(request.getfixturevalue("pg_url"))
    return SqliteStateStore(tmp_path / "state.db")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    s = make_store(request.param, tmp_path, request)
    await s.open()
    yield s
    await s.close()


async def test_round_trip_latest_value_and_tombstones(store: StateStore) -> None:
    await store.write([group("g1"), offset("g1", "t", 0, 5), offset("g1", "t", 1, 7), group("g2")])
    await store.write([offset("g1", "t", 0, 6), group("g1", 2), OffsetRecord("g1", "t", 1, None)])
    # a group tombstone leaves the group's offsets alone: the state machine tombstones them itself
    await store.write([GroupRecord("g2", None), offset("g2", "u", 3, 1)])
    loaded = await store.load()
    assert loaded == [group("g1", 2), offset("g1", "t", 0, 6), offset("g2", "u", 3, 1)]
    await store.write([])


async def test_transaction_state_and_pending_offsets_round_trip(store: StateStore) -> None:
    """What the transaction coordinator and TxnOffsetCommit persist (server/txn), in every store."""
    pending = PendingOffsetRecord("g1", 4000, "t", 0, OffsetValue(42, 3, "m", 1_700_000_000_000, -1))
    txn = TxnValue(
        4000,
        2,
        -1,
        -1,
        60_000,
        "Ongoing",
        (("t", 0), ("u", 1)),
        ("g1",),
        1_700_000_000_000,
        1_700_000_000_001,
    )
    await store.write(
        [group("g1"), pending, PendingOffsetRecord("g1", 4000, "t", 1, pending.value), TxnRecord("tx", txn)]
    )
    await store.write(
        [PendingOffsetRecord("g1", 4000, "t", 1, None), TxnRecord("gone", txn), TxnRecord("gone", None)]
    )
    loaded = await store.load()
    assert pending in loaded and TxnRecord("tx", txn) in loaded
    assert [r for r in loaded if isinstance(r, PendingOffsetRecord | TxnRecord)] == [
        pending,
        TxnRecord("tx", txn),
    ]


async def test_tombstone_then_value_in_one_write(store: StateStore) -> None:
    await store.write([offset("g", "t", 0, 1)])
    await store.write(
        [OffsetRecord("g", "t", 0, None), offset("g", "t", 0, 2), GroupRecord("h", None), group("h")]
    )
    assert await store.load() == [group("h"), offset("g", "t", 0, 2)]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_concurrent_writes_are_batched_into_few_transactions(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    s = make_store(kind, tmp_path, request)
    assert isinstance(s, SqliteStateStore | PostgresStateStore)
    await s.open()
    n = 300
    await asyncio.gather(*(s.write([offset(f"g{i}", "t", p, i) for p in range(10)]) for i in range(n)))
    assert s.transactions < n // 5, s.transactions
    assert len(await s.load()) == n * 10
    await s.close()


async def test_durable_across_reopen_and_sqlite_settings(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStateStore(path)
    await s.open()
    await s.write([group("g"), *(offset("g", "t", p, p * 10) for p in range(100))])
    await s.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT count(*) FROM offsets").fetchone()[0] == 100
    conn.close()
    s = SqliteStateStore(path)
    await s.open()
    loaded = await s.load()
    assert loaded[0] == group("g") and len(loaded) == 101
    await s.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_write_after_close_raises(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    s = make_store(kind, tmp_path, request)
    await s.open()
    await s.close()
    with pytest.raises(StorageError):
        await s.write([group("g")])


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_failed_transaction_raises_storage_error(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    s = make_store(kind, tmp_path, request)
    await s.open()
    bad = OffsetRecord("g", "t", 0, OffsetValue(2**70, 0, "", 0, -1))  # fits neither an SQLite nor a BIGINT
    results = await asyncio.gather(s.write([bad]), return_exceptions=True)
    assert isinstance(results[0], StorageError)
    await s.write([offset("g", "t", 1, 1)])  # the store keeps working
    assert await s.load() == [offset("g", "t", 1, 1)]
    await s.close()


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from groupcoord.server.coordinator.records import OffsetRecord, OffsetValue
    from groupcoord.server.storage import PostgresStateStore, SqliteStateStore

    async def main():
        where = sys.argv[1]
        s = PostgresStateStore(where) if where.startswith("postgresql://") else SqliteStateStore(where)
        await s.open()
        recs = [OffsetRecord(f"g{w}", "t", p, OffsetValue(1000 + p, -1, "", 1, -1)) for w in range(20) for p in range(50)]
        await asyncio.gather(*(s.write(recs[i:i + 50]) for i in range(0, len(recs), 50)))
        print("written", flush=True)
        await asyncio.sleep(60)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_crash_right_after_write_keeps_everything(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = request.getfixturevalue("pg_url") if kind == "postgres" else str(tmp_path / "state.db")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env, cwd=REPO
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"written"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(10)
        child.stdout.close()  # type: ignore[union-attr]
    assert child.returncode == -signal.SIGKILL

    async def reload() -> list:
        s = PostgresStateStore(path) if kind == "postgres" else SqliteStateStore(path)
        await s.open()
        try:
            return await s.load()
        finally:
            await s.close()

    loaded = asyncio.run(reload())
    assert len(loaded) == 1000
    assert {(r.group_id, r.partition, r.value.offset) for r in loaded} == {
        (f"g{w}", p, 1000 + p) for w in range(20) for p in range(50)
    }


async def test_memory_store_is_synchronous_and_sqlite_is_not(tmp_path: Path) -> None:
    """The runtime writes a synchronous store inside the call; the protocol says which store is which."""
    mem = MemoryStateStore()
    await mem.open()
    assert mem.synchronous and isinstance(mem, SynchronousStateStore)
    mem.write_now([group("g"), offset("g", "t", 0, 1)])
    assert await mem.load() == [group("g"), offset("g", "t", 0, 1)]
    await mem.close()
    with pytest.raises(StorageError):
        mem.write_now([group("g")])
    sql = SqliteStateStore(tmp_path / "state.db")
    assert not sql.synchronous and not isinstance(sql, SynchronousStateStore)


async def test_consumer_group_records_round_trip(store: StateStore) -> None:
    """KIP-848 consumer-group records (Kafka's types 3, 5-8) in every store: latest value per (type, group,
    member), tombstones delete, values come back equal through the JSON codec."""
    from groupcoord.server.coordinator.records import (
        ConsumerGroupCurrentMemberAssignmentValue,
        ConsumerGroupMemberMetadataValue,
        ConsumerGroupMetadataValue,
        ConsumerGroupRecord,
        ConsumerGroupTargetAssignmentMemberValue,
        ConsumerGroupTargetAssignmentMetadataValue,
        TopicPartitionsValue,
    )

    tid = "5f0b6cc4-1b8a-4bde-9bd4-2bb0e7c8b8d1"
    member = ConsumerGroupMemberMetadataValue(
        "i1", None, "c", "/127.0.0.1", ("a", "b"), None, 300_000, "range"
    )
    current = ConsumerGroupCurrentMemberAssignmentValue(
        3, 2, 1, (TopicPartitionsValue(tid, (0, 2), (1, 3)),), (TopicPartitionsValue(tid, (1,), (1,)),)
    )
    written = [
        ConsumerGroupRecord(5, "cg", "m1", member),
        ConsumerGroupRecord(3, "cg", "", ConsumerGroupMetadataValue(2, -7)),
        ConsumerGroupRecord(3, "cg", "", ConsumerGroupMetadataValue(3, -7)),
        ConsumerGroupRecord(
            7, "cg", "m1", ConsumerGroupTargetAssignmentMemberValue((TopicPartitionsValue(tid, (0, 2)),))
        ),
        ConsumerGroupRecord(6, "cg", "", ConsumerGroupTargetAssignmentMetadataValue(3, 1_700_000_000_000)),
        ConsumerGroupRecord(8, "cg", "m1", current),
        ConsumerGroupRecord(5, "cg", "m2", member),
    ]
    await store.write([group("g1"), *written])
    await store.write([ConsumerGroupRecord(5, "cg", "m2", None), offset("cg", "t", 0, 9)])
    loaded = await store.load()
    cg = {r.key: r for r in loaded if isinstance(r, ConsumerGroupRecord)}
    assert cg == {r.key: r for r in [written[0], written[2], *written[3:6]]}
    # consumer groups load before offsets (an offset must not create a classic group for them)
    kinds = [type(r).__name__ for r in loaded]
    assert kinds.index("OffsetRecord") > max(i for i, k in enumerate(kinds) if k == "ConsumerGroupRecord")
