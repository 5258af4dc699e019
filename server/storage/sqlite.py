"""`SqliteStateStore`: coordinator state in SQLite (WAL, synchronous=FULL) at `<data-dir>/state.db`.

Why this shape:

* WAL + synchronous=FULL: a COMMIT returns only after the WAL is fsynced, so a `write()` that returned
  survives a process or machine crash; readers never block the writer.
* One dedicated thread owns the connection, so the event loop never waits on SQLite or the disk.
* Group commit: `write()` calls made while a transaction is in flight queue up and are written together by
  the next single transaction (one fsync for all of them). Under load the batch size grows by itself; with
  one writer the latency is one transaction.
* Within a batch only the last record per key matters, so records are collapsed by key before the
  `executemany` (an OffsetCommit storm on the same partitions costs one row each).

If a caller of `write()` is cancelled after its records were queued they may still be committed; the
records are idempotent (latest value per key), so that is harmless.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from groupcoord.server.coordinator.records import (
    ConsumerGroupRecord,
    GroupMetadataValue,
    GroupRecord,
    MemberMetadataValue,
    OffsetRecord,
    OffsetValue,
    PendingOffsetRecord,
    Record,
    TxnRecord,
    TxnValue,
    decode_consumer_group_value,
    decode_share_record,
    encode_consumer_group_value,
)
from groupcoord.server.storage.base import StorageError
from groupcoord.server.storage.group_commit import GroupCommit, LatestByKey

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS groups (
    group_id TEXT PRIMARY KEY,
    value    TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS offsets (
    group_id         TEXT    NOT NULL,
    topic            TEXT    NOT NULL,
    partition        INTEGER NOT NULL,
    committed_offset INTEGER NOT NULL,
    leader_epoch     INTEGER NOT NULL,
    metadata         TEXT    NOT NULL,
    commit_timestamp INTEGER NOT NULL,
    expire_timestamp INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending_offsets (
    group_id         TEXT    NOT NULL,
    producer_id      INTEGER NOT NULL,
    topic            TEXT    NOT NULL,
    partition        INTEGER NOT NULL,
    committed_offset INTEGER NOT NULL,
    leader_epoch     INTEGER NOT NULL,
    metadata         TEXT    NOT NULL,
    commit_timestamp INTEGER NOT NULL,
    PRIMARY KEY (group_id, producer_id, topic, partition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS share_state (
    record_key TEXT PRIMARY KEY,
    value      TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transactions (
    transactional_id TEXT PRIMARY KEY,
    value            TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS consumer_group_records (
    kind      INTEGER NOT NULL,
    group_id  TEXT    NOT NULL,
    member_id TEXT    NOT NULL,
    value     TEXT    NOT NULL,
    PRIMARY KEY (kind, group_id, member_id)
) WITHOUT ROWID;
"""
# KIP-848 consumer-group records (Kafka's record types 3, 5-8), value as JSON (records.py); the table is new
# in an existing schema version: CREATE TABLE IF NOT EXISTS adds it to older databases
_UPSERT_CG = "INSERT OR REPLACE INTO consumer_group_records VALUES (?, ?, ?, ?)"
_DELETE_CG = "DELETE FROM consumer_group_records WHERE kind = ? AND group_id = ? AND member_id = ?"
_UPSERT_PENDING = "INSERT OR REPLACE INTO pending_offsets VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_DELETE_PENDING = (
    "DELETE FROM pending_offsets WHERE group_id = ? AND producer_id = ? AND topic = ? AND partition = ?"
)
_UPSERT_TXN = "INSERT OR REPLACE INTO transactions VALUES (?, ?)"
_DELETE_TXN = "DELETE FROM transactions WHERE transactional_id = ?"
_UPSERT_OFFSET = "INSERT OR REPLACE INTO offsets VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_DELETE_OFFSET = "DELETE FROM offsets WHERE group_id = ? AND topic = ? AND partition = ?"
_UPSERT_SHARE = "INSERT OR REPLACE INTO share_state VALUES (?, ?)"
_DELETE_SHARE = "DELETE FROM share_state WHERE record_key = ?"
_UPSERT_GROUP = "INSERT OR REPLACE INTO groups VALUES (?, ?)"
_DELETE_GROUP = "DELETE FROM groups WHERE group_id = ?"


