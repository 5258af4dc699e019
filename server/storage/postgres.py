"""`PostgresStateStore`: coordinator state (group metadata, committed and pending transactional offsets,
transaction state) in PostgreSQL via asyncpg.

`--storage postgresql://user@host:port/db` selects it. Why this shape:

* Same contract and batching as `SqliteStateStore`: `write()` returns when the records are committed
  (PostgreSQL's default `synchronous_commit=on`: the WAL is flushed first), so the runtime replies after the
  state is durable. Calls made while a transaction is in flight are coalesced into the next one (group
  commit) and collapsed to the last value per key; each subject is written with one `unnest` statement,
  so a batch costs a handful of round trips whatever its size.
* Only what the state machine emits is written: offsets on commit, the group when a generation completes,
  static-member swaps and transitions to Empty/Dead. **Heartbeats never reach the store.**
* Every row carries its group's shard (`shards.shard_of`) so a node taking a shard over loads it with an
  indexed query (`load_shards`). In cluster mode a `WriteFence` is set: every write transaction first locks
  the lease rows of the shards it touches (`FOR SHARE`) and proceeds only if this node still owns them at the
  epoch it believes, the lease not expired by the database clock. A takeover's lease UPDATE therefore
  either waits for an in-flight write (and then loads it) or makes it fail: a deposed owner cannot write.
  A write whose client goes silent mid-transaction (paused, cut off) is rolled back by PostgreSQL after half
  a lease TTL (`pg_liveness.py`), so its lock never outlives the lease it fenced.
* The schema is versioned in `pg_migrations.py`, applied at `open()`.
* A pool (asyncpg) keeps a connection for the writer and one for loads and lease work.

Record encoding is shared with SQLite (`encode_group`): JSON text, readable with psql.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

import asyncpg

from groupcoord.server.coordinator.records import (
    ConsumerGroupRecord,
    GroupRecord,
    OffsetRecord,
    OffsetValue,
    PendingOffsetRecord,
    Record,
    TxnRecord,
    decode_consumer_group_value,
    decode_share_record,
    encode_consumer_group_value,
)
from groupcoord.server.storage.base import StorageError
from groupcoord.server.storage.group_commit import GroupCommit, LatestByKey
from groupcoord.server.storage.pg_migrations import MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION
from groupcoord.server.storage.pg_url import redact
from groupcoord.server.storage.shards import shard_of
from groupcoord.server.storage.sqlite import decode_group, decode_txn, encode_group, encode_txn


class FencedError(StorageError):
    """The write touched a shard this node no longer owns (or owns at another epoch): nothing was written."""


class WriteFence(Protocol):
    """What the cluster room tells the store about the shards this node owns."""

    node_id: int

    def epoch_of(self, shard: int) -> int | None:
        """The epoch this node holds `shard` at, or None when it does not serve it now."""


_UPSERT_OFFSETS = """
INSERT INTO offsets (group_id, topic, partition, shard, committed_offset, leader_epoch, metadata,
                     commit_timestamp, expire_timestamp)
SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::bigint[], $6::int[], $7::text[],
                     $8::bigint[], $9::bigint[])
ON CONFLICT (group_id, topic, partition) DO UPDATE SET
    committed_offset = EXCLUDED.committed_offset, leader_epoch = EXCLUDED.leader_epoch,
    metadata = EXCLUDED.metadata, commit_timestamp = EXCLUDED.commit_timestamp,
    expire_timestamp = EXCLUDED.expire_timestamp
"""
_DELETE_OFFSETS = """
DELETE FROM offsets o USING unnest($1::text[], $2::text[], $3::int[]) AS d(g, t, p)
WHERE o.group_id = d.g AND o.topic = d.t AND o.partition = d.p
"""
_UPSERT_GROUPS = """
INSERT INTO groups (group_id, shard, value) SELECT * FROM unnest($1::text[], $2::int[], $3::text[])
ON CONFLICT (group_id) DO UPDATE SET value = EXCLUDED.value
"""
_DELETE_GROUPS = "DELETE FROM groups WHERE group_id = ANY($1::text[])"
_UPSERT_CG = """
INSERT INTO consumer_group_records (kind, group_id, member_id, shard, value)
SELECT * FROM unnest($1::smallint[], $2::text[], $3::text[], $4::int[], $5::text[])
ON CONFLICT (kind, group_id, member_id) DO UPDATE SET shard = EXCLUDED.shard, value = EXCLUDED.value
"""
_DELETE_CG = """
DELETE FROM consumer_group_records c USING unnest($1::smallint[], $2::text[], $3::text[]) AS d(k, g, m)
WHERE c.kind = d.k AND c.group_id = d.g AND c.member_id = d.m
"""
_UPSERT_PENDING = """
INSERT INTO pending_offsets (group_id, producer_id, topic, partition, shard, committed_offset, leader_epoch,
                             metadata, commit_timestamp)
SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::int[], $6::bigint[], $7::int[],
                     $8::text[], $9::bigint[])
ON CONFLICT (group_id, producer_id, topic, partition) DO UPDATE SET
    committed_offset = EXCLUDED.committed_offset, leader_epoch = EXCLUDED.leader_epoch,
    metadata = EXCLUDED.metadata, commit_timestamp = EXCLUDED.commit_timestamp
"""
_DELETE_PENDING = """
DELETE FROM pending_offsets o USING unnest($1::text[], $2::bigint[], $3::text[], $4::int[]) AS d(g, i, t, p)
WHERE o.group_id = d.g AND o.producer_id = d.i AND o.topic = d.t AND o.partition = d.p
"""
_UPSERT_TXNS = """
INSERT INTO transactions (transactional_id, value) SELECT * FROM unnest($1::text[], $2::text[])
ON CONFLICT (transactional_id) DO UPDATE SET value = EXCLUDED.value
"""
_DELETE_TXNS = "DELETE FROM transactions WHERE transactional_id = ANY($1::text[])"
_UPSERT_SHARE = """
INSERT INTO share_state (record_key, value, shard) SELECT * FROM unnest($1::text[], $2::text[], $3::int[])
ON CONFLICT (record_key) DO UPDATE SET value = EXCLUDED.value, shard = EXCLUDED.shard
"""
_DELETE_SHARE = "DELETE FROM share_state WHERE record_key = ANY($1::text[])"
_FENCE = """
SELECT l.shard FROM shard_lease l JOIN unnest($2::int[], $3::bigint[]) AS f(shard, epoch)
  ON l.shard = f.shard AND l.epoch = f.epoch
