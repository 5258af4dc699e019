"""Cluster mode (`--cluster`): ACL bindings and SCRAM credentials are the cluster's, kept in PostgreSQL.

Kafka keeps both in its metadata log, so a CreateAcls or AlterUserScramCredentials sent to any broker is seen
by every broker. Here the tables `acl_bindings` and `scram_credentials` (migration in
server/storage/pg_migrations.py) play that part:

- a write runs in one PostgreSQL transaction that first bumps the single row of `security_version` (its row
  lock orders concurrent writers, so DeleteAcls matches its filters against the committed bindings, not a
  node's possibly older view), then notifies channel `groupcoord_security`; the request is answered after
  the commit, and the writing node re-reads the tables before answering (it sees its own write);
- every node keeps the whole set in memory (requests are authorized against it with no query) and re-reads
  it when notified (LISTEN on its own connection) or, should a notification be lost with a dropped
  connection, when `security_version` moved at its once-a-second check.

Credentials are stored as Kafka stores them (salt, StoredKey, ServerKey, iterations), never passwords.

Earlier versions kept both per node in cluster mode too (`<data-dir>/security.json`): `merge_node_file` adds
such a file's bindings and credentials to the cluster's once, at the node's first start with this version.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import structlog

from groupcoord.server.security.authorizer import AclBinding, AclFilter
from groupcoord.server.security.scram import ScramCredential
from groupcoord.server.security.store import Deletion, SecurityStore, SecurityStoreError, Upsertion, matched

log = structlog.get_logger("groupcoord.security")

CHANNEL = "groupcoord_security"
#: how often a node checks `security_version` besides the notifications (seconds)
REFRESH_S = 1.0
_ACL_COLUMNS = "resource_type, resource_name, pattern_type, principal, host, operation, permission"
_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)
T = TypeVar("T")


class ClusterSecurityStore:
    def __init__(self, url: str, refresh_s: float = REFRESH_S) -> None:
        self.url = url
        self.refresh_s = refresh_s
        self.acls: list[AclBinding] = []
        self.scram: dict[str, dict[str, ScramCredential]] = {}
        self.on_change: Callable[[], None] | None = None
        self._version: int | None = None
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Read the tables (the schema is migrated by the state store, opened before), start listening."""
        try:
            self._pool = await asyncpg.create_pool(self.url, min_size=1, max_size=2, command_timeout=30)
            await self._reload()
        except _ERRORS as e:
            raise SecurityStoreError(f"cannot read ACLs and SCRAM credentials: {e}") from e
        await self._listen()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="security-refresh")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._listener is not None:
            with contextlib.suppress(*_ERRORS):
                await self._listener.close(timeout=5)
            self._listener = None
        if self._pool is not None:
            with contextlib.suppress(*_ERRORS):
                await asyncio.wait_for(self._pool.close(), 5)
            self._pool = None

    # -- every node's view

    async def _listen(self) -> None:
        """LISTEN on a connection of its own (a pooled one would be handed to others); a node that cannot
        listen still catches up on its periodic check."""
        try:
            conn = await asyncpg.connect(self.url)
            await conn.add_listener(CHANNEL, self._notified)
            self._listener = conn
        except _ERRORS as e:
            log.warning("cannot listen for ACL and credential changes; checking every second", error=repr(e))

    def _notified(self, *_: Any) -> None:
        self._wake.set()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.refresh_s)
            self._wake.clear()
            try:
                if self._listener is None or self._listener.is_closed():
                    self._listener = None
                    await self._listen()
                await self._refresh()
            except _ERRORS as e:
                log.warning("ACL and credential refresh failed", error=repr(e))
            except Exception:
                log.exception("ACL and credential refresh failed")

    async def _refresh(self) -> None:
        assert self._pool is not None
        version = await self._pool.fetchval("SELECT version FROM security_version")
        if version != self._version:
            await self._reload()

    async def _reload(self) -> None:
        """Read everything in one snapshot, then swap the view in at once."""
        assert self._pool is not None
        async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            version = await conn.fetchval("SELECT version FROM security_version")
            acl_rows = await conn.fetch(f"SELECT {_ACL_COLUMNS} FROM acl_bindings ORDER BY seq")
            cred_rows = await conn.fetch(
                "SELECT user_name, mechanism, salt, stored_key, server_key, iterations"
                " FROM scram_credentials ORDER BY user_name, mechanism"
            )
        if self._version is not None and version < self._version:
            return  # a read that began before a newer one ended (a write's own re-read): keep the newer view
        scram: dict[str, dict[str, ScramCredential]] = {}
        for user, mech, salt, stored_key, server_key, iterations in cred_rows:
            scram.setdefault(user, {})[mech] = ScramCredential(
                bytes(salt), bytes(stored_key), bytes(server_key), iterations
            )
        self.acls = [AclBinding(*row) for row in acl_rows]
        self.scram = scram
        if version != self._version:
            log.info(
                "ACLs and SCRAM credentials read", version=version, acls=len(self.acls), users=len(scram)
            )
        self._version = version
        if self.on_change is not None:
            self.on_change()

    # -- writes: PostgreSQL first, answered after the commit

    async def _write(self, change: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        if self._pool is None:
            raise SecurityStoreError("the security store is not open")
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                await conn.execute("UPDATE security_version SET version = version + 1")
                result = await change(conn)
                await conn.execute("SELECT pg_notify($1, '')", CHANNEL)
        except _ERRORS as e:
            raise SecurityStoreError(f"ACL or credential change not stored: {e}") from e
        try:  # committed: this node's view now, so that the next request here sees it
            await self._reload()
        except _ERRORS as e:  # stored all the same; the periodic check catches up
            log.warning("ACLs and credentials not re-read after a change", error=repr(e))
            self._wake.set()
        return result

    async def add_acls(self, bindings: list[AclBinding]) -> None:
        rows = [tuple(b.to_json()) for b in dict.fromkeys(bindings)]

        async def change(conn: asyncpg.Connection) -> None:
            await conn.executemany(
                f"INSERT INTO acl_bindings ({_ACL_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                " ON CONFLICT DO NOTHING",
                rows,
            )

        if rows:
            await self._write(change)

    async def delete_acls(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        async def change(conn: asyncpg.Connection) -> list[list[AclBinding]]:
            current = [
                AclBinding(*r)
                for r in await conn.fetch(f"SELECT {_ACL_COLUMNS} FROM acl_bindings ORDER BY seq")
            ]
            out = matched(filters, current)
            gone = list(dict.fromkeys(b for m in out for b in m))
            if gone:
                await conn.executemany(
                    "DELETE FROM acl_bindings WHERE resource_type = $1 AND resource_name = $2"
                    " AND pattern_type = $3 AND principal = $4 AND host = $5 AND operation = $6"
                    " AND permission = $7",
                    [tuple(b.to_json()) for b in gone],
                )
            return out

        return await self._write(change)

    async def alter_scram(self, deletions: list[Deletion], upsertions: list[Upsertion]) -> None:
        async def change(conn: asyncpg.Connection) -> None:
            if deletions:
                await conn.executemany(
                    "DELETE FROM scram_credentials WHERE user_name = $1 AND mechanism = $2", deletions
                )
            if upsertions:
                await conn.executemany(
                    "INSERT INTO scram_credentials"
                    " (user_name, mechanism, salt, stored_key, server_key, iterations)"
                    " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (user_name, mechanism) DO UPDATE SET"
                    " salt = EXCLUDED.salt, stored_key = EXCLUDED.stored_key,"
                    " server_key = EXCLUDED.server_key, iterations = EXCLUDED.iterations",
                    [(u, m, c.salt, c.stored_key, c.server_key, c.iterations) for u, m, c in upsertions],
                )

        if deletions or upsertions:
            await self._write(change)


async def merge_node_file(store: ClusterSecurityStore, path: Path) -> None:
    """Upgrade from per-node security: the node's own `security.json` (an earlier version's, or one made on a
    single node) is merged into the cluster's: its bindings are added, its credentials where the cluster has
    none for that user and mechanism (a credential changed cluster-wide is not turned back). The file is then
    renamed `security.json.merged` (still 0600), so it is merged once and deletions are not undone."""
    if not path.exists():
        return
    old = SecurityStore(path)
    old.load()
    await store.add_acls(old.acls)
    creds = [
        (user, mech, cred)
        for user, mechs in old.scram.items()
        for mech, cred in mechs.items()
        if mech not in store.scram.get(user, {})
    ]
    await store.alter_scram([], creds)
    os.replace(path, path.with_name("security.json.merged"))
    log.info(
        "this node's security.json merged into the cluster's ACLs and SCRAM credentials",
        acls=len(old.acls),
        credentials=len(creds),
        renamed_to=str(path.with_name("security.json.merged")),
    )