def encode_group(v: GroupMetadataValue) -> str:
    """JSON with base64 for the opaque subscription/assignment bytes: readable with the sqlite3 shell."""
    return json.dumps(
        {
            "protocol_type": v.protocol_type,
            "generation": v.generation,
            "protocol": v.protocol,
            "leader": v.leader,
            "current_state_timestamp": v.current_state_timestamp,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms,
                    "session_timeout_ms": m.session_timeout_ms,
                    "subscription": base64.b64encode(m.subscription).decode(),
                    "assignment": base64.b64encode(m.assignment).decode(),
                }
                for m in v.members
            ],
        },
        separators=(",", ":"),
    )


def decode_group(text: str) -> GroupMetadataValue:
    d = json.loads(text)
    members = tuple(
        MemberMetadataValue(
            member_id=m["member_id"],
            group_instance_id=m["group_instance_id"],
            client_id=m["client_id"],
            client_host=m["client_host"],
            rebalance_timeout_ms=m["rebalance_timeout_ms"],
            session_timeout_ms=m["session_timeout_ms"],
            subscription=base64.b64decode(m["subscription"]),
            assignment=base64.b64decode(m["assignment"]),
        )
        for m in d["members"]
    )
    return GroupMetadataValue(
        protocol_type=d["protocol_type"],
        generation=d["generation"],
        protocol=d["protocol"],
        leader=d["leader"],
        current_state_timestamp=d["current_state_timestamp"],
        members=members,
    )


def encode_txn(v: TxnValue) -> str:
    """JSON, readable with the sqlite3 shell; field names as in `TxnValue`."""
    return json.dumps(dataclasses.asdict(v), separators=(",", ":"))


def decode_txn(text: str) -> TxnValue:
    d = json.loads(text)
    d["partitions"] = tuple((t, int(p)) for t, p in d["partitions"])
    d["groups"] = tuple(d["groups"])
    return TxnValue(**d)