WHERE l.owner = $1 AND l.expires_at > now()
FOR SHARE OF l
"""


class PostgresStateStore:
    """StateStore on PostgreSQL; see the module docstring for durability, batching and fencing."""

    synchronous = False

    def __init__(
        self,
        url: str,
        *,
        shards: int = 50,
        pool_size: int = 4,
        server_settings: dict[str, str] | None = None,
    ) -> None:
        self.url = url
        self.shards = shards
        self.pool_size = pool_size
        #: sent in every session's startup packet (cluster mode: storage/pg_liveness.py, so a silent owner's
        #: fenced transaction ends before its lease can expire)
        self.server_settings = dict(server_settings or {})
        self.fence: WriteFence | None = None  # set by the cluster room in cluster mode
        self._pool: asyncpg.Pool | None = None
        self._queue = GroupCommit(self._commit, "state-pg-writer")
        self._closing = False
        self.transactions = 0  # committed write transactions (tests and bench count batching with it)

    @property
    def pool(self) -> asyncpg.Pool:
        """The connection pool (the cluster room runs its lease queries on it)."""
        if self._pool is None:
            raise StorageError("store is not open")
        return self._pool

    async def open(self) -> None:
        self._closing = False
        try:
            self._pool = await asyncpg.create_pool(
                self.url,
                min_size=1,
                max_size=self.pool_size,
                command_timeout=30,
                server_settings=self.server_settings or None,
            )
            async with self._pool.acquire() as conn:
                await migrate(conn)
        except (OSError, ValueError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            if self._pool is not None:
                await self._pool.close()
                self._pool = None
            raise StorageError(f"cannot open {redact(self.url)}: {e}") from e

    async def load(self) -> list[Record]:
        return await self._load("", (), with_transactions=True)

    async def load_shards(self, shards: Sequence[int]) -> list[Record]:
        """The live records of `shards` only (a takeover): groups first, then offsets, then the transactional
        ids hashed to those shards (cluster mode's transaction coordinator shards, docs/cluster.md). The
        `transactions` table has no shard column (its subject predates cluster mode): its rows are filtered
        here by the same hash, one read of a small table per takeover."""
        records = await self._load("WHERE shard = ANY($1::int[])", (list(shards),), with_transactions=False)
        wanted = set(shards)
        try:
            async with self.pool.acquire() as conn:
                txns = await conn.fetch("SELECT transactional_id, value FROM transactions ORDER BY 1")
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise StorageError(f"state load failed: {e}") from e
        records += [TxnRecord(r[0], decode_txn(r[1])) for r in txns if shard_of(r[0], self.shards) in wanted]
        records += await self.load_share_groups(shards)
        return records

    async def load_share_groups(self, shards: Sequence[int]) -> list[Record]:
        """Cluster mode: the share groups of `shards` (their share-partition state is the partition
        leaders', server/cluster/share_state.py)."""
        try:
            async with self.pool.acquire() as conn:
                rows = await conn.fetch(
                    "SELECT record_key, value FROM share_state WHERE shard = ANY($1::int[])"
                    " AND record_key LIKE '[\"share_group\"%' ORDER BY record_key",
                    list(shards),
                )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise StorageError(f"state load failed: {e}") from e
        return [decode_share_record(r[0], r[1]) for r in rows]

    async def _load(self, where: str, args: tuple, *, with_transactions: bool) -> list[Record]:
        try:
            async with self.pool.acquire() as conn:
                groups = await conn.fetch(
                    f"SELECT group_id, value FROM groups {where} ORDER BY group_id", *args
                )
                offsets = await conn.fetch(
                    "SELECT group_id, topic, partition, committed_offset, leader_epoch, metadata,"
                    f" commit_timestamp, expire_timestamp FROM offsets {where}"
                    " ORDER BY group_id, topic, partition",
                    *args,
                )
                pending = await conn.fetch(
                    "SELECT group_id, producer_id, topic, partition, committed_offset, leader_epoch, metadata,"
                    f" commit_timestamp FROM pending_offsets {where}"
                    " ORDER BY group_id, producer_id, topic, partition",
                    *args,
                )
                cgs = await conn.fetch(
                    f"SELECT kind, group_id, member_id, value FROM consumer_group_records {where}"
                    " ORDER BY group_id, kind, member_id",
                    *args,
                )
                txns = (
                    await conn.fetch(
                        "SELECT transactional_id, value FROM transactions ORDER BY transactional_id"
                    )
                    if with_transactions
                    else []
                )
                share = (
                    await conn.fetch("SELECT record_key, value FROM share_state ORDER BY record_key")
                    if with_transactions
                    else []
                )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise StorageError(f"state load failed: {e}") from e
        out: list[Record] = [GroupRecord(r[0], decode_group(r[1])) for r in groups]
        out += [ConsumerGroupRecord(r[0], r[1], r[2], decode_consumer_group_value(r[0], r[3])) for r in cgs]
        out += [OffsetRecord(r[0], r[1], r[2], OffsetValue(r[3], r[4], r[5], r[6], r[7])) for r in offsets]
        out += [
            PendingOffsetRecord(r[0], r[1], r[2], r[3], OffsetValue(r[4], r[5], r[6], r[7], -1))
            for r in pending
        ]
        out += [TxnRecord(r[0], decode_txn(r[1])) for r in txns]
        out += [decode_share_record(r[0], r[1]) for r in share]
        return out

    async def write(self, records: Sequence[Record]) -> None:
        if self._closing or self._pool is None:
            raise StorageError("store is closed")
        if not records:
            return
        await self._queue.write(records)

    async def _commit(self, records: list[Record]) -> None:
        latest = LatestByKey.of(records)
        groups, offsets, pending, txns = latest.groups, latest.offsets, latest.pending, latest.txns
        cgs = latest.consumer_groups
        shard = {
            g: shard_of(g, self.shards)
            for g in {*groups, *(k[0] for k in offsets), *(k[0] for k in pending), *(k[1] for k in cgs)}
        }
        share_shard = {k: shard_of(json.loads(k)[1], self.shards) for k in latest.share}
        if self.fence is not None and any(not k.startswith('["share_group"') for k in latest.share):
            # cluster mode: share-partition state is the partition leader's, written fenced by the
            # partition's lease (server/cluster/share_state.py), never through the shards' store
            raise StorageError("share-partition state goes through the partition leader in cluster mode")
        # a transactional id's state is fenced by its coordinator shard's lease, as a group's is
        fence = self._fence_args(
            {*shard.values(), *share_shard.values(), *(shard_of(t, self.shards) for t in txns)}
        )
        live = [(k, v) for k, v in offsets.items() if v is not None]
        dead = [k for k, v in offsets.items() if v is None]
        async with self.pool.acquire() as conn, conn.transaction():
            if fence is not None:
                owned = await conn.fetch(_FENCE, *fence)
                if len(owned) != len(fence[1]):
                    lost = sorted(set(fence[1]) - {r[0] for r in owned})
                    raise FencedError(f"shards {lost} are no longer owned by node {fence[0]} at that epoch")
            if live:
                await conn.execute(
                    _UPSERT_OFFSETS,
                    [g for (g, _, _), _ in live],
                    [t for (_, t, _), _ in live],
                    [p for (_, _, p), _ in live],
                    [shard[g] for (g, _, _), _ in live],
                    [v.offset for _, v in live],
                    [v.leader_epoch for _, v in live],
                    [v.metadata for _, v in live],
                    [v.commit_timestamp for _, v in live],
                    [v.expire_timestamp for _, v in live],
                )
            if dead:
                await conn.execute(
                    _DELETE_OFFSETS, [k[0] for k in dead], [k[1] for k in dead], [k[2] for k in dead]
                )
            upserts = [(g, v) for g, v in groups.items() if v is not None]
            if upserts:
                await conn.execute(
                    _UPSERT_GROUPS,
                    [g for g, _ in upserts],
                    [shard[g] for g, _ in upserts],
                    [encode_group(v) for _, v in upserts],
                )
            deletes = [g for g, v in groups.items() if v is None]
            if deletes:
                await conn.execute(_DELETE_GROUPS, deletes)
            if pending:
                await self._write_pending(conn, pending, shard)
            if cgs:
                live_cg = [(k, encode_consumer_group_value(v)) for k, v in cgs.items() if v is not None]
                if live_cg:
                    await conn.execute(
                        _UPSERT_CG,
                        [k[0] for k, _ in live_cg],
                        [k[1] for k, _ in live_cg],
                        [k[2] for k, _ in live_cg],
                        [shard[k[1]] for k, _ in live_cg],
                        [v for _, v in live_cg],
                    )
                dead_cg = [k for k, v in cgs.items() if v is None]
                if dead_cg:
                    await conn.execute(
                        _DELETE_CG, [k[0] for k in dead_cg], [k[1] for k in dead_cg], [k[2] for k in dead_cg]
                    )
            if latest.share:
                live_share = [(k, v) for k, v in latest.share.items() if v is not None]
                if live_share:
                    await conn.execute(
                        _UPSERT_SHARE,
                        [k for k, _ in live_share],
                        [v for _, v in live_share],
                        [share_shard[k] for k, _ in live_share],
                    )
                dead_share = [k for k, v in latest.share.items() if v is None]
                if dead_share:
                    await conn.execute(_DELETE_SHARE, dead_share)
            if txns:
                live_txns = [(t, encode_txn(v)) for t, v in txns.items() if v is not None]
                if live_txns:
                    await conn.execute(_UPSERT_TXNS, [t for t, _ in live_txns], [v for _, v in live_txns])
                dead_txns = [t for t, v in txns.items() if v is None]
                if dead_txns:
                    await conn.execute(_DELETE_TXNS, dead_txns)
        self.transactions += 1

    @staticmethod
    async def _write_pending(
        conn: asyncpg.Connection,
        pending: dict[tuple[str, int, str, int], OffsetValue | None],
        shard: dict[str, int],
    ) -> None:
        live = [(k, v) for k, v in pending.items() if v is not None]
        if live:
            await conn.execute(
                _UPSERT_PENDING,
                [k[0] for k, _ in live],
                [k[1] for k, _ in live],
                [k[2] for k, _ in live],
                [k[3] for k, _ in live],
                [shard[k[0]] for k, _ in live],
                [v.offset for _, v in live],
                [v.leader_epoch for _, v in live],
                [v.metadata for _, v in live],
                [v.commit_timestamp for _, v in live],
            )
        dead = [k for k, v in pending.items() if v is None]
        if dead:
            await conn.execute(
                _DELETE_PENDING,
                [k[0] for k in dead],
                [k[1] for k in dead],
                [k[2] for k in dead],
                [k[3] for k in dead],
            )

    def _fence_args(self, shards: set[int]) -> tuple[int, list[int], list[int]] | None:
        fence = self.fence
        if fence is None:
            return None
        ordered = sorted(shards)
        epochs = [fence.epoch_of(s) for s in ordered]
        missing = [s for s, e in zip(ordered, epochs, strict=True) if e is None]
        if missing:
            raise FencedError(f"shards {missing} are not served by node {fence.node_id}")
        return fence.node_id, ordered, [e for e in epochs if e is not None]

    async def close(self) -> None:
        self._closing = True
        await self._queue.drain()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()


async def migrate(conn: asyncpg.Connection) -> int:
    """Apply the migrations this database lacks (one transaction, advisory lock); returns the version."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        current = await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_migrations")
        if current > SCHEMA_VERSION:
            raise StorageError(
                f"database schema version {current} is newer than this server's {SCHEMA_VERSION}"
            )
        for version, sql in MIGRATIONS:
            if version > current:
                await conn.execute(sql)
                await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
    return SCHEMA_VERSION
