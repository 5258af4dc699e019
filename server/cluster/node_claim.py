"""`NodeClaim`: this process's hold on its `--node-id`, kept across lost connections (issue 36 item 3).

The claim is a session advisory lock (server/cluster/leases.py `claim_node_id`) on a connection of its own.
Its session can end while this process lives — PostgreSQL restarted, the backend terminated, the peer
declared dead by TCP keepalive after a partition — and the lock goes with it. Before, nothing took it again:
a second process started with the same id was let in, and FindCoordinator at the other nodes named its
address for the groups this node owned. Now:

* the node's heartbeat (`nodes.last_seen`) is written on the claim's own connection and only while that
  session holds the lock (`leases.heartbeat_node`), so only the id's holder ever marks it live;
* at every lease tick a lost connection is reopened and the lock taken again. If another process holds it
  (a twin that started meanwhile, or one that found this node's heartbeat a whole TTL old), this node is
  fenced: `ClaimTaken` fails the tick before any lease is renewed or taken, so the node's self-fencing drops
  every shard and partition within the trusted part of the lease, and it serves nothing while it cannot
  hold its id (it takes the id back, and serves again, only once the lock is free);
* a twin that starts while the lock is free but the heartbeat is fresh waits for the holder to take it back
  (`claim_node_id`): with ticks of ttl/10, a live holder does long before the TTL is out.
"""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg
import structlog

from groupcoord.server.cluster import leases
from groupcoord.server.cluster.leases import NodeInfo

log = structlog.get_logger("groupcoord.cluster")


class ClaimTaken(RuntimeError):
    """Another process holds this node's id now: this node is fenced until it can take it back."""


class NodeClaim:
    def __init__(self, url: str, node_id: int, ttl_ms: int, server_settings: dict[str, str]) -> None:
        self.url = url
        self.node_id = node_id
        self.ttl_ms = ttl_ms
        self.server_settings = server_settings
        self.conn: asyncpg.Connection | None = None
        self.started = False  # the id was claimed at start (a refused twin never gets here)
        self.fenced = False  # the last attempt to take the id back found another holder
        self.retaken = 0  # times the id was taken back after its connection was lost (tests, metrics)

    async def _connect(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.url, server_settings=self.server_settings or None)

    async def take(self) -> None:
        """At start: claim the id, or raise `leases.NodeIdInUse` (the process then refuses to start)."""
        conn = await self._connect()
        try:
            await leases.claim_node_id(conn, self.node_id, self.ttl_ms)
        except BaseException:
            await conn.close()
            raise
        self.conn = conn
        self.started = True

    async def _usable(self) -> asyncpg.Connection:
        """The claim's connection, reopened and the lock taken again if its session was lost."""
        if self.conn is not None and not self.conn.is_closed():
            return self.conn
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.terminate()
            self.conn = None
            log.warning("node id claim lost with its connection: taking it again", node=self.node_id)
        conn = await self._connect()
        try:
            if not await conn.fetchval(
                "SELECT pg_try_advisory_lock($1::int, $2::int)", leases.NODE_LOCK, self.node_id
            ):
                raise ClaimTaken(f"node id {self.node_id} is held by another process")
        except BaseException:
            await conn.close()
            raise
        self.conn = conn
        self.retaken += 1
        if self.fenced:
            log.warning("node id taken back: serving again", node=self.node_id)
        else:
            log.warning("node id claim taken again", node=self.node_id)
        self.fenced = False
        return conn

    async def heartbeat(self, node: NodeInfo) -> None:
        """Mark this node live, as the holder of its id; `ClaimTaken` when another process holds it."""
        try:
            conn = await self._usable()
            if not await leases.heartbeat_node(conn, node):
                raise ClaimTaken(f"the session of node id {self.node_id}'s claim no longer holds it")
        except ClaimTaken:
            if not self.fenced:
                log.error(
                    "another process holds this node id: fenced, serving nothing until it is free",
                    node=self.node_id,
                )
            self.fenced = True
            if self.conn is not None and not await self._still_holds():
                await self.conn.close()
                self.conn = None
            raise

    async def _still_holds(self) -> bool:
        assert self.conn is not None
        with contextlib.suppress(Exception):
            return await leases.holds_node_id(self.conn, self.node_id)
        return False

    async def leave(self) -> None:
        """Stopping: mark the id not live (only while this session holds it), then let it go."""
        conn, self.conn = self.conn, None
        if conn is None or conn.is_closed():
            return
        try:
            await asyncio.wait_for(leases.leave(conn, self.node_id), 5)
        except Exception as e:
            log.warning("marking the node gone failed", error=repr(e))
        with contextlib.suppress(Exception):
            await conn.close()