class SqliteStateStore:
    """StateStore on SQLite; see the module docstring for the durability and batching rules."""

    synchronous = False

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._queue = GroupCommit(self._commit, "state-db-writer")
        self._closing = False
        self.transactions = 0  # committed write transactions (tests and bench count batching with it)

    async def open(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="state-db")
        self._closing = False
        try:
            await self._call(self._open_sync)
        except sqlite3.Error as e:
            raise StorageError(f"cannot open {self.path}: {e}") from e

    def _open_sync(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise sqlite3.OperationalError(f"journal_mode is {mode}, WAL unavailable")
        conn.execute("PRAGMA synchronous=FULL")
        # Larger page cache and fewer, bigger checkpoints: a checkpoint copies WAL pages into the db file and
        # fsyncs it, which competes with commits; 16384 pages = 64 MiB of WAL between checkpoints.
        conn.execute("PRAGMA cache_size=-65536")
        conn.execute("PRAGMA wal_autocheckpoint=16384")
        conn.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")
        conn.execute("PRAGMA foreign_keys=OFF")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise sqlite3.OperationalError(f"unknown schema version {version}")
        conn.executescript(_SCHEMA)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self._conn = conn

    async def _call(self, fn, *args):  # type: ignore[no-untyped-def]
        if self._executor is None:
            raise StorageError("store is not open")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def load(self) -> list[Record]:
        return await self._call(self._load_sync)

    def _load_sync(self) -> list[Record]:
        assert self._conn is not None
        out: list[Record] = [
            GroupRecord(gid, decode_group(value))
            for gid, value in self._conn.execute("SELECT group_id, value FROM groups ORDER BY group_id")
        ]
        for kind, gid, mid, value in self._conn.execute(
            "SELECT kind, group_id, member_id, value FROM consumer_group_records ORDER BY group_id, kind"
        ):
            out.append(ConsumerGroupRecord(kind, gid, mid, decode_consumer_group_value(kind, value)))
        for gid, topic, part, off, epoch, meta, cts, ets in self._conn.execute(
            "SELECT * FROM offsets ORDER BY group_id, topic, partition"
        ):
            out.append(OffsetRecord(gid, topic, part, OffsetValue(off, epoch, meta, cts, ets)))
        for gid, pid, topic, part, off, epoch, meta, cts in self._conn.execute(
            "SELECT * FROM pending_offsets ORDER BY group_id, producer_id, topic, partition"
        ):
            out.append(PendingOffsetRecord(gid, pid, topic, part, OffsetValue(off, epoch, meta, cts, -1)))
        for tid, value in self._conn.execute("SELECT transactional_id, value FROM transactions"):
            out.append(TxnRecord(tid, decode_txn(value)))
        # share groups and share-partition state (KIP-932): JSON rows, replayed after the classic groups
        for key, value in self._conn.execute("SELECT record_key, value FROM share_state ORDER BY record_key"):
            out.append(decode_share_record(key, value))
        return out

    async def write(self, records: Sequence[Record]) -> None:
        if self._closing or self._executor is None:
            raise StorageError("store is closed")
        if not records:
            return
        await self._queue.write(records)

    async def _commit(self, records: list[Record]) -> None:
        await self._call(self._commit_sync, records)

    def _commit_sync(self, records: list[Record]) -> None:
        assert self._conn is not None
        latest = LatestByKey.of(records)
        groups, offsets, pending, txns = latest.groups, latest.offsets, latest.pending, latest.txns
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if offsets:
                # (group, topic, partition) + OffsetValue's fields, in _UPSERT_OFFSET's column order
                conn.executemany(_UPSERT_OFFSET, [(*k, *v) for k, v in offsets.items() if v is not None])
                conn.executemany(_DELETE_OFFSET, [k for k, v in offsets.items() if v is None])
            if groups:
                conn.executemany(
                    _UPSERT_GROUP, [(g, encode_group(v)) for g, v in groups.items() if v is not None]
                )
                conn.executemany(_DELETE_GROUP, [(g,) for g, v in groups.items() if v is None])
            if pending:
                conn.executemany(
                    _UPSERT_PENDING,
                    [
                        (*k, v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)
                        for k, v in pending.items()
                        if v is not None
                    ],
                )
                conn.executemany(_DELETE_PENDING, [k for k, v in pending.items() if v is None])
            if latest.consumer_groups:
                cgs = latest.consumer_groups
                conn.executemany(
                    _UPSERT_CG,
                    [(*k, encode_consumer_group_value(v)) for k, v in cgs.items() if v is not None],
                )
                conn.executemany(_DELETE_CG, [k for k, v in cgs.items() if v is None])
            if txns:
                conn.executemany(_UPSERT_TXN, [(t, encode_txn(v)) for t, v in txns.items() if v is not None])
                conn.executemany(_DELETE_TXN, [(t,) for t, v in txns.items() if v is None])
            if latest.share:
                conn.executemany(_UPSERT_SHARE, [(k, v) for k, v in latest.share.items() if v is not None])
                conn.executemany(_DELETE_SHARE, [(k,) for k, v in latest.share.items() if v is None])
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.transactions += 1

    async def close(self) -> None:
        self._closing = True
        await self._queue.drain()
        if self._executor is not None:
            if self._conn is not None:
                await self._call(self._close_sync)
            self._executor.shutdown(wait=True)
            self._executor = None

    def _close_sync(self) -> None:
        assert self._conn is not None
        self._conn.close()
        self._conn = None
